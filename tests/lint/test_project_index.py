"""The project index: imports resolved across the tree, capture roots, reachability chains.

Each behaviour has a tree that fires and a safe twin that stays quiet.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lint_trees import make

from graphcheck.config import Config
from graphcheck.lint.engine import lint_paths
from graphcheck.lint.project import ExtraRoot, ProjectIndex


def lint(root: Path, *paths: str, **config):
    cfg = Config(root=root, **config)
    return lint_paths([str(root / p) for p in (paths or ["."])], cfg, use_cache=False, jobs=1).findings


def codes(findings):
    return sorted((Path(f.path).name, f.line, f.code) for f in findings)


TRITON_UTILS = {
    "pkg/__init__.py": "",
    "pkg/triton_utils/__init__.py": """\
        from typing import TYPE_CHECKING
        from pkg.triton_utils.importing import HAS_TRITON, TritonPlaceholder
        if TYPE_CHECKING or HAS_TRITON:
            import triton
            import triton.language as tl
        else:
            triton = TritonPlaceholder()
            tl = TritonPlaceholder()
        __all__ = ["HAS_TRITON", "triton", "tl"]
    """,
    "pkg/triton_utils/importing.py": """\
        HAS_TRITON = True
        class TritonPlaceholder:
            pass
    """,
}

VLLM_KERNEL = """\
    from pkg.triton_utils import tl, triton

    @triton.jit
    def pack_kernel(x_ptr, n, BLOCK: tl.constexpr):
        pass

    def pack_seq(x, lengths):
        n = lengths.max().item()
        pack_kernel[(triton.cdiv(n, 128),)](x, n, BLOCK=128)
