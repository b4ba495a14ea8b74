"""Rerun the reliability report's list (reports/reliability-2026-11-30.md) end to end and count what is
still wrong: tracebacks, hangs, wrong exit codes, silent wrong results.

    python tests/reliability/rerun_report.py [--json OUT]

Each scenario runs the installed ``graphcheck`` in a fresh temporary folder, with a timeout. A scenario
prints ``ok`` or the category of what went wrong, and the owner of the fix. Not a pytest module (it
takes a few minutes); the per-item tests in this folder are the CI check.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PY = sys.executable
HAZ = "import triton\n@triton.jit\ndef k(x): pass\ndef f(x):\n    k[(1,)](x.item())\n"
A_PY = ('import graphcheck\nfrom graphcheck.inputs import rand_floats\ndef f(x):\n    return x / x.max().item()\n'
        'def mk(seed, device):\n    return {"x": rand_floats(seed, 8, device=device)}\n'
        'GRAPHCHECK_CASES = [graphcheck.Case("f", f, mk)]\n')


def case_module(name: str, body: str) -> str:
    return ("import graphcheck\nfrom graphcheck.inputs import rand_floats\n" + body +
            '\ndef mk(seed, device):\n    return {"x": rand_floats(seed, 8, device=device)}\n'
            f'GRAPHCHECK_CASES = [graphcheck.Case("{name}", {name}, mk)]\n')


class Result(Exception):
    pass


def run(args, cwd, timeout=120, env=None, stdin=None, shell=False, **kw):
    e = {k: v for k, v in os.environ.items() if k not in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY")}
    e.update(env or {})
    cmd = args if shell else [PY, "-m", "graphcheck", *args]
    try:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, timeout=timeout, env=e, shell=shell, **kw)
    except subprocess.TimeoutExpired:
        raise Result("hang") from None
    out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    if "Traceback (most recent call last)" in err or "Traceback (most recent call last)" in out:
        raise Result("traceback")
    return p.returncode, out, err


def expect(cond, category):
    if not cond:
        raise Result(category)


def git(cwd, *a):
    subprocess.run(["git", *a], cwd=cwd, check=True, capture_output=True)


def repo(d):
    git(d, "init", "-q", "-b", "main")
    git(d, "config", "user.email", "r@x")
    git(d, "config", "user.name", "r")
    (d / "pyproject.toml").write_text("[tool.graphcheck]\n")


def commit(d, m="c"):
    git(d, "add", "-A")
    git(d, "commit", "-qm", m)


SCEN = []


def scenario(ident, owner):
    def deco(fn):
        SCEN.append((ident, owner, fn))
        return fn
    return deco


@scenario("H1 os._exit(0) at import (audit)", "dynamic")
def _h1(d):
    (d / "a.py").write_text(A_PY)
    (d / "b.py").write_text("# graphcheck_cases\nimport os\nos._exit(0)\n")
    rc, out, _ = run(["audit", "--gpu", "off", "--output", "r.txt", "a.py", "b.py"], d, timeout=240)
    expect(rc == 1, "wrong exit code")
    expect((d / "r.txt").exists() and "GC101" in (d / "r.txt").read_text(), "silent wrong result")


@scenario("H1 os._exit(0) at import (ci)", "dynamic")
def _h1ci(d):
    repo(d)
    (d / "x.py").write_text("x = 1\n")
    commit(d, "base")
    (d / "ops.py").write_text(HAZ)
    (d / "helper.py").write_text('"""see graphcheck_cases"""\nimport os\nos._exit(0)\n')
    commit(d)
    rc, out, _ = run(["ci", "--base", "HEAD~1", "--gpu", "off", "--sarif", "out.sarif"], d, timeout=240)
    expect(rc == 1, "wrong exit code")
    expect((d / "out.sarif").exists(), "silent wrong result")


@scenario("H2 sys.exit in a case", "dynamic")
def _h2(d):
    (d / "a.py").write_text(A_PY)
    (d / "z.py").write_text(case_module("g", "import sys\ndef g(x):\n    sys.exit(3)\n"))
    rc, out, _ = run(["audit", "--gpu", "off", "a.py", "z.py"], d, timeout=240)
    expect(rc == 1, "wrong exit code")
    expect("GC101" in out and "GC004" in out, "silent wrong result")


@scenario("H3 committed cache", "gate")
def _h3(d):
    repo(d)
    (d / "ops.py").write_text("x = 1\n")
    commit(d, "base")
    git(d, "checkout", "-qb", "pr")
    (d / "ops.py").write_text(HAZ)
    plant = {"GRAPHCHECK_CACHE_DIR": str(d / ".graphcheck_cache")}
    run(["lint", "ops.py"], d, env=plant)
    p = d / ".graphcheck_cache" / "lint-v1.json"
    data = json.loads(p.read_text())
    for v in data["entries"].values():
        v[4] = []
    p.write_text(json.dumps(data))
    git(d, "add", "-f", "ops.py", ".graphcheck_cache/lint-v1.json")
    git(d, "commit", "-qm", "op")
    for env in ({}, plant):
        rc, out, _ = run(["ci", "--base", "main", "--no-audit"], d, env=env)
        expect(rc == 1 and "GC101" in out, "silent wrong result")


@scenario("M1 '++ ' line in a diff", "gate")
def _m1(d):
    repo(d)
    (d / "ops.py").write_text("import triton\n\n\n@triton.jit\ndef k(x):\n    pass\n\n\ndef f(x):\n    k[(1,)](x)\n")
    commit(d, "base")
    (d / "ops.py").write_text('import triton\n\nNOTES = """\n++ b/this line\n"""\n\n\n@triton.jit\ndef k(x):\n'
                              '    pass\n\n\ndef f(x):\n    n = x.item()\n    k[(n,)](x)\n')
    commit(d)
    rc, out, _ = run(["ci", "--base", "HEAD~1", "--no-audit"], d)
    expect(rc == 1 and "GC101" in out, "silent wrong result")


@scenario("M2 select hides tool codes", "gate")
def _m2(d):
    (d / "broken.py").write_text(HAZ + '    s = "unterminated\n')
    rc, out, _ = run(["lint", "--no-cache", "--select", "GC1", "broken.py"], d)
    expect(rc == 1 and "GC001" in out, "silent wrong result")


@scenario("M3 corrupt cache entry", "gate")
def _m3(d):
    env = {"XDG_CACHE_HOME": str(d / "xdg")}
    (d / "a.py").write_text(HAZ)
    run(["lint", "a.py"], d, env=env)
    p = next((d / "xdg").rglob("lint-v1.json"))
    data = json.loads(p.read_text())
    for v in data["entries"].values():
        v[1], v[4] = 1, [{"bogus": 1}]
    p.write_text(json.dumps(data))
    for _ in range(2):
        rc, out, _ = run(["lint", "a.py"], d, env=env)
        expect(rc == 1 and "2 findings" in out, "silent wrong result")


@scenario("M4 NaN in JSON/SARIF", "gate")
def _m4(d):
    (d / "n.py").write_text(case_module("flaky", "_c = [0]\ndef flaky(x):\n    _c[0] += 1\n"
                                        "    return x * (float('nan') if _c[0] % 2 else 1.0)\n"))
    for fmt in ("sarif", "json"):
        rc, out, _ = run(["audit", "--gpu", "off", "--format", fmt, "n.py"], d, timeout=240)
        try:
            json.loads(out, parse_constant=lambda c: 1 / 0)
        except (ZeroDivisionError, ValueError):
            raise Result("silent wrong result") from None


@scenario("M5 kernel block-table bounds", "kernels")
def _m5(d):
    test = Path(__file__).with_name("test_kernel_bounds.py")
    p = subprocess.run([PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test)], capture_output=True,
                       timeout=600, cwd=d)
    expect(p.returncode == 0, "silent wrong result")


@scenario("M6 looping case (trace timeout)", "dynamic")
def _m6(d):
    (d / "loops.py").write_text(case_module("forever", "def forever(x):\n    while True:\n        pass\n"))
    rc, out, _ = run(["audit", "--gpu", "off", "--timeout", "5", "loops.py"], d, timeout=90)
    expect(rc == 1 and "GC007" in out, "wrong exit code")


@scenario("M6 segfaulting case", "dynamic")
def _m6b(d):
    (d / "a.py").write_text(A_PY)
    (d / "seg.py").write_text(case_module("seg", "import ctypes\ndef seg(x):\n    ctypes.string_at(0)\n"))
    rc, out, _ = run(["audit", "--gpu", "off", "a.py", "seg.py"], d, timeout=240)
    expect(rc == 1 and "GC101" in out, "wrong exit code")


@scenario("M7 FIFO named *.py", "gate")
def _m7(d):
    (d / "d").mkdir()
    os.mkfifo(d / "d" / "k.py")
    (d / "d" / "ok.py").write_text("x = 1\n")
    rc, _, _ = run(["lint", "--no-cache", "d"], d, timeout=20)
    expect(rc == 0, "wrong exit code")
    rc, out, _ = run(["lint", "--no-cache", "d/k.py"], d, timeout=20)
    expect(rc == 1 and "GC002" in out, "silent wrong result")
    rc, out, err = run(["audit", "--gpu", "off", "d"], d, timeout=60)
    rc, out, err = run(["audit", "--gpu", "off", "d/k.py"], d, timeout=60)
    expect("no such file" not in err and "GC002" in out, "silent wrong result")


@scenario("L1 lone-CR file", "gate")
def _l1(d):
    (d / "cr.py").write_bytes(HAZ.replace("\n", "\r").encode())
    rc, out, _ = run(["lint", "--no-cache", "cr.py"], d)
    expect(rc == 1 and "lines: 5" in out, "silent wrong result")


@scenario("L2 malformed ignore markers", "gate")
def _l2(d):
    lines = ["import triton", "@triton.jit", "def k(x): pass", "def f(x):"]
    lines += [f"    k[(1,)](x.item())  # graphcheck: {m}" for m in
              ("ignore(GC999)", "ignore: GC110", "ignore[", "ignore[]", "ignore[G]", "ignore[GC999]")]
    (d / "ign.py").write_text("\n".join(lines) + "\n")
    (d / "ign.cu").write_text("void f(float* x) {\n  k<<<1, 1>>>(x);  // graphcheck: ignore(GC999)\n}\n")
    rc, out, _ = run(["lint", "--no-cache", "ign.py", "ign.cu"], d)
    expect(rc == 1 and out.count("GC101 [error]") == 6 and "GC201" in out and out.count("GC009") >= 7,
           "silent wrong result")


@scenario("L3 unreadable subdirectory", "gate")
def _l3(d):
    if os.geteuid() == 0 and not shutil.which("setpriv"):
        raise Result("skipped")
    os.chmod(d, 0o777)
    (d / "locked").mkdir()
    (d / "locked" / "h.py").write_text(HAZ)
    (d / "cfg.toml").write_text("")
    os.chmod(d / "locked", 0)
    pre = "setpriv --reuid=65534 --regid=65534 --clear-groups " if os.geteuid() == 0 else ""
    try:
        for target in (".", "locked", "locked/h.py"):
            rc, out, _ = run(f"{pre}{PY} -m graphcheck lint --no-cache --config cfg.toml {target}", d, shell=True)
            expect(rc == 1 and "GC002" in out, "silent wrong result")
    finally:
        os.chmod(d / "locked", 0o755)


@scenario("L4 host sync in a thread", "dynamic")
def _l4(d):
    (d / "t.py").write_text(case_module("th", "import threading\ndef th(x):\n    out = []\n"
                                        "    t = threading.Thread(target=lambda: out.append(x.max().item()))\n"
                                        "    t.start(); t.join()\n    return x / out[0]\n"))
    rc, out, _ = run(["audit", "--gpu", "off", "--no-lint", "t.py"], d, timeout=240)
    expect(rc == 1 and "GC101" in out, "silent wrong result")


@scenario("L5 case contract (shapes vary by seed)", "dynamic")
def _l5(d):
    (d / "s.py").write_text("import graphcheck, torch\nfrom graphcheck.inputs import rand_floats\n"
                            "def f(x):\n    return x * 2\n"
                            "def mk(seed, device):\n    return {'x': rand_floats(seed, 8 + seed, device=device)}\n"
                            "GRAPHCHECK_CASES = [graphcheck.Case('shapes_vary', f, mk)]\n")
    rc, out, _ = run(["audit", "--gpu", "off", "--no-lint", "s.py"], d, timeout=240)
    expect(rc == 1 and ("GC004" in out or "GC005" in out), "silent wrong result")


@scenario("L6 size+mtime documented; ci re-hashes", "gate")
def _l6(d):
    repo(d)
    clean = HAZ.replace("x.item()", "x.size()")
    (d / "ops.py").write_text(clean)
    commit(d, "base")
    env = {"XDG_CACHE_HOME": str(d / "xdg")}
    (d / "ops.py").write_text(clean + "# pad\n")
    commit(d)
    run(["ci", "--base", "HEAD~1", "--no-audit"], d, env=env)
    st = (d / "ops.py").stat()
    (d / "ops.py").write_text(HAZ + "# pad\n")
    os.utime(d / "ops.py", ns=(st.st_atime_ns, st.st_mtime_ns))
    rc, out, _ = run(["ci", "--base", "HEAD~1", "--no-audit"], d, env=env)
    expect(rc == 1, "silent wrong result")
    doc = Path(__file__).resolve().parents[2] / "docs" / "guide" / "lint.md"
    expect("modification time" in doc.read_text(), "silent wrong result")


@scenario("L7/T6 rich markup in case names on a tty", "gate")
def _t6(d):
    if not shutil.which("script"):
        raise Result("skipped")
    (d / "ops.py").write_text(A_PY.replace('Case("f"', 'Case("bad[/]name"') + "GRAPHCHECK_CASES.append("
                              "graphcheck.Case('merge[fp16]', f, mk))\n")
    p = subprocess.run(["script", "-qec", f"{PY} -m graphcheck audit --gpu off ops.py", "/dev/null"], cwd=d,
                       capture_output=True, timeout=240)
    out = p.stdout.decode("utf-8", "replace")
    expect("Traceback" not in out, "traceback")
    expect(p.returncode == 1 and "merge[fp16]" in out and "bad[/]name" in out, "silent wrong result")


@scenario("T1 unreadable path (non-root)", "gate")
def _t1(d):
    _l3(d)


@scenario("T2 huge max-file-size", "gate")
def _t2(d):
    (d / "pyproject.toml").write_text("[tool.graphcheck]\nmax-file-size = 99999999999999999999\n")
    (d / "a.py").write_text(HAZ)
    expect(run(["lint", "a.py"], d)[0] == 2, "wrong exit code")


@scenario("T3 non-UTF-8 config", "gate")
def _t3(d):
    (d / "pyproject.toml").write_bytes(b'[tool.graphcheck]\nselect = ["GC1"] # \xe9\n')
    (d / "a.py").write_text(HAZ)
    expect(run(["lint", "a.py"], d)[0] == 2, "wrong exit code")


@scenario("T4 stdout is /dev/full", "gate")
def _t4(d):
    (d / "a.py").write_text(HAZ)
    rc, _, _ = run(f"{PY} -m graphcheck lint a.py > /dev/full", d, shell=True)
    expect(rc == 2, "wrong exit code")


@scenario("T5 stdout closed", "gate")
def _t5(d):
    (d / "a.py").write_text(HAZ)
    rc, _, _ = run(f"{PY} -m graphcheck lint a.py >&-", d, shell=True)
    expect(rc == 2, "wrong exit code")


@scenario("T7 deleted working directory", "gate")
def _t7(d):
    (d / "a.py").write_text(HAZ)
    (d / "g").mkdir()
    rc, _, _ = run(f"cd g && rmdir ../g && {PY} -m graphcheck lint {d / 'a.py'}", d, shell=True)
    expect(rc == 2, "wrong exit code")


@scenario("HG3 quadratic _EX_STREAM", "cxx")
def _hg3(d):
    (d / "a.cu").write_text("void f(){ cudaLaunchKernelEx(&cfg, k); " + "x->stream = " * 30000 + "}\n")
    t = time.perf_counter()
    run(["lint", "--no-cache", "a.cu"], d, timeout=60)
    expect(time.perf_counter() - t < 20, "hang")


@scenario("HG4 many '<<<' without '>>>'", "cxx")
def _hg4(d):
    (d / "a.cu").write_text("void f(){ " + "<" * 200000 + " }\n")
    t = time.perf_counter()
    run(["lint", "--no-cache", "a.cu"], d, timeout=60)
    expect(time.perf_counter() - t < 20, "hang")


@scenario("exit: ci with a path outside the repository", "gate")
def _ci_out(d):
    repo(d)
    (d / "a.py").write_text("x = 1\n")
    commit(d)
    expect(run(["ci", "--base", "main", "/usr"], d)[0] == 2, "wrong exit code")


@scenario("exit: KeyboardInterrupt at import", "dynamic")
def _kbi(d):
    (d / "a.py").write_text(A_PY)
    (d / "k.py").write_text("# graphcheck_cases\nraise KeyboardInterrupt\n")
    rc, out, _ = run(["audit", "--gpu", "off", "a.py", "k.py"], d, timeout=240)
    expect(rc == 1 and "GC101" in out, "wrong exit code")


@scenario("S5 escape sequences in source", "gate")
def _s5(d):
    (d / "a.py").write_text(HAZ.replace("x.item())", 'x.item()); s = "\x1b]0;TITLE\x07\x1b[2K\x1b[1A"'))
    for fmt in ("text", "github"):
        rc, out, _ = run(["lint", "--no-cache", "--format", fmt, "a.py"], d)
        expect("\x1b" not in out and "\x07" not in out, "silent wrong result")


@scenario("S6 symlink leaving the project", "gate")
def _s6(d):
    (d / "secret2.txt").write_text("import triton\nTOKEN = 'S3CRET'; k[(1,)](x.item())\n")
    r = d / "r"
    r.mkdir()
    repo(r)
    commit(r, "base")
    (r / "x.py").symlink_to(d / "secret2.txt")
    commit(r)
    rc, out, err = run(["ci", "--base", "HEAD~1", "--no-audit", "--all-lines"], r)
    expect("S3CRET" not in out + err, "silent wrong result")


@scenario("cosmetic: lint/audit with an empty path", "gate")
def _c1(d):
    expect(run(["lint", ""], d)[0] == 2 and run(["audit", ""], d)[0] == 2, "wrong exit code")


@scenario("cosmetic: -o onto the source file", "gate")
def _c2(d):
    (d / "a.py").write_text(HAZ)
    rc, _, _ = run(["lint", "-o", "a.py", "a.py"], d)
    expect(rc == 2 and (d / "a.py").read_text() == HAZ, "silent wrong result")


@scenario("cosmetic: duplicate config keys", "gate")
def _c3(d):
    (d / "pyproject.toml").write_text('[tool.graphcheck]\nfail-on = "error"\nfail_on = "never"\n')
    (d / "a.py").write_text(HAZ)
    expect(run(["lint", "a.py"], d)[0] == 2, "wrong exit code")


@scenario("cosmetic: --timeout -1 / nan", "gate")
def _c4(d):
    (d / "a.py").write_text(HAZ)
    for v in ("-1", "nan"):
        expect(run(["audit", "--gpu", "off", "--timeout", v, "a.py"], d)[0] == 2, "wrong exit code")


@scenario("cosmetic: cache written into the cwd", "gate")
def _c5(d):
    (d / "a.py").write_text(HAZ)
    run(["lint", "a.py"], d, env={"XDG_CACHE_HOME": str(d.parent / (d.name + "-xdg"))})
    expect(not (d / ".graphcheck_cache").exists(), "silent wrong result")


def main() -> int:
    rows = []
    args = sys.argv[1:]
    if "--json" in args:
        i = args.index("--json")
        args = args[:i] + args[i + 2:]
    only = [a for a in args if not a.startswith("--")]
    for ident, owner, fn in SCEN:
        if only and not any(o in ident for o in only):
            continue
        d = Path(tempfile.mkdtemp(prefix="rerun-"))
        t = time.perf_counter()
        try:
            fn(d)
            verdict = "ok"
        except Result as r:
            verdict = str(r)
        except Exception as exc:  # the harness itself
            verdict = f"harness error: {type(exc).__name__}: {exc}"
        finally:
            shutil.rmtree(d, ignore_errors=True)
        rows.append({"item": ident, "owner": owner, "verdict": verdict, "seconds": round(time.perf_counter() - t, 1)})
        print(f"{verdict:22} {owner:8} {rows[-1]['seconds']:6.1f}s  {ident}", flush=True)
    counts = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    print(json.dumps(counts))
    if "--json" in sys.argv:
        Path(sys.argv[sys.argv.index("--json") + 1]).write_text(json.dumps(rows, indent=1))
    return 0 if all(r["verdict"] in ("ok", "skipped") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
