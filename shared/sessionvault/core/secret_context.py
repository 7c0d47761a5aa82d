"""Pass 1, second half, of secret scrubbing (`redact`): secrets known by where they stand rather
than by their shape. A transcript holds them as commands (`PGPASSWORD=... psql`, `mysql -p...`,
`curl -u admin:...`, `--token ...`), their output (`printenv`, `docker inspect`), config files a
model printed (`.env`, YAML, JSON, TOML, INI, `.npmrc`, `.netrc`, `.pgpass`, XML, Dockerfiles),
HTTP (`X-Api-Key:`, `Cookie:`, `?access_token=`) and stack traces (a repr's `password='...'`).

Each pattern finds a key (or a command) and the value after it; whether the value is a secret is
then judged here, by how strongly the key names one:
- strong (`password`, `secret`, `token`, `api_key`, `SECRET_KEY`, `client_secret`, `_authToken`):
  any literal value that is not a placeholder, a template, a reference or a type;
- medium (another `..._KEY`): a value with a letter and a digit, not a path or a UUID;
- weak (`auth`, `session_id`, `cookie`, `sig`, `dsn`): only a value that looks random.
detect-secrets' keyword plugin (pass 2) wants quotes, and says nothing of the key's strength:
an unquoted `.env` line or a shell assignment is the commonest shape in a transcript."""

from __future__ import annotations

import math
import re
from collections import Counter

from sessionvault.core.secret_commands import COMMANDS
from sessionvault.core.secret_patterns import CMD_END, QUOTED, VALUE, is_placeholder, marker

_WORD = (
    r"(?:pass(?:wd|word|wort|phrase)?|pwd|secret|token|key|credentials?|auth|cookie|session(?:id)?"
    r"|sid|dsn|sig(?:nature)?)"
)

