"""Unit tests of the Python static rules: aliases, scope, findings, edge cases."""

from __future__ import annotations

import textwrap

import pytest

from graphcheck import rules
from graphcheck.lint.python_rules import lint_python

KERNEL = '''
import torch
import triton
import triton.language as tl

@triton.jit
def kern(x_ptr, n, BLOCK: tl.constexpr):
    pass
'''


def lint(source: str, **kwargs) -> list:
    return lint_python(textwrap.dedent(source), "mod.py", **kwargs)


def codes(source: str, **kwargs) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in lint(source, **kwargs)]


# -- the finding itself ------------------------------------------------------

def test_finding_fields_come_from_catalog_and_name_the_construct():
    src = KERNEL + textwrap.dedent('''
        def decode(q, context_lens, out):
            for i in range(q.shape[0]):
                n = context_lens[i].item()
                kern[(1,)](q, 1, BLOCK=64)
    ''')
    (finding,) = lint_python(src, "pkg/attn.py")
    rule = rules.get("GC101")
    assert finding.code == "GC101"
    assert finding.line == src.splitlines().index("        n = context_lens[i].item()") + 1
    assert finding.col == 12
    assert finding.severity == rule.severity and finding.hint == rule.hint
    assert finding.layer == "static" and finding.path == "pkg/attn.py" and finding.function == "decode"
    assert finding.message == ("`context_lens[i].item()` synchronizes with the host inside `decode`, "
                               "which launches Triton kernel `kern`")
    assert finding.evidence["construct"] == "context_lens[i].item()"


def test_column_counts_characters_not_utf8_bytes():
    src = KERNEL + 'def f(x):\n    kern[(1,)](x, 1, BLOCK=1)\n    s = "é"; v = x.item()\n'
    (finding,) = lint_python(src, "m.py")
    assert finding.col == len('    s = "é"; v = ')


def test_finding_on_start_line_of_a_multiline_expression():
    src = KERNEL + textwrap.dedent('''
        def f(x):
            kern[(1,)](x, 1, BLOCK=1)
            v = (x
                 .sum()
                 .item())
    ''')
    line = src.splitlines().index("    v = (x") + 1
    assert [(f.code, f.line) for f in lint_python(src, "m.py")] == [("GC101", line)]


def test_nested_function_qualname():
    src = KERNEL + textwrap.dedent('''
        class Attn:
            def forward(self, x):
                def inner():
                    return x.item()
                kern[(1,)](x, 1, BLOCK=1)
                return inner()
    ''')
    (finding,) = lint_python(src, "m.py")
    assert finding.function == "Attn.forward.<locals>.inner"
    assert "defined inside `Attn.forward`" in finding.message


# -- alias resolution ----------------------------------------------------------

def test_import_aliases_resolve():
    src = '''
    import torch as t
    from torch import nonzero
    import triton.language as tl2
    from triton import jit
    import torch.cuda as tc
    from torch.cuda import synchronize as sync

    @jit
    def kern(x_ptr, B: tl2.constexpr):
        pass

    def f(x: t.Tensor, lens):
        kern[(1,)](x, B=lens.sum())
        nonzero(x)
        t.nonzero(x)
        tc.synchronize()
        sync()
        t.cuda.Stream()
    '''
    assert codes(src) == [("GC403", 14), ("GC105", 15), ("GC105", 16), ("GC110", 17), ("GC110", 18), ("GC205", 19)]


def test_unimported_lookalikes_are_not_resolved():
    src = '''
    import triton
    @triton.jit
    def kern(x_ptr):
        pass
    def f(x, random, np):
        kern[(1,)](x)
        random.random()
        np.random.rand(3)
        nonzero(x)
    '''
    assert codes(src) == []


def test_triton_autotune_via_alias_and_constexpr_via_module_path():
    src = '''
    import triton as tr
    import triton.language
    @tr.autotune(configs=[], key=["n"])
    @tr.jit
    def kern(x_ptr, n, B: triton.language.constexpr):
        pass
    def f(x, lens):
        kern[(1,)](x, 4, B=lens.max())
    '''
    assert sorted(codes(src)) == [("GC403", 9), ("GC404", 9)]


# -- scope ---------------------------------------------------------------------

