"""What the line collector costs when a captured step runs a lot of library code (no GPU, no torch).

A synthetic step: one engine function calling 2,000 generated "library"
functions (as torch's Python code runs under recording's dispatch mode). Each
round is an eager step then a "capture" of the same step between the
collector's ``start()`` and ``stop()``, as ``graphcheck record`` does per batch
size. Printed (CPU time of the process, steadier than wall time on a shared
machine): a round before any recording, an unrecorded round between recorded
ones (it pays for whatever the collector leaves switched on), and a recorded one.
``--collector FILE`` measures another version of ``graphcheck/record/lines.py``
(e.g. ``git show REV:graphcheck/record/lines.py > old.py``).

    python benchmarks/bench_record_lines.py [--rounds 10] [--collector FILE]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

LIBRARY = "/usr/lib/python3/fake_library.py"  # what the collector takes for library code
ENGINE = "/srv/engine/step.py"


def _functions(n: int) -> list:
    source = "\n".join(f"def f{i}(x):\n" + "\n".join(f"    x = x + {j}" for j in range(20)) + "\n    return x\n"
                       for i in range(n))
    namespace: dict = {}
    exec(compile(source, LIBRARY, "exec"), namespace)
    return [namespace[f"f{i}"] for i in range(n)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--functions", type=int, default=2000)
    parser.add_argument("--collector", help="a lines.py to load LineCollector from (default: graphcheck's)")
    args = parser.parse_args()
    if args.collector:
        spec = importlib.util.spec_from_file_location("collector_under_test", args.collector)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        collector_class = module.LineCollector
    else:
        from graphcheck.record.lines import LineCollector as collector_class
    library = _functions(args.functions)

    def step(x: int) -> int:
        for fn in library:
            x = fn(x)
        return x

    step.__code__ = step.__code__.replace(co_filename=ENGINE)
    collector = collector_class(is_user=lambda path: path == ENGINE)

    def one_round(record: bool) -> float:
        started = time.process_time()
        step(0)  # eager warm-up
        if record:
            collector.start()
        step(0)  # the "capture"
        if record:
            collector.stop()
            collector.take()
        return time.process_time() - started

    for _ in range(2):
        one_round(False)
    baseline = [one_round(False) for _ in range(args.rounds)]  # no collector yet in this process
    one_round(True)
    plain, recorded = [], []
    for _ in range(args.rounds):
        plain.append(one_round(False))
        recorded.append(one_round(True))
    close = getattr(collector, "close", None)
    if close is not None:
        close()
    b, p, r = statistics.median(baseline), statistics.median(plain), statistics.median(recorded)
    print(f"python {sys.version.split()[0]}, collector backend {collector.backend}, "
          f"{args.functions} library functions per step, {args.rounds} rounds, medians")
    print(f"eager step + captured step: before any recording {b * 1e3:.2f} ms; between recorded rounds, "
          f"not recorded {p * 1e3:.2f} ms ({p / b:.2f}x); recorded {r * 1e3:.2f} ms ({r / b:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
