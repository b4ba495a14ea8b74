"""Value-model and rule-semantics fixes for false alarms and never-captured paths seen on engine trees
(docs/precision.md). Each behaviour has a firing twin and a quiet (or milder) variant."""

from __future__ import annotations

import textwrap

import pytest

from graphcheck.config import ConfigError, from_table
from graphcheck.lint.python_rules import lint_python

KERNEL = textwrap.dedent('''
    import logging
    import os
    import random
    import time
    from typing import Optional, Union

    import torch
    import triton
    import triton.language as tl

    logger = logging.getLogger(__name__)

    @triton.jit
    def kern(x_ptr, n, BLOCK: tl.constexpr):
        pass
''')


def findings(body: str, **context):
    src = KERNEL + textwrap.dedent(body)
    ctx = None
    if context:
        ctx = {"reach": None, **context}
    found = lint_python(src, "m.py") if ctx is None else lint_python(src, "m.py", context=_with_reach(src, ctx))
    return [(f.code, f.severity.value, src.splitlines()[f.line - 1].strip(), f) for f in found]


def _with_reach(src: str, ctx: dict) -> dict:
    """A project context that makes every function reachable (as the local pass would) plus settings."""
    import ast

    tree = ast.parse(src)
    reach = {}
    stack = [(n, "") for n in tree.body]
    while stack:
        node, prefix = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if not any(getattr(d, "attr", getattr(d, "id", "")) == "jit" for d in node.decorator_list):
                qual = prefix + node.name
                reach[qual] = ["is a configured entry point", f"m.{qual}", [f"m.{qual}"], False]
                stack.extend((n, qual + ".<locals>.") for n in node.body)
        elif isinstance(node, ast.ClassDef):
            stack.extend((n, prefix + node.name + ".") for n in node.body)
    return {**ctx, "reach": reach}


def codes(body: str, **context):
    return sorted((code, sev, line) for code, sev, line, _ in findings(body, **context))


# -- host tensors built from shape ints ------------------------------------------------------------


def test_product_of_a_host_tensor_of_shape_ints_is_no_sync_and_no_baked_grid():
    got = codes('''
        def mask(scores: torch.Tensor):
            *batch, L, _ = scores.shape
            N = int(torch.prod(torch.tensor(batch))) if batch else 1
            kern[(triton.cdiv(L, 64), N)](scores, L, BLOCK=64)
    ''')
    assert got == []


def test_product_of_a_device_tensor_still_syncs():
    got = codes('''
        def mask(scores: torch.Tensor, sizes: torch.Tensor):
            N = int(torch.prod(sizes))
            kern[(N,)](scores, N, BLOCK=64)
    ''')
    assert ("GC102", "error", "N = int(torch.prod(sizes))") in got


def test_ops_on_a_cpu_copy_are_host_reads():
    assert codes('''
        def validate(x, lengths: torch.Tensor):
            lengths_cpu = lengths.detach().cpu()
            if torch.any(lengths_cpu < 0).item():
                raise RuntimeError("negative")
            kern[(1,)](x, 1, BLOCK=64)
    ''') == [("GC104", "error", "lengths_cpu = lengths.detach().cpu()")]


# -- a parameter the author marks as a CPU tensor ------------------------------------------------------


def test_parameter_commented_as_cpu_tensor_is_a_host_value():
    got = codes('''
        def expand(
            x: torch.Tensor,
            num_active: torch.Tensor,  # CPU tensor [1], number of active adapters
        ):
            grid = (4, num_active.item())
            kern[grid](x, 4, BLOCK=64)
    ''')
    assert [c for c, *_ in got if c.startswith("GC1")] == []
    assert ("GC401", "warning", "kern[grid](x, 4, BLOCK=64)") in got


def test_parameter_without_the_comment_is_a_device_value():
    got = codes('''
        def expand(
            x: torch.Tensor,
            num_active: torch.Tensor,  # number of active adapters
        ):
            grid = (4, num_active.item())
            kern[grid](x, 4, BLOCK=64)
    ''')
    assert ("GC101", "error", "grid = (4, num_active.item())") in got


# -- isinstance tests held in a variable or a conditional expression ------------------------------------


