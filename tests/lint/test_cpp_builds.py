"""C++ files no extension build of the tree compiles: their errors are warnings that name the builds.

Cited row (twelfth out-of-sample check, PLAUSIBLE): KIVI quant/csrc/gemv_cuda_backup.cu, next to the
gemv_cuda.cu that quant/setup.py's ``CUDAExtension(sources=[...])`` lists, held GC201 errors as if it ran.
Any doubt about the builds (a source list that cannot be followed, another build system, a compiler run by a
script, a file with ``main``, its name used elsewhere) leaves the findings as they are.
"""

from __future__ import annotations

from pathlib import Path

from graphcheck.config import Config
from graphcheck.lint.engine import lint_paths

KERNEL = """\
#include <torch/extension.h>
__global__ void gemv_kernel(float* out) {{}}

void {name}(torch::Tensor out) {{
  gemv_kernel<<<1, 128>>>(out.data_ptr<float>());
}}
"""
BIND = ('#include <torch/extension.h>\nvoid gemv_forward(torch::Tensor out);\n'
        'PYBIND11_MODULE(kivi_gemv, m) { m.def("gemv_forward", &gemv_forward); }\n')
SETUP = """\
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="kivi_gemv",
    ext_modules=[
        CUDAExtension(
            name="kivi_gemv",
            sources={sources},
            extra_compile_args={{"cxx": ["-O3"], "nvcc": ["-O3"]}},
        ),
    ],
    cmdclass={{"build_ext": BuildExtension}},
)
"""
USE = "import kivi_gemv\n\ndef run(out):\n    kivi_gemv.gemv_forward(out)\n"


def write(root: Path, rel: str, text: str) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def kivi(root: Path, sources: str = '["csrc/pybind.cpp", "csrc/gemv_cuda.cu"]') -> None:
    """KIVI's layout: a setup.py next to csrc/, a built gemv_cuda.cu and an unbuilt gemv_cuda_backup.cu that
    define the same bound function."""
    write(root, "quant/setup.py", SETUP.format(sources=sources))
    write(root, "quant/csrc/pybind.cpp", BIND)
    write(root, "quant/csrc/gemv_cuda.cu", KERNEL.format(name="gemv_forward"))
    write(root, "quant/csrc/gemv_cuda_backup.cu", KERNEL.format(name="gemv_forward"))
    write(root, "quant/gemv.py", USE)


def gc201(root: Path, cache: bool = False) -> dict[str, str]:
    found = lint_paths([root], Config(root=root), jobs=1, use_cache=cache).findings
    return {Path(f.path).name: f.severity.value for f in found if f.code == "GC201"}


def messages(root: Path) -> dict[str, str]:
    found = lint_paths([root], Config(root=root), jobs=1, use_cache=False).findings
    return {Path(f.path).name: f.message for f in found if f.code == "GC201"}


def test_a_file_no_build_lists_is_a_warning_that_names_the_build(tmp_path):
    kivi(tmp_path)
    assert gc201(tmp_path) == {"gemv_cuda.cu": "error", "gemv_cuda_backup.cu": "warning"}
    message = messages(tmp_path)["gemv_cuda_backup.cu"]
    assert ("no extension build of the tree compiles `quant/csrc/gemv_cuda_backup.cu` or includes it, so its code "
            "never runs: quant/setup.py:7 `kivi_gemv` compiles csrc/pybind.cpp, csrc/gemv_cuda.cu") in message


def test_a_listed_file_stays_an_error(tmp_path):
    kivi(tmp_path, '["csrc/pybind.cpp", "csrc/gemv_cuda.cu", "csrc/gemv_cuda_backup.cu"]')
    assert gc201(tmp_path) == {"gemv_cuda.cu": "error", "gemv_cuda_backup.cu": "error"}


def test_a_file_a_built_file_includes_stays_an_error(tmp_path):
    kivi(tmp_path)
    write(tmp_path, "quant/csrc/gemv_cuda.cu", '#include "gemv_cuda_backup.cu"\n' + KERNEL.format(name="gemv_fwd2"))
    assert gc201(tmp_path)["gemv_cuda_backup.cu"] == "error"


def test_a_header_only_an_unbuilt_file_includes_is_a_warning(tmp_path):
    kivi(tmp_path)
    write(tmp_path, "quant/csrc/old/gemv_old.cuh", KERNEL.format(name="gemv_forward"))
    write(tmp_path, "quant/csrc/gemv_cuda_backup.cu", '#include "old/gemv_old.cuh"\n')
    assert gc201(tmp_path)["gemv_old.cuh"] == "warning"
    write(tmp_path, "quant/csrc/gemv_cuda.cu", '#include "old/gemv_old.cuh"\n')  # now a built file includes it
    assert gc201(tmp_path)["gemv_old.cuh"] == "error"


