"""Code that engines run outside capture although a capture root reaches it (``uncaptured-functions``):
teardown methods, prefill and chunked paths, prefill/decode-disaggregation KV transfer, PyTorch reference
implementations, model loading. Their findings stay, as warnings whose message says why; a look-alike
outside each pattern stays an error."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from graphcheck.config import DEFAULT_UNCAPTURED, UNCAPTURED_GROUPS, Config, ConfigError, from_table
from graphcheck.lint.engine import lint_paths
from graphcheck.lint.project import UncapturedNames, module_names

KERNEL = """\
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def kern(x_ptr, n):
        pass
"""


def lint(root: Path, files: dict[str, str], **config):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(KERNEL) + textwrap.dedent(text))
    # the tree's tests import every module: its launchers are live API, not dead code (graphcheck.lint.deadcode)
    names = module_names(str(root / rel) for rel in files if rel.endswith(".py"))
    (root / "tests").mkdir(exist_ok=True)
    (root / "tests" / "test_all.py").write_text("".join(f"from {name} import *\n" for name, _ in names.values()))
    cfg = Config(root=root, **config)
    return lint_paths([str(root)], cfg, use_cache=False, jobs=1).findings


def by_function(findings, code: str) -> dict[str, tuple[str, str]]:
    """function -> (severity, message) of its finding with ``code``."""
    return {f.function: (str(f.severity), f.message) for f in findings if f.code == code}


def test_teardown_methods_are_warnings_that_say_why(tmp_path):
    found = lint(tmp_path, {"comm.py": """\

        class Workspace:
            def destroy(self, buf):
                kern[(1,)](buf, 4)
                torch.cuda.synchronize()

            def __del__(self):
                kern[(1,)](self.buf, 4)
                torch.cuda.synchronize()

            def closest_bucket(self, buf):
                kern[(1,)](buf, 4)
                torch.cuda.synchronize()
    """})
    got = by_function(found, "GC110")
    assert got["Workspace.destroy"][0] == "warning"
    assert "`destroy` is teardown, which engines do not capture; uncaptured-functions `destroy`" in \
        got["Workspace.destroy"][1]
    assert got["Workspace.__del__"][0] == "warning"
    assert got["Workspace.closest_bucket"][0] == "error"  # `close` names the whole method, not a prefix


def test_exit_of_a_capture_context_stays_an_error(tmp_path):
    found = lint(tmp_path, {"ctx.py": """\

        class Timer:
            def __exit__(self, *exc):
                kern[(1,)](self.buf, 4)
                torch.cuda.synchronize()

        class GraphCapture:
            def __enter__(self):
                self.g.capture_begin()

            def __exit__(self, *exc):
                kern[(1,)](self.buf, 4)
                torch.cuda.synchronize()
                self.g.capture_end()
    """})
    got = by_function(found, "GC110")
    assert got["Timer.__exit__"][0] == "warning"
    assert got["GraphCapture.__exit__"][0] == "error"


PREFILL = """\

    def lens_of(x):
        return x.sum().item()

    def count_rows(x):
        return x.max().item()

    def attn_prefill(x):
        kern[(lens_of(x),)](x, 4)
        count_rows(x)

    def attn_decode(x):
        kern[(1,)](x, 4)
        return lens_of(x)

    def chunked_prefill_paged_decode(x):
        kern[(x.sum().item(),)](x, 4)

    class DSAPrefillRunner:
        def run(self, x):
            kern[(x.sum().item(),)](x, 4)
