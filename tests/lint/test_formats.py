"""Report formats: text (plain and rich), JSON, SARIF 2.1.0, GitHub annotations."""

from __future__ import annotations

import json

import pytest

from graphcheck import rules
from graphcheck.findings import Finding
from graphcheck.report import FORMATS, Summary, Table, render
from graphcheck.report.github import escape_property


def make(code="GC101", path="pkg/ops.py", line=2, col=8, message="`.item()` of `lens[i]`", case=None, layer="static"):
    r = rules.get(code)
    return Finding(code, r.severity, message, path, line, col, "decode", r.hint, layer, case, {"op": "item"})


@pytest.fixture
def source_tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "ops.py").write_text("def decode(lens):\n    n = lens[i].item()\n    return n\n")
    from graphcheck.report import source

    source.clear()
    return tmp_path


def test_plain_text_has_location_source_caret_hint_and_summary(source_tree):
    findings = [make(), make("GC503", line=3, col=4, message="print")]
    out = render(findings, "text", summary=Summary(files_checked=3, lines=40, seconds=0.5))
    lines = out.splitlines()
    assert lines[0] == "pkg/ops.py:2:9 GC101 [error] `.item()` of `lens[i]` (in decode)"
    assert "  2 |     n = lens[i].item()" in lines
    caret = lines[lines.index("  2 |     n = lens[i].item()") + 1]
    assert caret.index("^") == lines[lines.index("  2 |     n = lens[i].item()")].index("lens")
    assert f"  hint: {rules.get('GC101').hint}" in lines
    assert "Findings by rule" in out and "GC101" in out and "GC503" in out
    assert "files checked: 3" in out
    assert "2 findings (1 error, 1 info) in 3 files" in out
    assert "\x1b[" not in out and "─" not in out and "│" not in out


def test_caret_lines_up_under_a_tab_indented_line(source_tree):
    (source_tree / "k.cu").write_text("void f(float* x) {\n\tif (x) {\n\t\tk<<<1, 32>>>(x);\n\t}\n}\n")
    out = render([make("GC201", path="k.cu", line=3, col=2, message="no stream")], "text")
    lines = out.splitlines()
    flagged = next(line for line in lines if "k<<<1, 32>>>(x);" in line)
    caret = lines[lines.index(flagged) + 1]
    assert caret.index("^") == flagged.index("k<<<")


def test_rich_text_uses_colour_and_a_table(source_tree):
    out = render([make()], "text", summary=Summary(files_checked=1), color=True, width=100)
    assert "\x1b[" in out
    assert "GC101" in out and "item" in out
    assert any(ch in out for ch in "─━┃│")


def test_text_extra_tables_and_case_rows(source_tree):
    table = Table("Cases", ("case", "verdict"), [("merge-small", "fail"), ("merge-big", "ok")])
    out = render([make(case="merge-small", layer="trace")], "text", summary=Summary(tables=[table]))
    assert "case merge-small" in out and "trace layer" in out
    assert "merge-big    ok" in out


def test_no_findings_text():
    assert render([], "text").strip().endswith("No findings.")


def test_json_is_an_array_of_finding_objects():
    data = json.loads(render([make(), make("GC201", path="k.cu", line=9, col=2)], "json"))
    assert isinstance(data, list) and len(data) == 2
    for key in ("code", "severity", "message", "path", "line", "col", "function", "hint", "layer"):
        assert key in data[0]
    assert data[1]["code"] == "GC201" and data[1]["line"] == 9
    assert [Finding.from_dict(d) for d in data] == [make(), make("GC201", path="k.cu", line=9, col=2)]


def check_sarif_structure(doc: dict) -> None:
    """The properties SARIF 2.1.0 requires, checked by hand (no network, no schema package)."""
    assert doc["version"] == "2.1.0"
    assert doc["$schema"].endswith("sarif-2.1.0.json")
    assert isinstance(doc["runs"], list) and doc["runs"]
    for run in doc["runs"]:
        driver = run["tool"]["driver"]
        assert isinstance(driver["name"], str) and driver["name"]
        ids = []
        for rule in driver.get("rules", []):
            assert isinstance(rule["id"], str)
            ids.append(rule["id"])
            for key in ("shortDescription", "fullDescription", "help"):
                if key in rule:
                    assert isinstance(rule[key]["text"], str)  # multiformatMessageString requires text
            assert rule["defaultConfiguration"]["level"] in ("none", "note", "warning", "error")
        assert len(ids) == len(set(ids))
        for base in run.get("originalUriBaseIds", {}).values():
            assert base["uri"].endswith("/")
        for result in run["results"]:
            assert "text" in result["message"]  # message is required
            assert result["level"] in ("none", "note", "warning", "error")
            if "ruleIndex" in result:
                assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
            for loc in result.get("locations", []):
                phys = loc["physicalLocation"]
                assert "uri" in phys["artifactLocation"]
                region = phys["region"]
                assert region["startLine"] >= 1 and region.get("startColumn", 1) >= 1
            for value in result.get("partialFingerprints", {}).values():
                assert isinstance(value, str)


def test_sarif_structure_and_content():
    findings = [make(), make("GC303", path="csrc/a b.cu", line=4, col=0, message="cudaMalloc")]
    doc = json.loads(render(findings, "sarif"))
    check_sarif_structure(doc)
    run = doc["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "graphcheck" and driver["informationUri"] and driver["version"]
    assert {r["id"] for r in driver["rules"]} == set(rules.RULES)
    first, second = run["results"]
    assert first["ruleId"] == "GC101" and first["level"] == "error"
    loc = first["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "pkg/ops.py", "uriBaseId": "%SRCROOT%"}
    assert loc["region"] == {"startLine": 2, "startColumn": 9}  # 1-based column
    assert second["level"] == "warning"
    assert second["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "csrc/a%20b.cu"
    assert first["partialFingerprints"] and rules.get("GC101").hint in first["message"]["text"]
    assert driver["rules"][first["ruleIndex"]]["help"]["markdown"].startswith("# GC101")


def test_sarif_info_is_note_and_empty_run_is_valid():
    doc = json.loads(render([make("GC503", message="print")], "sarif"))
    assert doc["runs"][0]["results"][0]["level"] == "note"
    empty = json.loads(render([], "sarif"))
    check_sarif_structure(empty)
    assert empty["runs"][0]["results"] == []


def test_github_annotations_and_escaping():
    out = render([make(), make("GC503", path="a,b:c.py", message="50% done\nnext"),
                  make("GC303", message="x")], "github").splitlines()
    assert out[0] == (f"::error file=pkg/ops.py,line=2,col=9,title=GC101 item::`.item()` of `lens[i]`. "
                      f"{rules.get('GC101').hint}")
    assert out[1].startswith("::notice file=a%2Cb%3Ac.py,line=2,col=9,title=GC503 host-side-effect::50%25 done%0Anext")
    assert out[2].startswith("::warning ")
    assert escape_property("a\r\n%:,") == "a%0D%0A%25%3A%2C"


def test_unknown_format():
    assert FORMATS == ("text", "concise", "json", "sarif", "github")
    with pytest.raises(ValueError):
        render([], "xml")
