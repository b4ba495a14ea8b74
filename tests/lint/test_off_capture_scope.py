"""Functions that are never captured code, although a capture root names them: metadata builders that
engines run eagerly before a replay (``eager-functions``) and tests, benchmarks and references kept in
library files (``harness-functions``). Neither is a root, and reachability does not pass through them.
Each behaviour has a firing twin."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from graphcheck.config import (
    DEFAULT_EAGER,
    DEFAULT_HARNESS,
    Config,
    ConfigError,
    from_table,
)
from graphcheck.lint.engine import lint_paths
from graphcheck.lint.project import ScopeNames

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
        path.write_text(textwrap.dedent(text))
    cfg = Config(root=root, **config)
    found = lint_paths([str(root)], cfg, use_cache=False, jobs=1).findings
    return sorted((Path(f.path).name, f.line, f.code, f.function) for f in found)


BACKEND = KERNEL + """\

    class Backend:
        def init_forward_metadata(self, batch):
            n = batch.seq_lens.max().item()
            kern[(1,)](batch.seq_lens, 4)
            self.helper(batch)

        def init_forward_metadata_in_graph(self, batch):
            m = batch.seq_lens.sum().item()
            kern[(1,)](batch.seq_lens, 4)

        def helper(self, batch):
            return batch.lens.tolist()
"""


def test_eager_metadata_builder_is_not_a_root_and_not_walked(tmp_path):
    got = lint(tmp_path, {"backend.py": BACKEND})
    functions = {f for *_, f in got}
    assert "Backend.init_forward_metadata" not in functions
    assert "Backend.helper" not in functions  # reached only through the eager builder
    # the metadata hook that runs inside the captured forward is still checked
    assert any(f == "Backend.init_forward_metadata_in_graph" and code == "GC101" for _, _, code, f in got)


def test_eager_functions_are_still_found_by_all_functions_and_when_turned_off(tmp_path):
    every = lint(tmp_path, {"backend.py": BACKEND}, all_functions=True)
    assert any(f == "Backend.init_forward_metadata" and code == "GC101" for _, _, code, f in every)
    assert any(f == "Backend.helper" and code == "GC103" for _, _, code, f in every)
    off = lint(tmp_path, {"backend.py": BACKEND}, eager_functions=())
    assert any(f == "Backend.init_forward_metadata" and code == "GC101" for _, _, code, f in off)
    assert any(f == "Backend.helper" for *_, f in off)


def test_a_function_reached_another_way_stays_in_scope(tmp_path):
    got = lint(tmp_path, {"backend.py": textwrap.dedent(BACKEND) + textwrap.dedent("""\

        def forward(batch):
            kern[(1,)](batch.seq_lens, 4)
            Backend.helper(None, batch)
    """)})
    assert any(f == "Backend.helper" and code == "GC103" for _, _, code, f in got)


def test_builders_planners_and_prepare_metadata(tmp_path):
    got = lint(tmp_path, {"meta.py": textwrap.dedent(KERNEL) + textwrap.dedent("""\

        class FlashAttentionMetadataBuilder:
            def build(self, lens):
                kern[(lens.max().item(),)](lens, 4)

        class DecodeWrapper:
            def plan(self, indptr):
                kern[(indptr[-1].item(),)](indptr, 4)

        def prepare_decode_metadata(lens):
            kern[(lens.sum().item(),)](lens, 4)

        def plan_dcp_metadata(lens):
            kern[(lens.sum().item(),)](lens, 4)

        def decode(lens):
            kern[(lens.sum().item(),)](lens, 4)
    """)})
    assert {f for *_, f in got} == {"decode"}


def test_a_capture_site_or_entry_point_overrides_the_eager_list(tmp_path):
    files = {"run.py": textwrap.dedent(KERNEL) + textwrap.dedent("""\

        def prepare_step_metadata(lens):
            return lens.sum().item()

        def capture(g, lens):
            with torch.cuda.graph(g):
                prepare_step_metadata(lens)
    """)}
    got = lint(tmp_path, files)
    assert any(f == "prepare_step_metadata" and code == "GC101" for _, _, code, f in got)


HARNESS = KERNEL + """\

    class MoeTester:
        def run(self, x):
            kern[(x.max().item(),)](x, 4)

    class _GemmReferenceLauncher:
        def __call__(self, x):
            kern[(1,)](x, 4)
            torch.cuda.synchronize()

    def bench_decode(x):
        kern[(x.max().item(),)](x, 4)

    def run_test_case(x):
        kern[(x.max().item(),)](x, 4)

    def attention_ref(x):
        return x.sum().item()

    def reference_gemm(x):
        return x.sum().item()

    def attention_impl(x):
        return x.sum().item()

    def launch(x):
        kern[(1,)](x, 4)
        attention_ref(x)
        reference_gemm(x)
        attention_impl(x)

    if __name__ == "__main__":
        def script_main(x):
            kern[(x.max().item(),)](x, 4)
