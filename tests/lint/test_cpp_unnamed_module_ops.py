"""An op of an extension module that nothing in the tree names, while the tree takes the module's other ops one by one
(the fifteenth out-of-sample check, docs/precision-holdout.md: ShadowKV binds ``apply_rotary_pos_emb`` and
``apply_rotary_pos_emb_push_cache`` in its ``shadowkv`` module, and its Python calls ``shadowkv.<other op>(...)``
but never these two; a plain-torch Python function ``apply_rotary_pos_emb`` and methods of that name, called as a
bare name and as ``self.apply_rotary_pos_emb(...)``, are not the op). Its C++ errors are warnings that say so; an
op Python, an example or a doc names, a module handed out whole (star import, ``getattr`` with a computed name, the
module passed, returned or stored, loaded by name, imported at top level as a package of its own, which other
projects import too: TGI calls llm-awq's ``awq_inference_engine.gemm_forward_cuda``), a ``TORCH_LIBRARY`` op and a
module only tests take ops from keep the error."""

from __future__ import annotations

import textwrap
from pathlib import Path

from lint_trees import make, tree_findings

SETUP = """\
    from setuptools import setup
    from torch.utils.cpp_extension import BuildExtension, CUDAExtension

    setup(
        name="shadowkv",
        ext_modules=[CUDAExtension(name="shadowkv", sources=["kernels/main.cu", "kernels/rope.cu"])],
        cmdclass={"build_ext": BuildExtension},
    )
"""
ROPE = """\
    #include <torch/extension.h>
    __global__ void kern(float* p) {}
    void rope(torch::Tensor x) { kern<<<1, 1>>>(x.data_ptr<float>()); }
    void rope_new(torch::Tensor x) { kern<<<1, 1>>>(x.data_ptr<float>()); }
    void rope_push(torch::Tensor x) { kern<<<1, 1>>>(x.data_ptr<float>()); }
"""
MAIN = """\
    #include <torch/extension.h>
    void rope(torch::Tensor x);
    void rope_new(torch::Tensor x);
    void rope_push(torch::Tensor x);
    PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
        m.def("rope", &rope, "rope (CUDA)");
        m.def("rope_new", &rope_new, "rope, new (CUDA)");
        m.def("rope_push", &rope_push, "rope with cache push (CUDA)");
    }
"""
TENSOR_OP = textwrap.dedent("""\
    import torch
    from kernels import shadowkv


    def rope(q, k, cos, sin):
        return q * cos + k * sin


    def rope_cuda(x):
        out = torch.empty_like(x)
        shadowkv.rope_new(x)
        return out
""")
BASE = """\
    class LLM:
        def layer(self, q, k):
            q, k = self.rope(q, k)
            return q + k
"""
LLAMA = """\
    from .base import LLM
    from .tensor_op import rope, rope_cuda


    class Llama(LLM):
        def rope(self, q, k):
            return rope(q, k, self.cos, self.sin)

        def single(self, x):
            return rope_cuda(x)
"""
SHOWN = ("`rope` is bound as op `rope` of extension module `shadowkv`, but nothing in the tree names it (no Python "
         "file, test, example or doc), while the tree's Python takes the module's other ops one by one "
         "(`shadowkv.rope_new` in models/tensor_op.py) and hands the module out nowhere: no code in the tree runs it")


def rows(root: Path) -> list[tuple[str, str, str]]:
    return sorted((f.function, f.severity.value, f.message) for f in tree_findings(root)
                  if f.severity.value != "info" and f.code.startswith("GC2"))


def tree(tmp_path: Path, name: str, **extra: str) -> Path:
    files = {"setup.py": SETUP, "kernels/main.cu": MAIN, "kernels/rope.cu": ROPE, "models/tensor_op.py": TENSOR_OP,
             "models/base.py": BASE, "models/llama.py": LLAMA}
    files.update(extra)
    return make(tmp_path / name, {k: v for k, v in files.items() if v})


def severities(root: Path) -> list[tuple[str, str]]:
    return [(fn, s) for fn, s, _ in rows(root)]


