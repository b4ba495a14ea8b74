"""The user guide stays true: its marked examples run and print what the pages show; its flags exist.

A page marks an example with HTML comments: ``<!-- file: NAME -->`` before a
fenced block writes that block to NAME in a temporary directory, and
``<!-- run: exit N -->`` before a ```console block runs each ``$ `` command
there and checks the exit code of the last one and the shown output lines
(in order; ``...`` stands for anything, alone on a line for any lines).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "guide"
PAGES = ["install.md", "lint.md", "audit.md", "pytest.md", "ci.md", "rules.md"]
_BLOCK = re.compile(r"<!-- (file: \S+|run: exit \d+) -->\n```[a-z]*\n(.*?)```", re.S)


def _examples(page):
    files, runs = [], []
    for marker, body in _BLOCK.findall((GUIDE / page).read_text()):
        if marker.startswith("file: "):
            files.append((marker[len("file: "):], body))
        else:
            runs.append((int(marker.split()[-1]), body))
    return files, runs


def _matches(expected: list[str], actual: list[str]) -> bool:
    pos = 0
    for line in expected:
        if line.strip() == "...":
            continue
        pattern = re.compile(".*".join(re.escape(part) for part in line.rstrip().split("...")) + r"\Z")
        while pos < len(actual) and not pattern.match(actual[pos].rstrip()):
            pos += 1
        if pos == len(actual):
            return False
        pos += 1
    return True


@pytest.mark.parametrize("page", [p for p in PAGES if _examples(p)[1]])
def test_page_examples_run_as_shown(page, tmp_path):
    files, runs = _examples(page)
    for name, body in files:
        (tmp_path / name).write_text(body)
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
               NO_COLOR="1", COLUMNS="200")
    env.pop("GITHUB_ACTIONS", None)
    for exit_code, body in runs:
        lines = body.splitlines()
        commands = [line[2:] for line in lines if line.startswith("$ ")]
        shown = [line for line in lines if not line.startswith("$ ")]
        assert commands, f"{page}: a run block without a command"
        for i, command in enumerate(commands):
            proc = subprocess.run(command, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True,
                                  timeout=300)
            if i < len(commands) - 1:
                assert proc.returncode == 0, (command, proc.stdout[-3000:], proc.stderr[-3000:])
            else:
                assert proc.returncode == exit_code, (command, proc.stdout[-3000:], proc.stderr[-3000:])
                assert _matches(shown, proc.stdout.splitlines()), (command, proc.stdout[-5000:])


def _all_flags() -> set[str]:
    from graphcheck.cli import build_parser

    flags: set[str] = set()

    def walk(parser):
        for action in parser._actions:
            flags.update(s for s in action.option_strings if s.startswith("--"))
            if isinstance(action.choices, dict):  # the subcommands
                for sub in action.choices.values():
                    walk(sub)

    walk(build_parser())
    plugin = (ROOT / "graphcheck" / "pytest_plugin.py").read_text()
    flags.update(re.findall(r'addoption\("(--[a-z-]+)"', plugin))
    return flags


# flags of other tools that the pages show
_FOREIGN = {"--index-url", "--depth", "--version", "--fix"}  # pip, git, ruff


def test_every_flag_the_pages_mention_exists():
    known = _all_flags() | _FOREIGN
    texts = [(GUIDE / p).read_text() for p in PAGES] + [(ROOT / "README.md").read_text()]
    mentioned = {flag.split("=")[0] for text in texts for flag in re.findall(r"(?<![\w-])--[a-z][a-z-]*", text)}
    assert mentioned, "no flags found: the pattern is broken"
    assert sorted(mentioned - known) == []


def test_the_guide_index_links_every_page():
    index = (ROOT / "docs" / "index.md").read_text()
    for page in PAGES + ["cases.md", "capture.md"]:
        assert f"(guide/{page})" in index


def test_pages_with_runnable_examples_keep_them():
    """A page that loses its run markers would silently drop out of the example test above."""
    assert {"lint.md", "audit.md", "pytest.md"} <= {p for p in PAGES if _examples(p)[1]}


def test_output_matcher():
    assert _matches(["...", "b ... d", "..."], ["a", "b c d", "e"])
    assert not _matches(["b ... d"], ["b c e"])
    assert not _matches(["x", "y"], ["y", "x"])
    assert {"--all-lines", "--graphcheck-gpu", "--fail-on", "--base"} <= _all_flags()