def test_isinstance_test_through_a_variable_narrows_the_else_branch():
    got = codes('''
        def quantize(x, scale: Union[float, torch.Tensor]):
            scale_is_tensor = isinstance(scale, torch.Tensor)
            if scale_is_tensor:
                arg = scale.float().reshape(1)
            else:
                arg = float(scale)
            kern[(1,)](x, 1, BLOCK=64)
    ''')
    assert got == []


def test_float_of_a_tensor_argument_without_the_test_syncs():
    got = codes('''
        def quantize(x, scale: Union[float, torch.Tensor]):
            arg = float(scale)
            kern[(1,)](x, 1, BLOCK=64)
    ''')
    assert ("GC102", "error", "arg = float(scale)") in got


def test_conditional_expression_narrows_each_arm():
    got = codes('''
        def quantize(x, scale: Union[float, torch.Tensor]):
            s = scale.item() if isinstance(scale, torch.Tensor) else float(scale)
            kern[(1,)](x, 1, BLOCK=64)
    ''')
    assert [c for c, *_ in got if c.startswith("GC1")] == ["GC101"]  # the tensor arm only, not float()


def test_a_name_rebound_to_its_host_arm_is_no_tensor_below():
    # the shape of a GEMM wrapper that splits a float-or-tensor beta into a float and a separate tensor
    got = codes('''
        def gemm(x, out, beta: float | torch.Tensor = 1.0):
            beta_tensor = beta if not isinstance(beta, float) else None
            beta = beta if isinstance(beta, float) else 1.0
            if beta != 1.0 or beta_tensor is not None:
                out.mul_(2)
            kern[(1,)](x, 1, BLOCK=64)
    ''')
    assert [c for c, *_ in got if c.startswith("GC1")] == []


def test_a_rebinding_that_may_keep_the_tensor_still_syncs():
    got = codes('''
        def gemm(x, out, beta: float | torch.Tensor = 1.0):
            beta = beta if isinstance(beta, torch.Tensor) else 1.0
            if beta != 1.0:
                out.mul_(2)
            kern[(1,)](x, 1, BLOCK=64)
    ''')
    assert [c for c, *_ in got if c == "GC111"] == ["GC111"]


def test_a_later_tensor_rebinding_ends_the_narrowing():
    got = codes('''
        def gemm(x, out, beta: float | torch.Tensor = 1.0):
            beta = beta if isinstance(beta, float) else 1.0
            if beta != 1.0:
                out.mul_(2)
            for _ in range(2):
                if beta != 2.0:
                    out.mul_(3)
                beta = x.sum()
            kern[(1,)](x, 1, BLOCK=64)
    ''')
    assert [line for c, _, line in got if c == "GC111"] == ["if beta != 2.0:"]


def test_a_rebinding_inside_a_branch_does_not_narrow_below_it():
    got = codes('''
        def gemm(x, out, flag: bool, beta: float | torch.Tensor = 1.0):
            if flag:
                beta = beta if isinstance(beta, float) else 1.0
            if beta != 1.0:
                out.mul_(2)
            kern[(1,)](x, 1, BLOCK=64)
    ''')
    assert [c for c, *_ in got if c == "GC111"] == ["GC111"]


def test_a_constexpr_from_a_conditional_with_a_literal_test_takes_the_live_arm():
    # `activation if not None else x`: `not None` is always true, so the tensor arm never runs
    got = codes('''
        def linear(x: torch.Tensor, activation: str = ""):
            kern[(1,)](x, 1, BLOCK=activation if not None else x)
    ''')
    assert [c for c, *_ in got if c == "GC403"] == []


def test_a_constexpr_from_the_live_tensor_arm_is_still_per_call():
    got = codes('''
        def linear(x: torch.Tensor, activation: str = ""):
            kern[(1,)](x, 1, BLOCK=activation if None else x)
    ''')
    assert [c for c, *_ in got if c == "GC403"] == ["GC403"]


# -- tensors known only from an isinstance test: device not established -------------------------------------


def test_tensor_branch_of_an_untyped_int_list_argument_is_a_warning():
    got = codes('''
        def pad(x: torch.Tensor, padding):
            if isinstance(padding, torch.Tensor):
                padding = tuple(padding.tolist())
            kern[(1,)](x, padding[0], BLOCK=64)
    ''')
    assert ("GC103", "warning", "padding = tuple(padding.tolist())") in got
    assert not [g for g in got if g[1] == "error"]


