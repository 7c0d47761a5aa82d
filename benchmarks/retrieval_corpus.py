"""The retrieval benchmark's corpus and judged queries (issue 36, item 5), built from public
material every install ships: the docstrings, names and module paths of CPython's standard
library and of the packages SessionVault itself depends on (psycopg, cryptography, pydantic,
starlette, anyio). Nothing is invented but the sentence around a name.

A session is what someone might hand off after working on one function: named after it, its
summary "Looked at <module>.<name> in <path>." followed by the docstring's body (the first
sentence left out), the module's path among its files, the exception names the docstring
mentions among its errors. Two halves of judged queries, one answer each:

- exact: a name, a dotted name or a sentence naming it, for a function whose name no other
  session holds (kept whole by the terms rules, so the judged answer is the only one);
- meaning: the docstring's first sentence (which the session does not contain), with the
  function's own name and its parts taken out: found only by what it says.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from sessionvault.core.terms import terms

MODULES = (
    "argparse", "asyncio.streams", "asyncio.tasks", "base64", "bisect", "calendar", "configparser", "csv",
    "difflib", "email.utils", "fnmatch", "ftplib", "glob", "gzip", "heapq", "hmac", "html", "http.client",
    "http.cookies", "imaplib", "inspect", "ipaddress", "json", "logging", "mailbox", "mimetypes", "ntpath",
    "os", "pathlib", "pickle", "platform", "posixpath", "shlex", "shutil", "smtplib", "socket", "ssl",
    "statistics", "string", "subprocess", "tarfile", "tempfile", "textwrap", "threading", "tokenize",
    "urllib.parse", "urllib.request", "uuid", "warnings", "zipfile",
    "psycopg.connection", "psycopg.cursor", "psycopg.sql", "psycopg.conninfo", "psycopg.pq",
    "cryptography.x509.base", "cryptography.fernet", "pydantic.main", "pydantic.fields",
    "starlette.requests", "starlette.responses", "starlette.routing", "anyio.to_thread",
    "anyio.streams.memory",
)  # fmt: skip
_SENTENCE = re.compile(r"(.+?[.!?])(\s|$)", re.S)
_ERROR = re.compile(r"\b[A-Z]\w*(?:Error|Exception|Warning)\b")


@dataclass(frozen=True)
class Item:
    module: str
    qualname: str
    path: str
    first: str  # the docstring's first sentence
    body: str  # the rest


@dataclass(frozen=True)
class Query:
    text: str
    answer: str  # the judged session's name
    kind: str  # "exact" or "meaning"


def _items(module_name: str) -> list[Item]:
    module = importlib.import_module(module_name)
    file = inspect.getsourcefile(module) or ""
    path = "/".join([*module_name.split(".")[:-1], file.rsplit("/", 1)[-1]])
    found: list[Item] = []
    for name, obj in sorted(vars(module).items()):
        if name.startswith("_") or not (inspect.isfunction(obj) or inspect.isclass(obj)):
            continue
        if getattr(obj, "__module__", None) != module_name:
            continue
        members = [(name, obj)]
        if inspect.isclass(obj):
            methods = [(m, f) for m, f in sorted(vars(obj).items()) if inspect.isfunction(f)]
            members += [(f"{name}.{m}", f) for m, f in methods if not m.startswith("_")]
        for qualname, member in members:
            doc = " ".join((inspect.getdoc(member) or "").split())
            first = _SENTENCE.match(doc)
            if first is None:
                continue
            body = doc[first.end() :].strip()
            if len(first.group(1).split()) >= 5 and len(body) >= 60:
                found.append(Item(module_name, qualname, path, first.group(1), body[:600]))
    return found


def session_of(item: Item) -> dict[str, Any]:
    errors = sorted(set(_ERROR.findall(item.body)))[:4]
    return {
        "name": f"{item.module}.{item.qualname}".replace(".", "-").lower()[:120],
        "repo": _PACKAGES.get(item.module.split(".")[0], "github.com/python/cpython"),
        "summary": f"Looked at {item.module}.{item.qualname} in {item.path}. {item.body}",
        "files": [item.path],
        "errors": errors,
    }


_PACKAGES = {
    "psycopg": "github.com/psycopg/psycopg",
    "cryptography": "github.com/pyca/cryptography",
    "pydantic": "github.com/pydantic/pydantic",
    "starlette": "github.com/encode/starlette",
    "anyio": "github.com/agronholm/anyio",
}


def build(sessions: int = 560, per_half: int = 90) -> tuple[list[dict[str, Any]], list[Query]]:
    """`sessions` sessions, spread over the modules in turn, and `per_half` queries of each kind."""
    by_module = [_items(m) for m in MODULES]
    picked: list[Item] = []
    while len(picked) < sessions and any(by_module):
        for items in by_module:
            if items and len(picked) < sessions:
                picked.append(items.pop(0))
    records = [session_of(i) for i in picked]
    holding = Counter(t for r in records for t in set(terms(_text(r))))
    exact: list[Query] = []
    meaning: list[Query] = []
    forms = ("{n}", "where did we change {n}", "{d} raised an error again")
    for i, (item, record) in enumerate(zip(picked, records, strict=True)):
        short = item.qualname.rsplit(".", 1)[-1]
        identifier = "_" in short.strip("_") or re.search(r"[a-z][A-Z]", short) is not None or len(short) >= 8
        if identifier and holding[short.lower()] == 1 and len(exact) < per_half:
            text = forms[i % 3].format(n=short, d=f"{item.module}.{item.qualname}")
            exact.append(Query(text, record["name"], "exact"))
        elif len(meaning) < per_half:
            words = [w for w in item.first.split() if w.strip("`'\"().,:").lower() != short.lower()]
            if len(words) >= 5:
                meaning.append(Query(" ".join(words), record["name"], "meaning"))
    return records, exact + meaning


def _text(record: dict[str, Any]) -> str:
    return "\n".join([record["name"], record["repo"], record["summary"], *record["errors"], *record["files"]])
