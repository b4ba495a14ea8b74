"""Memos of the lint give the answers of the uncached computations they replace.

- facts of a function's own subtree kept on its node (``scope.node_memo``: own nodes, first-use ranges, branch
  ranges, ``may_open``), shared by the index pass and the rules pass when a worker keeps the tree;
- a function's own nodes sorted by kind in one pass (``FuncInfo.group``);
- the name splitter of the platform and timing tests (``coldpaths.name_words``, ``platform_word``,
  ``timing_name``).
"""

from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path

import pytest

from graphcheck.config import DEFAULT_PREFILL_FLAGS
from graphcheck.lint import coldpaths
from graphcheck.lint.python_rules import lint_python
from graphcheck.lint.scope import (
    NODE_GROUPS,
    ModuleIndex,
    may_open,
    node_memo,
    own_nodes_of,
    own_statement_nodes,
)
from graphcheck.lint.summary import summarize

ROOT = Path(__file__).resolve().parents[2]


def _python_sources() -> list[tuple[str, str]]:
    """The Python fixtures, corpus cases and examples, the lint package itself, and every string constant of
    the cold-path and role tests that parses as a module with a function."""
    out = []
    for pattern in ("tests/lint/fixtures/python/*.py", "tests/corpus/**/*.py", "examples/**/*.py",
                    "graphcheck/lint/*.py"):
        out += [(str(p), p.read_text()) for p in sorted(ROOT.glob(pattern))]
    for path in sorted((ROOT / "tests/lint").glob("test_*.py")):
        test = path.name
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and "def " in node.value:
                try:
                    ast.parse(node.value)
                except SyntaxError:
                    continue
                out.append((f"{test}:{node.lineno}.py", node.value))
    return out


SOURCES = _python_sources()


def _functions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def test_node_facts_are_those_of_the_uncached_walks() -> None:
    counts = {"first_use": 0, "branches": 0, "may_open": 0}
    for _, source in SOURCES:
        tree, fresh = ast.parse(source), ast.parse(source)
        index = ModuleIndex(tree, source)
        fresh_fns = _functions(fresh)
        by_node = {id(info.node): info for info in index.functions}
        for fn, other in zip(_functions(tree), fresh_fns, strict=True):
            info = by_node[id(fn)]
            own = own_statement_nodes(other.body)
            assert [ast.dump(n) for n in info.own_nodes()] == [ast.dump(n) for n in own]
            assert own_nodes_of(fn) is info.own_nodes()  # one walk, shared
            first = coldpaths.first_use_ranges(other, own)
            assert info.first_use() == first and info.first_use() is info.first_use()
            counts["first_use"] += bool(first)
            for prefill, roles in itertools.product(((), DEFAULT_PREFILL_FLAGS), (False, True)):
                ranges = coldpaths.branch_ranges(own, prefill, roles)
                assert info.branches(prefill, roles) == ranges
                counts["branches"] += bool(ranges)
            opens = may_open(own)
            assert info.may_open() == opens
            counts["may_open"] += opens
            for name in {g for groups in NODE_GROUPS.values() for g in groups}:
                types = tuple(t for t, groups in NODE_GROUPS.items() if name in groups)
                assert info.group(name) == [n for n in info.own_nodes() if isinstance(n, types)]
    assert len(SOURCES) > 100 and all(n > 3 for n in counts.values()), counts  # the corpus exercises each fact


@pytest.mark.parametrize("all_functions", [False, True])
def test_a_tree_the_summary_walked_lints_as_a_fresh_parse(all_functions: bool) -> None:
    """The rules read the facts the summary left on a kept tree: the same findings as on a fresh parse."""
    found = 0
    for path, source in SOURCES:
        tree = ast.parse(source)
        summarize(source, "m", False, tree=tree)
        assert any(node_memo(fn) for fn in _functions(tree)) or not _functions(tree)
        kept = [f.to_dict() for f in lint_python(source, path, all_functions=all_functions, tree=tree)]
        fresh = [f.to_dict() for f in lint_python(source, path, all_functions=all_functions)]
        assert kept == fresh, path
        found += len(kept)
    assert found > 50


def _name_words_uncached(name: str) -> list[str]:
    spaced = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", spaced)
    return [w.lower() for w in re.split(r"[_\-.]+", spaced) if w]


def test_name_words_memo_answers_as_the_splitter() -> None:
    names = {n.id for _, source in SOURCES for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
    names |= {"IS_NPU", "isXpuAvailable", "HTTPServer", "time_kernel", "s.flush_cache_", "do-bench", "", "__x__"}
    for name in sorted(names):
        assert coldpaths.name_words(name) == _name_words_uncached(name)
        assert coldpaths.name_words(name) is not coldpaths.name_words(name)  # a list the caller may change
    assert coldpaths.platform_word("IS_NPU_AVAILABLE") == "npu" and coldpaths.timing_name("time_kernel")
    assert coldpaths.platform_word("cpu_offload") is None and not coldpaths.timing_name("timeline")