def test_tensor_typed_argument_in_the_same_shape_is_an_error():
    got = codes('''
        def pad(x: torch.Tensor, padding: torch.Tensor):
            if isinstance(padding, torch.Tensor):
                pads = tuple(padding.tolist())
            kern[(1,)](x, 1, BLOCK=64)
    ''')
    assert ("GC103", "error", "pads = tuple(padding.tolist())") in got


# -- containers of tensors ----------------------------------------------------------------------------------


def test_optional_list_of_tensors_tested_for_truth_is_no_sync():
    assert codes('''
        def bwd(x, aux_tensors: Optional[list[torch.Tensor]] = None):
            n = len(aux_tensors) if aux_tensors else 0
            kern[(1,)](x, n, BLOCK=64)
    ''') == []


def test_optional_tensor_tested_for_truth_is_a_none_check_warning():
    # a None check written as truthiness: one element syncs, more raise (tests/lint/test_optional_truthiness.py)
    got = codes('''
        def bwd(x, aux: Optional[torch.Tensor] = None):
            n = 1 if aux else 0
            kern[(1,)](x, n, BLOCK=64)
    ''')
    assert ("GC111", "warning", "n = 1 if aux else 0") in got


# -- shape ints for constexprs ----------------------------------------------------------------------------


def test_shape_int_from_a_shape_list_is_not_a_per_call_constexpr():
    assert codes('''
        def nz(x: torch.Tensor, pad):
            shape = list(x.shape) + [1] * pad
            kern[(1,)](x, 1, BLOCK=shape[2])
    ''') == []


def test_host_read_constexpr_still_recompiles():
    got = codes('''
        def nz(x: torch.Tensor, lens: torch.Tensor):
            n = lens.max().item()
            kern[(1,)](x, 1, BLOCK=n)
    ''')
    assert ("GC403", "warning", "kern[(1,)](x, 1, BLOCK=n)") in got  # follows from the sync on the line above
    assert ("GC101", "error", "n = lens.max().item()") in got


# -- one error per root cause --------------------------------------------------------------------------------


def test_allocation_grid_and_scalar_from_a_reported_sync_are_warnings_naming_it():
    got = findings('''
        def pack(x: torch.Tensor, lengths: torch.Tensor):
            n = lengths.max().item()
            out = torch.empty((n, 4), device=x.device)
            kern[(n,)](x, n, BLOCK=64)
    ''')
    by_code = {code: (sev, f) for code, sev, _, f in got}
    assert by_code["GC101"][0] == "error"
    sync_line = by_code["GC101"][1].line
    for code in ("GC302", "GC401", "GC402"):
        sev, f = by_code[code]
        assert sev == "warning"
        assert f.evidence["follows"] == sync_line
        assert f"follows from the sync on line {sync_line}" in f.message


def test_derived_value_whose_sync_is_not_reported_here_stays_an_error():
    got = codes('''
        def pack(x: torch.Tensor, lengths: torch.Tensor):
            if not torch.cuda.is_current_stream_capturing():
                n = lengths.max().item()
            out = torch.empty((n, 4), device=x.device)
            kern[(1,)](x, 1, BLOCK=64)
    ''')
    assert ("GC302", "error", "out = torch.empty((n, 4), device=x.device)") in got


def test_derived_value_of_a_guessed_sync_keeps_its_severity():
    got = codes('''
        def bwd(ctx, x: torch.Tensor):
            mean_num = 1 / ctx.mean_num.item()
            kern[(1,)](x, mean_num, BLOCK=64)
    ''')
    assert ("GC101", "warning", "mean_num = 1 / ctx.mean_num.item()") in got
    assert ("GC402", "error", "kern[(1,)](x, mean_num, BLOCK=64)") in got


def test_inline_sync_in_an_allocation():
    got = codes('''
        def unpack(x: torch.Tensor, lengths: torch.Tensor):
            out = torch.empty(lengths.sum().item(), device=x.device)
            kern[(1,)](x, 1, BLOCK=64)
    ''')
    # the sync and the allocation are on one line: both stay (the allocation is not "derived" from another line)
    assert ("GC101", "error", "out = torch.empty(lengths.sum().item(), device=x.device)") in got


# -- host randomness ----------------------------------------------------------------------------------------


