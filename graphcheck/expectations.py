"""Expected findings: ``# graphcheck: expect[CODE]`` markers, applied alike for every front-end.

An expect marker is the inverse of ``ignore``: the finding it names is meant to
be there (a hazard example, a test fixture). Three things follow from one:

- :func:`mark_expected` sets ``Finding.expected`` on every finding, from any
  layer, whose line carries a marker naming its code. Expected findings are
  still reported, but ``at_or_above`` (so every exit code and assertion) leaves
  them out. :func:`graphcheck.check` calls it on each layer's findings; the
  lint engine marks each file's findings from the source it has in hand
  (:func:`apply_markers`), before they are cached.
- :func:`missing_static`: a marker whose code the static layer can produce for
  the file's language (or that names ``@static``) but that the static layer did
  not report on that line is GC008. The lint engine runs it per file, so it is
  cached with the file's findings. Malformed markers (an unknown code or layer,
  a layer that never reports the code) are GC008 here too.
- :func:`missing_dynamic`: the same for the trace and capture layers, in
  ``graphcheck audit`` and ``graphcheck ci``, for the markers in the files that
  declare cases, and only for a layer that ran for every case of that file (a
  skipped layer gives no verdict).

A marker's code with ``@layer[+layer]`` (``GC107@trace``) is owed by those
layers only; a bare code by every layer that can produce it. Either way, a
finding with that code on that line is expected whichever layer reports it.
A trailing ``?`` (``GC102@trace?``) makes the expectation optional: expected
when reported, never owed, for findings that depend on where graphcheck runs.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from graphcheck import rules
from graphcheck.findings import LAYERS, Finding
from graphcheck.lint.files import decode, language_of, read_regular
from graphcheck.lint.suppress import Expectation, expect_markers

CODE = "GC008"
#: a file the static layer could not check gives no verdict on its markers
_UNCHECKED = frozenset({"GC001", "GC002", "GC003"})
_CACHE_LIMIT = 512

Markers = Mapping[int, Sequence[Expectation]]
_cache: dict[str, tuple[tuple[int, int], dict[int, list[Expectation]]]] = {}


static_codes = rules.static_codes  # which codes the static layer reports per language: the registry's ``languages``


def owed_by(expectation: Expectation, layer: str, language: str) -> bool:
    """Whether ``layer`` must report the expected code when it runs on the file."""
    return not expectation.optional and can_report(expectation, layer, language)


def can_report(expectation: Expectation, layer: str, language: str) -> bool:
    """Whether ``layer`` can report the expected code on the file, as the marker names it."""
    rule = rules.RULES.get(expectation.code)
    if rule is None or expectation.code == CODE:
        return False
    can = expectation.code in static_codes(language) if layer == "static" else layer in rule.layers
    if expectation.layers is None:
        return can
    return can and layer in expectation.layers


def _gc008(message: str, path: str, line: int, layer: str, **evidence: object) -> Finding:
    return rules.make_finding(CODE, message, path=path, line=line, layer=layer, evidence=evidence)


def _missing_message(e: Expectation, layer: str) -> str:
    name = rules.RULES[e.code].name
    return (f"a `graphcheck: expect[{e.code}]` marker expects {e.code} ({name}) on this line, "
            f"but the {layer} layer did not report it")


def missing_static(findings: Iterable[Finding], path: str, *, source: str, language: str,
                   markers: Markers | None = None) -> list[Finding]:
    """GC008 for each expectation in ``source`` the static ``findings`` of that file do not meet
    (``markers``: the file's markers when the caller has already read them)."""
    if markers is None:
        markers = expect_markers(source, language)
    if not markers:
        return []
    findings = list(findings)
    if any(f.code in _UNCHECKED for f in findings):
        return []
    got = {(f.code, f.line) for f in findings}
    out = []
    for line, expectations in sorted(markers.items()):
        for e in expectations:
            rule = rules.RULES.get(e.code)
            if rule is None or e.code == CODE:
                out.append(_gc008(f"`graphcheck: expect[...]` names {e.code!r}, which is not a rule code "
                                  "(`graphcheck rules` lists them)", path, line, "static", expected=e.code))
                continue
            bad = sorted((e.layers or frozenset()) - set(LAYERS))
            never = sorted(layer for layer in (e.layers or ())
                           if layer in LAYERS and not can_report(e, layer, language))
            if bad or never:
                what = (f"unknown layer {', '.join(bad)} (expected {', '.join(LAYERS)})" if bad else
                        f"the {' and '.join(never)} layer{'s' if len(never) > 1 else ''} never "
                        f"report{'' if len(never) > 1 else 's'} "
                        f"{e.code} in {language} files")
                out.append(_gc008(f"`graphcheck: expect[{e.code}@...]`: {what}", path, line, "static",
                                  expected=e.code))
                continue
            if owed_by(e, "static", language) and (e.code, line) not in got:
                out.append(_gc008(_missing_message(e, "static"), path, line, "static", expected=e.code))
    return out


def _language(path: str) -> str | None:
    return language_of(path)


def markers_of(path: str | os.PathLike[str]) -> dict[int, list[Expectation]]:
    """The expect markers of a file, read once per (size, mtime); {} for a file that cannot be read."""
    path = os.fspath(path)
    language = _language(path)
    if language is None:
        return {}
    try:
        st = os.stat(path)
    except OSError:
        return {}
    key = os.path.realpath(path)
    stamp = (st.st_size, st.st_mtime_ns)
    hit = _cache.get(key)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    try:
        data = read_regular(path)  # never a FIFO or device: the read could block
        markers = expect_markers(decode(data, language), language) if b"expect" in data else {}
    except (OSError, UnicodeDecodeError, LookupError, SyntaxError):
        markers = {}
    if len(_cache) >= _CACHE_LIMIT:
        _cache.clear()
    _cache[key] = (stamp, markers)
    return markers


def apply_markers(findings: Iterable[Finding], markers: Markers) -> list[Finding]:
    """The findings of one file, with ``expected=True`` on those whose line carries a marker naming their code.

    The lint engine calls this in the worker, with the markers of the source it just linted, so the cached
    findings are already marked and a cached run reads no file.
    """
    out = []
    for f in findings:
        if f.expected or f.code == CODE or f.line <= 0 or f.line not in markers:
            out.append(f)
            continue
        codes = {e.code for e in markers[f.line]}
        out.append(dataclasses.replace(f, expected=True) if f.code in codes else f)
    return out


def mark_expected(findings: Iterable[Finding]) -> list[Finding]:
    """The findings, with ``expected=True`` on those whose line carries a marker naming their code.

    Only the files the findings point at are read (each once, through a small cache).
    """
    out = []
    for f in findings:
        if f.expected or f.code == CODE or f.line <= 0:
            out.append(f)
            continue
        codes = {e.code for e in markers_of(f.path).get(f.line, ())}
        out.append(dataclasses.replace(f, expected=True) if f.code in codes else f)
    return out


def missing_dynamic(layers_ran: Mapping[str, Iterable[str]], findings: Iterable[Finding],
                    display=lambda path: path) -> list[Finding]:
    """GC008 for the markers of each file in ``layers_ran`` (file -> the dynamic layers that ran for every
    case it declares) that a layer which ran owed but did not report on that line."""
    got: set[tuple[str, str, int, str]] = set()
    for f in findings:
        got.add((os.path.realpath(f.path), f.code, f.line, f.layer))
    out = []
    for path, ran in layers_ran.items():
        ran = [layer for layer in ran if layer in ("trace", "capture")]
        language = _language(path)
        if not ran or language is None:
            continue
        real = os.path.realpath(path)
        for line, expectations in sorted(markers_of(path).items()):
            for e in expectations:
                for layer in ran:
                    if owed_by(e, layer, language) and (real, e.code, line, layer) not in got:
                        out.append(_gc008(_missing_message(e, layer), display(path), line, layer, expected=e.code))
    return out


def declaring_file(source: str) -> str | None:
    """The file of a case source (``<module or file>::<case>``), or None when it cannot be found."""
    where = source.partition("::")[0]
    if where.endswith(".py") or os.path.sep in where or "/" in where:
        return where if Path(where).is_file() else None
    import importlib.util

    try:
        spec = importlib.util.find_spec(where)
    except (ImportError, ValueError, AttributeError):
        return None
    return spec.origin if spec and spec.origin and os.path.isfile(spec.origin) else None
