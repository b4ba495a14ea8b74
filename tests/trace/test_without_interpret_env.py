"""check(gpu="off") runs a compiled-mode Triton kernel without TRITON_INTERPRET.

Other test modules set TRITON_INTERPRET=1 in this process, so the check runs in
a fresh interpreter whose environment lacks it: the kernel below is then a
plain JITFunction and graphcheck must route its launches through the
interpreter by itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import json, os
    assert "TRITON_INTERPRET" not in os.environ
    import torch, triton, triton.language as tl
    import graphcheck

    @triton.jit
    def scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)

    def scale_good(x, out):
        scale_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), 2.0, BLOCK=64)

    def scale_bad(x, out):
        n = int((x > 0).sum())  # a value-dependent grid
        scale_kernel[(max(n, 1),)](x, out, x.numel(), 2.0, BLOCK=64)

    def make_inputs(seed, device):
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(300, generator=g).to(device)
        return {"x": x, "out": torch.empty_like(x)}

    kind = type(scale_kernel).__name__
    reports = {}
    for fn in (scale_good, scale_bad):
        case = graphcheck.Case(fn.__name__, fn, make_inputs, outputs=["out"])
        report = graphcheck.check(case, gpu="off", examples=3)
        reports[fn.__name__] = sorted({f.code for f in report.findings})
    # the routing is undone after the check: the kernel is still a compiled-mode one
    print(json.dumps({"kind": kind, "after": type(scale_kernel).__name__, "reports": reports,
                      "env_after": os.environ.get("TRITON_INTERPRET")}))
    """
)


def test_check_routes_jit_kernels_to_the_interpreter_by_itself(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["CUDA_VISIBLE_DEVICES"] = ""
    script = tmp_path / "no_env_case.py"
    script.write_text(SCRIPT)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["kind"] == result["after"] == "JITFunction"
    assert result["env_after"] is None
    assert result["reports"]["scale_good"] == []
    assert "GC401" in result["reports"]["scale_bad"]
    assert any(code.startswith("GC10") for code in result["reports"]["scale_bad"])
