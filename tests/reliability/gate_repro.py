"""Shared helpers for the reliability repro tests: run the CLI in a subprocess, build git repos."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HAZARD = "import triton\n@triton.jit\ndef k(x): pass\ndef f(x):\n    k[(1,)](x.item())\n"


def env(**extra: str) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if k not in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "NO_COLOR")}
    out.update(extra)
    return out


def graphcheck(*args: str, cwd: str | Path, timeout: float = 60, input: bytes | None = None,
               extra_env: dict[str, str] | None = None, **kwargs) -> subprocess.CompletedProcess:
    """``graphcheck ARGS`` in a child process; raises TimeoutExpired on a hang (a test failure)."""
    return subprocess.run([sys.executable, "-m", "graphcheck", *args], cwd=cwd, capture_output=True,
                          timeout=timeout, input=input, env=env(**(extra_env or {})), **kwargs)


def git(cwd: str | Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def init_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "ci@example.com")
    git(path, "config", "user.name", "ci")
    git(path, "config", "commit.gpgsign", "false")
    return path


def commit_all(path: Path, message: str = "change") -> None:
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", message)
