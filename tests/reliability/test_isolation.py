"""Case modules and cases that exit, interrupt, crash or hang cost one finding, never the run.

Each test is a reproduction from the reliability report (H1, H2, M6, the
segfaulting case, KeyboardInterrupt at import): before case isolation these
ended ``audit``/``ci``/``pytest --graphcheck`` with no report and a wrong exit
code, or hung. They run on the CPU, through the real command line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import graphcheck
from graphcheck.inputs import rand_floats

GOOD = textwrap.dedent('''\
    import graphcheck
    from graphcheck.inputs import rand_floats
    def f(x):
        return x / x.max().item()
    def mk(seed, device):
        return {"x": rand_floats(seed, 8, device=device)}
    GRAPHCHECK_CASES = [graphcheck.Case("f", f, mk)]
''')
GOOD_LINE = 4


def _case_module(body: str, name: str) -> str:
    lines = ["import graphcheck", "from graphcheck.inputs import rand_floats", f"def {name}(x):"]
    lines += ["    " + line for line in body.splitlines()]
    lines += ["def mk(seed, device):", "    return {'x': rand_floats(seed, 4, device=device)}",
              f"GRAPHCHECK_CASES = [graphcheck.Case({name!r}, {name}, mk)]", ""]
    return "\n".join(lines)


def _graphcheck(*args: str, cwd: Path, timeout: float = 240, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = dict(os.environ, **(env or {}))
    return subprocess.run([sys.executable, "-m", "graphcheck", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=full_env)


def _findings(path: Path) -> list[tuple[str, str, int]]:
    data = json.loads(path.read_text())
    return sorted((f["code"], f["path"], f["line"]) for f in data["findings"])


@pytest.fixture
def proj(tmp_path):
    (tmp_path / "a.py").write_text(GOOD)
    return tmp_path


def test_os_exit_at_import_is_one_finding_and_the_report_is_written(proj):  # H1
    (proj / "b.py").write_text("# graphcheck_cases\nimport os\nos._exit(0)\n")
    run = _graphcheck("audit", "--gpu", "off", "--format", "json", "--output", "r.json", "a.py", "b.py", cwd=proj)
    assert run.returncode == 1, run.stderr
    found = _findings(proj / "r.json")
    assert ("GC101", "a.py", GOOD_LINE) in found  # the other module's cases still ran
    (import_error,) = [f for f in json.loads((proj / "r.json").read_text())["findings"] if f["path"] == "b.py"]
    assert import_error["code"] == "GC004" and "exited with status 0" in import_error["message"]


def test_os_exit_at_import_still_writes_sarif(proj):  # H1, the SARIF the CI upload step needs
    (proj / "b.py").write_text("# graphcheck_cases\nimport os\nos._exit(0)\n")
    run = _graphcheck("audit", "--gpu", "off", "--format", "sarif", "--output", "r.sarif", "a.py", "b.py", cwd=proj)
    assert run.returncode == 1, run.stderr
    results = json.loads((proj / "r.sarif").read_text())["runs"][0]["results"]
    assert {r["ruleId"] for r in results} >= {"GC004", "GC101"}


def test_os_exit_at_import_in_ci(proj):  # H1 through `graphcheck ci`
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=proj, check=True, capture_output=True,
                       env=dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
                                GIT_COMMITTER_EMAIL="t@t"))

    (proj / "a.py").unlink()
    (proj / "pyproject.toml").write_text("[tool.graphcheck]\n")
    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("commit", "-qm", "base")
    (proj / "a.py").write_text(GOOD)
    (proj / "helper.py").write_text('"""see graphcheck_cases"""\nimport os\nos._exit(0)\n')
    git("add", "-A")
    git("commit", "-qm", "change")
    run = _graphcheck("ci", "--base", "HEAD~1", "--gpu", "off", "--sarif", "out.sarif", cwd=proj)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "GC004" in run.stdout and (proj / "out.sarif").is_file()


def test_sys_exit_in_a_case_is_gc004_and_the_run_goes_on(proj):  # H2
    (proj / "z.py").write_text(_case_module("import sys\nsys.exit(3)", "g"))
    run = _graphcheck("audit", "--gpu", "off", "--format", "json", "--output", "r.json", "a.py", "z.py", cwd=proj)
    assert run.returncode == 1, run.stderr
    found = _findings(proj / "r.json")
    assert ("GC101", "a.py", GOOD_LINE) in found
    assert [code for code, path, _ in found if path == "z.py"] == ["GC004"]


def test_sys_exit_in_a_case_through_check_in_process():  # H2 for graphcheck.check()
    def g(x):
        sys.exit(0)

    case = graphcheck.Case("g", g, lambda seed, device: {"x": rand_floats(seed, 4, device=device)})
    report = graphcheck.check(case, gpu="off", examples=2)
    assert [f.code for f in report.findings] == ["GC004"] and "SystemExit" in report.findings[0].message


def test_keyboard_interrupt_at_import_is_gc004_not_exit_130(proj):
    (proj / "kb.py").write_text("# graphcheck_cases\nraise KeyboardInterrupt\n")
    run = _graphcheck("audit", "--gpu", "off", "--format", "json", "--output", "r.json", "a.py", "kb.py", cwd=proj)
    assert run.returncode == 1, run.stderr
    found = _findings(proj / "r.json")
    assert ("GC004", "kb.py", 2) in found and ("GC101", "a.py", GOOD_LINE) in found


def test_looping_case_times_out_as_gc007(proj):  # M6 / HG2
    (proj / "loops.py").write_text(_case_module("while True:\n    pass", "forever"))
    run = _graphcheck("audit", "--gpu", "off", "--timeout", "5", "--format", "json", "--output", "r.json",
                      "a.py", "loops.py", cwd=proj, timeout=180)
    assert run.returncode == 1, run.stderr
    found = _findings(proj / "r.json")
    assert ("GC101", "a.py", GOOD_LINE) in found
    assert [code for code, path, _ in found if path == "loops.py"] == ["GC007"]


def test_case_stuck_in_c_code_is_killed_as_gc007(proj):  # the worker itself is killed, not just interrupted
    (proj / "sleeps.py").write_text(_case_module("import time\ntime.sleep(3600)", "sleepy"))
    run = _graphcheck("audit", "--gpu", "off", "--timeout", "3", "--format", "json", "--output", "r.json",
                      "sleeps.py", "a.py", cwd=proj, timeout=180, env={"GRAPHCHECK_WORKERS": "1"})
    assert run.returncode == 1, run.stderr
    found = _findings(proj / "r.json")
    # one worker: the case after the killed one ran on its replacement
    assert ("GC101", "a.py", GOOD_LINE) in found
    assert [code for code, path, _ in found if path == "sleeps.py"] == ["GC007"]


def test_looping_case_times_out_in_check_in_process():  # M6 for graphcheck.check()
    def forever(x):
        while True:
            pass

    case = graphcheck.Case("forever", forever,
                           lambda seed, device: {"x": rand_floats(seed, 4, device=device)})
    report = graphcheck.check(case, gpu="off", examples=2, timeout=2)
    assert [f.code for f in report.findings] == ["GC007"]


def test_segfaulting_case_is_gc006_and_its_worker_is_replaced(proj):
    (proj / "seg.py").write_text(_case_module("import ctypes\nctypes.string_at(0)", "seg"))
    run = _graphcheck("audit", "--gpu", "off", "--format", "json", "--output", "r.json", "seg.py", "a.py", cwd=proj,
                      env={"GRAPHCHECK_WORKERS": "1"})
    assert run.returncode == 1, run.stderr
    data = json.loads((proj / "r.json").read_text())
    (crash,) = [f for f in data["findings"] if f["path"] == "seg.py"]
    assert crash["code"] == "GC006" and "SIGSEGV" in crash["message"] and crash["layer"] == "trace"
    assert ("GC101", "a.py", GOOD_LINE) in _findings(proj / "r.json")


def test_pytest_graphcheck_reports_a_module_that_exits_at_import(proj):  # H1 through the pytest plugin
    (proj / "b.py").write_text("# graphcheck_cases\nimport os\nos._exit(0)\n")
    run = subprocess.run([sys.executable, "-m", "pytest", "--graphcheck", "--graphcheck-gpu=off", "-p",
                          "no:cacheprovider", "-q", "-rf"], cwd=proj, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr
    # b.py's declaration item fails with the import's GC004; a.py's trace item fails with GC101
    assert "FAILED b.py::[declaration]" in run.stdout and "FAILED a.py::f[trace]" in run.stdout
    assert "exited with status 0" in run.stdout and "2 failed, 1 skipped" in run.stdout


# --- L4: host syncs made in worker threads -------------------------------------------------


def _check(fn, make_inputs, **case_options):
    return graphcheck.check(graphcheck.Case(fn.__name__, fn, make_inputs, **case_options), gpu="off", examples=2,
                            layers="trace")


def _x(seed, device):
    return {"x": rand_floats(seed, 8, device=device)}


def test_item_in_a_thread_is_seen():  # L4
    import threading

    def item_in_thread(x):
        seen = {}
        worker = threading.Thread(target=lambda: seen.setdefault("m", x.max().item()))
        worker.start()
        worker.join()
        return x / seen["m"]

    (f,) = _check(item_in_thread, _x).findings
    assert f.code == "GC101" and f.line == item_in_thread.__code__.co_firstlineno + 2


def test_tolist_in_a_thread_pool_is_seen():  # L4
    from concurrent.futures import ThreadPoolExecutor

    def tolist_in_pool(x):
        with ThreadPoolExecutor(2) as pool:
            top = pool.submit(lambda: max(x.tolist())).result()
        return x / top

    assert [f.code for f in _check(tolist_in_pool, _x).findings] == ["GC103"]


def test_a_thread_started_inside_records_nothing_after_the_case():  # the recorder it inherited is closed
    import threading

    go, done = threading.Event(), threading.Event()

    def background():
        go.wait(30)
        torch.ones(2).sum().item()
        done.set()

    def starts_thread(x):
        threading.Thread(target=background, daemon=True).start()
        return x * 2

    import torch

    report = _check(starts_thread, _x)
    go.set()
    assert done.wait(30) and report.findings == []


# --- L5: the case contract on the CPU ---------------------------------------------------------


def _doubled(x):
    return x * 2


@pytest.mark.parametrize("make_inputs, what", [
    (lambda seed, device: {"x": rand_floats(seed, 4 + seed, device=device)}, "shape [5]"),
    (lambda seed, device: {"x": rand_floats(seed, 4, dtype="float16" if seed else "float32", device=device)},
     "float16"),
    (lambda seed, device: {"x": rand_floats(seed, (4, 4), device=device).t() if seed
                           else rand_floats(seed, (4, 4), device=device)}, "strides [1, 4]"),
], ids=["shapes", "dtypes", "strides"])
def test_seeds_that_disagree_on_shape_dtype_or_strides_are_gc005(make_inputs, what):  # L5
    (f,) = _check(_doubled, make_inputs).findings
    assert f.code == "GC005" and what in f.message and "seed 1" in f.message


def test_an_output_that_is_not_a_tensor_is_gc005():  # L5
    def copy_into(x, y):
        y[:] = x.tolist()

    (f,) = _check(copy_into, lambda seed, device: {"x": rand_floats(seed, 4, device=device), "y": [0.0] * 4},
                  outputs=["y"]).findings
    assert f.code == "GC005" and "output 'y' must be a tensor" in f.message


def test_a_timeout_inside_an_interpreted_kernel_leaves_triton_usable():
    import triton
    import triton.language as tl

    @triton.jit
    def spin(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        acc = tl.zeros((BLOCK,), tl.float32)
        for _ in range(0, n):
            acc += tl.max(tl.load(x_ptr + offs), axis=0)
        tl.store(x_ptr + offs, acc)

    def slow(x):
        spin[(1,)](x, 5000, BLOCK=16)
        return x

    def quick(x):
        spin[(1,)](x, 2, BLOCK=16)
        return x

    mk = lambda seed, device: {"x": rand_floats(seed, 16, device=device)}  # noqa: E731
    timed_out = graphcheck.check(graphcheck.Case("slow", slow, mk), gpu="off", examples=2, timeout=1)
    assert [f.code for f in timed_out.findings] == ["GC007"]
    # the kernel was let finish, so triton.language is not left patched by the interpreter
    after = graphcheck.check(graphcheck.Case("quick", quick, mk), gpu="off", examples=2)
    assert after.findings == [] and after.layers["trace"] == "pass"
