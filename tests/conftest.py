"""Shared test setup: tests marked ``gpu`` are skipped cleanly where no CUDA device exists.

A GPU run must not go green without having run: with ``GRAPHCHECK_REQUIRE_GPU=1`` in
the environment (or ``--require-gpu`` on the command line) a ``gpu`` test that would
be skipped, at collection or from inside the test, fails instead.
"""

from __future__ import annotations

import os

import pytest

REQUIRE_GPU_ENV = "GRAPHCHECK_REQUIRE_GPU"


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


# Without CUDA the kernels run under Triton's interpreter. The variable must be set before any test
# module imports triton: a @triton.jit (Triton's own standard library included) decorated without
# it stays a compiled-mode kernel, and which module is imported first depends on xdist's split.
if not _cuda_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")


def pytest_addoption(parser):
    parser.addoption(
        "--require-gpu", action="store_true", default=False,
        help=f"fail (not skip) tests marked gpu when they cannot run; same as {REQUIRE_GPU_ENV}=1",
    )


def require_gpu(config) -> bool:
    flag = os.environ.get(REQUIRE_GPU_ENV, "").strip().lower()
    return bool(config.getoption("--require-gpu")) or flag not in ("", "0", "false", "no")


def pytest_collection_modifyitems(config, items):
    if _cuda_available():
        return
    skip = pytest.mark.skip(reason="no CUDA device: GPU test skipped")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    # every skip of a gpu test (no device, a missing binding, a skip inside the test) counts
    if (report.skipped and not hasattr(report, "wasxfail") and "gpu" in item.keywords
            and require_gpu(item.config)):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"GPU test skipped under {REQUIRE_GPU_ENV}/--require-gpu: {reason}"