"""


def test_reexported_triton_makes_kernels_and_launches_visible(tmp_path):
    root = make(tmp_path, {**TRITON_UTILS, "pkg/ops/__init__.py": "", "pkg/ops/common.py": VLLM_KERNEL,
                           "pkg/layer.py": "from pkg.ops.common import pack_seq\n"})  # a caller: not dead code
    found = lint(root)
    got = {(f.code, f.line) for f in found}
    assert ("GC101", 8) in got and ("GC401", 9) in got and ("GC402", 9) in got
    gc101 = next(f for f in found if f.code == "GC101")
    assert "launches Triton kernel `pack_kernel`" in gc101.message
    assert gc101.severity == "error"


def test_reexported_triton_safe_twin_is_quiet(tmp_path):
    safe = VLLM_KERNEL.replace("n = lengths.max().item()", "n = lengths.shape[0]")
    root = make(tmp_path, {**TRITON_UTILS, "pkg/ops/__init__.py": "", "pkg/ops/common.py": safe})
    assert lint(root) == []


def test_placeholder_module_without_triton_import_stays_unrecognised(tmp_path):
    # a module that only *assigns* a placeholder named triton re-exports nothing
    files = {"pkg/__init__.py": "", "pkg/fake.py": "class P:\n    pass\ntriton = P()\n",
             "pkg/k.py": VLLM_KERNEL.replace("from pkg.triton_utils import tl, triton", "from pkg.fake import triton\ntl = triton")}
    root = make(tmp_path, files)
    assert [f for f in lint(root) if f.code.startswith("GC4")] == []


def test_relative_import_and_cross_module_chain(tmp_path):
    files = {
        "eng/__init__.py": "",
        "eng/kernels.py": """\
            import triton
            import triton.language as tl
            from .helpers import host_len

            @triton.jit
            def kern(x, n, BLOCK: tl.constexpr):
                pass

            def launch(x, lens):
                n = host_len(lens)
                kern[(1,)](x, 1, BLOCK=64)
        """,
        "eng/helpers.py": """\
            from . import deeper

            def host_len(lens):
                return deeper.count(lens)
        """,
        "eng/deeper.py": """\
            def count(lens):
                return int(lens.sum().item())

            def unrelated(lens):
                return lens.sum().item()
        """,
    }
    root = make(tmp_path, files)
    found = lint(root)
    assert codes(found) == [("deeper.py", 2, "GC101")]
    (f,) = found
    assert f.evidence["chain"] == ["eng.kernels.launch", "eng.helpers.host_len", "eng.deeper.count"]
    assert "reachable via eng.kernels.launch -> eng.helpers.host_len -> count" in f.message
    assert "launches Triton kernel `kern`" in f.message


def test_unresolvable_calls_are_not_guessed(tmp_path):
    files = {
        "eng/__init__.py": "",
        "eng/k.py": """\
            import triton
            from thirdparty import helper

            @triton.jit
            def kern(x):
                pass

            def launch(x, obj):
                helper(x)
                obj.count(x)
                kern[(1,)](x)
        """,
        "eng/other.py": "def count(t):\n    return t.item()\n",
    }
    assert lint(make(tmp_path, files)) == []


def test_self_method_and_inherited_method_calls(tmp_path):
    files = {
        "m/__init__.py": "",
        "m/base.py": "class Base:\n    def prep(self, t):\n        return t.item()\n",
        "m/impl.py": """\
            import triton
            from m.base import Base

            @triton.jit
            def kern(x):
                pass

            class Impl(Base):
                def forward(self, t):
                    self.prep(t)
                    kern[(1,)](t)
        """,
    }
    assert codes(lint(make(tmp_path, files))) == [("base.py", 3, "GC101")]


def test_registrar_op_func_keyword_is_a_root(tmp_path):
    files = {
        "v/__init__.py": "",
        "v/utils.py": "def direct_register_custom_op(op_name, op_func, mutates_args=None, fake_impl=None):\n    pass\n",
        "v/attn.py": """\
            import torch
            from v.utils import direct_register_custom_op

            def vit_attn(q, max_seqlen):
                n = max_seqlen.item()
                return q

            def vit_attn_fake(q, max_seqlen):
                return max_seqlen.item()

            direct_register_custom_op(op_name="vit_attn", op_func=vit_attn, fake_impl=vit_attn_fake)
        """,
    }
    found = lint(make(tmp_path, files))
    assert codes(found) == [("attn.py", 5, "GC101")]
    assert "registered as a custom op with `direct_register_custom_op`" in found[0].message


def test_registrar_decorator_and_configured_registrar(tmp_path):
    files = {
        "f/__init__.py": "",
        "f/utils.py": "def register_custom_op(name):\n    return lambda fn: fn\n\ndef my_registry(fn):\n    return fn\n",
        "f/ops.py": """\
            from f.utils import register_custom_op, my_registry

            @register_custom_op("f::a")
            def op_a(x):
                return x.item()

            def op_b(x):
                return x.tolist()

            def not_registered(x):
                return x.item()

            my_registry(op_b)
        """,
    }
    root = make(tmp_path, files)
    assert codes(lint(root)) == [("ops.py", 5, "GC101")]
    assert codes(lint(root, custom_op_registrars=("my_registry",))) == [("ops.py", 5, "GC101"), ("ops.py", 8, "GC103")]


def test_capture_site_bodies_are_roots(tmp_path):
    files = {
        "r/__init__.py": "",
        "r/model.py": "def step(x):\n    return x.item()\n\ndef eager_only(x):\n    return x.item()\n",
        "r/runner.py": """\
            import torch
            from r.model import step, eager_only

            def capture(x):
                eager_only(x)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    step(x)
        """,
    }
    found = lint(make(tmp_path, files))
    assert codes(found) == [("model.py", 2, "GC101")]
    assert "with torch.cuda.graph(...)" in found[0].message


def test_capture_begin_end_and_make_graphed_callables(tmp_path):
    files = {
        "r/__init__.py": "",
        "r/model.py": "def a(x):\n    return x.item()\n\ndef b(x):\n    return x.tolist()\n\ndef c(x):\n    return x.cpu()\n",
        "r/runner.py": """\
            import torch
            from r.model import a, b, c

            def cap(g, x):
                c(x)
                g.capture_begin()
                a(x)
                g.capture_end()

            def graphed(x):
                return torch.cuda.make_graphed_callables(b, (x,))
        """,
    }
    assert codes(lint(make(tmp_path, files))) == [("model.py", 2, "GC101"), ("model.py", 5, "GC103")]


def test_cutile_and_cute_launchers_are_roots(tmp_path):
    files = {
        "k/__init__.py": "",
        "k/tile.py": """\
            import cuda.tile as ct

            @ct.kernel
            def ce_kernel(x):
                pass

            def cross_entropy(x, mask, stream):
                n = mask.sum().item()
                ct.launch(stream, (1,), ce_kernel, (x,))

            def not_a_launcher(mask):
                return mask.sum().item()
        """,
        "k/cute_ops.py": """\
            import cutlass.cute as cute

            @cute.jit
            def host_fn(x):
                pass

            def run(x, t):
                v = t.item()
                host_fn(x)

            def compile_it(x, t):
                w = t.tolist()
                return cute.compile(host_fn, x)
        """,
    }
    assert codes(lint(make(tmp_path, files))) == [("cute_ops.py", 8, "GC101"), ("cute_ops.py", 12, "GC103"),
                                                  ("tile.py", 8, "GC101")]


def test_typed_generic_instantiation_is_not_a_launch(tmp_path):
    files = {
        "p/__init__.py": "",
        "p/conn.py": """\
            import logging
            from collections import defaultdict
            # this module mentions triton in a comment
            logger = logging.getLogger(__name__)

            class Worker:
                def __init__(self, t):
                    self.d = defaultdict[str, int](int)
                    self.n = t.item()
                    logger.debug("x")
        """,
    }
    assert lint(make(tmp_path, files)) == []


def test_imported_kernel_constexpr_is_known(tmp_path):
    files = {
        "q/__init__.py": "",
        "q/kern.py": """\
            import triton
            import triton.language as tl

            @triton.jit
            def kern(x, n, FLAG: tl.constexpr):
                pass
        """,
        "q/ops.py": """\
            from q.kern import kern

            def run(x, t):
                kern[(1,)](x, 1, FLAG=t.sum())

            def run_ok(x):
                kern[(1,)](x, 1, FLAG=x.shape[0])
        """,
    }
    assert codes(lint(make(tmp_path, files))) == [("ops.py", 4, "GC403")]


def test_extra_roots_from_a_recorded_capture_map(tmp_path):
    files = {"e/__init__.py": "", "e/model.py": "def step(x):\n    return x.item()\n"}
    root = make(tmp_path, files)
    assert lint(root) == []
    found = lint_paths([str(root)], Config(root=root), use_cache=False, jobs=1,
                       extra_roots=[ExtraRoot(str(root / "e/model.py"), "step")]).findings
    assert codes(found) == [("model.py", 2, "GC101")]
    assert "recorded" in found[0].message


def test_counts_functions_in_scope_and_skipped(tmp_path):
    root = make(tmp_path, {**TRITON_UTILS, "pkg/ops/__init__.py": "", "pkg/ops/common.py": VLLM_KERNEL,
                           "pkg/misc.py": "def a(t):\n    return t.item()\n\ndef b():\n    pass\n"})
    result = lint_paths([str(root)], Config(root=root), use_cache=False, jobs=1)
    assert result.functions_in_scope == 1  # pack_seq (the kernel is not a host function)
    assert result.functions_skipped >= 2  # a, b and the placeholder's methods


def test_index_never_crashes_on_odd_input(tmp_path):
    files = {"o/__init__.py": "from . import *\nfrom .. import nothing\nimport o.o.o\n",
             "o/bad.py": "import triton\ndef f(:\n", "o/cycle_a.py": "from o.cycle_b import x\n",
             "o/cycle_b.py": "from o.cycle_a import x\nimport triton\ndef g(t):\n    x(t)\n    k[(1,)](t)\n"}
    root = make(tmp_path, files)
    (root / "o" / "bin.py").write_bytes(b"import triton\x00\xff")
    found = lint(root)
    assert {f.code for f in found} <= {"GC001", "GC002"}
    index = ProjectIndex([str(p) for p in root.rglob("*.py")])
    assert index.resolve("o.cycle_a.x") is None


@pytest.mark.parametrize("cached", [False, True])
def test_context_change_invalidates_the_lint_cache(tmp_path, monkeypatch, cached):
    monkeypatch.delenv("GRAPHCHECK_CACHE_DIR", raising=False)
    files = {"c/__init__.py": "", "c/model.py": "def step(x):\n    return x.item()\n",
             "c/runner.py": "import torch\nfrom c.model import step\n\ndef cap(g, x):\n    pass\n"}
    root = make(tmp_path, files)
    cfg = Config(root=root)
    assert lint_paths([str(root)], cfg, jobs=1, use_cache=cached).findings == []
    (root / "c/runner.py").write_text(
        "import torch\nfrom c.model import step\n\ndef cap(g, x):\n    with torch.cuda.graph(g):\n        step(x)\n")
    assert codes(lint_paths([str(root)], cfg, jobs=1, use_cache=cached).findings) == [("model.py", 2, "GC101")]


def test_tests_and_benchmarks_inside_library_files_are_not_roots(tmp_path):
    files = {"lib/__init__.py": "", "lib/attn.py": """\
        import triton

        @triton.jit
        def kern(x):
            pass

        def test_kernel(x, lens):
            total = lens.sum().item()
            kern[(1,)](x)

        def benchmark_kernel(x, lens):
            torch.cuda.synchronize()
            kern[(1,)](x)

        def forward(x, lens):
            total = lens.sum().item()
            kern[(1,)](x)
    """}
    assert codes(lint(make(tmp_path, files))) == [("attn.py", 16, "GC101")]


def test_methods_of_tester_and_benchmark_classes_are_not_roots(tmp_path):
    files = {"lib/__init__.py": "", "lib/moe.py": """\
        import triton

        @triton.jit
        def kern(x):
            pass

        class MoETester:
            def run_kernel(self, x):
                torch.cuda.synchronize()
                kern[(1,)](x)

        class MoE:
            def run_kernel(self, x):
                torch.cuda.synchronize()
                kern[(1,)](x)
    """}
    assert codes(lint(make(tmp_path, files))) == [("moe.py", 14, "GC110")]


REVERSE_MAP_TREE = {
    "pkg/__init__.py": "",
    "pkg/kern.py": """\
        import triton

        @triton.jit
        def k(x):
            pass

        def launch(x, n=None):
            k[(1,)](x)

        def prefill_only(x):
            k[(1,)](x)
    """,
    "pkg/model.py": """\
        import triton  # summarized up front
        from pkg.kern import launch, prefill_only

        class Block:
            def __init__(self, n):
                self.n = n

        def step(x, has_prefill):
            launch(x, 4)
            b = Block(3)
            if has_prefill:
                prefill_only(x)
    """,
    "pkg/tests_helper.py": """\
        import triton  # summarized up front
        from pkg.kern import launch

        def test_launch(x):
            launch(x)
    """,
}


def test_one_reverse_call_map_serves_eager_roots_cold_roots_and_call_records(tmp_path, monkeypatch):
    from graphcheck.lint import callers

    root = make(tmp_path, REVERSE_MAP_TREE)
    builds = []
    real = ProjectIndex.call_edges

    def counted(self):
        if self._reverse_calls is None:
            builds.append(1)
        return real(self)

    monkeypatch.setattr(ProjectIndex, "call_edges", counted)
    files = sorted(str(p) for p in root.rglob("*.py"))
    index = ProjectIndex(files)
    contexts = [index.context(f) for f in files]
    assert builds == [1], "the reverse call map is built once per index and shared"
    edges = index.call_edges()
    assert [(c, how) for c, _, how in edges["pkg.kern.launch"]] == [
        ("pkg.model.step", "func"), ("pkg.tests_helper.test_launch", "func")]
    assert [(c, how) for c, _, how in edges["pkg.model.Block.__init__"]] == [("pkg.model.step", "class")]
    table = callers.call_table(index)
    assert [r[0] for r in table["pkg.kern.launch"]] == ["`step` (model.py:9)", "`test_launch` (tests_helper.py:5)"]
    assert table["pkg.model.Block.__init__"][0][2] == 1  # a class call fills __init__ after self
    cold = callers.cold_table(index)
    assert "pkg.kern.prefill_only" in cold and "prefill branch" in cold["pkg.kern.prefill_only"]
    assert "pkg.kern.launch" not in cold  # called warm from step
    assert "launch" in next(c for c in contexts if c is not None and "launch" in c.reach).reach


def test_the_chain_named_does_not_depend_on_which_worker_finishes_first(tmp_path, monkeypatch):
    # two roots reach `helper`; the index takes summaries in path order, so the chain is the same whether
    # the pool hands results back in order, reversed, or partly from the cache
    from graphcheck.lint import project

    files = {"pkg/__init__.py": "", "pkg/util.py": "def helper(x):\n    return x\n"}
    for name in ("a_first", "b_second"):
        files[f"pkg/{name}.py"] = (f"import triton\nfrom pkg.util import helper\n\n@triton.jit\ndef k_{name}(x):\n"
                                   f"    pass\n\ndef launch_{name}(x):\n    k_{name}[(1,)](x)\n    helper(x)\n")
    root = make(tmp_path, files)
    paths = sorted(str(p) for p in root.rglob("*.py"))
    util = str(root / "pkg/util.py")
    real = project._run
    chains = []
    for order in (lambda r: r, lambda r: list(reversed(r))):
        monkeypatch.setattr(project, "_run", lambda tasks, *a, _o=order: _o(real(tasks, *a)))
        chains.append(ProjectIndex(paths).context(util).reach["helper"][2])
    cache = tmp_path / "cache"
    ProjectIndex(paths[:2], cache_dir=cache)  # a cache that holds some of the files
    chains.append(ProjectIndex(paths, cache_dir=cache).context(util).reach["helper"][2])
    assert chains[0] == ["pkg.a_first.launch_a_first", "pkg.util.helper"]
    assert chains[1:] == [chains[0], chains[0]]
