"""FlashInfer's plan step runs before the captured replay (issue #11; thirteenth out-of-sample check, Quest rows 3
and 5: ``PartitionPagedKVCacheComputeAuxiliaryInfo`` and ``BatchDecodeWithPagedKVCacheWorkEstimation`` sync and copy
from host vectors, called only from ``BatchDecodeHandler::BeginForward``; the same code in Nanoflow's
``handler.cuh``). FlashInfer splits attention into a plan step (Python ``plan``, older name ``begin_forward``; C++
``BeginForward``) that reads the batch's lengths on the host once per batch, and a run step (``forward``/``run``)
that engines capture. A C++ function ``eager-functions`` names is a plan step, and so is C++ code every caller chain
of which goes through one, or a bound op whose every in-tree Python caller is a plan step: their errors are
warnings that name the plan step. A helper the run step also calls stays an error, as does a function whose name
only resembles a plan step's."""

from __future__ import annotations

import textwrap
from pathlib import Path

from lint_trees import KERNEL, make

from graphcheck.config import DEFAULT_EAGER, PLAN_STEP, Config
from graphcheck.lint.engine import lint_paths
from graphcheck.lint.project import ScopeNames

HELPERS = """\
    #include <cuda_runtime.h>
    #include <vector>
    __global__ void decode_kernel(int* o) {}

    template <typename IdType>
    cudaError_t PartitionPagedKVCacheComputeAuxiliaryInfo(IdType* old_indptr, IdType* new_indptr, int n,
                                                          cudaStream_t stream) {
      std::vector<IdType> new_indptr_h{0};
      std::vector<IdType> old_indptr_h(n + 1);
      cudaMemcpyAsync(old_indptr_h.data(), old_indptr, sizeof(IdType) * (n + 1), cudaMemcpyDeviceToHost, stream);
      cudaStreamSynchronize(stream);
      new_indptr_h.push_back(old_indptr_h[n]);
      cudaMemcpyAsync(new_indptr, new_indptr_h.data(), sizeof(IdType) * new_indptr_h.size(),
                      cudaMemcpyHostToDevice, stream);
      return cudaSuccess;
    }

    template <typename IdType>
    cudaError_t BatchDecodeWithPagedKVCacheWorkEstimation(int& tmp_size, IdType* indptr, int n,
                                                          cudaStream_t stream = nullptr) {
      std::vector<IdType> indptr_h(n + 1);
      cudaMemcpy(indptr_h.data(), indptr, sizeof(IdType) * (n + 1), cudaMemcpyDeviceToHost);
      tmp_size = indptr_h[n];
      return cudaSuccess;
    }
"""
HANDLER = """\
    #include "decode_attn.cuh"

    class BatchDecodeHandler {
     public:
      template <typename IdType>
      cudaError_t BeginForward(IdType* indptr, int n) {
        int tmp_size = 0;
        auto estimate = BatchDecodeWithPagedKVCacheWorkEstimation<IdType>;
        estimate(tmp_size, indptr, n);
        return PartitionPagedKVCacheComputeAuxiliaryInfo(indptr, new_indptr_, n, stream_);
      }

      template <typename IdType>
      cudaError_t Forward(IdType* indptr, int* o, int n) {
        decode_kernel<<<1, 1, 0, stream_>>>(o);
        return cudaSuccess;
      }

     private:
      int* new_indptr_;
      cudaStream_t stream_;
    };
"""
BINDING = """\
    #include <torch/extension.h>
    #include "decode_handler.cuh"

    struct DecodeWrapper {
      BatchDecodeHandler handler_;
      void BeginForward(torch::Tensor indptr) {
        handler_.BeginForward<int>(indptr.data_ptr<int>(), indptr.size(0) - 1);
      }
      void Forward(torch::Tensor indptr, torch::Tensor o) {
        handler_.Forward<int>(indptr.data_ptr<int>(), o.data_ptr<int>(), indptr.size(0) - 1);
      }
    };

    PYBIND11_MODULE(_kernels, m) {
      py::class_<DecodeWrapper>(m, "DecodeWrapper")
          .def("begin_forward", &DecodeWrapper::BeginForward)
          .def("forward", &DecodeWrapper::Forward);
    }
"""
PY = """\
    import torch

    from . import _kernels


    class Wrapper:
        def __init__(self):
            self._wrapper = _kernels.DecodeWrapper()

        def begin_forward(self, indptr):
            self._wrapper.begin_forward(indptr)

        def forward(self, indptr, o):
            self._wrapper.forward(indptr, o)
            return o


    class Attention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.wrapper = Wrapper()

        def forward(self, indptr, o):
            return self.wrapper.forward(indptr, o)
"""


