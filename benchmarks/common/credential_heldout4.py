"""A fourth held-out credential corpus, written before any rule of its round (issue 40, branch redact16).

Written and committed before a rule was changed or measured on it: formats, tools and settings none of
credential_corpus.py, credential_heldout.py, credential_heldout2.py and credential_heldout3.py uses, from other
ecosystems than theirs: Windows and PowerShell (``ConvertTo-SecureString``, ``net use``, ``cmdkey``, ``schtasks
/rp``, ``psexec -p``), PaaS and cloud CLIs (``az login -p``, ``cf login -p``, ``oc login -p``), databases
(``cqlsh``, ``cypher-shell``, ``couchbase-cli``, ``influx -password``, ``vsql -w``, ``hdbsql -p``, ``db2 … using``,
SQL ``IDENTIFIED BY``/``PASSWORD '…'``, Redis ``ACL SETUSER … >…`` and ``AUTH``, a Go MySQL DSN ``user:pass@tcp(…)``,
``etcdctl --user``, ``mc alias set``, ``rabbitmqctl add_user``), source and config files of other languages (PHP
``define('DB_PASSWORD', …)``, WordPress salts, C ``#define SECRET_PASS "…"``, Gradle ``storePassword "…"``, ``dotnet
user-secrets`` and ``nuget -p``, an Erlang cookie), mobile (``apksigner --ks-pass pass:``, ``jarsigner -storepass``,
macOS ``security … -p``/``-w``, Apple app-specific passwords), IoT (``mosquitto_pub -P``, ``mosquitto_passwd -b``,
Tasmota's console, a Wi-Fi QR code, ``netsh wlan`` output, ``wpa_passphrase``, OpenWrt's UCI ``option key``), network
gear (Cisco IOS ``secret 0``/``snmp-server community``/``key``, strongSwan ``: PSK``, SNMPv3 ``-A``/``-X``), chat-ops
(IRC ``NickServ IDENTIFY``, WeeChat/irssi, Teams/Mattermost/IFTTT webhooks, ``jenkins-cli -auth``, ``codecov -t``),
game servers (Source ``rcon_password``, Valheim/Terraria ``-password``, ``mcrcon -p``), password managers' exports
(a LastPass/Chrome CSV, a KeePass XML entry). Each text is as a user pastes it into a chat, the secret's span known;
beside them, look-alikes of the same shapes that hold no secret (hashes, UUIDs, ids, placeholders, variables,
prompts), each one touched a false positive.

The values come from the samplers the other corpora share (credential_heldout.py ``samples``/``lookalikes``,
credential_heldout2.py's ``_password``/``_fill``): random characters from a seeded generator, no real secret. The
formats are written from memory of the tools' documentation (not re-read in this session). ``split()`` halves the
formats, and apart from them the look-alikes, by a shuffle seeded with SPLIT_SEED (fixed in the commit adding this
file): the report half is the honest figure; ``corpus_hash()`` pins every text.
"""

from __future__ import annotations

import hashlib
import json
import random
import string
from typing import Callable, Iterator

from benchmarks.common.credential_heldout import (ALNUM, HEX, LOWER_ALNUM, UPPER_ALNUM, URLSAFE, _pick, _uuid,
                                                  halves, lookalikes, samples)
from benchmarks.common.credential_heldout2 import _fill, _password

Made = tuple[str, str]  # (what goes in the text, the part of it that is the secret)
# WordPress's salt alphabet without the quotes and backslash a PHP string in single quotes would need escaped.
SALT = ALNUM + "!@#$%^&*()-_[]{}<>~`+=,.;:/?|"


def _app_specific(r: random.Random) -> str:
    return "-".join(_pick(r, string.ascii_lowercase, 4) for _ in range(4))


def _teams_webhook(r: random.Random) -> Made:
    token = _pick(r, HEX, 32)
    return (f"https://acme.webhook.office.com/webhookb2/{_uuid(r)}@{_uuid(r)}/IncomingWebhook/{token}/{_uuid(r)}",
            token)


