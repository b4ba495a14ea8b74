"""Layer results and the GPU mode are typed values; JSON appears only in to_dict()."""

from __future__ import annotations

import json
import warnings

import pytest

from graphcheck.layers import GPU_CHOICES, GpuMode, LayerResult, LayerSkipped, LayerStatus


def test_gpu_mode_has_one_vocabulary_and_accepts_the_old_name_with_a_warning():
    assert GPU_CHOICES == ("auto", "off", "required")
    assert GpuMode.parse("AUTO") is GpuMode.AUTO and GpuMode.parse(GpuMode.OFF) is GpuMode.OFF
    with pytest.warns(DeprecationWarning, match="required"):
        assert GpuMode.parse("on") is GpuMode.REQUIRED
    with pytest.raises(ValueError, match="auto, off, required"):
        GpuMode.parse("maybe")


def test_gpu_off_never_asks_for_cuda(monkeypatch):
    import graphcheck.layers as layers

    monkeypatch.setattr(layers, "cuda_available", lambda: pytest.fail("probed CUDA for gpu=off"))
    assert GpuMode.OFF.use_cuda() is False


def test_gpu_required_without_cuda_raises(monkeypatch):
    import graphcheck.layers as layers

    monkeypatch.setattr(layers, "cuda_available", lambda: False)
    assert GpuMode.AUTO.use_cuda() is False
    with pytest.raises(RuntimeError, match="no CUDA device"):
        GpuMode.REQUIRED.use_cuda()


def test_layer_result_round_trips_through_json_and_says_whether_it_ran():
    skipped = LayerResult.skipped("no CUDA device: capture layer skipped", ["a note"])
    again = LayerResult.from_dict(json.loads(json.dumps(skipped.to_dict())))
    assert again == skipped and not again.ran and again.notes == ("a note",)
    assert LayerResult(LayerStatus.FAIL).ran and LayerResult("expected").status is LayerStatus.EXPECTED
    assert str(skipped) == "skipped: no CUDA device: capture layer skipped"


def test_layer_result_compares_with_the_old_strings():
    assert LayerResult(LayerStatus.PASS) == "pass" and LayerResult(LayerStatus.PASS) != "fail"
    assert LayerResult.skipped("why") == "skipped: why" and LayerResult.skipped("why") == "skipped"
    assert len({LayerResult(LayerStatus.PASS), LayerResult(LayerStatus.PASS)}) == 1


def test_layer_skipped_carries_its_reason():
    with pytest.raises(LayerSkipped) as info:
        raise LayerSkipped("no CUDA device")
    assert info.value.reason == "no CUDA device"


def test_check_accepts_the_gpu_mode_enum_and_required():
    import graphcheck
    from graphcheck.layers import cuda_available

    def fn(x):
        return x

    case = graphcheck.Case("ident", fn, lambda seed, device: {"x": 1})
    report = graphcheck.check(case, gpu=GpuMode.OFF, layers="capture")
    assert report.layers["capture"].status is LayerStatus.SKIPPED
    if not cuda_available():
        with pytest.raises(RuntimeError, match="no CUDA device"):
            graphcheck.check(case, gpu="required")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            with pytest.raises(RuntimeError):
                graphcheck.check(case, gpu="on")
