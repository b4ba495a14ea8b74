"""Run per-file lint work in a process pool, in chunks, surviving a dead worker.

Both the per-file rules (engine) and the project index (project) map a function
over a list of file tasks. A worker that dies (say, the interpreter overflowing
its C stack on a pathological file) loses the chunk it was on: that chunk is then
redone in this process, one task at a time, and its other tasks go to the other
workers, so nothing is lost.

A lint run keeps one set of workers (:class:`Workers`) for both passes: the project index parses each
file it summarizes and the worker keeps that tree (:func:`keep_tree`, up to :data:`HOLD_CHARS` of source
per process); the rules pass then sends each file to the worker holding its tree, which takes it
(:func:`take_tree`) instead of parsing the file again. A worker left with nothing of its own takes other
workers' files (and parses them), so the split stays balanced.
"""

from __future__ import annotations

import ast
import contextlib
import gc
from collections import deque
from collections.abc import Callable, Hashable, Iterator
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


def _chunk_size(n: int, jobs: int) -> int:
    return max(1, min(64, -(-n // (jobs * 8))))


def chunks(tasks: list, jobs: int) -> list[list]:
    size = _chunk_size(len(tasks), jobs)
    return [tasks[i : i + size] for i in range(0, len(tasks), size)]


def map_chunks(work: Callable[..., list], tasks: list, jobs: int, *args: Any,
               done: Callable[[int], None] | None = None) -> list:
    """``work(chunk, *args)`` over chunks of ``tasks`` on ``jobs`` processes; results concatenated
    (in completion order). ``done(n)``, if given, hears of each ``n`` tasks finished."""
    with Workers(jobs) as workers:
        return workers.map_chunks(work, tasks, *args, done=done)


# --- trees kept between the index pass and the rules pass ----------------------------------

HOLD_CHARS = 32_000_000  # source characters whose trees one process keeps at most (~28 bytes of tree each)
_held: dict[str, tuple[str, ast.Module]] = {}
_held_chars = 0


def keep_tree(path: str, source: str, tree: ast.Module) -> None:
    """Keep ``tree`` (``ast.parse(source)``, unchanged) for the rules pass over ``path`` in this process."""
    global _held_chars
    if path in _held or _held_chars + len(source) > HOLD_CHARS:
        return
    _held[path] = (source, tree)
    _held_chars += len(source)
    if _in_worker:
        # out of the collector's sight: a kept tree is millions of objects no collection could free, which
        # each young collection would otherwise walk again (a worker is ours: what it freezes ends with it)
        gc.freeze()


def take_tree(path: str, source: str) -> ast.Module | None:
    """The tree kept for ``path`` if it was parsed from ``source`` (the same text), else None; given once."""
    global _held_chars
    kept = _held.pop(path, None)
    if kept is None:
        return None
    _held_chars -= len(kept[0])
    if _in_worker:
        # A worker's kept trees were all alive at once when the index pass ended, so keeping each one past its
        # rules until the worker exits costs no peak memory; the exit (os._exit) frees them all at no cost,
        # where letting go of each after its file freed its millions of nodes one by one (4% of a worker's time).
        _given.append(kept[1])
    return kept[1] if kept[0] == source else None


_given: list[ast.Module] = []  # trees handed to the rules in a worker, freed by its exit


def drop_trees() -> None:
    global _held_chars
    _held.clear()
    _given.clear()
    _held_chars = 0


_in_worker = False  # set in a worker process of :class:`Workers`


def _serve(conn: Any) -> None:
    """A worker: run ``(work, chunk, args)`` requests until told to stop (None) or the pipe closes."""
    global _in_worker
    _in_worker = True
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        if request is None:
            return
        work, chunk, args = request
        try:
            reply = ("ok", work(chunk, *args))
        except BaseException as exc:  # the caller raises it, as a pool would
            reply = ("error", exc)
        try:
            conn.send(reply)
        except Exception as exc:  # a result or an exception that does not pickle
            conn.send(("error", RuntimeError(f"{type(exc).__name__}: {exc}")))


class Workers:
    """``jobs`` worker processes kept for a whole lint run (all started together on first use, each with its
    own pipe, so a task can be sent to a chosen worker), and where each file's task last ran.
    ``map_chunks(..., place=key)`` sends a task whose key ran before on a live worker back to that worker (it
    holds the file's tree), spreads the others, and lets an idle worker take another's remaining tasks.
    Leaving the ``with`` block stops the workers and drops the trees kept in this process."""

    def __init__(self, jobs: int) -> None:
        self.jobs = max(1, jobs)
        self._procs: list[Any] = []
        self._conns: list[Any] = []
        self._dead: set[int] = set()
        self.home: dict[Hashable, int] = {}  # task key -> the worker that ran it (-1: this process)
        self.moved = 0  # tasks placed on a worker that ran on another (a worker idle, or dead)

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, kind: object, *exc: object) -> None:
        self.close(wait=kind is None)

    def close(self, wait: bool = True) -> None:
        for k, (proc, conn) in enumerate(zip(self._procs, self._conns)):
            if wait and k not in self._dead:
                with contextlib.suppress(OSError, ValueError):
                    conn.send(None)
                proc.join(timeout=10)
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=10)
            conn.close()
        self._procs, self._conns = [], []
        drop_trees()

    def pooled(self, n: int) -> bool:
        """Whether ``n`` tasks would run in the worker processes (fewer run here)."""
        return self.jobs > 1 and n >= SERIAL_BELOW

    def _start(self) -> bool:
        """Start the workers (once); False when none could be started."""
        if not self._procs:
            import multiprocessing

            try:
                for _ in range(self.jobs):
                    parent, child = multiprocessing.Pipe()
                    proc = multiprocessing.Process(target=_serve, args=(child,), daemon=True)
                    proc.start()
                    child.close()
                    self._procs.append(proc)
                    self._conns.append(parent)
            except OSError:
                self._dead.update(range(len(self._procs), self.jobs))
        return len(self._dead) < self.jobs

    def map_chunks(self, work: Callable[..., list], tasks: list, *args: Any,
                   done: Callable[[int], None] | None = None, place: Callable[[Any], Hashable] | None = None) -> list:
        """``work(chunk, *args)`` over chunks of ``tasks``; results concatenated in completion order. ``done(n)``
        hears of each ``n`` tasks finished; ``place(task)`` is the key that ties a task to a worker."""
        if not self.pooled(len(tasks)) or not self._start():
            serial = work(tasks, *args)
            if place is not None:
                for task in tasks:
                    self.home[place(task)] = -1
            if done:
                done(len(tasks))
            return serial
        from multiprocessing.connection import wait

        live = [k for k in range(self.jobs) if k not in self._dead]
        own: dict[int, list] = {k: [] for k in live}
        free: list = []
        for task in tasks:
            k = self.home.get(place(task), -1) if place is not None else -1
            (own[k] if k in own else free).append(task)
        size = _chunk_size(len(tasks), self.jobs)
        queues = {k: deque(own[k][i : i + size] for i in range(0, len(own[k]), size)) for k in live}
        spare = deque(free[i : i + size] for i in range(0, len(free), size))

        def next_chunk(k: int) -> list | None:
            if queues[k]:
                return queues[k].popleft()
            if spare:
                return spare.popleft()
            others = [j for j in queues if len(queues[j]) > 1]
            if others:  # idle with nothing of its own: take the last chunk of the busiest worker (parsed again)
                chunk = queues[max(others, key=lambda j: len(queues[j]))].pop()
                self.moved += len(chunk)
                return chunk
            return None

        results: list = []
        redo: list[list] = []
        running: dict[int, list] = {}  # worker -> the chunk it is on (one at a time: a pipe never fills both ways)

        def died(k: int) -> None:
            self._dead.add(k)
            if k in running:
                redo.append(running.pop(k))
            if k in queues:
                self.moved += sum(len(c) for c in queues[k])
                spare.extend(queues.pop(k))  # its own files go to the others (parsed again there)

        def submit(k: int) -> None:
            chunk = next_chunk(k)
            if chunk is None:
                return
            running[k] = chunk
            try:
                self._conns[k].send((work, chunk, args))
            except (OSError, ValueError):
                died(k)

        for k in live:
            submit(k)
        while running:
            by_conn: dict[Any, int] = {self._conns[k]: k for k in running}
            ready: list[Any] = wait(list(by_conn))
            for conn in ready:
                k = by_conn[conn]
                try:
                    reply: tuple[str, Any] = conn.recv()
                except (EOFError, OSError):  # the worker died (say, its C stack overflowed)
                    died(k)
                    continue
                chunk = running.pop(k)
                if reply[0] != "ok":
                    raise reply[1]
                results.extend(reply[1])
                if place is not None:
                    for task in chunk:
                        self.home[place(task)] = k
                if done:
                    done(len(chunk))
                submit(k)
            for j in list(queues):  # a worker left idle while another died: give it work again
                if j not in running:
                    submit(j)
        leftover = list(spare) + [c for q in queues.values() for c in q]  # every worker died
        for chunk in redo + leftover:
            for task in chunk:  # one at a time, here: a task that kills a worker is contained to itself
                results.extend(work([task], *args))
                if done:
                    done(1)
        return results
