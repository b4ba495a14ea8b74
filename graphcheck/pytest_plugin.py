"""graphcheck's pytest plugin (loaded through the ``pytest11`` entry point).

- ``pytest --graphcheck`` adds one test item per declared case and layer:
  ``path/to/ops.py::<case>[trace]`` and ``...::<case>[capture]``. Cases come
  from the modules named by ``--graphcheck-paths`` / the ``graphcheck_paths``
  ini option (module names, files or directories), by default from every
  Python file under the rootdir that declares ``GRAPHCHECK_CASES`` or
  ``graphcheck_cases`` (test files and ``tests/`` folders, conftest files,
  virtual environments and build folders aside).
- ``--graphcheck-gpu=auto|off|required``: without CUDA, ``auto`` skips the
  capture items with a reason, ``required`` fails them, ``off`` skips them.
- The ``graph_safety`` fixture: ``graph_safety.check(...)`` and
  ``graph_safety.assert_safe(...)`` with the session's GPU mode (``graphcheck``,
  its old name, still works with a DeprecationWarning).
- With ``--graphcheck``, the report header names the GPU mode and whether CUDA
  is there.

Importing this module imports nothing heavy (no torch, no triton): pytest loads
it in every session of every project where graphcheck is installed.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

from graphcheck.layers import GPU_CHOICES, cuda_available

if TYPE_CHECKING:
    from _pytest._code.code import TerminalRepr

LAYERS = ("trace", "capture")
_GPU_CHOICES = GPU_CHOICES
#: test folders hold test helpers (cases that hang or crash on purpose), not the project's kernels
_TEST_DIRS = frozenset({"tests", "test", "testing"})


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("graphcheck", "CUDA-graph safety checks (graphcheck)")
    group.addoption("--graphcheck", action="store_true", default=False,
                    help="collect the declared graphcheck cases (GRAPHCHECK_CASES / graphcheck_cases()) as test "
                         "items, one per case and layer")
    group.addoption("--graphcheck-paths", action="append", default=None, metavar="TARGETS",
                    help="module names, files or directories holding declared cases (comma-separated, repeatable; "
                         "default: the graphcheck_paths ini option, else every file under the rootdir that "
                         "declares cases)")
    group.addoption("--graphcheck-gpu", choices=_GPU_CHOICES, default=None,
                    help="capture layer: auto (run where CUDA exists, else skip with a reason; default), off (skip), "
                         "required (fail without CUDA)")
    group.addoption("--graphcheck-examples", type=int, default=None, metavar="N",
                    help="input seeds per case whose launch plans are compared (default 4)")
    group.addoption("--graphcheck-timeout", type=float, default=None, metavar="SECONDS",
                    help="per-case, per-layer limit; a case past it is GC007 (default 120)")
    group.addoption("--graphcheck-record", default=None, metavar="FILE",
                    help="record every CUDA-graph capture the tests make (functions and lines run under capture, "
                         "launches, graph nodes, failures) into the capture map FILE; see `graphcheck record`")
    parser.addini("graphcheck_paths", type="linelist", default=[],
                  help="graphcheck: module names, files or directories holding declared cases")
    parser.addini("graphcheck_gpu", default="auto", help="graphcheck: default for --graphcheck-gpu")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "graphcheck: a graphcheck case item (added by pytest --graphcheck)")
    if config.getoption("graphcheck_record", None):
        from graphcheck.record.pytest_recording import start

        start(config)


def _gpu_mode(config: pytest.Config) -> str:
    mode = config.getoption("graphcheck_gpu") or config.getini("graphcheck_gpu") or "auto"
    if mode not in _GPU_CHOICES:
        raise pytest.UsageError(f"graphcheck_gpu must be one of {', '.join(_GPU_CHOICES)}, got {mode!r}")
    return mode


def _examples(config: pytest.Config) -> int:
    n = config.getoption("graphcheck_examples")
    return 4 if n is None else max(2, n)


def _timeout(config: pytest.Config) -> float:
    t = config.getoption("graphcheck_timeout")
    return 120.0 if t is None or not t > 0 else float(t)


_POOL_KEY = "_graphcheck_pool"


def _pool(config: pytest.Config) -> Any:
    """This pytest process's worker (one; pytest-xdist gives one per xdist worker, each on its own GPU)."""
    pool = getattr(config, _POOL_KEY, None)
    if pool is None:
        from graphcheck.workers.pool import WorkerPool
        from graphcheck.workers.run import session_slot

        pool = WorkerPool([session_slot("off" if _gpu_mode(config) == "off" else "auto")])
        setattr(config, _POOL_KEY, pool)
    return pool


def pytest_unconfigure(config: pytest.Config) -> None:
    pool = getattr(config, _POOL_KEY, None)
    if pool is not None:
        pool.close(graceful=False)
        setattr(config, _POOL_KEY, None)
    if config.getoption("graphcheck_record", None):
        from graphcheck.record.pytest_recording import finish

        finish(config)


