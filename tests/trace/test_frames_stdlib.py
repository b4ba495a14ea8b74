"""Which files count as the standard library for user-line attribution (trace.frames)."""

from __future__ import annotations

import os
import sys
import sysconfig

from graphcheck.trace import frames


def test_standard_library_modules_are_library_code():
    assert not frames.is_user_file(os.__file__)
    assert not frames.is_user_file(sysconfig.__file__)


def test_a_package_in_the_environments_site_packages_is_user_code():
    # in a venv, sysconfig's platstdlib is <venv>/lib/pythonX.Y, which holds site-packages: an engine
    # installed there (vllm, sglang, ...) is the user's code, not the standard library
    purelib = sysconfig.get_paths()["purelib"]
    assert frames.is_user_file(os.path.join(purelib, "someengine", "layers", "attention.py"))
    assert not frames._in_stdlib(os.path.abspath(os.path.join(purelib, "someengine", "x.py")))


def test_site_packages_of_the_base_interpreter_is_not_standard_library():
    base = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_exec_prefix,
                                     "installed_base": sys.base_prefix,
                                     "installed_platbase": sys.base_exec_prefix})["stdlib"]
    assert frames._in_stdlib(os.path.join(os.path.abspath(base), "json", "decoder.py"))
    for packages in ("site-packages", "dist-packages"):
        assert not frames._in_stdlib(os.path.join(os.path.abspath(base), packages, "engine", "step.py"))


def test_named_libraries_stay_library_code():
    import torch

    assert not frames.is_user_file(torch.__file__)
