"""Code reached only through prefill, over any number of calls (graphcheck.lint.cold_reach): a kernel wrapper
whose every caller is a prefill branch, prefill code by its name, or a function reached only so, gives
warnings that say which branch; a decode caller, an unresolved caller, the else of a prefill test or its
negation keep the error."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from lint_trees import make, tree_findings

KERNEL_FILE = """\
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def kern(x_ptr, n, BLOCK: tl.constexpr):
        pass

    def varlen_fwd(q, cu_seqlens):
        lens = (cu_seqlens[1:] - cu_seqlens[:-1]).cpu()
        kern[(1,)](q, 1, BLOCK=64)
"""

# aphrodite's shape: the wrapper <- a module method <- the module's forward <- `self.bs_attn(...)` in a backend
SPARSE_FILE = """\
    import torch

    from p.kernel import varlen_fwd

    class SparseAttn(torch.nn.Module):
        def __init__(self, n):
            super().__init__()
            self.n = n

        def varlen_attn(self, q, cu_seqlens):
            return varlen_fwd(q, cu_seqlens)

        def forward(self, q, cu_seqlens):
            return self.varlen_attn(q, cu_seqlens)
"""


def backend(test: str, body: str = "out = self.bs_attn(q, meta.seq_start_loc)", other: str = "") -> str:
    return f"""\
        import torch

        from p.sparse import SparseAttn

        class Backend(torch.nn.Module):
            def __init__(self, n):
                super().__init__()
                self.bs_attn = SparseAttn(n)

            def forward(self, q, meta):
                out = q
                if {test}:
                    {body}
                {other}
                return out
    """


def gc104(root: Path):
    return [(Path(f.path).name, f.line, f.severity.value, f.message, f.evidence)
            for f in tree_findings(root) if f.code == "GC104"]


def tree(tmp_path: Path, name: str, backend_text: str) -> Path:
    return make(tmp_path / name, {"p/__init__.py": "", "p/kernel.py": KERNEL_FILE, "p/sparse.py": SPARSE_FILE,
                                  "p/backend.py": backend_text})


def test_a_wrapper_reached_only_through_a_prefill_branch_two_calls_up_is_a_warning_that_names_it(tmp_path):
    got = gc104(tree(tmp_path, "a", backend("prefill_meta := meta.prefill_metadata")))
    assert [(n, line, s) for n, line, s, _, _ in got] == [("kernel.py", 10, "warning")]
    message, evidence = got[0][3], got[0][4]
    assert ("it runs only through `Backend.forward`'s call under `if (prefill_meta := meta.prefill_metadata):` "
            "(backend.py:12), a prefill branch") in message
    assert message.endswith(", via `SparseAttn.forward` -> `SparseAttn.varlen_attn`")
    assert evidence["path"] == "prefill branch"
    # the same with a prefill flag, a count of prefills and a prefill attribute
    for test in ("meta.is_prefill", "meta.num_prefills > 0", "meta.prefill_metadata is not None"):
        got = gc104(tree(tmp_path, "t" + str(abs(hash(test))), backend(test)))
        assert [s for _, _, s, _, _ in got] == ["warning"], test


def test_a_decode_caller_the_else_arm_and_a_negated_test_keep_the_error(tmp_path):
    decode_too = backend("meta.prefill_metadata", other="out = self.bs_attn(q, meta.decode_lens)")
    else_arm = backend("meta.prefill_metadata", body="pass\n                else:\n"
                       "                    out = self.bs_attn(q, meta.seq_start_loc)")
    negated = backend("not meta.prefill_metadata")
    unrelated = backend("meta.use_sparse")
    for name, text in (("decode", decode_too), ("else", else_arm), ("negated", negated), ("unrelated", unrelated)):
        got = gc104(tree(tmp_path, name, text))
        assert [(n, line, s) for n, line, s, _, _ in got] == [("kernel.py", 10, "error")], name
        assert "prefill" not in got[0][3], name


def test_an_unresolved_caller_keeps_the_error(tmp_path):
    # the backend gets its attention module from outside: `self.bs_attn(...)` resolves to nothing, and the
    # module's forward (a guessed root) has no caller the index knows: the wrapper stays an error
    unresolved = backend("meta.prefill_metadata").replace("self.bs_attn = SparseAttn(n)", "self.bs_attn = n")
    got = gc104(tree(tmp_path, "u", unresolved))
    assert [(n, line, s) for n, line, s, _, _ in got] == [("kernel.py", 10, "error")]
    # a wrapper nobody calls stays as it is (unknown is not prefill-only)
    alone = make(tmp_path / "alone", {"p/__init__.py": "", "p/kernel.py": KERNEL_FILE})
    assert [(n, line, s) for n, line, s, _, _ in gc104(alone)] == [("kernel.py", 10, "error")]


def test_a_wrapper_called_only_from_prefill_named_functions_is_a_warning(tmp_path):
    # native-sparse-attention's KV cache: `_fill_kv_cache` is called from `_update_kv_prefill` only
    cache = """\
        import torch

        from p.kernel import varlen_fwd

        class KVCache(torch.nn.Module):
            def forward(self, q, cu_seqlens, step):
                if step == 0:
                    return self._update_kv_prefill(q, cu_seqlens)
                return self._update_kv_decode(q)

            def _update_kv_prefill(self, q, cu_seqlens):
                return varlen_fwd(q, cu_seqlens)

            def _update_kv_decode(self, q):
                return q
    """
    files = {"p/__init__.py": "", "p/kernel.py": KERNEL_FILE, "p/cache.py": cache}
    got = gc104(make(tmp_path / "a", files))
    assert [(n, line, s) for n, line, s, _, _ in got] == [("kernel.py", 10, "warning")]
    assert "it is called only from prefill code: `KVCache._update_kv_prefill` (cache.py; " in got[0][3]
    assert got[0][4]["path"] == "prefill code"
    # the decode path calling it too keeps the error
    files["p/cache.py"] = cache.replace("return q\n", "return varlen_fwd(q, q)\n")
    loud = gc104(make(tmp_path / "b", files))
    assert [(n, line, s) for n, line, s, _, _ in loud] == [("kernel.py", 10, "error")]


def test_prefill_flags_are_configurable(tmp_path):
    from graphcheck.config import Config, from_table
    from graphcheck.lint.engine import lint_paths

    root = tree(tmp_path, "c", backend("meta.is_context_phase"))
    assert [s for _, _, s, _, _ in gc104(root)] == ["error"]  # not a prefill word by default
    config = from_table({"prefill-flags": ["*prefill*", "is_context_phase"]}, None, root)
    assert config.prefill_flags == ("*prefill*", "is_context_phase")
    got = [f for f in lint_paths([str(root)], config, use_cache=False, jobs=1).findings if f.code == "GC104"]
    assert [f.severity.value for f in got] == ["warning"]
    assert "under `if meta.is_context_phase:` (backend.py:12), a prefill branch" in got[0].message
    # without the default glob, a prefill test is one no more
    config = dataclasses.replace(Config(root=root), prefill_flags=("is_context_phase",))
    root = tree(tmp_path, "d", backend("meta.prefill_metadata"))
    got = [f for f in lint_paths([str(root)], config, use_cache=False, jobs=1).findings if f.code == "GC104"]
    assert [f.severity.value for f in got] == ["error"]


def test_a_method_of_objects_the_index_cannot_follow_keeps_its_error(tmp_path):
    # rtp-llm's shape: `Block.forward`'s one resolved caller is a prefill method (`self.forward(...)`), but the
    # blocks are built by a factory and called in a loop (`layer(x)`), which the index does not resolve
    sparse = SPARSE_FILE + """\

        def run_prefill(self, q, cu_seqlens):
            return self.forward(q, cu_seqlens)

    def build(n):
        return SparseAttn(n)
    """
    files = {"p/__init__.py": "", "p/kernel.py": KERNEL_FILE, "p/sparse.py": sparse}
    got = gc104(make(tmp_path / "factory", files))
    assert [(n, line, s) for n, line, s, _, _ in got] == [("kernel.py", 10, "error")]
    # held in an attribute an __init__ sets, its calls are followed: the prefill method is its only caller
    files["p/holder.py"] = """\
        import torch

        from p.sparse import SparseAttn

        class Holder(torch.nn.Module):
            def __init__(self, n):
                super().__init__()
                self.attn = SparseAttn(n)
    """
    files["p/sparse.py"] = SPARSE_FILE + """\

        def run_prefill(self, q, cu_seqlens):
            return self.forward(q, cu_seqlens)
    """
    got = gc104(make(tmp_path / "held", files))
    assert [(n, line, s) for n, line, s, _, _ in got] == [("kernel.py", 10, "warning")]
    assert "it is called only from prefill code: `SparseAttn.run_prefill` (sparse.py; " in got[0][3]
    assert got[0][3].endswith("via `SparseAttn.forward` -> `SparseAttn.varlen_attn`")


def test_a_wrapper_reached_only_through_a_query_length_test_is_a_warning_that_names_it(tmp_path):
    # KVQuant's shape: `if q_len > 1 and self.vcache.vlen == 0:` (HF-style model code) -> the module's call
    got = gc104(tree(tmp_path, "q", backend("q.shape[1] > 1 and self.q_len > 1")))
    assert [(n, line, s) for n, line, s, _, _ in got] == [("kernel.py", 10, "warning")]
    assert ("it runs only through `Backend.forward`'s call under `if q.shape[1] > 1 and self.q_len > 1:` "
            "(backend.py:12), a prefill branch (a query of more than one token is the prompt") in got[0][3]
    assert got[0][4]["path"] == "prefill branch"
    # the else of the one-token test too; its decode arm, and a test of another count, keep the error
    else_arm = backend("self.q_len == 1", body="pass\n                else:\n"
                       "                    out = self.bs_attn(q, meta.seq_start_loc)")
    assert [s for _, _, s, _, _ in gc104(tree(tmp_path, "e", else_arm))] == ["warning"]
    for name, test in (("decode", "self.q_len == 1"), ("heads", "self.num_heads > 1"), ("seq", "seq_len > 1")):
        got = gc104(tree(tmp_path, name, backend(test)))
        assert [(n, line, s) for n, line, s, _, _ in got] == [("kernel.py", 10, "error")], name
