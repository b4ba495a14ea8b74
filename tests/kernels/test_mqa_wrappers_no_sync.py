"""The FP8 MQA wrappers never read a tensor value on the host, checked on the CPU too.

``test_mqa_logits.py``'s raw dispatch recorder can only watch the wrappers on a GPU
(the interpreter copies tensors to the host by design). graphcheck's trace recorder
keeps the interpreter's own work out of the record, so the same claim is checked here
without a GPU, next to a variant that does sync, to show the check can fail.
"""

from __future__ import annotations

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

from graphcheck.kernels import fp8_mqa_logits, fp8_paged_mqa_logits, mqa_logits, paged_mqa_logits  # noqa: E402
from graphcheck.trace.recorder import Recorder  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def _inputs():
    paged = paged_mqa_logits.make_inputs(2, 2, 16, 64, 16, 32, seed=2, device=DEVICE, lens_2d=True)
    flat = mqa_logits.make_inputs(6, 20, 16, 64, seed=2, device=DEVICE)
    return paged, flat


def _record(fn, inputs):
    tensors = {k: v for k, v in inputs.items() if isinstance(v, (torch.Tensor, tuple))}
    with Recorder(tensors, device_type=DEVICE) as rec:
        out = fn(**inputs)
    return rec, out


def test_wrappers_launch_once_and_never_sync():
    paged, flat = _inputs()
    for fn, inputs in ((fp8_paged_mqa_logits, paged), (fp8_mqa_logits, flat)):
        rec, out = _record(fn, inputs)
        assert rec.sync_events == [], [(e.code, e.op, e.line) for e in rec.sync_events]
        assert len(rec.launches) == 1, [launch.kernel for launch in rec.launches]
        assert torch.isfinite(out).any()


def _syncing_paged(**inputs):
    # what a careless wrapper does: size the work from the longest context on the host
    longest = int(inputs["context_lens"].max())
    return fp8_paged_mqa_logits(**inputs)[:, :longest]


def test_the_same_check_fails_a_wrapper_that_reads_a_length_on_the_host():
    paged, _ = _inputs()
    rec, _ = _record(_syncing_paged, paged)
    assert [e.code for e in rec.sync_events] == ["GC102"]
    assert len(rec.launches) == 1
