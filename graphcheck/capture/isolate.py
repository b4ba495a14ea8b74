"""Run one case in its own process with a timeout, so a crash or hang costs one case.

The child is ``python -m graphcheck.capture.worker``; it writes its findings as
JSON to a file (stdout stays the case's own). The child starts a new session, so
on timeout the whole process group is killed. A child that dies (a signal such
as SIGSEGV/SIGABRT, or a non-zero exit without a result) is GC006 with the exit
status and the tail of its stderr; one that runs past the timeout is GC007.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from typing import Any

from graphcheck import rules
from graphcheck.capture.locate import CaseRef
from graphcheck.findings import Finding
from graphcheck.layers import LayerSkipped
from graphcheck.workers.pool import child_env, describe_exit, kill_group

STDERR_TAIL = 3000


def _tail(path: str, limit: int = STDERR_TAIL) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - limit))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _kill_group(proc: subprocess.Popen) -> None:
    kill_group(proc)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass


def _finding(code: str, message: str, location: tuple[str, int, str | None], case: str, **evidence: Any) -> Finding:
    return rules.get(code).finding(message, at=location, layer="capture", case=case, evidence=evidence)


def run_in_subprocess(
    ref: CaseRef,
    worker_args: Sequence[str],
    *,
    timeout: float,
    location: tuple[str, int, str | None],
    extra_env: dict[str, str] | None = None,
    module: str = "graphcheck.capture.worker",
) -> tuple[list[Finding], list[str]]:
    """Run ``python -m <module> <ref args> <worker_args> --result FILE`` and read its findings."""
    with tempfile.TemporaryDirectory(prefix="graphcheck-") as tmp:
        result_path = os.path.join(tmp, "result.json")
        stderr_path = os.path.join(tmp, "stderr.txt")
        cmd = [sys.executable, "-m", module, *ref.to_args(), *worker_args, "--result", result_path]
        with open(stderr_path, "wb") as err:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                    env=child_env(extra_env), start_new_session=True)
            try:
                returncode = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                tail = _tail(stderr_path)
                return [_finding("GC007", f"case {ref.name!r} did not finish within {timeout:g} s and was killed "
                                 "(a hang, a device-side spin, or far too slow)", location, ref.name,
                                 timeout_s=timeout, stderr_tail=tail, command=cmd)], []
        tail = _tail(stderr_path)
        result = None
        if os.path.exists(result_path):
            try:
                with open(result_path, encoding="utf-8") as fh:
                    result = json.load(fh)
            except (OSError, ValueError):
                result = None
        if result is None:
            return [_finding("GC006", f"the process running case {ref.name!r} {describe_exit(returncode)} "
                             "before reporting a result", location, ref.name, exit=describe_exit(returncode),
                             returncode=returncode, stderr_tail=tail)], []
        if result.get("layer_skipped"):
            raise LayerSkipped(str(result["layer_skipped"]))
        findings = [Finding.from_dict(d) for d in result.get("findings", [])]
        skipped = [str(s) for s in result.get("skipped", [])]
        if returncode != 0 and not any(f.code in ("GC006", "GC003") for f in findings):
            # it reported, then died (e.g. a sticky error at exit): still say so
            findings.append(_finding("GC006", f"the process running case {ref.name!r} {describe_exit(returncode)} "
                                     "after reporting its result", location, ref.name, exit=describe_exit(returncode),
                                     returncode=returncode, stderr_tail=tail))
        return findings, skipped
