"""One-time set-up behind a flag (`if not self.tables_ready: self._build_tables(x)`) runs once, normally in the
warm-up before capture: its findings, and those of functions only it calls, are warnings that say so. A flag
whose name does not say "done" and that the block does not set stays an ordinary branch."""

from __future__ import annotations

from lint_trees import make, tree_findings

OPS = """\
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def kern(x_ptr, n):
        pass


    class Op:
        def __init__(self):
            self.FLAG = False

        def _build_tables(self, x):
            self.FLAG = True
            self.t = torch.tensor([1, 2, 3], device=x.device)

        def run(self, x):
            TEST
            kern[(1,)](x, 1)
"""


def gc301(tmp_path, flag: str, test: str) -> tuple[str, str]:
    text = OPS.replace("FLAG", flag).replace("TEST", test)
    found = [f for f in tree_findings(make(tmp_path, {"pkg/__init__.py": "", "pkg/ops.py": text}))
             if f.code == "GC301"]
    assert len(found) == 1, found
    return found[0].severity.value, found[0].message


def test_a_setup_call_under_a_ready_flag_is_a_warning(tmp_path):
    severity, message = gc301(tmp_path, "x_fan_ready", "if not self.x_fan_ready:\n                self._build_tables(x)")
    assert severity == "warning"
    assert "while `self.x_fan_ready` is not yet set" in message and "one-time set-up" in message


def test_a_block_that_sets_its_own_flag_is_a_warning_whatever_the_name(tmp_path):
    test = "if not self.have_t:\n                self.have_t = True\n                self._build_tables(x)"
    assert gc301(tmp_path, "have_t", test)[0] == "warning"


def test_a_flag_whose_name_does_not_say_done_stays_an_error(tmp_path):
    assert gc301(tmp_path, "use_fast", "if not self.use_fast:\n                self._build_tables(x)")[0] == "error"


def test_a_ready_flag_tested_the_other_way_stays_an_error(tmp_path):
    assert gc301(tmp_path, "x_fan_ready", "if self.x_fan_ready:\n                self._build_tables(x)")[0] == "error"


def test_a_ready_flag_in_an_and_test_is_a_warning(tmp_path):
    test = "if not self.x_fan_ready and x is not None:\n                self._build_tables(x)"
    assert gc301(tmp_path, "x_fan_ready", test)[0] == "warning"


def test_a_ready_flag_in_an_or_test_stays_an_error(tmp_path):
    # `or` runs the block whenever the other operand holds, on every call
    test = "if not self.x_fan_ready or x is not None:\n                self._build_tables(x)"
    assert gc301(tmp_path, "x_fan_ready", test)[0] == "error"


LAZY = """\
    import torch
    import triton


    @triton.jit
    def kern(x_ptr, n):
        pass


    class Scaler(torch.autograd.Function):
        scale = None

        @staticmethod
        def forward(ctx, x):
            kern[(1,)](x, 1)
            return x

        @staticmethod
        def backward(ctx, g):
            TEST
            return g * Scaler.scale
"""


def lazy_gc301(tmp_path, test: str) -> str:
    text = LAZY.replace("TEST", test)
    found = [f for f in tree_findings(make(tmp_path, {"pkg/__init__.py": "", "pkg/ops.py": text}))
             if f.code == "GC301"]
    assert len(found) == 1, found
    return found[0].severity.value, found[0].message


def test_a_lazy_attribute_initialization_is_one_time(tmp_path):
    test = "if Scaler.scale is None:\n                Scaler.scale = torch.tensor(1.0, device=g.device)"
    severity, message = lazy_gc301(tmp_path, test)
    assert severity == "warning" and "while `Scaler.scale` is still None" in message


def test_a_none_test_of_another_attribute_stays_an_error(tmp_path):
    test = "if Scaler.other is None:\n                Scaler.scale = torch.tensor(1.0, device=g.device)"
    assert lazy_gc301(tmp_path, test)[0] == "error"


def test_a_local_set_when_none_stays_an_error(tmp_path):
    test = "s = None\n            if s is None:\n                s = torch.tensor(1.0, device=g.device)\n            Scaler.scale = s"
    assert lazy_gc301(tmp_path, test)[0] == "error"


RUNNER = """\
    import torch


    class Runner:
        def __init__(self):
            self.graphs = {}
            self.graph = None

        def run(self, x: torch.Tensor, bs: int):
            TEST
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    y = x * x.sum().item()
                self.graphs[bs] = g
            return x
"""


def test_a_capture_region_in_a_one_time_block_stays_captured(tmp_path):
    for n, test in enumerate(["if bs not in self.graphs:", "if self.graph is None:\n                self.graph = bs"]):
        text = RUNNER.replace("TEST", test)
        found = {(f.line, f.severity.value) for f in tree_findings(make(tmp_path / str(n), {
            "pkg/__init__.py": "", "pkg/run.py": text})) if f.code == "GC101"}
        capture_line = [line.strip() for line in text.splitlines()].index("y = x * x.sum().item()") + 1
        assert found == {(capture_line, "error")}  # captured, though the capture runs once
