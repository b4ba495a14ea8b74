"""Branches an engine does not run under capture (graphcheck.lint.coldpaths): first-use / cached work and
optional-argument fallbacks give warnings that say why, never silence; a caller that takes the fallback
keeps the error."""

from __future__ import annotations

import textwrap
from pathlib import Path

from lint_trees import KERNEL, lint_module, make, tree_findings

from graphcheck.config import Config
from graphcheck.lint.engine import lint_paths

lint = lint_module


# a kernel wrapper whose `max_len` fallback (line 11) syncs: the callers decide whether it is an error
DECODE_WITH_FALLBACK = """\
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def kern(x_ptr, n, BLOCK: tl.constexpr):
        pass

    def decode(q: torch.Tensor, lens: torch.Tensor, max_len=None):
        if max_len is None:
            max_len = lens.max().item()
        kern[(max_len,)](q, 1, BLOCK=64)
"""


def found(root: Path):
    return sorted((Path(f.path).name, f.line, f.code, f.severity.value, f.message) for f in tree_findings(root))


# -- first use -----------------------------------------------------------------------------------------


def test_any_cache_decorator_makes_the_body_first_use_work():
    got = lint('''
        @tensor_cache
        def segment_ids(x, offsets: torch.Tensor):
            ids = offsets.tolist()
            kern[(1,)](x, 1, BLOCK=64)
            return ids
    ''')
    assert [(c, s) for c, s, _, _ in got] == [("GC103", "warning")]
    assert "`@tensor_cache` misses, once per key" in got[0][3]
    loud = lint('''
        @tensor_stats
        def segment_ids(x, offsets: torch.Tensor):
            ids = offsets.tolist()
            kern[(1,)](x, 1, BLOCK=64)
            return ids
    ''')
    assert [(c, s) for c, s, _, _ in loud] == [("GC103", "error")]


def test_tuning_under_a_cache_miss_test_is_first_use_work():
    got = lint('''
        _TUNED = {}

        def run(x: torch.Tensor, out: torch.Tensor, tune_cache=None):
            key = (x.shape[0], x.dtype)
            if key not in _TUNE_CACHE:
                kern[(1,)](out, 1, BLOCK=64)
                torch.cuda.synchronize()
                if torch.isnan(out).any():
                    raise RuntimeError("bad config")
                _TUNE_CACHE[key] = 64
            if _TUNED.get(key) is None:
                _TUNED[key] = int(out.sum())
            kern[(1,)](x, 1, BLOCK=64)
    ''')
    assert [(c, s) for c, s, _, _ in got] == [("GC102", "warning"), ("GC110", "warning"), ("GC111", "warning")]
    assert all("on a miss of" in m and "first use" in m for _, _, _, m in got)
    loud = lint('''
        def run(x: torch.Tensor, out: torch.Tensor, seen: dict):
            key = (x.shape[0], x.dtype)
            if key not in seen:
                torch.cuda.synchronize()
            kern[(1,)](x, 1, BLOCK=64)
    ''')
    assert [(c, s) for c, s, _, _ in loud] == [("GC110", "error")]  # not a cache: nothing is stored


def test_a_helper_called_only_on_a_cache_miss_is_first_use_work(tmp_path):
    files = {"p/__init__.py": "", "p/ops.py": """\
        import torch
        import triton
        import triton.language as tl

        @triton.jit
        def kern(x_ptr, c_ptr, BLOCK: tl.constexpr):
            pass

        def _build(dtype, device):
            return torch.tensor([1.0, 2.0], dtype=dtype, device=device)

        TABLES = {}

        def _table(dtype, device):
            if dtype not in TABLES:
                TABLES[dtype] = _build(dtype, device)
            return TABLES[dtype]

        def launch(x):
            kern[(1,)](x, _table(x.dtype, x.device), BLOCK=64)
    """, "p/layer.py": "from p.ops import launch\n"}  # a user of the launcher: not dead code
    got = found(make(tmp_path / "a", files))
    assert [(n, line, c, s) for n, line, c, s, _ in got] == [("ops.py", 10, "GC301", "warning")]
    assert "only through `_table`'s call on a miss of `TABLES`" in got[0][4]
    files["p/ops.py"] = files["p/ops.py"].replace("kern[(1,)](x, _table(x.dtype, x.device), BLOCK=64)",
                                                  "kern[(1,)](x, _build(x.dtype, x.device), BLOCK=64)")
    loud = found(make(tmp_path / "b", files))
    assert [(n, line, c, s) for n, line, c, s, _ in loud] == [("ops.py", 10, "GC301", "error")]


