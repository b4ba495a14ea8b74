"""The line collector's ``sys.monitoring`` set-up across several captures (Python 3.12+).

Events are set up once for the whole recording, not per capture: these tests
check that what each capture records is still exactly what ran in it, and that
nothing is left behind when the collector closes. No torch needed.
"""

from __future__ import annotations

import json
import sys

import pytest

from graphcheck.record.lines import LineCollector

pytestmark = pytest.mark.skipif(not hasattr(sys, "monitoring"), reason="sys.monitoring needs Python 3.12+")


def branchy(x):
    if x > 0:
        return x + 1
    return x - 1


def only_second(x):
    return x * 3


def caller(x):
    return branchy(x) + json.loads("1")


def _lines(hits, name):
    return next(lines for key, lines in hits.items() if key[1] == name)


def _names(hits):
    return {key[1] for key in hits}


def _capture(collector, fn, *args):
    collector.start()
    fn(*args)
    collector.stop()
    return collector.take()


def test_each_capture_records_the_functions_and_lines_that_ran_in_it():
    collector = LineCollector(backend="monitoring")
    try:
        first = branchy.__code__.co_firstlineno
        one = _capture(collector, caller, 1)
        two = _capture(collector, caller, -1)  # the other branch
        three = _capture(collector, only_second, 2)
    finally:
        collector.close()
    assert {"caller", "branchy"} <= _names(one) and "only_second" not in _names(one)
    assert _lines(one, "branchy") == {first + 1, first + 2}
    assert {"caller", "branchy"} <= _names(two)  # both ran in capture two; only the line new there is reported
    assert _lines(two, "branchy") == {first + 3} and _lines(two, "caller") == set()
    assert "only_second" in _names(three) and "branchy" not in _names(three)
    assert not any("json" in key[0] for hits in (one, two, three) for key in hits)


def test_nothing_is_recorded_between_captures():
    collector = LineCollector(backend="monitoring")
    try:
        _capture(collector, caller, 1)
        caller(5)
        only_second(1)
        assert collector.take() == {}
        again = _capture(collector, only_second, 1)
    finally:
        collector.close()
    assert "only_second" in _names(again) and "caller" not in _names(again)


def test_the_monitoring_tool_is_held_until_close():
    collector = LineCollector(backend="monitoring")
    _capture(collector, caller, 1)
    tool = collector._tool
    assert tool is not None and sys.monitoring.get_tool(tool) == "graphcheck-record"
    collector.close()
    assert sys.monitoring.get_tool(tool) is None and collector._tool is None


def test_a_collector_left_open_is_closed_by_the_next_one():
    stale = LineCollector(backend="monitoring")
    _capture(stale, caller, 1)
    fresh = LineCollector(backend="monitoring")
    try:
        hits = _capture(fresh, caller, 1)
    finally:
        fresh.close()
    assert stale._tool is None and fresh.backend == "monitoring"
    assert {"caller", "branchy"} <= _names(hits)


def test_lines_stay_on_between_captures_and_are_switched_off_at_close():
    collector = LineCollector(backend="monitoring")
    line = sys.monitoring.events.LINE
    try:
        _capture(collector, caller, 1)
        tool = collector._tool
        assert sys.monitoring.get_local_events(tool, branchy.__code__) == line  # not switched per capture
        assert sys.monitoring.get_local_events(tool, only_second.__code__) == 0  # never ran in a capture
    finally:
        collector.close()
    assert sys.monitoring.get_local_events(tool, branchy.__code__) == 0 and collector._seen == {}


def test_a_new_line_that_ran_between_captures_is_seen_when_a_capture_runs_it():
    collector = LineCollector(backend="monitoring")
    try:
        first = branchy.__code__.co_firstlineno
        _capture(collector, caller, 1)
        branchy(-1)  # `return x - 1` runs outside capture: disabled there, not recorded
        assert collector.take() == {} and id(branchy.__code__) in collector._dirty
        two = _capture(collector, caller, -1)
        three = _capture(collector, caller, 1)
    finally:
        collector.close()
    assert first + 3 in _lines(two, "branchy")
    # capture two's re-arming re-enabled `return x + 1` too, which capture three hits again: a known line
    assert "branchy" in _names(three) and _lines(three, "branchy") == {first + 2}


def test_an_engine_function_equal_to_a_library_one_is_recorded_on_its_own():
    # code objects compare (and hash) by content, not by file: a library function with the same
    # name, line and body as an engine function is equal to it, yet only the engine one counts
    source = "def twin(x):\n    if x > 0:\n        return x + 1\n    return x\n"
    library: dict = {}
    engine: dict = {}
    exec(compile(source, "/opt/venv/lib/python3.12/site-packages/torch/twin.py", "exec"), library)
    exec(compile(source, "/srv/engine/twin.py", "exec"), engine)
    assert library["twin"].__code__ == engine["twin"].__code__
    collector = LineCollector(backend="monitoring")
    try:
        collector.start()
        library["twin"](1)  # first: its file is library code, so it is switched off
        engine["twin"](1)
        library["twin"](-1)
        collector.stop()
        hits = collector.take()
    finally:
        collector.close()
    twins = {key: lines for key, lines in hits.items() if key[1] == "twin"}
    assert twins == {("/srv/engine/twin.py", "twin", 1): {2, 3}}
