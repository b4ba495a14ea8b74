"""Precision study of ``graphcheck lint`` on public engine trees: totals, a stratified sample, verdicts.

For each tree it runs ``graphcheck lint TREE --format json --no-cache --jobs 2`` (one tree at a
time) or reads a JSON report saved earlier, counts the findings, and draws a stratified sample of
error findings to judge by hand. Verdicts live in a TSV (repo, path, line, code, verdict, reason):
a row drawn again keeps its verdict, a new row is added as UNJUDGED. The markdown tables for
``docs/precision.md`` are rendered from the sample and the TSV.

The sample, per tree:

1. the tree's error findings, minus tool codes (GC0xx), one per (path, line, code);
2. a ``random.Random(20261201)`` made fresh for the tree shuffles each code's findings (codes in
   order of count, largest first, ties by code; findings pre-sorted by path and line);
3. round-robin over the codes, largest first: each turn takes the code's next finding whose file
   has fewer than 2 findings drawn (findings of full files are passed over), until every code is
   used up; this gives the tree's draw order;
4. the sample is the first 12 of the draw order (the per-tree cap).

Top-up rule (fixed before any verdict is seen): if the six trees together give fewer than 60,
the per-tree cap is raised by one for every tree, again and again, until the total reaches 60 or no
tree has findings left. Raising the cap only extends each tree's draw order, so every row drawn at
a lower cap stays in the sample.

C++ error findings (``.cu .cuh .cpp .cc .cxx .h .hpp .hh``) are few: all of them are listed and
judged in a separate table, and they also take part in the sample like any other finding.

    python benchmarks/precision_sample.py --json-dir /tmp/lint-json --save-json \\
        --verdicts docs/precision-verdicts.tsv --update-verdicts --markdown /tmp/precision-tables.md
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SEED = 20261201
PER_TREE_CAP = 12
PER_FILE_CAP = 2
MIN_SAMPLE = 60
VERDICTS = ("TRUE", "PLAUSIBLE", "FALSE")
UNJUDGED = "UNJUDGED"
CPP_SUFFIXES = frozenset({".cu", ".cuh", ".cpp", ".cc", ".cxx", ".h", ".hpp", ".hh"})
TSV_HEADER = ("repo", "path", "line", "code", "verdict", "reason")

# (name, folder under --trees-root, repo@commit label): the trees of the study.
DEFAULT_TREES = (
    ("vllm", "vllm", "jinhuang12/vllm@22f8d2869"),
    ("sglang", "sglang", "modal-projects/sglang@8905cbd42"),
    ("flashinfer", "flashinfer", "flashinfer-ai/flashinfer@fb28d7242"),
    ("Liger-Kernel", "Liger-Kernel", "linkedin/Liger-Kernel@ead96b61"),
    ("flash-attention", "flash-attention", "Dao-AILab/flash-attention@0251105a"),
    ("FlagGems", "FlagGems", "flagos-ai/FlagGems@ed2508bcb"),
)


@dataclass(frozen=True)
class Finding:
    """One error finding, its path relative to the tree."""

    repo: str
    path: str
    line: int
    code: str
    message: str = ""

    @property
    def key(self) -> tuple[str, str, int, str]:
        return (self.repo, self.path, self.line, self.code)

    @property
    def is_cpp(self) -> bool:
        return Path(self.path).suffix in CPP_SUFFIXES


@dataclass
class Tree:
    """A linted tree: its label, all findings (raw JSON) and the wall time of the run, if timed."""

    name: str
    label: str
    findings: list[dict[str, Any]] = field(default_factory=list)
    root: str = ""
    wall_s: float | None = None


@dataclass
class Verdict:
    verdict: str
    reason: str


# ---------------------------------------------------------------- lint runs and JSON

def run_lint(graphcheck: list[str], tree_path: str, jobs: int) -> tuple[list[dict[str, Any]], float]:
    """Lint one tree; return its findings and the wall time."""
    cmd = [*graphcheck, "lint", tree_path, "--format", "json", "--no-cache", "--jobs", str(jobs), "--exit-zero"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{shlex.join(cmd)} exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout), wall


def relative(path: str, root: str) -> str:
    """A finding's path relative to its tree (paths outside the tree are kept as they are)."""
    if root and os.path.isabs(path):
        rel = os.path.relpath(path, root)
        if not rel.startswith(".."):
            return rel.replace(os.sep, "/")
    return path.replace(os.sep, "/")


