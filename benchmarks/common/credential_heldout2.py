"""A second held-out credential corpus, and look-alike non-secrets, for redaction (issue 40).

benchmarks/common/credential_corpus.py holds the formats localmem/privacy/redact.py's rules were written from;
benchmarks/common/credential_heldout.py held 43 more, now half in-sample (redact14 mended general shapes from one
half, redactcfg14 six formats of the other). This corpus was written and committed (branch redact15) before any
redaction ran on it: formats and settings in neither of those two, each in a sentence or a snippet as a user
pastes it into a chat, the secret's span known; and texts of the same shapes that hold no secret (hashes in git
logs, lockfile checksums, UUIDs, base64 images, placeholders), each touched one a false positive.

The formats are written as the tools and providers document them, from memory of their documentation (not
re-read in this session; where a length is uncertain it is a plausible one): cloud consoles and CLIs (Alibaba
``aliyun configure``, Tencent ``tccli``, IBM ``ibmcloud login --apikey``, Linode's linode-cli config, Hetzner
``hcloud``, Scaleway's config.yaml), SaaS APIs (Gitea ``access_token=``, Asana ``2/…:…``, Trello ``ATTA…``,
Zendesk ``/token:``, PagerDuty ``Token token=``, Opsgenie ``GenieKey``, X's ``AAAA…%3D…`` bearer, Discord webhooks,
Algolia, LaunchDarkly ``sdk-``, Cohere, DeepSeek ``sk-`` + 32 hex, ElevenLabs ``xi-api-key``, Pinecone ``pcsk_``,
ngrok authtokens, Tailscale ``tskey-auth-``, Docker Hub ``dckr_pat_``, SonarQube ``squ_``, FCM legacy server keys
``AAAA…:APA91b…``), config files (``~/.git-credentials``, rclone's obscured ``pass =``, ``.s3cfg``, ``.wgetrc``,
``.curlrc``, ``terraform.tfvars``, env lines with names holding no credential word, Laravel's ``APP_KEY=base64:``,
``redis.conf``'s ``requirepass``, a Kubernetes Secret's ``data:``), connection shapes (JDBC query strings, Oracle
``user/password@``, ``ldapsearch -w`` and nslcd's ``bindpw``, ``smbclient -U user%pass`` and cifs mount options,
URLs of other schemes with a password, a password in a query string, a key in a query string), key material
(WireGuard ``PrivateKey``/``PresharedKey``, an OpenVPN static key, a minisign secret key, an Ethereum private key,
a BIP-39 seed phrase, a Bitcoin WIF key, a HashiCorp Vault unseal key, a TOTP seed), JSON shapes (``aws sts
assume-role`` output, ``kaggle.json``, a Google OAuth refresh token in token.json and rclone's config), a Gmail app
password, GitHub recovery codes. No real secret is here: every value is random characters from a seeded generator.

``split()`` halves the formats, and apart from them the look-alikes, by a shuffle seeded with SPLIT_SEED (fixed in
the commit that added this file): rules may be developed on the develop halves; the report halves are the honest
figures.
"""

from __future__ import annotations

import base64
import json
import random
import string
from typing import Callable, Iterator

from benchmarks.common.credential_heldout import (ALNUM, HEX, LOWER_ALNUM, UPPER_ALNUM, URLSAFE, _pem_body, _pick,
                                                  _uuid, halves, lookalikes, samples)

B64 = ALNUM + "+/"
BASE32 = string.ascii_uppercase + "234567"
BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
SHELL_SAFE_PASSWORD = ALNUM + "!%*+-_.^"  # characters a pasted password holds unquoted in a URL or a command
# A slice of the BIP-39 English word list (a seed phrase is 12 of its 2,048 words).
BIP39 = ("abandon ability able about above absent absorb abstract absurd abuse access accident account accuse "
         "achieve acid acoustic acquire across act action actor actress actual adapt add addict address adjust "
         "admit adult advance advice aerobic affair afford afraid again age agent agree ahead aim air airport "
         "aisle alarm album alcohol alert alien all alley allow almost alone alpha already also alter always "
         "amateur amazing among amount amused analyst anchor ancient anger angle angry animal ankle announce "
         "annual another answer antenna antique anxiety any apart apology appear apple approve april arch "
         "arctic area arena argue arm armed armor army around arrange arrest arrive arrow art artefact").split()

