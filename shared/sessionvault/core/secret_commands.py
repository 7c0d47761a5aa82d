"""Pass 1, secrets in commands and code that name no key: a password given to an admin tool as
a flag's argument or on its standard input, set by SQL, passed to an HTTP library as a tuple,
made a PowerShell secure string, or written out in prose after "log in with" (issue 35 item 8,
the families a review found kept). Each pattern's value group is judged by `secret_context`
as a strong one (the context itself names a password); `secret_login` only when it looks like
one (prose holds ordinary words after "admin /")."""

from __future__ import annotations

import re

from sessionvault.core.secret_patterns import BARE, CMD_END, QUOTED, VALUE

_TO_END = rf"{CMD_END}\s"  # the rest of the command, up to the flag
# A bare value that is not the next flag (`-w -b dc=x` gave -w nothing).
_ARG = rf"(?:{QUOTED}|(?P<bare>[^\s\"'`|;&<>-][^\s\"'`|;&<>]{{0,4000}}))"

COMMANDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # ldapsearch / ldapwhoami / ldapmodify ... -w <password> (-W prompts: nothing to find)
    ("secret_flag", re.compile(rf"(?<![\w-])ldap[a-z]*{_TO_END}-w\s+{_ARG}")),
    # openssl enc -k <password>; openssl passwd [-1|-5|-6|-apr1] [-salt s] <password>
    ("secret_flag", re.compile(rf"(?<![\w-])openssl\s+enc\b{_TO_END}-k\s+{_ARG}")),
    (
        "secret_flag",
        re.compile(
            rf"(?<![\w-])openssl\s+passwd(?:\s+-(?:1|5|6|apr1|crypt|aixmd5))?(?:\s+-salt\s+\S+)?\s+{_ARG}"
        ),
    ),
    # zip -P <password>; 7z a -p<password> (attached, as 7-Zip takes it)
    ("secret_flag", re.compile(rf"(?<![\w-])zip(?:cloak)?\b{_TO_END}-P\s+{_ARG}")),
    (
        "secret_flag",
        re.compile(rf"(?<![\w-])7z[az]?\s{CMD_END}(?<=\s)-p(?:{QUOTED}|(?P<bare>[^\s\"'`|;&<>]{{1,4000}}))"),
    ),
    # rabbitmqctl add_user <user> <password> / change_password <user> <password>
    ("secret_flag", re.compile(rf"(?<![\w-])rabbitmqctl\s+(?:add_user|change_password)\s+\S+\s+{_ARG}")),
    # echo <password> | sudo -S ... (printf too)
    (
        "secret_flag",
        re.compile(
            rf"(?<![\w-])(?:echo|printf)\s+(?:-[ne]+\s+|'%s\\n'\s+)?{VALUE}\s*\|\s*sudo\s+(?:-\w+\s+)*?-\w*S"
        ),
    ),
    # net use <drive> \\server\share /user:<name> <password>
    ("secret_flag", re.compile(rf"(?i)(?<![\w-])net\s+use\b{CMD_END}/user:\S+\s+{_ARG}")),
    # SQL: CREATE USER ... IDENTIFIED BY '<pw>'; ALTER ROLE ... WITH [ENCRYPTED] PASSWORD '<pw>'
    (
        "secret_assignment",
        re.compile(rf"(?i)\b(?:identified\s+by|with\s+(?:encrypted\s+)?password)\s+{VALUE}"),
    ),
    # Python: auth=('user', '<pw>'), HTTPBasicAuth('user', '<pw>'), BasicAuth(...), DigestAuth(...)
    (
        "secret_assignment",
        re.compile(
            r"(?:\bauth\s*=\s*\(|\b(?:HTTP)?(?:Basic|Digest|Proxy)Auth\()\s*[\"'][^\"'\n]{1,200}[\"']\s*,\s*"
            + QUOTED
        ),
    ),
    # PowerShell: ConvertTo-SecureString "<pw>" -AsPlainText
    ("secret_assignment", re.compile(rf"(?i)ConvertTo-SecureString\s+(?:-String\s+)?{VALUE}")),
    # prose: "log in with admin / <pw>", "creds ... admin:<pw>"
    (
        "secret_login",
        re.compile(
            r"(?i)\b(?:log\s*in|login|sign\s*in|creds|credentials|user(?:name)?\s*/\s*password)\b[^\n]{0,60}?"
            rf"(?<![\[\w])(?!REDACTED:)[\w.@-]{{2,40}}\s*(?:/|:)\s*{BARE}"  # not a marker's own colon
        ),
    ),
)