def test_a_header_nothing_includes_is_left_alone(tmp_path):
    kivi(tmp_path)
    write(tmp_path, "quant/csrc/public.cuh", KERNEL.format(name="gemv_forward"))  # another project may compile it
    assert gc201(tmp_path)["public.cuh"] == "error"


def test_resolved_python_source_lists(tmp_path):
    """Names, os.path.join over __file__'s folder, glob, comprehensions: followed to the files."""
    kivi(tmp_path, "SRCS")
    setup = tmp_path / "quant" / "setup.py"
    text = setup.read_text()
    head = ("import os, glob\nHERE = os.path.dirname(os.path.abspath(__file__))\n"
            "SRCS = [os.path.join(HERE, 'csrc', f) for f in ['pybind.cpp', 'gemv_cuda.cu']]\n")
    setup.write_text(head + text)
    assert gc201(tmp_path)["gemv_cuda_backup.cu"] == "warning"
    setup.write_text(head.replace("SRCS = [", "SRCS = glob.glob('csrc/*.cu') + [") + text)  # the glob holds both
    assert gc201(tmp_path)["gemv_cuda_backup.cu"] == "error"


def test_a_runtime_load_lists_its_sources(tmp_path):
    kivi(tmp_path)
    (tmp_path / "quant" / "setup.py").unlink()
    write(tmp_path, "quant/gemv.py", "from pathlib import Path\nfrom torch.utils.cpp_extension import load\n"
          "_DIR = Path(__file__).parent / 'csrc'\n"
          "kivi_gemv = load(name='kivi_gemv', sources=[str(_DIR / 'pybind.cpp'), str(_DIR / 'gemv_cuda.cu')])\n"
          "\ndef run(out):\n    kivi_gemv.gemv_forward(out)\n")
    assert gc201(tmp_path) == {"gemv_cuda.cu": "error", "gemv_cuda_backup.cu": "warning"}


def test_unresolvable_source_lists_change_nothing(tmp_path):
    kivi(tmp_path, "get_sources()")  # a helper's return value
    assert gc201(tmp_path)["gemv_cuda_backup.cu"] == "error"
    kivi(tmp_path, "SRCS")
    setup = tmp_path / "quant" / "setup.py"
    setup.write_text('SRCS = ["csrc/pybind.cpp"]\nSRCS.append(pick())\n' + setup.read_text())  # built step by step
    assert gc201(tmp_path)["gemv_cuda_backup.cu"] == "error"
    kivi(tmp_path, '[f"csrc/{name}.cu" for name in KERNELS]')  # a name bound nowhere this reads
    assert gc201(tmp_path)["gemv_cuda_backup.cu"] == "error"
    kivi(tmp_path, '["csrc/pybind.cpp", "csrc/generated.cu"]')  # a listed file the tree lacks: made by the build
    assert gc201(tmp_path)["gemv_cuda_backup.cu"] == "error"


def test_no_build_named_changes_nothing(tmp_path):
    kivi(tmp_path)
    (tmp_path / "quant" / "setup.py").unlink()
    assert gc201(tmp_path) == {"gemv_cuda.cu": "error", "gemv_cuda_backup.cu": "error"}


def test_other_builds_and_other_names_change_nothing(tmp_path):
    kivi(tmp_path)
    write(tmp_path, "scripts/build_backup.sh", "nvcc -o gemv quant/csrc/*.cu\n")  # a compiler run by a script
    assert gc201(tmp_path)["gemv_cuda_backup.cu"] == "error"
    (tmp_path / "scripts" / "build_backup.sh").write_text("pip install -e quant\n")
    assert gc201(tmp_path)["gemv_cuda_backup.cu"] == "warning"
    write(tmp_path, "docs/Makefile", "html:\n\tsphinx-build -b html . _build\n")  # a Makefile that compiles nothing
    assert gc201(tmp_path)["gemv_cuda_backup.cu"] == "warning"
    write(tmp_path, "BUILD.bazel", 'cc_library(name = "x", srcs = glob(["**/*.cu"]))\n')  # not read: unknown
    assert gc201(tmp_path)["gemv_cuda_backup.cu"] == "error"
    (tmp_path / "BUILD.bazel").unlink()
    write(tmp_path, "quant/jit.py", 'SRC = "gemv_cuda_backup"  # compiled by name elsewhere\n')
    assert gc201(tmp_path)["gemv_cuda_backup.cu"] == "error"
    (tmp_path / "quant" / "jit.py").unlink()
    write(tmp_path, "quant/csrc/gemv_cuda_backup.cu", KERNEL.format(name="gemv_forward") + "int main() { return 0; }\n")
    # a program: some other build may compile it (the caller check says it is one)
    assert "no extension build" not in messages(tmp_path).get("gemv_cuda_backup.cu", "")


