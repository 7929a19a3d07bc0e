"""A third held-out credential corpus, small, to judge one variant of redact15's develop-half rules (issue 40).

Written and committed (branch redact15) before that variant ran on it, after the second corpus's report half had
been read: formats and settings in none of credential_corpus.py, credential_heldout.py and credential_heldout2.py,
each as a user pastes it into a chat, the secret's span known; and look-alikes of the same shapes holding no secret.
No rule of the variant was written from any of it, so the whole of it is held out (no halves). The formats are
written as the tools document them, from memory of their documentation (not re-read in this session): Mailjet's
``--user public:private``, Postmark's ``X-Postmark-Server-Token``, Brevo's ``xkeysib-`` in ``api-key:``, ClickUp's
``pk_`` in ``Authorization:``, Typeform's ``tfp_``, MongoDB Atlas's CLI private key, a Kafka SASL JAAS line,
``SNOWSQL_PWD``, an OpenStack clouds.yaml, Ansible's ``ansible_become_pass``/``ansible_ssh_pass``, SNMP communities
(``-c``), ``ipmitool -P``, ``RSYNC_PASSWORD``, ``sqlcmd -P``, ``x11vnc -passwd``, OpenSSL's ``-passout pass:``,
``7z -p``/``zip -P``, ``gpg --passphrase``, ``keytool -storepass``, Wi-Fi (wpa_supplicant ``psk=``,
``nmcli … password``),
Home Assistant's secrets.yaml, Bitwarden's and 1Password's session exports, a Salesforce access token, a PayPal
client secret, a Plaid secret. Every value is random characters from a seeded generator.
"""

from __future__ import annotations

import json
import random
from typing import Callable, Iterator

from benchmarks.common.credential_heldout import ALNUM, HEX, UPPER_ALNUM, URLSAFE, _pick, _uuid, lookalikes, samples
from benchmarks.common.credential_heldout2 import B64, _b64, _fill, _password

