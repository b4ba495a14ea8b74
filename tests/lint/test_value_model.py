"""The value model: host values versus device tensors, branches, capture guards, and the
rule semantics that depend on them (GC403, GC301 empty literals, GC503, GC404).

Each behaviour has a firing case and a quiet safe twin; most cases are shaped
like the false alarms of the real-code study (``*_cpu`` names, numpy arrays,
``torch.tensor(list)`` without a device, ``isinstance`` guards, ``x is not None``
constexprs).
"""

from __future__ import annotations

import textwrap

import pytest

from graphcheck.lint.python_rules import lint_python

KERNEL = textwrap.dedent('''
    import numpy as np
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def kern(x_ptr, n, HAS_BIAS: tl.constexpr, BLOCK: tl.constexpr):
        pass

    @triton.autotune(configs=[], key=["n"])
    @triton.jit
    def tuned(x_ptr, n):
        pass
''')


def lint(body: str, **kwargs):
    src = KERNEL + textwrap.dedent(body)
    return lint_python(src, "m.py", **kwargs), src


def at(src: str, text: str) -> int:
    return next(i for i, line in enumerate(src.splitlines(), 1) if text in line)


def codes(found):
    return sorted((f.code, f.line) for f in found)


# -- host values are not syncs -------------------------------------------------------

@pytest.mark.parametrize("read", [
    "seq_lens_cpu.max().item()",
    "query_start_loc_cpu[-1].item()",
    "batch.seq_lens_cpu.max().item()",
    "input_batch.cu_num_logits_np.tolist()",
    "self_ids_pinned[:3].numpy()",
])
def test_reading_a_host_named_value_is_not_a_sync(read):
    found, _ = lint(f'''
        def launch(x, seq_lens_cpu, query_start_loc_cpu, batch, input_batch, self_ids_pinned):
            v = {read}
            kern[(1,)](x, 1, HAS_BIAS=True, BLOCK=64)
    ''')
    assert found == []


def test_same_read_of_a_device_tensor_is_a_sync():
    found, src = lint('''
        def launch(x, seq_lens):
            v = seq_lens.max().item()
            kern[(1,)](x, 1, HAS_BIAS=True, BLOCK=64)
    ''')
    assert codes(found) == [("GC101", at(src, "seq_lens.max().item()"))]
    assert found[0].severity == "error"


@pytest.mark.parametrize("make", [
    "t = x.cpu()",
    "t = torch.tensor([1, 2, 3])",
    "t = np.asarray(lens)",
    "t = torch.from_numpy(arr)",
    "t = x.to('cpu')",
])
def test_values_built_on_the_host_are_host_values(make):
    found, _ = lint(f'''
        def launch(x, lens, arr):
            {make}
            v = t.sum().item()
            w = t.tolist()
            kern[(1,)](x, 1, HAS_BIAS=True, BLOCK=64)
    ''')
    assert [f.code for f in found] == (["GC104"] if ".cpu()" in make or "'cpu'" in make else [])


def test_a_host_tensor_moved_to_the_device_is_a_device_tensor():
    found, src = lint('''
        def launch(x):
            t = torch.tensor([1, 2, 3]).cuda()
            v = t.sum().item()
            kern[(1,)](x, 1, HAS_BIAS=True, BLOCK=64)
    ''')
    assert ("GC101", at(src, "t.sum().item()")) in codes(found)


def test_host_value_feeding_a_grid_is_baked_not_a_sync():
    found, src = lint('''
        def launch(x, num_active_loras_cpu):
            n = num_active_loras_cpu.item()
            kern[(n,)](x, n, HAS_BIAS=True, BLOCK=64)
    ''')
    got = {(f.code, f.severity) for f in found}
    assert got == {("GC401", "warning"), ("GC402", "warning")}
    gc401 = next(f for f in found if f.code == "GC401")
    assert "a value read from a host tensor per call" in gc401.message
    assert "num_active_loras_cpu.item()" in gc401.message


def test_shape_ints_feeding_a_grid_are_quiet():
    found, _ = lint('''
        def launch(x):
            n = int(x.shape[0])
            kern[(n,)](x, n, HAS_BIAS=True, BLOCK=64)
    ''')
    assert found == []


def test_device_value_guess_is_a_warning():
    found, _ = lint('''
        def launch(x, meta):
            v = meta.lens.item()
            kern[(1,)](x, 1, HAS_BIAS=True, BLOCK=64)
    ''')
    assert [(f.code, f.severity) for f in found] == [("GC101", "warning")]
    assert found[0].evidence["device"] == "guessed"


# -- branches --------------------------------------------------------------------------