def _mattermost_webhook(r: random.Random) -> Made:
    hook = _pick(r, LOWER_ALNUM, 26)
    return f"https://mm.acme.dev/hooks/{hook}", hook


def _ifttt_webhook(r: random.Random) -> Made:
    key = _pick(r, URLSAFE, 22)
    return f"https://maker.ifttt.com/trigger/door_open/with/key/{key}", key


FORMATS: dict[str, tuple[Callable[[random.Random], str | Made], tuple[str, ...]]] = {
    "powershell-securestring": (_password, (
        "$pw = ConvertTo-SecureString \"{v}\" -AsPlainText -Force",
        "$cred = New-Object System.Management.Automation.PSCredential (\"svc-backup\", "
        "(ConvertTo-SecureString '{v}' -AsPlainText -Force))",
    )),
    "windows-net-use-cmdkey": (_password, (
        "net use Z: \\\\fs01\\share {v} /user:ACME\\alice /persistent:yes",
        "cmdkey /add:fs01.acme.local /user:ACME\\alice /pass:{v}",
    )),
    "windows-schtasks-psexec": (_password, (
        "schtasks /create /tn nightly /tr C:\\jobs\\sync.bat /sc daily /ru ACME\\svc /rp {v}",
        "psexec \\\\web01 -u ACME\\admin -p {v} ipconfig /all",
    )),
    "azure-cli-service-principal": (lambda r: _pick(r, ALNUM, 3) + "8Q~" + _pick(r, URLSAFE + "~.", 31), (
        "az login --service-principal -u {hex} -p {v} --tenant acme.onmicrosoft.com",
        "az login --service-principal -u http://acme-ci -p '{v}' --tenant {hex}",
    )),
    "paas-cli-login": (_password, (
        "cf login -a https://api.sys.acme.dev -u alice -p {v} -o acme -s dev",
        "oc login https://api.ocp.acme.dev:6443 -u developer -p {v}",
    )),
    "nosql-shell-login": (_password, (
        "cqlsh 10.0.0.7 9042 -u cassandra -p {v}",
        "cypher-shell -a neo4j://graph.acme.dev:7687 -u neo4j -p {v}",
        "couchbase-cli server-list -c cb.acme.dev -u Administrator -p {v}",
    )),
    "analytics-db-login": (_password, (
        "influx -host ts.acme.dev -username admin -password {v} -database metrics",
        "vsql -h vertica.acme.dev -U dbadmin -w {v}",
        "hdbsql -n hana.acme.dev:30015 -u SYSTEM -p {v} \"SELECT * FROM DUMMY\"",
    )),
    "db2-connect-using": (_password, ("db2 connect to SAMPLE user db2inst1 using {v}",)),
    "sql-create-user": (_password, (
        "CREATE USER 'app'@'%' IDENTIFIED BY '{v}';",
        "ALTER ROLE reporting WITH LOGIN PASSWORD '{v}';",
        "CREATE LOGIN etl WITH PASSWORD = '{v}', CHECK_POLICY = OFF;",
    )),
    "redis-acl-auth": (_password, (
        "ACL SETUSER worker on >{v} ~jobs:* +@all",
        "127.0.0.1:6379> AUTH default {v}\nOK",
    )),
    "go-mysql-dsn": (_password, (
        "db, err := sql.Open(\"mysql\", \"app:{v}@tcp(db.acme.dev:3306)/shop?parseTime=true\")",
        "DSN=\"reporter:{v}@tcp(127.0.0.1:3306)/metrics\"",
    )),
    "php-define": (_password, (
        "define( 'DB_NAME', 'wordpress' );\ndefine( 'DB_USER', 'wp' );\ndefine( 'DB_PASSWORD', '{v}' );",
        "define('SMTP_PASS', \"{v}\");",
    )),
    "wordpress-salts": (lambda r: _pick(r, SALT, 64), (
        "define( 'AUTH_KEY',         '{v}' );",
        "define('NONCE_SALT', '{v}');",
    )),
    "c-define-secret": (_password, (
        "// arduino_secrets.h\n#define SECRET_SSID \"ACME-IoT\"\n#define SECRET_PASS \"{v}\"",
        "#define WIFI_PASSWORD \"{v}\"",
        "const char* mqtt_pass = \"{v}\";",
    )),
    "gradle-signing-config": (_password, (
        "signingConfigs {{\n    release {{\n        storeFile file(\"release.jks\")\n        storePassword \"{v}\"\n"
        "        keyAlias \"upload\"\n    }}\n}}",
        "        keyAlias 'upload'\n        keyPassword '{v}'",
    )),
    "android-apk-signing": (_password, (
        "apksigner sign --ks release.jks --ks-pass pass:{v} app-release.apk",
        "jarsigner -keystore release.jks -storepass {v} app-release-unsigned.apk upload",
    )),
    "macos-security-cli": (_password, (
        "security unlock-keychain -p {v} ~/Library/Keychains/build.keychain-db",
        "security add-generic-password -a alice -s deploy-api -w {v}",
    )),
    "apple-app-specific-password": (_app_specific, (
        "xcrun altool --upload-app -f App.ipa -t ios -u dev@acme.dev -p {v}",
        "FASTLANE_APPLE_APPLICATION_SPECIFIC_PASSWORD={v}",
        "apple gave me the app-specific password {v} for notarytool",
    )),
    "mosquitto-cli": (_password, (
        "mosquitto_pub -h broker.acme.dev -u sensor -P {v} -t home/temp -m 21.5",
        "mosquitto_passwd -b /etc/mosquitto/passwd sensor {v}",
    )),
    "tasmota-console": (_password, (
        "Backlog MqttHost broker.local; MqttUser tasmota; MqttPassword {v}",
        "Backlog SSID1 ACME-IoT; Password1 {v}",
    )),
    "wifi-qr-code": (_password, ("WIFI:T:WPA;S:ACME-Home;P:{v};;", "the QR on the fridge decodes to WIFI:S:ACME;T:WPA;P:{v};;")),
    "netsh-wlan-key": (_password, (
        "    Authentication         : WPA2-Personal\n    Security key           : Present\n"
        "    Key Content            : {v}",
    )),
    "wpa-passphrase-command": (_password, ("wpa_passphrase ACME-Lab {v} > /etc/wpa_supplicant/lab.conf",
                                           "ssid=ACME-Lab\nwpa=2\nwpa_passphrase={v}")),
    "openwrt-uci-wireless": (_password, (
        "config wifi-iface 'default_radio0'\n\toption ssid 'ACME'\n\toption encryption 'psk2'\n\toption key '{v}'",
        "uci set wireless.@wifi-iface[0].key='{v}'",
    )),
    "cisco-ios-secrets": (_password, (
        "username admin privilege 15 secret 0 {v}",
        "snmp-server community {v} RO",
        "tacacs-server host 10.0.0.2 key {v}",
        "crypto isakmp key {v} address 203.0.113.5",
    )),
    "strongswan-psk": (_password, (
        "# /etc/ipsec.secrets\n203.0.113.5 198.51.100.7 : PSK \"{v}\"",
        "%any : PSK '{v}'",
    )),
    "snmpv3-auth": (_password, (
        "snmpwalk -v3 -l authPriv -u monitor -a SHA -A {v} -x AES -X {v} 10.0.0.1",
        "snmpget -v3 -l authNoPriv -u monitor -a SHA -A {v} 10.0.0.1 sysName.0",
    )),
    "irc-nickserv": (_password, (
        "/msg NickServ IDENTIFY {v}",
        "/msg NickServ IDENTIFY alice {v}",
    )),
    "irc-client-settings": (_password, (
        "/set irc.server.libera.sasl_password \"{v}\"",
        "/connect -tls -password {v} irc.libera.chat 6697",
    )),
    "source-game-rcon": (_password, (
        "// server.cfg\nhostname \"ACME LAN\"\nrcon_password \"{v}\"\nsv_cheats 0",
        "./srcds_run -game csgo +map de_dust2 +rcon_password {v}",
    )),
    "game-server-password-flag": (_password, (
        "./valheim_server.x86_64 -name \"ACME\" -port 2456 -world \"Dedicated\" -password \"{v}\" -public 0",
        "mcrcon -H mc.acme.dev -P 25575 -p {v} \"whitelist add bob\"",
        "TerrariaServer.exe -port 7777 -password {v} -world worlds/acme.wld",
    )),
    "teams-webhook": (_teams_webhook, ("TEAMS_WEBHOOK={v}", "curl -H 'Content-Type: application/json' "
                                       "-d '{{\"text\": \"build green\"}}' {v}")),
    "mattermost-webhook": (_mattermost_webhook, (
        "curl -i -X POST -H 'Content-Type: application/json' -d '{{\"text\": \"deploy ok\"}}' {v}",
        "notify:\n  url: {v}",
    )),
    "ifttt-webhook": (_ifttt_webhook, ("curl -X POST {v}", "the doorbell script posts to {v}")),
    "jenkins-cli-auth": (lambda r: "11" + _pick(r, HEX, 32), (
        "java -jar jenkins-cli.jar -s https://ci.acme.dev/ -auth alice:{v} build deploy -p ENV=prod",
        "JENKINS_USER_ID=alice JENKINS_API_TOKEN={v} java -jar jenkins-cli.jar who-am-i",
    )),
    "codecov-token-flag": (_uuid, (
        "bash <(curl -s https://codecov.io/bash) -t {v}",
        "./codecov -t {v} -f coverage.xml",
    )),
    "password-manager-csv": (_password, (
        "url,username,password,totp,extra,name,grouping,fav\nhttps://github.com/login,alice,{v},,,GitHub,Dev,0",
        "name,url,username,password,note\ngithub.com,https://github.com/session,alice,{v},",
    )),
    "keepass-xml-entry": (_password, (
        "<String>\n  <Key>UserName</Key>\n  <Value>alice</Value>\n</String>\n<String>\n  <Key>Password</Key>\n"
        "  <Value ProtectInMemory=\"True\">{v}</Value>\n</String>",
    )),
    "erlang-cookie": (lambda r: _pick(r, string.ascii_uppercase, 20), (
        "erl -name app@10.0.0.4 -setcookie {v}",
        "$ cat ~/.erlang.cookie\n{v}",
    )),
    "dotnet-secrets-cli": (_password, (
        "dotnet user-secrets set \"Smtp:Password\" \"{v}\"",
        "dotnet nuget add source https://nuget.acme.dev/v3/index.json -n acme -u alice -p {v} "
        "--store-password-in-clear-text",
    )),
    "rabbitmqctl-password": (_password, (
        "rabbitmqctl add_user deploy {v}",
        "rabbitmqctl change_password guest {v}",
    )),
    "etcd-user-flag": (_password, (
        "etcdctl --endpoints=https://10.0.0.3:2379 --user root:{v} member list",
        "ETCDCTL_API=3 etcdctl --user=root:{v} get /config --prefix",
    )),
    "minio-alias": (lambda r: _pick(r, ALNUM, 40), (
        "mc alias set prod https://minio.acme.dev:9000 {id} {v}",
        "mc config host add backup https://s3.acme.dev {id} {v}",
    )),
}

