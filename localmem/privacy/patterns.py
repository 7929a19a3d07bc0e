"""The patterns redaction looks for (localmem/privacy/redact.py runs them, checks what they find, and replaces it).

Two tables of (kind, pattern): providers' documented token formats, and generic shapes for what has no fixed
format (key blocks, URLs with a password, connection strings, command-line passwords, config-file keys, headers,
cookies, secret-like names given a value). What each found match must also pass to count is redact.py's.
"""

from __future__ import annotations

# (kind, pattern): the whole match is the secret unless the pattern has a group named "secret".
PROVIDER_RULES: tuple[tuple[str, str], ...] = (
    # A private key block of any kind: PEM/PGP (five dashes), RFC 4716 / SSH.com ("---- BEGIN SSH2 ENCRYPTED PRIVATE KEY
    # ----"), a PGP "SECRET KEY BLOCK", any other armour whose label names a key and not a public one ("-----BEGIN
    # OpenVPN Static key V1-----"); and a PuTTY key file's private lines (after "Private-Lines: N").
    ("private-key", r"-{4,5} ?BEGIN (?:(?:[A-Z0-9]+ )*(?:PRIVATE|SECRET) KEY(?: BLOCK)?"
                    r"|(?![A-Za-z0-9 ]{0,80}PUBLIC)(?:[A-Za-z0-9]+ ){0,4}[Kk]ey(?: [A-Za-z0-9]+){0,3}) ?-{4,5}.*?"
                    r"(?:-{4,5} ?END [A-Za-z0-9 ]*-{4,5}|\Z)"),
    ("private-key", r"(?m)^Private-Lines:[ \t]*\d{1,4}[ \t]*\r?\n(?P<secret>(?:[0-9A-Za-z+/=]{4,}(?:\r?\n|\Z))+)"),
    ("age-secret-key", r"\bAGE-SECRET-KEY-1[0-9A-Z]{58}\b"),
    ("aws-access-key-id", r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}\b"),
    ("google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])"),
    ("google-oauth-client-secret", r"\bGOCSPX-[0-9A-Za-z_\-]{28}(?![0-9A-Za-z_\-])"),
    ("google-oauth-token", r"\bya29\.[0-9A-Za-z_\-]{20,}"),
    ("azure-client-secret", r"(?<![0-9A-Za-z_~.\-])[0-9A-Za-z_~.\-]{3}\dQ~[0-9A-Za-z_~.\-]{31,34}(?![0-9A-Za-z_~.\-])"),
    ("azure-sas-signature", r"[?&]sig=(?P<secret>[0-9A-Za-z%+/=]{30,})"),
    ("github-token", r"\bgh[pousr]_[0-9A-Za-z._\-]{36,}"),
    ("github-fine-grained-token", r"\bgithub_pat_[0-9A-Za-z_]{60,255}\b"),
    ("gitlab-token", r"\bgl(?:pat|dt|rt|ptt|ft|imt|agent|oas|soat|cbt|ffct|wt|rtr|sa|c)-[0-9A-Za-z_\-]{20,}"),
    ("gitlab-runner-token", r"\bGR1348941[0-9A-Za-z_\-]{20,}"),
    ("slack-token", r"\bxox[abposre]-(?:\d+-)*[0-9A-Za-z\-]{10,}"),
    ("slack-app-token", r"\bxapp-\d-[0-9A-Z]+-\d+-[0-9a-f]+\b"),
    ("slack-webhook", r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[0-9A-Za-z_/]{20,}"),
    ("stripe-secret-key", r"\bsk_(?:live|test)_[0-9A-Za-z]{10,255}\b"),
    ("stripe-restricted-key", r"\brk_(?:live|test)_[0-9A-Za-z]{10,255}\b"),
    ("stripe-webhook-secret", r"\bwhsec_[0-9A-Za-z+/=]{24,}"),
    ("anthropic-api-key", r"\bsk-ant-[a-z]+\d*-[0-9A-Za-z_\-]{20,}"),
    ("openai-api-key", r"\bsk-(?:(?:proj|svcacct|admin|None)-)?[0-9A-Za-z_\-]{20,200}T3BlbkFJ[0-9A-Za-z_\-]{20,}"
                       r"|\bsk-(?:proj|svcacct|admin)-[0-9A-Za-z_\-]{40,}|\bsk-[0-9A-Za-z]{48}\b"),
    ("twilio-api-key-sid", r"\bSK[0-9a-f]{32}\b"),
    ("twilio-account-sid", r"\bAC[0-9a-f]{32}\b"),
    ("sendgrid-api-key", r"\bSG\.[0-9A-Za-z_\-]{22}\.[0-9A-Za-z_\-]{43}(?![0-9A-Za-z_\-])"),
    ("mailgun-api-key", r"\bkey-[0-9a-f]{32}\b"),
    ("mailchimp-api-key", r"\b[0-9a-f]{32}-us\d{1,2}\b"),
    ("npm-token", r"\bnpm_[0-9A-Za-z]{36}\b"),
    ("pypi-token", r"\bpypi-[0-9A-Za-z_\-]{50,}"),
    ("huggingface-token", r"\bhf_[0-9A-Za-z]{30,}\b"),
    ("digitalocean-token", r"\bdo[opr]_v1_[0-9a-f]{64}\b"),
    ("shopify-token", r"\bshp(?:at|ca|pa|ss)_[0-9a-fA-F]{32}\b"),
    ("square-token", r"\b(?:sq0atp|sq0csp|EAAA)[0-9A-Za-z_\-]{22,60}\b"),
    ("databricks-token", r"\bdapi[0-9a-f]{32}(?:-\d)?\b"),
    ("atlassian-api-token", r"\bATATT3[0-9A-Za-z_\-=]{100,}"),
    ("linear-api-key", r"\blin_(?:api|oauth)_[0-9A-Za-z]{40}\b"),
    ("notion-token", r"\b(?:secret|ntn)_[0-9A-Za-z]{43,46}\b"),
    ("vault-token", r"\bhv[sbr]\.[0-9A-Za-z_\-]{24,}"),
    ("doppler-token", r"\bdp\.(?:pt|st|sa|ct|scim|audit)\.[0-9A-Za-z]{40,44}\b"),
    ("grafana-token", r"\bglsa_[0-9A-Za-z]{32}_[0-9a-f]{8}\b|\bglc_[0-9A-Za-z+/=]{32,}"),
    ("postman-api-key", r"\bPMAK-[0-9a-f]{24}-[0-9a-f]{34}\b"),
    ("groq-api-key", r"\bgsk_[0-9A-Za-z]{48,}\b"),
    ("replicate-token", r"\br8_[0-9A-Za-z]{37}\b"),
    ("xai-api-key", r"\bxai-[0-9A-Za-z]{70,}\b"),
    ("telegram-bot-token", r"\b\d{8,10}:AA[0-9A-Za-z_\-]{33}(?![0-9A-Za-z_\-])"),
    # "\b[MNO]" with the boundary looked at behind: a pattern starting with a class is searched only from
    # the class's characters (it runs on most texts: its only string, ".", is in most).
    ("discord-bot-token", r"[MNO](?<!\w[MNO])[0-9A-Za-z_\-]{23,25}\.[0-9A-Za-z_\-]{6}\.[0-9A-Za-z_\-]{27,38}"
                          r"(?![0-9A-Za-z_\-])"),
    ("facebook-access-token", r"\bEAA[BC][0-9A-Za-z]{80,}"),
    # Only the first token start ("eyJ" after a word boundary) of a run of token characters is tried: a later one in
    # the same run shares its end, so it fails where the first failed, and trying each ("eyJ-eyJ-…") was quadratic.
    # "(?=(?P<x>…))(?P=x)" is an atomic group (a lookahead is never re-entered) that Python 3.10's re also reads.
    ("jwt", r"(?<![0-9A-Za-z_\-])(?=(?P<lead>[0-9A-Za-z_\-]*?\b(?=eyJ)))(?P=lead)(?P<secret>"
            r"eyJ(?=(?P<head>[0-9A-Za-z_\-]{8,}))(?P=head)\.eyJ(?=(?P<body>[0-9A-Za-z_\-]{8,}))(?P=body)\."
            r"[0-9A-Za-z_\-]{8,})"),
)

# Words that make the value next to them a secret. Kept to credential words: "key" alone
# ("the key to success") and "auth" alone are too common in ordinary text; "pw" and "pwd" are
# ("wifi pw: …", issue 40), "pass" is not ("pass: 3 of 4").
SECRET_WORD = (r"(?:secret|passw(?:or)?d|passwd|pwd?|passphrase|token|api[_\- ]?key|apikey|access[_\- ]?key"
                r"|private[_\- ]?key|signing[_\- ]?key|encryption[_\- ]?key|master[_\- ]?key|auth[_\- ]?(?:key|token)"
                r"|client[_\- ]?secret|credentials?|account[_\- ]?key|sas[_\- ]?key|dsn)")
_VALUE = r"(?P<secret>[^\s\"'`,;<>\[\]{}()]{4,})"
_NOT_A_WORD = r"(?![a-z]+(?![^\s\"']))"  # the value after it is not a lower-case word alone
# What a SECRET_WORD match holds, spelt out: "client secret" holds "secret", "credentials" "credential", and each
# "<word>[_\- ]?key" is one of its four spellings (the words alone, "api", "access", "account", are common).
SECRET_WORD_STRINGS = ("secret", "passwd", "password", "pw", "passphrase", "token", "credential", "dsn") + tuple(
    f"{word}{separator}key" for word in ("api", "access", "private", "signing", "encryption", "master", "auth",
                                         "account", "sas") for separator in ("_", "-", " ", ""))

_ARGUMENTS = r"(?:[ \t]+[^\s|;&]{1,256})"  # a command's arguments, not past a pipe, a ";" or an "&"
# The value after it is not a lower-case name alone ("-passwd passwd-file", "-P port_number"): a password is not.
_NOT_A_NAME = r"(?![a-z]+(?:[_\-][a-z]+)*(?![^\s\"']))"
_ARGUMENT = r"[\"']?" + _NOT_A_NAME + r"(?P<secret>[^\s\"']{1,256})"

# The shapes of issue 40's written-down misses (branch redact16), each a unit of its own (named: the benchmark
# benchmarks/safety/redaction_shapes.py judges each alone). A pattern starting with "-" has its boundary looked at
# behind it, so the search skips from one "-" to the next.
# S1: OpenSSL's "-passin pass:…"/"-passout pass:…"/"-pass pass:…", apksigner's "--ks-pass pass:…".
PASS_PREFIXED_ARGUMENT = (r"-(?<![0-9A-Za-z_\-]-)-?(?:[a-z]{1,8}-){0,2}pass(?:in|out|word)?(?:=|[ \t]+)[\"']?pass:"
                          r"(?P<secret>[^\s\"']{1,256})")
# S3: a user flag and its value, then within four arguments "-p …" or "-P …" (ipmitool, sqlcmd, cqlsh, cf/oc login):
# the value holds a letter (not a port) and no "/" (not a path); mysql's "-p …" prompts (redact.py's accept).
USER_THEN_PASSWORD_FLAG = (r"-(?<![0-9A-Za-z_\-]-)(?:u|U|-user|-username)(?:=|[ \t]+)[\"']?[^\s\"'\-][^\s\"']{0,255}"
                           r"[\"']?" + _ARGUMENTS + r"{0,4}?[ \t]+-[pP][ \t]+[\"']?" + _NOT_A_NAME
                           + r"(?=[^\s\"'/]{0,255}[A-Za-z])(?P<secret>[^\s\"'/]{1,256})(?![^\s\"'])")
# S4: the net-snmp tools' community "-c …", SNMPv3 passphrases "-A …"/"-X …"; IOS's "snmp-server community …".
SNMP_SECRET = r"\bsnmp[a-z]{2,12}" + _ARGUMENTS + r"{0,12}?[ \t]+-[cAX][ \t]*" + _ARGUMENT
SNMP_SERVER_COMMUNITY = r"\bsnmp-server[ \t]+community[ \t]+" + _ARGUMENT
# S5: rclone's obscured "pass = …" (a config line of its own).
RCLONE_PASS = r"^[ \t]*pass[ \t]*=[ \t]*" + _NOT_A_NAME + r"(?P<secret>[^\s\"']{1,256})[ \t]*$"
# S6: Wi-Fi keys: wpa_supplicant's psk="…", strongSwan's ': PSK "…"'; nmcli's "password …" and "wifi-sec.psk …".
WIFI_PSK = (r"(?<![0-9A-Za-z_.\-])(?:psk|PSK)(?:[ \t]*=[ \t]*|[ \t]+(?=[\"']))" + _ARGUMENT)
NMCLI_PASSWORD = (r"\bnmcli" + _ARGUMENTS + r"{0,12}?[ \t]+(?:password|(?:wifi-sec|802-11-wireless-security)\.psk)"
                  r"[ \t]+" + _ARGUMENT)
# S7: a password manager's session export (BW_SESSION=…, OP_SESSION_acme=…): an env name ending in SESSION, or
# SESSION and one more part, given a long random value (redact.py's _random_token).
SESSION_EXPORT = (r"(?<![0-9A-Za-z_])(?:[A-Z0-9]{1,40}_){0,8}SESSION(?:_[A-Za-z0-9]{1,40})?[ \t]*=[ \t]*[\"']?"
                  r"(?P<secret>[0-9A-Za-z+/_\-=.]{20,1024})")
# S8: "user:password" given to a user flag or key: "--user root:…", "--user=root:…", .curlrc's 'user = "alice:…"'.
USER_COLON_PASSWORD = (r"(?:-(?<![0-9A-Za-z_\-]-)-user(?:=|[ \t]+)|^[ \t]*user[ \t]*=[ \t]*)[\"']?"
                       r"(?P<user>[^\s:\"'/@]{1,64}):" + _NOT_A_NAME + r"(?P<secret>[^\s\"']{1,256})")
# S9: Oracle's "user/password@" after its tools or SQL*Plus's "connect".
ORACLE_USER_PASSWORD = (r"\b(?:sqlplus|expdp|impdp|exp|imp|rman|sqlldr|dgmgrl|conn(?:ect)?)(?:[ \t]+-[A-Za-z]{1,2})*"
                        r"(?:[ \t]+(?:target|catalog|auxiliary|userid)[ \t]*=?)?[ \t]+[\"']?"
                        r"[A-Za-z][0-9A-Za-z_$#]{0,29}/(?P<secret>[^\s/@\"']{1,128})@")
# S10: what follows a webhooks/hooks/webhookb2 path segment of an http(s) URL, when it holds a random run (redact.py's
# accept): Discord's, Teams', Mattermost's webhook tokens.
WEBHOOK_URL_TOKEN = (r"\bhttps?://[^\s/\"'<>]{1,256}(?:/[^\s/\"'<>?#]{1,256}){0,8}?/(?:webhooks?|hooks|webhookb2)/"
                     r"(?P<secret>[^\s\"'<>?#]{20,1024})")
# S11: an Authorization header whose scheme is "name=" (FCM's "key=AAAA…:APA91b…").
AUTHORIZATION_NAMED_VALUE = (r"(?i)\b(?:proxy-)?authorization[\"']?[ \t]*[:=][ \t]*[\"']?[a-z][a-z0-9_\-]{0,30}="
                             r"(?P<secret>[0-9A-Za-z._~+/\-:]{12,512}=*)")
# S13: gpg's "--passphrase …", as "--password …" is taken.
PASSPHRASE_FLAG = r"(?<![0-9A-Za-z_\-])--passphrase(?:=|[ \t]+)[\"']?(?P<secret>[^\s\"']{1,256})"
# S14: 7-Zip's and RAR's glued "-p…", zip's "-P …".
ARCHIVE_PASSWORD = r"\b(?:7z[ar]?|rar|unrar)" + _ARGUMENTS + r"{0,12}?[ \t]+-p[\"']?(?P<secret>[^\s\"']{1,256})"
ZIP_PASSWORD = r"\bzip(?:cloak)?" + _ARGUMENTS + r"{0,12}?[ \t]+-P[ \t]+" + _ARGUMENT

# The shapes of redact16's written-down misses (branch redact17), each a unit of its own, judged alone on the fifth
# held-out corpus (benchmarks/safety/redaction_shapes.py).
# W1: single-dash password flags (x11vnc "-passwd …", keytool "-storepass …", influx "-password …"); what a manual
# writes there instead (":env", "[…]", "option.", "isn't") is turned down by redact.py's _single_dash_value.
SINGLE_DASH_PASSWORD_FLAG = (r"-(?<![0-9A-Za-z_\-]-)(?:password|passwd|(?:src|dest)?(?:store|key)pass)(?:=|[ \t]+)"
                             r"[\"']?" + _NOT_A_NAME + r"(?P<secret>[^\s\"']{1,256})")
# W2: passwords given positionally to tools whose manual puts them there.
RABBITMQCTL_PASSWORD = (r"\brabbitmqctl" + _ARGUMENTS + r"{0,6}?[ \t]+(?:add_user|change_password)[ \t]+[^\s]{1,256}"
                        r"[ \t]+" + _ARGUMENT)
WPA_PASSPHRASE_ARGUMENT = r"\bwpa_passphrase[ \t]+[^\s]{1,256}[ \t]+" + _ARGUMENT
MOSQUITTO_PASSWD_BATCH = (r"\bmosquitto_passwd(?:[ \t]+-[A-Za-z]{1,3}){0,4}?[ \t]+-b(?:[ \t]+-[A-Za-z]{1,3}){0,4}"
                          r"[ \t]+[^\s\-][^\s]{0,255}[ \t]+[^\s]{1,256}[ \t]+" + _ARGUMENT)
MINIO_ALIAS_SECRET = (r"\bmc[ \t]+(?:alias[ \t]+set|config[ \t]+host[ \t]+add)[ \t]+[^\s]{1,256}[ \t]+[^\s]{1,2048}"
                      r"[ \t]+[^\s]{1,256}[ \t]+" + _ARGUMENT)
NET_USE_PASSWORD = (r"\bnet[ \t]+use(?:[ \t]+(?:[A-Za-z]:|\*))?[ \t]+\\\\[^\s]{1,256}[ \t]+[\"']?"
                    r"(?P<secret>[^\s\"'/*][^\s\"']{0,255})")
DB2_USING_PASSWORD = (r"(?i)\bdb2[ \t]+[\"']?connect[ \t]+to[ \t]+[^\s]{1,256}[ \t]+user[ \t]+[^\s]{1,256}[ \t]+using"
                      r"[ \t]+" + _ARGUMENT)
# W3: PowerShell's ConvertTo-SecureString "…" -AsPlainText (the password as a literal).
SECURESTRING_PLAIN_TEXT = (r"(?i)\bConvertTo-SecureString(?:[ \t]+-String)?[ \t]+(?P<q>[\"'])"
                           r"(?P<secret>[^\"'\r\n]{1,256})(?P=q)[^\r\n]{0,64}?-AsPlainText")
# W4: PHP's define('NAME', '…') and C's #define NAME "…" whose NAME ends in a credential word (DB_PASSWORD,
# SECRET_PASS, WordPress's AUTH_KEY and NONCE_SALT); SECRET_SSID does not end in one.
_DEFINED_SECRET_NAME = (r"(?:[A-Za-z0-9]{1,40}_){0,6}(?:PASS(?:WORD|WD|PHRASE)?|PWD|SECRET|TOKEN|KEY|SALT"
                        r"|[Pp]ass(?:word|wd|phrase)?|[Ss]ecret|[Tt]oken|[Kk]ey|[Ss]alt)")
PHP_DEFINE_SECRET = (r"\bdefine\([ \t]*(?P<q>[\"'])" + _DEFINED_SECRET_NAME + r"(?P=q)[ \t]*,[ \t]*(?P<r>[\"'])"
                     r"(?P<secret>[^\"'\r\n]{1,512})(?P=r)")
C_DEFINE_SECRET = r"#[ \t]*define[ \t]+" + _DEFINED_SECRET_NAME + r"[ \t]+\"(?P<secret>[^\"\r\n]{1,512})\""
# W5: a Wi-Fi QR code's password field ("WIFI:T:WPA;S:…;P:…;;").
WIFI_QR_PASSWORD = r"\bWIFI:(?:[^;\s]{0,256};){0,8}?P:(?P<secret>(?:[^;\\\r\n]|\\.){1,256});"
# W6: "netsh wlan show profile … key=clear"'s "Key Content : …".
NETSH_KEY_CONTENT = r"\bKey Content[ \t]*:[ \t]*(?P<secret>[^\s][^\r\n]{0,255}?)[ \t]*$"
# W7: IRC's "/msg NickServ IDENTIFY [nick] …".
NICKSERV_IDENTIFY = (r"(?i)(?:/msg[ \t]+nickserv|/ns|/nickserv|privmsg[ \t]+nickserv[ \t]+:?)[ \t]+identify"
                     r"(?:[ \t]+[^\s]{1,64})?[ \t]+" + _ARGUMENT + r"[ \t]*$")
# W8: Vertica's "vsql -w …".
VSQL_PASSWORD = r"\bvsql" + _ARGUMENTS + r"{0,12}?[ \t]+-w[ \t]*[\"']?" + _NOT_A_WORD + r"(?P<secret>[^\s\"']{1,256})"
# W9 (Redis's "ACL SETUSER … >password" and "AUTH [user] password") failed its ship rule (a manual's prose,
# "If omitted AUTH is disabled."), judged at e7512f9, and was taken out.
# W10 (a Groovy/Gradle DSL line 'storePassword "…"') failed its ship rule: corpus 5's report half holds its shape
# (MPD's 'password "…"', a name ending in password) and it took none, its name needing a part before "password".
# W11: jenkins-cli's "-auth user:token".
JENKINS_AUTH = r"-(?<![0-9A-Za-z_\-]-)auth[ \t]+[\"']?(?P<user>[^\s:\"'@]{1,64}):(?P<secret>[^\s\"']{1,256})"
# W12: Codecov's uploader token "-t …" (codecov, codecovcli, the bash uploader).
CODECOV_TOKEN = (r"\bcodecov[^\s]{0,64}" + _ARGUMENTS + r"{0,12}?[ \t]+(?:-t|--token)(?:=|[ \t]+)[\"']?"
                 r"(?P<secret>[^\s\"']{1,256})")
# W13: IFTTT's Maker key in "https://maker.ifttt.com/trigger/EVENT/with/key/…".
IFTTT_KEY = r"\bmaker\.ifttt\.com/(?:[^\s/?#]{1,256}/){0,4}?with/key/(?P<secret>[0-9A-Za-z_\-]{16,256})"
# W14: a KeePass XML entry's password (<Key>Password</Key> then its <Value>).
KEEPASS_PASSWORD_VALUE = (r"<Key>Password</Key>[ \t\r\n]{0,64}<Value(?:[ \t][^>]{0,256})?>"
                          r"(?P<secret>[^<]{1,1024})</Value>")
# W15: the Erlang distribution cookie: erl's "-setcookie …", elixir's and iex's "--cookie …".
ERLANG_COOKIE = (r"(?:-(?<![0-9A-Za-z_\-]-)setcookie|\b(?:elixir|iex)" + _ARGUMENTS + r"{0,12}?[ \t]+--cookie)"
                 r"(?:=|[ \t]+)[\"']?(?P<secret>[^\s\"']{1,256})")

GENERIC_RULES: tuple[tuple[str, str], ...] = (
    # The user may be empty ("redis://:PASS@host", "https://:PAT@dev.azure.com").
    ("url-password", r"\b[a-zA-Z][a-zA-Z0-9+.\-]{1,20}://[^\s:/@\"'<>]{0,256}:(?P<secret>[^\s@/\"'<>]{1,256})@"),
    # Config-file keys that always hold a secret in their format (issue 40): .npmrc's "_authToken=", "_auth=" (base64
    # of user:password) and "_password="; docker config.json's "auth" (base64 of user:password: checked by decoding);
    # a base64 PEM private key ("LS0tLS1CRUdJTi…": kubeconfig's client-key-data, a Secret's tls.key); a .pgpass line
    # "host:port:database:user:password" (port a number or *; "\:" escapes a colon), its last field.
    ("npmrc-auth", r"(?<![0-9A-Za-z_])_(?:authToken|auth|password)[ \t]*=[ \t]*[\"']?(?P<secret>[^\s\"'<>]{1,4096})"),
    ("docker-auth", r"[\"']auth[\"'][ \t]*:[ \t]*[\"'](?P<secret>[0-9A-Za-z+/]{8,4096}={0,2})[\"']"),
    ("private-key", r"(?<![0-9A-Za-z+/])LS0tLS1CRUdJTi[0-9A-Za-z+/]{20,16384}={0,2}"),
    ("pgpass-password", r"^[ \t]*[^\s:#][^\s:]{0,252}:(?:\d{1,5}|\*):[^\s:]{1,63}:[^\s:]{1,63}:"
                        r"(?P<secret>(?:[^\s:\\]|\\.){1,256})[ \t]*$"),
    ("connection-string-secret", r"(?i)(?:^|[;\s\"'])(?:password|pwd|accountkey|sharedaccesskey|sharedsecret)"
                                 r"=(?!=)(?P<secret>[^;\s\"']{1,512})"),
    # A password given as a command's argument (issue 40), where the tool's manual puts it: mysql's glued
    # "-p<password>" (a space after "-p" makes it prompt), "--password=…"/"--password …", "sshpass -p …",
    # "curl -u user:…", "htpasswd -b [file] user …", "docker login -p …", "mongo -p …", "redis-cli -a …".
    # Up to 12 arguments may come between the command and the flag.
    ("command-line-password", r"\b(?:mysql|mariadb)[a-z\-]{0,12}(?:[ \t]+[^\s]{1,256}){0,12}?[ \t]+-p[\"']?"
                              r"(?P<secret>[^\s\"']{1,256})"),
    ("command-line-password", r"(?<![0-9A-Za-z_\-])--pass(?:word)?(?:=|[ \t]+)[\"']?"
                              r"(?P<secret>[^\s\"']{1,256})"),
    ("command-line-password", r"\bsshpass(?:[ \t]+-[A-Za-oq-z][^\s]{0,256}){0,4}?[ \t]+-p[ \t]*[\"']?"
                              r"(?P<secret>[^\s\"']{1,256})"),
    ("command-line-password", r"\bcurl(?:[ \t]+[^\s]{1,256}){0,12}?[ \t]+(?:-u[ \t]*|--user(?:=|[ \t]+))[\"']?"
                              r"[^\s:\"']{1,256}:(?P<secret>[^\s\"']{1,256})"),
    # htpasswd: with "-n" (print, no file) the user and password follow the flags, else a file comes first.
    ("command-line-password", r"\bhtpasswd[ \t]+-(?:[A-Za-mo-z]{0,6}b[A-Za-mo-z]{0,6}[ \t]+[^\s]{1,256}"
                              r"|[A-Za-z]{0,6}(?:n[A-Za-z]{0,6}b|b[A-Za-z]{0,6}n)[A-Za-z]{0,6})"
                              r"[ \t]+[^\s]{1,256}[ \t]+[\"']?(?P<secret>[^\s\"']{1,256})"),
    # docker login's, the mongo shells' "-p …" and redis-cli's "-a …" take the password as the next argument;
    # a lower-case word there is prose ("the mongo -p flag prompts"), kept.
    ("command-line-password", r"\bdocker[ \t]+login(?:[ \t]+[^\s]{1,256}){0,12}?[ \t]+-p[ \t]+[\"']?"
                              + _NOT_A_WORD + r"(?P<secret>[^\s\"']{1,256})"),
    ("command-line-password", r"\bmongo(?:sh)?(?:[ \t]+[^\s]{1,256}){0,12}?[ \t]+-p[ \t]+[\"']?"
                              + _NOT_A_WORD + r"(?P<secret>[^\s\"']{1,256})"),
    ("command-line-password", r"\bredis-cli(?:[ \t]+[^\s]{1,256}){0,12}?[ \t]+-a[ \t]+[\"']?"
                              + _NOT_A_WORD + r"(?P<secret>[^\s\"']{1,256})"),
    # The OpenLDAP tools' (ldapsearch, ldapadd, ldapmodify, ldapwhoami, ldappasswd…) bind password "-w …", and the
    # Samba tools' (smbclient, rpcclient, net, smbget…) "-U user%password" / "--user=user%password".
    ("command-line-password", r"\bldap[a-z]{3,10}(?:[ \t]+[^\s]{1,256}){0,12}?[ \t]+-w[ \t]*[\"']?"
                              + _NOT_A_WORD + r"(?P<secret>[^\s\"']{1,256})"),
    # (It starts with its "-", the boundary looked at behind it, so the search skips from one "-" to the next.)
    ("command-line-password", r"-(?<![0-9A-Za-z_\-]-)(?:U|-user(?:name)?=)[ \t]*[\"']?[^\s%\"']{1,256}%"
                              r"(?P<secret>[^\s\"']{1,256})"),
    ("authorization-header", r"(?i)\b(?:bearer|token)\s+(?P<secret>[0-9A-Za-z._~+/\-]{12,}=*)"),
    ("authorization-header", r"(?i)\bauthorization\s*:\s*basic\s+(?P<secret>[0-9A-Za-z+/]{8,}=*)"),
    # An Authorization header with any scheme ("SSWS", "Token", "Digest"-less custom ones) or none: the credentials.
    ("authorization-header", r"(?i)\b(?:proxy-)?authorization[\"']?[ \t]*[:=][ \t]*[\"']?"
                             r"(?:[a-z][a-z0-9_\-]{0,30}[ \t]+)?(?P<secret>[0-9A-Za-z._~+/\-]{12,512}=*)"),
    # A cookie header, or curl's -b/--cookie with name=value, holding a long value: the cookies (a session id is a
    # credential).
    ("cookie", r"(?i)(?:\b(?:set-)?cookie[ \t]{0,8}:|(?<![0-9a-z_\-])(?:-b|--cookie)(?:[ \t]+|=))[ \t]{0,8}[\"']?"
               r"(?P<secret>(?:[^\s\"'=;]{1,64}=[^;\"'\r\n]{0,64};[ \t]{0,8}){0,8}[^\s\"'=;]{1,64}=[^;,\s\"']{16,2048}"
               r"(?:;[^\"'\r\n]{0,2048})?)"),
    # netrc(5): "machine HOST login USER password PASS", on one line or several; "default login … password …".
    ("netrc-password", r"\b(?:login|machine)[ \t\r\n]+[^\s]{1,256}[ \t\r\n]+(?:password|passwd)[ \t]+[\"']?"
                       + _NOT_A_WORD + r"(?P<secret>[^\s\"'(\[{<][^\s\"']{0,255})"),
    # NAME=value / NAME: value / "name": "value" with a secret-like NAME (an env line, a config entry).
    # The secret word ends a part of the name: DB_PASSWORD, stripe.secret, PGPASSWORD, accessToken; not
    # "tokenizer". Bounded and possessive (an atomic lookahead, as the jwt rule's), so a hostile run of name
    # characters costs linear time.
    ("secret-assignment", r"(?i)(?<![0-9A-Za-z_.\-])(?:[0-9A-Za-z]{1,40}[_.\-]){0,8}[0-9A-Za-z]{0,20}?"
                          + SECRET_WORD
                          + r"s?(?:[_.\-](?=(?P<tail>[0-9A-Za-z_.\-]{0,60}))(?P=tail))?(?![0-9A-Za-z_.\-])"
                          r"[\"']?[ \t]*(?P<sep>:=|=(?!=)|:)[ \t]*[\"']?" + _VALUE),
    # A name ending in "key" (license_key, appKey, DD_APP_KEY, "user key is") given a long high-entropy value: a key
    # word alone is too common to make any value a secret ("primary_key: id"), a random one it makes one. The value is
    # taken greedily with nothing after it to fail (no backtracking: "key=key=…" stays linear and cheap); the name's
    # boundary is looked at behind its first letter, so the search skips to a K or a k.
    # A numbered key ("Unseal Key 1: …") is one too, and a value may say its encoding first ("APP_KEY=base64:…").
    ("keyed-value", r"(?:[Kk](?<![A-Za-z][Kk])ey|K(?<=[a-z0-9]K)ey|K(?<![a-z]K)EY)s?(?:[ \t]\d{1,3})?[\"']?[ \t]*"
                    r"(?:is[ \t]+|:=|=(?!=)|:)[ \t]*[\"']?(?:base64:)?(?P<secret>[0-9A-Za-z+/_\-=.]{16,4096})"),
    # A long high-entropy value a few words after a credential word ("my api key is 8f3c…").
    ("secret-like-value", r"(?i)(?<![a-z])" + SECRET_WORD + r"s?(?![a-z])(?:\W{1,3}\w{1,12}){0,3}?\W{1,3}"
                          r"(?P<secret>[0-9A-Za-z+/_\-=.!#%&*]{12,})"),
    # A name whose last part is "pass" or "auth" given a value (DB_PASS, SMTP_PASS, RABBITMQ_DEFAULT_PASS,
    # db_admin_pass, REDIS_AUTH): "pass" or "auth" alone is not ("pass: 3 of 4"), a part of a longer name is.
    ("credential-setting", r"(?i)(?<![0-9A-Za-z_.\-])(?:[0-9A-Za-z]{1,40}[_.\-]){1,8}(?:pass|auth)"
                           r"(?![0-9A-Za-z_.\-])[\"']?[ \t]*(?P<sep>:=|=(?!=)|:)[ \t]*[\"']?" + _VALUE),
    # A client or session object made from a literal random string (cohere.Client("…"), APISession('…'),
    # Api('…')).
    ("client-token", r"(?:Client|Session|Api|API)\([ \t]*[\"'](?P<secret>[0-9A-Za-z+/_\-=.~]{16,512})[\"'][ \t]*[,)]"),
    # An "sk-" key of any of the many APIs shaped as OpenAI's (DeepSeek's sk- and 32 hex, proxies', gateways'): a long
    # random run after "sk-".
    ("sk-api-key", r"\bsk-(?P<secret>[0-9A-Za-z_\-]{24,512})"),
    ("command-line-password", PASS_PREFIXED_ARGUMENT),
    ("command-line-password", USER_THEN_PASSWORD_FLAG),
    ("command-line-password", SNMP_SECRET),
    ("command-line-password", SNMP_SERVER_COMMUNITY),
    ("credential-setting", RCLONE_PASS),
    ("credential-setting", WIFI_PSK),
    ("command-line-password", NMCLI_PASSWORD),
    ("credential-setting", SESSION_EXPORT),
    ("command-line-password", USER_COLON_PASSWORD),
    ("connection-string-secret", ORACLE_USER_PASSWORD),
    ("webhook-url-token", WEBHOOK_URL_TOKEN),
    ("authorization-header", AUTHORIZATION_NAMED_VALUE),
    ("command-line-password", PASSPHRASE_FLAG),
    ("command-line-password", ARCHIVE_PASSWORD),
    ("command-line-password", ZIP_PASSWORD),
    ("command-line-password", SINGLE_DASH_PASSWORD_FLAG),
    ("command-line-password", RABBITMQCTL_PASSWORD),
    ("command-line-password", WPA_PASSPHRASE_ARGUMENT),
    ("command-line-password", MOSQUITTO_PASSWD_BATCH),
    ("command-line-password", MINIO_ALIAS_SECRET),
    ("command-line-password", NET_USE_PASSWORD),
    ("command-line-password", DB2_USING_PASSWORD),
    ("command-line-password", SECURESTRING_PLAIN_TEXT),
    ("credential-setting", PHP_DEFINE_SECRET),
    ("credential-setting", C_DEFINE_SECRET),
    ("credential-setting", WIFI_QR_PASSWORD),
    ("credential-setting", NETSH_KEY_CONTENT),
    ("command-line-password", NICKSERV_IDENTIFY),
    ("command-line-password", VSQL_PASSWORD),
    ("command-line-password", JENKINS_AUTH),
    ("command-line-password", CODECOV_TOKEN),
    ("webhook-url-token", IFTTT_KEY),
    ("credential-setting", KEEPASS_PASSWORD_VALUE),
    ("command-line-password", ERLANG_COOKIE),
    # A BIP-39 seed phrase: 12 to 24 lower-case words of 3 to 8 letters, nothing but them, soon after "mnemonic",
    # "seed" or "phrase" (MNEMONIC="…", "my seed phrase is: …", fromPhrase("…")).
    # The words are taken whole (an atomic lookahead, as the jwt rule's). A cue followed by 28 or more words of up to
    # 8 letters in a run cannot match (the secret after it would be followed by a 25th word): it is turned down after
    # one count, and when 56 or more follow, the first 28 are consumed by a match holding no secret, so the search
    # resumes past cues that all fail as it did ("seed seed seed…", "phrase phrase…": 0.1 s a megabyte, not 2 to 6,
    # benchmarks/speed/seed_phrase_cost.py). The counted words are bounded too (8 letters, as the secret's): "seedseedseed…" stays linear; and a cue in
    # a word of more than 21 letters after it (an "s", two fillers and an 8-letter word) is turned down at once.
    ("seed-phrase", r"(?i)(?:mnemonic|seed|phrase)(?=[a-z]{0,21}(?![a-z]))"
                    r"(?:(?=[a-z]{0,8}(?:[ \t]+[a-z]{1,8}){55})[a-z]{0,8}(?:[ \t]+[a-z]{1,8}){27}"
                    r"|(?![a-z]{0,8}(?:[ \t]+[a-z]{1,8}){27})s?[\"']?[ \t]*(?:(?:phrase|is|was)[ \t]*){0,2}"
                    r"(?:[:=(][ \t]*)?[\"']?"
                    r"(?P<secret>(?=(?P<words>[a-z]{3,8}(?:[ \t]+[a-z]{3,8}){11,23}))(?P=words))(?![ \t]*[a-z]))"),
)