_cuda: bool | None = None


def _cuda_available() -> bool:
    global _cuda
    if _cuda is None:
        _cuda = cuda_available()
    return _cuda


# --- collection -------------------------------------------------------------------------


def _is_test_file(path: Path, config: pytest.Config) -> bool:
    if path.name == "conftest.py":
        return True
    return any(fnmatch.fnmatch(path.name, pattern) for pattern in config.getini("python_files"))


def _default_sources(config: pytest.Config) -> list[str]:
    """Files under the rootdir that textually declare cases (nothing imported to find them)."""
    from graphcheck.targets import case_files, case_source_for_file

    def skip(path: str) -> bool:
        p = Path(path)
        return p.name in _TEST_DIRS if os.path.isdir(path) else _is_test_file(p, config)

    return [case_source_for_file(p) for p in case_files(Path(config.rootpath), skip=skip)]


def _configured_sources(config: pytest.Config) -> list[str]:
    from graphcheck.targets import TargetError
    from graphcheck.targets import resolve as resolve_target

    given: list[str] = []
    for value in config.getoption("graphcheck_paths") or config.getini("graphcheck_paths"):
        given += [v.strip() for v in value.split(",") if v.strip()]
    if not given:
        return _default_sources(config)
    sources: list[str] = []
    for target in given:
        candidate = target if os.path.isabs(target) or not os.path.exists(Path(config.rootpath) / target) \
            else str(Path(config.rootpath) / target)
        try:
            sources += resolve_target(candidate).case_sources
        except TargetError as exc:
            raise pytest.UsageError(f"--graphcheck-paths: {exc}") from None
    return list(dict.fromkeys(sources))


def _source_path(source: str) -> Path:
    if source.endswith(".py") or os.path.sep in source:
        return Path(source).resolve()
    import importlib.util

    spec = importlib.util.find_spec(source)
    return Path(spec.origin).resolve() if spec and spec.origin else Path(source)


class GraphcheckFile(pytest.File):
    """The declared cases of one kernel module."""

    source: str = ""

    def collect(self) -> Iterator[pytest.Item]:
        from graphcheck.extras import MissingExtra, require_torch

        try:
            require_torch("pytest --graphcheck")
        except MissingExtra as exc:
            raise pytest.UsageError(str(exc)) from None
        # imported in a worker process: a module that exits, crashes or hangs at import is one failed item
        from graphcheck.workers.run import discover_source

        gpu = "off" if _gpu_mode(self.config) == "off" else "auto"
        cases, findings = discover_source(_pool(self.config), self.source, gpu=gpu, timeout=_timeout(self.config))
        if findings:
            yield DeclarationItem.from_parent(self, name="[declaration]", findings=findings)
        for entry in cases:
            for layer in LAYERS:
                yield CaseItem.from_parent(self, name=f"{entry['name']}[{layer}]", case=DeclaredCase(entry),
                                           layer=layer)


class DeclaredCase:
    """A case found in a worker: its name, its id (``source::name``) and its function's location."""

    def __init__(self, entry: dict) -> None:
        self.entry = entry
        self.name: str = entry["name"]
        self.source: str = entry["id"].rsplit("::", 1)[0] if "::" in entry["id"] else entry["id"]


class GraphcheckFailure(Exception):
    """A graphcheck item failed; the message is the rendered report."""