LOOKALIKES: dict[str, tuple[Callable[[random.Random], str], tuple[str, ...]]] = {
    "powershell-prompted": (lambda r: f"svc-{_pick(r, LOWER_ALNUM, 6)}", (
        "$cred = Get-Credential -UserName ACME\\{v} -Message \"backup\"",
        "$pw = Read-Host -AsSecureString \"Password for {v}\"",
    )),
    "windows-prompted": (lambda r: _pick(r, LOWER_ALNUM, 6), (
        "net use Z: \\\\fs01\\{v} /user:ACME\\alice * /persistent:no",
        "runas /user:ACME\\{v} /savecred cmd.exe",
    )),
    "cisco-hashed-secrets": (lambda r: _pick(r, URLSAFE, 22), (
        "username admin privilege 15 secret 9 $9$nhEmQVczB7dqsO$X.{v}",
        "enable secret 5 $1$mERr${v}",
    )),
    "sql-without-password": (lambda r: _pick(r, string.ascii_lowercase, 6), (
        "GRANT SELECT ON shop.* TO '{v}'@'%';",
        "CREATE USER '{v}'@'%' IDENTIFIED WITH caching_sha2_password;",
        "ALTER USER {v} PASSWORD EXPIRE INTERVAL 90 DAY;",
    )),
    "gradle-signing-from-env": (lambda r: _pick(r, UPPER_ALNUM, 4), (
        "storePassword System.getenv(\"STORE_PASSWORD_{v}\")",
        "keyPassword project.property('KEY_PASSWORD_{v}')",
    )),
    "c-define-config": (lambda r: str(r.randrange(8, 129)), (
        "#define WIFI_SSID \"ACME-IoT\"\n#define MQTT_PORT 1883\n#define PASSWORD_MAX_LEN {v}",
        "#define TOKEN_BUFFER_SIZE {v}",
    )),
    "php-define-config": (lambda r: r.choice(["localhost", "wordpress", "utf8mb4"]), (
        "define( 'DB_NAME', '{v}' );\ndefine( 'DB_HOST', 'localhost' );",
        "define('WP_DEBUG', false);\ndefine('DB_CHARSET', '{v}');",
    )),
    "irc-commands": (lambda r: _pick(r, string.ascii_lowercase, 6), (
        "/msg NickServ INFO {v}\n/join #acme-dev",
        "/msg ChanServ OP #acme {v}",
    )),
    "game-server-settings": (lambda r: str(r.randrange(2, 64)), (
        "hostname \"ACME LAN\"\nsv_cheats 0\nmp_maxrounds {v}",
        "./valheim_server.x86_64 -name \"ACME\" -port 2456 -world \"Dedicated\" -public 1 -savefrequency {v}",
    )),
    "webhook-settings-urls": (lambda r: str(r.randrange(10**7, 10**9)), (
        "https://github.com/acme/web/settings/hooks/{v}",
        "https://ifttt.com/applets/{v}-turn-on-the-porch-light",
    )),
    "snmpv3-from-variables": (lambda r: r.choice(["\"$SNMP_AUTH\"", "${{SNMP_AUTH}}"]), (
        "snmpget -v3 -l authPriv -u monitor -a SHA -A {v} -x AES -X \"$SNMP_PRIV\" 10.0.0.1 sysName.0",
        "snmpwalk -v3 -l noAuthNoPriv -u monitor 10.0.0.1 # auth was {v}",
    )),
    "uci-wireless-no-key": (lambda r: str(r.randrange(1, 5)), (
        "config wifi-iface 'guest'\n\toption ssid 'ACME-Guest'\n\toption encryption 'none'\n\toption key '{v}'",
        "uci show wireless.radio0.channel='{v}'",
    )),
    "csv-without-password": (lambda r: _pick(r, string.ascii_lowercase, 5), (
        "name,url,username\nGitHub,https://github.com/login,{v}",
        "url,username,password,totp,extra,name,grouping,fav",
    )),
    "keepass-xml-title": (lambda r: _pick(r, ALNUM, 8), (
        "<String>\n  <Key>Title</Key>\n  <Value>GitHub {v}</Value>\n</String>",
    )),
    "ci-build-logs": (lambda r: _pick(r, HEX, 40), (
        "Started by user alice\nRunning as SYSTEM\n[Pipeline] checkout\nCommit {v}\nFinished: SUCCESS",
        "Build #{id} finished, artifact sha256:{hex}{hex}",
    )),
    "broker-listings": (lambda r: _pick(r, HEX, 16), (
        "$ rabbitmqctl list_users\nuser\ttags\nguest\t[administrator]\ndeploy\t[]",
        "{v}, started, etcd0, https://10.0.0.3:2380, https://10.0.0.3:2379, false",
    )),
    "minio-alias-list": (lambda r: _pick(r, UPPER_ALNUM, 20), (
        "$ mc alias list\nprod\n  URL       : https://minio.acme.dev:9000\n  AccessKey : {v}\n"
        "  SecretKey : ********\n  API       : s3v4",
    )),
    "apple-ids": (lambda r: _pick(r, UPPER_ALNUM, 10), (
        "Team ID {v}, bundle id dev.acme.app, provisioning profile {hex}",
        "DEVELOPMENT_TEAM = {v};\nPRODUCT_BUNDLE_IDENTIFIER = dev.acme.app;",
    )),
    "erlang-node-from-file": (lambda r: str(r.randrange(10, 99)), (
        "erl -name app@10.0.0.{v} -setcookie \"$(cat /run/secrets/erlang_cookie)\"",
        "Eshell V13.2 (abort with ^G)\n(app@10.0.0.{v})1>",
    )),
    "wifi-open-and-absent": (lambda r: r.choice(["ACME-Guest", "Lobby"]), (
        "WIFI:T:nopass;S:{v};;",
        "    SSID name              : \"{v}\"\n    Security key           : Absent\n    Key Index              : 1",
    )),
    "mosquitto-config": (lambda r: str(r.randrange(1000, 9999)), (
        "listener {v}\nallow_anonymous false\npassword_file /etc/mosquitto/passwd",
        "mosquitto_sub -h broker.acme.dev -p {v} -t 'home/#' -v",
    )),
    "codecov-settings": (_uuid, (
        "coverage:\n  status:\n    project: true\n# repo id {v}",
        "uploaded report {v} to codecov for commit {hex}",
    )),
}