"""


def test_prefill_paths_are_warnings_and_decode_stays_an_error(tmp_path):
    found = lint(tmp_path, {"attn.py": PREFILL})
    got = by_function(found, "GC101")
    assert got["count_rows"][0] == "warning"  # reached only through the prefill path
    assert got["count_rows"][1].endswith(
        "inside `count_rows`, which is called from `attn_prefill`, which launches Triton kernel `kern` "
        "(`attn_prefill` looks like a prefill path; engines capture decode; uncaptured-functions `*prefill*`)")
    assert got["DSAPrefillRunner.run"][0] == "warning"  # an enclosing class counts, in any case
    assert got["lens_of"][0] == "error"  # the decode path reaches it too
    assert got["chunked_prefill_paged_decode"][0] == "error"  # `!*decode*`: it runs decode as well


def test_chunk_form_of_linear_attention_and_prefill_files(tmp_path):
    found = lint(tmp_path, {
        "fla/index.py": """\

            def prepare_chunk_indices(cu_seqlens):
                return cu_seqlens.tolist()

            def chunk_gated_delta_rule_fwd(x, cu_seqlens):
                kern[(1,)](x, 4)
                prepare_chunk_indices(cu_seqlens)

            def fused_recurrent_gated_delta_rule_fwd(x, lens):
                kern[(1,)](x, 4)
                return lens.tolist()
        """,
        "kda_chunked_bt16.py": """\

            def plan(x):
                kern[(x.sum().item(),)](x, 4)
        """,
        "sparse_prefill_utils.py": """\

            def build_token_ids(x):
                kern[(x.sum().item(),)](x, 4)
        """,
        # a chunked loss (training) is no prefill: folders do not count, only the file's stem
        "chunked_loss/distill.py": """\

            def loss_backward(x):
                kern[(x.sum().item(),)](x, 4)
        """,
    })
    tolist = by_function(found, "GC103")
    assert tolist["prepare_chunk_indices"][0] == "warning"
    assert "`prepare_chunk_indices` looks like a prefill path" in tolist["prepare_chunk_indices"][1]
    assert tolist["fused_recurrent_gated_delta_rule_fwd"][0] == "error"
    item = by_function(found, "GC101")
    assert item["plan"][0] == "warning" and "`kda_chunked_bt16.py` looks like a prefill path" in item["plan"][1]
    assert item["build_token_ids"][0] == "warning"
    assert item["loss_backward"][0] == "error"


def test_disaggregation_kv_transfer_is_matched_by_its_path(tmp_path):
    body = """\

        def gather_to_staging(x, lens):
            kern[(1,)](x, 4)
            return torch.tensor(lens, device=x.device)
    """
    packages = {f"{d}/__init__.py": "" for d in ("srt", "srt/disaggregation", "srt/disaggregation/common", "srt/mem")}
    found = lint(tmp_path, {**packages, "srt/disaggregation/common/staging_buffer.py": body,
                            "srt/mem/staging_buffer.py": body})
    got = {(Path(f.path).parent.name, str(f.severity)): f.message for f in found if f.code == "GC301"}
    assert ("mem", "error") in got
    assert "`staging_buffer.py` is KV transfer for prefill/decode disaggregation, outside the model forward; " \
        "uncaptured-functions `*/disaggregation/*`" in got[("common", "warning")]


def test_reference_implementations(tmp_path):
    found = lint(tmp_path, {"ops.py": """\

        def paged_logits_torch(q, lens):
            return [lens[i].item() for i in range(4)]

        def paged_logits_triton(q, lens):
            return [lens[i].item() for i in range(4)]

        def paged_logits(q, lens, use_triton):
            kern[(1,)](q, 4)
            if use_triton:
                return paged_logits_triton(q, lens)
            return paged_logits_torch(q, lens)
    """})
    got = by_function(found, "GC101")
    assert got["paged_logits_torch"][0] == "warning"
    assert "`paged_logits_torch` looks like a reference implementation" in got["paged_logits_torch"][1]
    assert got["paged_logits_triton"][0] == "error"


def test_model_loading_is_load_time(tmp_path):
    found = lint(tmp_path, {"layer.py": """\

        class Scheme:
            def process_weights_after_loading(self, w, scale):
                kern[(1,)](w, 4)
                return float(scale.item())

            def weight_loader(self, param, loaded, shard):
                kern[(1,)](param, 4)
                return int(shard.item())

            def load_weights(self, weights, count):
                kern[(1,)](weights, 4)
                return int(count.item())

            def load_kv_scales(self, w, scale):
                kern[(1,)](w, 4)
                return float(scale.item())
    """})
    got = by_function(found, "GC101")
    assert got["Scheme.process_weights_after_loading"][0] == "warning"
    assert ("`process_weights_after_loading` is load-time code: engines load and process model weights once, "
            "before they capture; uncaptured-functions `*after_loading*`") in \
        got["Scheme.process_weights_after_loading"][1]
    assert got["Scheme.weight_loader"][0] == "warning"
    assert got["Scheme.load_weights"][0] == "warning"
    assert got["Scheme.load_kv_scales"][0] == "error"  # not a load-time name: `load_*` alone is too broad


def test_a_capture_site_or_entry_point_is_captured_whatever_its_name(tmp_path):
    found = lint(tmp_path, {"run.py": """\

        def prefill_step(lens):
            return lens.sum().item()

        def chunk_step(lens):
            kern[(lens.sum().item(),)](lens, 4)

        def capture(g, lens):
            with torch.cuda.graph(g):
                prefill_step(lens)
    """}, entry_points=("chunk_step",))
    got = by_function(found, "GC101")
    assert got["prefill_step"][0] == "error"
    assert got["chunk_step"][0] == "error"


def test_code_in_a_capture_region_is_captured_whatever_the_function_is_called(tmp_path):
    found = lint(tmp_path, {"runner.py": """\

        def count_prefill(x):
            return x.sum().item()

        def capture_prefill(g, x):
            with torch.cuda.graph(g):
                n = x.max().item()
                count_prefill(x)
    """})
    got = {(f.function, f.line): str(f.severity) for f in found if f.code == "GC101"}
    assert got == {("count_prefill", 10): "error", ("capture_prefill", 14): "error"}


def test_the_list_is_configurable(tmp_path):
    files = {"attn.py": PREFILL}
    off = by_function(lint(tmp_path, files, uncaptured_functions=()), "GC101")
    assert off["count_rows"][0] == "error" and off["DSAPrefillRunner.run"][0] == "error"
    mine = by_function(lint(tmp_path, files, uncaptured_functions=("lens_of",)), "GC101")
    assert mine["lens_of"][0] == "warning"
    assert "`lens_of` is configured as code engines do not capture; uncaptured-functions `lens_of`" in \
        mine["lens_of"][1]
    assert mine["count_rows"][0] == "error"


def test_config_key(tmp_path):
    cfg = from_table({"uncaptured-functions": ["*warmup*", "!*decode*"]}, None, tmp_path)
    assert cfg.uncaptured_functions == ("*warmup*", "!*decode*")
    assert from_table({"uncaptured_functions": []}, None, tmp_path).uncaptured_functions == ()
    assert Config().uncaptured_functions == DEFAULT_UNCAPTURED
    with pytest.raises(ConfigError):
        from_table({"uncaptured-functions": 3}, None, tmp_path)


def test_uncaptured_names_globs():
    names = UncapturedNames(DEFAULT_UNCAPTURED)
    assert names.match("PcieIpcAllReduceWorkspace.destroy", "/x/comm/pcie_ipc_ar.py") == ("destroy", "destroy")
    assert names.match("transform_index_page_table_prefill_fast", "/x/dsa/transform_index.py")[1] == "*prefill*"
    assert names.match("compile.<locals>.call", "/x/kda_kernels/kda_chunked_bt16.py") == (
        "kda_chunked_bt16.py", "*_chunked_*")
    assert names.match("_gather", "/x/srt/disaggregation/common/staging_buffer.py")[1] == "*/disaggregation/*"
    assert names.match("chunked_prefill_paged_decode", "/x/ops/chunked_prefill_paged_decode.py") is None
    assert names.match("LigerFusedLinearDistillationBase.backward", "/x/chunked_loss/fused_linear_distillation.py") \
        is None
    assert names.match("_nanmedian_kthvalue_fallback", "/x/ops/nanmedian.py") is None  # fallbacks run captured
    assert names.match("fp8_paged_mqa_logits_torch", "/x/rocm_aiter_mla_sparse.py")[1] == "*_torch"
    assert UncapturedNames(["Pool.*"]).match("Pool.free.<locals>.f", None) == ("Pool.free", "Pool.*")
    assert UncapturedNames([]).match("destroy", None) is None
    every = [glob for group in UNCAPTURED_GROUPS.values() for glob in group]
    assert tuple(every) == DEFAULT_UNCAPTURED


def test_lint_help_and_guide_name_the_key():
    from graphcheck.cli.lint_cmd import EPILOG

    assert "uncaptured-functions" in EPILOG
    guide = (Path(__file__).resolve().parents[2] / "docs" / "guide" / "lint.md").read_text()
    for group in UNCAPTURED_GROUPS.values():
        for glob in group:
            assert f"`{glob}`" in guide, glob
