"""The line collector per capture on an engine-shaped step (no GPU, no torch; Python 3.12+).

A synthetic decode step in an "engine" file: one function calling 31 engine
functions with 181 lines among them (the example engine's shape in its map),
each calling "library" functions, the 12 longest with an error branch that
never runs (as the kernels' argument checks: 150 of the lines are in functions
not every line of which runs), then 600 library functions, run 30 frames
deep (a real program's stack). Per capture: the collector's ``start()``, the
step, ``stop()`` and ``take()``, after two eager steps, as ``graphcheck record``
sees a warm-up. Prints the median microseconds per capture for each collector
given (``--collector FILE``, e.g. ``git show REV:graphcheck/record/lines.py >
old.py``; default: graphcheck's), and the plain step.

    python benchmarks/bench_record_collector.py [--collector old.py ...] [--repeat 3]
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
LINES = [2, 8, 2, 3, 3, 2, 3, 3, 3, 5, 4, 1, 9, 1, 1, 24, 12, 1, 6, 2, 1, 9, 1, 12, 1, 24, 10, 1, 27, 3, 2]


def _step(n_library: int = 600):
    lib_ns: dict = {}
    exec(compile("\n".join(f"def g{i}(x):\n    x = x + 1\n    return x\n" for i in range(n_library)), LIBRARY, "exec"),
         lib_ns)
    lib = [lib_ns[f"g{i}"] for i in range(n_library)]
    source = []
    for i, n in enumerate(LINES):
        body = "\n".join(f"    x = lib[{(i * 20 + j) % n_library}](x)" for j in range(n))
        check = "    if x < -1:\n        raise ValueError(x)\n" if n > 3 else ""  # a branch no capture runs
        source.append(f"def f{i}(x):\n{check}{body}\n    return x\n")
    source.append("def decode(x):\n    for fn in eng:\n        x = fn(x)\n"
                  "    for g in lib:\n        x = g(x)\n    return x\n")
    eng_ns: dict = {"lib": lib}
    exec(compile("\n".join(source), ENGINE, "exec"), eng_ns)
    eng_ns["eng"] = [eng_ns[f"f{i}"] for i in range(len(LINES))]
    return eng_ns["decode"]


def _deep(n: int, fn):
    return fn() if n == 0 else _deep(n - 1, fn)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collector", action="append", default=[], help="a lines.py to load LineCollector from")
    parser.add_argument("--captures", type=int, default=150)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not hasattr(sys, "monitoring"):
        print("needs Python 3.12+ (sys.monitoring)", file=sys.stderr)
        return 2
    classes = {}
    for path in args.collector:
        spec = importlib.util.spec_from_file_location(f"collector_{len(classes)}", path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        classes[path] = module.LineCollector
    from graphcheck.record.lines import LineCollector

    classes["graphcheck"] = LineCollector
    step = _step()

    def per_capture(collector_class) -> float:
        collector = collector_class(is_user=lambda path: path == ENGINE)
        times = []
        for _ in range(args.captures):
            step(1)
            step(1)
            started = time.perf_counter()
            collector.start(sys._getframe())
            _deep(30, lambda: step(1))
            collector.stop()
            collector.take()
            times.append(time.perf_counter() - started)
        collector.close()
        return statistics.median(times[5:])

    plain = []
    for _ in range(args.captures):
        started = time.perf_counter()
        _deep(30, lambda: step(1))
        plain.append(time.perf_counter() - started)
    print(f"python {sys.version.split()[0]}; plain step {statistics.median(plain) * 1e6:.0f} us")
    for _ in range(args.repeat):
        print("  ".join(f"{name}: {per_capture(cls) * 1e6:.0f} us per capture" for name, cls in classes.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
