"""Code whose role keeps it off CUDA-graph capture, shown only by a platform switch, a timing flag or the folder
it sits in (causes of the third out-of-sample check, docs/precision-holdout.md): its hazards are warnings that
say why, never dropped; the same hazard outside that role stays an error."""

from __future__ import annotations

import textwrap
from pathlib import Path

from lint_trees import KERNEL, lint_module, make, tree_findings

lint = lint_module


def found(root: Path):
    return sorted((Path(f.path).as_posix(), f.line, f.code, f.severity.value, f.message) for f in tree_findings(root))


# -- platform branches -----------------------------------------------------------------------------------


def test_a_sync_under_a_non_cuda_platform_test_is_a_warning_that_says_so():
    for test, word in (("IS_NPU", "npu"), ("is_npu()", "npu"), ("current_platform.is_xpu()", "xpu"),
                       ('x.device.type == "npu"', "npu"), ('device_type in ("xpu", "hpu")', "xpu"),
                       ("current_platform.is_cpu()", "cpu"), ("is_tpu() or is_xpu()", "tpu"),
                       ("IS_NPU_AVAILABLE and x.dim() > 2", "npu")):
        got = lint(f'''
            IS_NPU = False
            IS_NPU_AVAILABLE = False

            def op(x, lens, device_type):
                if {test}:
                    n = lens.sum().item()
                kern[(1,)](x, 1, BLOCK=64)
        ''')
        assert [(c, s) for c, s, _, _ in got] == [("GC101", "warning")], test
        assert f"a branch for a non-CUDA platform (`{word}`), which CUDA graphs never run on" in got[0][3], test
        shown = test.replace('"', "'")  # the message unparses the test
        assert f"under `if {shown}:`" in got[0][3], test
    # the else of a negated test is the platform's arm
    got = lint('''
        def op(x, lens):
            if not is_npu():
                kern[(1,)](x, 1, BLOCK=64)
            else:
                n = lens.sum().item()
                kern[(1,)](x, 1, BLOCK=64)
    ''')
    assert [(c, s) for c, s, _, _ in got] == [("GC101", "warning")]
    assert "in the `else` of `if not is_npu():`" in got[0][3]


def test_a_sync_on_the_cuda_arm_or_under_other_tests_stays_an_error():
    for body in ("if not is_npu():\n        n = lens.sum().item()",
                 "if is_npu():\n        pass\n    else:\n        n = lens.sum().item()",
                 "if is_cuda() or is_npu():\n        n = lens.sum().item()",
                 "if is_hip():\n        n = lens.sum().item()",
                 "if cpu_offload:\n        n = lens.sum().item()",  # CPU offload runs on CUDA
                 'if x.device.type == "cuda":\n        n = lens.sum().item()',
                 "if not (is_npu() or is_xpu()):\n        n = lens.sum().item()",
                 "if use_fp8:\n        n = lens.sum().item()"):
        loud = lint("def op(x, lens, cpu_offload, use_fp8):\n    " + body + "\n    kern[(1,)](x, 1, BLOCK=64)\n")
        assert [(c, s) for c, s, _, _ in loud] == [("GC101", "error")], body


def test_a_kernel_wrapper_called_only_under_platform_tests_is_reached_only_through_them(tmp_path):
    files = {"p/__init__.py": "", "p/ops.py": KERNEL + textwrap.dedent('''
        def npu_friendly(x, lens):
            n = lens.sum().item()
            kern[(n,)](x, 1, BLOCK=64)
    '''), "p/layer.py": '''\
        import torch

        from p.ops import npu_friendly
        from p.platform import current_platform

        class Layer(torch.nn.Module):
            def forward(self, x, lens):
                if current_platform.is_xpu():
                    return npu_friendly(x, lens)
                return x
    ''', "p/platform.py": "current_platform = None\n"}
    got = [row for row in found(make(tmp_path / "a", files)) if row[2] == "GC101"]
    assert [(c, s) for _, _, c, s, _ in got] == [("GC101", "warning")]
    assert "only through `Layer.forward`'s call under `if current_platform.is_xpu():`" in got[0][4]
    files["p/layer.py"] = files["p/layer.py"].replace("return x\n", "return npu_friendly(x, lens)\n")  # CUDA too
    loud = [row for row in found(make(tmp_path / "b", files)) if row[2] == "GC101"]
    assert [(c, s) for _, _, c, s, _ in loud] == [("GC101", "error")]


# -- timing branches -------------------------------------------------------------------------------------


def test_a_sync_under_a_timing_flag_is_a_warning_that_says_so():
    for test in ("timing", "args.benchmark", "self.profiler is not None", "profile", "time_kernel",
                 "enable_profiling and x.numel() > 0", "args.flush_l2"):
        got = lint(f'''
            class Runner:
                def run(self, x, lens, args, timing=True, profile=True, time_kernel=True, enable_profiling=True):
                    kern[(1,)](x, 1, BLOCK=64)
                    if {test}:
                        torch.cuda.synchronize()
        ''')
        assert [(c, s) for c, s, _, _ in got] == [("GC110", "warning")], test
        assert "a kernel-timing/profiling branch, which engines do not capture" in got[0][3], test


