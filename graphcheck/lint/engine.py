"""The lint engine: discover files, run the rules on each (in parallel), cache, filter.

Nothing here imports or runs the code being linted: files are read as bytes,
decoded, and handed to the Python rules (``ast``) or the C++ rules (text). A
file that cannot be read, decoded or parsed becomes a GC0xx finding and the other
files are still linted; an exception inside a rule becomes GC003 for that file.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from graphcheck import config as config_mod
from graphcheck import expectations, rules
from graphcheck.config import Config
from graphcheck.findings import Finding
from graphcheck.lint import cache as cache_mod
from graphcheck.lint import files as files_mod
from graphcheck.lint import pool as lint_pool
from graphcheck.lint.files import decode
from graphcheck.lint.suppress import expect_markers

if False:  # typing only
    import ast

    from graphcheck.lint.project import ExtraRoot

_UNLINTED = frozenset({"GC002", "GC003"})
SERIAL_BELOW = lint_pool.SERIAL_BELOW
_BINARY_PROBE = 8192


@dataclasses.dataclass
class LintResult:
    findings: list[Finding]
    files_checked: int
    lines: int
    from_cache: int
    seconds: float = 0.0
    skipped: list[str] = dataclasses.field(default_factory=list)
    functions_in_scope: int = 0  # capture-reachable functions that were checked
    functions_skipped: int = 0  # functions not capture-reachable (not checked without --all-functions)
    files_excluded: int = 0  # files left out by the default excludes (tests, benchmarks, ...)
    # where a linted directory captures its own graphs (``deadcode.capture_site``); "" when it has Python files and
    # none captures, None when not asked (a single file, no Python)
    capture_site: str | None = None
    # when ``capture_site`` is "": the C++ begins that nothing in the tree calls, as the summary names them ("" none)
    uncalled_capture: str = ""


@dataclasses.dataclass(frozen=True)
class _Options:
    all_functions: bool
    entry_points: tuple[str, ...]
    max_file_size: int


# --- one file --------------------------------------------------------------------------


def _tool_finding(code: str, message: str, path: str, line: int = 1, col: int = 0, **evidence: Any) -> Finding:
    return rules.make_finding(code, message, path=path, line=line, col=col, evidence=evidence)


def _count_lines(data: bytes) -> int:
    """Lines as Python counts them: ``\\r\\n``, a lone ``\\r`` (old Mac files) and ``\\n`` each end one."""
    if not data:
        return 0
    breaks = data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")
    return breaks + (0 if data.endswith((b"\n", b"\r")) else 1)


def normalize_newlines(source: str) -> str:
    """``\\r\\n`` and lone ``\\r`` as ``\\n``: the line breaks Python's tokenizer accepts, so every rule
    and line count sees the same lines whatever the file's line-end convention."""
    if "\r" not in source:
        return source
    return source.replace("\r\n", "\n").replace("\r", "\n")


def lint_source(source: str, path: str, language: str, options: _Options | None = None,
                context: dict[str, Any] | None = None, tree: ast.Module | None = None) -> list[Finding]:
    """Run the rules for ``language`` on decoded ``source``, apply inline suppressions, add GC008
    for each ``expect`` marker the static layer owes but did not meet, and mark the findings an
    ``expect`` marker names as ``expected`` (so the cache stores them marked). ``tree``: ``ast.parse(source)``
    of a Python source, when the caller has it (used only when the source needs no newline change)."""
    from graphcheck.lint import suppress

    options = options or _Options(False, (), Config().max_file_size)
    if "\r" in source:
        source, tree = normalize_newlines(source), None
    if language == "python":
        from graphcheck.lint.python_rules import lint_python

        if context is None:
            found = lint_python(source, path, all_functions=options.all_functions, entry_points=options.entry_points,
                                tree=tree)
        else:
            found = lint_python(source, path, all_functions=options.all_functions,
                                entry_points=options.entry_points, context=context, tree=tree)
    else:
        from graphcheck.lint.cpp_rules import lint_cpp

        found = lint_cpp(source, path)
    found = suppress.filter_suppressed(found, source, language)
    found += [_tool_finding("GC009", problem, path, line=line)
              for line, problem in suppress.marker_problems(source, language)]
    markers = expect_markers(source, language) if "expect" in source else {}
    found += expectations.missing_static(found, path, source=source, language=language, markers=markers)
    return expectations.apply_markers(found, markers) if markers else found


