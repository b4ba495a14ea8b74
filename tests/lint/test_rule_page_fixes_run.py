"""The rule pages' recommended fixes are safe beyond the static layer too: GC108's fix runs under the
trace recorder without a host sync (its earlier fix, bincount, is itself GC112) and gives the answer
the hazard computed."""

from __future__ import annotations

import re
from pathlib import Path

import torch

from graphcheck.trace.recorder import Recorder

DOCS = Path(__file__).resolve().parents[2] / "docs" / "rules"
_BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def _fix_function(code: str, name: str):
    page = (DOCS / f"{code}.md").read_text()
    (block,) = _BLOCK.findall(page.split("## Fix", 1)[1])
    namespace = {"torch": torch}
    exec(compile(block, f"{code}_fix.py", "exec"), namespace)
    return namespace[name]


def test_gc108_fix_does_not_sync_and_matches_unique():
    used_experts = _fix_function("GC108", "used_experts")
    topk_ids = torch.tensor([[1, 3], [3, 6], [0, 1]])
    with Recorder({"topk_ids": topk_ids}) as rec:
        mask = used_experts(topk_ids, 8)
    assert rec.sync_events == [], [(e.code, e.op) for e in rec.sync_events]
    assert mask.nonzero().flatten().tolist() == torch.unique(topk_ids).tolist()


def test_the_recorder_would_have_caught_the_old_bincount_fix():
    topk_ids = torch.tensor([[1, 3], [3, 6]])
    with Recorder({"topk_ids": topk_ids}) as rec:
        torch.bincount(topk_ids.flatten(), minlength=8)
    assert {e.code for e in rec.sync_events} == {"GC112"}