SETUP = KERNEL + '''
def helper(x):
    return x.item()

def unreached(x):
    return x.item()

class Model:
    def __init__(self, x):
        self.n = x.item()

    def prepare(self, x):
        return x.item()

    def forward(self, x):
        kern[(1,)](x, 1, BLOCK=1)
        self.prepare(x)
        return helper(x)

top = torch.zeros(1).item()
'''


def _line(src: str, text: str, nth: int = 0) -> int:
    lines = [i + 1 for i, line in enumerate(src.splitlines()) if text in line]
    return lines[nth]


def test_setup_code_quiet_and_transitive_calls_flagged():
    got = codes(SETUP)
    assert got == [("GC101", _line(SETUP, "return x.item()", 0)), ("GC101", _line(SETUP, "return x.item()", 2))]
    messages = [f.message for f in lint(SETUP)]
    assert "called from `Model.forward`" in messages[0]


def test_all_functions_flags_setup_functions_but_not_module_level():
    got = codes(SETUP, all_functions=True)
    assert got == [("GC101", n) for n in sorted([
        _line(SETUP, "return x.item()", 0), _line(SETUP, "return x.item()", 1),
        _line(SETUP, "self.n = x.item()"), _line(SETUP, "return x.item()", 2)])]


def test_triton_kernel_bodies_are_never_checked():
    src = '''
    import triton
    import triton.language as tl
    @triton.jit
    def kern(x_ptr, n):
        x = tl.load(x_ptr)
        if x > 0:
            print(x)
    '''
    assert codes(src, all_functions=True) == []


@pytest.mark.parametrize("decorator", [
    '@torch.library.custom_op("demo::op", mutates_args=())',
    '@custom_op("demo::op", mutates_args=())',
    '@torch.library.impl("demo::op", "cuda")',
    '@torch.library.register_kernel("demo::op", "cuda")',
    '@lib.impl("op", "CUDA")',
    '@graphcheck.capturable',
    '@capturable',
])
def test_registered_and_marked_functions_are_roots(decorator):
    src = f'''
import torch
import graphcheck
from graphcheck import capturable
from torch.library import custom_op
lib = torch.library.Library("demo", "FRAGMENT")

{decorator}
def op(x: torch.Tensor) -> torch.Tensor:
    return x.nonzero()
'''
    assert [(f.code, f.line) for f in lint_python(src, "m.py")] == [("GC105", 10)]


@pytest.mark.parametrize("decorator", [
    '@torch.library.register_fake("demo::op")',
    '@torch.library.impl("demo::op", "Meta")',
    '@torch.library.impl("demo::op", "cpu")',
    '@lib.impl("op", "Meta")',
    '@op_def.register_fake',
])
def test_fake_and_host_only_implementations_are_not_roots(decorator):
    src = f'''
import torch
lib = torch.library.Library("demo", "FRAGMENT")

{decorator}
def op(x: torch.Tensor) -> torch.Tensor:
    return x.nonzero()
'''
    assert lint_python(src, "m.py") == []


def test_library_impl_call_registers_function():
    src = '''
    import torch
    lib = torch.library.Library("demo", "FRAGMENT")
    def op_cuda(x: torch.Tensor):
        return x.tolist()
    def op_meta(x: torch.Tensor):
        return x.tolist()
    lib.impl("op", op_cuda, "CUDA")
    lib.impl("op", op_meta, "Meta")
    '''
    assert codes(src) == [("GC103", 5)]
    assert "registered as a torch.library implementation" in lint(src)[0].message


@pytest.mark.parametrize("entry", ["Model.forward", "pkg.mod:Model.forward"])
def test_entry_points_qualified_and_module_forms(entry):
    src = '''
    class Model:
        def forward(self, x):
            return x.cpu()
    def forward(x):
        return x.cpu()
    '''
    assert codes(src, entry_points=[entry]) == [("GC104", 4)]
    assert codes(src, entry_points=["forward"]) == [("GC104", 6)]
    assert codes(src) == []


