"""Configuration discovery and validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphcheck.config import Config, ConfigError, discover, load_file, parse_selectors


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_nearest_pyproject_with_a_graphcheck_table_walking_up(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.graphcheck]\nselect = ['GC1']\n")
    write(tmp_path / "sub" / "pyproject.toml", "[project]\nname = 'x'\n")  # no table: keep walking
    write(tmp_path / "sub" / "deeper" / "m.py", "")
    config = discover(tmp_path / "sub" / "deeper" / "m.py")
    assert config.select == ("GC1",)
    assert config.root == tmp_path.resolve() and config.source == tmp_path.resolve() / "pyproject.toml"


def test_nearer_config_wins_and_graphcheck_toml_beats_pyproject(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.graphcheck]\nselect = ['GC1']\n")
    write(tmp_path / "a" / "pyproject.toml", "[tool.graphcheck]\nselect = ['GC2']\n")
    write(tmp_path / "a" / "graphcheck.toml", "select = ['GC3']\n")
    assert discover(tmp_path / "a").select == ("GC3",)
    (tmp_path / "a" / "graphcheck.toml").unlink()
    assert discover(tmp_path / "a").select == ("GC2",)


def test_all_keys_parse(tmp_path):
    p = write(tmp_path / "pyproject.toml", """
[tool.graphcheck]
select = ["GC1", "GC201"]
ignore = ["GC503"]
exclude = ["vendor", "*_pb2.py"]
entry-points = ["pkg.ops.decode"]
fail-on = "error"
all_functions = true
max-file-size = 1000

[tool.graphcheck.per-file-ignores]
"tests/*" = ["GC1"]
""")
    c = load_file(p)
    assert c.select == ("GC1", "GC201") and c.ignore == ("GC503",)
    assert c.exclude == ("vendor", "*_pb2.py") and c.entry_points == ("pkg.ops.decode",)
    assert c.fail_on == "error" and c.all_functions is True and c.max_file_size == 1000
    assert c.per_file_ignores == (("tests/*", ("GC1",)),)
    assert c.selects("GC101") and not c.selects("GC503") and not c.selects("GC301")


def test_standalone_config_file_keys_at_top_level(tmp_path):
    p = write(tmp_path / "ci" / "lint.toml", "ignore = ['GC2']\n")
    c = load_file(p)
    assert c.ignore == ("GC2",) and c.root == (tmp_path / "ci").resolve()


@pytest.mark.parametrize("body, words", [
    ("[tool.graphcheck]\nselcet = ['GC1']\n", ["selcet", "unknown key"]),
    ("[tool.graphcheck]\nselect = 'GC999'\n", ["select", "GC999"]),
    ("[tool.graphcheck]\nselect = ['XY1']\n", ["select", "XY1"]),
    ("[tool.graphcheck]\nignore = [1]\n", ["ignore"]),
    ("[tool.graphcheck]\nexclude = 3\n", ["exclude"]),
    ("[tool.graphcheck]\nfail-on = 'sometimes'\n", ["fail-on"]),
    ("[tool.graphcheck]\nall-functions = 'yes'\n", ["all-functions"]),
    ("[tool.graphcheck]\nper-file-ignores = ['x']\n", ["per-file-ignores"]),
    ("[tool.graphcheck\n", ["invalid TOML"]),
])
def test_bad_config_names_the_key_and_file(tmp_path, body, words):
    p = write(tmp_path / "pyproject.toml", body)
    with pytest.raises(ConfigError) as info:
        load_file(p)
    for word in words + [str(p)]:
        assert word in str(info.value)


def test_no_config_means_defaults(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    c = discover(tmp_path)
    assert c == Config(root=tmp_path)
    assert c.fail_on == "warning" and not c.all_functions


def test_selectors():
    assert parse_selectors("GC101, gc2", "--select") == ("GC101", "GC2")
    for bad in ["GC999", "GC9", "E501", "GC1x"]:
        with pytest.raises(ConfigError):
            parse_selectors(bad, "--select")


def test_missing_config_file(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_file(tmp_path / "nope.toml")


def test_globs_written_with_a_leading_dot_slash_still_apply(tmp_path, monkeypatch):
    from graphcheck.lint.engine import lint_paths

    write(tmp_path / "pyproject.toml", """
[tool.graphcheck]
exclude = ["./vendor"]

[tool.graphcheck.per-file-ignores]
"./tests/*" = ["GC101"]
""")
    bad = "import torch\n@torch.library.custom_op('m::f', mutates_args=())\ndef f(x: torch.Tensor) -> float:\n    return x.item()\n"
    for folder in ("vendor", "tests", "src"):
        write(tmp_path / folder / "ops.py", bad)
    monkeypatch.chdir(tmp_path)
    config = discover(tmp_path)
    assert config.exclude == ("vendor",) and config.per_file_ignores == (("tests/*", ("GC101",)),)
    result = lint_paths(["."], config, use_cache=False)
    assert [(f.path, f.code) for f in result.findings] == [("src/ops.py", "GC101")]