def error_findings(tree: Tree) -> list[Finding]:
    """The tree's sampleable errors: no tool codes (GC0xx), one per (path, line, code)."""
    seen: dict[tuple[str, str, int, str], Finding] = {}
    for f in tree.findings:
        if f.get("severity") != "error" or str(f.get("code", "")).startswith("GC0"):
            continue
        fnd = Finding(tree.name, relative(str(f["path"]), tree.root), int(f["line"]), str(f["code"]),
                      str(f.get("message", "")))
        seen.setdefault(fnd.key, fnd)
    return list(seen.values())


# ---------------------------------------------------------------- sampling

def draw_order(errors: list[Finding], seed: int = SEED, per_file: int = PER_FILE_CAP) -> list[Finding]:
    """The tree's full draw order (see the module docstring); a sample is a prefix of it."""
    rng = random.Random(seed)
    by_code: dict[str, list[Finding]] = collections.defaultdict(list)
    for f in errors:
        by_code[f.code].append(f)
    codes = sorted(by_code, key=lambda c: (-len(by_code[c]), c))
    pools: dict[str, collections.deque[Finding]] = {}
    for code in codes:
        shuffled = sorted(by_code[code], key=lambda f: (f.path, f.line))
        rng.shuffle(shuffled)
        pools[code] = collections.deque(shuffled)
    taken: collections.Counter[str] = collections.Counter()
    order: list[Finding] = []
    while any(pools.values()):
        for code in codes:
            queue = pools[code]
            while queue:
                f = queue.popleft()
                if taken[f.path] < per_file:
                    taken[f.path] += 1
                    order.append(f)
                    break
    return order


def choose_cap(orders: dict[str, list[Finding]], cap: int = PER_TREE_CAP, minimum: int = MIN_SAMPLE) -> int:
    """The per-tree cap: PER_TREE_CAP, raised one at a time while the sample is below the minimum."""
    while sum(min(cap, len(o)) for o in orders.values()) < minimum and any(len(o) > cap for o in orders.values()):
        cap += 1
    return cap


def draw_sample(trees: list[Tree], seed: int = SEED) -> tuple[list[Finding], int, dict[str, int]]:
    """The stratified sample over all trees, the cap used and each tree's sampleable error count."""
    orders = {t.name: draw_order(error_findings(t), seed) for t in trees}
    eligible = {t.name: len(error_findings(t)) for t in trees}
    cap = choose_cap(orders)
    sample = [f for t in trees for f in orders[t.name][:cap]]
    return sample, cap, eligible


# ---------------------------------------------------------------- verdicts TSV

def read_verdicts(path: Path) -> dict[tuple[str, str, int, str], Verdict]:
    """Verdicts by (repo, path, line, code); a missing file is an empty table."""
    table: dict[tuple[str, str, int, str], Verdict] = {}
    if not path.exists():
        return table
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip() or n == 1 and raw.split("\t")[0] == "repo":
            continue
        cols = raw.split("\t")
        if len(cols) != len(TSV_HEADER):
            raise SystemExit(f"{path}:{n}: expected {len(TSV_HEADER)} tab-separated columns, got {len(cols)}")
        repo, fpath, line, code, verdict, reason = cols
        if verdict not in (*VERDICTS, UNJUDGED):
            raise SystemExit(f"{path}:{n}: verdict {verdict!r} is not one of {', '.join((*VERDICTS, UNJUDGED))}")
        table[(repo, fpath, int(line), code)] = Verdict(verdict, reason)
    return table


