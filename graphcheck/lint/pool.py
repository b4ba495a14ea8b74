"""Run per-file lint work in a process pool, in chunks, surviving a dead worker.

Both the per-file rules (engine) and the project index (project) map a function
over a list of file tasks. A worker that dies (say, the interpreter overflowing
its C stack on a pathological file) breaks the pool: the chunks it left are then
redone in this process, one task at a time, so nothing is lost.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import gc
from collections.abc import Callable, Iterator
from typing import Any

SERIAL_BELOW = 50  # fewer tasks than this run in-process: a pool costs more than it saves
# Parsing a tree allocates millions of AST nodes. At CPython's default thresholds (700, 10, 10) linting
# the torch tree ran ~140 full collections, each walking every live object (the project index, the
# summaries): a sixth of the run's CPU time. These thresholds collect young objects ~30x less often and
# leave full collections to the growth rule, for a few MB more peak memory.
_GC_THRESHOLDS = (20000, 20, 20)


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """Run the body (and the worker processes it forks) at :data:`_GC_THRESHOLDS`; the caller's thresholds
    are restored afterwards. Thresholds already higher are kept."""
    old = gc.get_threshold()
    gc.set_threshold(*(max(o, n) for o, n in zip(old, _GC_THRESHOLDS)))
    try:
        yield
    finally:
        gc.set_threshold(*old)


def chunks(tasks: list, jobs: int) -> list[list]:
    size = max(1, min(64, -(-len(tasks) // (jobs * 8))))
    return [tasks[i : i + size] for i in range(0, len(tasks), size)]


def map_chunks(work: Callable[..., list], tasks: list, jobs: int, *args: Any,
               done: Callable[[int], None] | None = None) -> list:
    """``work(chunk, *args)`` over chunks of ``tasks`` on ``jobs`` processes; results concatenated
    (in completion order). ``done(n)``, if given, hears of each ``n`` tasks finished."""
    if jobs <= 1 or len(tasks) < SERIAL_BELOW:
        serial = work(tasks, *args)
        if done:
            done(len(tasks))
        return serial
    results: list = []
    pending: dict[concurrent.futures.Future, list] = {}
    try:
        with concurrent.futures.ProcessPoolExecutor(max_workers=jobs) as executor:
            for chunk in chunks(tasks, jobs):
                pending[executor.submit(work, chunk, *args)] = chunk
            for future in concurrent.futures.as_completed(list(pending)):
                try:
                    results.extend(future.result())
                    finished = pending.pop(future)
                    if done:
                        done(len(finished))
                except concurrent.futures.process.BrokenProcessPool:
                    break
    except (OSError, concurrent.futures.process.BrokenProcessPool):
        pass
    for chunk in pending.values():
        for task in chunk:
            results.extend(work([task], *args))
            if done:
                done(1)
    return results
