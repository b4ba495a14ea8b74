"""Opt-in flags (graphcheck.lint.coldpaths.opt_in_flags): a sync under a parameter that defaults to off
(``use_sync: bool = False``; ``None``/``0`` when the function uses it only as a flag) and that the function
never rebinds runs only when a caller turns the flag on. With no caller in the tree that does, the finding is a
warning that names the flag and its default; a caller that passes anything but ``False``/``0``/``None`` (or
passes on a flag of its own that one of its callers turns on) keeps the error and is named."""

from __future__ import annotations

from lint_trees import lint_module, make, tree_findings

lint = lint_module

OPS = """\
    import torch
    import torch.distributed as dist


    def all_to_all(x: torch.Tensor, group, use_sync: bool = False):
        out = torch.empty_like(x)
        dist.all_to_all_single(out, x, group=group)
        if use_sync:
            torch.cuda.synchronize()
        return out
"""

ENGINE = """\
    import torch
    from p.ops import all_to_all, layer

    def step(x, graph):
        with torch.cuda.graph(graph):
            {call}
"""


def sync_findings(tmp_path, call: str, ops: str = OPS, sub: str = "t"):
    files = {"p/__init__.py": "", "p/ops.py": ops, "p/engine.py": ENGINE.format(call=call)}
    root = make(tmp_path / sub, files)
    return [(f.line, f.code, f.severity.value, f.message) for f in tree_findings(root) if f.path.endswith("ops.py")]


def codes(got):
    return [(c, s) for c, s, _, _ in got]


# -- the flag's own function --------------------------------------------------------------------------------


def test_a_sync_under_a_flag_that_defaults_to_false_is_a_warning_naming_the_flag(tmp_path):
    got = sync_findings(tmp_path, "all_to_all(x, None)")
    assert [(line, c, s) for line, c, s, _ in got] == [(9, "GC110", "warning")]
    assert got[0][3].endswith("it runs only when `use_sync=True` (default False): an opt-in flag, off under "
                              "default capture; no caller in the tree turns it on")


def test_a_caller_that_turns_the_flag_on_keeps_the_error_and_is_named(tmp_path):
    for n, call in enumerate(("all_to_all(x, None, use_sync=True)", "all_to_all(x, None, True)",
                              "all_to_all(x, None, use_sync=x.numel() > 4)")):
        got = sync_findings(tmp_path, call, sub=f"on{n}")
        assert [(c, s) for _, c, s, _ in got] == [("GC110", "error")], call
        assert "it runs when `use_sync` is on (default False), and `step` (engine.py:6) turns it on" in got[0][3]


def test_callers_that_pass_false_zero_or_none_leave_the_flag_off(tmp_path):
    for n, call in enumerate(("all_to_all(x, None, use_sync=False)", "all_to_all(x, None, 0)",
                              "all_to_all(x, None, use_sync=None)")):
        got = sync_findings(tmp_path, call, sub=f"off{n}")
        assert [(c, s) for _, c, s, _ in got] == [("GC110", "warning")], call


def test_a_flag_on_by_default_or_rebound_is_no_opt_in():
    loud = lint('''
        def gather(x: torch.Tensor, use_sync: bool = True):
            kern[(1,)](x, 1, BLOCK=64)
            if use_sync:
                torch.cuda.synchronize()
    ''')
    assert codes(loud) == [("GC110", "error")]
    rebound = lint('''
        def gather(x: torch.Tensor, use_sync: bool = False):
            use_sync = use_sync or x.is_cuda
            kern[(1,)](x, 1, BLOCK=64)
            if use_sync:
                torch.cuda.synchronize()
    ''')
    assert codes(rebound) == [("GC110", "error")]
    quiet = lint('''
        def gather(x: torch.Tensor, use_sync: bool = False):
            kern[(1,)](x, 1, BLOCK=64)
            if use_sync:
                torch.cuda.synchronize()
    ''')
    assert codes(quiet) == [("GC110", "warning")]