def write_verdicts(path: Path, table: dict[tuple[str, str, int, str], Verdict], repo_order: list[str]) -> None:
    """Write the TSV sorted by repo (study order), path, line and code."""
    rank = {name: i for i, name in enumerate(repo_order)}
    rows = sorted(table.items(), key=lambda kv: (rank.get(kv[0][0], len(rank)), kv[0][0], kv[0][1], kv[0][2], kv[0][3]))
    lines = ["\t".join(TSV_HEADER)]
    for (repo, fpath, line, code), v in rows:
        reason = " ".join(v.reason.split())
        lines.append("\t".join((repo, fpath, str(line), code, v.verdict, reason)))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def merge_verdicts(table: dict[tuple[str, str, int, str], Verdict], rows: list[Finding]) -> int:
    """Add an UNJUDGED row for every finding not in the table; return how many were added."""
    added = 0
    for f in rows:
        if f.key not in table:
            table[f.key] = Verdict(UNJUDGED, "")
            added += 1
    return added


# ---------------------------------------------------------------- markdown

def _top(counter: collections.Counter[str], n: int) -> str:
    return ", ".join(f"{c} {k}" for c, k in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:n]) or "-"


def totals_table(trees: list[Tree]) -> str:
    """Per-tree totals: errors, warnings, info, top error and warning codes, C++ errors, wall time."""
    out = ["| repo | errors | warnings | info | top error codes | top warning codes | C++ errors | tool (GC0xx) "
           "| lint wall s |",
           "|---|---:|---:|---:|---|---|---:|---:|---:|"]
    for t in trees:
        sev: collections.Counter[str] = collections.Counter(str(f.get("severity")) for f in t.findings)
        err = collections.Counter(str(f["code"]) for f in t.findings if f.get("severity") == "error")
        warn = collections.Counter(str(f["code"]) for f in t.findings if f.get("severity") == "warning")
        cpp = sum(1 for f in t.findings if f.get("severity") == "error" and Path(str(f["path"])).suffix in CPP_SUFFIXES)
        tool = sum(1 for f in t.findings if str(f.get("code", "")).startswith("GC0"))
        wall = "-" if t.wall_s is None else f"{t.wall_s:.1f}"
        out.append(f"| {t.name} | {sev['error']} | {sev['warning']} | {sev['info']} | {_top(err, 5)} | "
                   f"{_top(warn, 3)} | {cpp} | {tool} | {wall} |")
    return "\n".join(out)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _shown(verdict: str) -> str:
    return f"**{verdict}**" if verdict == "TRUE" else verdict


def sample_table(sample: list[Finding], labels: dict[str, str], table: dict[tuple[str, str, int, str], Verdict]) -> str:
    out = ["| # | repo@commit | file:line | code | verdict | reason |", "|---|---|---|---|---|---|"]
    for i, f in enumerate(sample, 1):
        v = table.get(f.key, Verdict(UNJUDGED, ""))
        out.append(f"| {i} | {labels.get(f.repo, f.repo)} | `{f.path}:{f.line}` | {f.code} | {_shown(v.verdict)} | "
                   f"{_cell(v.reason)} |")
    return "\n".join(out)


def cpp_table(trees: list[Tree], table: dict[tuple[str, str, int, str], Verdict]) -> str:
    out = ["| repo | file:line | code | verdict | reason |", "|---|---|---|---|---|"]
    for t in trees:
        for f in sorted((f for f in error_findings(t) if f.is_cpp), key=lambda f: (f.path, f.line, f.code)):
            v = table.get(f.key, Verdict(UNJUDGED, ""))
            out.append(f"| {t.name} | `{f.path}:{f.line}` | {f.code} | {_shown(v.verdict)} | {_cell(v.reason)} |")
    return "\n".join(out)


def tally(rows: list[Finding], table: dict[tuple[str, str, int, str], Verdict]) -> collections.Counter[str]:
    return collections.Counter(table.get(f.key, Verdict(UNJUDGED, "")).verdict for f in rows)


