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

``--per-recording`` times instead what ``bench_record_overhead.py`` times on the
GPU: a whole recording per round (a new collector, four captures of the step
after two eager steps each, ``close()``), against the same round unrecorded, in
CPU time of the process, with the library in a ``site-packages/torch`` path so
that the collector's default test of a file decides. ``--library-lines N`` gives
each library function N more (never taken) branches: torch's functions are
longer than one line, and some costs grow with a function's length.

    python benchmarks/bench_record_collector.py [--collector old.py ...] [--repeat 3]
    python benchmarks/bench_record_collector.py --per-recording --library-lines 12 [--collector old.py ...]
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
TORCH_LIBRARY = "/opt/venv/lib/python3.12/site-packages/torch/fake_library.py"  # library code to is_engine_file
ENGINE = "/srv/engine/step.py"
LINES = [2, 8, 2, 3, 3, 2, 3, 3, 3, 5, 4, 1, 9, 1, 1, 24, 12, 1, 6, 2, 1, 9, 1, 12, 1, 24, 10, 1, 27, 3, 2]


def _step(n_library: int = 600, library_lines: int = 0, library: str = LIBRARY):
    lib_ns: dict = {}
    branches = "".join(f"    if x < -{1000 + j}:\n        x = x - {j}\n" for j in range(library_lines))
    exec(compile("\n".join(f"def g{i}(x):\n{branches}    x = x + 1\n    return x\n" for i in range(n_library)),
                 library, "exec"), lib_ns)
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
    parser.add_argument("--per-recording", action="store_true", help="time a whole recording of four captures")
    parser.add_argument("--library-lines", type=int, default=0, help="extra branches per library function")
    parser.add_argument("--rounds", type=int, default=40, help="recordings per collector with --per-recording")
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
    if args.per_recording:
        return per_recording(classes, args)
    step = _step(library_lines=args.library_lines)

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


def per_recording(classes: dict, args: argparse.Namespace) -> int:
    """CPU time of a round of four eager-and-captured steps, recorded by a new collector or not."""
    step = _step(library_lines=args.library_lines, library=TORCH_LIBRARY)

    def one_round(collector) -> float:
        started = time.process_time()
        for _ in range(4):
            step(1)
            step(1)
            if collector is not None:
                collector.start(sys._getframe())
            _deep(30, lambda: step(1))
            if collector is not None:
                collector.stop()
                collector.take()
        if collector is not None:
            collector.close()
        return time.process_time() - started

    for _ in range(3):
        one_round(None)
    print(f"python {sys.version.split()[0]}; one recording of 4 captures per round, "
          f"library functions with {args.library_lines} extra branches; medians of {args.rounds} rounds, CPU time")
    for _ in range(args.repeat):
        times: dict[str, list[float]] = {"plain": [], **{name: [] for name in classes}}
        for _ in range(args.rounds):  # alternating, as bench_record_overhead.py
            times["plain"].append(one_round(None))
            for name, cls in classes.items():
                times[name].append(one_round(cls()))
        base = statistics.median(times["plain"])
        print(f"plain {base * 1e3:.2f} ms  " + "  ".join(
            f"{name}: +{(statistics.median(times[name]) - base) * 1e3:.2f} ms" for name in classes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