Made = tuple[str, str]  # (what goes in the text, the part of it that is the secret)


def _password(r: random.Random) -> str:
    return _pick(r, ALNUM, 1) + _pick(r, SHELL_SAFE_PASSWORD, r.randrange(11, 19))


def _b64(r: random.Random, size: int) -> str:
    return base64.b64encode(r.randbytes(size)).decode()


def _discord_webhook(r: random.Random) -> Made:
    token = _pick(r, URLSAFE, 68)
    return f"https://discord.com/api/webhooks/{r.randrange(10**17, 10**18)}/{token}", token


def _asana(r: random.Random) -> str:
    return f"2/{r.randrange(10**15, 10**16)}/{r.randrange(10**15, 10**16)}:{_pick(r, HEX, 32)}"


def _laravel_key(r: random.Random) -> Made:
    key = _b64(r, 32)
    return "base64:" + key, key


def _openvpn(r: random.Random) -> Made:
    lines = [_pick(r, HEX, 32) for _ in range(16)]
    text = ("-----BEGIN OpenVPN Static key V1-----\n" + "\n".join(lines) + "\n-----END OpenVPN Static key V1-----")
    return text, lines[3]


def _minisign(r: random.Random) -> Made:
    key = "RWRTY0Iy" + _b64(r, 150)
    return "untrusted comment: minisign encrypted secret key\n" + key, key


def _seed_phrase(r: random.Random) -> str:
    return " ".join(r.choice(BIP39) for _ in range(12))


def _wif(r: random.Random) -> str:
    return r.choice("KL") + _pick(r, BASE58, 51)


def _gmail_app_password(r: random.Random) -> str:
    return " ".join(_pick(r, string.ascii_lowercase, 4) for _ in range(4))


def _recovery_codes(r: random.Random) -> Made:
    codes = [f"{_pick(r, HEX, 5)}-{_pick(r, HEX, 5)}" for _ in range(8)]
    return "\n".join(codes), codes[4]


def _k8s_secret_value(r: random.Random) -> Made:
    encoded = base64.b64encode(_password(r).encode()).decode()
    return encoded, encoded


