"""A package index on this machine holding exactly the given distribution files: PEP 503's
simple API (`/simple/<name>/` listing each file with its sha256), written into a folder and
served by the standard library's HTTP server on 127.0.0.1. What a release test installs by name
from, so that `sessionvault-mcp[local]` is resolved the way it will be from PyPI (the model's
package by name too), not from a file path. Requests are recorded: a test can show that both
names came from here."""

from __future__ import annotations

import hashlib
import html
import re
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def project_of(filename: str) -> str:
    """The normalized project name of a wheel or sdist file name (PEP 503, PEP 427)."""
    stem = filename.removesuffix(".tar.gz").removesuffix(".whl")
    name = stem.split("-")[0]
    return re.sub(r"[-_.]+", "-", name).lower()


def write_index(files: list[Path], root: Path) -> None:
    """`root/simple/<project>/index.html` for each project, the files beside it."""
    projects: dict[str, list[Path]] = {}
    for file in files:
        projects.setdefault(project_of(file.name), []).append(file)
    links = []
    for project, found in sorted(projects.items()):
        folder = root / "simple" / project
        folder.mkdir(parents=True)
        rows = []
        for file in found:
            shutil.copy(file, folder / file.name)
            digest = hashlib.sha256(file.read_bytes()).hexdigest()
            rows.append(
                f'<a href="{html.escape(file.name)}#sha256={digest}">{html.escape(file.name)}</a><br>'
            )
        (folder / "index.html").write_text(
            "<!DOCTYPE html><html><body>\n" + "\n".join(rows) + "\n</body></html>\n"
        )
        links.append(f'<a href="{project}/">{project}</a><br>')
    (root / "simple" / "index.html").write_text(
        "<!DOCTYPE html><html><body>\n" + "\n".join(links) + "\n</body></html>\n"
    )


@contextmanager
def serving(files: list[Path], root: Path) -> Iterator[tuple[str, list[str]]]:
    """(the index URL, the paths asked for so far) while the index is served."""
    write_index(files, root)
    asked: list[str] = []

    class Handler(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            asked.append(self.path)

    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple/", asked
    finally:
        server.shutdown()
        server.server_close()
