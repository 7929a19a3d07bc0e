"""A held-out corpus of credentials: formats and settings no redaction rule was written from (issue 40).

benchmarks/common/credential_corpus.py holds the 39 formats localmem/privacy/redact.py's rules were written
from, so recall on it is an in-sample figure. This corpus was written (and committed) before any rule was
measured on it or changed for it: formats named nowhere in redact.py and not among those 39, each from its
provider's documentation, each in the settings people paste it in (a config file, a header, a command, code).
No real secret is here: every value is random characters from a seeded generator, in the documented alphabet
and length behind the documented prefix. Sources (read with the project's search tool, December 2026):

- Cloudflare: scannable tokens ``cfut_``/``cfat_``/``cfk_`` + 40 characters + a checksum
  (developers.cloudflare.com "Token formats"); the Global API Key (37 hex) goes in ``X-Auth-Key``.
- Datadog: API keys 32 hex, application keys 40 hex (docs.datadoghq.com "API and Application Keys";
  headers ``DD-API-KEY`` / ``DD-APPLICATION-KEY``; ``api_key:`` in datadog.yaml).
- New Relic: user keys ``NRAK-`` + 27 (nango.dev New Relic guide; docs.newrelic.com "New Relic API keys");
  license keys 40 characters ending ``NRAL`` in newrelic.yml's ``license_key:``.
- Sentry: DSN ``https://<public key>@o<org>.ingest.sentry.io/<project>`` (docs.sentry.io "Data Source
  Name"); organization auth tokens ``sntrys_`` (``SENTRY_AUTH_TOKEN``).
- Okta: API tokens ``00`` + 40, sent as ``Authorization: SSWS <token>``.
- Auth0: client secrets, 64 characters of [A-Za-z0-9_-], in a client-credentials request.
- Supabase: personal access tokens ``sbp_`` + 40 hex (``supabase login --token``).
- Vercel (24 alphanumerics, ``--token``), Netlify (``nfp_`` + 40, ``--auth``), Fly.io (``FlyV1 fm2_`` + base64),
  Render (``rnd_`` + 32), Railway (a UUID, ``RAILWAY_TOKEN`` / ``Project-Access-Token``).
- Mapbox secret tokens ``sk.`` + a base64url JSON + ``.`` + 22 (and the Mapbox SDK's ``~/.netrc`` entry);
  Dropbox short-lived tokens ``sl.`` + 130+ of [A-Za-z0-9_-]; Airtable PATs ``pat`` + 14 + ``.`` + 64 hex;
  Figma ``figd_`` + 40 (header ``X-Figma-Token``); Pulumi ``pul-`` + 40 hex.
- HCP Terraform: ``<14>.atlasv1.<67>`` in credentials.tfrc.json's ``"token"`` or ``.terraformrc``
  (developer.hashicorp.com "terraform login").
- CircleCI personal tokens ``CCIPAT_`` (header ``Circle-Token``); Bitbucket app passwords ``ATBB`` + 32 + 8 hex;
  Heroku API keys, a bare UUID (``HEROKU_API_KEY``, and the ``~/.netrc`` the Heroku CLI writes);
  Azure DevOps PATs (52 of [a-z2-7]) in a clone URL with an empty user name.
- Config files: netrc(5) (``machine h login u password p``, one line or several), ``~/.pypirc``
  (``password =``), ``.npmrc`` (``//registry/:_authToken=``, ``_auth=``), docker ``config.json``
  (``"auth": "<base64 user:pass>"``), kubeconfig (``client-key-data:`` base64 of a PEM key; ``kubeadm join
  --token``), ``~/.aws/credentials``, ``.pgpass`` (``host:port:db:user:password``).
- Key files: PuTTY ``.ppk`` (PuTTY manual, appendix C: ``PuTTY-User-Key-File-3``, ``Private-Lines:``, base64,
  ``Private-MAC:``), RFC 4716 / SSH.com (``---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----``), a PGP secret key block.
- Headers and tools: ``git credential fill`` output, ``Authorization: token …``, ``X-Api-Key:``, a session cookie
  in ``curl -H 'Cookie: …'``, a Redis URL with a password and no user.

``split()`` halves the formats by a seeded shuffle (fixed before any rule was changed): rules are developed on
the first half; the second half's recall, before and after, is the honest figure.
"""

