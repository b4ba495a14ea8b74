"""The audit-time benchmark runs end to end on one zoo file and finds the same verdicts in process and on the pool."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_audit_smoke(tmp_path):
    out = tmp_path / "audit.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_audit.py"),
                           "examples/hazards/item_in_wrapper.py", "--workers", "1", "--json", str(out)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    data = json.loads(out.read_text())
    assert data["same_verdicts"] and [r["config"] for r in data["rows"]] == ["in-process", "pool, 1 workers"]
    assert all(r["cases"] == 2 and r["median_wall_s"] > 0 for r in data["rows"])