# -- optional-argument fallbacks -------------------------------------------------------------------------


def test_sync_under_an_omitted_optional_argument_is_a_warning_that_says_so():
    got = lint('''
        def decode(q: torch.Tensor, cu_seqlens: torch.Tensor, max_q_len: Optional[int] = None, lens=None):
            if max_q_len is None:
                max_q_len = int((cu_seqlens[1:] - cu_seqlens[:-1]).max().item())
            lens = lens or cu_seqlens.diff().max().item()
            if not cu_seqlens.is_contiguous() and max_q_len is None:
                cu_seqlens.cpu()
            kern[(max_q_len,)](q, lens, BLOCK=64)
    ''')
    syncs = [(c, s, m) for c, s, _, m in got if c != "GC402"]
    assert [(c, s) for c, s, _ in syncs] == [("GC101", "warning"), ("GC101", "warning"), ("GC104", "warning")]
    assert all("runs only when the caller omits" in m for _, _, m in syncs)
    derived = [(s, m) for c, s, _, m in got if c == "GC402"]  # `lens` baked into the launch follows the sync
    assert derived and derived[0][0] == "warning" and "optional argument path" in derived[0][1]
    loud = lint('''
        def decode(q: torch.Tensor, cu_seqlens: torch.Tensor, max_q_len: int = 0):
            if max_q_len == 0:
                max_q_len = int((cu_seqlens[1:] - cu_seqlens[:-1]).max().item())
            kern[(max_q_len,)](q, 1, BLOCK=64)
    ''')
    assert [(c, s) for c, s, _, _ in loud] == [("GC101", "error"), ("GC401", "warning")]  # grid follows the sync


def test_an_optional_field_of_a_parameter_and_an_early_return_when_it_is_set():
    got = lint('''
        def max_len(info) -> int:
            if info.max_len is not None:
                return info.max_len
            return int(info.seg_lens.max().item())

        def launch(x, info):
            kern[(max_len(info),)](x, 1, BLOCK=64)
    ''')
    assert [(c, s) for c, s, _, _ in got] == [("GC101", "warning")]
    assert "when `info.max_len` is None (an optional field of `info`" in got[0][3]
    loud = lint('''
        def launch(x, out: Optional[torch.Tensor] = None):
            if out is not None:
                raise NotImplementedError("out")
            n = int(x.max().item())
            kern[(n,)](x, 1, BLOCK=64)
    ''')
    # a raise: what follows is the normal path
    assert [(c, s) for c, s, _, _ in loud] == [("GC101", "error"), ("GC401", "warning")]


def test_a_caller_that_omits_the_optional_argument_keeps_the_error(tmp_path):
    files = {"p/__init__.py": "", "p/ops.py": DECODE_WITH_FALLBACK, "p/engine.py": """\
        import torch
        from p.ops import decode

        def step(q, lens, cfg, graph):
            with torch.cuda.graph(graph):
                decode(q, lens, max_len=cfg.max_len)
    """}
    quiet = found(make(tmp_path / "a", files))
    assert [(line, c, s) for _, line, c, s, _ in quiet] == [(11, "GC101", "warning")]
    assert "no caller in the tree does" in quiet[0][4]
    files["p/engine.py"] += "\n        def prefill(q, lens):\n            decode(q, lens)\n"
    loud = found(make(tmp_path / "b", files))
    assert [(line, c, s) for _, line, c, s, _ in loud] == [(11, "GC101", "error")]
    assert "as `prefill` (engine.py:" in loud[0][4]


