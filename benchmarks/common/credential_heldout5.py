"""A fifth held-out credential corpus, written before any rule of its round (issue 40, branch redact17).

Written and committed before a rule was changed or measured on it: formats, tools and settings none of
credential_corpus.py and credential_heldout.py to credential_heldout4.py uses, from other ecosystems than theirs:
embedded and industrial devices (Arduino's ``WiFi.begin``, MicroPython's ``wlan.connect``, ESPHome, MikroTik
RouterOS, VyOS/EdgeOS, an OPC UA client), scientific computing (Weights & Biases ``wandb login``, MATLAB
``setpref``, Jupyter's token, an R ``dbConnect``), media servers (Sonarr/Radarr ``config.xml``, Icecast, MPD,
Kodi, VLC's ``--http-password``, Subsonic's API query, ``transmission-remote -n``, ``deluge-console``), e-mail
clients and servers (mutt, msmtp, fetchmail, mbsync, OfflineIMAP, ``swaks``, Postfix ``sasl_passwd``, a Dovecot
passwd-file), VPN clients (vpnc, ``openconnect --passwd-on-stdin``, an OpenVPN ``auth-user-pass`` file, SoftEther
``vpncmd /PASSWORD:``, PPP ``chap-secrets``), backup tools (Bacula/Bareos, Kopia, Veeam's PowerShell, restic and
borg from files), BI tools (Tableau ``tabcmd``/``tsm``, ``grafana-cli … reset-admin-password``, Pentaho's
``kitchen.sh -pass=``, Looker's ``looker.ini``), the shell history of other shells (fish ``set -gx``, csh
``setenv``), config files of other languages (a Maven ``settings.xml``, Clojure EDN, Perl DBI, sbt ``Credentials``,
Python ``smtplib``, Go ``smtp.PlainAuth``, Elixir ``config``), VoIP (Asterisk), and chat messages where a person
pastes a password in prose. Each text is as a user pastes it into a chat, the secret's span known; beside them,
look-alikes of the same shapes that hold no secret (hashes, UUIDs, ids, placeholders, version strings, variables,
commands that fetch the password), each one touched a false positive.

The values come from the samplers the other corpora share (credential_heldout.py ``samples``/``lookalikes``/
``halves``, credential_heldout2.py's ``_password``/``_fill``): random characters from a seeded generator, no real
secret. The formats are written from memory of the tools' documentation (not re-read in this session), by a helper
who had read the previous round's work list: the tools were chosen for their ecosystems, not to hold or avoid that
list's shapes. ``split()`` halves the formats, and apart from them the look-alikes, by a shuffle seeded with
SPLIT_SEED (fixed in the commit adding this file): the report half is the honest figure; ``corpus_hash()`` pins
every text.
"""

from __future__ import annotations

import hashlib
import json
import random
import string
from typing import Callable, Iterator

from benchmarks.common.credential_heldout import (ALNUM, HEX, LOWER_ALNUM, UPPER_ALNUM, _pick, _uuid, halves,
                                                  lookalikes, samples)
from benchmarks.common.credential_heldout2 import _fill, _password


def _hex32(r: random.Random) -> str:
    return _pick(r, HEX, 32)


