"""Building, writing, reading and merging capture maps (schema in :mod:`graphcheck.record.schema`)."""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import re
import sys
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from graphcheck.findings import Finding
from graphcheck.record.schema import SCHEMA_NAME, SCHEMA_VERSION, MapError, validate


def _rel(path: str, root: str) -> str:
    """``path`` relative to ``root`` when inside it (with ``/``), else absolute."""
    if not path or path.startswith("<"):
        return path
    absolute = os.path.abspath(path)
    try:
        rel = os.path.relpath(absolute, root)
    except ValueError:  # another drive on Windows
        return absolute
    return absolute if rel.startswith("..") else rel.replace(os.sep, "/")


def _loc(loc: Any, root: str) -> dict[str, Any] | None:
    if loc is None:
        return None
    return {"path": _rel(loc.path, root), "line": int(loc.line), "function": loc.function}


def _jsonable(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def environment() -> dict[str, Any]:
    env: dict[str, Any] = {"python": sys.version.split()[0]}
    for name in ("torch", "triton"):
        module = sys.modules.get(name)
        if module is not None:
            env[name] = getattr(module, "__version__", None)
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_available():
            env["device"] = torch.cuda.get_device_name()
    except Exception:
        pass
    return env


def build(session: Any) -> dict[str, Any]:
    """The capture map of a :class:`graphcheck.record.session.Session` (every capture so far)."""
    root = session.root
    keys = sorted(session.functions, key=lambda k: (_rel(k[0], root), k[2], k[1]))
    index = {key: i for i, key in enumerate(keys)}
    functions = []
    for key in keys:
        fn = session.functions[key]
        functions.append({"path": _rel(key[0], root), "qualname": key[1], "first_line": key[2],
                          "lines": sorted(fn.lines), "captures": sorted(fn.captures), "site": fn.site})
    captures = []
    kernels: dict[str, dict[str, Any]] = {}
    for cap in session.captures:
        launches = []
        for launch in cap.launches:
            launches.append({
                "kernel": launch.kernel, "grid": _jsonable(launch.grid), "scalars": _jsonable(launch.scalars),
                "constexprs": _jsonable(launch.constexprs), "stream": getattr(launch, "stream", None),
                "capturing": getattr(launch, "capturing", None), "path": _rel(launch.path, root),
                "line": int(launch.line),
                "function": launch.function, "tensors": _jsonable(getattr(launch, "tensor_meta", {})),
                "stack": [_loc(s, root) for s in getattr(launch, "stack", [])],
            })
            entry = kernels.setdefault(launch.kernel,
                                       {"name": launch.kernel, "launches": 0, "captures": [], "call_sites": []})
            entry["launches"] += 1
            if cap.id not in entry["captures"]:
                entry["captures"].append(cap.id)
            site = f"{_rel(launch.path, root)}:{launch.line}"
            if site not in entry["call_sites"]:
                entry["call_sites"].append(site)
        graph = None
        if cap.nodes is not None:
            from graphcheck.capture.nodes import summarize

            graph = summarize(cap.nodes)
        captures.append({
            "id": cap.id, "status": cap.status, "site": _loc(cap.site, root), "mode": cap.mode,
            "stream": cap.stream, "seconds": round(cap.seconds, 6),
            "functions": sorted(index[k] for k in set(cap.functions) if k in index),
            "launches": launches, "ops": dict(sorted(cap.ops.items())),
            "syncs": [{"op": e.op, "code": e.code, "path": _rel(e.path, root), "line": int(e.line),
                       "function": e.function, "detail": e.detail} for e in cap.syncs],
            "graph": graph, "graph_error": cap.graph_error,
            "failure": (_jsonable({**cap.failure, "path": _rel(cap.failure["path"] or "", root)})
                        if cap.failure else None),
            "notes": list(cap.notes),
        })
    findings = []
    for f in session.all_findings():
        d = f.to_dict()
        d["path"] = _rel(d["path"], root)
        d["evidence"] = _jsonable(d["evidence"])
        if isinstance(d["evidence"].get("launch_path"), str):
            d["evidence"]["launch_path"] = _rel(d["evidence"]["launch_path"], root)
        findings.append(d)
    return {
        "schema": SCHEMA_NAME, "version": SCHEMA_VERSION, "root": root, "command": [str(c) for c in session.command],
        "created": datetime.datetime.fromtimestamp(session.started, datetime.timezone.utc)
                   .strftime("%Y-%m-%dT%H:%M:%SZ"),
        "environment": environment(), "captures": captures, "functions": functions,
        "kernels": sorted(kernels.values(), key=lambda k: k["name"]), "findings": findings,
    }


def write(data: dict[str, Any], path: str) -> None:
    """Write atomically (a reader never sees half a map)."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(dumps(data))
    os.replace(tmp, path)


_NUMBER_LIST = re.compile(r"\[\s+(-?[\d.]+(?:,\s+-?[\d.]+)*)\s+\]")


def dumps(data: dict[str, Any]) -> str:
    """Indented JSON with lists of numbers kept on one line."""
    text = json.dumps(data, indent=1)
    return _NUMBER_LIST.sub(lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", text) + "\n"


def merge(maps: Iterable[dict[str, Any]], command: list[str] | None = None) -> dict[str, Any]:
    """One map from several (one per process of a run); capture ids are renumbered."""
    maps = list(maps)
    if not maps:
        raise MapError("no capture map to merge")
    if len(maps) == 1:
        out = dict(maps[0])
        if command is not None:
            out["command"] = command
        return out
    out = {k: maps[0][k] for k in ("schema", "version", "root", "created", "environment")}
    out["command"] = command if command is not None else maps[0].get("command", [])
    captures: list[dict[str, Any]] = []
    functions: dict[tuple[str, str, int], dict[str, Any]] = {}
    kernels: dict[str, dict[str, Any]] = {}
    findings: list[dict[str, Any]] = []
    for m in maps:
        base = len(captures)
        fn_ids = []
        for fn in m["functions"]:
            key = (fn["path"], fn["qualname"], fn["first_line"])
            entry = functions.setdefault(key, {**fn, "lines": [], "captures": []})
            entry["lines"] = sorted(set(entry["lines"]) | set(fn["lines"]))
            entry["captures"] = sorted(set(entry["captures"]) | {c + base for c in fn["captures"]})
            entry["site"] = bool(entry.get("site")) or bool(fn.get("site"))
            fn_ids.append(key)
        for cap in m["captures"]:
            captures.append({**cap, "id": cap["id"] + base, "functions": [fn_ids[i] for i in cap["functions"]]})
        for k in m["kernels"]:
            entry = kernels.setdefault(k["name"], {"name": k["name"], "launches": 0, "captures": [], "call_sites": []})
            entry["launches"] += k["launches"]
            entry["captures"] += [c + base for c in k["captures"]]
            entry["call_sites"] += [s for s in k.get("call_sites", []) if s not in entry["call_sites"]]
        findings += m["findings"]
    keys = sorted(functions, key=lambda k: (k[0], k[2], k[1]))
    index = {k: i for i, k in enumerate(keys)}
    for cap in captures:
        cap["functions"] = sorted(index[k] for k in cap["functions"])
    out.update(captures=captures, functions=[functions[k] for k in keys],
               kernels=sorted(kernels.values(), key=lambda k: k["name"]), findings=findings)
    return out


@dataclasses.dataclass
class CaptureMap:
    """A capture map read from disk, with paths resolved to absolute ones."""

    data: dict[str, Any]
    path: str
    root: str

    @classmethod
    def load(cls, path: str) -> CaptureMap:
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except OSError as exc:
            raise MapError(f"cannot read capture map {path}: {exc.strerror or exc}") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise MapError(f"capture map {path} is not JSON: {exc}") from None
        validate(data)
        root = data["root"]
        if not os.path.isabs(root):
            root = os.path.join(os.path.dirname(os.path.abspath(path)), root)
        elif not os.path.isdir(root):
            # recorded on another machine (the GPU box): its relative paths are read from here, a checkout
            # of the same tree
            root = os.getcwd()
        return cls(data, os.path.abspath(path), os.path.normpath(root))

    def resolve(self, path: str) -> str:
        if not path or path.startswith("<") or os.path.isabs(path):
            return path
        return os.path.normpath(os.path.join(self.root, path))

    @property
    def functions(self) -> list[dict[str, Any]]:
        return self.data["functions"]

    def functions_by_file(self) -> dict[str, list[dict[str, Any]]]:
        """Absolute path -> the recorded functions of that file."""
        out: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for fn in self.functions:
            out[self.resolve(fn["path"])].append(fn)
        return dict(out)

    def findings(self) -> list[Finding]:
        return [Finding.from_dict({**d, "path": self.resolve(d["path"])}) for d in self.data["findings"]]