def _lint_file(path: str, display: str, language: str, known_digest: str | None, options: _Options,
               context: dict[str, Any] | None = None, context_key: str = "") -> dict[str, Any]:
    """Lint one file; never raises. Returns a plain dict (cheap to send between processes).

    The cached digest is the file's content digest and ``context_key`` (the digest of what
    the project index told this file), so a file is re-linted when either changes."""
    result: dict[str, Any] = {"path": path, "lines": 0, "findings": [], "cacheable": False}
    try:
        st = os.stat(path)
        result["size"], result["mtime_ns"] = st.st_size, st.st_mtime_ns
        if st.st_size > options.max_file_size:
            result["findings"] = [_tool_finding(
                "GC002", f"file is too large ({st.st_size} bytes > max-file-size {options.max_file_size}); skipped",
                display, size=st.st_size)]
            return result
        data = files_mod.read_regular(path, options.max_file_size + 1)
    except files_mod.NotRegularFile as exc:
        result["findings"] = [_tool_finding("GC002", f"{exc}; skipped", display)]
        return result
    except FileNotFoundError:
        result["findings"] = [_tool_finding("GC002", "file disappeared before it could be read", display)]
        return result
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        result["findings"] = [_tool_finding("GC002", f"cannot read file: {reason}", display, errno=exc.errno)]
        return result
    file_digest = cache_mod.digest(data) + "|" + context_key
    result["digest"] = file_digest
    result["cacheable"] = True
    result["lines"] = _count_lines(data)
    if known_digest == file_digest:
        result["unchanged"] = True
        return result
    if b"\x00" in data[:_BINARY_PROBE]:
        result["findings"] = [_tool_finding("GC002", "file looks binary (NUL bytes); skipped", display)]
        return result
    try:
        source = decode(data, language)
    except (UnicodeDecodeError, LookupError, SyntaxError) as exc:
        detail = exc.reason if isinstance(exc, UnicodeDecodeError) else str(exc)
        result["findings"] = [_tool_finding("GC002", f"cannot decode file as text: {detail}", display)]
        return result
    # the tree the project index parsed this file into, when this process summarized it in this run
    tree = lint_pool.take_tree(path, source) if language == "python" else None
    try:
        result["findings"] = lint_source(source, display, language, options, context, tree)
    except RecursionError:
        result["findings"] = [_tool_finding("GC003", "file is nested too deeply to check", display)]
    except Exception as exc:  # a rule bug must not stop the run
        result["findings"] = [_tool_finding("GC003", f"internal error: {type(exc).__name__}: {exc}", display,
                                            exception=type(exc).__name__)]
        result["cacheable"] = False
    return result


def _lint_chunk(tasks: list[tuple], options: _Options) -> list[dict[str, Any]]:
    out = []
    for path, display, language, known, *rest in tasks:
        context, key = rest if rest else (None, "")
        res = _lint_file(path, display, language, known, options, context, key)
        res["findings"] = [f.to_dict() for f in res["findings"]]
        out.append(res)
    return out


# --- many files ------------------------------------------------------------------------


def _to_cache(finding: Finding) -> dict[str, Any]:
    """A finding as stored: the rule's own severity, and a milder one the static layer chose (a guessed
    reach or device value) kept in the evidence, so the cache validates against the rule catalog."""
    data = {k: v for k, v in finding.to_dict().items() if k != "path"}
    rule_severity = rules.get(finding.code).severity.value
    if data["severity"] != rule_severity:
        data["evidence"] = {**data.get("evidence", {}), "severity": data["severity"]}
        data["severity"] = rule_severity
    return data


def _from_cache(data: dict[str, Any], display: str) -> Finding:
    evidence = dict(data.get("evidence") or {})
    severity = evidence.pop("severity", None) or data["severity"]
    return Finding.from_dict({**data, "evidence": evidence, "severity": severity, "path": display})


