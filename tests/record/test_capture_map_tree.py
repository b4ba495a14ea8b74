"""``lint --capture-map`` across modules: what recorded functions call in other files (CPU only).

``data/tree-map.json`` is committed (``make_map.py`` regenerates it): two
simulated captures of ``fixture_tree/mini_engine``, where ``runner.decode`` and
``layers.attend`` ran under capture and the branch to ``layers.slow_path`` (which
calls ``util.clamp_rows``, a host read) was not taken.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MAP = os.path.join(HERE, "data", "tree-map.json")
TREE = os.path.join(HERE, "fixture_tree")
PKG = os.path.join(TREE, "mini_engine")


def _lint(*args):
    result = subprocess.run([sys.executable, "-m", "graphcheck", "lint", "--no-cache", "--format", "json", *args],
                            capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"})
    return result, json.loads(result.stdout or "[]")


def test_the_map_names_what_ran_and_not_the_branch_it_skipped():
    with open(MAP, encoding="utf-8") as fh:
        data = json.load(fh)
    recorded = {(f["path"], f["qualname"]) for f in data["functions"]}
    assert recorded == {("mini_engine/runner.py", "capture"), ("mini_engine/runner.py", "decode"),
                        ("mini_engine/layers.py", "attend")}


def test_a_host_read_two_modules_away_that_the_run_did_not_reach_is_kept_and_marked():
    result, findings = _lint("--capture-map", MAP)
    assert result.returncode == 1, result.stderr
    assert [(os.path.basename(f["path"]), f["function"], f["code"]) for f in findings] == [
        ("util.py", "clamp_rows", "GC101")]
    (finding,) = findings
    assert finding["evidence"]["capture_map"] == "not-reached"
    assert finding["evidence"]["called_from"] == "mini_engine.runner.decode"
    assert finding["evidence"]["call_chain"] == ["mini_engine.runner.decode", "mini_engine.layers.slow_path",
                                                 "clamp_rows"]
    assert "not reached by the recorded run" in finding["message"]


def test_functions_nothing_captured_calls_are_out_of_scope():
    # the same tree without the map: two more host reads, in functions no recorded function calls
    _, everything = _lint("--all-functions", TREE)
    assert {(f["function"], f["code"]) for f in everything} == {
        ("eager_only", "GC101"), ("clamp_rows", "GC101"), ("unrelated", "GC103")}


def test_paths_limit_the_findings_but_calls_are_followed_through_the_whole_tree():
    _, in_layers = _lint("--capture-map", MAP, os.path.join(PKG, "layers.py"))
    assert in_layers == []  # eager_only is not called by captured code; clamp_rows is in util.py
    _, in_util = _lint("--capture-map", MAP, os.path.join(PKG, "util.py"))
    assert [(f["function"], f["evidence"]["capture_map"]) for f in in_util] == [("clamp_rows", "not-reached")]