def test_a_module_level_environment_switch_keeps_the_optional_argument_fallbacks(tmp_path):
    # the function tests an environment switch too: its fallback arm is still a range, and the callers decide
    ops = """\
        import os
        import torch
        import triton
        import triton.language as tl

        FAST = os.getenv("K", "0") == "1"

        @triton.jit
        def kern(x_ptr, n, BLOCK: tl.constexpr):
            pass

        def decode(q: torch.Tensor, lens: torch.Tensor, max_len=None):
            if FAST:
                q = q * 2
            m = lens.max().item() if max_len is None else max_len
            kern[(m,)](q, 1, BLOCK=64)
    """
    files = {"p/__init__.py": "", "p/ops.py": ops, "p/engine.py": """\
        import torch
        from p.ops import decode

        def step(q, lens, cfg, graph):
            with torch.cuda.graph(graph):
                decode(q, lens, max_len=cfg.max_len)
    """}
    quiet = [f for f in found(make(tmp_path / "a", files)) if f[2] == "GC101"]
    assert [(line, c, s) for _, line, c, s, _ in quiet] == [(15, "GC101", "warning")]
    assert "runs only when the caller omits `max_len`" in quiet[0][4]
    files["p/engine.py"] = files["p/engine.py"].replace("max_len=cfg.max_len", "")
    loud = [f for f in found(make(tmp_path / "b", files)) if f[2] == "GC101"]
    assert [(line, c, s) for _, line, c, s, _ in loud] == [(15, "GC101", "error")]
    assert "as `step` (engine.py:" in loud[0][4]


def test_a_cache_keyed_on_a_tensors_version_misses_again_at_capture():
    loud = lint('''
        _LENGTHS_CACHE = {}

        def all_equal(x, lengths: torch.Tensor, value):
            key = (lengths.data_ptr(), getattr(lengths, "_version", None), value)
            hit = _LENGTHS_CACHE.get(key)
            if hit is None:
                hit = bool((lengths.cpu() == value).all())
                _LENGTHS_CACHE[key] = hit
            kern[(1,)](x, hit, BLOCK=64)
    ''')
    assert ("GC104", "error") in [(c, s) for c, s, _, _ in loud]
    quiet = lint('''
        _LENGTHS_CACHE = {}

        def all_equal(x, lengths: torch.Tensor, value):
            key = (lengths.data_ptr(), lengths.shape[0], value)
            hit = _LENGTHS_CACHE.get(key)
            if hit is None:
                hit = bool((lengths.cpu() == value).all())
                _LENGTHS_CACHE[key] = hit
            kern[(1,)](x, hit, BLOCK=64)
    ''')
    assert [(c, s) for c, s, _, _ in quiet if c == "GC104"] == [("GC104", "warning")]


def test_only_the_fallback_arm_of_a_one_line_conditional_is_cold():
    loud = lint('''
        def attn(q: torch.Tensor, max_seqlen: Optional[torch.Tensor] = None):
            n = q.size(1) if max_seqlen is None else max_seqlen.item()
            kern[(1,)](q, n, BLOCK=64)
    ''')
    assert [(c, s) for c, s, _, _ in loud if c == "GC101"] == [("GC101", "error")]  # runs when it is given
    quiet = lint('''
        def attn(q: torch.Tensor, lens: torch.Tensor, max_seqlen: Optional[int] = None):
            n = max_seqlen if max_seqlen is not None else lens.max().item()
            kern[(1,)](q, n, BLOCK=64)
    ''')
    assert [(c, s) for c, s, _, _ in quiet if c == "GC101"] == [("GC101", "warning")]


# -- prefill branches ------------------------------------------------------------------------------------


