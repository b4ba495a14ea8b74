"""The parent side of the worker pool: start workers, hand out tasks, survive any worker's end.

::

    with WorkerPool(slots=[Slot(env={"TRITON_INTERPRET": "1"})] * 2) as pool:
        pool.submit(Task("discover", {"source": "my_pkg.ops"}, timeout=60))
        for task, outcome in pool.results():
            ...

Each worker is ``python -m graphcheck.workers.child`` in its own session, with
its stdout and stderr in a log file. A task's outcome is the worker's ``done``
event, or a :class:`Fault` when the worker died (exit status or signal) or ran
past the task's deadline (then its process group is killed). The worker is then
replaced (lazily, when a task waits for it) and the next task runs on a fresh
process. ``layer`` events move the deadline: each layer of a case gets the full
timeout.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

STDERR_TAIL = 3000
#: extra time a task gets when its worker is still starting (importing torch, initialising CUDA)
STARTUP_ALLOWANCE = 120.0


def describe_exit(returncode: int | None) -> str:
    """``killed by signal 11 (SIGSEGV)`` or ``exited with status 3``."""
    if returncode is None:
        return "ended"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "unknown signal"
        return f"killed by signal {-returncode} ({name})"
    return f"exited with status {returncode}"


@dataclasses.dataclass(frozen=True)
class Slot:
    """Where a worker runs: extra environment (``CUDA_VISIBLE_DEVICES``, ``TRITON_INTERPRET``)."""

    env: tuple[tuple[str, str], ...] = ()
    label: str = "cpu"

    @classmethod
    def of(cls, label: str = "cpu", **env: str) -> Slot:
        return cls(tuple(sorted(env.items())), label)


@dataclasses.dataclass
class Task:
    kind: str  # "discover" | "check"
    payload: dict[str, Any]
    timeout: float
    #: prefer a worker that already ran a task with this key (the module is imported there)
    affinity: str | None = None
    id: int = 0
    #: filled in while it runs
    layer: str | None = None
    partial: dict[str, Any] | None = None


@dataclasses.dataclass
class Fault:
    """A task whose worker ended or hung."""

    kind: str  # "died" | "timeout"
    detail: str  # describe_exit(...) or "no result within N s"
    returncode: int | None
    stderr_tail: str
    layer: str | None
    partial: dict[str, Any] | None
    error: str | None = None  # set when the worker reported an exception it could not handle


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL a child started with ``start_new_session=True`` and everything it spawned (the child
    alone where the group is gone or not ours); the caller reaps it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        try:
            proc.kill()
        except OSError:
            pass


def child_env(extra: Any = None) -> dict[str, str]:
    """This process's environment for a child Python: it must import what this process can (cases
    in test folders, examples, the working directory), plus ``extra`` (a mapping or pairs)."""
    env = dict(os.environ)
    paths = [p for p in sys.path if p and os.path.isdir(p)]
    cwd = os.getcwd()
    if cwd not in paths:
        paths.insert(0, cwd)
    old = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths + ([old] if old else [])))
    env.setdefault("PYTHONUNBUFFERED", "1")
    if extra:
        env.update(dict(extra))
    return env


class _Worker:
    def __init__(self, slot: Slot, preload: str) -> None:
        self.slot = slot
        self.log = tempfile.NamedTemporaryFile(prefix="graphcheck-worker-", suffix=".log", delete=False)
        task_r, self.task_w = os.pipe()
        self.result_r, result_w = os.pipe()
        cmd = [sys.executable, "-m", "graphcheck.workers.child", "--tasks", str(task_r), "--results", str(result_w),
               "--preload", preload]
        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
                                         pass_fds=(task_r, result_w), env=child_env(slot.env), start_new_session=True)
        finally:
            os.close(task_r)
            os.close(result_w)
        os.set_blocking(self.result_r, False)
        self.buffer = b""
        self.ready = False
        self.task: Task | None = None
        self.deadline = 0.0
        self.log_offset = 0
        self.keys: set[str] = set()
        self.dead = False

    def send(self, task: Task) -> None:
        self.task = task
        self.deadline = time.monotonic() + task.timeout + (0.0 if self.ready else STARTUP_ALLOWANCE)
        try:
            self.log_offset = os.fstat(self.log.fileno()).st_size
        except OSError:
            self.log_offset = 0
        data = (json.dumps(dict(task.payload, kind=task.kind, id=task.id)) + "\n").encode()
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self.task_w, view):]
        except OSError:
            pass  # it died: the read side sees EOF and charges the task
        if task.affinity:
            self.keys.add(task.affinity)

    def read_events(self) -> tuple[list[dict[str, Any]], bool]:
        """Events now available, and whether the pipe reached EOF."""
        eof = False
        while True:
            try:
                chunk = os.read(self.result_r, 1 << 16)
            except BlockingIOError:
                break
            except OSError:
                eof = True
                break
            if not chunk:
                eof = True
                break
            self.buffer += chunk
        events = []
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            try:
                events.append(json.loads(line))
            except ValueError:
                continue
        return events, eof

    def tail(self) -> str:
        try:
            with open(self.log.name, "rb") as fh:
                fh.seek(0, os.SEEK_END)
                size = fh.tell()
                fh.seek(max(self.log_offset, size - STDERR_TAIL))
                return fh.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def kill(self) -> None:
        kill_group(self.proc)
        self.reap()

    def reap(self) -> int | None:
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            return None

    def close(self, graceful: bool = True) -> None:
        if not self.dead:
            self.dead = True
            try:
                os.close(self.task_w)  # EOF: the worker's loop ends
            except OSError:
                pass
            if graceful:
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.kill()
            else:
                self.kill()
            try:
                os.close(self.result_r)
            except OSError:
                pass
        self.log.close()
        try:
            os.unlink(self.log.name)
        except OSError:
            pass


class WorkerPool:
    """Workers on ``slots`` (one worker per slot). Use as a context manager, or call :meth:`close`."""

    def __init__(self, slots: list[Slot],
                 preload: str = "torch,triton,graphcheck.api,graphcheck.trace.runner,graphcheck.trace.launches",
                 ) -> None:
        if not slots:
            raise ValueError("a worker pool needs at least one slot")
        self.slots = list(slots)
        self.preload = preload
        self.workers: list[_Worker | None] = [_Worker(s, preload) for s in self.slots]
        self.queue: collections.deque[Task] = collections.deque()
        self.running = 0
        self._ids = 0
        self.started = time.monotonic()
        #: workers replaced after a fault (for statistics)
        self.replaced = 0

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close(graceful=exc[0] is None)

    def close(self, graceful: bool = True) -> None:
        for worker in self.workers:
            if worker is not None:
                worker.close(graceful)
        self.workers = [None] * len(self.slots)

    def compatible(self, slots: list[Slot]) -> bool:
        return sorted(self.slots, key=repr) == sorted(slots, key=repr)

    def grow(self, slots: list[Slot]) -> None:
        """Add slots up to ``slots`` (a longer plan of the same kind); their workers start when needed."""
        for slot in slots[len(self.slots):]:
            self.slots.append(slot)
            self.workers.append(None)

    def submit(self, task: Task) -> Task:
        self._ids += 1
        task.id = self._ids
        self.queue.append(task)
        return task

    # --- scheduling ---------------------------------------------------------------------
    def _pick(self, worker: _Worker) -> Task | None:
        for task in self.queue:
            if task.affinity and task.affinity in worker.keys:
                self.queue.remove(task)
                return task
        # a task whose module another idle-or-busy worker already holds can wait for it, unless
        # that would leave this worker idle while nothing else is queued for it
        return self.queue.popleft() if self.queue else None

    def _dispatch(self) -> None:
        for i, worker in enumerate(self.workers):
            if not self.queue:
                return
            if worker is None or worker.dead:
                worker = self.workers[i] = _Worker(self.slots[i], self.preload)
            if worker.task is None:
                task = self._pick(worker)
                if task is not None:
                    worker.send(task)
                    self.running += 1

    def _fault(self, i: int, kind: str) -> tuple[Task, Fault]:
        worker = self.workers[i]
        assert worker is not None and worker.task is not None
        task = worker.task
        if kind == "timeout":
            worker.kill()
            detail = f"no result within {task.timeout:g} s"
            code = worker.proc.returncode
        else:
            code = worker.reap()
            detail = describe_exit(code)
        fault = Fault(kind, detail, code, worker.tail(), task.layer, task.partial)
        worker.task = None
        worker.close(graceful=False)
        self.workers[i] = None
        self.replaced += 1
        self.running -= 1
        return task, fault

    def results(self) -> Iterator[tuple[Task, dict[str, Any] | Fault]]:
        """Run every queued task (and tasks submitted while iterating); yield each outcome as it comes."""
        while self.queue or self.running:
            self._dispatch()
            busy = [(i, w) for i, w in enumerate(self.workers) if w is not None and w.task is not None]
            if not busy:
                continue
            now = time.monotonic()
            wait = max(0.0, min(w.deadline for _, w in busy) - now)
            with selectors.DefaultSelector() as sel:
                for i, w in enumerate(self.workers):
                    if w is not None and not w.dead:
                        sel.register(w.result_r, selectors.EVENT_READ, i)
                ready = sel.select(timeout=min(wait, 5.0))
            for key, _ in ready:
                i = key.data
                worker = self.workers[i]
                if worker is None:
                    continue
                events, eof = worker.read_events()
                for event in events:
                    kind = event.get("event")
                    if kind == "ready":
                        worker.ready = True
                        if worker.task is not None:
                            worker.deadline = time.monotonic() + worker.task.timeout
                    elif worker.task is None or event.get("id") != worker.task.id:
                        continue
                    elif kind == "layer":
                        worker.task.layer = event.get("layer")
                        worker.task.partial = event.get("report")
                        worker.deadline = time.monotonic() + worker.task.timeout
                    elif kind == "done":
                        task = worker.task
                        worker.task = None
                        self.running -= 1
                        if "error" in event:
                            yield task, Fault("died", "the worker could not run the task", None,
                                              event.get("traceback", ""), task.layer, task.partial,
                                              error=event.get("error"))
                        else:
                            yield task, event.get("result") or {}
                        if event.get("retire"):
                            worker.close(graceful=False)
                            self.workers[i] = None
                if eof and self.workers[i] is not None:
                    worker = self.workers[i]
                    if worker.task is not None:
                        yield self._fault(i, "died")
                    else:
                        worker.close(graceful=False)
                        self.workers[i] = None
            now = time.monotonic()
            for i, worker in enumerate(self.workers):
                if worker is not None and worker.task is not None and now >= worker.deadline:
                    yield self._fault(i, "timeout")