class DeclarationItem(pytest.Item):
    """A module whose cases could not be loaded (import error, bad declaration)."""

    def __init__(self, *, findings: list, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.findings = findings

    def runtest(self) -> None:
        from graphcheck.report import render

        raise GraphcheckFailure("graphcheck: the cases of this module could not be loaded\n\n"
                                + render(self.findings, "text", color=False))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str | TerminalRepr:
        if isinstance(excinfo.value, GraphcheckFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"graphcheck declarations in {cast(Any, self.parent).source}"


class CaseItem(pytest.Item):
    """One layer of one declared case."""

    def __init__(self, *, case: Any, layer: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.layer = layer
        self.add_marker("graphcheck")

    def runtest(self) -> None:
        from graphcheck.assertions import format_report
        from graphcheck.findings import Severity, at_or_above

        if isinstance(self.case, DeclaredCase):
            report = run_declared_layer(self.config, self.case, self.layer)
        else:
            report = run_layer(self.case, self.layer, _gpu_mode(self.config), _examples(self.config))
        if at_or_above(report.findings, Severity.WARNING):
            raise GraphcheckFailure(format_report(report))
        result = report.layers.get(self.layer)
        if result is not None and not result.ran:
            pytest.skip(result.reason or f"{self.layer} layer skipped")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str | TerminalRepr:
        if isinstance(excinfo.value, GraphcheckFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"graphcheck {self.case.name} [{self.layer}]"


def run_layer(case: Any, layer: str, gpu: str, examples: int) -> Any:
    """A :class:`graphcheck.Report` holding ``layer`` only, from :func:`graphcheck.check`."""
    from graphcheck.api import check

    if layer == "capture" and gpu == "required" and not _cuda_available():
        pytest.fail("--graphcheck-gpu=required, but no CUDA device is available", pytrace=False)
    return check(case, gpu="off" if gpu == "off" else "auto", examples=examples, layers=(layer,))  # required: above


def run_declared_layer(config: pytest.Config, case: DeclaredCase, layer: str) -> Any:
    """``layer`` of a declared case, run in this session's worker (GC006/GC007 if it crashes or hangs)."""
    from graphcheck.workers.run import check_case

    gpu = _gpu_mode(config)
    if layer == "capture" and gpu == "required" and not _cuda_available():
        pytest.fail("--graphcheck-gpu=required, but no CUDA device is available", pytrace=False)
    return check_case(_pool(config), case.source, case.entry, (layer,), gpu="off" if gpu == "off" else "auto",
                      examples=_examples(config), timeout=_timeout(config))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    # tryfirst: the added items must exist before -k / -m selection and xdist see the list
    if not config.getoption("graphcheck"):
        return
    seen = {item.nodeid for item in items}
    for source in _configured_sources(config):
        path = _source_path(source)
        where: dict[str, Any] = {}
        if not path.is_relative_to(Path(config.rootpath)):
            # pytest would name a file outside the rootdir by its bare file name, so two modules called
            # ops.py in other packages would share node ids (and one would be dropped): use the source
            where["nodeid"] = source
        node = GraphcheckFile.from_parent(session, path=path, **where)
        node.source = source
        added = [item for item in node.collect() if item.nodeid not in seen]
        seen.update(item.nodeid for item in added)
        items.extend(added)
        # so the terminal's "collected N items" counts them
        config.hook.pytest_collectreport(report=pytest.CollectReport(node.nodeid, "passed", None, list(added)))


# --- the fixture -----------------------------------------------------------------------


class GraphcheckFixture:
    """What the ``graph_safety`` fixture gives a test: the checks, with the session's GPU mode."""

    def __init__(self, gpu: str, examples: int) -> None:
        self.gpu = gpu
        self.examples = examples

    def check(self, case_or_fn: Any, make_inputs: Any = None, **options: Any) -> Any:
        """Run :func:`graphcheck.check` on a Case (or a function and its ``make_inputs``); returns the Report."""
        from graphcheck.api import check
        from graphcheck.assertions import as_case
        from graphcheck.audit import check_gpu_mode

        gpu = options.pop("gpu", self.gpu)
        examples = options.pop("examples", self.examples)
        return check(as_case(case_or_fn, make_inputs, **options), gpu=check_gpu_mode(gpu), examples=examples)

    def assert_safe(self, case_or_fn: Any, make_inputs: Any = None, **options: Any) -> Any:
        """:func:`graphcheck.assert_graph_safe` with the session's GPU mode."""
        __tracebackhide__ = True
        from graphcheck.assertions import assert_graph_safe

        options.setdefault("gpu", self.gpu)
        options.setdefault("examples", self.examples)
        return assert_graph_safe(case_or_fn, make_inputs, **options)


@pytest.fixture
def graph_safety(request: pytest.FixtureRequest) -> GraphcheckFixture:
    """Check kernel wrappers from a test: ``graph_safety.assert_safe(case)`` or
    ``graph_safety.check(fn, make_inputs)``, with the session's ``--graphcheck-gpu`` and examples."""
    return GraphcheckFixture(_gpu_mode(request.config), _examples(request.config))


@pytest.fixture
def graphcheck(request: pytest.FixtureRequest) -> GraphcheckFixture:
    """Deprecated name of :func:`graph_safety` (it shadowed ``import graphcheck`` inside a test)."""
    import warnings

    warnings.warn("the `graphcheck` fixture is renamed `graph_safety` (the old name shadows the graphcheck "
                  "package inside a test)", DeprecationWarning, stacklevel=2)
    return GraphcheckFixture(_gpu_mode(request.config), _examples(request.config))


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    """``graphcheck 0.1.0: gpu=auto, examples=4, CUDA: no`` when ``--graphcheck`` collects cases."""
    if not config.getoption("graphcheck"):
        return None
    from graphcheck import __version__

    mode = _gpu_mode(config)
    cuda = "not probed" if mode == "off" else ("yes" if _cuda_available() else "no")
    paths = config.getoption("graphcheck_paths") or config.getini("graphcheck_paths")
    where = ", ".join(paths) if paths else "files under the rootdir that declare cases"
    return [f"graphcheck {__version__}: gpu={mode}, examples={_examples(config)}, CUDA: {cuda}; cases from {where}"]
