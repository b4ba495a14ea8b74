"""Host values the value model must see (tensor methods and torch functions returning Python values,
module definitions that hide a builtin, host values flowing into nested functions, callers passing
host values to a parameter annotated as a tensor). Each case has a firing twin."""

from __future__ import annotations

import textwrap
from pathlib import Path

from lint_trees import make, tree_findings

from graphcheck.lint.python_rules import lint_python

KERNEL = textwrap.dedent('''
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def kern(x_ptr, n, BLOCK: tl.constexpr):
        pass
''')


def lint(body: str):
    src = KERNEL + textwrap.dedent(body)
    return sorted((f.code, f.severity.value, src.splitlines()[f.line - 1].strip())
                  for f in lint_python(src, "m.py"))


def found(root: Path):
    return sorted((Path(f.path).name, f.line, f.code, f.severity.value) for f in tree_findings(root))


# -- tensor methods and torch functions that return Python values --------------------------------------------


def test_sparse_rank_methods_return_python_ints():
    quiet = lint('''
        def op(inp, out=None):
            if inp.dense_dim() != 0 or inp.sparse_dim() > 2:
                raise RuntimeError("hybrid")
            if out is not None and out.dense_dim() != 0:
                raise RuntimeError("hybrid out")
            kern[(1,)](inp, inp.numel(), BLOCK=64)
    ''')
    assert quiet == []
    loud = lint('''
        def op(inp, out=None):
            if inp.sum() != 0:
                raise RuntimeError("nonzero")
            kern[(1,)](inp, inp.numel(), BLOCK=64)
    ''')
    assert [c for c, _, _ in loud] == ["GC111"]


def test_broadcast_shapes_is_a_size_not_a_tensor():
    quiet = lint('''
        def op(a, b):
            shape = torch.broadcast_shapes(a.shape, b.shape)
            n = 1
            for d in shape:
                n *= d
            if n == 0 or not shape:
                return a
            kern[(1,)](a, n, BLOCK=64)
    ''')
    assert quiet == []
    loud = lint('''
        def op(a, b):
            shape = torch.maximum(a, b)
            if shape:
                return a
            kern[(1,)](a, 1, BLOCK=64)
    ''')
    assert [c for c, _, _ in loud] == ["GC111"]


# -- builtins hidden by the module's own definitions -------------------------------------------------------


def test_module_def_named_like_a_builtin_is_not_the_builtin():
    quiet = lint('''
        def any(inp):
            out = torch.empty([], dtype=torch.bool, device=inp.device)
            kern[(1,)](inp, inp.numel(), BLOCK=64)
            return out

        def any_dim(inp: torch.Tensor, dim=None):
            if dim is None:
                return any(inp)
            kern[(1,)](inp, dim, BLOCK=64)
    ''')
    assert quiet == []
    loud = lint('''
        def any_dim(inp: torch.Tensor, dim=None):
            if dim is None:
                return any(inp)
            kern[(1,)](inp, dim, BLOCK=64)
    ''')
    assert [c for c, _, _ in loud] == ["GC111"]


def test_builtins_over_python_lists_are_quiet():
    quiet = lint('''
        def op(x, sizes: list, flags):
            if any([s > 0 for s in sizes]) and all(f for f in flags) and max(sizes) > 4:
                kern[(1,)](x, sum(sizes), BLOCK=64)
            kern[(1,)](x, len(sizes), BLOCK=64)
    ''')
    assert quiet == []


# -- host values flowing into nested functions ---------------------------------------------------------------


def test_host_value_reaches_a_grid_callback_through_its_argument_and_free_names():
    quiet = lint('''
        def launch(x, starts, meta):
            args = meta.nums
            if meta.dim == 2:
                lens = starts.diff().to("cpu")
                args = lens

            def count(META, lens):
                n = -(-lens // META["BLOCK"])
                return n.sum().item()

            def grid(META):
                return (count(META, args), lens.max().item())

            kern[grid](x, 1, BLOCK=64)
    ''')
    assert [(c, s) for c, s, _ in quiet] == [("GC104", "error")]  # the copy to the host, once
    loud = lint('''
        def launch(x, starts, meta=None):
            lens = starts.diff()

            def count(META, lens):
                n = -(-lens // META["BLOCK"])
                return n.sum().item()

            def grid(META):
                return (count(META, lens),)

            kern[grid](x, 1, BLOCK=64)
    ''')
    assert [c for c, _, _ in loud] == ["GC101"]


def test_a_nested_function_called_with_a_device_value_somewhere_keeps_its_parameter():
    loud = lint('''
        def launch(x, starts):
            lens_cpu = starts.cpu()

            def count(lens):
                return lens.sum().item()

            a = count(lens_cpu)
            b = count(starts.diff())
            kern[(a + b,)](x, 1, BLOCK=64)
    ''')
    assert ("GC101", "error", "return lens.sum().item()") in loud


# -- callers that contradict a tensor annotation ----------------------------------------------------------


def test_tensor_annotation_contradicted_by_every_caller_passing_a_number(tmp_path):
    # the package exports fill2 without calling it: live API (a tests/ reference alone would not do here,
    # as this tree captures its own graphs: graphcheck.lint.deadcode)
    root = make(tmp_path, {"p/__init__.py": "from p.ops import fill2\n", "p/ops.py": """\
        import torch
        import triton
        import triton.language as tl

        @triton.jit
        def kern(x_ptr, n, BLOCK: tl.constexpr):
            pass

        def fill(x: torch.Tensor, max_pages: torch.Tensor):
            if max_pages == 0:
                return
            kern[(1,)](x, max_pages, BLOCK=64)
    """, "p/backend.py": """\
        import torch
        from p.ops import fill

        class Backend:
            def __init__(self, runner):
                self.ctx_len = runner.config.context_len
                self.page = runner.page_size
                self.max_pages = (self.ctx_len + self.page - 1) // self.page

            def capture(self, x, graph):
                with torch.cuda.graph(graph):  # (a module that mentions no kernel or capture is not indexed)
                    fill(x, self.max_pages)
                fill(x, 0)
    """})
    assert found(root) == []


def test_tensor_annotation_stands_when_a_caller_passes_a_tensor_or_no_caller_is_known(tmp_path):
    # the package exports fill2 without calling it: live API (a tests/ reference alone would not do here,
    # as this tree captures its own graphs: graphcheck.lint.deadcode)
    root = make(tmp_path, {"p/__init__.py": "from p.ops import fill2\n", "p/ops.py": """\
        import torch
        import triton
        import triton.language as tl

        @triton.jit
        def kern(x_ptr, n, BLOCK: tl.constexpr):
            pass

        def fill(x: torch.Tensor, max_pages: torch.Tensor):
            if max_pages == 0:
                return
            kern[(1,)](x, 1, BLOCK=64)

        def fill2(x: torch.Tensor, max_pages: torch.Tensor):
            if max_pages == 0:
                return
            kern[(1,)](x, 1, BLOCK=64)
    """, "p/backend.py": """\
        import torch
        from p.ops import fill

        class Backend:
            def __init__(self, runner):
                self.max_pages = runner.lens.max()

            def capture(self, x, lens, graph):
                with torch.cuda.graph(graph):
                    fill(x, self.max_pages)
                fill(x, len(lens))
    """})
    assert found(root) == [("ops.py", 10, "GC111", "error"), ("ops.py", 15, "GC111", "error")]
