import pytest

from sessionvault.core import records
from sessionvault.errors import ValidationFailed

BASE = {"name": "auth-jwt", "summary": "JWT done"}


def error_for(model, args) -> str:
    with pytest.raises(ValidationFailed) as exc:
        records.parse(model, args)
    assert exc.value.error_class == "validation"
    return str(exc.value)


def test_a_minimal_session_is_valid():
    args = records.parse(records.SaveArgs, BASE)
    assert args.plan == [] and args.repo == ""


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("name", "n" * 201),
        ("summary", "s" * 4001),
        ("repo", "r" * 301),
    ],
)
def test_string_caps_name_the_field(field, value):
    message = error_for(records.SaveArgs, {**BASE, field: value})
    assert message.startswith(f"invalid arguments: {field}:")
    assert "at most" in message
    assert value not in message  # the caller's value is never echoed


@pytest.mark.parametrize("field", ["plan", "todos", "files", "errors", "tried"])
def test_list_caps_and_item_caps(field):
    assert f"{field}:" in error_for(records.SaveArgs, {**BASE, field: ["x"] * 201})
    assert f"{field}.0:" in error_for(records.SaveArgs, {**BASE, field: ["x" * 4001]})
    assert (
        len(records.parse(records.SaveArgs, {**BASE, field: ["x" * 4000] * 200}).model_dump()[field]) == 200
    )


def test_decisions_need_a_reason_and_are_capped():
    assert "decisions.0.reason" in error_for(records.SaveArgs, {**BASE, "decisions": [{"decision": "a"}]})
    many = [{"decision": "a", "reason": "b"}] * 201
    assert "decisions:" in error_for(records.SaveArgs, {**BASE, "decisions": many})


@pytest.mark.parametrize("field", ["name", "summary", "repo"])
def test_nul_is_refused_with_a_clear_message(field):
    message = error_for(records.SaveArgs, {**BASE, field: "a\x00b"})
    assert f"{field}:" in message and "NUL" in message


def test_nul_inside_a_list_item_and_in_load_and_search():
    assert "plan.1:" in error_for(records.SaveArgs, {**BASE, "plan": ["ok", "bad\x00"]})
    assert "name:" in error_for(records.LoadArgs, {"name": "x\x00"})
    assert "query:" in error_for(records.SearchArgs, {"query": "x\x00"})


@pytest.mark.parametrize(
    ("model", "args", "field"),
    [
        (records.SaveArgs, {**BASE, "plan": "not a list"}, "plan"),
        (records.SaveArgs, {**BASE, "summary": 42}, "summary"),
        (records.LoadArgs, {"version": "3"}, "version"),
        (records.SearchArgs, {"query": "q", "max_results": 21}, "max_results"),
        (records.SearchArgs, {"query": "q", "max_results": 0}, "max_results"),
        (records.LoadArgs, {"mode": "everything"}, "mode"),
        (records.SaveArgs, {**BASE, "user_id": "someone-else"}, "user_id"),
    ],
)
def test_wrong_types_ranges_and_unknown_fields(model, args, field):
    assert f"{field}:" in error_for(model, args)


def test_required_fields():
    assert "summary:" in error_for(records.SaveArgs, {"name": "x"})
    assert "summary:" in error_for(records.SaveArgs, {"name": "x", "summary": ""})
    assert "name:" in error_for(records.SaveArgs, {"name": "", "summary": "s"})


def test_preview_is_the_first_120_characters():
    assert records.preview("a" * 500) == "a" * 120


@pytest.mark.parametrize("at", [110, 115, 119])
def test_a_preview_never_ends_inside_a_redaction_marker(at):
    summary = "x" * (at - 1) + " [REDACTED:github_token] then the rest"
    assert records.preview(summary) == "x" * (at - 1)
    whole = "y" * 90 + " [REDACTED:aws_key] z" + "w" * 50  # a marker that fits stays whole
    assert "[REDACTED:aws_key]" in records.preview(whole)
    assert records.preview("a [bracket that is not a marker" + "b" * 100).startswith("a [bracket")