def test_retry_jitter_that_reaches_no_device_work_is_quiet():
    assert codes('''
        def fetch(x, delay, attempt):
            cap = delay * (2 ** attempt)
            backoff = cap + random.uniform(0, cap)
            logger.info(f"retrying in {backoff:.2f} s")
            time.sleep(backoff)
            kern[(1,)](x, 1, BLOCK=64)
    ''') == [("GC503", "info", "time.sleep(backoff)")]  # the sleep itself, not the draw


def test_a_draw_that_reaches_a_launch_is_baked():
    got = codes('''
        def noisy(x):
            seed = random.randint(0, 1 << 30)
            kern[(1,)](x, seed, BLOCK=64)
    ''')
    assert ("GC501", "error", "seed = random.randint(0, 1 << 30)") in got


def test_a_shuffled_list_that_becomes_a_tensor_is_baked():
    got = codes('''
        def perm(x, pages):
            random.shuffle(pages)
            t = torch.tensor(pages, device=x.device)
            kern[(1,)](t, 1, BLOCK=64)
    ''')
    assert ("GC501", "error", "random.shuffle(pages)") in got


# -- debug and checking branches ------------------------------------------------------------------------------


def test_debug_and_check_flags_are_off_capture():
    assert codes('''
        def sample(x: torch.Tensor, check_nan: bool = False):
            if check_nan:
                if torch.any(torch.isnan(x)):
                    raise ValueError("nan")
            if logger.isEnabledFor(logging.DEBUG):
                logger.debug("max %s", x.max().item())
            if os.environ.get("MYLIB_SANITY_CHECKS") == "1":
                assert x.min().item() >= 0
            if __debug__:
                x.sum().item()
            if not envs.ENABLE_DEBUG_CHECKS:
                pass
            else:
                x.sum().item()
            kern[(1,)](x, 1, BLOCK=64)
    ''') == []


def test_ordinary_flags_and_negated_names_are_on_capture():
    got = codes('''
        def sample(x: torch.Tensor, use_fast: bool, skip_checks: bool):
            if use_fast:
                a = x.max().item()
            if skip_checks:
                b = x.min().item()
            kern[(1,)](x, 1, BLOCK=64)
    ''')
    assert [c for c, *_ in got] == ["GC101", "GC101"]


def test_verbosity_levels_and_verbose_flags_are_debug_tests_like_the_cpp_ones():
    # the C++ rules' notion (graphcheck.lint.cpp_once, coldpaths.debug_level_name): a debug or verbosity level
    # above a threshold, a verbose or trace flag
    assert codes('''
        def sample(x: torch.Tensor, threshold: int):
            if self.verbosity > 1:
                a = x.max().item()
            if 2 <= self.event_level():
                b = x.min().item()
            if self.trace_level >= threshold and rank == 0:
                c = x.sum().item()
            if self.verbose:
                d = x.mean().item()
            kern[(1,)](x, 1, BLOCK=64)
    ''') == []
    # parameters so named too, before they are read as opt-in flags
    assert codes('''
        def step(x: torch.Tensor, lens: torch.Tensor, trace=None, verbose=0):
            kern[(1,)](x, 1, BLOCK=64)
            if trace:
                a = lens.max().item()
            if verbose:
                b = lens.min().item()
    ''') == []


def test_levels_that_hold_by_default_and_other_names_stay_on_capture():
    got = codes('''
        def sample(x: torch.Tensor):
            if self.verbosity >= 0:
                a = x.max().item()
            if self.event_level < 2:
                b = x.min().item()
            if self.log_level >= 2:
                c = x.sum().item()
            if trace_id:
                d = x.mean().item()
            kern[(1,)](x, 1, BLOCK=64)
    ''')
    assert [c for c, *_ in got] == ["GC101"] * 4


def test_debug_flags_are_configurable():
    body = '''
        def sample(x: torch.Tensor, paranoid: bool):
            if paranoid:
                a = x.max().item()
            if debug:
                b = x.min().item()
            kern[(1,)](x, 1, BLOCK=64)
    '''
    got = codes(body, debug_flags=["paranoid"])
    assert [line for _, _, line in got] == ["b = x.min().item()"]
    assert len(codes(body, debug_flags=[])) == 2
    # an empty list turns the verbosity levels off as well
    assert len(codes("def f(x: torch.Tensor):\n    if self.verbose > 1:\n        a = x.max().item()\n"
                     "    kern[(1,)](x, 1, BLOCK=64)\n", debug_flags=[])) == 1


