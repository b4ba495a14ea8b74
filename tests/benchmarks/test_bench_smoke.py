"""The MQA benchmark script runs end to end on tiny shapes (CPU, Triton interpreter)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_mqa_logits.py"


def test_mqa_benchmark_smoke_fills_every_column(tmp_path):
    out = tmp_path / "rows.json"
    env = dict(os.environ, TRITON_INTERPRET="1", CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run([sys.executable, str(SCRIPT), "--smoke", "--no-compile", "--json", str(out)],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads(out.read_text())["rows"]
    paged = [r for r in rows if r["kernel"] == "paged"]
    mqa = [r for r in rows if r["kernel"] == "mqa"]
    assert [r["shape"] for r in paged] == ["B=2 n=1 ctx=40", "B=2 n=2 ctx=60"] and len(mqa) == 1
    for row in paged:
        for key in ("ours_ms", "ours_unclean_ms", "ours_event_ms", "host_us", "floor_us", "frac_floor", "eager_ms"):
            assert isinstance(row.get(key), float) and row[key] > 0, (key, row)
    for key in ("ours_ms", "TFLOPS", "host_us", "eager_ms"):
        assert isinstance(mqa[0].get(key), float) and mqa[0][key] > 0, (key, mqa[0])