# name -> (generator of a secret or of (value, secret), templates: "{v}" is the value; "{id}" 20 upper-case
# alphanumerics and "{hex}" 32 hex drawn per text, for the identifiers that sit beside a secret).
FORMATS: dict[str, tuple[Callable[[random.Random], str | Made], tuple[str, ...]]] = {
    "alibaba-access-key-secret": (lambda r: _pick(r, ALNUM, 30), (
        "aliyun configure set --profile prod --mode AK --region cn-hangzhou --access-key-id LTAI{id} "
        "--access-key-secret {v}",
        "{{\n  \"AccessKeyId\": \"LTAI{id}\",\n  \"AccessKeySecret\": \"{v}\"\n}}",
    )),
    "tencent-cloud-secret-key": (lambda r: _pick(r, ALNUM, 32), (
        "tccli configure set secretId AKID{id} secretKey {v}",
        "TENCENTCLOUD_SECRET_ID=AKID{id}\nTENCENTCLOUD_SECRET_KEY={v}",
    )),
    "ibm-cloud-api-key": (lambda r: _pick(r, URLSAFE, 44), (
        "ibmcloud login --apikey {v} -r us-south",
        "IBMCLOUD_API_KEY={v} terraform apply",
    )),
    "linode-token": (lambda r: _pick(r, HEX, 64), (
        "# ~/.config/linode-cli\n[DEFAULT]\ndefault-user = alice\n\n[alice]\ntoken = {v}\nregion = eu-central",
        "LINODE_TOKEN={v} ansible-playbook site.yml",
    )),
    "hetzner-cloud-token": (lambda r: _pick(r, ALNUM, 64), (
        "$ hcloud context create prod\nToken: {v}\nContext prod created and activated",
        "export HCLOUD_TOKEN={v}",
    )),
    "scaleway-secret-key": (_uuid, (
        "# ~/.config/scw/config.yaml\naccess_key: SCW{id}\nsecret_key: {v}\ndefault_region: fr-par",
        "SCW_SECRET_KEY={v} scw instance server list",
    )),
    "gitea-token-in-query": (lambda r: _pick(r, HEX, 40), (
        "curl 'https://git.acme.dev/api/v1/repos/search?q=infra&access_token={v}'",
        "tea login add --name acme --url https://git.acme.dev --token {v}",
    )),
    "asana-pat": (_asana, (
        "ASANA_ACCESS_TOKEN={v}",
        "client = asana.Client.access_token('{v}')",
        "curl https://app.asana.com/api/1.0/users/me -H 'Authorization: Bearer {v}'",
    )),
    "trello-token": (lambda r: "ATTA" + _pick(r, HEX, 72), (
        "curl 'https://api.trello.com/1/members/me/boards?key={hex}&token={v}'",
        "TRELLO_TOKEN={v}",
    )),
    "zendesk-api-token": (lambda r: _pick(r, ALNUM, 40), (
        "curl https://acme.zendesk.com/api/v2/tickets.json -u alice@acme.dev/token:{v}",
        "I generated a Zendesk API token {v} but the import script still gets 401",
    )),
    "pagerduty-api-key": (lambda r: "u+" + _pick(r, URLSAFE, 18), (
        "curl -H 'Accept: application/json' -H 'Authorization: Token token={v}' https://api.pagerduty.com/incidents",
        "session = APISession('{v}')",
    )),
    "opsgenie-api-key": (_uuid, (
        "curl -X POST https://api.opsgenie.com/v2/alerts -H 'Authorization: GenieKey {v}' -d @alert.json",
        "OPSGENIE_API_KEY={v}",
    )),
    "twitter-bearer-token": (lambda r: "A" * 22 + _pick(r, ALNUM, 20) + "%3D" + _pick(r, ALNUM, 50), (
        "TWITTER_BEARER_TOKEN={v}",
        "curl 'https://api.twitter.com/2/tweets/search/recent?query=from:acme' -H \"Authorization: Bearer {v}\"",
    )),
    "discord-webhook": (_discord_webhook, (
        "DISCORD_WEBHOOK_URL={v}",
        "curl -H 'Content-Type: application/json' -d '{{\"content\": \"deploy done\"}}' {v}",
    )),
    "algolia-admin-key": (lambda r: _pick(r, HEX, 32), (
        "const client = algoliasearch('{id}', '{v}');",
        "ALGOLIA_ADMIN_API_KEY={v}",
    )),
    "launchdarkly-sdk-key": (lambda r: "sdk-" + _uuid(r), (
        "ldclient.set_config(Config(\"{v}\"))",
        "LAUNCHDARKLY_SDK_KEY={v}",
    )),
    "cohere-api-key": (lambda r: _pick(r, ALNUM, 40), (
        "co = cohere.Client(\"{v}\")",
        "COHERE_API_KEY={v}",
    )),
    "deepseek-api-key": (lambda r: "sk-" + _pick(r, HEX, 32), (
        "client = OpenAI(api_key=\"{v}\", base_url=\"https://api.deepseek.com\")",
        "curl https://api.deepseek.com/chat/completions -H \"Authorization: Bearer {v}\" -d @req.json",
        "my deepseek key {v} stopped working after I topped up",
    )),
    "elevenlabs-api-key": (lambda r: "sk_" + _pick(r, HEX, 48), (
        "curl https://api.elevenlabs.io/v1/voices -H 'xi-api-key: {v}'",
        "ELEVENLABS_API_KEY={v}",
    )),
    "pinecone-api-key": (lambda r: "pcsk_" + _pick(r, ALNUM, 5) + "_" + _pick(r, ALNUM, 60), (
        "pc = Pinecone(api_key=\"{v}\")",
        "PINECONE_API_KEY={v}",
    )),
    "ngrok-authtoken": (lambda r: "2" + _pick(r, ALNUM, 26) + "_" + _pick(r, ALNUM, 21), (
        "ngrok config add-authtoken {v}",
        "# ~/.config/ngrok/ngrok.yml\nversion: \"2\"\nauthtoken: {v}",
    )),
    "tailscale-auth-key": (lambda r: "tskey-auth-" + _pick(r, ALNUM, 17) + "-" + _pick(r, ALNUM, 33), (
        "tailscale up --authkey {v} --advertise-tags=tag:ci",
        "TS_AUTHKEY={v}",
    )),
    "dockerhub-pat": (lambda r: "dckr_pat_" + _pick(r, URLSAFE, 27), (
        "echo {v} | docker login -u alice --password-stdin",
        "DOCKERHUB_TOKEN={v}",
    )),
    "sonarqube-token": (lambda r: "squ_" + _pick(r, HEX, 40), (
        "mvn verify sonar:sonar -Dsonar.host.url=https://sonar.acme.dev -Dsonar.token={v}",
        "# sonar-project.properties\nsonar.projectKey=billing\nsonar.login={v}",
    )),
    "fcm-server-key": (lambda r: "AAAA" + _pick(r, URLSAFE, 7) + ":APA91b" + _pick(r, URLSAFE, 134), (
        "curl -X POST https://fcm.googleapis.com/fcm/send -H 'Authorization: key={v}' "
        "-H 'Content-Type: application/json' -d @msg.json",
        "FCM_SERVER_KEY={v}",
    )),
    "git-credentials-file": (_password, (
        "# ~/.git-credentials\nhttps://alice:{v}@git.acme.dev\n",
        "$ cat ~/.git-credentials\nhttps://deploy:{v}@gitlab.acme.dev",
    )),
    "rclone-obscured-pass": (lambda r: _pick(r, URLSAFE, r.randrange(30, 48)), (
        "[nas]\ntype = sftp\nhost = nas.local\nuser = alice\npass = {v}",
        "$ rclone config show\n[box]\ntype = webdav\nurl = https://dav.acme.dev\nvendor = other\nuser = alice\n"
        "pass = {v}",
    )),
    "s3cfg": (lambda r: _pick(r, B64, 40), (
        "# ~/.s3cfg\n[default]\naccess_key = AKIA{id}\nsecret_key = {v}\nhost_base = s3.amazonaws.com",
        "s3cmd --access_key=AKIA{id} --secret_key={v} ls s3://backups",
    )),
    "wgetrc": (_password, (
        "# ~/.wgetrc\nhttp_user = alice\nhttp_password = {v}",
        "ftp_user = backup\nftp_password = {v}\npassive_ftp = on",
    )),
    "curlrc": (_password, (
        "# ~/.curlrc\nuser = \"alice:{v}\"\nsilent",
        "$ cat ~/.curlrc\n--user alice:{v}\n--location",
    )),
    "terraform-tfvars": (_password, (
        "# terraform.tfvars\nregion = \"eu-west-1\"\ndb_admin_pass = \"{v}\"\ninstance_type = \"t3.micro\"",
        "pm_api_url = \"https://pve.local:8006/api2/json\"\npm_api_token_secret = \"{v}\"",
    )),
    "env-unusual-names": (_password, (
        "DB_PASS={v}",
        "SMTP_HOST=smtp.acme.dev\nSMTP_USER=noreply\nSMTP_PASS={v}",
        "docker run -e RABBITMQ_DEFAULT_USER=app -e RABBITMQ_DEFAULT_PASS={v} rabbitmq:3",
        "REDIS_AUTH={v}",
    )),
    "laravel-app-key": (_laravel_key, (
        "APP_NAME=Shop\nAPP_ENV=production\nAPP_KEY={v}\nAPP_DEBUG=false",
        "$ php artisan key:generate --show\n{v}",
    )),
    "redis-requirepass": (_password, (
        "# /etc/redis/redis.conf\nbind 127.0.0.1\nrequirepass {v}",
        "masterauth {v}\nreplicaof 10.0.0.5 6379",
    )),
    "k8s-secret-data": (_k8s_secret_value, (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ntype: Opaque\ndata:\n  password: {v}",
        "data:\n  username: YXBw\n  db-pass: {v}",
    )),
    "jdbc-password": (_password, (
        "jdbc:mysql://db.internal:3306/shop?user=app&password={v}&useSSL=true",
        "spring.datasource.url=jdbc:postgresql://db:5432/app?user=app&password={v}",
    )),
    "oracle-user-slash-password": (lambda r: _pick(r, ALNUM, r.randrange(12, 17)), (
        "sqlplus scott/{v}@//db.internal:1521/ORCLPDB1",
        "expdp system/{v}@ORCL schemas=HR directory=DATA_PUMP_DIR dumpfile=hr.dmp",
    )),
    "ldap-bind-password": (_password, (
        "ldapsearch -x -H ldap://ldap.acme.dev -D \"cn=admin,dc=acme,dc=dev\" -w {v} -b \"dc=acme,dc=dev\"",
        "# /etc/nslcd.conf\nuri ldap://ldap.acme.dev\nbinddn cn=nslcd,dc=acme,dc=dev\nbindpw {v}",
    )),
    "smb-password": (_password, (
        "smbclient //fs.acme.dev/share -U alice%{v}",
        "mount -t cifs //nas/backup /mnt/backup -o username=alice,password={v},vers=3.0",
    )),
    "url-password-other-schemes": (_password, (
        "ftp://backup:{v}@ftp.acme.dev/dumps/",
        "the camera stream is rtsp://admin:{v}@192.168.1.64:554/Streaming/Channels/101",
        "CELERY_BROKER_URL=amqps://worker:{v}@mq.acme.dev:5671/jobs",
        "mosquitto_sub -L mqtt://sensor:{v}@broker.local:1883/home/temp",
    )),
    "password-in-query": (_password, (
        "https://nas.local:5001/webapi/auth.cgi?api=SYNO.API.Auth&version=3&method=login&account=admin&passwd={v}",
        "curl 'http://cam.local/snapshot.cgi?user=admin&pass={v}' -o snap.jpg",
    )),
    "key-in-query": (lambda r: _pick(r, UPPER_ALNUM, 16), (
        "https://www.alphavantage.co/query?function=TIME_SERIES_DAILY&symbol=IBM&apikey={v}",
        "requests.get(f\"https://api.acme.dev/v1/quotes?symbol={{s}}&key={v}\")",
    )),
    "wireguard-private-key": (lambda r: _b64(r, 32), (
        "[Interface]\nPrivateKey = {v}\nAddress = 10.8.0.2/24\n\n[Peer]\nPublicKey = {hex}\n"
        "Endpoint = vpn.acme.dev:51820",
        "[Peer]\nPublicKey = {hex}\nPresharedKey = {v}\nAllowedIPs = 0.0.0.0/0",
    )),
    "openvpn-static-key": (_openvpn, (
        "{v}",
        "<tls-auth>\n{v}\n</tls-auth>\nkey-direction 1",
    )),
    "minisign-secret-key": (_minisign, ("{v}", "here is ~/.minisign/minisign.key:\n{v}")),
    "ethereum-private-key": (lambda r: "0x" + _pick(r, HEX, 64), (
        "PRIVATE_KEY={v}",
        "const wallet = new ethers.Wallet(\"{v}\", provider);",
        "metamask exported {v} for my account, how do I import it into hardhat?",
    )),
    "bip39-seed-phrase": (_seed_phrase, (
        "MNEMONIC=\"{v}\"",
        "my seed phrase is: {v}",
        "const wallet = ethers.Wallet.fromPhrase(\"{v}\");",
    )),
    "bitcoin-wif-key": (_wif, (
        "bitcoin-cli importprivkey {v} \"cold\" false",
        "the paper wallet says WIF {v}, can I sweep it with electrum?",
    )),
    "vault-unseal-key": (lambda r: _b64(r, 33), (
        "$ vault operator init -key-shares=1 -key-threshold=1\nUnseal Key 1: {v}\n\nInitial Root Token: hvs.{hex}",
        "vault operator unseal {v}",
    )),
    "totp-seed": (lambda r: _pick(r, BASE32, 32), (
        "otpauth://totp/ACME:alice@acme.dev?secret={v}&issuer=ACME",
        "the 2FA setup key it showed me was {v}, I saved it in my notes",
    )),
    "aws-sts-session-token": (lambda r: "IQoJb3JpZ2luX2Vj" + _pick(r, B64, 320), (
        "{{\n    \"Credentials\": {{\n        \"AccessKeyId\": \"ASIA{id}\",\n        \"SecretAccessKey\": "
        "\"{hex}\",\n        \"SessionToken\": \"{v}\",\n        \"Expiration\": \"2026-12-06T20:00:00Z\"\n    }}\n}}",
        "AWS_SESSION_TOKEN={v}",
    )),
    "kaggle-json": (lambda r: _pick(r, HEX, 32), (
        "{{\"username\":\"alice\",\"key\":\"{v}\"}}",
        "$ cat ~/.kaggle/kaggle.json\n{{\"username\": \"alice\", \"key\": \"{v}\"}}",
    )),
    "google-refresh-token": (lambda r: "1//0" + _pick(r, URLSAFE, 99), (
        "token.json:\n{{\"token\": \"ya29.{hex}\", \"refresh_token\": \"{v}\", \"token_uri\": "
        "\"https://oauth2.googleapis.com/token\"}}",
        "[gdrive]\ntype = drive\nscope = drive\ntoken = {{\"access_token\":\"ya29.{hex}\",\"token_type\":\"Bearer\","
        "\"refresh_token\":\"{v}\",\"expiry\":\"2026-12-06T10:00:00Z\"}}",
    )),
    "gmail-app-password": (_gmail_app_password, (
        "EMAIL_HOST_USER = 'alice@gmail.com'\nEMAIL_HOST_PASSWORD = '{v}'",
        "my gmail app password is {v} and smtp still says 535",
        "google gave me this app password: {v}",
    )),
    "github-recovery-codes": (_recovery_codes, (
        "github-recovery-codes.txt:\n{v}",
        "saving my GitHub recovery codes here:\n{v}",
    )),
}


