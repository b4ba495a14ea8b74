"""The lint engine's process pool really runs chunks in worker processes, and a dead worker's chunks
are redone here (so "parallel equals serial" can tell a working pool from a silent fallback)."""

from __future__ import annotations

import multiprocessing
import os

import pytest

from graphcheck.lint import engine

PARENT = os.getpid()


def _tag_chunk(tasks, options):
    """Stand-in for engine._lint_chunk: one result per task, tagged with the process that ran it."""
    return [{"task": t, "pid": os.getpid()} for t in tasks]


def _die_in_a_worker(tasks, options):
    if os.getpid() != PARENT and "t007" in tasks:
        os._exit(3)  # a worker killed mid-chunk (the C-stack overflow case)
    return _tag_chunk(tasks, options)


pytestmark = pytest.mark.skipif(multiprocessing.get_start_method() != "fork",
                                reason="the stand-in reaches the workers through fork")


def _tasks(n=None):
    return [f"t{i:03d}" for i in range(n or engine.SERIAL_BELOW * 2)]


def test_chunks_run_in_worker_processes(monkeypatch):
    monkeypatch.setattr(engine, "_lint_chunk", _tag_chunk)
    results = engine._run_tasks(_tasks(), None, 2)
    assert sorted(r["task"] for r in results) == _tasks()
    assert {r["pid"] for r in results} - {PARENT}, "every chunk ran in this process: the pool did not run"


def test_few_files_stay_in_process(monkeypatch):
    monkeypatch.setattr(engine, "_lint_chunk", _tag_chunk)
    results = engine._run_tasks(_tasks(engine.SERIAL_BELOW - 1), None, 2)
    assert {r["pid"] for r in results} == {PARENT}


def test_a_dead_worker_costs_nothing_but_is_redone_here(monkeypatch):
    monkeypatch.setattr(engine, "_lint_chunk", _die_in_a_worker)
    results = engine._run_tasks(_tasks(), None, 2)
    assert sorted(r["task"] for r in results) == _tasks()  # nothing lost, nothing doubled
    redone = {r["task"] for r in results if r["pid"] == PARENT}
    assert "t007" in redone


def _report_thresholds(tasks, options):
    import gc

    return [{"task": t, "pid": os.getpid(), "thresholds": gc.get_threshold()} for t in tasks]


def test_workers_and_this_process_collect_less_often_and_the_thresholds_come_back(monkeypatch, tmp_path):
    import gc

    from graphcheck.lint import pool

    before = gc.get_threshold()
    with pool.fewer_collections():
        assert gc.get_threshold()[0] >= pool._GC_THRESHOLDS[0]
        monkeypatch.setattr(engine, "_lint_chunk", _report_thresholds)
        results = engine._run_tasks(_tasks(), None, 2)
    assert gc.get_threshold() == before
    workers = [r for r in results if r["pid"] != PARENT]
    assert workers and all(r["thresholds"][0] >= pool._GC_THRESHOLDS[0] for r in workers)
    monkeypatch.undo()
    (tmp_path / "m.py").write_text("def f(x):\n    return x\n")
    engine.lint_paths([tmp_path], use_cache=False, jobs=1)
    assert gc.get_threshold() == before  # lint_paths restores what the caller had


# --- one parse per file: the rules take the tree the project index parsed --------------------------------

KERNEL_FILE = """\
# file {i}
import torch
import triton


@triton.jit
def k{i}(x):
    pass


def launch{i}(x):
    k{i}[(1,)](x)
    return x.sum().item()
"""


def _parses(monkeypatch, log):
    """Patch ast.parse (the workers inherit it through fork) to note the first line of each source parsed."""
    import ast

    real = ast.parse

    def counting(source, *a, **k):
        if isinstance(source, str) and source.startswith("# file "):
            with open(log, "a") as fh:
                fh.write(source.split("\n", 1)[0] + "\n")
        return real(source, *a, **k)

    monkeypatch.setattr(ast, "parse", counting)