# -- a flag that says the call is graph-capturable ---------------------------------------------------------------
# (TransformerEngine's triton/cross_entropy.py: `if not is_cg_capturable and torch.equal(grad_output, ...)`)

CAPTURABLE = ["capturable", "is_cg_capturable", "self.graph_capturable"]
NOT_CAPTURABLE = ["use_fast", "self.not_capturable"]


def flagged(body: str, flag: str):
    return codes(textwrap.indent(textwrap.dedent('''
        class Loss:
            def backward(self, x: torch.Tensor, grad_output: torch.Tensor, capturable: bool,
                         is_cg_capturable: bool, use_fast: bool):
        ''') + textwrap.indent(textwrap.dedent(body).replace("FLAG", flag), " " * 8)
            + "        kern[(1,)](x, 1, BLOCK=64)\n", ""))


TE_SHAPE = '''
    if not FLAG and torch.equal(
        grad_output, torch.tensor(1.0, device=grad_output.device)
    ):
        pass
    else:
        x.mul_(grad_output)
'''


@pytest.mark.parametrize("flag", CAPTURABLE)
def test_a_sync_after_not_capturable_in_an_and_chain_is_off_capture(flag):
    assert flagged(TE_SHAPE, flag) == []
    assert flagged("y = not FLAG and x.max().item() > 0\n", flag) == []


@pytest.mark.parametrize("flag", NOT_CAPTURABLE)
def test_other_flags_in_the_same_and_chain_still_fire(flag):
    assert [(c, sev) for c, sev, _ in flagged(TE_SHAPE, flag)] == [("GC111", "error"), ("GC301", "error")]
    assert [c for c, *_ in flagged("y = not FLAG and x.max().item() > 0\n", flag)] == ["GC101"]


@pytest.mark.parametrize("flag", CAPTURABLE)
def test_the_not_capturable_branch_is_off_capture(flag):
    assert flagged("if not FLAG:\n    a = x.max().item()\n", flag) == []
    assert flagged("if FLAG:\n    pass\nelse:\n    a = x.max().item()\n", flag) == []
    assert flagged("if not FLAG and x.numel() > 1:\n    a = x.max().item()\n", flag) == []


@pytest.mark.parametrize("flag", CAPTURABLE + NOT_CAPTURABLE)
def test_the_capturable_branch_and_operands_after_the_flag_still_fire(flag):
    assert flagged("if FLAG:\n    a = x.max().item()\n", flag) == [("GC101", "error", "a = x.max().item()")]
    assert flagged("if not FLAG:\n    pass\nelse:\n    a = x.max().item()\n", flag) == [
        ("GC101", "error", "a = x.max().item()")]
    assert [c for c, *_ in flagged("y = FLAG and x.max().item() > 0\n", flag)] == ["GC101"]


@pytest.mark.parametrize("flag", NOT_CAPTURABLE)
def test_other_flags_in_the_not_branch_still_fire(flag):
    assert flagged("if not FLAG:\n    a = x.max().item()\n", flag) == [("GC101", "error", "a = x.max().item()")]
    assert flagged("if FLAG:\n    pass\nelse:\n    a = x.max().item()\n", flag) == [
        ("GC101", "error", "a = x.max().item()")]


def test_an_operand_before_not_capturable_on_the_same_line_still_fires():
    got = flagged("if x.max().item() > 0 and not FLAG and x.min().item() > 0:\n    pass\n", "capturable")
    assert [c for c, *_ in got] == ["GC101", "GC101"]  # the line holds an operand that runs under capture
    got = flagged("if (x.max().item() > 0\n        and not FLAG\n        and x.min().item() > 0):\n    pass\n",
                  "capturable")
    assert [line for *_, line in got] == ["if (x.max().item() > 0"]


def test_capturing_check_that_raises_puts_the_rest_off_capture():
    assert codes('''
        def dims(x: torch.Tensor, cu: torch.Tensor):
            if torch.cuda.is_current_stream_capturing():
                raise RuntimeError("pass max lengths explicitly under capture")
            n = cu.cpu()
            kern[(1,)](x, 1, BLOCK=64)
    ''') == []