def findings(root: Path, **config) -> list[tuple[str, int, str, str, str, str]]:
    found = lint_paths([str(root)], Config(root=root, **config), use_cache=False, jobs=1).findings
    return sorted((Path(f.path).name, f.line, f.function, f.code, f.severity.value, f.message) for f in found
                  if f.severity.value != "info")


def quest(root: Path, handler: str = HANDLER, helpers: str = HELPERS) -> Path:
    return make(root, {"kernels/decode_attn.cuh": helpers, "kernels/decode_handler.cuh": handler,
                       "pkg/csrc/ops.cu": BINDING, "pkg/wrapper.py": PY})


def in_helpers(rows):
    return [(fn, code, sev) for name, _, fn, code, sev, _ in rows if name == "decode_attn.cuh"]


def test_code_only_the_plan_step_calls_is_a_warning_that_names_it(tmp_path):
    rows = findings(quest(tmp_path / "a"))
    assert in_helpers(rows) == [
        ("PartitionPagedKVCacheComputeAuxiliaryInfo", "GC110", "warning"),
        ("PartitionPagedKVCacheComputeAuxiliaryInfo", "GC301", "warning"),
        ("BatchDecodeWithPagedKVCacheWorkEstimation", "GC110", "warning"),
    ]
    by_fn = {fn: msg for name, _, fn, _, _, msg in rows if name == "decode_attn.cuh"}
    assert ("(`PartitionPagedKVCacheComputeAuxiliaryInfo` runs only in the plan step "
            "`BatchDecodeHandler::BeginForward` (kernels/decode_handler.cuh:10), which engines run once per batch, "
            "before the captured replay (eager-functions))") in by_fn["PartitionPagedKVCacheComputeAuxiliaryInfo"]
    # a reference that takes the function's address names the plan step's line too
    assert ("runs only in the plan step `BatchDecodeHandler::BeginForward` (kernels/decode_handler.cuh:8)"
            in by_fn["BatchDecodeWithPagedKVCacheWorkEstimation"])


def test_a_helper_the_run_step_also_calls_stays_an_error(tmp_path):
    handler = HANDLER.replace("decode_kernel<<<1, 1, 0, stream_>>>(o);",
                              "decode_kernel<<<1, 1, 0, stream_>>>(o);\n"
                              "        PartitionPagedKVCacheComputeAuxiliaryInfo(indptr, new_indptr_, n, stream_);")
    rows = findings(quest(tmp_path / "b", handler=handler))
    assert in_helpers(rows) == [
        ("PartitionPagedKVCacheComputeAuxiliaryInfo", "GC110", "error"),
        ("PartitionPagedKVCacheComputeAuxiliaryInfo", "GC301", "error"),
        ("BatchDecodeWithPagedKVCacheWorkEstimation", "GC110", "warning"),
    ]


def test_a_function_named_like_a_plan_with_a_run_step_caller_stays_an_error(tmp_path):
    # `PlanWork` is no plan step by eager-functions, and `Forward` calls it per step
    handler = HANDLER.replace("BeginForward(IdType* indptr", "PlanWork(IdType* indptr").replace(
        "decode_kernel<<<1, 1, 0, stream_>>>(o);", "decode_kernel<<<1, 1, 0, stream_>>>(o);\n"
        "        PlanWork(indptr, n);")
    binding = BINDING.replace("handler_.BeginForward<int>", "handler_.PlanWork<int>")
    root = make(tmp_path / "c", {"kernels/decode_attn.cuh": HELPERS, "kernels/decode_handler.cuh": handler,
                                 "pkg/csrc/ops.cu": binding, "pkg/wrapper.py": PY})
    assert [sev for _, _, sev in in_helpers(findings(root))] == ["error", "error", "error"]


