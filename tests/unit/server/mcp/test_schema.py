"""Tool input schemas: the pydantic models' JSON schema with $refs inlined and titles dropped,
so that clients get a smaller schema and providers that reject $defs accept it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jsonschema  # a dependency of the mcp SDK
import pytest
from pydantic import BaseModel

from sessionvault.core.records import DeleteArgs, ListArgs, LoadArgs, SaveArgs, SearchArgs, Strict
from sessionvault.server.mcp.schema import compact_schema

MODELS = [SaveArgs, LoadArgs, SearchArgs, ListArgs, DeleteArgs]
IDS = [m.__name__ for m in MODELS]


def keys(node: Any) -> Iterator[str]:
    """Every key of every object anywhere in the schema."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from keys(value)
    elif isinstance(node, list):
        for value in node:
            yield from keys(value)


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_there_are_no_defs_refs_or_titles_anywhere(model: type[Strict]) -> None:
    found = set(keys(compact_schema(model)))
    assert not found & {"$defs", "$ref", "title", "definitions"}


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_the_schema_is_a_closed_object_with_every_field_and_the_same_required_ones(
    model: type[Strict],
) -> None:
    schema = compact_schema(model)
    full = model.model_json_schema()
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False  # extra="forbid"
    assert list(schema["properties"]) == list(model.model_fields)
    assert schema.get("required", []) == full.get("required", [])


def test_save_session_requires_name_and_summary_only() -> None:
    assert compact_schema(SaveArgs)["required"] == ["name", "summary"]


@pytest.mark.parametrize(
    "model", [LoadArgs, SearchArgs, ListArgs], ids=["LoadArgs", "SearchArgs", "ListArgs"]
)
def test_models_with_defaults_only_list_no_required_fields(model: type[Strict]) -> None:
    assert compact_schema(model).get("required", []) == [
        f for f, i in model.model_fields.items() if i.is_required()
    ]


def test_a_nested_decision_is_inlined_with_its_own_required_fields() -> None:
    decisions = compact_schema(SaveArgs)["properties"]["decisions"]
    assert decisions["type"] == "array" and decisions["maxItems"] == 200
    assert decisions["items"] == {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "decision": {"type": "string", "minLength": 1, "maxLength": 4000},
            "reason": {"type": "string", "minLength": 1, "maxLength": 4000},
        },
        "required": ["decision", "reason"],
    }


def test_descriptions_defaults_caps_and_enums_are_kept() -> None:
    save = compact_schema(SaveArgs)["properties"]
    assert save["name"] == {
        "type": "string",
        "minLength": 1,
        "maxLength": 200,
        "description": "Session name; saving an existing name adds a version",
    }
    assert save["plan"]["items"] == {"type": "string", "maxLength": 4000}
    assert save["plan"]["default"] == []
    load = compact_schema(LoadArgs)["properties"]
    assert load["mode"]["enum"] == ["brief", "normal", "full"] and load["mode"]["default"] == "normal"
    search = compact_schema(SearchArgs)["properties"]
    assert (search["max_results"]["minimum"], search["max_results"]["maximum"]) == (1, 20)


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_compacting_is_repeatable(model: type[Strict]) -> None:
    assert compact_schema(model) == compact_schema(model)
    assert "$defs" in SaveArgs.model_json_schema()  # the model's own schema is left alone


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_the_compact_schema_is_a_valid_json_schema(model: type[Strict]) -> None:
    jsonschema.Draft202012Validator.check_schema(compact_schema(model))


GOOD = {
    "name": "auth-jwt",
    "summary": "JWT done",
    "decisions": [{"decision": "use RS256", "reason": "key rotation"}],
    "todos": ["refresh tokens"],
}


@pytest.mark.parametrize(
    "args",
    [
        {**GOOD, "decisions": [{"decision": "use RS256"}]},
        {**GOOD, "decisions": [{"decision": "x", "reason": "y", "extra": 1}]},
        {**GOOD, "decisions": [{"decision": "", "reason": "y"}]},
        {**GOOD, "unknown": 1},
        {"name": "auth-jwt"},
        {**GOOD, "todos": ["x" * 4001]},
    ],
    ids=[
        "decision-without-reason",
        "extra-decision-field",
        "empty-decision",
        "extra-field",
        "no-summary",
        "long-todo",
    ],
)
def test_a_client_validating_against_the_schema_refuses_what_the_model_refuses(args: dict[str, Any]) -> None:
    validator = jsonschema.Draft202012Validator(compact_schema(SaveArgs))
    validator.validate(GOOD)
    assert not validator.is_valid(args)


class Article(BaseModel):
    title: str
    body: str = ""


def test_a_field_named_title_is_kept() -> None:
    schema = compact_schema(Article)
    assert list(schema["properties"]) == ["title", "body"]
    assert schema["required"] == ["title"]
