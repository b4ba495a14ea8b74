"""Launcher roots that nothing in the linted tree refers to (graphcheck.lint.deadcode): their findings, and
those reached only through them, are warnings that say why; any reference the tree could reach the function by
(an import, a re-export, ``__all__``, a test, a callback, a registration, ``getattr`` on a literal) keeps them
errors."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from lint_trees import make, tree_findings

from graphcheck.lint.python_rules import lint_python

OPS = """\
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def kern(x_ptr, n):
        pass

    def fused_shift(x):
        n = int(x.sum().item())
        kern[(1,)](x, n)
        return _finish(x)

    def _finish(x):
        return x.max().item()

    def used(x):
        kern[(1,)](x, 4)
"""
def plus_text(text: str) -> str:
    return textwrap.indent(text, "    ")


def plus(text: str) -> str:
    """OPS and more module-level code (OPS is written indented, as ``make`` dedents it)."""
    return OPS + plus_text(text)


USER = "from pkg.ops import used\n\ndef run(x):\n    return used(x)\n"
WHY = "no reference to `fused_shift` in the linted tree: dead code, or API that only outside code calls"


def gc101(root: Path) -> dict[str, tuple[str, str, dict]]:
    """function -> (severity, message, evidence) of its GC101."""
    return {f.function: (f.severity.value, f.message, f.evidence) for f in tree_findings(root) if f.code == "GC101"}


def tree(tmp_path: Path, **extra: str) -> Path:
    files = {"pkg/__init__.py": "", "pkg/ops.py": OPS, "pkg/user.py": USER}
    files.update({k.replace("__", "/").replace("_py", ".py"): v for k, v in extra.items()})
    return make(tmp_path, files)


def test_an_unreferenced_launcher_is_a_warning_that_says_why(tmp_path):
    got = gc101(tree(tmp_path))
    severity, message, evidence = got["fused_shift"]
    assert severity == "warning" and WHY in message
    assert evidence["reach"] == "unreferenced"
    # what only the dead launcher reaches goes with it
    assert got["_finish"][0] == "warning" and WHY in got["_finish"][1]


def test_a_helper_a_live_launcher_also_reaches_stays_an_error(tmp_path):
    root = tree(tmp_path)
    (root / "pkg" / "ops.py").write_text((root / "pkg" / "ops.py").read_text().replace(
        "kern[(1,)](x, 4)", "kern[(1,)](x, 4)\n    _finish(x)"))
    got = gc101(root)
    assert got["fused_shift"][0] == "warning" and got["_finish"][0] == "error"


QUIET = {
    "called from another module": {"pkg/layer.py": "from pkg.ops import fused_shift as shift\n\n"
                                                   "def f(x):\n    return shift(x)\n"},
    "relative import": {"pkg/layer.py": "from .ops import fused_shift\n"},
    "module attribute": {"pkg/layer.py": "from pkg import ops\n\ndef f(x):\n    return ops.fused_shift(x)\n"},
    "import as": {"pkg/layer.py": "import pkg.ops as o\n\ndef f(x):\n    return o.fused_shift(x)\n"},
    "package re-export": {"pkg/__init__.py": "from .ops import fused_shift\n"},
    "star import": {"pkg/__init__.py": "from .ops import *\n"},
    "listed in __all__": {"pkg/ops.py": plus('\n__all__ = ["fused_shift", "used"]\n')},
    "a test uses it": {"tests/test_x.py": "from pkg.ops import fused_shift\n\ndef test_it():\n    fused_shift(1)\n"},
    "a benchmark names it": {"benchmarks/bench.py": "import pkg.ops\n\npkg.ops.fused_shift(1)\n"},
    "callback in its module": {"pkg/ops.py": plus("\nHANDLERS = {'shift': fused_shift}\n")},
    "functools.partial elsewhere": {"pkg/layer.py": "import functools\nfrom pkg.ops import fused_shift\n\n"
                                                    "g = functools.partial(fused_shift)\n"},
    "decorated registration": {"pkg/ops.py": OPS.replace("    def fused_shift", "    @register('shift')\n"
                                                         "    def fused_shift").replace(
        "import torch", "import torch\n    from pkg.registry import register")},
    "getattr on a literal": {"pkg/layer.py": "import pkg.ops\n\nf = getattr(pkg.ops, 'fused_shift')\n"},
    "dotted string in a config list": {"pkg/config.py": "KERNELS = ['pkg.ops.fused_shift']\n"},
    "dynamic getattr on the module": {"pkg/layer.py": "from pkg import ops\n\n"
                                                      "def pick(name):\n    return getattr(ops, name)\n"},
    "module looks its names up": {"pkg/ops.py": plus("\ndef by_name(n):\n    return globals()[n]\n")},
    "module __getattr__": {"pkg/ops.py": plus("\ndef __getattr__(n):\n    return None\n")},
    "an unparsable file names it": {"pkg/broken.py": "from pkg.ops import fused_shift\ndef f(:\n"},
    "decorator of a local registry": {"pkg/ops.py": plus("\nclass R:\n    def add(self, n):\n        return id\n")
                                      .replace("    def fused_shift", "    @REG.add('shift')\n    def fused_shift")
                                      + "    REG = R()\n"},
}


@pytest.mark.parametrize("case", sorted(QUIET))
def test_a_referenced_launcher_stays_an_error(tmp_path, case):
    root = make(tmp_path, {"pkg/__init__.py": "", "pkg/ops.py": OPS, "pkg/user.py": USER, **QUIET[case]})
    assert gc101(root)["fused_shift"][0] == "error", case


def test_a_same_named_copy_elsewhere_is_not_a_reference(tmp_path):
    # LightX2V: other modules define and call their own `fused_shift`; one imports another name from ops
    other = OPS.replace("def used", "def other_used") + plus_text("\ndef run(x):\n    return fused_shift(x)\n")
    root = make(tmp_path, {"pkg/__init__.py": "", "pkg/ops.py": OPS, "pkg/user.py": USER, "pkg/other.py": other,
                           "pkg/third.py": "from pkg.other import fused_shift\n\nfused_shift(1)\n"})
    got = {(Path(f.path).name, f.function): f.severity.value for f in tree_findings(root) if f.code == "GC101"}
    assert got[("ops.py", "fused_shift")] == "warning"
    assert got[("other.py", "fused_shift")] == "error"


def test_relative_imports_in_folders_without_init_resolve_by_path(tmp_path):
    # LightX2V: models/networks/<model>/infer/ has no __init__.py; each holds a triton_ops.py with its own
    # copy and a transformer_infer.py that does `from .triton_ops import fuse...`; one module whose copy
    # nobody imports (its infer module imports another name from it)
    files = {}
    for model in ("hunyuan", "qwen", "wan"):
        files[f"nets/{model}/infer/triton_ops.py"] = OPS
        used = "used" if model == "wan" else "fused_shift"
        files[f"nets/{model}/infer/transformer_infer.py"] = f"from .triton_ops import {used}\n"
    files["nets/ltx/infer/triton_ops.py"] = "from nets.qwen.infer.triton_ops import used\n"
    got = {(Path(f.path).parent.parent.name, f.function): f.severity.value
           for f in tree_findings(make(tmp_path, files)) if f.code == "GC101"}
    assert got[("hunyuan", "fused_shift")] == "error" and got[("qwen", "fused_shift")] == "error"
    assert got[("wan", "fused_shift")] == "warning"


def test_a_module_nothing_in_the_tree_imports_is_api_and_keeps_its_errors(tmp_path):
    # a kernel library's leaf module (or a wrapper package linted alone): its launchers are what others call
    root = make(tmp_path, {"lib/__init__.py": "", "lib/ops.py": OPS, "lib/util.py": "def helper():\n    return 1\n"})
    assert gc101(root)["fused_shift"][0] == "error"
    assert gc101(root)["_finish"][0] == "error"


def test_a_module_only_tests_import_is_api_and_keeps_its_errors(tmp_path):
    # the tree's own code does not use the module; its tests exercise another of its names
    root = make(tmp_path, {"lib/__init__.py": "", "lib/ops.py": OPS,
                           "tests/test_ops.py": "from lib.ops import used\n\ndef test_used():\n    used(1)\n"})
    assert gc101(root)["fused_shift"][0] == "error"


def test_a_tree_with_a_syntax_error_and_a_non_utf8_file_still_demotes(tmp_path):
    root = tree(tmp_path)
    (root / "pkg" / "broken.py").write_text("import triton\ndef f(:\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_latin.py").write_bytes(b"# \xff\xfe not utf-8\nx = 1\n")
    found = tree_findings(root)
    assert [f.code for f in found if f.path.endswith("broken.py")] == ["GC001"]
    assert {f.function: f.severity.value for f in found if f.code == "GC101"}["fused_shift"] == "warning"


def test_a_file_linted_alone_keeps_its_errors(tmp_path):
    src = "import torch\nimport triton\n\n@triton.jit\ndef kern(x_ptr, n):\n    pass\n\n" \
          "def fused_shift(x):\n    n = int(x.sum().item())\n    kern[(1,)](x, n)\n"
    assert [f.severity.value for f in lint_python(src, "ops.py") if f.code == "GC101"] == ["error"]
    make(tmp_path, {"ops.py": src})
    from graphcheck.config import Config
    from graphcheck.lint.engine import lint_paths
    alone = lint_paths([str(tmp_path / "ops.py")], Config(root=tmp_path), use_cache=False, jobs=1).findings
    assert [f.severity.value for f in alone if f.code == "GC101"] == ["error"]


def test_a_cached_run_reads_no_file_and_a_new_reference_is_seen(tmp_path, monkeypatch):
    import builtins

    from graphcheck.config import Config
    from graphcheck.lint.engine import lint_paths

    monkeypatch.setenv("GRAPHCHECK_CACHE_DIR", str(tmp_path / "cache"))
    root = tree(tmp_path / "t")
    config = Config(root=root)

    def severity() -> str:
        found = lint_paths([str(root)], config, jobs=1).findings
        return next(f.severity.value for f in found if f.code == "GC101" and f.function == "fused_shift")

    assert severity() == "warning"
    real_open = builtins.open

    def guarded_open(file, *args, **kwargs):
        assert not str(file).endswith(".py"), f"a cached run read {file}"
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", guarded_open)
    assert severity() == "warning"
    monkeypatch.setattr(builtins, "open", real_open)
    (root / "tests").mkdir()
    (root / "tests" / "test_ops.py").write_text("from pkg.ops import fused_shift\n")
    assert severity() == "error"


# --- application trees: a launcher only tests refer to ---------------------------------------------------------

CAPTURE = """\
    import torch

    def capture_step(model, x):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            model(x)
        return g
