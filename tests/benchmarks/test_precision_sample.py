"""benchmarks/precision_sample.py: the stratified draw, the top-up rule, verdict carry-over and the tables."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "precision_sample.py"
_spec = importlib.util.spec_from_file_location("precision_sample", SCRIPT)
assert _spec is not None and _spec.loader is not None
ps = importlib.util.module_from_spec(_spec)
sys.modules["precision_sample"] = ps
_spec.loader.exec_module(ps)


def _f(path: str, line: int, code: str, severity: str = "error", root: str = "/t/a") -> dict:
    return {"code": code, "severity": severity, "message": f"{code} at {line}", "path": f"{root}/{path}",
            "line": line, "col": 1}


def _tree(name: str, findings: list[dict], root: str = "/t/a") -> ps.Tree:
    return ps.Tree(name, f"org/{name}@abc1234", findings=findings, root=root)


def test_errors_only_no_tool_codes_one_per_line_relative_paths():
    tree = _tree("a", [_f("x.py", 3, "GC101"), _f("x.py", 3, "GC101"), _f("x.py", 4, "GC101", "warning"),
                       _f("y.py", 1, "GC001"), _f("k.cu", 9, "GC110")])
    errs = ps.error_findings(tree)
    assert sorted((f.path, f.line, f.code) for f in errs) == [("k.cu", 9, "GC110"), ("x.py", 3, "GC101")]
    assert [f.is_cpp for f in sorted(errs, key=lambda f: f.path)] == [True, False]


def test_round_robin_largest_code_first_and_two_per_file():
    # GC101: 6 findings all in one file; GC301: 3 in distinct files; GC402: 1.
    findings = [_f("big.py", i, "GC101") for i in range(1, 7)]
    findings += [_f(f"s{i}.py", 1, "GC301") for i in range(3)] + [_f("z.py", 5, "GC402")]
    order = ps.draw_order(ps.error_findings(_tree("a", findings)))
    codes = [f.code for f in order]
    assert codes[:3] == ["GC101", "GC301", "GC402"]  # one turn per code, largest first
    assert sum(1 for f in order if f.path == "big.py") == 2  # the file cap passes over the other four
    assert len(order) == 2 + 3 + 1
    # a fixed seed: the same input always gives the same order, whatever the input order was
    again = ps.draw_order(ps.error_findings(_tree("a", list(reversed(findings)))))
    assert [f.key for f in again] == [f.key for f in order]


def test_sample_is_a_prefix_of_the_draw_order_and_top_up_raises_the_cap():
    trees = [_tree(n, [_f(f"m{i}.py", i, f"GC1{i % 3:02d}", root=f"/t/{n}") for i in range(30)], root=f"/t/{n}")
             for n in ("a", "b", "c")]
    sample, cap, eligible = ps.draw_sample(trees)
    # 3 trees x 12 = 36 < 60: the cap rises to 20 (3 x 20 = 60)
    assert cap == 20 and len(sample) == 60 and eligible == {"a": 30, "b": 30, "c": 30}
    order_a = ps.draw_order(ps.error_findings(trees[0]))
    assert [f.key for f in sample if f.repo == "a"] == [f.key for f in order_a[:20]]
    # six trees of 12+ each: no top-up
    six = [_tree(n, [_f(f"m{i}.py", 1, "GC101", root=f"/t/{n}") for i in range(15)], root=f"/t/{n}")
           for n in "abcdef"]
    assert ps.draw_sample(six)[1] == 12
    # too few findings anywhere: the cap stops rising when nothing is left
    small = [_tree("a", [_f("m.py", 1, "GC101")])]
    sample, cap, _ = ps.draw_sample(small)
    assert len(sample) == 1 and cap == 12


def test_verdicts_carry_over_new_rows_unjudged_and_tables(tmp_path):
    tsv = tmp_path / "v.tsv"
    tsv.write_text("repo\tpath\tline\tcode\tverdict\treason\n"
                   "a\tx.py\t3\tGC101\tTRUE\treal sync in forward\n"
                   "a\tk.cu\t9\tGC110\tFALSE\tnot | a hazard\n"
                   "a\told.py\t1\tGC301\tPLAUSIBLE\tkept although not drawn\n")
    tree = _tree("a", [_f("x.py", 3, "GC101"), _f("k.cu", 9, "GC110"), _f("k.cu", 12, "GC110"),
                       _f("w.py", 2, "GC401", "warning")])
    sample, cap, eligible = ps.draw_sample([tree])
    table = ps.read_verdicts(tsv)
    assert ps.merge_verdicts(table, sample) == 1
    ps.write_verdicts(tsv, table, ["a"])
    again = ps.read_verdicts(tsv)
    assert again[("a", "x.py", 3, "GC101")].verdict == "TRUE"
    assert again[("a", "k.cu", 12, "GC110")].verdict == "UNJUDGED"
    assert again[("a", "old.py", 1, "GC301")].reason == "kept although not drawn"
    md = ps.render([tree], sample, cap, eligible, again)
    assert "| a | 3 | 1 | 0 | GC110 2, GC101 1 | GC401 1 | 2 | 0 | - |" in md
    assert "TRUE 1/3 (33%), PLAUSIBLE 0/3 (0%), FALSE 1/3 (33%), UNJUDGED 1/3" in md
    assert "**not met**" in md and "below 60" in md
    assert "| 1 | org/a@abc1234 |" in md and "not \\| a hazard" in md
    assert "| GC110 | 2 | 0 | 0 | 1 | 1 |" in md
    assert "Rules with more than one FALSE in the sample: none." in md


def test_rules_with_more_than_one_false_and_bar_met():
    rows = [ps.Finding("a", f"m{i}.py", 1, "GC101") for i in range(60)]
    table = {f.key: ps.Verdict("TRUE", "") for f in rows}
    assert "**met**" in ps.summary(rows, table)
    for f in rows[:2]:
        table[f.key] = ps.Verdict("FALSE", "")
    assert ps.rules_with_false(rows, table) == {"GC101": 2}
    assert "**not met**" in ps.summary(rows, table)


def test_command_line_reads_saved_reports(tmp_path):
    jdir = tmp_path / "json"
    jdir.mkdir()
    (jdir / "a.json").write_text(json.dumps([_f("x.py", 3, "GC101", root="/t/a")]))
    (jdir / "a.meta.json").write_text(json.dumps({"wall_s": 1.5, "root": "/t/a"}))
    tsv = tmp_path / "v.tsv"
    out = tmp_path / "t.md"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--tree", "a", "/t/a", "org/a@1", "--json-dir", str(jdir),
                           "--verdicts", str(tsv), "--update-verdicts", "--markdown", str(out)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "a\tx.py\t3\tGC101\tUNJUDGED\t" in tsv.read_text()
    assert "| a | 1 | 0 | 0 | GC101 1 | - | 0 | 0 | 1.5 |" in out.read_text()
    helped = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, timeout=60,
                            check=False)
    assert helped.returncode == 0 and "20261201" in helped.stdout and "UNJUDGED" in helped.stdout
