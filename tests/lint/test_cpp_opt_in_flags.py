"""Opt-in flags in C++ (graphcheck.lint.cpp_flags, issue #11): a host sync under a ``bool`` parameter that no
caller in the tree turns on (``if (with_stream_sync)``, default ``false`` on the function, its header
declaration, or the Python binding's ``py::arg``) is a warning that says so. bytedance flux's MoE gather-RS op
(``prepare_args`` syncs its stream under ``with_stream_sync``, passed down from ``forward_gather_rs`` and bound with
``py::arg("with_stream_sync") = false``) is the shape. A caller that passes anything but a literal ``false``/``0``
keeps the error and is named, as does a parameter no default turns off."""

from __future__ import annotations

from pathlib import Path

from lint_trees import make, tree_findings

# the flux shape: the sync sits in a helper, under a flag passed down from the bound method
OP = """\
    #include <torch/extension.h>
    #include <cuda_runtime.h>

    __global__ void scatter_kernel(int* o) {}

    class GatherRS {
     public:
      void prepare_args(torch::Tensor x, int sm_margin, bool with_stream_sync) {
        cudaStream_t stream = at::cuda::getCurrentCUDAStream();
        scatter_kernel<<<1, 1, 0, stream>>>(x.data_ptr<int>());
        if (with_stream_sync) {
          cudaStreamSynchronize(stream);
        }
      }
      torch::Tensor forward_impl(torch::Tensor x, int sm_margin, bool with_stream_sync) {
        prepare_args(x, sm_margin, with_stream_sync);
        return x;
      }
      torch::Tensor forward(torch::Tensor x, int sm_margin, bool with_stream_sync) {
        return forward_impl(x, sm_margin, with_stream_sync);
      }
    };

    PYBIND11_MODULE(_ops, m) {
      py::class_<GatherRS>(m, "GatherRS")
          .def(py::init<>())
          .def("forward", &GatherRS::forward, py::arg("x"), py::arg("sm_margin") = 0,
               py::arg("with_stream_sync") = false);
    }
"""
PY = """\
    import torch

    from . import _ops


    class MoE(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.op = _ops.GatherRS()

        def forward(self, x):
            extra = {{}} if x.dim() > 2 else {{"sm_margin": 2}}
            return self.op.forward({args}, **extra)
"""


def rows(root: Path, name: str = "ops.cu") -> list[tuple[str, str, str, str]]:
    return [(f.function or "", f.code, f.severity.value, f.message) for f in tree_findings(root)
            if Path(f.path).name == name and f.code == "GC110"]


def flux(root: Path, op: str = OP, args: str = "x") -> Path:
    return make(root, {"pkg/csrc/ops.cu": op, "pkg/moe.py": PY.format(args=args), "pkg/__init__.py": ""})


def test_a_sync_under_a_flag_the_binding_defaults_off_is_a_warning(tmp_path):
    found = rows(flux(tmp_path / "a"))
    assert [(fn, sev) for fn, _, sev, _ in found] == [("prepare_args", "warning")]
    assert found[0][3].endswith(
        "; it runs only when `with_stream_sync=true` (default false: passed down from `forward_impl`, `forward`, "
        'bound with `py::arg("with_stream_sync") = false` (csrc/ops.cu:28)): an opt-in flag, off under default '
        "capture; no caller in the tree turns it on")


def test_a_python_caller_that_turns_it_on_keeps_the_error(tmp_path):
    for sub, args in (("b", "x, with_stream_sync=True"), ("c", "x, 0, True"), ("d", "x, with_stream_sync=x.is_cuda")):
        found = rows(flux(tmp_path / sub, args=args))
        assert [(fn, sev) for fn, _, sev, _ in found] == [("prepare_args", "error")], args
        assert "; it runs when `with_stream_sync` is true, and a Python call of `forward` (moe.py:13) passes" in (
            found[0][3])
    # a literal false is off
    assert [sev for _, _, sev, _ in rows(flux(tmp_path / "e", args="x, with_stream_sync=False"))] == ["warning"]


def test_a_binding_without_a_default_keeps_the_error(tmp_path):
    op = OP.replace('py::arg("with_stream_sync") = false', 'py::arg("with_stream_sync")')
    assert [sev for _, _, sev, _ in rows(flux(tmp_path / "f", op=op, args="x, with_stream_sync=flag"))] == ["error"]