def _png_base64(r: random.Random) -> str:
    return base64.b64encode(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + r.randbytes(300)).decode()


def _certificate_base64(r: random.Random) -> str:
    pem = "-----BEGIN CERTIFICATE-----\n" + _pem_body(r, 300) + "\n-----END CERTIFICATE-----\n"
    return base64.b64encode(pem.encode()).decode()


# Texts of the same shapes holding no secret: name -> (generator of a value, templates holding "{v}", "{id}",
# "{hex}" as above). Each text redaction touches is a false positive.
LOOKALIKES: dict[str, tuple[Callable[[random.Random], str], tuple[str, ...]]] = {
    "git-log-commit": (lambda r: _pick(r, HEX, 40), (
        "commit {v}\nAuthor: Alice <alice@acme.dev>\nDate:   Sun Dec 6 10:00:00 2026 +0100\n\n    fix the retry loop",
        "commit {v} (HEAD -> main, origin/main)\nMerge: {hex}\n    Merge branch 'token-refresh'",
    )),
    "git-oneline": (lambda r: _pick(r, HEX, 7), (
        "{v} fix token refresh on expiry\n{v} add password reset form\n{v} bump deps",
    )),
    "git-rev-parse": (lambda r: _pick(r, HEX, 40), ("$ git rev-parse HEAD\n{v}", "we deployed {v} to prod")),
    "uuid-request-id": (_uuid, (
        "the API returned 500, request id {v}",
        "{{\"id\": \"{v}\", \"name\": \"billing\", \"status\": \"active\"}}",
    )),
    "idempotency-key": (_uuid, ("curl https://api.stripe.com/v1/charges -H 'Idempotency-Key: {v}' -d amount=2000",)),
    "base64-image": (_png_base64, ("<img src=\"data:image/png;base64,{v}\" alt=\"logo\">",
                                   "background-image: url(data:image/png;base64,{v});")),
    "npm-integrity": (lambda r: _b64(r, 64), (
        "\"node_modules/lodash\": {{\n  \"version\": \"4.17.21\",\n  \"resolved\": "
        "\"https://registry.npmjs.org/lodash/-/lodash-4.17.21.tgz\",\n  \"integrity\": \"sha512-{v}\"\n}}",
        "lodash@^4.17.21:\n  version \"4.17.21\"\n  integrity sha512-{v}",
    )),
    "poetry-lock-hash": (lambda r: _pick(r, HEX, 64), (
        "files = [\n    {{file = \"requests-2.31.0-py3-none-any.whl\", hash = \"sha256:{v}\"}},\n]",
    )),
    "go-sum": (lambda r: _b64(r, 32), ("github.com/stretchr/testify v1.8.4 h1:{v}",)),
    "cargo-lock-checksum": (lambda r: _pick(r, HEX, 64), (
        "[[package]]\nname = \"serde\"\nversion = \"1.0.193\"\nsource = "
        "\"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"{v}\"",
    )),
    "requirements-hash": (lambda r: _pick(r, HEX, 64), ("requests==2.31.0 \\\n    --hash=sha256:{v}",)),
    "sha256sum-output": (lambda r: _pick(r, HEX, 64), ("{v}  ubuntu-24.04-live-server-amd64.iso",
                                                       "the file's sha256 is {v}, it matches the mirror")),
    "docker-digest": (lambda r: _pick(r, HEX, 64), (
        "docker pull nginx@sha256:{v}",
        "Digest: sha256:{v}\nStatus: Downloaded newer image for nginx:latest",
    )),
    "actions-pinned-sha": (lambda r: _pick(r, HEX, 40), ("    - uses: actions/checkout@{v} # v4.1.1",)),
    "sri-integrity": (lambda r: _b64(r, 48), (
        "<script src=\"https://cdn.jsdelivr.net/npm/bootstrap@5.3.2/dist/js/bootstrap.bundle.min.js\" "
        "integrity=\"sha384-{v}\" crossorigin=\"anonymous\"></script>",
    )),
    "placeholder-angle": (lambda r: r.choice(["<your-api-key>", "<paste your token here>", "<YOUR_TOKEN>"]), (
        "export OPENAI_API_KEY={v}",
        "API_TOKEN={v}",
        "curl -H 'Authorization: Bearer {v}' https://api.acme.dev/v1/me",
    )),
    "placeholder-x": (lambda r: "x" * r.randrange(8, 41), (
        "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "AWS_SECRET_ACCESS_KEY={v}",
        "password: {v}",
    )),
    "placeholder-dots": (lambda r: r.choice(["sk-ant-...", "sk_test_...", "ghp_..."]), (
        "export ANTHROPIC_API_KEY=\"{v}\"",
        "STRIPE_SECRET_KEY={v}",
    )),
    "placeholder-stars": (lambda r: "*" * r.randrange(4, 17), ("DB_PASSWORD={v}", "Authorization: Bearer {v}")),
    "placeholder-words": (lambda r: r.choice(["your-secret-key-here", "change-me-in-production",
                                              "replace-with-a-long-random-string"]), (
        "SECRET_KEY={v}",
        "JWT_SECRET={v}",
    )),
    "template-variable": (lambda r: r.choice(["${{ secrets.GITHUB_TOKEN }}", "{{ vault_db_password }}",
                                              "var.hcloud_token"]), (
        "Authorization: Bearer {v}",
        "password: \"{v}\"",
        "token = {v}",
    )),
    "ssh-public-key": (lambda r: "AAAAC3NzaC1lZDI1NTE5AAAAI" + _pick(r, B64, 43), (
        "ssh-ed25519 {v} alice@laptop",
        "add this to authorized_keys: ssh-ed25519 {v}",
    )),
    "ssh-fingerprint": (lambda r: _pick(r, B64, 43), (
        "ED25519 key fingerprint is SHA256:{v}.\nAre you sure you want to continue connecting (yes/no)?",
    )),
    "pgp-public-key-block": (lambda r: _pem_body(r, 300), (
        "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n{v}\n-----END PGP PUBLIC KEY BLOCK-----",
    )),
    "x509-certificate": (lambda r: _pem_body(r, 300), ("-----BEGIN CERTIFICATE-----\n{v}\n-----END CERTIFICATE-----",)),
    "kube-ca-data": (_certificate_base64, (
        "clusters:\n- cluster:\n    certificate-authority-data: {v}\n    server: https://10.0.0.1:6443",
    )),
    "wireguard-public-key": (lambda r: _b64(r, 32), (
        "[Peer]\nPublicKey = {v}\nAllowedIPs = 10.8.0.0/24\nEndpoint = vpn.acme.dev:51820",
        "$ wg pubkey < private.key\n{v}",
    )),
    "ethereum-address": (lambda r: "0x" + _pick(r, HEX, 40), ("send the USDC to {v} on Arbitrum",
                                                            "contract deployed at {v}")),
    "bitcoin-address": (lambda r: "bc1q" + _pick(r, "qpzry9x8gf2tvdw0s3jn54khce6mua7l", 38), (
        "donations welcome: {v}",
    )),
    "stripe-publishable-key": (lambda r: _pick(r, ALNUM, 99), (
        "const stripe = Stripe('pk_live_{v}');",
        "STRIPE_PUBLISHABLE_KEY=pk_test_{v}",
    )),
    "mac-and-ipv6": (lambda r: ":".join(_pick(r, HEX, 2) for _ in range(6)), (
        "    ether {v}  txqueuelen 1000  (Ethernet)\n    inet6 fe80::3e22:fbff:fe12:3456  prefixlen 64",
        "2001:0db8:85a3:0000:0000:8a2e:0370:7334\n{v}",
    )),
    "aws-arn": (lambda r: str(r.randrange(10**11, 10**12)), (
        "arn:aws:iam::{v}:role/deploy",
        "arn:aws:lambda:eu-west-1:{v}:function:resize-images",
    )),
    "aws-resource-ids": (lambda r: _pick(r, HEX, 17), ("terminated i-{v}; vol-{v} is still attached to sg-{v}",)),
    "stripe-object-ids": (lambda r: _pick(r, ALNUM, 24), ("refund pi_{v} for customer cus_{id}",)),
    "google-doc-url": (lambda r: _pick(r, URLSAFE, 44), ("https://docs.google.com/document/d/{v}/edit?usp=sharing",
                                                         "https://drive.google.com/file/d/{v}/view")),
    "mime-base64": (lambda r: _b64(r, 120), (
        "Content-Type: application/pdf; name=\"invoice.pdf\"\nContent-Transfer-Encoding: base64\n\n{v}",
    )),
    "s3-listing": (lambda r: _pick(r, HEX, 32), (
        "{{\n  \"Key\": \"backups/db-2026-12-06.sql.gz\",\n  \"ETag\": \"\\\"{v}\\\"\",\n  \"Size\": 1048576\n}}",
    )),
    "token-usage": (lambda r: str(r.randrange(100, 100000)), (
        "\"usage\": {{\"prompt_tokens\": {v}, \"completion_tokens\": 512, \"total_tokens\": 2048}}",
        "max_tokens: {v}",
    )),
    "oauth-client-id": (lambda r: f"{r.randrange(10**11, 10**12)}-{_pick(r, LOWER_ALNUM, 32)}", (
        "client_id={v}.apps.googleusercontent.com",
        "GOOGLE_CLIENT_ID={v}.apps.googleusercontent.com",
    )),
    "actions-cache-key": (lambda r: _pick(r, HEX, 64), ("Cache restored from key: Linux-node-{v}",)),
    "public-jwk": (lambda r: base64.urlsafe_b64encode(r.randbytes(256)).rstrip(b"=").decode(), (
        "{{\"kty\":\"RSA\",\"e\":\"AQAB\",\"use\":\"sig\",\"kid\":\"{hex}\",\"n\":\"{v}\"}}",
    )),
    "password-policy": (lambda r: str(r.randrange(8, 17)), (
        "passwords must be at least {v} characters and include one of !@#$%^&*",
        "the token bucket refills {v} tokens per second",
    )),
}