# kind -> pattern. A pattern's `key` group (when it has one) is judged for strength; without
# one the context itself names a secret (strong).
CONTEXT: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("cookie", re.compile(r"(?i)(?<![\w-])cookie\s*:\s*(?P<bare>[^\s=;\"']+=[^\n\"'\\]+)")),
    ("cookie", re.compile(r"(?i)(?<![\w-])set-cookie\s*:\s*[^=\s;]+=(?P<bare>[^;\s\"'\\]+)")),
    ("cookie", re.compile(r"(?<![\w-])(?:-b|--cookie)\s+[\"']?(?P<bare>[^\s=;\"']+=[^\s\"']+)")),
    ("cookie", re.compile(r"(?m)^\S+\t(?:TRUE|FALSE)\t\S+\t(?:TRUE|FALSE)\t\d+\t\S+\t(?P<bare>\S+)$")),
    (
        # KEY=value, key: value, "key": "value", key => value, key := value, $env:KEY = value
        "secret_assignment",
        re.compile(
            rf"(?i)(?<![\w.-])(?P<key>[\w.-]{{0,60}}?{_WORD}(?:[_.-](?:base|value|val|data|string|str))?)"
            r"(?:\\?[\"'])?\]?"
            rf"[ \t]{{0,3}}(?P<op>:=|=>|=(?!=\s)|:)[ \t]{{0,40}}{VALUE}"
        ),
    ),
    (
        # --password x, --token=x, -storepass x (not --no-password, --password-stdin)
        "secret_flag",
        re.compile(
            r"(?<![\w-])--?(?!no-)(?P<key>(?:[a-z][a-z0-9_-]{0,40}?)?(?:pass(?:wd|word|phrase)?|pwd|token|secret"
            rf"|api-?key|access-key|secret-key|private-key|auth-key|credentials?))(?:=|[ \t]+){VALUE}"
        ),
    ),
    (
        "url_password",
        re.compile(
            rf"(?<![\w-])(?:curl|wget|http|https|xh){CMD_END}"
            rf"\s(?:-u|--user|--proxy-user)\s*[\"']?[^\s:\"']+:{VALUE}"
        ),
    ),
    (
        "secret_flag",
        re.compile(
            rf"(?<![\w-])(?:mysql\w*|mariadb[\w-]*){CMD_END}\s-p(?:{QUOTED}|(?P<bare>[^\s\"'|;&-][^\s\"'|;&]*))"
        ),
    ),
    ("secret_flag", re.compile(rf"(?<![\w-])sqlcmd{CMD_END}\s-P\s*{VALUE}")),
    (
        "secret_flag",
        re.compile(
            r"(?<![\w-])(?:(?:docker|podman|buildah|skopeo|nerdctl|helm|oras|az|oc|cf)\s(?:\S+\s+){0,3}?login"
            rf"|twine\s+upload)\b{CMD_END}\s-p\s+{VALUE}"
        ),
    ),
    (
        "secret_flag",
        re.compile(
            rf"(?<![\w-])(?:sshpass\s+-p\s*|redis-cli{CMD_END}\s-a\s+|mongo\w*{CMD_END}\s-p\s+){VALUE}"
        ),
    ),
    ("secret_flag", re.compile(rf"(?<![\w-])-pass(?:in|out)\s+pass:{VALUE}")),
    ("secret_flag", re.compile(rf"(?<![\w-])htpasswd\s+(?=[^\n]*-\w*b)(?:-\w+\s+)+\S+\s+\S+\s+{VALUE}")),
    ("secret_flag", re.compile(rf"(?<![\w-])aws\s+configure\s+set\s+(?P<key>[\w.]+)\s+{VALUE}")),
    ("secret_assignment", re.compile(rf"(?i)\bdefine\(\s*[\"'](?P<key>\w+)[\"']\s*,\s*{VALUE}")),  # PHP
    # "the db password is ...": prose, so the value must look like a password (`_prose`)
    (
        "secret_prose",
        re.compile(
            r"(?i)\b(?P<key>password|passphrase|passwd|pwd|api key|token|secret)"
            rf"\s+(?:is|was)\s*:?\s+{VALUE}"
        ),
    ),
    (
        "secret_word",
        re.compile(
            r"(?i)\b(?P<key>token|api[ _-]?key|secret|password|passphrase)"
            r"\s+(?P<bare>[^\s\"'`,;<>|\\]{8,500})"
        ),
    ),
    # .netrc's "password <value>" (on the machine line or on a line of its own), .pgpass
    (
        "secret_assignment",
        re.compile(rf"(?im)(?:\bmachine\s{CMD_END}|^[ \t]*)\b(?:password|passwd)[ \t]+{VALUE}[ \t]*$"),
    ),
    ("secret_assignment", re.compile(r"(?m)^[^:\s#]+:(?:\d+|\*):[^:\s]+:[^:\s]+:(?P<bare>(?:\\:|[^:\s])+)$")),
    ("secret_assignment", re.compile(rf"(?m)^\s*ENV\s+(?P<key>\w+)[ \t]+{VALUE}")),  # Dockerfile
    ("secret_assignment", re.compile(rf"(?i)<(?P<key>[\w:.-]{{0,40}}?{_WORD})>(?P<bare>[^<\n]{{1,4000}})</")),
    *COMMANDS,
)

