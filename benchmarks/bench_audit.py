"""How long ``graphcheck audit`` takes, in process and on the worker pool.

Each configuration runs in a fresh Python process (so every import and CUDA
start-up is paid as a user pays it) and prints one JSON line: wall seconds, the
number of cases, and a digest of the verdicts (every case's layer results and
every finding's code, line and expected flag), so that faster configurations
can be checked to give the same verdicts.

    python benchmarks/bench_audit.py                                   # the README main job, CPU
    python benchmarks/bench_audit.py --gpu required --workers 1 4 8    # on a GPU host
    python benchmarks/bench_audit.py --json out.json --repeat 3
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time

_CHILD = r"""
import json, sys, time
args = json.loads(sys.argv[1])
started = time.perf_counter()
from graphcheck.audit import audit
result = audit(args["targets"], gpu=args["gpu"], examples=args["examples"], isolate=args["isolate"],
               workers=args["workers"])
seconds = time.perf_counter() - started
verdicts = sorted((c.name, sorted((k, str(v)) for k, v in c.report.layers.items())) for c in result.cases)
findings = sorted((f.code, f.path, f.line, f.expected) for f in result.findings)
print(json.dumps({"seconds": seconds, "cases": len(result.cases), "verdicts": verdicts, "findings": findings,
                  "failed": result.failed("warning")}))
"""


def run_one(targets: list[str], gpu: str, examples: int, isolate: bool, workers: int | None) -> dict:
    payload = json.dumps({"targets": targets, "gpu": gpu, "examples": examples, "isolate": isolate,
                          "workers": workers})
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _CHILD, payload], capture_output=True, text=True)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"audit failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    digest = hashlib.sha256(json.dumps([data["verdicts"], data["findings"]]).encode()).hexdigest()[:12]
    return {"wall_s": round(wall, 2), "audit_s": round(data["seconds"], 2), "cases": data["cases"],
            "verdict_digest": digest, "failed": data["failed"], "verdicts": data["verdicts"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", default=["graphcheck.kernels", "examples"])
    parser.add_argument("--gpu", default="off", choices=("auto", "off", "required"))
    parser.add_argument("--examples", type=int, default=4)
    parser.add_argument("--workers", type=int, nargs="*", default=None,
                        help="worker counts to time (default: the automatic choice only)")
    parser.add_argument("--no-in-process", action="store_true", help="skip the in-process baseline")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)

    configs: list[tuple[str, bool, int | None]] = []
    if not args.no_in_process:
        configs.append(("in-process", False, None))
    for n in (args.workers or [None]):
        configs.append((f"pool, {n or 'auto'} workers", True, n))
    rows = []
    for label, isolate, workers in configs:
        runs = [run_one(args.targets, args.gpu, args.examples, isolate, workers) for _ in range(args.repeat)]
        row = {"config": label, "median_wall_s": statistics.median(r["wall_s"] for r in runs),
               "walls": [r["wall_s"] for r in runs], "cases": runs[0]["cases"],
               "verdict_digest": runs[0]["verdict_digest"], "failed": runs[0]["failed"]}
        rows.append(row)
        print(f"{label:24s} {row['median_wall_s']:7.1f} s  {row['cases']} cases  verdicts {row['verdict_digest']}"
              f"{'  (FAILED)' if row['failed'] else ''}", flush=True)
    same = len({r["verdict_digest"] for r in rows}) == 1
    print("same verdicts in every configuration" if same else "VERDICTS DIFFER between configurations")
    env = {"python": platform.python_version(), "cpus": os.cpu_count(), "machine": platform.machine(),
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    try:
        import torch

        env["torch"] = torch.__version__
        env["device"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    except Exception:
        pass
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"environment": env, "targets": args.targets, "gpu": args.gpu, "rows": rows,
                       "same_verdicts": same}, fh, indent=2)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