def test_the_tests_that_mean_the_flag_is_on():
    got = lint('''
        def step(x: torch.Tensor, lens: torch.Tensor, check_sync=False, exact: bool = False):
            kern[(1,)](x, 1, BLOCK=64)
            if exact is True:
                a = lens.max().item()
            if exact == True:  # noqa: E712
                b = lens.min().item()
            if not exact:
                pass
            else:
                c = lens.tolist()
            if exact and x.numel() > 4:
                torch.cuda.synchronize()
            d = lens.sum().item() if exact else 0
            e = exact and bool(lens.any())
            f = not exact or lens.argmax().item()
    ''')
    assert [(c, s) for c, s, _, _ in got] == [("GC101", "warning")] * 4 + [
        ("GC102", "warning"), ("GC103", "warning"), ("GC110", "warning")]
    assert all("`exact=True` (default False)" in m for _, _, _, m in got)
    off_arm = lint('''
        def step(x: torch.Tensor, lens: torch.Tensor, exact: bool = False):
            kern[(1,)](x, 1, BLOCK=64)
            if exact is False:
                a = lens.max().item()
            if not exact:
                b = lens.min().item()
            c = 0 if exact else lens.sum().item()
    ''')
    assert codes(off_arm) == [("GC101", "error")] * 3  # the arms that run with the flag off: the default path


def test_a_function_that_returns_unless_the_flag_is_on():
    got = lint('''
        def maybe_check(x: torch.Tensor, lens: torch.Tensor, verify: bool = False):
            kern[(1,)](x, 1, BLOCK=64)
            if not verify:
                return x
            assert lens.max().item() < 4096
            return x
    ''')
    assert codes(got) == [("GC101", "warning")]
    raising = lint('''
        def must_check(x: torch.Tensor, lens: torch.Tensor, verify: bool = False):
            kern[(1,)](x, 1, BLOCK=64)
            if not verify:
                raise ValueError("pass verify=True")
            assert lens.max().item() < 4096
    ''')
    assert codes(raising) == [("GC101", "error")]  # the flag must be on: what follows is the normal path


def test_none_or_zero_defaults_count_when_the_parameter_is_only_a_flag():
    got = lint('''
        def step(x: torch.Tensor, lens: torch.Tensor, exact=None, ordered=0, strict: Optional[bool] = None):
            kern[(1,)](x, 1, BLOCK=64)
            if exact:
                a = lens.max().item()
            if ordered:
                b = lens.min().item()
            if strict:
                c = lens.sum().item()
            helper(x, exact=exact)
    ''')
    assert codes(got) == [("GC101", "warning")] * 3
    messages = sorted(m for _, _, _, m in got)
    assert any("when `exact` is set (default None)" in m for m in messages)
    assert any("when `ordered` is set (default 0)" in m for m in messages)
    # `trace`/`verbose` flags are debug tests (dropped before opt-in flags are read): see test_value_model_precision
    valued = lint('''
        def step(x: torch.Tensor, lens: torch.Tensor, scale=None, pad=0):
            kern[(1,)](x, 1, BLOCK=64)
            if scale:
                x = x * scale
                a = lens.max().item()
            if pad:
                b = lens[:pad].sum().item()
    ''')
    assert codes(valued) == [("GC101", "error")] * 2  # values, not flags: passing them is the normal path


# -- flags passed on, and flags on self -----------------------------------------------------------------------


FORWARDING = OPS + """\


    class AllToAll(torch.autograd.Function):
        @staticmethod
        def forward(ctx, group, x: torch.Tensor, use_sync: bool = False):
            return all_to_all(x, group, use_sync=use_sync)


    def layer(x: torch.Tensor, group, sync=False):
        return all_to_all(x, group, use_sync=sync)
"""


def test_a_flag_passed_on_as_is_is_off_when_every_caller_up_the_chain_leaves_it_off(tmp_path):
    got = sync_findings(tmp_path, "layer(x, None)", ops=FORWARDING)
    assert [(c, s) for _, c, s, _ in got] == [("GC110", "warning")]
    assert "no caller in the tree turns it on" in got[0][3]
    loud = sync_findings(tmp_path, "layer(x, None, sync=True)", ops=FORWARDING, sub="on")
    assert [(c, s) for _, c, s, _ in loud] == [("GC110", "error")]
    assert "`layer` (ops.py:20) passes on a flag of its own, which `step` (engine.py:6) turns on" in loud[0][3]


LAYER = """\
    import torch


    class Layer(torch.nn.Module):
        def __init__(self, dim: int, sync: bool = False):
            super().__init__()
            self.dim = dim
            self.sync = sync

        def forward(self, x: torch.Tensor):
            if self.sync:
                torch.cuda.synchronize()
            return x
"""

RUNNER = """\
    import torch
    from p.ops import Layer

    class Runner:
        def __init__(self):
            self.layer = {build}

        def step(self, x, graph):
            with torch.cuda.graph(graph):
                self.layer(x)
"""