def test_the_plan_step_itself_is_one_by_its_name(tmp_path):
    handler = HANDLER.replace("int tmp_size = 0;", "int tmp_size = 0;\n        decode_kernel<<<1, 1, 0, stream_>>>("
                              "new_indptr_);\n        cudaDeviceSynchronize();")
    rows = findings(quest(tmp_path / "d", handler=handler))
    own = [(fn, code, sev, msg) for name, _, fn, code, sev, msg in rows if name == "decode_handler.cuh"]
    assert [(fn, code, sev) for fn, code, sev, _ in own] == [("BeginForward", "GC110", "warning")]
    assert ("(`BatchDecodeHandler::BeginForward` is a plan step by its name (eager-functions), which engines run "
            "once per batch, before the captured replay)") in own[0][3]
    # the same sync in the run step stays an error
    handler = HANDLER.replace("decode_kernel<<<1, 1, 0, stream_>>>(o);",
                              "decode_kernel<<<1, 1, 0, stream_>>>(o);\n        cudaDeviceSynchronize();")
    rows = findings(quest(tmp_path / "e", handler=handler))
    assert [(fn, code, sev) for name, _, fn, code, sev, _ in rows if name == "decode_handler.cuh"] == [
        ("Forward", "GC110", "error")]


def test_eager_functions_without_the_plan_globs_keep_the_errors(tmp_path):
    rows = findings(quest(tmp_path / "f"), eager_functions=("*.init_forward_metadata",))
    assert [sev for _, _, sev in in_helpers(rows)] == ["error", "error", "error"]


GROUP = """\
    #include <torch/extension.h>
    #include <cuda_runtime.h>

    class ProcessGroup {
     public:
      void all_gather_cpu(const void* src, void* dst, int64_t n) { all_gather_cpu_by_gpu(src, dst, n); }

     private:
      void all_gather_cpu_by_gpu(const void* src, void* dst, int64_t n) {
        cudaStream_t stream = at::cuda::getCurrentCUDAStream();
        auto buf = torch::empty({n}, torch::dtype(torch::kUInt8).device(torch::kCUDA));
        cudaMemcpyAsync(buf.data_ptr(), src, n, cudaMemcpyHostToDevice, stream);
        cudaMemcpyAsync(dst, buf.data_ptr(), n, cudaMemcpyDeviceToHost, stream);
        cudaStreamSynchronize(stream);
      }
    };

    void exchange_ids(ProcessGroup* pg, void* ids, int64_t n) { pg->all_gather_cpu(ids, ids, n); }
    PYBIND11_MODULE(_shm, m) { m.def("exchange_ids", &exchange_ids); }
"""


def test_code_only_other_eager_functions_call_names_them_as_eager(tmp_path):
    # flux's `C10dProcessGroup::all_gather_cpu` gathers host data through the GPU (eager-functions `*_cpu`)
    root = make(tmp_path / "k", {"csrc/shm.cc": GROUP})
    rows = [r for r in findings(root) if r[2] == "all_gather_cpu_by_gpu"]
    assert [(code, sev) for _, _, _, code, sev, _ in rows] == [("GC110", "warning")]
    assert ("(`all_gather_cpu_by_gpu` runs only in `ProcessGroup::all_gather_cpu` (shm.cc:6), which "
            "eager-functions names as code engines run before or outside the captured replay, not under capture)"
            ) in rows[0][5]
    # a per-call caller outside eager-functions keeps the error
    per_call = GROUP.replace("     private:", "      void all_gather(torch::Tensor x) {\n"
                             "        all_gather_cpu_by_gpu(x.data_ptr(), x.data_ptr(), x.numel());\n      }\n\n"
                             "     private:")
    root = make(tmp_path / "l", {"csrc/shm.cc": per_call})
    assert [(code, sev) for _, _, fn, code, sev, _ in findings(root) if fn == "all_gather_cpu_by_gpu"] == [
        ("GC110", "error")]


