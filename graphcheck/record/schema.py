"""The capture map's JSON schema (version 1) and its validation.

A capture map is one JSON object::

    {"schema": "graphcheck-capture-map", "version": 1,
     "root": "...",            # paths below are relative to it (a relative root: to the map's folder)
     "command": [...], "created": "2026-12-01T03:00:00Z",
     "environment": {"python": ..., "torch": ..., "triton": ..., "device": ...},
     "captures": [{"id", "status", "site", "mode", "stream", "seconds", "functions",
                   "launches", "ops", "syncs", "graph", "graph_error", "failure", "notes"}],
     "functions": [{"path", "qualname", "first_line", "lines", "captures", "site"}],
     "kernels": [{"name", "launches", "captures", "call_sites"}],
     "findings": [<graphcheck finding objects>]}

``docs/guide/record.md`` documents every field. :func:`validate` checks a map
against :data:`SCHEMA` with a small checker of its own, so reading a map needs
no extra package (the tests also check the schema with ``jsonschema``).
"""

from __future__ import annotations

from typing import Any

SCHEMA_NAME = "graphcheck-capture-map"
SCHEMA_VERSION = 1

_LOCATION = {"type": ["object", "null"], "properties": {
    "path": {"type": "string"}, "line": {"type": "integer"}, "function": {"type": ["string", "null"]}}}

_LAUNCH = {"type": "object", "required": ["kernel", "grid", "scalars", "constexprs", "path", "line"], "properties": {
    "kernel": {"type": "string"}, "grid": {"type": "array"}, "scalars": {"type": "object"},
    "constexprs": {"type": "object"}, "stream": {"type": ["integer", "null"]},
    "capturing": {"type": ["boolean", "null"]}, "path": {"type": "string"}, "line": {"type": "integer"},
    "function": {"type": ["string", "null"]},
    "tensors": {"type": "object", "additionalProperties": {"type": "object", "properties": {
        "shape": {"type": "array", "items": {"type": "integer"}},
        "stride": {"type": "array", "items": {"type": "integer"}}, "dtype": {"type": "string"}}}},
    "stack": {"type": "array", "items": _LOCATION}}}

_CAPTURE = {"type": "object", "required": ["id", "status", "functions", "launches"], "properties": {
    "id": {"type": "integer"}, "status": {"enum": ["ok", "failed", "capturing"]}, "site": _LOCATION,
    "mode": {"type": ["string", "null"]}, "stream": {"type": ["integer", "null"]}, "seconds": {"type": "number"},
    "functions": {"type": "array", "items": {"type": "integer"}},
    "launches": {"type": "array", "items": _LAUNCH},
    "ops": {"type": "object", "additionalProperties": {"type": "integer"}},
    "syncs": {"type": "array"},
    "graph": {"type": ["object", "null"], "properties": {
        "node_count": {"type": "integer"}, "kinds": {"type": "object"}, "kernels": {"type": "array"}}},
    "graph_error": {"type": ["string", "null"]}, "failure": {"type": ["object", "null"]},
    "notes": {"type": "array", "items": {"type": "string"}}}}

_FUNCTION = {"type": "object", "required": ["path", "qualname", "first_line", "lines", "captures"], "properties": {
    "path": {"type": "string"}, "qualname": {"type": "string"}, "first_line": {"type": "integer"},
    "lines": {"type": "array", "items": {"type": "integer"}},
    "captures": {"type": "array", "items": {"type": "integer"}}, "site": {"type": "boolean"}}}

_KERNEL = {"type": "object", "required": ["name", "launches", "captures"], "properties": {
    "name": {"type": "string"}, "launches": {"type": "integer"},
    "captures": {"type": "array", "items": {"type": "integer"}},
    "call_sites": {"type": "array", "items": {"type": "string"}}}}

SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "graphcheck capture map",
    "type": "object",
    "required": ["schema", "version", "root", "captures", "functions", "kernels", "findings"],
    "properties": {
        "schema": {"const": SCHEMA_NAME},
        "version": {"const": SCHEMA_VERSION},
        "root": {"type": "string"},
        "command": {"type": "array", "items": {"type": "string"}},
        "created": {"type": "string"},
        "environment": {"type": "object"},
        "captures": {"type": "array", "items": _CAPTURE},
        "functions": {"type": "array", "items": _FUNCTION},
        "kernels": {"type": "array", "items": _KERNEL},
        "findings": {"type": "array",
                     "items": {"type": "object", "required": ["code", "severity", "message", "path", "line"]}},
    },
}


class MapError(ValueError):
    """The file is not a capture map this version of graphcheck can read."""


def validate(data: Any) -> None:
    """Raise :class:`MapError` when ``data`` is not a valid version-1 capture map."""
    if not isinstance(data, dict):
        raise MapError("a capture map is a JSON object")
    if data.get("schema") != SCHEMA_NAME:
        raise MapError(f"not a capture map (schema is {data.get('schema')!r}, expected {SCHEMA_NAME!r})")
    if data.get("version") != SCHEMA_VERSION:
        raise MapError(f"capture map version {data.get('version')!r} is not supported (this graphcheck reads "
                       f"version {SCHEMA_VERSION})")
    problem = _check(data, SCHEMA, ())
    if problem is not None:
        where, message = problem
        raise MapError(f"invalid capture map at {'/'.join(map(str, where)) or '(top)'}: {message}")


_TYPES: dict[str, Any] = {
    "object": dict, "array": list, "string": str, "boolean": bool, "null": type(None),
    "integer": int, "number": (int, float),
}


def _has_type(value: Any, name: str) -> bool:
    if name in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, _TYPES[name])


def _check(value: Any, schema: dict[str, Any], where: tuple) -> tuple[tuple, str] | None:
    """The first place where ``value`` breaks ``schema`` (the JSON Schema keywords SCHEMA uses:
    type, const, enum, required, properties, additionalProperties, items), or None. Written here so
    that reading a map needs no extra package and validates the same with or without jsonschema."""
    types = schema.get("type")
    if types is not None:
        names = [types] if isinstance(types, str) else types
        if not any(_has_type(value, n) for n in names):
            return where, f"{value!r} is not of type {' or '.join(names)}"
    if "const" in schema and value != schema["const"]:
        return where, f"{schema['const']!r} was expected"
    if "enum" in schema and value not in schema["enum"]:
        return where, f"{value!r} is not one of {schema['enum']!r}"
    if isinstance(value, dict):
        for key in schema.get("required", ()):
            if key not in value:
                return where, f"{key!r} is a required property"
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            sub = props.get(key, extra if isinstance(extra, dict) else None)
            if sub is not None and (found := _check(item, sub, (*where, key))) is not None:
                return found
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            if (found := _check(item, schema["items"], (*where, i))) is not None:
                return found
    return None