SPLIT_SEED = 15


def split() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(develop, report): the formats halved by a shuffle seeded with SPLIT_SEED, each half in FORMATS order."""
    return halves(list(FORMATS), SPLIT_SEED)


def split_lookalikes() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(develop, report) of the look-alikes, halved as the formats are."""
    return halves(list(LOOKALIKES), SPLIT_SEED)


def _fill(template: str, value: str, rng: random.Random) -> str:
    return template.format(v=value, id=_pick(rng, UPPER_ALNUM, 20), hex=_pick(rng, HEX, 32))


def heldout2_corpus(per_format: int = 12, seed: int = 46) -> Iterator[tuple[str, str, str]]:
    """(format, secret, text holding it): ``per_format`` samples of each format, its templates in turn."""
    return samples(FORMATS, per_format, seed, _fill)


def lookalike_corpus(per_kind: int = 4, seed: int = 47) -> Iterator[tuple[str, str]]:
    """(look-alike kind, text holding no secret): ``per_kind`` samples of each, its templates in turn."""
    return lookalikes(LOOKALIKES, per_kind, seed, _fill)


if __name__ == "__main__":  # the corpus's size and its halves (no redaction runs here)
    print(json.dumps({"formats": len(FORMATS), "lookalikes": len(LOOKALIKES),
                      "split": split(), "split_lookalikes": split_lookalikes()}, indent=1))