_STRONG = ("password", "passwd", "passwort", "passphrase", "pwd", "secret", "token", "credential")
_STRONG_TOO = ("apikey", "pass")  # DB_PASS, -storepass
_NOT_PASS = frozenset({"bypass", "compass", "surpass", "overpass", "underpass", "multipass", "firstpass"})
_EXACT_STRONG = frozenset({"_auth", "credentials"})
_KEY_OF = re.compile(  # <this>_key names a key that is a secret
    r"api|access|secret|private|signing|encryption|master|account|license|service|app|auth|client"
    r"|consumer|deploy|admin|webhook|sas|shared|storage|subscription|integration|personal|jwt|hmac"
    r"|session|cookie|crypt"
)
_WEAK = frozenset({"auth", "cookie", "session", "sessionid", "sid", "dsn", "sig", "signature"})
_SUFFIXES = frozenset({"base", "value", "val", "str", "string", "data"})  # SECRET_KEY_BASE
_TRIVIAL = re.compile(  # values that are words of a language, a type or a stand-in, not secrets
    r"(?i)true|false|null|none|nil|undefined|yes|no|on|off|required|optional|enabled|disabled"
    r"|string|str|int|bool|boolean|bytes|number|object|any|text|secretstr|secretbytes|password"
    r"|passwd|secret|token|key|apikey|api_key|redacted|hidden|masked|empty|unset|changeme|todo"
    r"|tbd|default|value|env|environ|getenv|prompt|stdin|input|inherit|bearer|basic|hunter2|await"
    r"|new|this|self|function|lambda|async|yield|require|import|static|final|const|let|var|readonly"
)
_FAKE = re.compile(
    r"(?i)example|dummy|fake|placeholder|change[_-]?me|replace[_-]?me|your[_-]|xxxx|redacted|sample"
    r"|mock[_-]|insert[_-]|[_-]here\b|<|>|^test[_-]|[_-]tests?$|^[\w-]{0,8}(?:\.\.\.|…)$"
)
_TEMPLATE = re.compile(
    r"^(?:\$\{\{|\{\{|\$\(|%\(|#\{|<%|@\{|![A-Za-z]+$|ENC\[|\$env:|(?:op|vault|arn|ssm|env|file|secret)s?:)"
)
_CALL = re.compile(r"^[\w.$]*[(\[]")  # getpass(), os.environ["X"], (sensitive value)
_DOTTED = re.compile(r"^[A-Za-z_$][A-Za-z_$]*(?:\.[A-Za-z_$][A-Za-z_$]*)+$")  # settings.api_key
_CODE_NAME = re.compile(r"^(?:[a-z]+(?:_[a-z]+)+|[a-z]+(?:[A-Z][a-z]+)+|[A-Z][a-z]+(?:[A-Z][a-z]+)+)$")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z_]*$")
_TOKEN_LIKE = re.compile(r"^[A-Za-z0-9+/=_.~-]{12,}$")
_PATH = re.compile(r"^(?:~?/|\.\.?/|[A-Za-z]:\\)|^[\w.-]+/[\w./-]*\.\w{1,5}$")
_HEX = re.compile(r"^[0-9a-fA-F]+$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$")
_VALUE_END = re.compile(r"[ \t]*(?:$|[\n,}\]\"'#])")  # a `key: value` that is not prose
_CLOSERS = {")": "(", "]": "[", "}": "{"}
_REPEATED_MIN = 8


def looks_fake(value: str) -> bool:
    """A stand-in that only looks like a secret: a placeholder, a template, a fixture's fake."""
    value = value.strip()
    return (
        len(value) < 4
        or bool(_TRIVIAL.fullmatch(value))
        or is_placeholder(value)
        or bool(_TEMPLATE.match(value) or _FAKE.search(value))
    )


def apply_context(text: str, kinds: list[str]) -> str:
    found: dict[str, str] = {}  # value -> marker, to replace its other copies too
    for kind, pattern in CONTEXT:
        text = _apply(text, kind, pattern, kinds, found)
    for value, mark in found.items():
        if len(value) >= _REPEATED_MIN:
            text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(value)}(?![A-Za-z0-9])", mark, text)
    return text


def _apply(text: str, kind: str, pattern: re.Pattern[str], kinds: list[str], found: dict[str, str]) -> str:
    """Each match judged; one that is not a secret is passed over only up to its key or its
    first character, so that `credentials: secret_key_base: <key>` still finds the second key."""
    pos, out = 0, []
    while (match := pattern.search(text, pos)) is not None:
        replaced = _replace(match, kind, kinds, found)
        if replaced is None:
            skip = (
                match.end("key") if "key" in match.groupdict() and match.group("key") else match.start() + 1
            )
            out.append(text[pos:skip])
            pos = skip
            continue
        out.append(text[pos : match.start()] + replaced)
        pos = match.end()
    return "".join(out) + text[pos:]


def _replace(match: re.Match[str], kind: str, kinds: list[str], found: dict[str, str]) -> str | None:
    groups = match.groupdict()
    quoted = groups.get("quoted") is not None
    group = "quoted" if quoted else "bare"
    start, end = match.span(group)
    if start < 0:
        return None
    if not quoted:
        end = start + len(_trimmed(match, match.string[start:end], kind))
    value = match.string[start:end]
    key = groups.get("key")
    strength = _strength(key) if key else 3
    if not value or not strength or not _is_secret(kind, match, value, quoted, strength):
        return None
    kinds.append(kind)
    found[value] = marker(kind)
    offset = match.start()
    whole = match.group(0)
    return whole[: start - offset] + marker(kind) + whole[end - offset :]