FORMATS: dict[str, tuple[Callable[[random.Random], str], tuple[str, ...]]] = {
    "mailjet-secret-key": (lambda r: _pick(r, HEX, 32), (
        "curl -s -X POST --user \"{hex}:{v}\" https://api.mailjet.com/v3.1/send -d @mail.json",
        "MJ_APIKEY_PUBLIC={hex}\nMJ_APIKEY_PRIVATE={v}",
    )),
    "postmark-server-token": (_uuid, (
        "curl https://api.postmarkapp.com/email -H 'X-Postmark-Server-Token: {v}' -d @email.json",
        "POSTMARK_SERVER_TOKEN={v}",
    )),
    "brevo-api-key": (lambda r: "xkeysib-" + _pick(r, HEX, 64) + "-" + _pick(r, ALNUM, 16), (
        "curl https://api.brevo.com/v3/account -H 'api-key: {v}'",
        "BREVO_API_KEY={v}",
    )),
    "clickup-token": (lambda r: f"pk_{r.randrange(10**7, 10**8)}_" + _pick(r, UPPER_ALNUM, 32), (
        "curl https://api.clickup.com/api/v2/team -H 'Authorization: {v}'",
        "my clickup token {v} returns OAUTH_025",
    )),
    "typeform-token": (lambda r: "tfp_" + _pick(r, URLSAFE, 44) + "_" + _pick(r, URLSAFE, 14), (
        "curl https://api.typeform.com/forms -H \"Authorization: Bearer {v}\"",
        "TYPEFORM_TOKEN={v}",
    )),
    "atlas-private-key": (_uuid, (
        "atlas config set private_api_key {v}",
        "MONGODB_ATLAS_PUBLIC_KEY=abcdwxyz\nMONGODB_ATLAS_PRIVATE_KEY={v}",
    )),
    "kafka-sasl-jaas": (_password, (
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"app\" "
        "password=\"{v}\";",
        "confluent api-key store {id} {v} --resource lkc-abc123",
    )),
    "snowsql-pwd": (_password, ("SNOWSQL_PWD='{v}' snowsql -a acme-xy12345 -u alice",)),
    "openstack-clouds-yaml": (_password, (
        "clouds:\n  prod:\n    auth:\n      auth_url: https://keystone.acme.dev:5000/v3\n      username: alice\n"
        "      password: {v}\n      project_name: web",
        "export OS_USERNAME=alice\nexport OS_PASSWORD={v}",
    )),
    "ansible-password-vars": (_password, (
        "[web]\n10.0.0.5 ansible_user=deploy ansible_ssh_pass={v}",
        "# group_vars/all.yml\nansible_become_pass: {v}",
    )),
    "snmp-community": (lambda r: _pick(r, ALNUM, 12), (
        "snmpwalk -v2c -c {v} 10.0.0.1 1.3.6.1.2.1.1",
        "snmpget -v 2c -c {v} switch01.acme.dev sysUpTime.0",
    )),
    "ipmitool-password": (_password, ("ipmitool -I lanplus -H 10.0.0.9 -U ADMIN -P {v} power status",)),
    "rsync-password": (_password, ("RSYNC_PASSWORD={v} rsync -av rsync://backup@nas.local/share /srv/backup",)),
    "sqlcmd-password": (_password, ("sqlcmd -S db.acme.dev -U sa -P '{v}' -Q \"SELECT @@VERSION\"",)),
    "x11vnc-passwd": (_password, ("x11vnc -display :0 -forever -passwd {v}",)),
    "openssl-pass-arg": (_password, (
        "openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout pass:{v}",
        "openssl rsa -in enc.key -out plain.key -passin pass:{v}",
    )),
    "archive-password": (_password, ("7z a -p{v} -mhe=on backup.7z ~/Documents", "zip -P {v} -r secrets.zip notes/")),
    "gpg-passphrase": (_password, ("gpg --batch --yes --passphrase '{v}' -d backup.tar.gpg | tar x",)),
    "keytool-storepass": (_password, (
        "keytool -genkeypair -alias app -keyalg RSA -keystore app.jks -storepass {v} -keypass {v}",
    )),
    "wifi-psk": (_password, (
        "network={{\n    ssid=\"ACME-Office\"\n    psk=\"{v}\"\n}}",
        "nmcli dev wifi connect ACME-Office password {v}",
    )),
    "home-assistant-secrets": (_password, (
        "# secrets.yaml\nmqtt_user: hass\nmqtt_password: {v}\nlatitude: 51.5",
        "wifi_ssid: ACME\nwifi_password: \"{v}\"",
    )),
    "password-manager-session": (lambda r: _b64(r, 64), (
        "export BW_SESSION=\"{v}\"",
        "$ op signin\nexport OP_SESSION_acme=\"{v}\"",
    )),
    "salesforce-access-token": (lambda r: "00D" + _pick(r, ALNUM, 15) + "!" + _pick(r, ALNUM + ".", 96), (
        "curl https://acme.my.salesforce.com/services/data/v59.0/sobjects -H \"Authorization: Bearer {v}\"",
        "SF_ACCESS_TOKEN='{v}'",
    )),
    "paypal-client-secret": (lambda r: _pick(r, URLSAFE, 80), (
        "curl -v https://api-m.sandbox.paypal.com/v1/oauth2/token -u \"{id}:{v}\" -d grant_type=client_credentials",
        "PAYPAL_CLIENT_SECRET={v}",
    )),
    "plaid-secret": (lambda r: _pick(r, HEX, 30), (
        "client = plaid.Client(client_id='{hex}', secret='{v}', environment='sandbox')",
        "PLAID_SECRET={v}",
    )),
}