FORMATS: dict[str, tuple[Callable[[random.Random], str], tuple[str, ...]]] = {
    # Embedded and industrial.
    "arduino-wifi-begin": (_password, (
        "void setup() {{\n  WiFi.begin(\"ACME-IoT\", \"{v}\");\n}}",
        "WiFi.softAP(\"esp-setup\", \"{v}\");",
    )),
    "micropython-wlan": (_password, (
        "import network\nwlan = network.WLAN(network.STA_IF)\nwlan.active(True)\nwlan.connect('ACME-Lab', '{v}')",
    )),
    "esphome-yaml": (_password, (
        "wifi:\n  ssid: \"ACME-IoT\"\n  password: \"{v}\"",
        "ota:\n  - platform: esphome\n    password: {v}",
    )),
    "mikrotik-routeros": (_password, (
        "/user add name=ops group=full password={v}",
        "/interface wireless security-profiles set [ find default=yes ] mode=dynamic-keys "
        "authentication-types=wpa2-psk wpa2-pre-shared-key={v}",
    )),
    "vyos-plaintext-password": (_password, (
        "set system login user ops authentication plaintext-password {v}",
        "set service pppoe-server authentication local-users username alice password {v}",
    )),
    "opcua-client-login": (_password, (
        "opcua-commander -e opc.tcp://plc01.acme.local:4840 -u operator -p {v}",
        "uasubscribe -u opc.tcp://plc01.acme.local:4840 --user operator --password-from-arg {v}",
    )),
    # Scientific computing.
    "wandb-login": (lambda r: _pick(r, HEX, 40), (
        "wandb login {v}",
        "!wandb login --relogin {v}",
    )),
    "matlab-setpref": (_password, (
        "setpref('Internet','SMTP_Server','smtp.acme.dev');\nsetpref('Internet','SMTP_Password','{v}');",
    )),
    "jupyter-token-url": (lambda r: _pick(r, HEX, 48), (
        "    To access the server, open this file in a browser:\n"
        "    Or copy and paste one of these URLs:\n        http://127.0.0.1:8888/lab?token={v}",
        "jupyter lab --no-browser --port 9999 --IdentityProvider.token={v}",
    )),
    "r-dbconnect": (_password, (
        "con <- dbConnect(RPostgres::Postgres(), dbname = \"lab\", host = \"db.acme.dev\", user = \"analyst\", "
        "password = \"{v}\")",
    )),
    # Media servers.
    "arr-config-xml": (_hex32, (
        "<Config>\n  <Port>8989</Port>\n  <UrlBase></UrlBase>\n  <ApiKey>{v}</ApiKey>\n  <AuthenticationMethod>Forms"
        "</AuthenticationMethod>\n</Config>",
        "curl -H \"X-Api-Key: {v}\" http://radarr.local:7878/api/v3/movie",
    )),
    "icecast-xml": (_password, (
        "<authentication>\n    <source-password>{v}</source-password>\n    <admin-user>admin</admin-user>\n"
        "    <admin-password>{v}</admin-password>\n</authentication>",
    )),
    "mpd-conf-password": (_password, (
        "audio_output {{\n    type \"httpd\"\n}}\npassword \"{v}@read,add,control,admin\"",
    )),
    "kodi-webserver-xml": (_password, (
        "<webserver>true</webserver>\n<webserverport>8080</webserverport>\n<webserverusername>kodi"
        "</webserverusername>\n<webserverpassword>{v}</webserverpassword>",
    )),
    "vlc-http-password": (_password, (
        "vlc --intf http --http-host 0.0.0.0 --http-password {v} playlist.m3u",
        "cvlc --extraintf telnet --telnet-password {v} --telnet-port 4212",
    )),
    "subsonic-api-query": (_password, (
        "curl 'https://music.acme.dev/rest/ping.view?u=alice&p={v}&v=1.16.1&c=myapp&f=json'",
    )),
    "transmission-remote-auth": (_password, (
        "transmission-remote 192.168.1.20:9091 -n alice:{v} -l",
        "transmission-remote --auth alice:{v} -a 'magnet:?xt=urn:btih:{hex}'",
    )),
    "deluge-console-connect": (_password, (
        "deluge-console \"connect 127.0.0.1:58846 alice {v}; info\"",
    )),
    # E-mail clients and servers.
    "mutt-imap-pass": (_password, (
        "set imap_user = \"alice@acme.dev\"\nset imap_pass = \"{v}\"\nset folder = \"imaps://imap.acme.dev/\"",
        "set smtp_url = \"smtp://alice@smtp.acme.dev:587/\"\nset smtp_pass = '{v}'",
    )),
    "msmtp-account": (_password, (
        "account acme\nhost smtp.acme.dev\nport 587\nauth on\nuser alice@acme.dev\npassword {v}\nfrom alice@acme.dev",
    )),
    "fetchmail-poll": (_password, (
        "poll imap.acme.dev protocol IMAP user \"alice\" there with password \"{v}\" is alice here ssl",
        "poll pop.acme.dev proto POP3 user 'bob' pass '{v}' fetchall",
    )),
    "mbsync-offlineimap": (_password, (
        "IMAPAccount acme\nHost imap.acme.dev\nUser alice@acme.dev\nPass {v}\nSSLType IMAPS",
        "[Repository acme-remote]\ntype = IMAP\nremotehost = imap.acme.dev\nremoteuser = alice\nremotepass = {v}",
    )),
    "swaks-auth": (_password, (
        "swaks --to bob@acme.dev --server smtp.acme.dev:587 --auth LOGIN --auth-user alice --auth-password {v} -tls",
    )),
    "postfix-sasl-passwd": (_password, (
        "# /etc/postfix/sasl_passwd\n[smtp.acme.dev]:587 alice@acme.dev:{v}",
    )),
    "dovecot-passwd-file": (_password, (
        "alice:{{PLAIN}}{v}:1000:1000::/home/alice::",
    )),
    # VPN clients.
    "vpnc-config": (_password, (
        "IPSec gateway vpn.acme.dev\nIPSec ID acme-staff\nIPSec secret {v}\nXauth username alice",
        "Xauth username alice\nXauth password {v}",
    )),
    "openconnect-stdin": (_password, (
        "echo '{v}' | sudo openconnect --user=alice --passwd-on-stdin vpn.acme.dev",
        "printf 'alice\\n{v}\\ny' | /opt/cisco/anyconnect/bin/vpn -s connect vpn.acme.dev",
    )),
    "openvpn-auth-file": (_password, (
        "$ cat /etc/openvpn/client/auth.txt\nalice\n{v}",
    )),
    "softether-vpncmd": (_password, (
        "vpncmd vpn.acme.dev:443 /SERVER /HUB:STAFF /PASSWORD:{v} /CMD UserList",
    )),
    "ppp-chap-secrets": (_password, (
        "# Secrets for authentication using CHAP\n# client\tserver\tsecret\t\t\tIP addresses\n"
        "alice\tpptpd\t{v}\t*",
    )),
    # Backup tools.
    "bacula-director": (_password, (
        "Director {{\n  Name = bacula-dir\n  Password = \"{v}\"\n}}",
        "Storage {{\n  Name = File1\n  Address = sd01.acme.dev\n  Password = \"{v}\"\n  Device = FileChgr1\n}}",
    )),
    "kopia-connect": (_password, (
        "kopia repository connect s3 --bucket=acme-backup --access-key={id} --secret-access-key={hex} "
        "--password={v}",
        "KOPIA_PASSWORD={v} kopia snapshot create /srv",
    )),
    "veeam-powershell": (_password, (
        "Add-VBRCredentials -User ACME\\svc-veeam -Password \"{v}\" -Description \"backup svc\"",
    )),
    "restic-borg-files": (_password, (
        "$ cat /etc/restic/password\n{v}",
        "echo '{v}' > ~/.config/borg/passphrase && chmod 600 ~/.config/borg/passphrase",
    )),
    # BI tools.
    "tableau-cli-login": (_password, (
        "tabcmd login -s https://tableau.acme.dev -u alice -p {v}",
        "tsm login -u admin -p {v}",
    )),
    "grafana-reset-admin": (_password, (
        "grafana-cli admin reset-admin-password {v}",
        "docker exec -it grafana grafana cli admin reset-admin-password {v}",
    )),
    "pentaho-kitchen": (_password, (
        "./kitchen.sh -rep=prod-repo -user=admin -pass={v} -job=nightly_load -level=Basic",
        "./pan.sh -rep=prod-repo -user=admin -pass {v} -trans=load_sales",
    )),
    "looker-ini": (lambda r: _pick(r, ALNUM, 24), (
        "[Looker]\nbase_url=https://acme.cloud.looker.com\nclient_id={id}\nclient_secret={v}\nverify_ssl=True",
    )),
    # Other shells' history.
    "fish-set-env": (_password, (
        "set -gx DB_PASSWORD {v}",
        "set -Ux OPENROUTER_TOKEN {v}",
    )),
    "csh-setenv": (_password, (
        "setenv DB_PASSWORD {v}",
        "setenv SMTP_PASS '{v}'",
    )),
    # Config files and source of other languages.
    "maven-settings-xml": (_password, (
        "<server>\n  <id>nexus-releases</id>\n  <username>deploy</username>\n  <password>{v}</password>\n</server>",
    )),
    "clojure-edn": (_password, (
        "{{:db {{:dbtype \"postgresql\" :dbname \"app\" :user \"app\" :password \"{v}\"}}}}",
    )),
    "perl-dbi-connect": (_password, (
        "my $dbh = DBI->connect(\"dbi:Pg:dbname=app;host=db.acme.dev\", \"app\", \"{v}\", {{ RaiseError => 1 }});",
    )),
    "sbt-credentials": (_password, (
        "credentials += Credentials(\"Sonatype Nexus Repository Manager\", \"nexus.acme.dev\", \"deploy\", \"{v}\")",
    )),
    "python-smtplib-login": (_password, (
        "server = smtplib.SMTP_SSL(\"smtp.acme.dev\", 465)\nserver.login(\"alice@acme.dev\", \"{v}\")",
    )),
    "go-smtp-plainauth": (_password, (
        "auth := smtp.PlainAuth(\"\", \"alice@acme.dev\", \"{v}\", \"smtp.acme.dev\")",
    )),
    "elixir-config": (_password, (
        "config :shop, Shop.Repo,\n  username: \"shop\",\n  password: \"{v}\",\n  hostname: \"db.acme.dev\"",
    )),
    # VoIP.
    "asterisk-sip": (_password, (
        "[1001]\ntype=friend\nhost=dynamic\nsecret={v}\ncontext=internal",
        "[1002-auth]\ntype=auth\nauth_type=userpass\nusername=1002\npassword={v}",
    )),
    # Chat messages where a person pastes a password in prose.
    "prose-pasted-password": (_password, (
        "the NAS login is admin / {v} if you need to get in tonight",
        "for the staging dashboard use alice@acme.dev with {v}, I'll rotate it tomorrow",
        "I reset it, the new one is {v} (don't share it)",
    )),
}

