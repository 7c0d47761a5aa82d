"""How the parties of a handoff read to people (issue 37: teams saw keys where they wanted
people). Pure: the tools' answers, the web view and the readable text all say it so."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def claimer(offered: Mapping[str, Any]) -> str:
    """Who took an accepted offer: the person and their client in a workspace ("bob (codex)"),
    else the client's name."""
    person, client = offered.get("accepted_person") or "", offered.get("accepted_by") or ""
    if person:
        return f"{person} ({client})" if client else person
    return client or "an unnamed client"
