"""Shared test setup: tests marked ``gpu`` are skipped cleanly where no CUDA device exists."""

from __future__ import annotations

import pytest


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    if _cuda_available():
        return
    skip = pytest.mark.skip(reason="no CUDA device: GPU test skipped")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