def _default_excluded(found: Sequence[files_mod.SourceFile], paths: Sequence[str | os.PathLike[str]],
                      patterns: Sequence[str]) -> set[str]:
    """Files under a linted directory whose path *below that directory* has a folder or a name matching
    the default excludes (tests, benchmarks, examples, docs). A path named on the command line is
    never excluded, nor is anything below a named directory that itself matches (``graphcheck lint
    examples`` lints the examples, ``graphcheck lint tests`` the tests)."""
    import fnmatch

    if not patterns:
        return set()
    cwd = os.getcwd()
    roots = [os.path.normpath(os.path.join(cwd, os.fspath(p))) for p in paths]
    named = set(roots)
    # a named directory that is itself test/benchmark/example code asks for that code: no defaults below it
    dirs = [r for r in roots if os.path.isdir(r)]
    asked = {r for r in dirs if any(fnmatch.fnmatchcase(os.path.basename(r), p) for p in patterns)}
    excluded_part = files_mod.glob_regex(tuple(patterns))
    assert excluded_part is not None  # patterns is not empty
    out: set[str] = set()
    for sf in found:
        if sf.path in named:
            continue
        best = _deepest_root(sf.path, dirs)
        if best is None or best in asked:
            continue
        parts = files_mod.below(sf.path, best).split(os.sep)
        if any(excluded_part.match(part) for part in parts):
            out.add(sf.path)
    return out


def _deepest_root(path: str, dirs: Sequence[str]) -> str | None:
    """The deepest of the named directories ``dirs`` that holds ``path``, or None."""
    return max((d for d in dirs if path.startswith(d.rstrip(os.sep) + os.sep)), key=len, default=None)


# C++ libraries that projects vendor as a whole checkout, often outside a third-party folder (`csrc/cutlass`, a
# submodule): with its own licence file at its top, such a folder is that library's copy
_VENDORED_LIBRARIES = frozenset({"cutlass", "cccl", "cub", "thrust", "googletest", "benchmark", "pybind11",
                                 "nanobind", "spdlog", "fmt", "abseil-cpp", "composable_kernel", "nccl", "nvshmem"})
_LICENCE_FILES = ("LICENSE", "LICENSE.txt", "LICENSE.md", "LICENCE", "COPYING")


def _is_checkout(folder: str) -> bool:
    """Whether ``folder`` (named like a vendored library) is a checkout of it: a licence file of its own, and
    not a Python package (a project's own ``cutlass/`` package of kernels)."""
    if os.path.isfile(os.path.join(folder, "__init__.py")):
        return False
    return any(os.path.isfile(os.path.join(folder, name)) for name in _LICENCE_FILES)


def _third_party(found: Sequence[files_mod.SourceFile], paths: Sequence[str | os.PathLike[str]],
                 patterns: Sequence[str]) -> set[str]:
    """Files below a linted directory inside a folder named like ``third-party`` (``3rdparty/``,
    ``third_party/``) that is not a Python package, or inside a checkout of a library projects vendor whole
    (``csrc/cutlass/`` with its own licence file, ``_VENDORED_LIBRARIES``): a copy of another project (a submodule,
    a vendored library), linted with its own project. A package of that name (``vllm/third_party/__init__.py``) is the
    engine's own adapted code and stays in; a directory named on the command line is never dropped."""
    if not patterns:
        return set()
    folder_re = files_mod.glob_regex(tuple(patterns))
    assert folder_re is not None
    checkout: dict[str, bool] = {}  # a folder named like a library others vendor -> whether it is a checkout of it
    cwd = os.getcwd()
    dirs = [os.path.normpath(os.path.join(cwd, os.fspath(p))) for p in paths]
    dirs = [d for d in dirs if os.path.isdir(d)]
    package: dict[str, bool] = {}
    out: set[str] = set()
    for sf in found:
        best = _deepest_root(sf.path, dirs)
        if best is None:
            continue
        parts = files_mod.below(sf.path, best).split(os.sep)[:-1]
        folder = best
        for part in parts:
            folder = os.path.join(folder, part)
            if folder_re.match(part):
                if folder not in package:
                    package[folder] = os.path.isfile(os.path.join(folder, "__init__.py"))
                if not package[folder]:
                    out.add(sf.path)
                    break
            elif part.lower() in _VENDORED_LIBRARIES:
                if folder not in checkout:
                    checkout[folder] = _is_checkout(folder)
                if checkout[folder]:
                    out.add(sf.path)
                    break
    return out