OP = """\
    #include <torch/extension.h>
    #include <cuda_runtime.h>
    #include <vector>

    void compute_aux_info(torch::Tensor indptr, torch::Tensor out) {
      std::vector<int> h(indptr.numel());
      cudaMemcpy(h.data(), indptr.data_ptr<int>(), h.size() * sizeof(int), cudaMemcpyDeviceToHost);
      cudaMemcpyAsync(out.data_ptr<int>(), h.data(), h.size() * sizeof(int), cudaMemcpyHostToDevice,
                      at::cuda::getCurrentCUDAStream());
    }

    void decode(torch::Tensor q, torch::Tensor o);

    PYBIND11_MODULE(_ops, m) {
      m.def("compute_aux_info", &compute_aux_info);
      m.def("decode", &decode);
    }
"""
OP_PY = """\
    import torch

    from . import _ops


    class DecodeWrapper:
        def plan(self, indptr):
            self._aux = torch.empty_like(indptr)
            _ops.compute_aux_info(indptr, self._aux)

        def begin_forward(self, indptr):
            _ops.compute_aux_info(indptr, self._aux)

        def run(self, q, o):
            _ops.decode(q, o)
            return o


    class Attention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.wrapper = DecodeWrapper()

        def forward(self, q, o):
            return self.wrapper.run(q, o)
"""


def test_an_op_only_plan_steps_call_is_a_warning_that_names_them(tmp_path):
    root = make(tmp_path / "g", {"csrc/ops.cu": OP, "pkg/attn.py": OP_PY})
    rows = [r for r in findings(root) if r[2] == "compute_aux_info"]
    assert [(code, sev) for _, _, _, code, sev, _ in rows] == [("GC110", "warning"), ("GC301", "warning")]
    assert ("(`compute_aux_info` runs only in the plan step: every in-tree Python caller of it (through the op bound "
            "to it) is one, which engines run once per batch, before the captured replay (eager-functions): "
            "`attn.py: DecodeWrapper.begin_forward`, `attn.py: DecodeWrapper.plan`)") in rows[0][5]


def test_an_op_the_run_step_also_calls_stays_an_error(tmp_path):
    py = OP_PY.replace("_ops.decode(q, o)", "_ops.decode(q, o)\n            _ops.compute_aux_info(q, o)")
    root = make(tmp_path / "h", {"csrc/ops.cu": OP, "pkg/attn.py": py})
    rows = [r for r in findings(root) if r[2] == "compute_aux_info"]
    assert [(code, sev) for _, _, _, code, sev, _ in rows] == [("GC110", "error"), ("GC301", "error")]


def test_python_begin_forward_is_eager_like_plan(tmp_path):
    body = KERNEL + textwrap.dedent("""\

        class DecodeWrapper:
            def plan(self, indptr):
                kern[(indptr[-1].item(),)](indptr, 4)

            def begin_forward(self, indptr):
                kern[(indptr[-1].item(),)](indptr, 4)

            def begin_forwarding(self, indptr):
                kern[(indptr[-1].item(),)](indptr, 4)

        def begin_forward(indptr):
            kern[(indptr[-1].item(),)](indptr, 4)
    """)
    root = make(tmp_path / "i", {"pkg/attn.py": body})
    # the method named like FlashInfer's old plan step is eager; a module function of that name, or a method
    # whose name only begins like it, is not
    assert {fn for _, _, fn, _, _, _ in findings(root)} == {"DecodeWrapper.begin_forwarding", "begin_forward"}


def test_plan_step_globs():
    names = ScopeNames(DEFAULT_EAGER)
    assert set(PLAN_STEP) <= set(DEFAULT_EAGER)
    for qual in ("BatchDecodeWithPagedKVCacheWrapper.begin_forward", "DecodeWrapper.plan",
                 "BatchDecodeHandler.BeginForward", "BatchPrefillHandler.BeginForwardDispatched", "BeginForward",
                 "BatchDecodeWithPagedKVCachePlan", "BatchMLAPagedAttentionPlan"):
        assert names.match(qual), qual
    for qual in ("begin_forward", "FlashInferBackend.call_begin_forward", "Scheduler.PlanWork", "Plan",
                 "BatchTransferPlan.add", "plan_compress_decode", "BatchDecodeHandler.Forward"):
        assert not names.match(qual), qual
