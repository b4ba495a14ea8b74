"""The worker process: ``python -m graphcheck.workers.child --tasks FD --results FD``.

It reads one JSON task per line from the task pipe and writes JSON events to
the result pipe: ``ready`` once, then for each task optional ``layer`` events
(the layer that starts now, and the finished layers' partial report) and a
``done`` event. Its stdout and stderr belong to the user's code (the parent
sends them to a log file). The worker starts a new session, so the parent can
kill its whole process group.

Tasks:

- ``discover``: import a case source and list its cases (the module stays
  imported for the ``check`` tasks that follow).
- ``check``: run the layers of one case through :func:`graphcheck.check`
  without nested isolation; a worker whose CUDA context is broken afterwards
  asks to be retired.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from typing import Any

_cases: dict[str, dict[str, Any]] = {}  # source -> case name -> Case
_out_fd = -1


def _send(event: dict[str, Any]) -> None:
    data = (json.dumps(event, default=str) + "\n").encode()
    view = memoryview(data)
    while view:
        written = os.write(_out_fd, view)
        view = view[written:]


def _context(task: dict[str, Any]) -> None:
    """Run the task where the parent runs: its working directory and import path."""
    cwd = task.get("cwd")
    if cwd and os.path.isdir(cwd) and os.getcwd() != cwd:
        os.chdir(cwd)
    for entry in reversed(task.get("sys_path") or []):
        if entry not in sys.path:
            sys.path.insert(0, entry)


def _discover(task: dict[str, Any]) -> dict[str, Any]:
    from graphcheck.discovery import discover
    from graphcheck.trace.frames import function_location

    source = task["source"]
    found = discover(source, interpret=task.get("interpret"), contained=True)
    _cases[source] = {case.name: case for _, case in found.cases}
    return {"cases": [{"id": sid, "name": case.name, "where": list(function_location(case.fn))}
                      for sid, case in found.cases],
            "findings": [f.to_dict() for f in found.findings]}


def _case(source: str, name: str, interpret: bool | None) -> Any:
    if source not in _cases:
        _discover({"source": source, "interpret": interpret})
    case = _cases.get(source, {}).get(name)
    if case is None:
        raise LookupError(f"{source} declares no case named {name!r} in this worker")
    return case


def _cuda_broken() -> bool:
    """Whether this process's CUDA context is unusable (a sticky error): then the worker retires."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return False
    try:
        torch.cuda.synchronize()
        return False
    except Exception:
        return True


def _check(task: dict[str, Any], task_id: int) -> tuple[dict[str, Any], bool]:
    from graphcheck.api import Report, check

    case = _case(task["source"], task["case"], task.get("interpret"))
    merged = Report(case=case.name)
    retire = False
    for layer in task["layers"]:
        _send({"id": task_id, "event": "layer", "layer": layer, "report": merged.to_dict()})
        report = check(case, gpu=task.get("gpu", "auto"), examples=int(task.get("examples", 4)),
                       timeout=float(task.get("timeout", 120.0)), isolate=False, layers=(layer,))
        merged.findings += report.findings
        merged.skipped += report.skipped
        merged.layers.update(report.layers)
        if any(f.code == "GC006" for f in report.findings) or _cuda_broken():
            retire = True
            break
    return merged.to_dict(), retire


def _run(task: dict[str, Any]) -> None:
    task_id = task.get("id", 0)
    try:
        _context(task)
        if task["kind"] == "discover":
            _send({"id": task_id, "event": "done", "result": _discover(task)})
        elif task["kind"] == "check":
            result, retire = _check(task, task_id)
            _send({"id": task_id, "event": "done", "result": result, "retire": retire})
        else:
            raise ValueError(f"unknown task kind {task['kind']!r}")
    except BaseException as exc:  # user code may raise anything, SystemExit and KeyboardInterrupt included
        _send({"id": task_id, "event": "done", "error": f"{type(exc).__name__}: {exc}",
               "traceback": traceback.format_exc()[-4000:], "retire": True})


def _warm_up() -> None:
    """Pay the one-time costs before the first case's clock starts (the first dispatch mode loads much of torch)."""
    try:
        import torch

        from graphcheck.trace.recorder import Recorder

        with Recorder({}):
            torch.zeros(2).add_(1)
    except Exception:
        pass


def main(argv: list[str] | None = None) -> int:
    global _out_fd
    parser = argparse.ArgumentParser(prog="python -m graphcheck.workers.child")
    parser.add_argument("--tasks", type=int, required=True)
    parser.add_argument("--results", type=int, required=True)
    parser.add_argument("--preload", default="torch", help="comma-separated modules imported at start")
    args = parser.parse_args(argv)
    _out_fd = args.results
    from graphcheck.trace import runner

    runner.CASE_ERRORS = (BaseException,)  # nobody can interrupt a worker: whatever a case raises is its own
    for name in filter(None, args.preload.split(",")):
        try:
            __import__(name)
        except Exception:
            pass
    _warm_up()
    _send({"event": "ready", "pid": os.getpid()})
    with os.fdopen(args.tasks, "rb", buffering=0) as tasks:
        buffer = b""
        while True:
            chunk = tasks.read(65536)
            if not chunk:
                return 0
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                if line.strip():
                    task = json.loads(line)
                    if task.get("kind") == "exit":
                        return 0
                    _run(task)
                    sys.stdout.flush()
                    sys.stderr.flush()


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # skip interpreter and CUDA teardown: after a sticky CUDA error it can hang or crash
    os._exit(status)
