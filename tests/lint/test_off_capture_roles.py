"""Code whose role keeps it off CUDA-graph capture, shown only by a platform switch, a timing flag or the folder
it sits in (causes of the third out-of-sample check, docs/precision-holdout.md): its hazards are warnings that
say why, never dropped; the same hazard outside that role stays an error."""

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
    return sorted((f.code, f.severity.value, src.splitlines()[f.line - 1].strip(), f.message)
                  for f in lint_python(src, "m.py"))


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
                 "enable_profiling and x.numel() > 0"):
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
