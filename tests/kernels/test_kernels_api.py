"""The public names of graphcheck.kernels: each one is the function, not a module."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

PUBLIC = ["merge_attn_states", "merge_attn_states_reference", "fp8_paged_mqa_logits",
          "fp8_paged_mqa_logits_reference", "fp8_mqa_logits", "fp8_mqa_logits_reference"]


@pytest.mark.parametrize("name", PUBLIC)
def test_public_name_is_a_function(name):
    import graphcheck.kernels as kernels

    obj = getattr(kernels, name)
    assert inspect.isfunction(obj), f"graphcheck.kernels.{name} is {type(obj).__name__}"
    assert obj.__name__ == name


def test_from_import_gives_the_merge_function():
    from graphcheck.kernels import merge_attn_states
    from graphcheck.kernels.merge_attn import merge_attn_states as defined

    assert merge_attn_states is defined
    assert list(inspect.signature(merge_attn_states).parameters)[:5] == [
        "output", "prefix_output", "prefix_lse", "suffix_output", "suffix_lse"]


def test_old_module_path_is_gone():
    with pytest.raises(ModuleNotFoundError):
        __import__("graphcheck.kernels.merge_attn_states")


def test_importing_the_package_imports_neither_torch_nor_triton():
    code = ("import sys, graphcheck.kernels as k; "
            "print(sorted(m for m in ('torch', 'triton') if m in sys.modules)); print(sorted(k.__all__))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded, names = out.splitlines()
    assert loaded == "[]"
    assert "merge_attn_states" in names
