"""The pre-commit hook and the composite GitHub Action are well-formed and run what the docs say.

PyYAML is not a dependency, so the YAML is checked with a small reader for the
subset these files use (block mappings and lists, flow lists, plain and quoted
scalars, ``|`` blocks, ``>-`` folded blocks).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _scalar(text: str):
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        return [_scalar(v) for v in text[1:-1].split(",") if v.strip()]
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


def _strip_comment(line: str) -> str:
    return re.sub(r"\s+#.*$", "", line) if not line.lstrip().startswith("#") else ""


def load_yaml(text: str):
    lines = [(len(line) - len(line.lstrip()), line.strip()) for line in map(_strip_comment, text.splitlines()) if line.strip()]
    pos = 0

    def block(indent):
        nonlocal pos
        if lines[pos][1].startswith("- "):
            out = []
            while pos < len(lines) and lines[pos][0] == indent and lines[pos][1].startswith("- "):
                ind, content = lines[pos]
                item = content[2:]
                if not re.match(r"^[\w.-]+:(\s|$)", item):  # a scalar item
                    out.append(_scalar(item))
                    pos += 1
                    continue
                lines[pos] = (ind + 2, item)
                out.append(block(ind + 2))
            return out
        out = {}
        while pos < len(lines) and lines[pos][0] == indent and not lines[pos][1].startswith("- "):
            key, _, rest = lines[pos][1].partition(":")
            pos += 1
            rest = rest.strip()
            if rest in ("|", ">-", ">"):
                body = []
                while pos < len(lines) and lines[pos][0] > indent:
                    body.append(lines[pos][1])
                    pos += 1
                out[key] = ("\n" if rest == "|" else " ").join(body)
            elif rest:
                out[key] = _scalar(rest)
            elif pos < len(lines) and (lines[pos][0] > indent or lines[pos][1].startswith("- ")):
                out[key] = block(lines[pos][0])
            else:
                out[key] = None
        return out

    result = block(lines[0][0])
    assert pos == len(lines), f"unparsed YAML from: {lines[pos][1]!r}"
    return result


def test_pre_commit_hook():
    hooks = load_yaml((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert isinstance(hooks, list) and len(hooks) == 1
    (hook,) = hooks
    assert hook["id"] == "graphcheck-lint"
    assert hook["entry"] == "graphcheck lint" and hook["language"] == "python"
    assert hook["types_or"] == ["python", "c++", "cuda"]
    # the entry is a real command of the installed package
    from graphcheck.cli import build_parser

    assert build_parser().parse_args(["lint", "some_file.py"]).command == "lint"


def test_action_installs_runs_ci_and_uploads_sarif():
    action = load_yaml((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    assert all(step.get("shell") == "bash" for step in steps if "run" in step)
    scripts = "\n".join(step.get("run", "") for step in steps)
    assert 'python -m pip install "$GITHUB_ACTION_PATH"' in scripts
    assert 'graphcheck ci --base "$BASE" --sarif "$SARIF"' in scripts
    upload = [step for step in steps if step.get("uses", "").startswith("github/codeql-action/upload-sarif@")]
    assert len(upload) == 1 and upload[0]["with"]["sarif_file"] == "${{ inputs.sarif }}"
    assert set(action["inputs"]) == {"base", "sarif", "upload-sarif", "args", "audit", "torch-index-url"}
    # the linter alone when audit is off (no torch), the torch extra when the audit runs
    assert 'python -m pip install "$GITHUB_ACTION_PATH[torch]"' in scripts and "--no-audit" in scripts
    # every input the steps use is declared
    used = set(re.findall(r"inputs\.([a-z-]+)", (ROOT / "action.yml").read_text()))
    assert used <= set(action["inputs"])


def test_yaml_reader_rejects_what_it_cannot_read():
    import pytest

    assert load_yaml("a: 1\nb:\n  - x\n  - y: [p, 'q']\n") == {"a": "1", "b": ["x", {"y": ["p", "q"]}]}
    with pytest.raises(AssertionError):
        load_yaml("a: 1\n  b: 2\n")