def summary(rows: list[Finding], table: dict[tuple[str, str, int, str], Verdict], bar: bool = True) -> str:
    """One line: each verdict's count and share, and (with ``bar``) whether the bar is met."""
    n = len(rows)
    counts = tally(rows, table)
    parts = [f"{v} {counts[v]}/{n} ({100 * counts[v] / n:.0f}%)" if n else f"{v} 0/0" for v in VERDICTS]
    if counts[UNJUDGED]:
        parts.append(f"UNJUDGED {counts[UNJUDGED]}/{n}")
    head = f"**Result ({n} findings): " + ", ".join(parts) + ".**"
    if not bar:
        return head
    many_false = rules_with_false(rows, table)
    met = n >= MIN_SAMPLE and not counts[UNJUDGED] and n and counts["TRUE"] / n >= 0.8 and not many_false
    return (head + " Bar (at least 60 findings, at least 80% TRUE, "
            f"no rule with more than one FALSE): **{'met' if met else 'not met'}**.")


def by_code(rows: list[Finding], table: dict[tuple[str, str, int, str], Verdict]) -> str:
    per: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for f in rows:
        per[f.code][table.get(f.key, Verdict(UNJUDGED, "")).verdict] += 1
    out = ["| code | n | TRUE | PLAUSIBLE | FALSE | UNJUDGED |", "|---|---:|---:|---:|---:|---:|"]
    for code in sorted(per):
        c = per[code]
        out.append(f"| {code} | {sum(c.values())} | {c['TRUE']} | {c['PLAUSIBLE']} | {c['FALSE']} | {c[UNJUDGED]} |")
    return "\n".join(out)


def rules_with_false(rows: list[Finding], table: dict[tuple[str, str, int, str], Verdict]) -> dict[str, int]:
    """Codes with more than one FALSE in the rows."""
    false = collections.Counter(f.code for f in rows if table.get(f.key, Verdict(UNJUDGED, "")).verdict == "FALSE")
    return {code: n for code, n in sorted(false.items()) if n > 1}


def render(trees: list[Tree], sample: list[Finding], cap: int, eligible: dict[str, int],
           table: dict[tuple[str, str, int, str], Verdict]) -> str:
    labels = {t.name: t.label for t in trees}
    drawn = collections.Counter(f.repo for f in sample)
    cap_line = (f"Per-tree cap {cap} (the study's {PER_TREE_CAP}" +
                (")." if cap == PER_TREE_CAP else f", raised by the top-up rule to reach {MIN_SAMPLE}).") +
                " Drawn per tree, of its sampleable errors: " +
                ", ".join(f"{t.name} {drawn[t.name]} of {eligible[t.name]}" for t in trees) + ".")
    if len(sample) < MIN_SAMPLE:
        cap_line += f" **The sample is below {MIN_SAMPLE}: the trees have no more sampleable errors.**"
    many = rules_with_false(sample, table)
    many_line = ", ".join(f"{c} ({n} FALSE)" for c, n in many.items()) or "none"
    cpp_rows = [f for t in trees for f in error_findings(t) if f.is_cpp]
    return "\n\n".join([
        "## All findings, per tree", totals_table(trees),
        "## Sample", cap_line, summary(sample, table),
        f"Rules with more than one FALSE in the sample: {many_line}.",
        "### By code", by_code(sample, table),
        "### Sampled findings", sample_table(sample, labels, table),
        "## C++ error findings (all)",
        (summary(cpp_rows, table, bar=False) if cpp_rows else "No C++ error findings."),
        cpp_table(trees, table),
    ]) + "\n"


