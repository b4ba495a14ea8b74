"""The kernel-variant sweep script runs end to end on tiny shapes (CPU, Triton interpreter):
every variant it would time is first checked against the float64 reference and passes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "sweep_kernel_variants.py"


def test_sweep_smoke_checks_and_times_every_variant(tmp_path):
    out = tmp_path / "rows.json"
    env = dict(os.environ, TRITON_INTERPRET="1", CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run([sys.executable, str(SCRIPT), "--smoke", "--json", str(out)],
                          capture_output=True, text=True, timeout=900, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads(out.read_text())["rows"]
    kinds = {r["kernel"] for r in rows}
    assert kinds == {"merge", "paged"}, kinds
    for row in rows:
        assert not row.get("error"), row
        assert str(row.get("oracle", "")).startswith("ok"), row
        assert isinstance(row.get("us"), float) and row["us"] > 0, row
    # next_n = 2 and 1: the shipped launch (timed twice) and run s4-4's head-dot variants; merge: the
    # shipped launch, timed twice
    names = {r["variant"] for r in rows if r["kernel"] == "paged" and r["shape"] == "B=2 n=2 ctx=60"}
    assert names == {"shipped", "head-dot bf16", "head-dot bf16w2", "head-dot bf16 4 stages", "head-dot bf16 8/SM",
                     "head-dot bf16 32/SM", "one dot r2 head-dot bf16", "shipped (again)"}
    names = {r["variant"] for r in rows if r["kernel"] == "paged" and r["shape"] == "B=2 n=1 ctx=40"}
    assert names == {"shipped", "head-dot bf16", "split r1 head-dot bf16", "head-dot bf16w2", "shipped (again)"}
    names = {r["variant"] for r in rows if r["kernel"] == "merge"}
    assert names == {"shipped pdl", "shipped pdl (again)"}