@pytest.mark.parametrize("jobs", [1, 2])
def test_each_file_is_parsed_once_and_the_findings_are_those_of_a_fresh_parse(tmp_path, monkeypatch, jobs):
    from graphcheck.config import Config
    from graphcheck.lint import pool

    src = tmp_path / "src"
    src.mkdir()
    n = engine.SERIAL_BELOW + 10  # enough files for the pool
    for i in range(n):
        (src / f"m{i:03d}.py").write_text(KERNEL_FILE.format(i=i))
    log = tmp_path / "parses.txt"
    _parses(monkeypatch, log)
    made: list[pool.Workers] = []

    class Seen(pool.Workers):
        def __init__(self, jobs):
            super().__init__(jobs)
            made.append(self)

    for all_functions in (False, True):
        log.write_text("")
        made.clear()
        monkeypatch.setattr(pool, "Workers", Seen)
        config = Config(root=src, all_functions=all_functions)
        found = engine.lint_paths([src], config, use_cache=False, jobs=jobs).findings
        parsed = log.read_text().split("\n")[:-1]
        # every file once (for its summary and its rules), but for those a worker left idle took from another
        (workers,) = made
        assert set(parsed) == {f"# file {i}" for i in range(n)}
        assert len(parsed) == n + workers.moved and workers.moved < n // 2
        assert {f.code for f in found} == {"GC101"} and len(found) == n
        # the same findings when nothing is kept (each file parsed again by the rules)
        log.write_text("")
        monkeypatch.setattr(pool, "HOLD_CHARS", 0)
        fresh = engine.lint_paths([src], config, use_cache=False, jobs=jobs).findings
        assert len(log.read_text().split("\n")[:-1]) == 2 * n
        assert [f.to_dict() for f in fresh] == [f.to_dict() for f in found]
        monkeypatch.undo()
        _parses(monkeypatch, log)
    assert pool._held == {}  # nothing left held in this process after the run


def test_a_kept_tree_is_given_only_for_the_same_source():
    import ast

    from graphcheck.lint import pool

    tree = ast.parse("x = 1\n")
    pool.keep_tree("/a.py", "x = 1\n", tree)
    assert pool.take_tree("/a.py", "x = 2\n") is None  # the file changed between the passes
    assert pool.take_tree("/a.py", "x = 1\n") is None  # given (or refused) once
    pool.keep_tree("/a.py", "x = 1\n", tree)
    assert pool.take_tree("/a.py", "x = 1\n") is tree
    pool.drop_trees()


def test_a_worker_keeps_the_trees_it_gave_until_it_exits_and_this_process_does_not(monkeypatch):
    import ast

    from graphcheck.lint import pool

    tree = ast.parse("x = 1\n")
    pool.keep_tree("/a.py", "x = 1\n", tree)
    assert pool.take_tree("/a.py", "x = 1\n") is tree and pool._given == []  # this process: freed after use
    monkeypatch.setattr(pool, "_in_worker", True)
    monkeypatch.setattr(pool.gc, "freeze", lambda: None)
    pool.keep_tree("/a.py", "x = 1\n", tree)
    assert pool.take_tree("/a.py", "x = 1\n") is tree and pool._given == [tree]  # freed by the worker's exit
    pool.drop_trees()
    assert pool._given == [] and pool._held == {}


def _pid_chunk(tasks):
    return [(t, os.getpid()) for t in tasks]


def test_tasks_go_back_to_the_worker_that_ran_them_and_an_idle_worker_takes_over():
    from graphcheck.lint import pool

    tasks = list(range(engine.SERIAL_BELOW * 4))
    with pool.Workers(2) as workers:
        first = dict(workers.map_chunks(_pid_chunk, tasks, place=lambda t: t))
        assert len(set(first.values())) == 2 and PARENT not in first.values()
        again = dict(workers.map_chunks(_pid_chunk, tasks, place=lambda t: t))
        # each task on the worker that ran it first, but for those an idle worker took from a busy one
        assert sum(again[t] != first[t] for t in tasks) == workers.moved < len(tasks) // 2
        # every task placed on one worker: the other takes some of them rather than wait
        workers.home = dict.fromkeys(tasks, 0)
        workers.moved = 0
        spread = dict(workers.map_chunks(_pid_chunk, tasks, place=lambda t: t))
        assert sorted(spread) == tasks and len(set(spread.values())) == 2 and workers.moved > 0