def test_a_sync_under_a_prefill_test_is_a_warning_that_says_so():
    got = lint('''
        def mixer(x, meta, has_prefill: bool):
            if has_prefill:
                n = meta.lengths.sum().item()
            kern[(1,)](x, 1, BLOCK=64)
    ''')
    assert [(c, s) for c, s, _, _ in got] == [("GC101", "warning")]
    assert "under `if has_prefill:` (line" in got[0][3] and "a prefill branch" in got[0][3]
    for test in ("num_prefills > 0", "meta.prefill_metadata is not None", "meta.is_prefill()"):
        got = lint(f'''
            def mixer(x, meta, num_prefills):
                if {test}:
                    n = meta.lengths.sum().item()
                kern[(1,)](x, 1, BLOCK=64)
        ''')
        assert [(c, s) for c, s, _, _ in got] == [("GC101", "warning")], test
    # the decode arm of the same test, a test naming decode too, and a test about something else stay errors
    for body in ("if not has_prefill:\n        n = meta.lengths.sum().item()",
                 "if has_prefill and has_decode:\n        n = meta.lengths.sum().item()",
                 "if num_prefills == 0:\n        n = meta.lengths.sum().item()",
                 "if has_prefill:\n        pass\n    else:\n        n = meta.lengths.sum().item()",
                 "if use_fp8:\n        n = meta.lengths.sum().item()"):
        loud = lint("def mixer(x, meta, has_prefill, has_decode, num_prefills, use_fp8):\n    " + body
                    + "\n    kern[(1,)](x, 1, BLOCK=64)\n")
        assert [(c, s) for c, s, _, _ in loud] == [("GC101", "error")], body


def test_a_kernel_wrapper_called_only_under_prefill_tests_is_reached_only_through_prefill(tmp_path):
    files = {"p/__init__.py": "", "p/conv.py": """\
        import torch
        import triton
        import triton.language as tl

        @triton.jit
        def kern(x_ptr, n, BLOCK: tl.constexpr):
            pass

        def conv_fn(x, lengths):
            seqlens = lengths.to("cpu")
            kern[(1,)](x, 1, BLOCK=64)
    """, "p/mixer.py": """\
        import torch

        from p.conv import conv_fn

        class Mixer(torch.nn.Module):
            def forward(self, x, lengths, has_prefill):
                if has_prefill:
                    conv_fn(x, lengths)
    """}
    got = [row for row in found(make(tmp_path / "a", files)) if row[2] == "GC104"]
    assert [(n, line, c, s) for n, line, c, s, _ in got] == [("conv.py", 10, "GC104", "warning")]
    assert "only through `Mixer.forward`'s call under `if has_prefill:`" in got[0][4]
    # one call outside the prefill test (a decode path that calls it too) keeps the error
    files["p/mixer.py"] += "            return conv_fn(x, lengths)\n"
    loud = [row for row in found(make(tmp_path / "b", files)) if row[2] == "GC104"]
    assert [(n, line, c, s) for n, line, c, s, _ in loud] == [("conv.py", 10, "GC104", "error")]


# -- opt-in flags ----------------------------------------------------------------------------------------


def test_a_sync_under_an_opt_in_flag_is_a_warning_unless_a_caller_passes_it(tmp_path):
    got = lint('''
        def logits(x, lens, clean: bool = False):
            kern[(1,)](x, 1, BLOCK=64)
            if clean:
                for b in range(4):
                    n = lens[b].item()
    ''')
    assert [(c, s) for c, s, _, _ in got] == [("GC101", "warning")]
    assert ("when `clean=True` (default False): an opt-in flag, off under default capture; no caller in the tree "
            "turns it on") in got[0][3]
    loud = lint('''
        def logits(x, lens, clean: bool = True):
            kern[(1,)](x, 1, BLOCK=64)
            if clean:
                n = lens[0].item()
    ''')
    assert [(c, s) for c, s, _, _ in loud] == [("GC101", "error")]  # on by default: the normal path
    files = {"p/__init__.py": "", "p/ops.py": KERNEL + textwrap.dedent('''
        def logits(x, lens, clean: bool = False):
            kern[(1,)](x, 1, BLOCK=64)
            if clean:
                n = lens[0].item()

        def decode(x, lens):
            return logits(x, lens, clean=True)
    ''')}
    called = [row for row in found(make(tmp_path, files)) if row[2] == "GC101"]
    assert [(c, s) for _, _, c, s, _ in called] == [("GC101", "error")]
    assert "it runs when `clean` is on (default False), and `decode` (ops.py:" in called[0][4]
    assert called[0][4].endswith("turns it on")