from __future__ import annotations

import base64
import json
import random
import string
import uuid
from typing import Callable, Iterator

ALNUM = string.ascii_letters + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
HEX = "0123456789abcdef"
URLSAFE = ALNUM + "_-"
BASE32_LOWER = string.ascii_lowercase + "234567"
PASSWORD = ALNUM + "!#%*+-_.^"


def _pick(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _password(rng: random.Random) -> str:
    return _pick(rng, ALNUM, 1) + _pick(rng, PASSWORD, rng.randrange(10, 19))


def _b64url_json(obj: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).rstrip(b"=").decode()


def _pem_body(rng: random.Random, size: int = 400) -> str:
    body = base64.b64encode(rng.randbytes(size)).decode()
    return "\n".join(body[i:i + 64] for i in range(0, len(body), 64))


# name -> (generator of (value, secret) or of a secret, templates each holding "{v}" where the value goes).
# A template may name more than one field ({user}); the secret is what must not survive.
Made = tuple[str, str]


def _cloudflare_token(r: random.Random) -> str:
    return r.choice(["cfut_", "cfat_"]) + _pick(r, ALNUM, 40) + _pick(r, HEX, 8)


def _mapbox(r: random.Random) -> str:
    return "sk." + _b64url_json({"u": "user" + _pick(r, LOWER_ALNUM, 4), "a": _pick(r, LOWER_ALNUM, 25)}) + "." \
        + _pick(r, URLSAFE, 22)


def _docker_auth(r: random.Random) -> Made:
    user, password = "ci" + _pick(r, LOWER_ALNUM, 5), _password(r)
    encoded = base64.b64encode(f"{user}:{password}".encode()).decode()
    return encoded, encoded


def _kube_key(r: random.Random) -> Made:
    pem = "-----BEGIN RSA PRIVATE KEY-----\n" + _pem_body(r, 300) + "\n-----END RSA PRIVATE KEY-----\n"
    encoded = base64.b64encode(pem.encode()).decode()
    return encoded, encoded


def _ppk(r: random.Random) -> Made:
    private = base64.b64encode(r.randbytes(48)).decode()
    text = ("PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: eddsa-key-2026\nPublic-Lines: 2\n"
            "AAAAC3NzaC1lZDI1NTE5AAAAI" + _pick(r, ALNUM + "+/", 39) + "\n" + _pick(r, ALNUM + "+/", 12)
            + "\nPrivate-Lines: 1\n" + private + "\nPrivate-MAC: " + _pick(r, HEX, 64))
    return text, private


def _ssh2(r: random.Random) -> Made:
    body = _pem_body(r, 300)
    text = ("---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: \"rsa-key-2026\"\n" + body
            + "\n---- END SSH2 ENCRYPTED PRIVATE KEY ----")
    return text, body.replace("\n", "")[:200]


def _pgp(r: random.Random) -> Made:
    body = _pem_body(r, 500)
    text = ("-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n" + body + "\n=" + _pick(r, ALNUM, 4)
            + "\n-----END PGP PRIVATE KEY BLOCK-----")
    return text, body.replace("\n", "")[:200]


FORMATS: dict[str, tuple[Callable[[random.Random], str | Made], tuple[str, ...]]] = {
    "cloudflare-api-token": (_cloudflare_token, (
        "CLOUDFLARE_API_TOKEN={v}",
        "curl https://api.cloudflare.com/client/v4/user/tokens/verify -H \"Authorization: Bearer {v}\"",
        "wrangler keeps failing, I exported CF_API_TOKEN={v} in my shell",
    )),
    "cloudflare-global-api-key": (lambda r: _pick(r, HEX, 37), (
        "curl -X GET https://api.cloudflare.com/client/v4/zones -H 'X-Auth-Email: ops@example.com' "
        "-H 'X-Auth-Key: {v}'",
        "CF_API_KEY={v}\nCF_API_EMAIL=ops@example.com",
    )),
    "datadog-api-key": (lambda r: _pick(r, HEX, 32), (
        "DD_API_KEY={v} DD_SITE=datadoghq.eu bash -c \"$(curl -L https://install.datadoghq.com/scripts/agent7.sh)\"",
        "curl -X GET https://api.datadoghq.com/api/v1/validate -H 'DD-API-KEY: {v}'",
        "# /etc/datadog-agent/datadog.yaml\napi_key: {v}\nsite: datadoghq.com",
    )),
    "datadog-app-key": (lambda r: _pick(r, HEX, 40), (
        "export DD_APP_KEY={v}",
        "curl https://api.datadoghq.com/api/v1/monitor -H \"DD-API-KEY: $DD_API_KEY\" "
        "-H \"DD-APPLICATION-KEY: {v}\"",
        "options = {{'api_key': os.environ['DD_API_KEY'], 'app_key': '{v}'}}",
    )),
    "newrelic-user-key": (lambda r: "NRAK-" + _pick(r, UPPER_ALNUM, 27), (
        "curl https://api.newrelic.com/graphql -H 'Content-Type: application/json' -H 'API-Key: {v}' -d @q.json",
        "NEW_RELIC_API_KEY={v}",
        "my new relic user key is {v}, why does nerdgraph return 401?",
    )),
    "newrelic-license-key": (lambda r: _pick(r, HEX, 36) + "NRAL", (
        "# newrelic.yml\ncommon: &default_settings\n  license_key: '{v}'\n  app_name: billing",
        "NEW_RELIC_LICENSE_KEY={v} newrelic-admin run-program gunicorn app:app",
    )),
    "sentry-dsn": (lambda r: _composite_dsn(r), (
        "sentry_sdk.init(dsn=\"{v}\", traces_sample_rate=1.0)",
        "SENTRY_DSN={v}",
    )),
    "sentry-auth-token": (lambda r: "sntrys_" + _b64url_json({"iat": r.randrange(10**9), "org": "acme"})
                          + "_" + _pick(r, URLSAFE, 43), (
        "SENTRY_AUTH_TOKEN={v} sentry-cli releases new 1.4.2",
        "[auth]\ntoken={v}",
    )),
    "okta-api-token": (lambda r: "00" + _pick(r, URLSAFE, 40), (
        "curl -H 'Accept: application/json' -H 'Authorization: SSWS {v}' https://acme.okta.com/api/v1/users",
        "okta:\n  client:\n    orgUrl: https://acme.okta.com\n    token: {v}",
    )),
    "auth0-client-secret": (lambda r: _pick(r, URLSAFE, 64), (
        "curl --request POST --url https://acme.eu.auth0.com/oauth/token --data "
        "'grant_type=client_credentials&client_id=Xy12abc&client_secret={v}&audience=https://api.acme.dev'",
        "AUTH0_CLIENT_SECRET={v}",
    )),
    "supabase-access-token": (lambda r: "sbp_" + _pick(r, HEX, 40), (
        "supabase login --token {v}",
        "SUPABASE_ACCESS_TOKEN={v} supabase link --project-ref abcdefghijklmnop",
    )),
    "vercel-token": (lambda r: _pick(r, ALNUM, 24), (
        "vercel deploy --prod --token {v}",
        "VERCEL_TOKEN={v}",
    )),
    "netlify-token": (lambda r: "nfp_" + _pick(r, ALNUM, 40), (
        "netlify deploy --prod --dir=dist --auth {v}",
        "NETLIFY_AUTH_TOKEN={v}",
    )),
    "flyio-token": (lambda r: "FlyV1 fm2_" + _pick(r, ALNUM + "+/", 120) + "==", (
        "FLY_API_TOKEN=\"{v}\"",
        "fly deploy --access-token \"{v}\"",
    )),
    "render-api-key": (lambda r: "rnd_" + _pick(r, ALNUM, 32), (
        "RENDER_API_KEY={v}",
        "curl --request GET --url https://api.render.com/v1/services --header 'authorization: Bearer {v}'",
    )),
    "railway-token": (_uuid, (
        "RAILWAY_TOKEN={v} railway up",
        "curl https://backboard.railway.app/graphql/v2 -H 'Project-Access-Token: {v}' -d @q.json",
    )),
    "mapbox-secret-token": (_mapbox, (
        "MAPBOX_DOWNLOADS_TOKEN={v}",
        "machine api.mapbox.com\nlogin mapbox\npassword {v}",
    )),
    "dropbox-short-lived-token": (lambda r: "sl." + _pick(r, URLSAFE, 140), (
        "curl -X POST https://api.dropboxapi.com/2/files/list_folder --header \"Authorization: Bearer {v}\" "
        "--data '{{\"path\": \"\"}}'",
        "import dropbox\ndbx = dropbox.Dropbox(\"{v}\")\nprint(dbx.users_get_current_account())",
    )),
    "airtable-pat": (lambda r: "pat" + _pick(r, ALNUM, 14) + "." + _pick(r, HEX, 64), (
        "AIRTABLE_API_KEY={v}",
        "api = Api('{v}')\ntable = api.table('appXYZ', 'Tasks')",
    )),
    "figma-pat": (lambda r: "figd_" + _pick(r, URLSAFE, 40), (
        "curl -H 'X-Figma-Token: {v}' https://api.figma.com/v1/files/abc123",
        "FIGMA_TOKEN={v}",
    )),
    "pulumi-access-token": (lambda r: "pul-" + _pick(r, HEX, 40), (
        "PULUMI_ACCESS_TOKEN={v} pulumi up --yes",
        "pulumi login asks for a token, I pasted {v} and it said invalid",
    )),
    "terraform-cloud-token": (lambda r: _pick(r, ALNUM, 14) + ".atlasv1." + _pick(r, ALNUM, 67), (
        "{{\n  \"credentials\": {{\n    \"app.terraform.io\": {{\n      \"token\": \"{v}\"\n    }}\n  }}\n}}",
        "credentials \"app.terraform.io\" {{\n  token = \"{v}\"\n}}",
        "TF_TOKEN_app_terraform_io={v} terraform plan",
    )),
    "circleci-token": (lambda r: "CCIPAT_" + _pick(r, ALNUM, 22) + "_" + _pick(r, HEX, 40), (
        "curl -H \"Circle-Token: {v}\" https://circleci.com/api/v2/me",
        "CIRCLECI_CLI_TOKEN={v}",
    )),
    "bitbucket-app-password": (lambda r: "ATBB" + _pick(r, ALNUM, 32) + _pick(r, HEX.upper(), 8), (
        "git clone https://alice:{v}@bitbucket.org/acme/api.git",
        "BITBUCKET_APP_PASSWORD={v}",
        "curl -u alice:{v} https://api.bitbucket.org/2.0/repositories/acme",
    )),
    "heroku-api-key": (_uuid, (
        "HEROKU_API_KEY={v} heroku apps",
        "machine api.heroku.com\n  login me@example.com\n  password {v}\nmachine git.heroku.com\n"
        "  login me@example.com\n  password {v}",
    )),
    "azure-devops-pat": (lambda r: _pick(r, BASE32_LOWER, 52), (
        "git clone https://:{v}@dev.azure.com/acme/web/_git/web",
        "AZURE_DEVOPS_EXT_PAT={v} az devops project list",
    )),
    "netrc": (_password, (
        "machine ftp.example.com login alice password {v}",
        "# ~/.netrc\nmachine nexus.internal\nlogin deploy\npassword {v}\n",
        "default login anonymous password {v}",
    )),
    "pypirc": (_password, (
        "[distutils]\nindex-servers =\n    private\n\n[private]\nrepository = https://pypi.acme.dev/\n"
        "username = deploy\npassword = {v}",
    )),
    "npmrc": (lambda r: _uuid(r), (
        "//npm.acme.dev/:_authToken={v}\nregistry=https://npm.acme.dev/",
        "@acme:registry=https://npm.acme.dev/\n//npm.acme.dev/:_authToken=\"{v}\"",
    )),
    "npmrc-auth": (_docker_auth, (
        "registry=https://nexus.acme.dev/repository/npm/\n_auth={v}\nalways-auth=true",
    )),
    "docker-config-auth": (_docker_auth, (
        "{{\n  \"auths\": {{\n    \"registry.acme.dev\": {{\n      \"auth\": \"{v}\"\n    }}\n  }}\n}}",
        "here's my ~/.docker/config.json: {{\"auths\": {{\"https://index.docker.io/v1/\": {{\"auth\": \"{v}\"}}}}}}",
    )),
    "kubeconfig-client-key": (_kube_key, (
        "users:\n- name: admin\n  user:\n    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t\n"
        "    client-key-data: {v}",
    )),
    "kubeadm-token": (lambda r: _pick(r, LOWER_ALNUM, 6) + "." + _pick(r, LOWER_ALNUM, 16), (
        "kubeadm join 10.0.0.10:6443 --token {v} --discovery-token-ca-cert-hash sha256:" + "ab" * 32,
    )),
    "aws-credentials-file": (lambda r: _pick(r, ALNUM + "+/", 40), (
        "[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = {v}\nregion = eu-west-1",
        "[prod]\naws_access_key_id=ASIAXXEXAMPLEXXXXXXX\naws_secret_access_key={v}\n"
        "aws_session_token=IQoJb3JpZ2luX2VjEXAMPLE",
    )),
    "pgpass": (_password, (
        "# ~/.pgpass\ndb.internal:5432:app:deploy:{v}",
    )),
    "putty-ppk": (_ppk, ("{v}",)),
    "ssh2-private-key": (_ssh2, ("{v}",)),
    "pgp-private-key": (_pgp, ("{v}",)),
    "git-credential-fill": (_password, (
        "$ git credential fill\nprotocol=https\nhost=git.acme.dev\nusername=alice\npassword={v}",
    )),
    "authorization-token-header": (lambda r: _pick(r, HEX, 40), (
        "curl -H 'Authorization: token {v}' https://git.acme.dev/api/v1/user",
    )),
    "x-api-key-header": (lambda r: _pick(r, ALNUM, 40), (
        "curl https://api.acme.dev/v2/orders -H 'X-Api-Key: {v}'",
        "headers = {{\"x-api-key\": \"{v}\", \"content-type\": \"application/json\"}}",
    )),
    "session-cookie": (lambda r: _pick(r, LOWER_ALNUM, 32), (
        "curl 'https://app.acme.dev/api/me' -H 'Cookie: session={v}; theme=dark'",
        "curl -b 'sessionid={v}' https://admin.acme.dev/",
    )),
    "redis-url-no-user": (_password, (
        "REDIS_URL=redis://:{v}@cache.internal:6379/0",
    )),
}


def _composite_dsn(r: random.Random) -> Made:
    key = _pick(r, HEX, 32)
    return f"https://{key}@o{r.randrange(10**5, 10**7)}.ingest.sentry.io/{r.randrange(10**6, 10**7)}", key


SPLIT_SEED = 14


def halves(names: list[str], seed: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(develop, report): ``names`` halved by a shuffle seeded with ``seed``, each half in the order given."""
    shuffled = sorted(names)
    random.Random(seed).shuffle(shuffled)
    develop = set(shuffled[:len(shuffled) // 2])
    return tuple(n for n in names if n in develop), tuple(n for n in names if n not in develop)


def split() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(develop, report): the formats halved by a shuffle seeded with SPLIT_SEED, each half in FORMATS order."""
    return halves(list(FORMATS), SPLIT_SEED)


Fill = Callable[[str, str, random.Random], str]


def samples(formats: dict, per_format: int, seed: int, fill: Fill) -> Iterator[tuple[str, str, str]]:
    """(format, secret, text holding it): ``per_format`` samples of each of ``formats`` (name: (make, templates)),
    its templates in turn, each filled by ``fill(template, value, rng)``; a make may return (value, secret)."""
    rng = random.Random(seed)
    for name, (make, templates) in formats.items():
        for index in range(per_format):
            made = make(rng)
            value, secret = made if isinstance(made, tuple) else (made, made)
            yield name, secret, fill(templates[index % len(templates)], value, rng)


def lookalikes(kinds: dict, per_kind: int, seed: int, fill: Fill) -> Iterator[tuple[str, str]]:
    """(look-alike kind, text holding no secret): ``per_kind`` samples of each of ``kinds``, its templates in turn."""
    rng = random.Random(seed)
    for name, (make, templates) in kinds.items():
        for index in range(per_kind):
            yield name, fill(templates[index % len(templates)], make(rng), rng)


def heldout_corpus(per_format: int = 12, seed: int = 45) -> Iterator[tuple[str, str, str]]:
    """(format, secret, text holding it): ``per_format`` samples of each format, its settings in turn."""
    return samples(FORMATS, per_format, seed, lambda template, value, rng: template.format(v=value))