"""
TESTED = {"tests/test_ops.py": "from pkg.ops import fused_shift\n\ndef test_it():\n    fused_shift(1)\n"}
TESTS_WHY = "only tests, benchmarks or examples refer to `fused_shift` (tests/test_ops.py) in this application tree"
SITE = "(`with torch.cuda.graph(...)` at pkg/runner.py:5 in `capture_step`)"


def app(tmp_path: Path, capture: str | None = CAPTURE, **files: str) -> Path:
    """An application: ``pkg`` imports ``pkg.ops`` for ``used``, captures its own graphs in ``pkg/runner.py``
    (unless ``capture`` is None) and its tests call ``fused_shift``."""
    tree = {"pkg/__init__.py": "", "pkg/ops.py": OPS, "pkg/user.py": USER, **TESTED}
    if capture is not None:
        tree["pkg/runner.py"] = capture
    return make(tmp_path, {**tree, **files})


def test_in_an_application_a_launcher_only_tests_refer_to_is_a_warning_that_names_the_capture(tmp_path):
    got = gc101(app(tmp_path))
    severity, message, evidence = got["fused_shift"]
    assert severity == "warning" and TESTS_WHY in message and SITE in message
    assert message.endswith("code its captured step does not reach)")
    assert evidence["reach"] == "tests-only"
    assert got["_finish"][0] == "warning" and TESTS_WHY in got["_finish"][1]


def test_a_tree_without_a_capture_site_is_a_library_whose_tests_count(tmp_path):
    assert gc101(app(tmp_path, capture=None))["fused_shift"][0] == "error"


LIBRARY_CAPTURES = {
    # a capture that times a kernel (FlashInfer's autotuner, quack's bench_utils, aiter's *_tune.py)
    "a profiling function": CAPTURE.replace("capture_step", "_profile_kernel"),
    "an autotuner method": ("import torch\n\nclass AutoTuner:\n    def run(self, model, x):\n"
                            "        g = torch.cuda.CUDAGraph()\n        with torch.cuda.graph(g):\n"
                            "            model(x)\n"),
    "a benchmark helper module": {"pkg/bench_utils.py": CAPTURE},
    "a test function": CAPTURE.replace("capture_step", "test_graph"),
    # excluded files do not make the tree an application
    "a test file": {"tests/test_graph.py": CAPTURE},
    "a non-CUDA backend": {"pkg/npu/graph.py": CAPTURE},
}


@pytest.mark.parametrize("case", sorted(LIBRARY_CAPTURES))
def test_a_capture_that_is_not_the_applications_step_keeps_tests_as_references(tmp_path, case):
    given = LIBRARY_CAPTURES[case]
    root = app(tmp_path, capture=given) if isinstance(given, str) else app(tmp_path, capture=None, **given)
    assert gc101(root)["fused_shift"][0] == "error", case


APP_QUIET = {
    "a linted file calls it": {"pkg/layer.py": "from pkg.ops import fused_shift\n\n"
                                               "def f(x):\n    return fused_shift(x)\n"},
    "exported from the package": {"pkg/__init__.py": "from .ops import fused_shift\n"},
    "listed in __all__": {"pkg/ops.py": plus('\n__all__ = ["fused_shift", "used"]\n')},
    "a non-CUDA backend refers to it": {"pkg/npu/impl.py": "from pkg.ops import fused_shift\n"},
    "a test imports a module only tests import": {"pkg/user.py": "def run(x):\n    return x\n"},
}


@pytest.mark.parametrize("case", sorted(APP_QUIET))
def test_in_an_application_a_launcher_linted_code_refers_to_stays_an_error(tmp_path, case):
    assert gc101(app(tmp_path, **APP_QUIET[case]))["fused_shift"][0] == "error", case


def test_a_mention_in_a_comment_or_docstring_of_its_module_is_no_reference(tmp_path):
    # vLLM: `unpack_seq_triton`'s docstring names `pack_seq_triton`, which only tests call
    ops = plus('\ndef other(x):\n    """the inverse of fused_shift"""\n    return x  # see fused_shift\n')
    assert gc101(app(tmp_path, **{"pkg/ops.py": ops}))["fused_shift"][0] == "warning"
    assert gc101(tree(tmp_path / "lib", **{"pkg__ops_py": ops}))["fused_shift"][0] == "warning"


def test_the_cached_verdict_follows_the_capture_site(tmp_path, monkeypatch):
    import dataclasses

    from graphcheck.config import DEFAULT_HARNESS, Config
    from graphcheck.lint.engine import lint_paths

    monkeypatch.setenv("GRAPHCHECK_CACHE_DIR", str(tmp_path / "cache"))
    root = app(tmp_path / "t")
    config = Config(root=root)

    def severity(config: Config) -> str:
        found = lint_paths([str(root)], config, jobs=1).findings
        return next(f.severity.value for f in found if f.code == "GC101" and f.function == "fused_shift")

    assert severity(config) == "warning"
    assert severity(config) == "warning"  # from the cache
    # the capture function named harness: no file changed, but the tree has no capture site of its own now
    assert severity(dataclasses.replace(config, harness_functions=(*DEFAULT_HARNESS, "capture_step"))) == "error"
    assert severity(config) == "warning"
