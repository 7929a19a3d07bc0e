"""A corpus of synthetic credentials, each following a provider's documented format.

No real secret is here: every credential is random characters drawn from the
documented alphabet at the documented length, behind the documented prefix,
from a seeded generator. Each is set in one of several contexts a person
pastes into an assistant (an env line, a curl command, a JSON config, prose).
Sources of the formats (read with the project's search tool, December 2026):

- AWS: access key ids are 20 characters, ``AKIA`` (long-term) or ``ASIA`` (STS) then 16
  upper-case letters and digits; secret access keys are 40 characters of base64
  (docs.aws.amazon.com IAM "Managing access keys"; AWS's example AKIAIOSFODNN7EXAMPLE).
- GitHub: ``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_`` then 36 of [A-Za-z0-9]; fine-grained
  ``github_pat_`` + 22 + ``_`` + 59 (github.blog changelog 2021-03-31, "authentication token
  format updates").
- GitLab: ``glpat-`` then 20 of [A-Za-z0-9_-] (gitlab.com issue 342327, docs "personal access
  token prefix"); deploy ``gldt-``, runner ``glrt-``.
- Stripe: ``sk_live_``/``sk_test_``/``rk_live_`` then 24–99 alphanumerics; webhook signing
  secrets ``whsec_`` (docs.stripe.com/keys; Stripe's note to GitLab secret detection, issue 458019).
- Slack: bot ``xoxb-``, user ``xoxp-`` tokens of dash-separated numbers and 24–32
  alphanumerics; incoming webhooks ``https://hooks.slack.com/services/T…/B…/…`` (api.slack.com
  "token types").
- Google: API keys ``AIza`` + 35 of [A-Za-z0-9_-]; OAuth client secrets ``GOCSPX-`` + 28;
  service-account JSON ``"private_key": "-----BEGIN PRIVATE KEY-----…"``.
- Azure: storage connection strings ``DefaultEndpointsProtocol=https;AccountName=…;AccountKey=<88
  base64>;EndpointSuffix=core.windows.net``; Entra client secrets (3 chars, a digit, ``Q~``, 31–34);
  SAS URLs ``…&sig=<base64 url-encoded>``.
- OpenAI: ``sk-proj-`` project keys (about 160 characters of [A-Za-z0-9_-]); legacy ``sk-`` + 48.
- Anthropic: ``sk-ant-api03-`` + 95 of [A-Za-z0-9_-] ending ``AA``.
- Twilio: API key SIDs ``SK`` + 32 hex, account SIDs ``AC`` + 32 hex, auth tokens 32 hex.
- SendGrid: ``SG.`` + 22 + ``.`` + 43 of [A-Za-z0-9_-].
- npm: ``npm_`` + 36 alphanumerics; PyPI: ``pypi-AgEIcHlwaS5vcmc`` + a long macaroon.
- Hugging Face ``hf_`` + 34; DigitalOcean ``dop_v1_`` + 64 hex; Shopify ``shpat_`` + 32 hex;
  Databricks ``dapi`` + 32 hex; Mailgun ``key-`` + 32 hex; Linear ``lin_api_`` + 40;
  HashiCorp Vault ``hvs.`` + 90+; age ``AGE-SECRET-KEY-1`` + 58 of Bech32 upper case.
- Generic: PEM private key blocks (RFC 7468), JWTs (RFC 7519: three base64url parts, the first two
  JSON objects, so ``eyJ``), URLs with a password (RFC 3986 userinfo), database URLs, ``.env``
  lines with secret-like names.
"""

from __future__ import annotations

import base64
import json
import random
import string
from typing import Callable, Iterator

ALNUM = string.ascii_letters + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "_-"