LOOKALIKES: dict[str, tuple[Callable[[random.Random], str], tuple[str, ...]]] = {
    "arduino-from-defines": (lambda r: r.choice(["SECRET_SSID", "WIFI_SSID"]), (
        "WiFi.begin({v}, WIFI_PASS);",
        "wlan.connect(config.{v}, config.PASSWORD)",
    )),
    "esphome-secret-refs": (lambda r: r.choice(["wifi_password", "ota_password", "api_password"]), (
        "wifi:\n  ssid: !secret wifi_ssid\n  password: !secret {v}",
    )),
    "router-listings": (lambda r: str(r.randrange(1, 9)), (
        "/user print\n Flags: X - disabled\n #   NAME     GROUP\n {v}   ops      full",
        "set system login user ops authentication encrypted-password '$6$rounds=656000$abc{v}'",
    )),
    "password-hashes": (lambda r: _pick(r, ALNUM + "./", 43), (
        "c.ServerApp.password = 'argon2:$argon2id$v=19$m=10240,t=10,p=8${v}'",
        "alice:{{SHA512-CRYPT}}$6${v}:1000:1000::/home/alice::",
    )),
    "wandb-run-output": (lambda r: _pick(r, LOWER_ALNUM, 8), (
        "wandb: Syncing run fluent-river-42\nwandb: View run at https://wandb.ai/acme/vision/runs/{v}",
        "wandb: Currently logged in as: alice (acme). Use `wandb login --relogin` to force relogin",
    )),
    "version-strings": (lambda r: f"{r.randrange(1, 12)}.{r.randrange(0, 30)}.{r.randrange(0, 9)}", (
        "Grafana v{v} (commit: {hex})",
        "tabcmd version {v}, build {id}",
    )),
    "media-server-ids": (_uuid, (
        "X-Plex-Client-Identifier: {v}\nX-Plex-Product: Plex Web",
        "<Config>\n  <Port>8989</Port>\n  <InstanceName>Sonarr</InstanceName>\n  <InstanceId>{v}</InstanceId>\n"
        "</Config>",
    )),
    "mail-password-commands": (lambda r: r.choice(["mail/acme", "email/alice"]), (
        "IMAPAccount acme\nHost imap.acme.dev\nUser alice@acme.dev\nPassCmd \"pass show {v}\"",
        "account acme\nuser alice@acme.dev\npasswordeval \"pass show {v}\"",
    )),
    "backup-password-files": (lambda r: _pick(r, HEX, 8), (
        "restic -r sftp:backup@nas:/srv/restic --password-file /etc/restic/password snapshots\n"
        "ID        Time                 Host\n{v}  2026-12-01 03:00:01  web01",
        "export BORG_PASSCOMMAND='pass show backup/borg'\nborg list ::\nweb01-2026-12-01  Mon, 2026-12-01 [{hex}]",
    )),
    "other-shell-settings": (lambda r: r.choice(["nvim", "hx", "micro"]), (
        "set -gx EDITOR {v}\nset -gx PATH $HOME/.local/bin $PATH",
        "setenv EDITOR {v}\nsetenv LANG en_US.UTF-8",
    )),
    "env-passwords": (lambda r: r.choice(["DB_PASSWORD", "SMTP_PASSWORD"]), (
        "set -gx DB_HOST db.acme.dev\nset -gx {v} (pass show db/app)",
        "my $dbh = DBI->connect($dsn, $ENV{{APP_USER}}, $ENV{{{v}}});",
    )),
    "maven-settings-from-env": (lambda r: r.choice(["NEXUS_PASSWORD", "DEPLOY_PASSWORD"]), (
        "<server>\n  <id>nexus</id>\n  <username>deploy</username>\n  <password>${{env.{v}}}</password>\n</server>",
    )),
    "placeholders": (lambda r: r.choice(["<password>", "********", "{password}"]), (
        "tabcmd login -s https://tableau.acme.dev -u alice -p {v}",
        "Xauth username alice\nXauth password {v}",
    )),
    "prose-about-passwords": (lambda r: r.choice(["router", "NAS", "alarm panel"]), (
        "the {v} password is on the sticker underneath, ask me if it's gone",
        "I changed the {v} password yesterday; it's in the shared vault now",
    )),
    "smtp-login-from-variables": (lambda r: r.choice(["SMTP_USER", "MAIL_USER"]), (
        "server.login(os.environ[\"{v}\"], os.environ[\"SMTP_PASSWORD\"])",
        "auth := smtp.PlainAuth(\"\", os.Getenv(\"{v}\"), os.Getenv(\"SMTP_PASS\"), host)",
    )),
    "chap-secrets-empty": (lambda r: _pick(r, string.ascii_lowercase, 5), (
        "# Secrets for authentication using CHAP\n# client\tserver\tsecret\t\t\tIP addresses\n{v}\tpptpd\t\"\"\t*",
    )),
    "sip-settings": (lambda r: str(r.randrange(1000, 1999)), (
        "[{v}]\ntype=friend\nhost=dynamic\ncontext=internal\nnat=force_rport,comedia",
        "[{v}-aor]\ntype=aor\nmax_contacts=1",
    )),
    "vpn-session-output": (lambda r: _pick(r, UPPER_ALNUM, 12), (
        "POST https://vpn.acme.dev/\nConnected to 203.0.113.5:443\nSSL negotiation with vpn.acme.dev\n"
        "Got CONNECT response: HTTP/1.1 200 OK\nCSTP connected. DPD 30, Keepalive 20\nSession id {v}",
        "VPN Client> AccountList\nVPN Connection Setting Name|acme\nStatus                     |Connected\n"
        "Device Name                |VPN{v}",
    )),
}