SPLIT_SEED = 16


def split() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(develop, report): the formats halved by a shuffle seeded with SPLIT_SEED, each half in FORMATS order."""
    return halves(list(FORMATS), SPLIT_SEED)


def split_lookalikes() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(develop, report) of the look-alikes, halved as the formats are."""
    return halves(list(LOOKALIKES), SPLIT_SEED)


def heldout4_corpus(per_format: int = 12, seed: int = 50) -> Iterator[tuple[str, str, str]]:
    """(format, secret, text holding it): ``per_format`` samples of each format, its templates in turn."""
    return samples(FORMATS, per_format, seed, _fill)


def lookalike4_corpus(per_kind: int = 4, seed: int = 51) -> Iterator[tuple[str, str]]:
    """(look-alike kind, text holding no secret): ``per_kind`` samples of each, its templates in turn."""
    return lookalikes(LOOKALIKES, per_kind, seed, _fill)


def corpus_hash() -> str:
    """sha256 of every text, secret and look-alike, and both splits: a change to any moves the figures."""
    everything = [list(heldout4_corpus()), list(lookalike4_corpus()), split(), split_lookalikes()]
    return hashlib.sha256(json.dumps(everything).encode()).hexdigest()


if __name__ == "__main__":  # the corpus's size, halves and hash (no redaction runs here)
    print(json.dumps({"formats": len(FORMATS), "lookalikes": len(LOOKALIKES), "split": split(),
                      "split_lookalikes": split_lookalikes(), "hash": corpus_hash()}, indent=1))
