"""``graphcheck rules [CODE]``: list every rule, or explain one."""

from __future__ import annotations

import argparse
import json
import sys

from graphcheck.cli import EXIT_OK, EXIT_USAGE


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "rules", help="list the rules, or explain one",
        description="Without CODE, list every rule (code, name, severity, layers, summary). With CODE, print its "
                    "page: What it does / Why it is bad / Example / Fix.")
    p.add_argument("code", nargs="?", metavar="CODE", help="a rule code such as GC101")
    p.add_argument("--format", choices=("text", "json"), default="text", help="text (default) or json")
    p.set_defaults(run=run)


def _rule_dict(rule) -> dict:
    return {"code": rule.code, "name": rule.name, "severity": rule.severity.value, "layers": list(rule.layers),
            "family": rule.family, "summary": rule.summary, "hint": rule.hint}


def run(args: argparse.Namespace) -> int:
    from graphcheck import rules

    terminal = sys.stdout.isatty()
    if args.code:
        try:
            rule = rules.get(args.code)
        except KeyError as exc:
            print(f"graphcheck rules: error: {exc.args[0]}", file=sys.stderr)
            return EXIT_USAGE
        try:
            page = rule.doc()
        except rules.RuleDocMissing:
            page = f"# {rule.code} {rule.name}\n\n{rule.summary}\n\n## Fix\n\n{rule.hint}\n"
        if args.format == "json":
            print(json.dumps({**_rule_dict(rule), "doc": page}, indent=2))
        elif terminal:
            from rich.console import Console
            from rich.markdown import Markdown

            Console().print(Markdown(page))
        else:
            sys.stdout.write(page if page.endswith("\n") else page + "\n")
        return EXIT_OK

    catalog = list(rules.RULES.values())
    if args.format == "json":
        print(json.dumps([_rule_dict(r) for r in catalog], indent=2))
    elif terminal:
        from rich.console import Console
        from rich.table import Table

        table = Table(title="graphcheck rules", title_justify="left")
        for col in ("code", "name", "severity", "layers", "summary"):
            table.add_column(col, overflow="fold")
        for r in catalog:
            table.add_row(r.code, r.name, r.severity.value, ", ".join(r.layers), r.summary)
        Console().print(table)
    else:
        rows = [(r.code, r.name, r.severity.value, ",".join(r.layers), r.summary) for r in catalog]
        widths = [max(len(row[i]) for row in rows + [("code", "name", "severity", "layers", "")]) for i in range(4)]
        print("  ".join(h.ljust(w) for h, w in zip(("code", "name", "severity", "layers"), widths)) + "  summary")
        for row in rows:
            print("  ".join(c.ljust(w) for c, w in zip(row[:4], widths)) + "  " + row[4])
    return EXIT_OK