"""


def test_tests_benchmarks_and_references_are_not_roots_and_not_walked(tmp_path):
    got = lint(tmp_path, {"ops.py": HARNESS})
    assert {f for *_, f in got} == {"attention_impl"}  # the library helper that `launch` reaches


def test_harness_functions_config_turns_it_off(tmp_path):
    got = lint(tmp_path, {"ops.py": HARNESS}, harness_functions=())
    functions = {f for *_, f in got}
    assert {"MoeTester.run", "bench_decode", "run_test_case", "attention_ref", "reference_gemm",
            "_GemmReferenceLauncher.__call__", "attention_impl"} <= functions
    # functions under `if __name__ == "__main__":` are script code whatever the globs say
    assert "script_main" not in functions


def test_scope_names_globs():
    names = ScopeNames(["*.plan", "*MetadataBuilder*.build*", "bench_*"])
    assert names.match("DecodeWrapper.plan")
    assert names.match("DecodeWrapper.plan.<locals>.inner")
    assert not names.match("plan")
    assert not names.match("DecodeWrapper.planner")
    assert names.match("FlashAttnMetadataBuilder.build_for_cudagraph_capture")
    assert names.match("bench_x") and names.match("Cls.bench_x") and names.match("bench_x.<locals>.f")
    assert not names.match("benchx")
    assert not ScopeNames([]).match("anything")
    assert ScopeNames(DEFAULT_HARNESS).match("Fc12TesterBase.run_kernel")
    assert ScopeNames(DEFAULT_HARNESS).match("Fc12Tester.run_kernel")
    assert ScopeNames(DEFAULT_EAGER).match("AiterAttnBackend.init_forward_metadata")
    assert not ScopeNames(DEFAULT_EAGER).match("AiterAttnBackend.init_forward_metadata_in_graph")
    assert not ScopeNames(DEFAULT_EAGER).match("Backend.init_forward_metadata_replay_cuda_graph")
    # FlashAttention-3's scheduler metadata is built by the attention metadata builder, before the replay
    assert ScopeNames(DEFAULT_EAGER).match("get_scheduler_metadata")
    assert not ScopeNames(DEFAULT_EAGER).match("scheduler_step")


def test_config_keys(tmp_path):
    cfg = from_table({"eager-functions": ["*.setup_step"], "harness_functions": []}, None, tmp_path)
    assert cfg.eager_functions == ("*.setup_step",)
    assert cfg.harness_functions == ()
    with pytest.raises(ConfigError):
        from_table({"eager-functions": 3}, None, tmp_path)


def test_a_launcher_called_only_from_eager_or_harness_code_runs_eagerly(tmp_path):
    got = lint(tmp_path, {"backend.py": textwrap.dedent(KERNEL) + textwrap.dedent("""\

        class Backend:
            def init_forward_metadata(self, batch):
                self._apply_metadata(batch)

            def _apply_metadata(self, batch):
                kern[(batch.lens.max().item(),)](batch.lens, 4)

        def run(x):
            kern[(x.max().item(),)](x, 4)

        def main():
            run(None)

        def shared(x):
            kern[(x.max().item(),)](x, 4)

        def bench_shared(x):
            shared(x)

        def forward(x):
            shared(x)

        def public_launcher(x):
            kern[(x.max().item(),)](x, 4)

        def demo(x):
            kern[(x.max().item(),)](x, 4)

        if __name__ == "__main__":
            demo(torch.ones(4))
    """)})
    functions = {f for *_, f in got}
    assert "Backend._apply_metadata" not in functions  # only init_forward_metadata calls it
    assert "run" not in functions  # only the script's main calls it
    assert "shared" in functions  # a library caller too
    assert "public_launcher" in functions  # no caller in the tree: public API
    assert "demo" not in functions  # only the script block calls it


def test_a_launcher_called_from_a_capture_site_stays(tmp_path):
    got = lint(tmp_path, {"g.py": textwrap.dedent(KERNEL) + textwrap.dedent("""\

        def bench_step(x):
            step(x)

        def step(x):
            kern[(x.max().item(),)](x, 4)

        def capture(g, x):
            with torch.cuda.graph(g):
                step(x)
    """)})
    assert any(f == "step" for *_, f in got)


def test_reference_modules_cpu_implementations_and_setup_functions(tmp_path):
    body = textwrap.dedent(KERNEL) + textwrap.dedent("""\

        def rcp(x):
            kern[(1,)](x, 4)
            torch.cuda.synchronize()
    """)
    got = lint(tmp_path, {"pkg/cute_ref_ops.py": body, "pkg/mega_reference.py": body, "pkg/ops.py": body,
                          "pkg/setup.py": textwrap.dedent(KERNEL) + textwrap.dedent("""\

        def dequant_cpu(x):
            kern[(1,)](x, 4)
            return x.sum().item()

        def a2a_init_workspace(x):
            kern[(1,)](x, 4)
            torch.cuda.synchronize()

        def allocate_buffers(x):
            kern[(1,)](x, 4)
            torch.cuda.synchronize()
    """)})
    assert sorted({name for name, *_ in got}) == ["ops.py"]


TESTER = KERNEL + """\

    def _enumerate(x):
        perms = [list(p) for p in itertools.permutations(range(x.shape[1]))]
        table = torch.tensor(perms, dtype=torch.int32, device=x.device)
        kern[(1,)](table, 4)

    def _bitwise_match(x):
        return _enumerate(x)

    class MoeTester:
        def check(self, x):
            return _bitwise_match(x)
"""


def test_a_launcher_called_only_through_a_testers_helper_is_harness_code(tmp_path):
    got = lint(tmp_path / "a", {"runner.py": "    import itertools\n" + TESTER})
    assert got == [] and not [row for row in got if row[3] == "_enumerate"]  # Tester.check -> _bitwise_match -> _enumerate
    library = TESTER + "\n    def moe_forward(x):\n        return _bitwise_match(x)\n"
    got = lint(tmp_path / "b", {"runner.py": "    import itertools\n" + library})
    assert [(code, fn) for _, _, code, fn in got] == [("GC301", "_enumerate")]  # a library caller keeps it
