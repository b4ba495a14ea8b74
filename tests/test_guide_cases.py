"""The complete example in docs/guide/cases.md runs and reports what the page says."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guide" / "cases.md"


def _blocks(text):
    """(marker, code) for each fenced python block preceded by an HTML comment marker."""
    return re.findall(r"<!-- (file: \S+|run) -->\n```python\n(.*?)```", text, flags=re.S)


def test_guide_example_runs_and_matches_its_printed_report(tmp_path, monkeypatch):
    text = GUIDE.read_text()
    blocks = _blocks(text)
    files = [(m[len("file: "):], code) for m, code in blocks if m.startswith("file: ")]
    runs = [code for m, code in blocks if m == "run"]
    assert files and len(runs) == 1
    for name, code in files:
        (tmp_path / name).write_text(code)
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(runs[0], "guide_run", "exec"), {})
    printed = out.getvalue().splitlines()
    documented = re.search(r"which prints.*?```text\n(.*?)```", text, flags=re.S).group(1).splitlines()
    # the case lines and the code + line of each finding match the page exactly
    shape = [re.sub(r":.*", "", line) for line in printed]
    assert shape == [re.sub(r":.*", "", line) for line in documented]
    source = (tmp_path / "row_scale.py").read_text().splitlines()
    assert "int(lens.max())" in source[25 - 1] and "row_scale_kernel[grid]" in source[28 - 1]
