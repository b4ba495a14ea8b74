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

``docs/guide/record.md`` documents every field. :func:`validate` uses
``jsonschema`` when it is installed and a few structural checks otherwise, so
reading a map needs no extra package.
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
        "findings": {"type": "array", "items": {"type": "object", "required": ["code", "severity", "message", "path", "line"]}},
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
    try:
        import jsonschema
    except ImportError:
        for key in SCHEMA["required"]:
            if key not in data:
                raise MapError(f"capture map has no {key!r}") from None
        for key in ("captures", "functions", "kernels", "findings"):
            if not isinstance(data[key], list):
                raise MapError(f"capture map {key!r} must be a list") from None
        return
    try:
        jsonschema.validate(data, SCHEMA)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top)"
        raise MapError(f"invalid capture map at {where}: {exc.message}") from None