SPLIT_SEED = 17


def split() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(develop, report): the formats halved by a shuffle seeded with SPLIT_SEED, each half in FORMATS order."""
    return halves(list(FORMATS), SPLIT_SEED)


def split_lookalikes() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(develop, report) of the look-alikes, halved as the formats are."""
    return halves(list(LOOKALIKES), SPLIT_SEED)


def heldout5_corpus(per_format: int = 12, seed: int = 52) -> Iterator[tuple[str, str, str]]:
    """(format, secret, text holding it): ``per_format`` samples of each format, its templates in turn."""
    return samples(FORMATS, per_format, seed, _fill)


def lookalike5_corpus(per_kind: int = 4, seed: int = 53) -> Iterator[tuple[str, str]]:
    """(look-alike kind, text holding no secret): ``per_kind`` samples of each, its templates in turn."""
    return lookalikes(LOOKALIKES, per_kind, seed, _fill)


def corpus_hash() -> str:
    """sha256 of every text, secret and look-alike, and both splits: a change to any moves the figures."""
    everything = [list(heldout5_corpus()), list(lookalike5_corpus()), split(), split_lookalikes()]
    return hashlib.sha256(json.dumps(everything).encode()).hexdigest()


if __name__ == "__main__":  # the corpus's size, halves and hash (no redaction runs here)
    print(json.dumps({"formats": len(FORMATS), "lookalikes": len(LOOKALIKES), "split": split(),
                      "split_lookalikes": split_lookalikes(), "hash": corpus_hash()}, indent=1))
