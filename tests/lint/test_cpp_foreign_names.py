"""Python names that are not the tree's op of the same name (a cause of the eleventh out-of-sample check): lorax
binds ``rms_norm`` in its punica extension while its Python names ``rms_norm`` only as ``ops.rms_norm`` after
``from vllm._C import ops`` (another project's compiled module), as a module-level ``def rms_norm`` of a model file
called bare in that file, and as a source path in ``setup.py``. None of these runs the op: an application tree that
names it nowhere else does not call it. An import from a package the tree has or builds stays a use, and so does
every attribute when the tree names no extension build (the extension's name is unknown).
"""

from __future__ import annotations

from pathlib import Path

from lint_trees import make, tree_findings

from graphcheck.config import Config
from graphcheck.lint.engine import lint_paths

KERNELS = """\
    #include <torch/extension.h>
    __global__ void kern(float* p) {}
    void rms_norm(torch::Tensor x) { kern<<<1, 1>>>(x.data_ptr<float>()); }
    void gemm(torch::Tensor x) { kern<<<1, 1>>>(x.data_ptr<float>()); }
    PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
      m.def("rms_norm", &rms_norm, "");
      m.def("gemm", &gemm, "");
    }
"""
SETUP = """\
    from setuptools import setup
    from torch.utils.cpp_extension import BuildExtension, CUDAExtension

    setup(
        name="punica_ext",
        ext_modules=[CUDAExtension(name="punica_ext", sources=["csrc/rms_norm/rms_norm.cu"])],
        cmdclass={"build_ext": BuildExtension},
    )
"""
RUNNER = """\
    import torch
    import punica_ext

    class GraphRunner:
        def capture(self, x):
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                self.out = punica_ext.gemm(x)
"""
LAYERNORM = """\
    import torch

    if torch.version.hip:
        from vllm._C import ops

    def norm(x):
        out = torch.empty_like(x)
        ops.rms_norm(out, x)
        return out
"""
MPT = """\
    import torch

    def rms_norm(x, eps=1e-5):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)

    class RMSNorm(torch.nn.Module):
        def forward(self, x):
            return rms_norm(x.float())
"""


def rows(root: Path):
    return sorted((f.function, f.severity.value, f.message) for f in tree_findings(root)
                  if f.code == "GC201" and f.severity.value != "info")


def app(tmp_path: Path, name: str, **files: str) -> Path:
    tree = {"csrc/rms_norm/rms_norm.cu": KERNELS, "setup.py": SETUP, "app/runner.py": RUNNER,
            "app/layernorm.py": LAYERNORM, "app/mpt.py": MPT}
    tree.update({k.replace("__", "/").replace("_py", ".py"): v for k, v in files.items()})
    return make(tmp_path / name, {k: v for k, v in tree.items() if v})


def test_another_projects_module_a_python_def_and_a_source_path_do_not_name_the_op(tmp_path):
    got = rows(app(tmp_path, "a"))
    assert [(fn, s) for fn, s, _ in got] == [("gemm", "error"), ("rms_norm", "warning")]
    assert "`rms_norm` is bound as op `rms_norm`, but nothing in this application tree calls it" in got[1][2]
    # the Python function imported from the tree's module is that function too
    user = "from app.mpt import rms_norm\n\ndef f(x):\n    return rms_norm(x)\n"
    got = rows(app(tmp_path, "b", app__user_py=user))
    assert [(fn, s) for fn, s, _ in got] == [("gemm", "error"), ("rms_norm", "warning")]


def test_the_extensions_own_names_keep_the_op_live(tmp_path):
    # the op imported from the extension the tree builds
    user = "from punica_ext import rms_norm\n\ndef f(x):\n    return rms_norm(x)\n"
    assert [s for _, s, _ in rows(app(tmp_path, "a", app__user_py=user))] == ["error", "error"]
    # an attribute of the extension module, of a package the tree has, or of torch.ops
    for name, body in (("b", "import punica_ext as ops\n"), ("c", "from app import ops\n"),
                       ("d", "import torch\nops = None\n")):
        layernorm = LAYERNORM.replace("    from vllm._C import ops\n", "    " + body.replace("\n", "\n    "))
        if name == "d":
            layernorm = layernorm.replace("ops.rms_norm(out, x)", "torch.ops.punica.rms_norm(out, x)")
        assert [s for _, s, _ in rows(app(tmp_path, name, app__layernorm_py=layernorm))] == ["error", "error"], name
    # a bare name the file binds otherwise than by its def (here a parameter: the caller may pass the op)
    mpt = MPT + "\ndef apply(rms_norm, x):\n    return rms_norm(x)\n"
    assert [s for _, s, _ in rows(app(tmp_path, "e", app__mpt_py=mpt))] == ["error", "error"]


def test_a_tree_that_names_no_extension_build_keeps_foreign_looking_attributes(tmp_path):
    # no setup.py: the extension built as TORCH_EXTENSION_NAME may be vllm._C for all the tree says
    got = rows(app(tmp_path, "a", setup_py=""))
    assert [(fn, s) for fn, s, _ in got] == [("gemm", "error"), ("rms_norm", "error")]


def test_editing_only_the_cmake_build_is_seen_through_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAPHCHECK_CACHE_DIR", str(tmp_path / "cache"))
    # the extension's name comes from CMakeLists.txt here, so a cached verdict must be keyed on that file too
    root = app(tmp_path, "a", setup_py="")
    (root / "CMakeLists.txt").write_text("project(app)\n")

    def cached_rows():
        found = lint_paths([str(root)], Config(root=root), use_cache=True, jobs=1).findings
        return sorted((f.function, f.severity.value) for f in found if f.code == "GC201")

    assert cached_rows() == [("gemm", "error"), ("rms_norm", "error")]  # no name for the extension: unknown
    (root / "CMakeLists.txt").write_text("project(app)\npybind11_add_module(punica_ext csrc/rms_norm/rms_norm.cu)\n")
    assert cached_rows() == [("gemm", "error"), ("rms_norm", "warning")]