def test_capturing_check_that_only_logs_does_not():
    got = codes('''
        def dims(x: torch.Tensor, cu: torch.Tensor):
            if torch.cuda.is_current_stream_capturing():
                logger.warning("capturing")
            n = cu.cpu()
            kern[(1,)](x, 1, BLOCK=64)
    ''')
    assert ("GC104", "error", "n = cu.cpu()") in got


# -- synchronize() receivers -----------------------------------------------------------------------------------


def test_synchronize_of_a_stream_or_the_device_is_an_error_of_an_event_a_warning():
    got = codes('''
        def run(x, pending, side_stream):
            torch.cuda.synchronize()
            side_stream.synchronize()
            torch.cuda.current_stream().synchronize()
            pending.synchronize()
            kern[(1,)](x, 1, BLOCK=64)
    ''')
    assert got == [("GC110", "error", "side_stream.synchronize()"),
                   ("GC110", "error", "torch.cuda.current_stream().synchronize()"),
                   ("GC110", "error", "torch.cuda.synchronize()"),
                   ("GC110", "warning", "pending.synchronize()")]


# -- RNG state --------------------------------------------------------------------------------------------------


def test_generator_state_is_a_cpu_tensor():
    assert codes('''
        def seed_offset(x, generator):
            state = generator.get_state()
            seed, offset = state.view(torch.int64)
            kern[(1,)](x, 1, BLOCK=64)
            return int(seed), int(offset)
    ''') == [("GC502", "warning", "state = generator.get_state()")]  # no GC102 on int(seed)


def test_int_of_a_device_tensor_element_syncs():
    got = codes('''
        def seed_offset(x: torch.Tensor):
            seed, offset = x.view(torch.int64)
            kern[(1,)](x, 1, BLOCK=64)
            return int(seed), int(offset)
    ''')
    assert [c for c, *_ in got].count("GC102") == 2


# -- ops whose output size depends on the data ------------------------------------------------------------------


UNIQUE = '''
    def unique(x: torch.Tensor):
        n = x.sum().item()
        kern[(1,)](x, 1, BLOCK=64)

    def gather_rows(x: torch.Tensor):
        n = x.sum().item()
        kern[(1,)](x, 1, BLOCK=64)
'''


def test_findings_in_data_dependent_ops_are_warnings_that_say_so():
    got = findings(UNIQUE)
    unique = [f for code, sev, _, f in got if f.function == "unique"]
    assert [(f.code, f.severity.value) for f in unique] == [("GC101", "warning")]
    assert "output size depends on the data by definition" in unique[0].message
    assert unique[0].evidence["data_dependent"] == "unique"
    other = [f for code, sev, _, f in got if f.function == "gather_rows"]
    assert [(f.code, f.severity.value) for f in other] == [("GC101", "error")]


def test_data_dependent_ops_are_configurable():
    got = findings(UNIQUE, data_dependent=[])
    assert [(f.code, f.severity.value) for *_, f in got] == [("GC101", "error"), ("GC101", "error")]


def test_config_keys(tmp_path):
    cfg = from_table({"debug-flags": ["paranoid"], "data_dependent_ops": []}, None, tmp_path)
    assert cfg.debug_flags == ("paranoid",) and cfg.data_dependent_ops == ()
    with pytest.raises(ConfigError):
        from_table({"debug-flags": 1}, None, tmp_path)


# -- CPU paths -------------------------------------------------------------------------------------------------


def test_branches_for_tensors_off_the_accelerator_are_off_capture():
    assert codes('''
        def nz(x: torch.Tensor, device_name):
            if x.device.type != device_name:
                return torch.nonzero(x)
            if x.device.type == "cpu":
                x.sum().item()
            if not x.is_cuda:
                x.sum().item()
            if x.device.type == "cuda":
                pass
            else:
                x.max().item()
            kern[(1,)](x, 1, BLOCK=64)
    ''') == []


def test_the_accelerator_branch_is_on_capture():
    got = codes('''
        def nz(x: torch.Tensor):
            if x.device.type == "cuda":
                n = x.sum().item()
            if x.is_cuda:
                m = x.max().item()
            kern[(1,)](x, 1, BLOCK=64)
    ''')
    assert [c for c, *_ in got] == ["GC101", "GC101"]


# -- pinned staging with the caller's flag ------------------------------------------------------------------