LOOKALIKES: dict[str, tuple[Callable[[random.Random], str], tuple[str, ...]]] = {
    "ansible-vars": (lambda r: r.choice(["yes", "true", "sudo"]), (
        "ansible_become: {v}\nansible_become_method: sudo\nansible_user: deploy",
        "[web]\n10.0.0.5 ansible_user=deploy ansible_become={v}",
    )),
    "snmp-public": (lambda r: r.choice(["public", "$SNMP_COMMUNITY"]), ("snmpwalk -v2c -c {v} 10.0.0.1",)),
    "ipmitool-variable": (lambda r: r.choice(["$IPMI_PASSWORD", "\"${IPMI_PW}\""]), (
        "ipmitool -I lanplus -H 10.0.0.9 -U ADMIN -P {v} sdr list",
    )),
    "archive-commands": (lambda r: _pick(r, HEX, 8), ("zip -r backup-{v}.zip dir -x '*.git*'",
                                                      "7z x a-{v}.7z -o/tmp/out")),
    "openssl-no-secret": (lambda r: _pick(r, HEX, 8), (
        "openssl req -new -key key.pem -out csr-{v}.pem -subj \"/CN=acme.dev\"",
        "openssl pkcs12 -export -in cert.pem -out b-{v}.p12 -passout env:P12_PASS",
    )),
    "gpg-key-listing": (lambda r: _pick(r, HEX.upper(), 16), (
        "sec   rsa4096/{v} 2016-03-10 [SC]\n      {hex}{id}\nuid   [ultimate] Alice <alice@acme.dev>",
    )),
    "wpa-settings": (lambda r: r.choice(["ACME-Guest", "ACME-5G"]), (
        "network={{\n    ssid=\"{v}\"\n    key_mgmt=WPA-PSK\n}}",
        "nmcli connection show\nNAME  UUID  TYPE  DEVICE\n{v}  " + "8d1c2f5e-1a2b-4c3d-9e8f-0a1b2c3d4e5f  wifi  wlan0",
    )),
    "password-manager-unlock": (lambda r: r.choice(["$(bw unlock --raw)", "$(op signin --raw)"]), (
        "export BW_SESSION={v}",
    )),
    "kafka-settings": (lambda r: r.choice(["PLAIN", "SCRAM-SHA-512"]), (
        "security.protocol=SASL_SSL\nsasl.mechanism={v}\nbootstrap.servers=pkc-abc.eu-west-1.aws.confluent.cloud:9092",
    )),
    "clouds-yaml-template": (lambda r: r.choice(["{{ os_password }}", "${OS_PASSWORD}"]), (
        "clouds:\n  prod:\n    auth:\n      username: alice\n      password: \"{v}\"",
    )),
    "vnc-options": (lambda r: str(r.randrange(5900, 5999)), ("x11vnc -display :0 -forever -shared -rfbport {v}",)),
    "git-diff-index": (lambda r: _pick(r, HEX, 7), (
        "diff --git a/app.py b/app.py\nindex {v}..{v} 100644\n--- a/app.py",)),
    "salesforce-record-ids": (lambda r: "001" + _pick(r, ALNUM, 15), ("updated Account {v} and Contact 003{id}",)),
    "request-ids": (_uuid, ("X-Request-Id: {v}", "uid: {v}\nresourceVersion: \"123456\"")),
    "gradle-verification": (lambda r: _pick(r, HEX, 64), (
        "<component group=\"com.google.guava\" name=\"guava\" version=\"32.1.2-jre\">\n"
        "   <artifact name=\"guava-32.1.2-jre.jar\">\n      <sha256 value=\"{v}\" origin=\"Generated by Gradle\"/>",
    )),
    "docker-images": (lambda r: _pick(r, HEX, 12), (
        "REPOSITORY   TAG       IMAGE ID       CREATED       SIZE\nnginx        latest    {v}   2 weeks ago   187MB",
    )),
    "terraform-state-etag": (lambda r: _pick(r, HEX, 32), ("\"etag\": \"{v}\",\n\"self_link\": \"https://x\"",)),
    "keytool-listing": (lambda r: ":".join(_pick(r, HEX.upper(), 2) for _ in range(32)), (
        "Certificate fingerprint (SHA-256): {v}",
    )),
    "base64-config-blob": (lambda r: _pick(r, B64, 60), ("\"icon\": \"data:image/svg+xml;base64,{v}\"",)),
    "jwks-url": (lambda r: _pick(r, URLSAFE, 22), (
        "jwks_uri: https://acme.eu.auth0.com/.well-known/jwks.json?v={v}",
    )),
}


def heldout3_corpus(per_format: int = 12, seed: int = 48) -> Iterator[tuple[str, str, str]]:
    """(format, secret, text holding it): ``per_format`` samples of each format, its templates in turn."""
    return samples(FORMATS, per_format, seed, _fill)


def lookalike3_corpus(per_kind: int = 4, seed: int = 49) -> Iterator[tuple[str, str]]:
    """(look-alike kind, text holding no secret): ``per_kind`` samples of each, its templates in turn."""
    return lookalikes(LOOKALIKES, per_kind, seed, _fill)


if __name__ == "__main__":  # the corpus's size (no redaction runs here)
    print(json.dumps({"formats": len(FORMATS), "lookalikes": len(LOOKALIKES)}))