# -- the kind of a cold path -----------------------------------------------------------------------------


def test_the_summary_stores_the_kind_of_each_cold_call_and_findings_take_it_from_there(tmp_path):
    # the kind (prefill branch or cache miss) travels as data from the summary to the finding; it is not
    # read back out of the reason's wording
    from graphcheck.lint.summary import summarize

    source = textwrap.dedent("""\
        CACHE = {}

        def build(key): ...
        def run_prefill(x): ...
        def decode(x): ...

        def step(x, key, has_prefill):
            if key not in CACHE:
                CACHE[key] = build(key)
            if has_prefill:
                run_prefill(x)
            return decode(x)
    """)
    rec = summarize(source, "m", False, ())["funcs"]["step"]
    assert [(callee, kind) for callee, _why, kind in rec["cold"]] == [
        ("m.build", "cache miss"), ("m.run_prefill", "prefill branch")]
    assert "prefill" in rec["cold"][1][1] and "once per key" in rec["cold"][0][1]

    files = {"p/__init__.py": "", "p/conv.py": """\
        import triton
        import triton.language as tl

        @triton.jit
        def kern(x_ptr, n, BLOCK: tl.constexpr):
            pass

        TABLES = {}

        def _table(x):
            if x.dtype not in TABLES:
                TABLES[x.dtype] = fill(x)
            return TABLES[x.dtype]

        def fill(x):
            return x.sum().item()

        def conv_fn(x, lengths):
            seqlens = lengths.to("cpu")
            kern[(1,)](x, _table(x), BLOCK=64)
    """, "p/mixer.py": """\
        import torch

        from p.conv import conv_fn

        class Mixer(torch.nn.Module):
            def forward(self, x, lengths, has_prefill):
                if has_prefill:
                    conv_fn(x, lengths)
    """}
    root = make(tmp_path, files)
    result = lint_paths([str(root)], Config(root=root), use_cache=False, jobs=1)
    paths = {(f.code, f.line): f.evidence.get("path") for f in result.findings}
    assert paths[("GC104", 19)] == "prefill branch"  # conv_fn is reached only through the prefill branch
    assert paths[("GC101", 16)] == "cache miss"  # fill runs only on a miss of TABLES


INSTANCE_CALLS = {"p/__init__.py": "", "p/layers.py": """\
    import graphcheck
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def kern(x_ptr, n, BLOCK: tl.constexpr):
        pass

    class Runner:
        def __call__(self, x, lengths):
            seqlens = lengths.to("cpu")
            kern[(1,)](x, 1, BLOCK=64)

    class Helper:
        def __call__(self, x):
            return x.sum().item()

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.runner = Runner()
            self.helper = Helper()

        @graphcheck.capturable
        def forward(self, x, lengths, has_prefill):
            if has_prefill:
                self.runner(x, lengths)
                self.helper(x)
            return x
"""}