def test_named_host_tensor_pinned_by_a_flag_copied_non_blocking_is_quiet():
    assert codes('''
        def h2d(x, data: list, dev, pin_memory: bool):
            t = torch.tensor(data, pin_memory=pin_memory, device="cpu")
            kern[(1,)](x, 1, BLOCK=64)
            return t.to(device=dev, non_blocking=True)
    ''') == []


def test_named_pageable_host_tensor_copied_is_flagged():
    got = codes('''
        def h2d(x, data: list, dev):
            t = torch.tensor(data, pin_memory=False, device="cpu")
            kern[(1,)](x, 1, BLOCK=64)
            return t.to(device=dev, non_blocking=True)
    ''')
    assert [c for c, *_ in got] == ["GC301"]


# -- CPU tensors from an allocator or a helper --------------------------------------------------------------


def test_cpu_allocations_and_helpers_returning_them_are_host_values():
    assert codes('''
        def _int64_out():
            return torch.empty((), dtype=torch.int64, device="cpu")

        def team(x):
            out = _int64_out()
            lib.split(out)
            staging = torch.zeros(4, device="cpu")
            kern[(1,)](x, 1, BLOCK=64)
            return out.item() + staging[0].item()
    ''') == []


def test_device_allocations_and_helpers_returning_them_sync():
    got = codes('''
        def _out(x: torch.Tensor):
            return torch.empty((), dtype=torch.int64, device=x.device)

        def team(x: torch.Tensor):
            out = _out(x)
            kern[(1,)](x, 1, BLOCK=64)
            return out.item()
    ''')
    assert ("GC101", "error", "return out.item()") in got or ("GC101", "warning", "return out.item()") in got


# -- cache misses ---------------------------------------------------------------------------------------------


def test_lookup_then_early_return_and_cached_functions_are_cache_miss_paths():
    got = codes('''
        import functools

        def cached_ids(x, ids: list, device):
            key = tuple(ids)
            cached = CACHE.get(key)
            if cached is not None:
                CACHE.move_to_end(key)
                return cached
            t = torch.tensor(ids, dtype=torch.int32, device=device)
            kern[(1,)](x, 1, BLOCK=64)
            return t

        @functools.lru_cache(maxsize=None)
        def table(x, n, device):
            kern[(1,)](x, 1, BLOCK=64)
            return torch.tensor([1, 2, 3], device=device)
    ''')
    assert sorted(sev for _, sev, _ in got) == ["warning", "warning"]


def test_without_the_lookup_the_copy_is_an_error():
    got = codes('''
        def ids_tensor(x, ids: list, device):
            t = torch.tensor(ids, dtype=torch.int32, device=device)
            kern[(1,)](x, 1, BLOCK=64)
            return t
    ''')
    assert [(c, sev) for c, sev, _ in got] == [("GC301", "error")]


def test_a_tensor_test_that_raises_narrows_what_follows():
    assert codes('''
        def sparse_mla(x, scale: Union[float, torch.Tensor]):
            if isinstance(scale, torch.Tensor):
                raise ValueError("scale must be a float here")
            if float(scale) != 1.0:
                raise ValueError("unsupported")
            kern[(1,)](x, 1, BLOCK=64)
    ''') == []


def test_a_tensor_test_that_falls_through_does_not():
    got = codes('''
        def sparse_mla(x, scale: Union[float, torch.Tensor]):
            if isinstance(scale, torch.Tensor):
                logger.info("tensor scale")
            if float(scale) != 1.0:
                raise ValueError("unsupported")
            kern[(1,)](x, 1, BLOCK=64)
    ''')
    assert ("GC102", "error", "if float(scale) != 1.0:") in got


def test_arithmetic_of_host_tensors_is_a_host_value():
    assert codes('''
        def scale(x, in_sz: list, out_sz: list):
            s = (torch.tensor(in_sz, dtype=torch.float32) / torch.tensor(out_sz, dtype=torch.float32)).item()
            kern[(1,)](x, 1, BLOCK=64)
    ''') == []


def test_arithmetic_with_a_device_tensor_is_not():
    got = codes('''
        def scale(x: torch.Tensor, in_sz: list):
            s = (torch.tensor(in_sz, dtype=torch.float32) / x).max().item()
            kern[(1,)](x, 1, BLOCK=64)
    ''')
    assert [c for c, *_ in got] == ["GC101"]


