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
        two = _capture(collector, caller, -1)  # the other branch: lines are armed again for every capture
        three = _capture(collector, only_second, 2)
    finally:
        collector.close()
    assert {"caller", "branchy"} <= _names(one) and "only_second" not in _names(one)
    assert _lines(one, "branchy") == {first + 1, first + 2}
    assert _lines(two, "branchy") == {first + 1, first + 3}
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
