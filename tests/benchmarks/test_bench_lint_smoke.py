"""benchmarks/bench_lint.py runs end to end on a small tree, several trees at once, and records the load."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_lint.py"


def test_bench_lint_two_trees(tmp_path):
    a = tmp_path / "a"
    b = tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "k.cu").write_text("void run(float* x) {\n  k<<<1, 32>>>(x);\n}\n")
    (b / "m.py").write_text("import torch\n\ndef f(x):\n    return x.item()\n")
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--path", str(a), "--path", str(b), "--jobs", "1",
                           "--json", str(out)], capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    rows = data["rows"]
    assert len(rows) == 12  # 2 trees x 2 scopes x (cold, filling, cached)
    assert {r["tree"] for r in rows} == {str(a), str(b)}
    assert all(isinstance(r["load1"], float) and r["files"] == 1 for r in rows)
    cached = [r for r in rows if r["mode"] == "cached re-run"]
    assert all(r["from_cache"] == 1 for r in cached)
    assert data["env"]["paths"] == [str(a), str(b)]
    assert "load" in proc.stdout
