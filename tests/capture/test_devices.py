"""One GPU per pytest-xdist worker (CPU only: pure functions of the environment)."""

import pytest

from graphcheck.capture.devices import child_visible_devices, pick_device, xdist_worker_index


def test_worker_index():
    assert xdist_worker_index({"PYTEST_XDIST_WORKER": "gw3"}) == 3
    assert xdist_worker_index({"PYTEST_XDIST_WORKER": "master"}) is None
    assert xdist_worker_index({}) is None


def test_pick_device_by_worker_modulo_count():
    assert pick_device(4, env={"PYTEST_XDIST_WORKER": "gw5"}) == 1
    assert pick_device(8, env={"PYTEST_XDIST_WORKER": "gw5"}) == 5
    assert pick_device(2, env={}) == 0
    assert pick_device(2, requested=1, env={"PYTEST_XDIST_WORKER": "gw0"}) == 1
    with pytest.raises(ValueError):
        pick_device(2, requested=2)
    with pytest.raises(RuntimeError):
        pick_device(0)


def test_child_visible_devices_respects_parent_list():
    assert child_visible_devices(1, {}) == "1"
    assert child_visible_devices(1, {"CUDA_VISIBLE_DEVICES": "4,6"}) == "6"
    assert child_visible_devices(0, {"CUDA_VISIBLE_DEVICES": "GPU-abc, GPU-def"}) == "GPU-abc"
