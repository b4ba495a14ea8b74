""".ci/run runs the README's test command verbatim."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_command(heading: str) -> str:
    readme = (ROOT / "README.md").read_text()
    match = re.search(rf"^## {re.escape(heading)}\n.*?```bash\n(.*?)\n```", readme, flags=re.S | re.M)
    assert match, f"README has no bash block under '## {heading}'"
    (command,) = match.group(1).strip().splitlines()
    return command


def _script_commands() -> list[str]:
    script = (ROOT / ".ci" / "run").read_text().splitlines()
    return [line for line in script if line.strip() and not line.startswith("#")]


def test_ci_script_runs_the_readme_test_command_verbatim():
    command = _readme_command("Run the tests (fresh machine)")
    assert "pytest" in command
    commands = _script_commands()
    assert command in commands, f"{command!r} is not a line of .ci/run"
    assert "set -euo pipefail" in commands
    # a failure anywhere in the command's && list ends the script with its status (set -e alone
    # stops only on the list's last command), and only the style and type checks come after it
    after = commands[commands.index(command) + 1:]
    assert after[:2] == ['status=$?  # set -e does not stop on a failed install inside an && list; this does',
                         '[ "$status" -eq 0 ] || exit "$status"']
    assert after[2:] == [f"pip install -q ruff=={_pin('ruff')} mypy=={_pin('mypy')}", "ruff check .", "mypy"]


def _pin(tool: str) -> str:
    match = re.search(rf"\b{tool}==([0-9][0-9.]*)", (ROOT / ".ci" / "run").read_text())
    assert match, f".ci/run does not pin {tool}"
    return match.group(1)


def test_the_checks_ci_runs_are_configured_and_documented():
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert "[tool.ruff]" in pyproject and "[tool.mypy]" in pyproject
    guide = (ROOT / "docs" / "guide" / "install.md").read_text()
    for line in (f"pip install ruff=={_pin('ruff')} mypy=={_pin('mypy')}", "ruff check .", "mypy"):
        assert line in guide, f"the install guide does not show `{line}`"


def test_readme_main_job_is_the_kernel_audit():
    assert _readme_command("Run the main job (fresh machine)").endswith("graphcheck audit graphcheck.kernels examples")