def _matches_glob(display: str, abs_path: str, root: str, pattern: str) -> bool:
    import fnmatch

    rel = os.path.relpath(abs_path, root).replace(os.sep, "/")
    return (fnmatch.fnmatchcase(rel, pattern) or fnmatch.fnmatchcase(display, pattern)
            or fnmatch.fnmatchcase(os.path.basename(abs_path), pattern))


def _run_tasks(tasks: list, options: _Options, jobs: int, done: Callable[[int], None] | None = None,
               workers: lint_pool.Workers | None = None) -> list[dict[str, Any]]:
    """``_lint_chunk`` over ``tasks``; on ``workers`` (the ones the project index ran on), each Python file
    goes to the worker that summarized it and holds its tree."""
    if workers is not None:
        return workers.map_chunks(_lint_chunk, tasks, options, done=done, place=_task_path)
    return lint_pool.map_chunks(_lint_chunk, tasks, jobs, options, done=done)


def _task_path(task: tuple) -> str:
    return task[0]


def lint_paths(paths: Sequence[str | os.PathLike[str]], config: Config | None = None, *,
               jobs: int | None = None, use_cache: bool = True, trust_stat: bool = True,
               extra_roots: Sequence[ExtraRoot] = (),
               progress: Callable[[int, int], None] | None = None) -> LintResult:
    """Lint every Python and C++ file under ``paths``.

    ``progress(done, total)``, if given, hears how many of the files are checked so far.

    ``trust_stat=False`` never takes a cache entry on size and mtime alone: every file is read and its
    content digest compared (what the CI gate does).

    ``extra_roots`` adds capture roots named from outside the source (a recorded
    capture map): ``ExtraRoot(path, qualname)`` from ``graphcheck.lint.project``.
    Raises ``graphcheck.config.ConfigError`` for a path that does not exist.
    """
    jobs = jobs if jobs and jobs > 0 else (os.cpu_count() or 1)
    # one set of workers for the index and the rules: a file's tree parsed for its summary is checked as is
    with lint_pool.fewer_collections(), lint_pool.Workers(jobs) as workers:
        return _lint_paths(paths, config, jobs=jobs, use_cache=use_cache, trust_stat=trust_stat,
                           extra_roots=extra_roots, progress=progress, workers=workers)