# ---------------------------------------------------------------- command line

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        epilog="Sampling: per tree up to 12 errors, round-robin over error codes (largest first), at most 2 per "
               "file, GC0xx excluded, random.Random(20261201) per tree; if the six trees give fewer than 60, the "
               "per-tree cap is raised by one for all trees until 60 are drawn or none are left. Verdicts: TRUE "
               "(real capture hazard in code that can run under capture), PLAUSIBLE (real hazard in code never "
               "captured), FALSE (not a hazard), UNJUDGED (not judged yet).",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trees-root", default="/work/trees", help="folder holding the six trees (default: %(default)s)")
    p.add_argument("--tree", nargs=3, action="append", metavar=("NAME", "PATH", "LABEL"),
                   help="a tree to study instead of the default six (repeatable); LABEL is repo@commit")
    p.add_argument("--graphcheck", default="graphcheck",
                   help="command that runs graphcheck (default: %(default)s; e.g. 'python -m graphcheck')")
    p.add_argument("--jobs", type=int, default=2, help="lint worker processes (default: %(default)s)")
    p.add_argument("--json-dir", type=Path,
                   help="read each tree's lint report from DIR/NAME.json instead of running lint (with --save-json: "
                        "run lint and write the reports there)")
    p.add_argument("--save-json", action="store_true", help="run lint and save each report (and its wall time) "
                   "under --json-dir")
    p.add_argument("--verdicts", type=Path, default=Path("docs/precision-verdicts.tsv"),
                   help="verdict table, TSV: repo, path, line, code, verdict, reason (default: %(default)s)")
    p.add_argument("--update-verdicts", action="store_true",
                   help="add sampled and C++ rows that the TSV lacks as UNJUDGED and rewrite it")
    p.add_argument("--markdown", type=Path, help="write the tables here (default: stdout)")
    args = p.parse_args(argv)
    if args.save_json and not args.json_dir:
        p.error("--save-json needs --json-dir")
    return args


def load_trees(args: argparse.Namespace) -> list[Tree]:
    specs = args.tree or [(name, os.path.join(args.trees_root, folder), label) for name, folder, label in DEFAULT_TREES]
    graphcheck = shlex.split(args.graphcheck)
    trees = []
    for name, path, label in specs:
        tree = Tree(name, label, root=os.path.abspath(path))
        report = args.json_dir / f"{name}.json" if args.json_dir else None
        meta = args.json_dir / f"{name}.meta.json" if args.json_dir else None
        if report is not None and meta is not None and not args.save_json:
            if not report.exists():
                raise SystemExit(f"{report} does not exist (run with --save-json first)")
            tree.findings = json.loads(report.read_text(encoding="utf-8"))
            if meta.exists():
                info = json.loads(meta.read_text(encoding="utf-8"))
                tree.wall_s = info.get("wall_s")
                tree.root = info.get("root", tree.root)
        else:
            print(f"linting {name} ({path}) ...", file=sys.stderr, flush=True)
            tree.findings, tree.wall_s = run_lint(graphcheck, tree.root, args.jobs)
            print(f"  {len(tree.findings)} findings in {tree.wall_s:.1f} s", file=sys.stderr, flush=True)
            if report is not None and meta is not None:
                args.json_dir.mkdir(parents=True, exist_ok=True)
                report.write_text(json.dumps(tree.findings), encoding="utf-8")
                meta.write_text(json.dumps({"wall_s": tree.wall_s, "root": tree.root, "label": label,
                                            "command": args.graphcheck, "jobs": args.jobs,
                                            "finished": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}),
                                encoding="utf-8")
        trees.append(tree)
    return trees


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    trees = load_trees(args)
    sample, cap, eligible = draw_sample(trees)
    table = read_verdicts(args.verdicts)
    if args.update_verdicts:
        cpp_rows = [f for t in trees for f in error_findings(t) if f.is_cpp]
        added = merge_verdicts(table, sample + cpp_rows)
        write_verdicts(args.verdicts, table, [t.name for t in trees])
        print(f"{args.verdicts}: {added} new UNJUDGED rows", file=sys.stderr)
    text = render(trees, sample, cap, eligible, table)
    if args.markdown:
        args.markdown.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