CMAKE = """\
cmake_minimum_required(VERSION 3.18)
project(kivi LANGUAGES CXX CUDA)
find_package(Torch REQUIRED)
set(SRCS csrc/pybind.cpp)
list(APPEND SRCS ${CMAKE_CURRENT_SOURCE_DIR}/csrc/gemv_cuda.cu)
if(WITH_EXTRA)
  set(SRCS ${SRCS} csrc/extra.cu)
endif()
pybind11_add_module(kivi_gemv ${SRCS})
"""


def test_cmake_targets_list_their_sources(tmp_path):
    kivi(tmp_path)
    (tmp_path / "quant" / "setup.py").unlink()
    write(tmp_path, "quant/csrc/extra.cu", KERNEL.format(name="gemv_forward"))
    write(tmp_path, "quant/CMakeLists.txt", CMAKE)
    assert gc201(tmp_path) == {"gemv_cuda.cu": "error", "extra.cu": "error", "gemv_cuda_backup.cu": "warning"}
    assert "quant/CMakeLists.txt:9 `kivi_gemv` compiles" in messages(tmp_path)["gemv_cuda_backup.cu"]
    write(tmp_path, "quant/CMakeLists.txt", CMAKE.replace("set(SRCS csrc/pybind.cpp)",
                                                          "file(GLOB SRCS csrc/*.cpp csrc/*.cu)"))
    assert gc201(tmp_path)["gemv_cuda_backup.cu"] == "error"  # the glob holds it


def test_unresolvable_cmake_changes_nothing(tmp_path):
    kivi(tmp_path)
    (tmp_path / "quant" / "setup.py").unlink()
    write(tmp_path, "quant/csrc/extra.cu", KERNEL.format(name="gemv_forward"))
    for text in (CMAKE.replace("${SRCS})", "${SRCS} ${GENERATED_SOURCES})"),  # a variable set nowhere here
                 CMAKE.replace("${SRCS})", "${SRCS} $<$<CONFIG:Debug>:csrc/gemv_cuda_backup.cu>)"),
                 "function(add_kernels)\n  add_library(k ${ARGN})\nendfunction()\n" + CMAKE):
        write(tmp_path, "quant/CMakeLists.txt", text)
        assert gc201(tmp_path)["gemv_cuda_backup.cu"] == "error"
    write(tmp_path, "quant/CMakeLists.txt", CMAKE)
    kivi(tmp_path)  # setup.py back: two build systems
    assert gc201(tmp_path)["gemv_cuda_backup.cu"] == "error"


def test_verdicts_are_cached_and_follow_the_build_scripts(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAPHCHECK_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "src"
    kivi(src)
    assert gc201(src, cache=True)["gemv_cuda_backup.cu"] == "warning"
    assert (tmp_path / "cache" / "cpp-builds-v1.json").exists()
    assert gc201(src, cache=True)["gemv_cuda_backup.cu"] == "warning"
    setup = src / "quant" / "setup.py"
    setup.write_text(setup.read_text().replace('"csrc/gemv_cuda.cu"]', '"csrc/gemv_cuda.cu", "csrc/gemv_cuda_backup.cu"]'))
    assert gc201(src, cache=True)["gemv_cuda_backup.cu"] == "error"


def test_inline_code_builds_and_macro_includes(tmp_path):
    kivi(tmp_path)
    write(tmp_path, "quant/inline.py", "from torch.utils.cpp_extension import load_inline\n"
          "ext = load_inline(name='inl', cpp_sources='int f() { return 0; }', cuda_sources=[])\n")
    assert gc201(tmp_path)["gemv_cuda_backup.cu"] == "warning"  # literal inline code compiles no file
    write(tmp_path, "quant/inline.py", "from torch.utils.cpp_extension import load_inline\n"
          "ext = load_inline(name='inl', cpp_sources=open(PATH).read())\n")
    assert gc201(tmp_path)["gemv_cuda_backup.cu"] == "error"  # code read from some file
    (tmp_path / "quant" / "inline.py").unlink()
    write(tmp_path, "quant/csrc/pybind.cpp", "#include KERNEL_FILE\n" + BIND)  # an include through a macro
    assert gc201(tmp_path)["gemv_cuda_backup.cu"] == "error"


def test_a_cache_folder_inside_the_tree_is_not_read(tmp_path, monkeypatch):
    """The cache's own record names the file: a second run must not take that for a use."""
    monkeypatch.setenv("GRAPHCHECK_CACHE_DIR", str(tmp_path / "cache"))
    kivi(tmp_path)
    assert gc201(tmp_path, cache=True)["gemv_cuda_backup.cu"] == "warning"
    assert gc201(tmp_path, cache=True)["gemv_cuda_backup.cu"] == "warning"
    assert gc201(tmp_path, cache=False)["gemv_cuda_backup.cu"] == "warning"