def _lint_paths(paths: Sequence[str | os.PathLike[str]], config: Config | None, *, jobs: int,
                use_cache: bool, trust_stat: bool, extra_roots: Sequence[ExtraRoot],
                progress: Callable[[int, int], None] | None, workers: lint_pool.Workers) -> LintResult:
    started = time.perf_counter()
    config = config or Config()
    discovery = files_mod.discover(paths, config)
    excluded = _default_excluded(discovery.files, paths, config.default_exclude + config.vendor_exclude)
    excluded |= _third_party(discovery.files, paths, config.third_party)
    # a linted tree: its excluded Python files (tests, benchmarks) still refer to launchers (graphcheck.lint.deadcode)
    references = ([sf.path for sf in discovery.files if sf.path in excluded and sf.language == "python"]
                  if any(os.path.isdir(p) for p in paths) else None)
    # of those, the tests, benchmarks and examples (not the non-CUDA backends): what only they refer to is not
    # captured in a tree that captures its own graphs
    tests = (excluded & _default_excluded([sf for sf in discovery.files if sf.path in excluded
                                           and sf.language == "python"], paths, config.default_exclude)
             if references else set())
    if excluded:
        discovery.files = [sf for sf in discovery.files if sf.path not in excluded]
    options = _Options(config.all_functions, tuple(config.entry_points), config.max_file_size)
    total = len(discovery.files)
    checked = 0

    def advance(n: int) -> None:
        nonlocal checked
        checked += n
        if progress:
            progress(checked, total)

    advance(0)

    cache = None
    directory = cache_mod.cache_dir(config.root) if use_cache else None
    if directory is not None:
        cache = cache_mod.LintCache(directory, cache_mod.settings_key(*dataclasses.astuple(options)))

    by_path = {f.path: f for f in discovery.files}
    raw: dict[str, list[Finding]] = {}
    unchecked = [_tool_finding("GC002", why, shown) for shown, why in discovery.problems]
    lines = 0
    from_cache = 0
    tasks = []
    stats: dict[str, tuple[int, int]] = {}  # the stat the lint cache took of each file, for the C++ passes' keys
    from graphcheck.lint.project import ProjectIndex

    contexts: dict[str, tuple[dict[str, Any] | None, str]] = {}
    value_model = {"host_names": list(config.host_names), "guards": list(config.capture_guards),
                   "debug_flags": list(config.debug_flags), "data_dependent": list(config.data_dependent_ops),
                   "prefill_flags": list(config.prefill_flags), "prefill_lengths": list(config.prefill_lengths)}
    value_key = cache_mod.digest(repr(sorted(value_model.items())).encode())[:8]
    python_files = [sf.path for sf in discovery.files if sf.language == "python"]
    project = ProjectIndex(
        python_files, registrars=config.custom_op_registrars, entry_points=config.entry_points,
        extra_roots=extra_roots, jobs=jobs, max_file_size=config.max_file_size,
        cache_dir=directory, trust_stat=trust_stat, eager=config.eager_functions,
        harness=config.harness_functions, uncaptured=config.uncaptured_functions, vendor=config.vendor_exclude,
        workers=workers, references=references, tests=tests, prefill_flags=config.prefill_flags,
        prefill_lengths=config.prefill_lengths)
    for sf in discovery.files:
        known = None
        context = None
        key = ""
        if sf.language == "python":
            ctx = project.context(sf.path)
            if ctx is not None:
                context, key = {**ctx.to_dict(), **value_model}, ctx.digest() + value_key
            else:  # never summarized: nothing in it is capture-reachable
                context, key = {"reach": {}, **value_model}, "-" + value_key
            content = project.file_facts(sf.path)[0]
        if cache is not None:
            try:
                st = os.stat(sf.path)
                stats[sf.path] = (st.st_size, st.st_mtime_ns)
                hit, known, cached_lines, cached = cache.lookup(sf.path, st.st_size, st.st_mtime_ns)
                if hit and sf.language == "python" and known != f"{content}|{key}":
                    hit = False
                if hit and trust_stat:
                    raw[sf.path] = [_from_cache(d, sf.display) for d in cached or ()]
                    lines += cached_lines
                    from_cache += 1
                    continue
            except Exception:  # a vanished file or a malformed entry: lint it afresh
                known = None
        contexts[sf.path] = (context, key)
        tasks.append((sf.path, sf.display, sf.language, known, context, key))

    advance(total - len(tasks))  # the files the cache answered
    for res in _run_tasks(tasks, options, jobs, done=advance if progress else None, workers=workers):
        sf = by_path[res["path"]]
        found = None
        if res.get("unchanged") and cache is not None:
            _, _, _, cached = cache.lookup(sf.path, -1, -1)
            try:
                found = [_from_cache(d, sf.display) for d in cached]  # type: ignore[union-attr]
                from_cache += 1
            except Exception:  # validated on lookup, so only a bug lands here: lint the file afresh
                found = None
        if found is None:
            if res.get("unchanged"):
                res = _lint_chunk([(sf.path, sf.display, sf.language, None, *contexts[sf.path])], options)[0]
            found = [Finding.from_dict(d) for d in res["findings"]]
        lines += res["lines"]
        raw[sf.path] = found
        if cache is not None and res.get("cacheable"):
            stored = [_to_cache(f) for f in found]
            cache.store(sf.path, res["size"], res["mtime_ns"], res["digest"], res["lines"], stored)
    if cache is not None:
        cache.save()
    folders = [os.path.abspath(p) for p in paths if os.path.isdir(p)]
    # where a linted tree captures its own graphs: the summary says so, and the C++ passes ask (an application)
    from graphcheck.lint.deadcode import first_capture, shown_site

    first = first_capture(project) if python_files and folders else None
    if folders:  # a tree was linted: C++ hazards no capture reaches become warnings
        from graphcheck.lint.cpp_builds import demote_unbuilt
        from graphcheck.lint.cpp_callers import LintedSources, demote_uncalled
        from graphcheck.lint.cpp_callers import _top as _top_folder
        from graphcheck.lint.cpp_capture import demote_unreachable, own_begin
        from graphcheck.lint.cpp_flags import demote_opt_in
        from graphcheck.lint.cpp_ops import demote_cold_ops
        from graphcheck.lint.cpp_perthread import demote_per_thread
        from graphcheck.lint.cpp_queries import drop_size_queries

        linted = [(sf.path, sf.language) for sf in discovery.files]
        sources = LintedSources(linted, stats)  # the tree's bytes, read (if at all) once for the caller passes
        # the capture the tree's C++ begins in code it calls: asked (once) by the per-thread pass and the summary
        tree_begin = functools.cache(lambda: own_begin(linted, sources, directory, sorted(tests),
                                                       config.eager_functions))
        raw = drop_size_queries(raw, linted, sources)  # size queries of a callee defined elsewhere launch nothing
        site = shown_site(first, _top_folder(linted))  # an application tree
        raw = demote_uncalled(raw, linted, directory, sources, site, sorted(tests),  # tests: for the ops they name
                              config.eager_functions)  # C++ plan steps and code only they call: warnings
        # launches on the per-thread default stream that the tree's C++ captures on (before the op pass, which
        # asks the callers of every error left; after the callers pass, whose bytes it reuses)
        raw = demote_per_thread(raw, linted, lambda: tree_begin()[0], sources, folders)
        raw = demote_cold_ops(raw, linted, project, sources,  # ops only load-time or uncaptured Python calls:
                              directory, repr((config, tuple(extra_roots))), sorted(tests))  # warnings
        raw = demote_opt_in(raw, linted, sources, sorted(tests))  # syncs under a bool flag no caller turns on
        raw, _ = demote_unreachable(raw, linted, project, sources,  # no capture reaches the tree's C++: warnings
                                    tree_begin, python_capture=first is not None, cache_dir=directory)
        raw = demote_unbuilt(raw, linted, paths, directory, sources,  # files no build of the tree compiles
                             cache_mod.cache_dir(config.root))

    root = str(config.root)
    findings: list[Finding] = []
    for abs_path, found in raw.items():
        display = by_path[abs_path].display
        ignored: tuple[str, ...] = ()
        for pattern, codes in config.per_file_ignores:
            if _matches_glob(display, abs_path, root, pattern):
                ignored += codes
        for f in found:
            if config.selects(f.code) and not (ignored and config_mod.ignored_by(f.code, ignored)):
                findings.append(f)
    findings += [f for f in unchecked if config.selects(f.code)]
    findings.sort(key=Finding.sort_key)
    # findings of parsed files were marked in lint_source (and cached marked); only the engine's own
    # GC002/GC003 for a file it could not read or check are marked here, from the file on disk
    findings = [expectations.mark_expected([f])[0] if f.code in _UNLINTED else f for f in findings]
    in_scope, not_reachable = project.counts()
    own_capture: str | None = None  # what the summary says of the tree's own capture (a single file: nothing)
    uncalled_capture = ""  # the C++ begins in code nothing in the tree calls, when no capture is live
    if folders:
        own_capture = shown_site(first, os.path.commonpath(folders)) or ""
        cpp_paths = [sf.path for sf in discovery.files if sf.language == "cpp"]
        if not own_capture and cpp_paths:  # a C++ engine that begins its captures itself, in code it calls
            from graphcheck.lint.cpp_capture import uncalled_note

            base = os.path.commonpath(folders)
            live, dead = tree_begin()
            own_capture = shown_site(live.site if live is not None else None, base) or ""
            if dead:
                uncalled_capture = uncalled_note(dead, base)
        if not (python_files or cpp_paths):
            own_capture = None
    return LintResult(findings=findings, files_checked=len(discovery.files), lines=lines, from_cache=from_cache,
                      seconds=time.perf_counter() - started, skipped=discovery.skipped,
                      functions_in_scope=in_scope, functions_skipped=0 if config.all_functions else not_reachable,
                      files_excluded=len(excluded), capture_site=own_capture,
                      uncalled_capture=uncalled_capture)