def test_module_named_for_a_data_dependent_op():
    src = KERNEL + textwrap.dedent('''
        def _group_ids(x: torch.Tensor):
            n = x.sum().item()
            kern[(1,)](x, 1, BLOCK=64)
    ''')
    assert [f.severity.value for f in lint_python(src, "ops/unique_dim.py")] == ["warning"]
    assert [f.severity.value for f in lint_python(src, "ops/gather.py")] == ["error"]


# Ops that read their data on the host by definition (aten's CUDA implementation synchronizes too): histc with
# min == max takes its range from the data, ctc_loss moves its lengths to the host, eigvals solves on the host.
HISTC = '''
    def histc(x: torch.Tensor, bins=100, min=0, max=0):
        if min == max:
            lo, hi = x.min().item(), x.max().item()
        kern[(1,)](x, 1, BLOCK=64)

    def histogram_rows(x: torch.Tensor):
        lo = x.min().item()
        kern[(1,)](x, 1, BLOCK=64)
'''


def test_ops_that_read_their_data_on_the_host_by_definition_are_warnings():
    got = findings(HISTC)
    histc = [f for *_, f in got if f.function == "histc"]
    assert histc and {(f.code, f.severity.value) for f in histc} == {("GC101", "warning")}
    assert "aten synchronizes there too" in histc[0].message
    assert histc[0].evidence["data_dependent"] == "histc"
    other = [f for *_, f in got if f.function == "histogram_rows"]  # a look-alike name is not the op
    assert [(f.code, f.severity.value) for f in other] == [("GC101", "error")]


# -- host implementations: the output is allocated on the CPU --------------------------------------------

HOST_DEQUANT = '''
    def dequantize_on_host(packed: torch.Tensor, scales: torch.Tensor):
        out = torch.zeros((packed.shape[0], packed.shape[1] * 2), dtype=torch.float32, device="cpu")
        kern[(1,)](packed, 1, BLOCK=64)
        ext.dequant(packed.cpu(), scales.cpu(), out)
        return out
'''


def test_copies_to_the_host_in_a_function_that_computes_on_the_host_are_warnings():
    got = findings(HOST_DEQUANT)
    assert {(c, s) for c, s, *_ in got} == {("GC104", "warning")} and len(got) == 2
    assert "computes on the host (it allocates on the CPU on line" in got[0][3].message
    # a pinned host buffer is a staging area for device work: the copies stay errors
    pinned = findings(HOST_DEQUANT.replace('device="cpu")', 'device="cpu", pin_memory=True)'))
    assert {(c, s) for c, s, *_ in pinned} == {("GC104", "error")}
    on_device = findings(HOST_DEQUANT.replace('device="cpu"', "device=packed.device"))
    assert {(c, s) for c, s, *_ in on_device} == {("GC104", "error")}


def test_a_host_allocation_is_what_the_allocation_rule_takes_for_one_by_resolved_name():
    # the host-implementation test and the allocation rule share one list of resolved torch factories:
    # `from torch import zeros` and `x.new_zeros(..., device="cpu")` count, a look-alike `zeros` of another
    # library (numpy's takes device="cpu" too) does not
    from_import = findings(HOST_DEQUANT.replace("torch.zeros(", "zeros(")
                           .replace("def dequantize_on_host", "from torch import zeros\n\ndef dequantize_on_host"))
    assert {(c, s) for c, s, *_ in from_import} == {("GC104", "warning")}
    method = findings(HOST_DEQUANT.replace("torch.zeros((packed.shape[0], packed.shape[1] * 2),",
                                           "packed.new_zeros((packed.shape[0], packed.shape[1] * 2),"))
    assert {(c, s) for c, s, *_ in method} == {("GC104", "warning")}
    linspace = findings(HOST_DEQUANT.replace("torch.zeros((packed.shape[0], packed.shape[1] * 2),",
                                             "torch.linspace(0, 1, 8,"))
    assert {(c, s) for c, s, *_ in linspace} == {("GC104", "warning")}
    other = findings(HOST_DEQUANT.replace("torch.zeros(", "np.zeros(")
                     .replace("def dequantize_on_host", "import numpy as np\n\ndef dequantize_on_host"))
    assert {(c, s) for c, s, *_ in other} == {("GC104", "error")}