def test_isinstance_guard_narrows_and_stops_the_fan_out():
    found, src = lint('''
        def pad(x, padding):
            if isinstance(padding, torch.Tensor):
                padding = tuple(padding.tolist())
            left = int(padding[0])
            right = int(padding[1])
            kern[(left + right,)](x, right, HAS_BIAS=True, BLOCK=64)
    ''')
    assert codes(found) == [("GC103", at(src, "padding.tolist()"))]


def test_unguarded_tolist_still_fans_out():
    found, src = lint('''
        def pad(x, padding: torch.Tensor):
            p = padding.tolist()
            right = int(p[1])
            kern[(right,)](x, right, HAS_BIAS=True, BLOCK=64)
    ''')
    assert {f.code for f in found} == {"GC103", "GC401", "GC402"}


def test_isinstance_of_a_non_tensor_type_means_no_sync():
    found, _ = lint('''
        def full(x, fill_value):
            x.item
            if isinstance(fill_value, bool):
                fill_value = int(fill_value)
            kern[(1,)](x, 1, HAS_BIAS=True, BLOCK=64)
    ''')
    assert found == []


def test_is_none_branch_is_not_a_tensor():
    found, _ = lint('''
        def f(x, bias: torch.Tensor):
            if bias is None:
                flag = bool(bias)
            kern[(1,)](x, 1, HAS_BIAS=True, BLOCK=64)
    ''')
    assert found == []


@pytest.mark.parametrize("guard", [
    "    if not torch.cuda.is_current_stream_capturing():\n",
    "    if torch.cuda.is_current_stream_capturing():\n        pass\n    else:\n",
])
def test_code_guarded_off_the_capture_path_is_quiet(guard):
    body = "def f(x, lens):\n" + guard + "        n = lens.max().item()\n    kern[(1,)](x, 1, HAS_BIAS=True, BLOCK=64)\n"
    assert lint_python(KERNEL + body, "m.py") == []


def test_code_on_the_capturing_branch_still_fires():
    found, src = lint('''
    def f(x, lens):
        if torch.cuda.is_current_stream_capturing():
            n = lens.max().item()
        kern[(1,)](x, 1, HAS_BIAS=True, BLOCK=64)
    ''')
    assert codes(found) == [("GC101", at(src, "lens.max().item()"))]


def test_configured_capture_guard():
    body = '''
    def f(x, lens):
        if not graph_capture_active():
            n = lens.max().item()
        kern[(1,)](x, 1, HAS_BIAS=True, BLOCK=64)
    '''
    src = KERNEL + textwrap.dedent(body)
    assert [f.code for f in lint_python(src, "m.py")] == ["GC101"]
    ctx = {"reach": {"f": ["launches Triton kernel `kern`", "m.f", ["m.f"], False]},
           "guards": ["graph_capture_active"]}
    assert lint_python(src, "m.py", context=ctx) == []


# -- GC403 semantics -------------------------------------------------------------------

@pytest.mark.parametrize("value", [
    "bias is not None",
    "True if bias is not None else False",
    "x.dtype == torch.float16",
    "x.requires_grad",
    "x.nbytes >= 2**31",
    "torch.is_floating_point(x)",
    "x.stride(0) if bias is not None else 0",
    "x.shape[1]",
])
def test_constexpr_from_call_structure_is_quiet(value):
    found, _ = lint(f'''
        def launch(x: torch.Tensor, bias):
            kern[(1,)](x, 1, HAS_BIAS={value}, BLOCK=64)
    ''')
    assert found == []


def test_constexpr_from_loop_over_shape_ints_is_quiet():
    found, _ = lint('''
        def lu(x: torch.Tensor, panel: int):
            n = x.shape[0]
            for k0 in range(0, n, panel):
                kern[(1,)](x, 1, HAS_BIAS=True, BLOCK=k0)
    ''')
    assert found == []


@pytest.mark.parametrize("value, why", [
    ("flags.sum()", "is a tensor value"),
    ("n", "a value synchronized to the host"),
    ("m", "read from a host tensor per call"),
])
def test_constexpr_from_tensor_values_fires(value, why):
    found, src = lint(f'''
        def launch(x: torch.Tensor, flags: torch.Tensor, lens_cpu):
            n = flags.max().item()
            m = lens_cpu[0].item()
            kern[(1,)](x, 1, HAS_BIAS={value}, BLOCK=64)
    ''')
    gc403 = [f for f in found if f.code == "GC403"]
    assert len(gc403) == 1 and why in gc403[0].message


# -- GC301: empty literals ---------------------------------------------------------------