@pytest.mark.parametrize("path, entry, expected", [
    ("src/pkg/ops.py", "pkg.ops.decode", [("GC104", 3)]),
    ("pkg/ops/__init__.py", "pkg.ops.decode", [("GC104", 3)]),
    ("ops.py", "pkg.ops.decode", [("GC104", 3)]),
    ("src/pkg/ops.py", "pkg.ops.Model.forward", [("GC104", 6)]),
    ("src/other/ops.py", "pkg.ops.decode", []),
    ("src/pkg/ops.py", "pkg.other.decode", []),
])
def test_entry_points_as_dotted_module_paths(path, entry, expected):
    src = textwrap.dedent('''
        def decode(x):
            return x.cpu()
        class Model:
            def forward(self, x):
                return x.cpu()
    ''')
    assert [(f.code, f.line) for f in lint_python(src, path, entry_points=[entry])] == expected


def test_imported_kernel_launch_in_module_without_triton():
    src = '''
    from .kernels import attn_kernel
    def decode(q, lens):
        attn_kernel[(q.shape[0],)](q, lens)
        return lens.tolist()
    '''
    assert codes(src) == [("GC103", 5)]


@pytest.mark.parametrize("imports", [
    "from .kernels import (\n    other_kernel,\n    attn_kernel,\n)",
    "from .kernels import (  # the kernels\n    attn_kernel as ak,  # aliased\n)",
    "from .kernels import other_kernel, \\\n    attn_kernel",
])
def test_imported_kernel_launch_with_a_multi_line_import(imports):
    launched = "ak" if " as ak" in imports else "attn_kernel"
    src = imports + textwrap.dedent(f'''
        def decode(q, lens):
            {launched}[(q.shape[0],)](q, lens)
            return lens.tolist()
    ''')
    assert codes(src) == [("GC103", _line(src, "return lens.tolist()"))]


def test_tables_of_callables_and_generic_types_are_not_launches():
    src = '''
    import triton
    HANDLERS = {}
    handlers = {}
    def f(x, op):
        HANDLERS[op](x)
        handlers[op](x)
        OrderedSet[str]()
        x.item()
    '''
    assert codes(src) == []


def test_obj_attr_subscript_launch_is_accepted():
    src = '''
    import triton
    class Op:
        def run(self, x, grid):
            self.kernel[grid](x)
            return x.item()
    '''
    assert codes(src) == [("GC101", 6)]


def test_vllm_style_loop_in_launcher_and_custom_op():
    src = '''
    import torch, triton
    @triton.jit
    def attn_kernel(q, out, n):
        pass
    def decode(q, context_lens, out):
        for i in range(q.shape[0]):
            n = context_lens[i].item()
            attn_kernel[(1,)](q[i], out[i], 1)
    @torch.library.custom_op("v::indexer", mutates_args=())
    def indexer(q: torch.Tensor, context_lens: torch.Tensor) -> torch.Tensor:
        for i in range(q.shape[0]):
            seq = context_lens[i].item()
        return q
    '''
    assert codes(src) == [("GC101", 8), ("GC101", 13)]


# -- individual rule details ------------------------------------------------------

def test_precheck_skips_modules_that_cannot_be_reached():
    assert codes("def f(x):\n    return x.item()\n") == []
    assert codes("def f(x):\n    return x.item()\n", all_functions=True) == [("GC101", 2)]
    assert codes("def f(x):\n    return x.item()\n", entry_points=["f"]) == [("GC101", 2)]


def test_bool_context_operands():
    src = KERNEL + textwrap.dedent('''
        def f(x: torch.Tensor, flag: bool):
            kern[(1,)](x, 1, BLOCK=1)
            a = flag and x.any()
            b = x.any() or flag
            if flag or x.any():
                pass
            c = [v for v in range(3) if x.all()]
            return a, b, c
    ''')
    base = _line(src, "a = flag and x.any()")
    assert codes(src, ) == [("GC111", base + 1), ("GC111", base + 2), ("GC111", base + 4)]


def test_unannotated_tensor_inferred_from_tensor_only_use():
    src = KERNEL + textwrap.dedent('''
        def f(x, lens):
            kern[(x.shape[0],)](x, lens.stride(0), BLOCK=1)
            if lens:
                pass
            return int(lens), float(x.shape[0])
    ''')
    start = _line(src, "if lens:")
    assert codes(src) == [("GC111", start), ("GC102", start + 2)]