def test_a_cpp_caller_that_passes_true_keeps_the_error_and_is_named(tmp_path):
    op = OP.replace("return forward_impl(x, sm_margin, with_stream_sync);", "return forward_impl(x, sm_margin, true);")
    found = rows(flux(tmp_path / "g", op=op))
    assert [(fn, sev) for fn, _, sev, _ in found] == [("prepare_args", "error")]
    assert found[0][3].endswith("; it runs when `with_stream_sync` is true, and `forward` (csrc/ops.cu:20) "
                                "passes `true` for `with_stream_sync`")
    # one that passes a value the flag does not come from
    op = OP.replace("prepare_args(x, sm_margin, with_stream_sync);", "prepare_args(x, sm_margin, sm_margin > 0);")
    assert [sev for _, _, sev, _ in rows(flux(tmp_path / "h", op=op))] == ["error"]


def test_a_flag_the_function_assigns_or_an_or_condition_keeps_the_error(tmp_path):
    op = OP.replace("if (with_stream_sync) {", "with_stream_sync = with_stream_sync || sm_margin > 0;\n"
                    "    if (with_stream_sync) {")
    assert [sev for _, _, sev, _ in rows(flux(tmp_path / "i", op=op))] == ["error"]
    op = OP.replace("if (with_stream_sync) {", "if (with_stream_sync || sm_margin > 0) {")
    assert [sev for _, _, sev, _ in rows(flux(tmp_path / "j", op=op))] == ["error"]
    # the else branch of the flag runs when it is off
    op = OP.replace("cudaStreamSynchronize(stream);", "} else {\n      cudaStreamSynchronize(stream);")
    assert [sev for _, _, sev, _ in rows(flux(tmp_path / "k", op=op))] == ["error"]


STEP = """\
    #include <torch/extension.h>
    #include <cuda_runtime.h>
    #include "step.h"

    __global__ void step_kernel(int* o) {{}}

    void step(torch::Tensor x, bool sync{default}) {{
      {guard}
      step_kernel<<<1, 1, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<int>());
      {sync}
    }}

    torch::Tensor forward(torch::Tensor x) {{
      {call};
      return x;
    }}

    PYBIND11_MODULE(_ops, m) {{
      m.def("forward", &forward);
    }}
"""
STEP_PY = """\
    import torch

    from . import _ops


    class Layer(torch.nn.Module):
        def forward(self, x):
            return _ops.forward(x)
"""


def step_rows(root: Path, default: str = " = false", guard: str = "", sync: str = "if (sync) cudaDeviceSynchronize();",
              call: str = "step(x)", header: str = "void step(torch::Tensor x, bool sync);"):
    src = STEP.format(default=default, guard=guard, sync=sync, call=call)
    make(root, {"pkg/csrc/ops.cu": src, "pkg/csrc/step.h": header, "pkg/layer.py": STEP_PY, "pkg/__init__.py": ""})
    return [(fn, sev, msg) for fn, _, sev, msg in rows(root)]


def test_a_cpp_default_off_that_no_caller_passes_is_a_warning(tmp_path):
    found = step_rows(tmp_path / "l")
    assert [(fn, sev) for fn, sev, _ in found] == [("step", "warning")]
    assert found[0][2].endswith("; it runs only when `sync=true` (default false): an opt-in flag, off under "
                                "default capture; no caller in the tree turns it on")
    # an early `if (!sync) return;`, and a caller that passes a literal false
    assert [sev for _, sev, _ in step_rows(tmp_path / "m", guard="if (!sync) return;", sync="cudaDeviceSynchronize();",
                                           call="step(x, false)")] == ["warning"]


def test_a_default_given_only_in_the_header_counts(tmp_path):
    found = step_rows(tmp_path / "n", default="", header="void step(torch::Tensor x, bool sync = false);")
    assert [(fn, sev) for fn, sev, _ in found] == [("step", "warning")]


def test_a_parameter_no_default_turns_off_stays_an_error(tmp_path):
    # no default anywhere, and the caller passes a value: the flag may be on
    found = step_rows(tmp_path / "o", default="", call="step(x, x.numel() > 1)")
    assert [(fn, sev) for fn, sev, _ in found] == [("step", "error")]
    assert "`forward` (csrc/ops.cu:14) passes `x.numel() > 1` for `sync`" in found[0][2]
    # a default that turns it on, and a sync not under the flag
    assert [sev for _, sev, _ in step_rows(tmp_path / "p", default=" = true")] == ["error"]
    assert [sev for _, sev, _ in step_rows(tmp_path / "q", sync="cudaDeviceSynchronize();")] == ["error"]


