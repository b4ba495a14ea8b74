"""Benchmark ``graphcheck lint`` on a large real tree: the installed torch package.

Runs the linter in a fresh subprocess per measurement (so peak memory is that
run's own): cold without cache, cold filling the cache, then a cached re-run,
each also with ``--all-functions``. Reports files, lines, wall time, lines/s,
peak RSS (parent + workers) and the GC0xx counts (files it could not check).

    python benchmarks/bench_lint.py [--path DIR ...] [--jobs N] [--json OUT]

Each ``--path`` is benchmarked in turn (default: the installed torch package).
The 1-minute load average is recorded before every measurement: on a shared
machine it says how far the wall times are from a quiet run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

_CHILD = r"""
import json, resource, sys, time, collections
from graphcheck.config import Config
from graphcheck.lint.engine import lint_paths
path, jobs, use_cache, all_functions = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4] == "1"
t0 = time.perf_counter()
r = lint_paths([path], Config(root=path, all_functions=all_functions), jobs=jobs, use_cache=use_cache)
wall = time.perf_counter() - t0
self_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
child_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
codes = collections.Counter(f.code for f in r.findings)
print(json.dumps({"files": r.files_checked, "lines": r.lines, "wall_s": wall, "from_cache": r.from_cache,
                  "findings": len(r.findings), "peak_rss_mb": (self_kb + child_kb) / 1024,
                  "gc0xx": {c: n for c, n in codes.items() if c.startswith("GC0")},
                  "by_code": dict(sorted(codes.items()))}))
"""


def measure(path: str, jobs: int, use_cache: bool, all_functions: bool, cache_dir: str) -> dict:
    env = dict(os.environ, GRAPHCHECK_CACHE_DIR=cache_dir)
    out = subprocess.run([sys.executable, "-c", _CHILD, path, str(jobs), "1" if use_cache else "0",
                          "1" if all_functions else "0"], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--path", action="append",
                        help="tree to lint; repeat for several (default: the installed torch package)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--json", metavar="OUT", help="also write the results as JSON")
    args = parser.parse_args()
    torch_version = None
    paths = list(args.path or [])
    if not paths:
        # locate torch without importing it: an import would inflate this process's peak RSS,
        # which the measured child processes inherit across exec on Linux
        import importlib.metadata
        import importlib.util

        spec = importlib.util.find_spec("torch")
        if spec is None or not spec.origin:
            parser.error("torch is not installed; pass --path")
        paths = [os.path.dirname(spec.origin)]
        torch_version = importlib.metadata.version("torch")

    from graphcheck import __version__

    env = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "python": platform.python_version(),
           "graphcheck": __version__, "torch": torch_version, "cpus": os.cpu_count(), "jobs": args.jobs,
           "machine": platform.machine(), "processor": platform.processor() or platform.machine(), "paths": paths}
    rows = []
    for path in paths:
        for all_functions in (False, True):
            with tempfile.TemporaryDirectory() as cache_dir:
                measured = []
                for label, use_cache in (("cold, no cache", False), ("cold, filling cache", True),
                                         ("cached re-run", True)):
                    load = os.getloadavg()[0]
                    r = measure(path, args.jobs, use_cache, all_functions, cache_dir)
                    measured.append({"tree": path, "mode": label, "all_functions": all_functions, "load1": load, **r})
            rows.extend(measured)

    print(f"{env['cpus']} CPUs, jobs={args.jobs}, Python {env['python']}, graphcheck {env['graphcheck']}, "
          f"{env['date']}")
    header = (f"{'tree':<28}{'mode':<22}{'all-fn':<8}{'files':>7}{'lines':>10}{'wall s':>9}{'lines/s':>11}"
              f"{'peak MB':>9}{'cached':>8}{'load':>6}  GC0xx")
    print(header)
    for r in rows:
        rate = r["lines"] / r["wall_s"] if r["wall_s"] else float("inf")
        tree = os.path.basename(r["tree"].rstrip("/"))
        print(f"{tree:<28}{r['mode']:<22}{str(r['all_functions']):<8}{r['files']:>7}{r['lines']:>10}{r['wall_s']:>9.2f}"
              f"{rate:>11.0f}{r['peak_rss_mb']:>9.0f}{r['from_cache']:>8}{r['load1']:>6.1f}  {r['gc0xx'] or '-'}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"env": env, "rows": rows}, fh, indent=2)


if __name__ == "__main__":
    main()