def test_empty_literal_on_device_copies_nothing():
    found, _ = lint('''
        def launch(x):
            e = torch.tensor([], device=x.device)
            kern[(1,)](x, 1, HAS_BIAS=True, BLOCK=64)
    ''')
    assert found == []


def test_non_empty_literal_on_device_is_a_pageable_copy():
    found, src = lint('''
        def launch(x):
            e = torch.tensor([3, 4, 5], device=x.device)
            kern[(1,)](x, 1, HAS_BIAS=True, BLOCK=64)
    ''')
    assert codes(found) == [("GC301", at(src, "torch.tensor([3, 4, 5]"))]


# -- GC503: logging only with a device value ---------------------------------------------

def test_logging_constants_is_quiet_and_logging_a_tensor_fires():
    found, src = lint('''
        import logging
        logger = logging.getLogger(__name__)

        def launch(x: torch.Tensor):
            logger.debug("GEMS launch")
            logger.debug("shape %s", x.shape)
            logger.info("value %s", x.sum())
            print(f"max={x.max()}")
            kern[(1,)](x, 1, HAS_BIAS=True, BLOCK=64)
    ''')
    assert codes(found) == [("GC503", at(src, 'logger.info("value')), ("GC503", at(src, "print(f"))]


# -- GC404: info unless the first call can be in capture -----------------------------------

def test_autotune_is_info_for_a_launcher_root():
    found, _ = lint('''
        def launch(x):
            tuned[(1,)](x, 1)
    ''')
    assert [(f.code, f.severity) for f in found] == [("GC404", "info")]


def test_autotune_is_a_warning_when_reached_from_a_capture_site():
    body = '''
    def launch(x):
        tuned[(1,)](x, 1)
    '''
    src = KERNEL + textwrap.dedent(body)
    ctx = {"reach": {"launch": ["is called inside `with torch.cuda.graph(...)` in `run`", "r.run", ["m.launch"],
                                False]}}
    assert [(f.code, f.severity) for f in lint_python(src, "m.py", context=ctx)] == [("GC404", "warning")]


# -- memoized first-call paths ---------------------------------------------------------------

@pytest.mark.parametrize("lookup", [
    "if (ptr := _CACHE.get(key)) is not None:\n        return ptr",
    "if key in _CACHE:\n        return _CACHE[key]",
])
def test_code_after_a_memo_lookup_is_a_warning(lookup):
    body = ("_CACHE = {}\n\ndef get_ptr(ws, device, x):\n    key = tuple(w.data_ptr() for w in ws)\n    "
            + lookup + "\n    ptr = torch.tensor([w.data_ptr() for w in ws], device=device)\n"
            "    _CACHE[key] = ptr\n    kern[(1,)](x, 1, HAS_BIAS=True, BLOCK=64)\n    return ptr\n")
    found = lint_python(KERNEL + body, "m.py")
    assert [(f.code, f.severity) for f in found] == [("GC301", "warning")]
    assert found[0].evidence["path"] == "cache miss"


def test_the_same_copy_without_a_memo_is_an_error():
    body = ("def get_ptr(ws, device, x):\n    ptr = torch.tensor([w.data_ptr() for w in ws], device=device)\n"
            "    kern[(1,)](x, 1, HAS_BIAS=True, BLOCK=64)\n    return ptr\n")
    assert [(f.code, f.severity) for f in lint_python(KERNEL + body, "m.py")] == [("GC301", "error")]


def test_the_fast_child_and_own_node_walks_give_what_the_ast_module_gives():
    # the value model and the per-function walks read children directly; on real code (this package's own
    # modules) they must give exactly ast.iter_child_nodes' nodes, in its order
    import ast as ast_mod
    from pathlib import Path

    from graphcheck.lint import scope

    for path in sorted((Path(scope.__file__).parent).glob("*.py")):
        tree = ast_mod.parse(path.read_text())
        for node in ast_mod.walk(tree):
            assert scope.child_nodes(node) == list(ast_mod.iter_child_nodes(node)), (path.name, node)
            if isinstance(node, (ast_mod.FunctionDef, ast_mod.AsyncFunctionDef, ast_mod.ClassDef, ast_mod.Module)):
                expected, stack = [], list(reversed(node.body))
                while stack:
                    item = stack.pop()
                    expected.append(item)
                    if not isinstance(item, (ast_mod.FunctionDef, ast_mod.AsyncFunctionDef, ast_mod.ClassDef)):
                        stack.extend(reversed(list(ast_mod.iter_child_nodes(item))))
                assert scope.own_statement_nodes(node.body) == expected, (path.name, node)
