"""The child process of an isolated capture check: ``python -m graphcheck.capture.worker``.

It loads one case (module or file + case name), runs the capture layer on it and
writes ``{"findings": [...], "skipped": [...]}`` as JSON to ``--result``
(plus ``"layer_skipped": reason`` when the layer could not run at all). With
``--stage eager`` it only runs the case once eagerly on ``--device-type`` (used to
check the isolation machinery itself where no GPU exists).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from collections.abc import Sequence
from typing import Any


def _write(path: str, payload: dict[str, Any]) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(payload, fh)
    os.replace(tmp, path)


def _internal(case_name: str, exc: BaseException, stage: str) -> dict[str, Any]:
    from graphcheck.rules import make_finding

    code = "GC005" if stage == "load" else "GC003"
    return make_finding(code, f"{stage} of case {case_name!r} failed: {type(exc).__name__}: {exc}",
                        path="<capture>", line=0, layer="capture", case=case_name,
                        evidence={"traceback": traceback.format_exc()[-4000:]}).to_dict()


def _eager_only(case: Any, device_type: str) -> tuple[list[Any], list[str]]:
    from graphcheck.capture.locations import exception_location, function_location
    from graphcheck.capture.runner import make_finding

    try:
        case.fn(**case.inputs(0, device_type))
    except Exception as exc:
        loc = exception_location(exc) or function_location(case.fn)
        return [make_finding("GC004", f"case {case.name!r} raised: {type(exc).__name__}: {exc}", loc, case.name)], []
    return [], []


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m graphcheck.capture.worker")
    parser.add_argument("--case", required=True)
    parser.add_argument("--module")
    parser.add_argument("--file")
    parser.add_argument("--result", required=True)
    parser.add_argument("--examples", type=int, default=8)
    parser.add_argument("--capture-error-mode", default="global")
    parser.add_argument("--device", type=int, default=None)
    parser.add_argument("--stage", choices=("capture", "eager"), default="capture")
    parser.add_argument("--device-type", default="cpu", help="device for --stage eager")
    args = parser.parse_args(argv)

    from graphcheck.capture.locate import CaseRef, load_case
    from graphcheck.layers import LayerSkipped

    ref = CaseRef(args.module, args.file, args.case)
    try:
        case = load_case(ref)
    except Exception as exc:
        _write(args.result, {"findings": [_internal(args.case, exc, "load")], "skipped": []})
        return 0
    try:
        if args.stage == "eager":
            findings, skipped = _eager_only(case, args.device_type)
        else:
            from graphcheck.capture.runner import run_case

            findings, skipped = run_case(case, examples=args.examples, capture_error_mode=args.capture_error_mode,
                                         device=args.device)
        payload: dict[str, Any] = {"findings": [f.to_dict() for f in findings], "skipped": list(skipped)}
    except LayerSkipped as skip:
        payload = {"findings": [], "skipped": [], "layer_skipped": skip.reason}
    except Exception as exc:
        payload = {"findings": [_internal(args.case, exc, "capture check")], "skipped": []}
    _write(args.result, payload)
    sys.stdout.flush()
    sys.stderr.flush()
    return 0


if __name__ == "__main__":
    status = main()
    # skip interpreter and CUDA teardown: after a sticky CUDA error it can hang or crash,
    # and the result is already written
    os._exit(status)
