"""The C++ rules skip a regex scan when the text holds none of the words every match of that regex holds
(``cpp_rules._NEEDS``): a speed-up only, never a change in findings.

Checked two ways: every API name a guarded pattern spells matches only with one of its words in the match
(so a text without the words has no match), and ``lint_cpp`` gives the same findings with the guards off on
every C++ text the tests and the rule pages hold.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from graphcheck.lint import cpp_rules

ROOT = Path(__file__).resolve().parents[2]
_NOT_NAMES = {"at", "c10", "cuda", "torch", "const", "int", "void", "auto", "stream", "NULL", "nullptr"}


def _spelled_names(rx: re.Pattern[str]) -> list[str]:
    return sorted({w for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", rx.pattern) if len(w) > 2 and w not in _NOT_NAMES})


def _snippets(name: str) -> list[str]:
    return [f"void f(cudaStream_t s) {{ {name}(a, b, c, d, e, f, g, h, i); }}",
            f"void f() {{ at::cuda::{name}(); torch::cuda::{name}(); x.{name}(); p->{name}(); }}",
            f"int {name}(int x, cudaStream_t stream);", f"k(x, /* {name}_stream = */ nullptr);", f"int {name}() {{ }}",
            "k(x, /*stream=*/ nullptr, /* STREAM */ 0);"]


@pytest.mark.parametrize("rx", list(cpp_rules._NEEDS), ids=lambda rx: rx.pattern[:40])
def test_every_match_holds_a_needed_word(rx: re.Pattern[str]) -> None:
    words = cpp_rules._NEEDS[rx]
    matched = 0
    for name in [*_spelled_names(rx), "x"]:
        for text in _snippets(name):
            for m in rx.finditer(text):
                matched += 1
                assert any(w in m.group(0) for w in words), (rx.pattern, text, m.group(0))
    assert matched > 0  # the snippets reach the pattern


def test_no_scan_without_a_needed_word() -> None:
    text = "void f(cudaStream_t s) { launch(s); }"
    assert list(cpp_rules._finditer(cpp_rules._SYNC, text)) == []
    assert [m.group(1) for m in cpp_rules._finditer(cpp_rules._SYNC, text + " cudaDeviceSynchronize();")] == [
        "cudaDeviceSynchronize"]


def _cpp_texts() -> list[tuple[str, str]]:
    """C++ sources of the test fixtures, the rule pages' code blocks and the C++ tests' string constants."""
    out = [(str(p), p.read_text()) for p in sorted((ROOT / "tests/lint/fixtures/cpp").iterdir())]
    for page in sorted((ROOT / "docs/rules").glob("*.md")):
        for i, block in enumerate(re.findall(r"```(?:cpp|cuda|c\+\+|c)\n(.*?)```", page.read_text(), re.S)):
            out.append((f"{page.name}#{i}.cu", block))
    for test in sorted((ROOT / "tests/lint").glob("test_cpp_*.py")):
        if test.name == Path(__file__).name:
            continue
        for node in ast.walk(ast.parse(test.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and "(" in node.value \
                    and len(node.value) < 200_000:
                out.append((f"{test.name}:{node.lineno}.cu", node.value))
    return out


def test_same_findings_with_the_guards_off(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = _cpp_texts()
    guarded = [[f.to_dict() for f in cpp_rules.lint_cpp(src, path)] for path, src in texts]
    monkeypatch.setattr(cpp_rules, "_NEEDS", dict.fromkeys(cpp_rules._NEEDS, ("",)))  # "" is in every text
    unguarded = [[f.to_dict() for f in cpp_rules.lint_cpp(src, path)] for path, src in texts]
    assert guarded == unguarded
    assert len(texts) > 100 and sum(map(len, guarded)) > 25  # a real corpus with findings


def test_blank_text_is_the_per_character_substitution() -> None:
    texts = ["", "a", "\n", "ab\ncd\n\n", "\r\n x", "é\u2028\x85\n\t", "x" * 1000 + "\n" * 3]
    texts += [src for _, src in _cpp_texts()]
    for text in texts:
        assert cpp_rules.blank_text(text) == re.sub(r"[^\n]", " ", text)