def _pick(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _jwt(rng: random.Random) -> str:
    def part(obj: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()
    return ".".join([part({"alg": "HS256", "typ": "JWT"}),
                     part({"sub": str(rng.randrange(10**9)), "name": "user", "iat": rng.randrange(10**9)}),
                     _pick(rng, URLSAFE, 43)])


def _pem(rng: random.Random, label: str) -> str:
    body = base64.b64encode(rng.randbytes(600)).decode()
    lines = [body[i:i + 64] for i in range(0, len(body), 64)]
    return "\n".join([f"-----BEGIN {label}-----", *lines, f"-----END {label}-----"])


def _composite(before: str, secret: str, after: str) -> tuple[str, str]:
    return before + secret + after, secret


# kind -> (generator of the secret (or of (value, secret)), the env variable name a person would give it)
FORMATS: dict[str, tuple[Callable[[random.Random], str], str]] = {
    "aws-access-key-id": (lambda r: r.choice(["AKIA", "ASIA"]) + _pick(r, UPPER_ALNUM, 16), "AWS_ACCESS_KEY_ID"),
    "aws-secret-access-key": (lambda r: _pick(r, B64, 40), "AWS_SECRET_ACCESS_KEY"),
    "github-classic-token": (lambda r: r.choice(["ghp_", "gho_", "ghu_", "ghs_", "ghr_"]) + _pick(r, ALNUM, 36),
                             "GITHUB_TOKEN"),
    "github-fine-grained": (lambda r: "github_pat_" + _pick(r, ALNUM, 22) + "_" + _pick(r, ALNUM, 59), "GH_PAT"),
    "gitlab-token": (lambda r: r.choice(["glpat-", "gldt-", "glrt-"]) + _pick(r, URLSAFE, 20), "GITLAB_TOKEN"),
    "stripe-secret-key": (lambda r: r.choice(["sk_live_", "sk_test_"]) + _pick(r, ALNUM, r.randrange(24, 100)),
                          "STRIPE_SECRET_KEY"),
    "stripe-restricted-key": (lambda r: "rk_live_" + _pick(r, ALNUM, r.randrange(24, 100)), "STRIPE_KEY"),
    "stripe-webhook-secret": (lambda r: "whsec_" + _pick(r, ALNUM, 32), "STRIPE_WEBHOOK_SECRET"),
    "slack-bot-token": (lambda r: f"xoxb-{r.randrange(10**11, 10**12)}-{r.randrange(10**12, 10**13)}-"
                        + _pick(r, ALNUM, 24), "SLACK_BOT_TOKEN"),
    "slack-user-token": (lambda r: f"xoxp-{r.randrange(10**11, 10**12)}-{r.randrange(10**11, 10**12)}-"
                         f"{r.randrange(10**12, 10**13)}-" + _pick(r, HEX, 32), "SLACK_TOKEN"),
    "slack-webhook": (lambda r: "https://hooks.slack.com/services/T" + _pick(r, UPPER_ALNUM, 8) + "/B"
                      + _pick(r, UPPER_ALNUM, 10) + "/" + _pick(r, ALNUM, 24), "SLACK_WEBHOOK_URL"),
    "google-api-key": (lambda r: "AIza" + _pick(r, URLSAFE, 35), "GOOGLE_API_KEY"),
    "google-oauth-client-secret": (lambda r: "GOCSPX-" + _pick(r, URLSAFE, 28), "GOOGLE_CLIENT_SECRET"),
    "gcp-service-account-key": (lambda r: _pem(r, "PRIVATE KEY"), "GCP_PRIVATE_KEY"),
    "azure-storage-connection-string": (
        lambda r: _composite("DefaultEndpointsProtocol=https;AccountName=acct" + _pick(r, HEX, 6) + ";AccountKey=",
                             base64.b64encode(r.randbytes(64)).decode(), ";EndpointSuffix=core.windows.net"),
        "AZURE_STORAGE_CONNECTION_STRING"),
    "azure-client-secret": (lambda r: _pick(r, ALNUM, 3) + r.choice("78") + "Q~" + _pick(r, ALNUM + "_~.-", 34),
                            "AZURE_CLIENT_SECRET"),
    "azure-sas-url": (lambda r: _composite("https://acct.blob.core.windows.net/c/f.txt?sv=2022-11-02&ss=b&srt=o"
                                           "&sp=r&se=2026-12-31T00:00:00Z&sig=", base64.b64encode(r.randbytes(32))
                                           .decode().replace("+", "%2B").replace("/", "%2F").replace("=", "%3D"), ""),
                      "AZURE_SAS_URL"),
    "openai-project-key": (lambda r: "sk-proj-" + _pick(r, URLSAFE, 156), "OPENAI_API_KEY"),
    "openai-legacy-key": (lambda r: "sk-" + _pick(r, ALNUM, 20) + "T3BlbkFJ" + _pick(r, ALNUM, 20), "OPENAI_KEY"),
    "anthropic-api-key": (lambda r: "sk-ant-api03-" + _pick(r, URLSAFE, 93) + "AA", "ANTHROPIC_API_KEY"),
    "twilio-api-key-sid": (lambda r: "SK" + _pick(r, HEX, 32), "TWILIO_API_KEY"),
    "twilio-auth-token": (lambda r: _pick(r, HEX, 32), "TWILIO_AUTH_TOKEN"),
    "sendgrid-api-key": (lambda r: "SG." + _pick(r, URLSAFE, 22) + "." + _pick(r, URLSAFE, 43), "SENDGRID_API_KEY"),
    "npm-token": (lambda r: "npm_" + _pick(r, ALNUM, 36), "NPM_TOKEN"),
    "pypi-token": (lambda r: "pypi-AgEIcHlwaS5vcmc" + _pick(r, URLSAFE, 150), "PYPI_API_TOKEN"),
    "huggingface-token": (lambda r: "hf_" + _pick(r, ALNUM, 34), "HF_TOKEN"),
    "digitalocean-token": (lambda r: "dop_v1_" + _pick(r, HEX, 64), "DIGITALOCEAN_TOKEN"),
    "shopify-token": (lambda r: "shpat_" + _pick(r, HEX, 32), "SHOPIFY_ACCESS_TOKEN"),
    "databricks-token": (lambda r: "dapi" + _pick(r, HEX, 32), "DATABRICKS_TOKEN"),
    "mailgun-api-key": (lambda r: "key-" + _pick(r, HEX, 32), "MAILGUN_API_KEY"),
    "linear-api-key": (lambda r: "lin_api_" + _pick(r, ALNUM, 40), "LINEAR_API_KEY"),
    "vault-token": (lambda r: "hvs." + _pick(r, URLSAFE, 90), "VAULT_TOKEN"),
    "age-secret-key": (lambda r: "AGE-SECRET-KEY-1" + _pick(r, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58), "AGE_KEY"),
    "rsa-private-key": (lambda r: _pem(r, "RSA PRIVATE KEY"), "SSH_KEY"),
    "openssh-private-key": (lambda r: _pem(r, "OPENSSH PRIVATE KEY"), "DEPLOY_KEY"),
    "jwt": (_jwt, "SESSION_JWT"),
    "postgres-url-password": (lambda r: _composite("postgres://app:", _pick(r, ALNUM + "!*", 16), "@db.internal:5432/prod"),
                              "DATABASE_URL"),
    "mongodb-url-password": (lambda r: _composite("mongodb+srv://admin:", _pick(r, ALNUM, 20),
                                                                "@cluster0.abcde.mongodb.net/app"),
                             "MONGO_URI"),
    "env-password": (lambda r: _pick(r, ALNUM + "#%&!", 14), "DB_PASSWORD"),
}

CONTEXTS: tuple[Callable[[str, str], str], ...] = (
    lambda name, secret: f"Here is my .env:\n\nNODE_ENV=production\n{name}={secret}\nPORT=8080",
    lambda name, secret: f'export {name}="{secret}"',
    lambda name, secret: json.dumps({"service": "billing", name.lower(): secret}, indent=2),
    lambda name, secret: f"{name.lower().replace('_', '-')}: {secret}",
    lambda name, secret: f"why does this fail? curl -H 'Authorization: Bearer {secret}' https://api.example.com/v1",
    lambda name, secret: f"I set {name} to {secret} but it still says unauthorized",
)


def corpus(per_format: int = 20, seed: int = 43) -> Iterator[tuple[str, str, str]]:
    """(format, secret, text holding it): ``per_format`` samples of each format, contexts in turn.
    A generator returning (value, secret) puts the value in the text: the secret is the part of
    it that must go (a connection string's key, a URL's password)."""
    rng = random.Random(seed)
    for kind, (make, name) in FORMATS.items():
        for index in range(per_format):
            made = make(rng)
            value, secret = made if isinstance(made, tuple) else (made, made)
            yield kind, secret, CONTEXTS[index % len(CONTEXTS)](name, value)


# Shapes a password takes on a command line or in a short note (issue 40), each written by hand from the tools'
# manuals (mysql(1) ``-p<password>``/``--password=``, sshpass(1) ``-p``, curl(1) ``-u user:password``,
# htpasswd(1) ``-b``): (kind, text with ``{user}`` and ``{pw}``). The password is the secret.
COMMAND_LINES: tuple[tuple[str, str], ...] = (
    ("mysql-p-glued", "mysql -u{user} -p{pw} -h db.internal shop"),
    ("mysql-p-glued", "mysqldump --single-transaction -u {user} -p'{pw}' shop > shop.sql"),
    ("mysql-password-flag", "mysql --user={user} --password={pw} shop"),
    ("mysql-password-flag", "mysqladmin -u {user} --password {pw} status"),
    ("sshpass-p", "sshpass -p '{pw}' ssh {user}@10.0.0.5"),
    ("sshpass-p", "sshpass -p {pw} scp backup.tar {user}@backup.internal:/srv"),
    ("curl-u", "curl -u {user}:{pw} https://api.example.com/v1/items"),
    ("curl-u", "curl -s -X POST --user '{user}:{pw}' https://ci.example.org/job/build"),
    ("htpasswd-b", "htpasswd -b /etc/nginx/.htpasswd {user} {pw}"),
    ("htpasswd-b", "htpasswd -nbB {user} {pw}"),
    ("pw-spelling", "the wifi pw: {pw}"),
    ("pw-spelling", "router_pw={pw}"),
    ("pw-spelling", "pwd: {pw}"),
    ("pw-spelling", "passwd={pw}"),
    ("url-in-command", 'psql "postgresql://{user}:{pw}@db.internal:5432/app"'),
    ("url-in-command", "git clone https://{user}:{pw}@github.com/acme/app.git"),
    ("env-before-command", "PGPASSWORD={pw} psql -h db.internal -U {user} app"),
)

# Texts shaped like COMMAND_LINES that hold no credential (ports, paths, prompts, variables, prose): a rule for the
# shapes above must leave every one as it is.
LOOKALIKES: tuple[str, ...] = (
    "ssh -p 2222 deploy@10.0.0.5",
    "scp -P 2222 -p notes.txt deploy@host:/tmp",
    "mkdir -p build/output/logs",
    "pip install -p no-cache requests",
    "python -m pytest -p no:cacheprovider tests/",
    "docker run -p 8080:80 nginx",
    "git log -p -2 --stat",
    "ps -p 1234 -o comm=",
    "nc -l -p 9000",
    "mysql -u root -p shop",
    "mysql -u root -p -h db.internal shop",
    "mysql --user=root --password -h db.internal shop",
    "mysql -u root -p$MYSQL_PWD shop",
    "mysqldump -u root -p\"${DB_PASSWORD}\" shop > shop.sql",
    "mysql --defaults-extra-file=~/.my.cnf --port=3306 shop",
    "sshpass -f ~/.ssh/pass.txt ssh deploy@host",
    "sshpass -e ssh deploy@host",
    "sshpass -p \"$SSHPASS\" ssh deploy@host",
    "curl -u $API_USER:$API_PASS https://api.example.com/v1",
    "curl -u \"${CI_USER}:${CI_TOKEN}\" https://ci.example.org/job",
    "curl -u alice https://api.example.com/v1",
    "curl --upload-file report.csv https://files.example.com/upload",
    "htpasswd -c /etc/nginx/.htpasswd alice",
    "htpasswd -b /etc/nginx/.htpasswd alice \"$PASSWORD\"",
    "Type your password in the password field and press enter.",
    "The pw field is required and the form keeps clearing it.",
    "Run pwd to see which folder you are in, then cd ..",
    "echo $PWD",
    "pwd=/home/alice/projects",
    "I forgot my password again, can you remind me how to reset it?",
    "the passwd file lists users: cat /etc/passwd",
    "She won 3 pw races in a row",
)

_USERS = ("root", "admin", "deploy", "alice", "svc_backup", "ci-bot")


def command_corpus(per_shape: int = 4, seed: int = 44) -> Iterator[tuple[str, str, str]]:
    """(kind, password, text holding it): ``per_shape`` samples of each of COMMAND_LINES, passwords drawn from
    letters, digits and the punctuation a shell passes unquoted or in quotes."""
    rng = random.Random(seed)
    for kind, template in COMMAND_LINES:
        for _ in range(per_shape):
            password = _pick(rng, ALNUM, 1) + _pick(rng, ALNUM + "!#%*+-_", rng.randrange(8, 17))
            yield kind, password, template.format(user=rng.choice(_USERS), pw=password)
