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


def test_ci_script_runs_the_readme_test_command_verbatim():
    command = _readme_command("Run the tests (fresh machine)")
    assert "pytest" in command
    script = (ROOT / ".ci" / "run").read_text().splitlines()
    assert command in script, f"{command!r} is not a line of .ci/run"
    # it is the script's last command, so the script's status is the tests' status
    assert [line for line in script if line.strip() and not line.startswith("#")][-1] == command


def test_readme_main_job_is_the_kernel_audit():
    assert _readme_command("Run the main job (fresh machine)").endswith("graphcheck audit graphcheck.kernels examples")
