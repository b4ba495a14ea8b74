"""False-alarm causes of the third out-of-sample check (docs/precision-holdout.md), each with a firing twin:
``.item()`` of a tensor a torch factory made on the host (no ``device=``) is no sync (GC101), but a host RNG draw
that feeds a launch is baked at capture (GC501)."""

from __future__ import annotations

import textwrap

from graphcheck.lint.python_rules import lint_python

KERNEL = '''
import torch
import triton
import triton.language as tl


@triton.jit
def dropout_kernel(x_ptr, out_ptr, n, p, seed, offset, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    keep = tl.rand(seed, offs + offset) > p
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * keep, mask=offs < n)
'''


def lint(body: str) -> list[tuple[str, str]]:
    src = KERNEL + textwrap.dedent(body)
    return sorted((f.code, src.splitlines()[f.line - 1].strip()) for f in lint_python(src, "m.py"))


def codes(found: list[tuple[str, str]], code: str) -> list[str]:
    return [line for c, line in found if c == code]


# -- GC101: a factory without device= makes a host tensor -----------------------------------------------------


def test_item_of_a_device_less_factory_is_no_sync():
    found = lint('''
        def dropout(x, p):
            out = torch.empty_like(x)
            seed = torch.randint(0, 2**24, (1,))[0].item()
            offset = torch.randint(0, 2**24, (1,)).item()
            n0 = torch.zeros(1, dtype=torch.int32).item()
            n1 = torch.full((1,), 3).item() + torch.arange(4).sum().item() + torch.ones(2)[0].item()
            first = torch.randperm(8).tolist()[0] + torch.rand(1).item() + torch.randn(()).item()
            k = torch.tensor([1, 2]).sum().item() + torch.empty(1).fill_(2).item()
            dropout_kernel[(triton.cdiv(x.numel(), 128),)](x, out, x.numel(), p, seed, offset + n0 + n1 + first + k,
                                                          BLOCK=128)
            return out
    ''')
    assert codes(found, "GC101") == []
    assert codes(found, "GC103") == []


def test_item_of_a_factory_on_the_device_still_fires():
    found = lint('''
        def dropout(x, p, device):
            out = torch.empty_like(x)
            seed = torch.randint(0, 2**24, (1,), device=x.device).item()
            total = torch.zeros(1, device="cuda").item()
            with torch.device("cuda"):
                offset = torch.randint(0, 2**24, (1,)).item()
                listed = torch.tensor([1, 2]).sum().item()
            gathered = torch.zeros(4, out=out).sum().item()
            dropout_kernel[(4,)](x, out, x.numel(), p, seed, offset + total + listed + gathered, BLOCK=128)
            return out
    ''')
    assert codes(found, "GC101") == [
        "gathered = torch.zeros(4, out=out).sum().item()",
        "listed = torch.tensor([1, 2]).sum().item()",
        "offset = torch.randint(0, 2**24, (1,)).item()",
        "seed = torch.randint(0, 2**24, (1,), device=x.device).item()",
        "total = torch.zeros(1, device=\"cuda\").item()",
    ]


def test_a_module_that_sets_a_default_device_keeps_factories_on_it():
    found = lint('''
        torch.set_default_device("cuda")


        def dropout(x, p):
            out = torch.empty_like(x)
            seed = torch.randint(0, 2**24, (1,)).item()
            dropout_kernel[(4,)](x, out, x.numel(), p, seed, 0, BLOCK=128)
            return out
    ''')
    assert codes(found, "GC101") == ["seed = torch.randint(0, 2**24, (1,)).item()"]
    assert codes(found, "GC501") == []  # a device draw: the graph replays the CUDA generator's offsets


def test_set_default_device_inside_the_function_counts_too():
    found = lint('''
        def dropout(x, p):
            torch.set_default_device(x.device)
            out = torch.empty_like(x)
            seed = torch.randint(0, 2**24, (1,)).item()
            dropout_kernel[(4,)](x, out, x.numel(), p, seed, 0, BLOCK=128)
            return out
    ''')
    assert codes(found, "GC101") == ["seed = torch.randint(0, 2**24, (1,)).item()"]


def test_set_default_device_to_the_cpu_leaves_factories_on_the_host():
    found = lint('''
        torch.set_default_device("cpu")


        def dropout(x, p):
            out = torch.empty_like(x)
            seed = torch.randint(0, 2**24, (1,)).item()
            dropout_kernel[(4,)](x, out, x.numel(), p, 0, 0, BLOCK=128)
            return out, seed
    ''')
    assert codes(found, "GC101") == []


# -- GC501: a host draw that feeds device work is frozen at capture ----------------------------------------------


def test_a_host_draw_feeding_a_launch_is_gc501():
    found = lint('''
        def dropout(x, p):
            out = torch.empty_like(x)
            seed = torch.randint(0, 2**24, (1,))[0].item()
            offset = torch.randint(0, 2**24, (1,)).item()
            noise = torch.randn(x.shape).to(x.device)
            dropout_kernel[(4,)](x + noise, out, x.numel(), p, seed, offset, BLOCK=128)
            return out
    ''')
    assert codes(found, "GC501") == [
        "noise = torch.randn(x.shape).to(x.device)",
        "offset = torch.randint(0, 2**24, (1,)).item()",
        "seed = torch.randint(0, 2**24, (1,))[0].item()",
    ]


def test_device_draws_and_host_draws_that_stay_on_the_host_are_not_gc501():
    found = lint('''
        import time


        def dropout(x, p):
            out = torch.empty_like(x)
            seed = torch.randint(0, 2**24, (1,), device=x.device)
            with torch.device(x.device):
                offset = torch.randint(0, 2**24, (1,))
            jitter = torch.rand(1).item()
            time.sleep(jitter * 0.01)
            print(torch.randint(0, 10, (1,))[0].item())
            dropout_kernel[(4,)](x, out, x.numel(), p, seed, offset, BLOCK=128)
            return out
    ''')
    assert codes(found, "GC501") == []