def _trimmed(match: re.Match[str], value: str, kind: str) -> str:
    """A bare value without what follows it but is not part of it: closing brackets it did not
    open (`connect(password=x)`), a query's next parameter (`?token=x&page=2`), a full stop."""
    if "key" in match.groupdict() and match.start("key") > 0 and match.string[match.start("key") - 1] in "?&":
        value = value.split("&", 1)[0]  # a `#` typed in a password is part of it: gone too
    while value and value[-1] in _CLOSERS and value.count(value[-1]) > value.count(_CLOSERS[value[-1]]):
        value = value[:-1]
    return value.rstrip(".") if kind in ("secret_prose", "secret_login") else value


def _strength(key: str) -> int:
    """3 strong, 2 medium, 1 weak, 0 not a secret's name (`password_hash`, `TOKEN_TTL`)."""
    words = [w.lower() for w in re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])|_auth", key)]
    while len(words) > 1 and words[-1] in _SUFFIXES:
        words.pop()
    last = words[-1] if words else ""
    if last in _EXACT_STRONG or "secret" in last:
        return 3
    if any(last.endswith(s) for s in _STRONG + _STRONG_TOO) and last not in _NOT_PASS:
        return 3
    if last in ("key", "keys") and len(words) > 1 and _KEY_OF.fullmatch(words[-2]):
        return 3
    if last.endswith("key"):
        return 2
    return 1 if last in _WEAK else 0


def _is_secret(kind: str, match: re.Match[str], value: str, quoted: bool, strength: int) -> bool:
    value = value.strip()
    if looks_fake(value) or set(value) <= set("*x•."):
        return False
    if kind in ("secret_prose", "secret_login"):  # "the password is ...": what no word looks like
        return any(not c.isalpha() for c in value) and len(value) >= 6 and "://" not in value
    if kind == "secret_word" and match.group("key").lower().startswith("pass"):
        return _password_like(value)  # "# passphrase Orbit7023*velvet"
    if kind == "secret_word":  # "invalid token <value>": only what is random, and not a digest
        return (
            _random(value)
            and any(c.isdigit() for c in value)
            and bool(_TOKEN_LIKE.match(value))
            and not _HEX.match(value)
        )
    if kind == "cookie":
        pairs = [p.partition("=")[2].strip() for p in value.split(";")]
        return any(len(v) >= 12 or (len(v) >= 8 and any(c.isdigit() for c in v)) for v in pairs)
    if kind == "secret_flag" and value.startswith("-"):
        return False  # the next flag: --password was given none
    keyed = "key" in match.groupdict() and kind != "secret_flag"
    if keyed and not quoted and _is_code(match, value):
        return False
    op = match.groupdict().get("op")
    if op == ":" and not quoted:
        if not match.string[match.end("op") : match.end("op") + 1].isspace():
            return False  # "arn:aws:secretsmanager:...:secret:prod/db", "urn:token:x": a name
        if not _VALUE_END.match(match.string, match.start("bare") + len(value)) and not _random(value):
            return False  # "password: the one in the team vault" is prose
    if strength == 3:
        return not (_PATH.match(value) and not _random(value))
    if strength == 2:
        mixed = any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
        return mixed and bool(_TOKEN_LIKE.match(value)) and not _PATH.match(value) and not _UUID.match(value)
    return _random(value) and not _UUID.match(value)


def _is_code(match: re.Match[str], value: str) -> bool:
    """An unquoted value that is code, not a literal: a call, an attribute, an identifier."""
    if _CALL.match(value) or _DOTTED.match(value) or _CODE_NAME.match(value):
        return True
    between = match.string[match.end("key") : match.start("bare")]
    return " " in between and "=" in between and bool(_IDENTIFIER.match(value))  # x = name


def _password_like(value: str) -> bool:
    """What a password is and no word or name: 10+ characters, digits and both cases."""
    cases = any(c.isupper() for c in value) and any(c.islower() for c in value)
    return len(value) >= 10 and cases and any(c.isdigit() for c in value) and "://" not in value


def _random(value: str) -> bool:
    """Long, of letters and digits (or both cases), and not of few characters: a key, not a word."""
    if len(value) < 16 or not any(c.isalpha() for c in value):
        return False
    if not any(c.isdigit() for c in value) and (value.islower() or value.isupper()):
        return False
    counts = Counter(value)
    entropy = -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())
    return entropy >= 3.0