def test_a_sync_outside_a_timing_flag_stays_an_error():
    for body in ("if not timing:\n        torch.cuda.synchronize()",
                 "if timestep:\n        torch.cuda.synchronize()",
                 "if use_fp8:\n        torch.cuda.synchronize()",
                 "torch.cuda.synchronize()"):
        loud = lint("def run(x, timing, timestep, use_fp8):\n    kern[(1,)](x, 1, BLOCK=64)\n    " + body + "\n")
        assert [(c, s) for c, s, _, _ in loud] == [("GC110", "error")], body


# -- non-CUDA backends named in a path token -------------------------------------------------------------

BACKEND = KERNEL + textwrap.dedent('''
    class LossFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            kern[(1,)](x, 1, BLOCK=64)
            return x

        @staticmethod
        def backward(ctx, do):
            if torch.ne(do, torch.tensor(1.0, device=do.device)):
                do = do * 2
            kern[(1,)](do, 1, BLOCK=64)
            return do
''')


def test_a_backend_folder_whose_name_has_a_vendor_token_gives_warnings_that_say_why(tmp_path):
    for folder, word in (("backends/triton_ascend", "ascend"), ("ops/npu-fused", "npu"), ("kernels/xpu_ops", "xpu")):
        root = make(tmp_path / folder.replace("/", "_"), {"pkg/__init__.py": "", f"pkg/{folder}/__init__.py": "",
                                                          f"pkg/{folder}/loss.py": BACKEND})
        got = [row for row in found(root) if row[2] == "GC111"]
        assert [(c, s) for _, _, c, s, _ in got] == [("GC111", "warning")], folder
        part = folder.rpartition("/")[2]
        assert (f"`{part}` in its path names `{word}`: a backend for a non-CUDA accelerator, which CUDA graphs "
                f"never run on; vendor-exclude word `{word}`") in got[0][4]
    # a file named with the token too (`loss_npu_v2.py`), and a folder named exactly `ascend` is still excluded
    root = make(tmp_path / "file", {"pkg/__init__.py": "", "pkg/loss_npu_v2.py": BACKEND,
                                    "pkg/ascend/__init__.py": "", "pkg/ascend/loss.py": BACKEND})
    rows = found(root)
    assert {Path(p).name for p, *_ in rows} == {"loss_npu_v2.py"}
    assert [s for _, _, c, s, _ in rows if c == "GC111"] == ["warning"]


def test_the_same_backend_in_a_cuda_or_neutral_folder_stays_an_error(tmp_path):
    for folder in ("backends/triton_cuda", "backends/triton_rocm", "modules/input_ops", "ops/snpu"):
        root = make(tmp_path / folder.replace("/", "_"), {"pkg/__init__.py": "", f"pkg/{folder}/__init__.py": "",
                                                          f"pkg/{folder}/loss.py": BACKEND})
        got = [row for row in found(root) if row[2] == "GC111"]
        assert [(c, s) for _, _, c, s, _ in got] == [("GC111", "error")], folder
    # a vendor word in a folder above the linted tree does not count
    root = make(tmp_path / "npu_user" / "repo", {"pkg/__init__.py": "", "pkg/loss.py": BACKEND})
    assert [s for _, _, c, s, _ in found(root) if c == "GC111"] == ["error"]


# -- opt-in switches read from the environment -------------------------------------------------------------


def test_a_sync_under_an_off_by_default_environment_switch_is_a_warning_that_says_so():
    for switch in ('os.getenv("FAST_PREFILL", "0") == "1"', 'os.environ.get("FAST_PREFILL") == "1"',
                   'os.getenv("FAST_PREFILL", "false").lower() in ("1", "true")',
                   'bool(int(os.environ.get("FAST_PREFILL", "0")))'):
        for test in ("USE_SPLIT", "USE_SPLIT and x.dim() > 2"):
            got = lint(f'''
                import os
                USE_SPLIT = {switch}

                def op(x, lens):
                    if {test}:
                        n = lens.sum().item()
                    kern[(1,)](x, 1, BLOCK=64)
            ''')
            assert [(c, s) for c, s, _, _ in got] == [("GC101", "warning")], (switch, test)
            assert ("when the environment sets `FAST_PREFILL` (an opt-in switch, off by default: module-level "
                    "`USE_SPLIT` on line") in got[0][3]


def test_a_switch_on_by_default_or_a_local_flag_stays_an_error():
    for switch, test in (('os.getenv("FAST", "1") == "1"', "USE_SPLIT"),  # on unless turned off
                         ('os.getenv("FAST", "0") != "1"', "USE_SPLIT"),  # on unless turned on
                         ('os.getenv("FAST", "0") == "1"', "not USE_SPLIT"),  # the default arm
                         ('os.getenv("FAST", "0") == "1"', "use_split"),  # a local, not the switch
                         ('bool(int(os.getenv("FAST", "1")))', "USE_SPLIT")):
        loud = lint(f'''
            import os
            USE_SPLIT = {switch}

            def op(x, lens, use_split):
                if {test}:
                    n = lens.sum().item()
                kern[(1,)](x, 1, BLOCK=64)
        ''')
        assert [(c, s) for c, s, _, _ in loud] == [("GC101", "error")], (switch, test)
    loud = lint('''
        import os
        USE_SPLIT = os.getenv("FAST", "0") == "1"

        def op(x, lens):
            USE_SPLIT = lens.numel() > 4  # shadowed by a local
            if USE_SPLIT:
                n = lens.sum().item()
            kern[(1,)](x, 1, BLOCK=64)
    ''')
    assert [(c, s) for c, s, _, _ in loud] == [("GC101", "error")]
