"""Tool input schemas from the pydantic models, compacted for clients and providers."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


def compact_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema with $refs inlined and titles dropped: smaller, and no $defs for
    providers that reject them."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return walk(defs[node["$ref"].rsplit("/", 1)[-1]])
            return {k: fields(v) if k == "properties" else walk(v) for k, v in node.items() if k != "title"}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    def fields(properties: dict[str, Any]) -> dict[str, Any]:
        # Property names are data, not keywords: a field named "title" stays.
        return {name: walk(spec) for name, spec in properties.items()}

    compacted: dict[str, Any] = walk(schema)
    return compacted