def test_ops_nothing_names_of_a_module_the_tree_takes_op_by_op_are_warnings(tmp_path):
    got = rows(tree(tmp_path, "a"))
    assert [(fn, s) for fn, s, _ in got] == [("rope", "warning"), ("rope_new", "error"), ("rope_push", "warning")]
    assert SHOWN in got[0][2]
    assert got[0][2].startswith("`kern` is launched with no stream argument")
    # the sibling shown is the one whose name is nearest the op's
    assert "(`shadowkv.rope_new` in models/tensor_op.py)" in got[2][2]
    # a module named in its block, imported as an alias through its package, its sibling taken by a from-import
    literal = MAIN.replace("TORCH_EXTENSION_NAME", "_rope_ops")
    user = "import torch\nfrom kernels._rope_ops import rope_new\nimport kernels._rope_ops as ops\n\n\n" \
           "def rope_cuda(x):\n    rope_new(x)\n    return ops.rope_new(x)\n\n\ndef rope(q, k, cos, sin):\n    return q\n"
    got = rows(tree(tmp_path, "a2", **{"setup.py": "", "kernels/main.cu": literal, "models/tensor_op.py": user}))
    assert [(fn, s) for fn, s, _ in got] == [("rope", "warning"), ("rope_new", "error"), ("rope_push", "warning")]
    assert "of extension module `_rope_ops`" in got[0][2]


def test_a_function_only_such_an_op_reaches_through_c_plus_plus_says_so(tmp_path):
    rope = ROPE.replace("void rope_push(torch::Tensor x) { kern<<<1, 1>>>(x.data_ptr<float>()); }",
                        "void push_impl(float* p) { kern<<<1, 1>>>(p); }\n"
                        "void rope_push(torch::Tensor x) { push_impl(x.data_ptr<float>()); }")
    got = rows(tree(tmp_path, "t", **{"kernels/rope.cu": rope}))
    assert [(fn, s) for fn, s, _ in got] == [("push_impl", "warning"), ("rope", "warning"), ("rope_new", "error")]
    assert "`push_impl` is bound as op `rope_push` of extension module `shadowkv`, but nothing" in got[0][2]


def test_a_python_function_or_method_of_the_op_s_name_does_not_name_it(tmp_path):
    # `self.rope(...)` in the base class whose subclass defines `rope`, and the bare `rope(...)` the module defines
    # or imports from the tree, are Python functions; a `self.rope` no class of the hierarchy defines may be the op
    other = "class Other:\n    def f(self, x):\n        return self.rope(x)\n"
    assert severities(tree(tmp_path, "b", **{"models/other.py": other})) == [
        ("rope", "error"), ("rope_new", "error"), ("rope_push", "warning")]
    # the method defined in the class itself
    own = "class Other:\n    def rope(self, x):\n        return x\n\n    def f(self, x):\n        return self.rope(x)\n"
    assert severities(tree(tmp_path, "c", **{"models/other.py": own})) == [
        ("rope", "warning"), ("rope_new", "error"), ("rope_push", "warning")]


def test_an_op_python_an_example_or_a_doc_names_keeps_the_error(tmp_path):
    named = TENSOR_OP + "\n\ndef push(x):\n    shadowkv.rope_push(x)\n"
    assert severities(tree(tmp_path, "d", **{"models/tensor_op.py": named})) == [
        ("rope", "warning"), ("rope_new", "error"), ("rope_push", "error")]
    example = "from kernels import shadowkv\n\nshadowkv.rope_push(None)\n"
    assert severities(tree(tmp_path, "e", **{"examples/demo.py": example})) == [
        ("rope", "warning"), ("rope_new", "error"), ("rope_push", "error")]
    doc = "# ShadowKV\n\nCall `shadowkv.rope_push(x)` to rotate and push.\n"
    assert severities(tree(tmp_path, "f", **{"README.md": doc})) == [
        ("rope", "warning"), ("rope_new", "error"), ("rope_push", "error")]


