"""The versions page's handler (GET /web/versions?name=&a=&b=&workspace=): the versions a
session keeps (in the personal space or the workspace named), read as the export reads them,
and the diff from version a to version b (by default the last two); a version the session does
not keep is refused, naming the ones it does."""

from __future__ import annotations

from typing import Any

from starlette.types import Send

from sessionvault.errors import NotFound, ValidationFailed
from sessionvault.server.web import params
from sessionvault.server.web import sections as diff
from sessionvault.server.web.call import Call, run
from sessionvault.server.web.gate import Gate
from sessionvault.server.web.pages import versions
from sessionvault.server.web.responses import send_page
from sessionvault.service import workspace_view


async def versions_page(gate: Gate, call: Call, send: Send) -> None:
    signed = await gate.required(call, send, "sessions")
    if signed is None:
        return
    name, workspace = params.session_name(call.query), call.query.get("workspace", "")
    line = await run(lambda: workspace_view.session_versions(gate.rt.vault, signed.who, name, workspace))
    entries: list[dict[str, Any]] = line["versions"]
    if not entries:
        raise NotFound(f"no session named {name!r}")
    numbers = [int(v["version"]) for v in entries]
    b = params.number(call.query, "b", numbers[-1])
    a = params.number(call.query, "a", numbers[-2] if len(numbers) > 1 else numbers[-1])
    if a not in numbers or b not in numbers:
        kept = ", ".join(map(str, numbers))
        raise ValidationFailed(f"session {name!r} keeps versions {kept} only")
    by_number = {int(v["version"]): v["record"] for v in entries}
    diffs = diff.compare(by_number[a], by_number[b])
    page = versions.versions(signed.chrome, name, entries, a, b, diffs, workspace=workspace)
    await send_page(send, page)
