"""C++ object construction is load-time code (a cause of the fourth out-of-sample check, docs/precision-holdout.md:
exllama's ``QMatrix::QMatrix`` repacks GPTQ weights, with a blocking copy and a device sync, when ``make_q_matrix``
builds the layer). Hazards in a class constructor's body, and in functions only constructors call, are warnings
that name the constructor; the same hazard in a method, in a function the launch path also calls, or in the op
that builds a per-call helper stays an error."""

from __future__ import annotations

from pathlib import Path

from lint_trees import make, tree_findings

from graphcheck.lint.cpp_rules import lint_cpp

MATRIX = """\
    #include <cuda_runtime.h>
    #include <cstdlib>
    __global__ void shuffle_kernel(int* q) {}

    class QMatrix
    {
    public:
        int* q;
        int* groups;
        int height;
        QMatrix(int* _q, int* _groups, int _height);
        bool make_sequential(const int* g_idx);
        void forward(cudaStream_t stream);
    };

    QMatrix::QMatrix(int* _q, int* _groups, int _height) :
        q(_q),
        groups(_groups),
        height(_height)
    {
        int* cpu_groups = (int*) calloc(height, sizeof(int));
        cudaMemcpy(cpu_groups, groups, height * sizeof(int), cudaMemcpyDeviceToHost);
        shuffle_kernel<<<1, 1>>>(q);
        if (groups) make_sequential(groups);
        free(cpu_groups);
    }

    bool QMatrix::make_sequential(const int* g_idx)
    {
        shuffle_kernel<<<1, 1>>>(q);
        cudaDeviceSynchronize();
        return true;
    }

    void QMatrix::forward(cudaStream_t stream)
    {
        shuffle_kernel<<<1, 1>>>(q);
        cudaDeviceSynchronize();
    }
"""
EXT = """\
    #include <torch/extension.h>
    #include "q_matrix.cuh"
    uintptr_t make_q_matrix(torch::Tensor q, torch::Tensor groups)
    {
        QMatrix* m = new QMatrix((int*) q.data_ptr(), (int*) groups.data_ptr(), q.size(0));
        return reinterpret_cast<uintptr_t>(m);
    }
    void gemm(uintptr_t b, torch::Tensor x)
    {
        QMatrix* qm = reinterpret_cast<QMatrix*>(b);
        qm->forward(at::cuda::getCurrentCUDAStream());
    }
    PYBIND11_MODULE(ext, m) { m.def("make_q_matrix", &make_q_matrix); m.def("gemm", &gemm); }
"""
PY = """\
    from ext import make_q_matrix, gemm

    def forward(x, b):
        return gemm(b, x)
"""


def rows(root: Path):
    return sorted((Path(f.path).name, f.line, f.function, f.code, f.severity.value, f.message)
                  for f in tree_findings(root) if f.severity.value != "info")


def test_hazards_in_a_constructor_body_are_warnings_that_name_it():
    got = [(f.function, f.code, f.severity.value, f.message) for f in lint_cpp(MATRIX, "q_matrix.cu")]
    ctor = [g for g in got if g[0] == "QMatrix"]
    assert [(c, s) for _, c, s, _ in ctor] == [("GC110", "warning"), ("GC201", "warning")]
    assert "it runs in the constructor of `QMatrix`, when a `QMatrix` is built" in ctor[0][3]
    # a method of the same class with the same hazards keeps them as errors
    method = sorted((c, s) for fn, c, s, _ in got if fn == "forward")
    assert method == [("GC110", "error"), ("GC201", "error")]


def test_an_in_class_constructor_is_one_too_and_a_destructor_or_a_method_is_not():
    src = """\
        #include <cuda_runtime.h>
        __global__ void k() {}
        struct Packer {
            int* w;
            Packer(int* _w) : w(_w) {
                k<<<1, 1>>>();
                cudaDeviceSynchronize();
            }
            ~Packer() {
                k<<<1, 1>>>();
                cudaDeviceSynchronize();
            }
            void run() {
                k<<<1, 1>>>();
                cudaDeviceSynchronize();
            }
        };
    """
    got = sorted((f.line, f.code, f.severity.value) for f in lint_cpp(src, "p.cu"))
    assert got == [(6, "GC201", "warning"), (7, "GC110", "warning"),
                   (10, "GC201", "error"), (11, "GC110", "error"), (14, "GC201", "error"), (15, "GC110", "error")]


def test_a_function_only_constructors_call_is_a_warning_that_names_them(tmp_path):
    got = rows(make(tmp_path / "a", {"csrc/q_matrix.cu": MATRIX, "csrc/ext.cpp": EXT, "pkg/layer.py": PY}))
    seq = [g for g in got if g[2] == "make_sequential"]
    assert [(c, s) for _, _, _, c, s, _ in seq] == [("GC201", "warning"), ("GC110", "warning")]
    assert ("`make_sequential` is only called from class constructors (or from functions only they call), which "
            "build an object once, normally at load time") in seq[0][5] and "`QMatrix`" in seq[0][5]
    # the per-call method stays an error
    assert [(c, s) for _, _, fn, c, s, _ in got if fn == "forward"] == [("GC201", "error"), ("GC110", "error")]


def test_a_function_the_launch_path_also_calls_stays_an_error(tmp_path):
    matrix = MATRIX.replace("void QMatrix::forward(cudaStream_t stream)\n    {\n",
                            "void QMatrix::forward(cudaStream_t stream)\n    {\n        make_sequential(groups);\n")
    got = rows(make(tmp_path / "b", {"csrc/q_matrix.cu": matrix, "csrc/ext.cpp": EXT, "pkg/layer.py": PY}))
    assert [(c, s) for _, _, fn, c, s, _ in got if fn == "make_sequential"] == [("GC201", "error"),
                                                                                ("GC110", "error")]


def test_a_per_call_helper_constructor_does_not_hide_the_op_that_builds_it():
    # an RAII guard made per call: only its own body would change; the op's hazards stay errors
    src = """\
        #include <cuda_runtime.h>
        #include <torch/extension.h>
        __global__ void k(float* p) {}
        struct DeviceGuard {
            int prev;
            DeviceGuard(int dev) { cudaGetDevice(&prev); cudaSetDevice(dev); }
            ~DeviceGuard() { cudaSetDevice(prev); }
        };
        void op(torch::Tensor x) {
            DeviceGuard g(x.get_device());
            k<<<1, 1>>>(x.data_ptr<float>());
            cudaDeviceSynchronize();
        }
    """
    got = sorted((f.function, f.code, f.severity.value) for f in lint_cpp(src, "g.cu"))
    assert got == [("op", "GC110", "error"), ("op", "GC201", "error")]