def test_cold_paths_follow_instance_calls_as_the_reachability_walk_does(tmp_path):
    # `self.runner(x)` runs Runner.__call__: the reachability walk follows it, and so do the cold-path table
    # (a helper called only under the prefill test) and the cold-only roots (a kernel wrapper whose every
    # call is an instance call under the prefill test)
    got = {(line, code): (sev, msg) for _n, line, code, sev, msg in found(make(tmp_path / "a", INSTANCE_CALLS))}
    assert got[(12, "GC104")][0] == "warning"
    assert "only through `Model.forward`'s call under `if has_prefill:`" in got[(12, "GC104")][1]
    assert got[(17, "GC101")][0] == "warning"
    assert "only through `Model.forward`'s call under `if has_prefill:`" in got[(17, "GC101")][1]
    # called outside the prefill test too: both stay errors
    files = dict(INSTANCE_CALLS)
    files["p/layers.py"] = files["p/layers.py"].replace(
        "            return x\n", "            self.runner(x, lengths)\n            return self.helper(x)\n")
    loud = {(line, code): sev for _n, line, code, sev, _m in found(make(tmp_path / "b", files))}
    assert loud[(12, "GC104")] == "error" and loud[(17, "GC101")] == "error"


def test_instance_calls_are_call_records_of_the_method_they_run(tmp_path):
    from graphcheck.lint import callers
    from graphcheck.lint.project import ProjectIndex

    root = make(tmp_path, INSTANCE_CALLS)
    index = ProjectIndex(sorted(str(p) for p in root.rglob("*.py")))
    table = callers.call_table(index)
    records = table["p.layers.Runner.__call__"]
    assert [(r[0], r[2]) for r in records] == [("`Model.forward` (layers.py:28)", 1)]  # `self` is filled


def test_callers_that_never_run_under_capture_do_not_keep_the_fallback_an_error(tmp_path):
    files = {"p/__init__.py": "", "p/ops.py": DECODE_WITH_FALLBACK, "p/engine.py": """\
        import torch
        from p.ops import decode

        def step(q, lens, cfg, graph):
            with torch.cuda.graph(graph):
                decode(q, lens, max_len=cfg.max_len)

        class Backend:
            def init_forward_metadata(self, q, lens):
                decode(q, lens)

        def bench_decode(q, lens):
            decode(q, lens)
    """}
    quiet = found(make(tmp_path / "a", files))
    assert [(line, c, s) for _, line, c, s, _ in quiet] == [(11, "GC101", "warning")]
    assert "only callers that never run under capture do" in quiet[0][4]
    assert "`Backend.init_forward_metadata` (engine.py:10) (eager)" in quiet[0][4]
    assert "`bench_decode` (engine.py:13) (harness)" in quiet[0][4]
    # a caller on the capture path that omits it keeps the error, whatever the others are
    files["p/engine.py"] += "\n        def serve(q, lens, graph):\n            with torch.cuda.graph(graph):\n                decode(q, lens)\n"
    loud = found(make(tmp_path / "b", files))
    assert [(line, c, s) for _, line, c, s, _ in loud] == [(11, "GC101", "error")]
    assert "as `serve` (engine.py:" in loud[0][4]


def test_an_opt_in_passed_only_by_a_benchmark_stays_a_warning(tmp_path):
    files = {"p/__init__.py": "", "p/ops.py": """\
        import torch
        import triton
        import triton.language as tl

        @triton.jit
        def kern(x_ptr, n, BLOCK: tl.constexpr):
            pass

        def decode(q: torch.Tensor, lens: torch.Tensor, exact=False):
            if exact:
                assert lens.max().item() < 4096
            kern[(4,)](q, 1, BLOCK=64)
    """, "p/engine.py": """\
        import torch
        from p.ops import decode

        def step(q, lens, graph):
            with torch.cuda.graph(graph):
                decode(q, lens)

        def benchmark_decode(q, lens):
            decode(q, lens, exact=True)
    """}
    quiet = found(make(tmp_path / "a", files))
    assert [(c, s) for _, _, c, s, _ in quiet if c == "GC101"] == [("GC101", "warning")]
    files["p/engine.py"] = files["p/engine.py"].replace("decode(q, lens)\n", "decode(q, lens, exact=True)\n", 1)
    loud = found(make(tmp_path / "b", files))
    assert [(c, s) for _, _, c, s, _ in loud if c == "GC101"] == [("GC101", "error")]


