"""A small JSON Schema checker: the subset the board files' schema (boards/board.schema.json) uses.

Keywords: type (one or a list), enum, const, required, properties, additionalProperties (false),
items, minItems, minimum, exclusiveMinimum, maximum, pattern (on strings), allOf, if/then, and $ref to
``#/definitions/NAME`` of the same schema. Annotations (description,
default, title, $schema) are read by people and ignored here. ``problems(value, schema)`` lists
what is wrong, each naming the field by its path (``uart.driver``, ``regions[1].size``).
"""
from __future__ import annotations

import re
from typing import Any

_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "number": (int, float), "integer": int}


def _is(value: Any, kind: str) -> bool:
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, _TYPES[kind])


def _show(value: Any) -> str:
    return repr(value) if not isinstance(value, (dict, list)) else type(value).__name__


def problems(value: Any, schema: dict, path: str = "", root: dict | None = None) -> list[str]:
    """What is wrong with ``value`` against ``schema``: one sentence fragment each, the first most telling."""
    root = schema if root is None else root
    if "$ref" in schema:
        schema = {**root["definitions"][schema["$ref"].rsplit("/", 1)[-1]],
                  **{k: v for k, v in schema.items() if k != "$ref"}}
    where = f"field '{path}'" if path else "the file"
    out: list[str] = []
    kinds = schema.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else list(kinds)
        if not any(_is(value, k) for k in kinds):
            return [f"{where} should be {' or '.join(('an ' if k[0] in 'aeiou' else 'a ') + k for k in kinds)}, "
                    f"not {_show(value)}"]
    if "const" in schema and value != schema["const"]:
        out.append(f"{where} should be {schema['const']!r}, not {_show(value)}")
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{where} should be one of {', '.join(map(str, schema['enum']))}, not {_show(value)}")
    if isinstance(value, str) and "pattern" in schema and not re.fullmatch(schema["pattern"], value):
        out.append(f"{where} is {value!r}, which is not a number (write 123 or 0x7B)")
    if _is(value, "number"):
        if "minimum" in schema and value < schema["minimum"]:
            out.append(f"{where} is {value}, below its least {schema['minimum']}")
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            out.append(f"{where} is {value}, not above {schema['exclusiveMinimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            out.append(f"{where} is {value}, above its most {schema['maximum']}")
    if isinstance(value, dict):
        for key in schema.get("required", ()):
            if key not in value:
                out.append(f"{where} lacks the required field '{_join(path, key)}'")
        props = schema.get("properties", {})
        for key, item in value.items():
            if key in props:
                out += problems(item, props[key], _join(path, key), root)
            elif schema.get("additionalProperties") is False:
                known = ", ".join(sorted(props))
                out.append(f"{where} has a field '{_join(path, key)}' that mcudeploy does not know (known: {known})")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            out.append(f"{where} needs at least {schema['minItems']} item(s)")
        if "items" in schema:
            for i, item in enumerate(value):
                out += problems(item, schema["items"], f"{path}[{i}]", root)
    for part in schema.get("allOf", ()):
        if "if" in part and not problems(value, part["if"], path, root):
            out += problems(value, part.get("then", {}), path, root)
        elif "if" not in part:
            out += problems(value, part, path, root)
    return out


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