def test_a_module_handed_out_whole_keeps_the_errors(tmp_path):
    errors = [("rope", "error"), ("rope_new", "error"), ("rope_push", "error")]
    star = "from kernels.shadowkv import *\n"
    assert severities(tree(tmp_path, "g", **{"models/__init__.py": star})) == errors
    dynamic = TENSOR_OP + "\n\ndef call(name, x):\n    return getattr(shadowkv, name)(x)\n"
    assert severities(tree(tmp_path, "h", **{"models/tensor_op.py": dynamic})) == errors
    stored = TENSOR_OP + "\n\nclass Ops:\n    def __init__(self):\n        self.ops = shadowkv\n"
    assert severities(tree(tmp_path, "i", **{"models/tensor_op.py": stored})) == errors
    returned = TENSOR_OP + "\n\ndef ops():\n    return shadowkv\n"
    assert severities(tree(tmp_path, "j", **{"models/tensor_op.py": returned})) == errors
    passed = TENSOR_OP + "\n\ndef register(table):\n    table.add(shadowkv)\n"
    assert severities(tree(tmp_path, "k", **{"models/tensor_op.py": passed})) == errors
    loaded = "import importlib\n\nops = importlib.import_module('kernels.shadowkv')\n"
    assert severities(tree(tmp_path, "l", **{"models/loader.py": loaded})) == errors
    # the module imported at top level: a package of its own, which other projects import and call directly
    top = TENSOR_OP.replace("from kernels import shadowkv", "import shadowkv")
    assert severities(tree(tmp_path, "u", **{"models/tensor_op.py": top})) == errors
    top = "from shadowkv import rope_new\n\n\ndef rope_cuda(x):\n    return rope_new(x)\n"
    assert severities(tree(tmp_path, "v", **{"models/cuda_op.py": top})) == errors
    # a module __getattr__ may hand out any op
    forwarded = "from kernels import shadowkv\n\n\ndef __getattr__(name):\n    return 1\n"
    assert severities(tree(tmp_path, "m", **{"models/__init__.py": forwarded})) == errors
    # a None test, a truth test and a message naming the module take nothing more out
    plain = (TENSOR_OP + "\n\ndef check(x):\n    if shadowkv is None or not shadowkv:\n"
             "        print('shadowkv missing')\n    return x\n")
    assert severities(tree(tmp_path, "n", **{"models/tensor_op.py": plain})) == [
        ("rope", "warning"), ("rope_new", "error"), ("rope_push", "warning")]


def test_a_torch_library_op_or_a_module_only_tests_use_keeps_the_errors(tmp_path):
    errors = [("rope", "error"), ("rope_new", "error"), ("rope_push", "error")]
    # TORCH_LIBRARY ops are called as torch.ops.ns.name by outside engines
    library = MAIN.replace("PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)", "TORCH_LIBRARY(shadowkv, m)")
    assert severities(tree(tmp_path, "o", **{"kernels/main.cu": library})) == errors
    # only a test takes ops from the module: the package wraps none of them
    test = "from kernels import shadowkv\n\n\ndef test_rope():\n    shadowkv.rope_new(None)\n"
    plain = "def rope_cuda(x):\n    return x\n\n\ndef rope(q, k, cos, sin):\n    return q\n"
    assert severities(tree(tmp_path, "p", **{"models/tensor_op.py": plain, "tests/test_rope.py": test})) == errors
    # a module named by a macro that no build script names: which module Python imports is unknown
    assert severities(tree(tmp_path, "q", **{"setup.py": ""})) == errors
    # a binding through a class chain as well as the module: a method of an object the module hands out
    chained = MAIN.replace('m.def("rope", &rope, "rope (CUDA)");',
                           'm.def("rope", &rope, "rope (CUDA)");\n'
                           '        py::class_<Ops>(m, "Ops").def("rope", &rope);')
    assert severities(tree(tmp_path, "r", **{"kernels/main.cu": chained})) == [
        ("rope", "error"), ("rope_new", "error"), ("rope_push", "warning")]
