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
    # next_n = 2 and 1: main's launch without TMA (timed twice) and run s5-3's TMA variants; merge: the shipped
    # launch, timed twice
    names = {r["variant"] for r in rows if r["kernel"] == "paged" and r["shape"] == "B=2 n=2 ctx=150"}
    assert names == {"shipped", "tma keys", "tma keys 6 stages", "tma keys 24/SM", "tma keys (again)",
                     "shipped (again)"}
    names = {r["variant"] for r in rows if r["kernel"] == "paged" and r["shape"] == "B=2 n=1 ctx=100"}
    assert names == {"shipped", "tma keys", "shipped (again)"}
    names = {r["variant"] for r in rows if r["kernel"] == "merge"}
    assert names == {"shipped pdl", "shipped pdl (again)"}
