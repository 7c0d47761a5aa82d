"""The scripted run every client's fixture recorder has the client do (tests/fixtures/transcripts/
<client>-<version>/record.py): two turns in /home/user/widget, a todo list, a failing command.
The reader tests check what they read against it."""

from __future__ import annotations

from pathlib import Path

CWD = Path("/home/user/widget")
PROMPTS = [
    "Plan the widget work, write notes/plan.md, then check the widget config.",
    "Note the missing config in the plan and tell me where we stand.",
]
TODOS = {
    "Draft the widget plan": "completed",
    "Check the widget config": "in_progress",
    "Ship the widget": "pending",
}
COMMAND = "python3 -c \"raise SystemExit('sv-boom: widget config missing')\""
FAILURE = f"{COMMAND}: sv-boom: widget config missing"
