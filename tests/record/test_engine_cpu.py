"""The example engine's decode step recorded on the CPU (Triton's interpreter, simulated captures).

The safe decoder records every function and both kernels with no finding; the
broken decoder's host value frozen into ``merge_attn_states``' scalar is
reported at its line (its other two hazards need a GPU: tests/record/test_record_gpu.py).
"""

from __future__ import annotations

import os
import sys

import pytest

torch = pytest.importorskip("torch")

ENGINE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples", "engine")


@pytest.fixture(scope="module")
def engine_modules():
    sys.path.insert(0, ENGINE)
    try:
        import broken_model
        import engine
        import kv_cache
        import model

        yield kv_cache, model, broken_model, engine
    finally:
        sys.path.remove(ENGINE)


def _record(decoder_cls, kv_cache, engine):
    from graphcheck.record.session import Session
    from graphcheck.trace.launches import interpreter_route

    cache = kv_cache.PagedKVCache(4, 128, 64, 16, torch.device("cpu"))
    decoder = decoder_cls(cache)
    session = Session(root=os.path.dirname(ENGINE))
    # requests with a prefix (>= 256 cached tokens): 3 of 4, then 2 of 2; no shape goes 4 -> 3, 2 -> 2
    lens = {4: [300, 500, 700, 20], 2: [300, 500]}
    with interpreter_route():
        for bs in (4, 2):
            cache.set_lengths(lens[bs])
            session.begin(None, "global")
            decoder.decode(torch.ones(bs, 256), bs)
            session.end(None, None)
    session.close()
    return session


def test_the_decode_step_is_recorded_function_by_function(engine_modules):
    kv_cache, model, _, engine = engine_modules
    session = _record(model.ToyDecoder, kv_cache, engine)
    names = {key[1] for key in session.functions}
    assert {f"ToyDecoder.{m}" for m in ("decode", "query", "index_scores", "prefix_part", "suffix_part", "merge")} <= names
    assert {"fp8_paged_mqa_logits", "merge_attn_states"} <= names
    for cap in session.captures:
        assert [launch.kernel for launch in cap.launches] == ["_paged_mqa_logits_kernel", "_merge_attn_states_kernel"]
    assert session.all_findings() == []


def test_the_frozen_host_scalar_is_reported_at_its_line(engine_modules):
    kv_cache, model, broken_model, engine = engine_modules

    class CpuBrokenDecoder(broken_model.BrokenToyDecoder):
        index_scores = model.ToyDecoder.index_scores  # the default-stream hazard needs a GPU

    session = _record(CpuBrokenDecoder, kv_cache, engine)
    (finding,) = session.all_findings()
    source = open(os.path.join(ENGINE, "broken_model.py"), encoding="utf-8").read().splitlines()
    assert finding.code == "GC402" and finding.path == os.path.join(ENGINE, "broken_model.py")
    assert source[finding.line - 1].strip().startswith("merge_attn_states(out")
    assert finding.evidence["argument"] == "limit_value" and finding.evidence["values"] == [3, 2]