def test_tensor_method_name_read_as_a_field_does_not_make_a_tensor():
    # `entry.numel` is a field of some config object (torch inductor's range trees):
    # only a call such as `entry.numel()` is tensor evidence
    src = KERNEL + textwrap.dedent('''
        def f(x, entry, code):
            kern[(1,)](x, entry.numel, BLOCK=1)
            for sym, expr, constexpr in entry.named_constants():
                if constexpr:
                    code.append(sym)
            if entry.view:
                pass
            return int(entry.numel)
    ''')
    assert codes(src) == []
    called = src.replace("entry.numel, BLOCK", "entry.numel(), BLOCK")
    assert ("GC111", _line(called, "if constexpr:")) in codes(called)

def test_pinned_non_blocking_copy_is_quiet_but_pageable_non_blocking_is_not():
    src = KERNEL + textwrap.dedent('''
        def f(x):
            kern[(1,)](x, 1, BLOCK=1)
            a = torch.tensor([1, 2], pin_memory=True).to(x.device, non_blocking=True)
            b = torch.tensor([1, 2]).pin_memory().cuda(non_blocking=True)
            c = torch.tensor([1, 2]).to(x.device, non_blocking=True)
            return a, b, c
    ''')
    assert codes(src) == [("GC301", _line(src, "c = torch.tensor"))]


def test_host_value_taint_flows_through_assignments_and_loops():
    src = KERNEL + textwrap.dedent('''
        def f(x, lens):
            for n in lens.tolist():
                blocks = triton.cdiv(n, 64)
                kern[(blocks,)](x, n * 2, BLOCK=64)
    ''')
    launch = _line(src, "kern[(blocks,)]")
    assert codes(src) == [("GC103", launch - 2), ("GC401", launch), ("GC402", launch)]


# -- robustness ------------------------------------------------------------------

def test_syntax_error_is_gc001_at_its_line():
    (finding,) = lint_python("import triton\ndef f(:\n    pass\n", "bad.py")
    assert (finding.code, finding.line, finding.path) == ("GC001", 2, "bad.py")
    assert finding.severity == rules.get("GC001").severity


@pytest.mark.parametrize("source", [
    "import triton\nx = " + "1+" * 100_000 + "1\n",
    "import triton\nx = " + "(" * 5000 + "1" + ")" * 5000 + "\n",
    "import triton\nx = " + "-" * 100_000 + "1\n",
])
def test_pathological_nesting_returns_a_tool_finding(source):
    (finding,) = lint_python(source, "deep.py")
    assert finding.code in ("GC001", "GC002")
    assert finding.line >= 1


def test_deep_but_parseable_expressions_inside_a_checked_function():
    chain = " + ".join(["x.sum()"] * 400)
    calls = "f(" * 150 + "x.item()" + ")" * 150
    src = f"import triton\ndef g(x):\n    y = {chain}\n    if {chain}:\n        pass\n    z = {calls}\n"
    got = codes(src, all_functions=True)
    assert ("GC101", 6) in got and ("GC111", 4) in got


def test_empty_and_null_byte_sources():
    assert lint_python("", "e.py") == []
    assert lint_python("", "e.py", all_functions=True) == []
    (finding,) = lint_python("import triton\nx = 1\x00\n", "n.py")
    assert (finding.code, finding.line) == ("GC002", 2)


def test_never_raises_on_arbitrary_text():
    import hypothesis  # a hard dependency (pyproject): its absence must fail, not skip
    st = hypothesis.strategies

    tokens = ["def ", "f", "(", ")", ":", "\n", "    ", "x", ".item()", "[", "]", "if ", "for ", " in ",
              "=", "+", "kern", "[(1,)]", "torch.", "nonzero", "lambda ", ",", "'", "#", "with ", "return ",
              "@triton.jit\n", "not ", "max", "é", "\\"]

    @hypothesis.settings(max_examples=200, deadline=None)
    @hypothesis.given(st.lists(st.sampled_from(tokens), max_size=60).map("".join))
    def check(text):
        for finding in lint_python("import triton\n" + text, "f.py", all_functions=True):
            assert finding.code.startswith("GC") and finding.code != "GC003", finding.message

    check()