def test_a_self_flag_set_in_init_from_an_opt_in_parameter(tmp_path):
    def run(build: str, ops: str = LAYER, sub: str = "t"):
        files = {"p/__init__.py": "", "p/ops.py": ops, "p/engine.py": RUNNER.format(build=build)}
        return [(f.line, f.code, f.severity.value, f.message) for f in tree_findings(make(tmp_path / sub, files))
                if f.path.endswith("ops.py")]

    quiet = run("Layer(64)")
    assert [(line, c, s) for line, c, s, _ in quiet] == [(12, "GC110", "warning")]
    assert "when `self.sync=True` (default False, set from `Layer.__init__`'s `sync`)" in quiet[0][3]
    assert [(c, s) for _, c, s, _ in run("Layer(64, sync=False)", sub="f")] == [("GC110", "warning")]
    loud = run("Layer(64, True)", sub="on")
    assert [(c, s) for _, c, s, _ in loud] == [("GC110", "error")]
    assert "`Runner.__init__` (engine.py:6) turns it on through `Layer.__init__`'s `sync`" in loud[0][3]
    # set anywhere else in the module: no longer only what __init__ was given
    elsewhere = LAYER + """\

        def enable_sync(self):
            self.sync = True
"""
    assert [(c, s) for _, c, s, _ in run("Layer(64)", ops=elsewhere, sub="set")] == [("GC110", "error")]


SUBCLASS_RUNNER = """\
    import torch
    from p.ops import SyncLayer

    class Runner:
        def __init__(self):
            self.layer = {build}

        def step(self, x, graph):
            with torch.cuda.graph(graph):
                self.layer(x)
"""


def test_a_subclass_that_turns_the_flag_on_through_its_base_init_keeps_the_error(tmp_path):
    def run(init: str, sub: str, build: str = "SyncLayer(64)", bases: str = "Layer", extra: str = ""):
        ops = LAYER + f"""\


    {extra}class SyncLayer({bases}):
        def __init__(self, dim: int, sync: bool = False):
            {init}
"""
        files = {"p/__init__.py": "", "p/ops.py": ops, "p/engine.py": SUBCLASS_RUNNER.format(build=build)}
        return [(f.line, f.code, f.severity.value, f.message) for f in tree_findings(make(tmp_path / sub, files))
                if f.path.endswith("ops.py")]

    for sub, init in [("super", "super().__init__(dim, sync=True)"),
                      ("positional", "super().__init__(dim, True)"),
                      ("named", "super(SyncLayer, self).__init__(dim, sync=True)"),
                      ("explicit", "Layer.__init__(self, dim, sync=True)"),
                      ("explicit_positional", "Layer.__init__(self, dim, True)")]:
        loud = run(init, sub)
        assert [(line, c, s) for line, c, s, _ in loud] == [(12, "GC110", "error")], sub
        assert "`SyncLayer.__init__` (ops.py:18) turns it on through `Layer.__init__`'s `sync`" in loud[0][3], sub
    # passed on from the subclass's own flag: on when its caller turns that on
    loud = run("super().__init__(dim, sync=sync)", "passed", build="SyncLayer(64, sync=True)")
    assert [(c, s) for _, c, s, _ in loud] == [("GC110", "error")]
    assert "passes on a flag of its own, which `Runner.__init__` (engine.py:6) turns on" in loud[0][3]
    # several bases: whichever the instances' MRO runs, it may be this one
    extra = "class Mixin:\n        def hello(self):\n            return 1\n\n\n    "
    assert [(c, s) for _, c, s, _ in run("super().__init__(dim, sync=True)", "mixin", bases="Mixin, Layer",
                                         extra=extra)] == [("GC110", "error")]


def test_a_subclass_that_leaves_the_flag_off_stays_a_warning(tmp_path):
    def run(init: str, sub: str, build: str = "SyncLayer(64)"):
        ops = LAYER + f"""\


    class SyncLayer(Layer):
        def __init__(self, dim: int, sync: bool = False):
            {init}
"""
        files = {"p/__init__.py": "", "p/ops.py": ops, "p/engine.py": SUBCLASS_RUNNER.format(build=build)}
        return [(c, s, m) for _, c, s, m in ((f.line, f.code, f.severity.value, f.message)
                                              for f in tree_findings(make(tmp_path / sub, files))
                                              if f.path.endswith("ops.py"))]

    for sub, init in [("omitted", "super().__init__(dim)"),
                      ("false", "super().__init__(dim, sync=False)"),
                      ("explicit_omitted", "Layer.__init__(self, dim)"),
                      ("explicit_false", "Layer.__init__(self, dim, False)"),
                      ("passed_off", "super().__init__(dim, sync=sync)")]:
        quiet = run(init, sub)
        assert [(c, s) for c, s, _ in quiet] == [("GC110", "warning")], sub
        assert "no caller in the tree turns it on" in quiet[0][2], sub