LIBRARY = """\
    #include <torch/library.h>
    #include <cuda_runtime.h>

    __global__ void step_kernel(int* o) {}

    void step(torch::Tensor x, bool sync) {
      step_kernel<<<1, 1, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<int>());
      if (sync) {
        cudaDeviceSynchronize();
      }
    }

    TORCH_LIBRARY(myops, m) {
      m.def("step(Tensor x, bool sync=False) -> ()");
    }
    TORCH_LIBRARY_IMPL(myops, CUDA, m) {
      m.impl("step", &step);
    }
"""
LIBRARY_PY = """\
    import torch


    class Layer(torch.nn.Module):
        def forward(self, x):
            torch.ops.myops.step({args})
            return x
"""


def test_a_torch_library_schema_default_counts(tmp_path):
    def sev(sub: str, args: str, lib: str = LIBRARY) -> list[str]:
        root = make(tmp_path / sub, {"pkg/csrc/ops.cu": lib, "pkg/layer.py": LIBRARY_PY.format(args=args),
                                     "pkg/__init__.py": ""})
        return [s for _, _, s, _ in rows(root)]

    assert sev("r", "x") == ["warning"]
    assert sev("s", "x, True") == ["error"]
    assert sev("t", "x, sync=False") == ["warning"]
    # a schema without the default: every call passes it
    assert sev("u", "x, x.is_cuda", LIBRARY.replace("sync=False", "sync")) == ["error"]
    assert sev("v", "x, False", LIBRARY.replace("sync=False", "sync").replace("&step", "TORCH_FN(step)")) == [
        "warning"]
    msg = [m for _, _, _, m in rows(tmp_path / "v")][0]
    assert msg.endswith("; it runs only when `sync=true` (every caller in the tree passes false): an opt-in flag, "
                        "off under default capture; no caller in the tree turns it on")
    msg = [m for _, _, _, m in rows(tmp_path / "r")][0]
    assert "; it runs only when `sync=true` (default false: bound with `sync=False` in the schema of op `step`)" in msg


def test_const_bool_references_and_python_calls_of_other_functions(tmp_path):
    # `const bool&` is a bool flag; a kernel launched under the function's name and Python calls that cannot bind
    # to the op's arguments (`group.barrier()`, a keyword it lacks) are other functions'
    op = OP.replace("int sm_margin, bool with_stream_sync) {\n        cudaStream_t",
                    "int sm_margin, const bool& with_stream_sync) {\n        cudaStream_t").replace(
        "__global__ void scatter_kernel(int* o) {}", "__global__ void scatter_kernel(int* o) {}\n"
        "    __global__ void forward_impl(int* o, int n, int m) {}").replace(
        "scatter_kernel<<<1, 1, 0, stream>>>(x.data_ptr<int>());", "scatter_kernel<<<1, 1, 0, stream>>>("
        "x.data_ptr<int>());\n        forward_impl<<<1, 1, 0, stream>>>(x.data_ptr<int>(), 1, 2);")
    assert "const bool& with_stream_sync" in op and "forward_impl<<<" in op
    py = PY.replace("return self.op.forward", "self.op.forward(x, 1, 2, True)\n        self.op.forward(x, bias=True)\n"
                    "        return self.op.forward")
    root = make(tmp_path / "w", {"pkg/csrc/ops.cu": op, "pkg/moe.py": py.format(args="x"), "pkg/__init__.py": ""})
    assert [(fn, sev) for fn, _, sev, _ in rows(root)] == [("prepare_args", "warning")]
    # the same calls bind when the op takes them
    py = PY.replace("return self.op.forward", "self.op.forward(x, 1, True)\n        return self.op.forward")
    root = make(tmp_path / "x", {"pkg/csrc/ops.cu": op, "pkg/moe.py": py.format(args="x"), "pkg/__init__.py": ""})
    assert [(fn, sev) for fn, _, sev, _ in rows(root)] == [("prepare_args", "error")]
    # a non-const reference may be written through by a callee: not a flag
    op2 = op.replace("const bool& with_stream_sync", "bool& with_stream_sync")
    root = make(tmp_path / "y", {"pkg/csrc/ops.cu": op2, "pkg/moe.py": PY.format(args="x"), "pkg/__init__.py": ""})
    assert [(fn, sev) for fn, _, sev, _ in rows(root)] == [("prepare_args", "error")]
