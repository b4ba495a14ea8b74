"""lint_paths(progress=...) and map_chunks(done=...): the counts the audit's progress bar draws."""

from __future__ import annotations

import multiprocessing
import os

import pytest

from graphcheck.config import Config
from graphcheck.lint import pool
from graphcheck.lint.engine import lint_paths

PARENT = os.getpid()


def _echo(tasks):
    return list(tasks)


def _die_in_a_worker(tasks):
    if os.getpid() != PARENT and 7 in tasks:
        os._exit(3)
    return list(tasks)


@pytest.mark.parametrize("jobs, n", [(1, 10), (2, 10), (2, pool.SERIAL_BELOW * 3)])
def test_done_hears_of_every_task_once(jobs, n):
    if jobs > 1 and multiprocessing.get_start_method() != "fork":
        pytest.skip("the stand-in reaches the workers through fork")
    heard: list[int] = []
    results = pool.map_chunks(_echo, list(range(n)), jobs, done=heard.append)
    assert sorted(results) == list(range(n))
    assert sum(heard) == n and all(k > 0 for k in heard)


@pytest.mark.skipif(multiprocessing.get_start_method() != "fork", reason="the stand-in reaches the workers through fork")
def test_done_counts_the_tasks_redone_after_a_dead_worker():
    heard: list[int] = []
    n = pool.SERIAL_BELOW * 3
    results = pool.map_chunks(_die_in_a_worker, list(range(n)), 2, done=heard.append)
    assert sorted(results) == list(range(n)) and sum(heard) == n


def test_lint_paths_reports_every_file_fresh_and_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAPHCHECK_CACHE_DIR", str(tmp_path.parent / f"{tmp_path.name}-cache"))
    src = tmp_path / "src"
    src.mkdir()
    for i in range(5):
        (src / f"m{i}.py").write_text(f"def f{i}(x):\n    return x.item()\n")
    (src / "k.cu").write_text("void f(cudaStream_t s) { cudaStreamSynchronize(s); }\n")
    for _ in ("fresh", "cached"):
        calls: list[tuple[int, int]] = []
        result = lint_paths([str(src)], Config(root=tmp_path),
                            progress=lambda done, total, seen=calls: seen.append((done, total)))
        assert calls[0] == (0, 6) and calls[-1] == (6, 6)
        assert [done for done, _ in calls] == sorted(done for done, _ in calls)
        assert result.files_checked == 6
