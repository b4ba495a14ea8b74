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