# -- query-length tests (prefill-lengths) ---------------------------------------------------------------


def test_a_sync_under_a_query_length_test_is_a_prefill_warning_that_names_it():
    # HF-style model code: a query of more than one token is the prompt; decode takes one, and is captured
    for test, arm in (("q_len > 1", "body"), ("q_len != 1", "body"), ("q_len >= 2", "body"),
                      ("1 < q_len", "body"), ("self.query_length > 1", "body"), ("Q_LEN > 1", "body"),
                      ("q_len > 1 and self.vlen == 0", "body"), ("not q_len == 1", "body"),
                      ("q_len == 1", "else"), ("q_len <= 1", "else"), ("q_len < 2", "else")):
        body = ("n = lens.sum().item()" if arm == "body"
                else "pass\n    else:\n        n = lens.sum().item()")
        got = lint(f"def attn(self, x, lens, q_len, Q_LEN):\n    if {test}:\n        {body}\n"
                   "    kern[(1,)](x, 1, BLOCK=64)\n")
        assert [(c, s) for c, s, _, _ in got] == [("GC101", "warning")], test
        where = "under" if arm == "body" else "in the `else` of"
        assert f"{where} `if {test}:` (line " in got[0][3], test
        assert "a prefill branch (a query of more than one token is the prompt" in got[0][3], test


def test_the_decode_arm_other_lengths_and_other_names_keep_the_error():
    for body in ("if q_len == 1:\n        n = lens.sum().item()",  # the decode arm
                 "if q_len > 1:\n        pass\n    else:\n        n = lens.sum().item()",
                 "if q_len == 1 and use_fast:\n        pass\n    else:\n        n = lens.sum().item()",
                 "if q_len > 1 or use_fast:\n        n = lens.sum().item()",
                 "if q_len > 4:\n        n = lens.sum().item()",  # not the one-token split
                 "if 0 < q_len < 8:\n        n = lens.sum().item()",
                 "if q_len > 1 and is_decode:\n        n = lens.sum().item()",  # names decode
                 # not a query length: a speculative verify step has several tokens and is captured
                 "if seq_len > 1:\n        n = lens.sum().item()",
                 "if num_tokens > 1:\n        n = lens.sum().item()",
                 "if num_heads > 1:\n        n = lens.sum().item()",
                 "if q_seq_len > 1:\n        n = lens.sum().item()"):
        loud = lint("def attn(x, lens, q_len, seq_len, num_tokens, num_heads, q_seq_len, use_fast, is_decode):\n"
                    "    " + body + "\n    kern[(1,)](x, 1, BLOCK=64)\n")
        assert [(c, s) for c, s, _, _ in loud] == [("GC101", "error")], body


def test_prefill_lengths_are_configurable(tmp_path):
    from graphcheck.config import from_table

    source = textwrap.dedent("""\
        import triton
        import triton.language as tl

        @triton.jit
        def kern(x_ptr, n, BLOCK: tl.constexpr):
            pass

        def attn(x, lens, q_len, seqlen_q):
            if seqlen_q > 1:
                n = lens.sum().item()
            if q_len > 1:
                m = lens.max().item()
            kern[(1,)](x, 1, BLOCK=64)
    """)
    root = make(tmp_path / "c", {"p/__init__.py": "", "p/attn.py": source})
    config = from_table({"prefill-lengths": ["seqlen_q"]}, None, root)
    assert config.prefill_lengths == ("seqlen_q",)
    got = sorted((f.line, f.severity.value) for f in lint_paths([str(root)], config, use_cache=False, jobs=1).findings
                 if f.code == "GC101")
    assert got == [(10, "warning"), (12, "error")]  # the list replaces the default: q_len is no length now
    default = sorted((f.line, f.severity.value) for f in tree_findings(root) if f.code == "GC101")
    assert default == [(10, "error"), (12, "warning")]
