"""Project configuration: ``[tool.graphcheck]`` in ``pyproject.toml`` or a ``graphcheck.toml``.

Discovery walks up from the first path given on the command line and takes the
nearest directory holding a ``graphcheck.toml`` (keys at top level) or a
``pyproject.toml`` with a ``[tool.graphcheck]`` table; ``graphcheck.toml`` wins in
the same directory. ``--config FILE`` names the file instead: a ``pyproject.toml``
is read from its ``[tool.graphcheck]`` table, any other TOML file from its top
level. The directory holding the config file is the project root: ``exclude``
and ``per-file-ignores`` globs are relative to it, and the lint cache lives
there. Keys may be spelled with dashes or underscores.

Keys: ``select``, ``ignore`` (codes or prefixes such as ``GC1``),
``per-file-ignores`` (glob -> codes), ``exclude`` (globs), ``default-exclude`` and
``vendor-exclude`` (path-part globs dropped below a linted directory), ``third-party`` (folders that hold
copies of other projects),
``entry-points`` (qualified names of capture entry points),
``custom-op-registrars``, ``host-names``, ``capture-guards``, ``debug-flags``, ``prefill-flags``,
``prefill-lengths``, ``data-dependent-ops``, ``eager-functions``, ``harness-functions`` and
``uncaptured-functions`` (the static layer's scope and value model; docs/guide/lint.md), ``fail-on`` (error,
warning, info, never),
``all-functions`` (bool), ``max-file-size`` (bytes). Unknown keys and wrong types
are errors.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

from graphcheck import rules

FAIL_ON = ("error", "warning", "info", "never")
DEFAULT_MAX_FILE_SIZE = 10 * 1024 * 1024
MAX_MAX_FILE_SIZE = 2**31 - 1  # a read buffer must fit an index-sized integer everywhere
_CODE_SELECTOR = re.compile(r"^GC\d{0,3}$")


class ConfigError(Exception):
    """A configuration or usage problem; the CLI reports it and exits 2."""


# Test, benchmark, example and docs trees are not library code that runs under capture.
DEFAULT_EXCLUDE = ("tests", "test", "testing", "unittest", "unittests", "unit_test", "unit_tests", "test_*.py",
                   "*_test.py", "*_test.*", "conftest.py", "benchmarks", "benchmark", "examples", "tutorials", "docs")
# Backends for accelerators that CUDA graphs never run on (vendor folders of FlagGems and Liger, NPU/XPU/MLU/
# MUSA/HPU code); NVIDIA and HIP (AMD, Hygon: torch.cuda.graph on ROCm) backends stay in.
DEFAULT_VENDOR_EXCLUDE = ("_aipu", "_arm", "_ascend", "_cambricon", "_enflame", "_iluvatar", "_kunlunxin", "_metax",
                          "_mthreads", "_spacemit", "_sunrise", "_thead", "_tsingmicro", "npu", "xpu", "mlu", "musa",
                          "hpu", "ascend", "*_npu.py", "*_xpu.py", "*_mlu.py", "*_musa.py", "*_hpu.py")
# Folders that hold copies of other projects (git submodules, vendored libraries: FlashInfer's `3rdparty/cutlass`,
# an FBGEMM checkout under `3rdparty/`): their code is linted with its own project. A folder of that name that is a
# Python package (`vllm/third_party/` with an `__init__.py`) is the engine's own adapted code and stays in.
DEFAULT_THIRD_PARTY = ("3rdparty", "third_party", "thirdparty", "third-party", "3rd_party", "3rd-party")
DEFAULT_HOST_NAMES = ("*_cpu", "*_np", "*_numpy", "*_host", "*_pinned")
# Names that say prefill in a branch test (prefill-flags): globs, case-insensitive, on the last part of a name,
# attribute or call the test reads (`if prefill_meta := m.prefill_metadata:`, `if num_prefills > 0:`,
# `if is_prefill():`). A test that also names decode is none. Engines capture decode; a prefill branch runs eagerly.
DEFAULT_PREFILL_FLAGS = ("*prefill*",)
# Names of a query length (prefill-lengths): globs, case-insensitive, on the last part of a name or attribute. A
# branch test comparing one with 1 (`if q_len > 1:`, `q_len != 1`, `q_len >= 2`; the `else` of `if q_len == 1:`;
# `q_len > 1 and x`, true arm) is a prefill branch: HF-style model code generates one token per step, so a query
# of more than one token is the prompt, and what is captured is the one-token decode step. Kept to names that
# say query: a generic `seq_len`/`num_tokens` may hold a speculative verify step's few tokens, which engines
# capture, and so may the q length of a decode kernel's API (FlashInfer XQA's `q_seq_len > 1` is speculative
# decoding), so `q_seq_len`/`seqlen_q` are not here either.
DEFAULT_PREFILL_LENGTHS = ("q_len", "qlen", "query_len", "query_length", "q_length")
# Flags (names, attributes, environment keys; case-insensitive globs) that are true only when debugging or
# checking: code under them does not run in captured serving.
DEFAULT_DEBUG_FLAGS = ("*debug*", "check", "check_*", "*_check", "*_check_*", "*_checks", "*validate*",
                       "*validation*", "*sanity*")
# Ops that read their data on the host by definition (an output size that depends on the data, a range or
# lengths taken from it, a host-side solver): aten's CUDA implementation synchronizes as well, so an engine
# cannot capture them whoever implements them. Findings in their implementations are warnings.
DEFAULT_DATA_DEPENDENT = ("*unique*", "nonzero", "_nonzero*", "nonzero_numpy", "nonzero_tuple", "argwhere",
                          "*masked_select*", "repeat_interleave_tensor*", "repeat_interleave_self_tensor*",
                          "*bincount*", "one_hot", "*segment_packbits*", "histc", "ctc_loss*", "*eigvals*",
                          "linalg_eig", "_linalg_eig", "choose_qparams*")
# What a function or an enclosing scope is named like when it is a test, benchmark, reference or script
# (harness-functions); and functions that engines run eagerly, before a replay (eager-functions)
DEFAULT_HARNESS = ("test_*", "Test*", "*Test", "*TestCase", "*Tester*", "*Benchmark*", "*Bench", "bench_*",
                   "benchmark*", "run_benchmark*", "run_test*", "profile_*", "timeit", "main", "_main",
                   "*_ref", "ref_*", "*_ref_*", "reference_*", "*_reference", "*Reference*")
# FlashInfer's plan step, which reads the batch's sequence lengths on the host and copies the metadata it makes to
# the device once per batch, before the captured run step (`run`/`forward`, C++ `Forward`): Python `plan` and its
# older name `begin_forward`; the C++ handler's `BeginForward` and `BeginForwardDispatched`, and the functions
# bound as the op `plan` (`BatchDecodeWithPagedKVCachePlan`, `BatchMLAPagedAttentionPlan`). Part of the
# eager-functions defaults; a C++ function eager-functions names is a plan step too, and C++ code that only plan
# steps call runs in the plan step (graphcheck.lint.cpp_callers)
PLAN_STEP = ("*.plan", "*.begin_forward", "BeginForward*", "Batch*KVCache*Plan*", "Batch*Attention*Plan*")
DEFAULT_EAGER = ("*.init_forward_metadata", "*.init_forward_metadata_out_graph",
                 "*MetadataBuilder*.build*", *PLAN_STEP, "*prepare_*metadata*", "plan_*metadata*",
                 "compute_block_sparsity", "create_block_mask", "*_cpu", "*init_workspace*", "allocate_*",
                 "get_scheduler_metadata")

# Code that engines run outside capture although a capture root reaches it (uncaptured-functions): findings there
# are warnings whose message says why. A glob without "/" matches, case-insensitively, a function's name, an
# enclosing class or function, or its file's stem; a glob with a dot the qualified name (or an enclosing prefix);
# a glob with "/" the file's path; "!glob" keeps a name (or, with "/", a path) that matches it from matching.
# Grouped by the reason the message gives; a glob in no group gives the generic reason.
UNCAPTURED_GROUPS: dict[str, tuple[str, ...]] = {
    # object lifetime: engines tear down after serving, never inside a captured forward
    "teardown": ("destroy", "destroy_*", "*_destroy", "close", "shutdown", "cleanup", "*_cleanup", "dispose",
                 "release", "teardown", "finalize", "__del__", "__exit__"),
    # engines capture decode (vLLM FULL graphs are decode-only, attention and mamba mixers are split out of its
    # piecewise graphs); prefill, chunked prefill and the chunk form of linear attention (FLA `chunk_*`,
    # `prepare_chunk_indices`, KDA `kda_chunked_*`) run eagerly. A name that also says decode stays in.
    "prefill": ("*prefill*", "chunk_*", "prepare_chunk_*", "*_chunked_*", "!*decode*"),
    # KV transfer of prefill/decode disaggregation (SGLang `srt/disaggregation/`): outside the model forward
    "disaggregation": ("*/disaggregation/*",),
    # PyTorch reference implementations named for it, reached from a kernel wrapper (not `*_fallback`: engines
    # do run fallbacks under capture)
    "reference": ("*_torch", "*_naive", "naive_*"),
    # model loading: engines load the weights (vLLM/SGLang `load_weights`, the parameters' `weight_loader`s,
    # PyTorch's `load_state_dict`), post-process them (`process_weights_after_loading`: repacking, 2:4 compression,
    # SGLang `post_load_weights`) and load the model (`ModelRunner.load_model`) once, before they capture
    "load-time": ("load_weights", "load_weights_*", "*_load_weights", "*_load_weights_*", "*after_loading*",
                  "*weight_loader*", "load_state_dict", "_load_from_state_dict", "load_model"),
}
DEFAULT_UNCAPTURED = tuple(glob for group in UNCAPTURED_GROUPS.values() for glob in group)


@dataclasses.dataclass(frozen=True)
class Config:
    select: tuple[str, ...] = ()  # empty: every rule
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = ()
    entry_points: tuple[str, ...] = ()
    custom_op_registrars: tuple[str, ...] = ()  # functions that register the function they are given
    host_names: tuple[str, ...] = DEFAULT_HOST_NAMES  # globs of variable names that hold host values
    capture_guards: tuple[str, ...] = ()  # calls true only during capture (beside is_current_stream_capturing)
    default_exclude: tuple[str, ...] = DEFAULT_EXCLUDE  # dropped under a linted directory, never when named
    vendor_exclude: tuple[str, ...] = DEFAULT_VENDOR_EXCLUDE  # non-CUDA backends, excluded like default-exclude
    third_party: tuple[str, ...] = DEFAULT_THIRD_PARTY  # folders of other projects' copies (not Python packages)
    debug_flags: tuple[str, ...] = DEFAULT_DEBUG_FLAGS  # globs of flags true only when debugging/checking
    prefill_flags: tuple[str, ...] = DEFAULT_PREFILL_FLAGS  # globs of names a prefill branch's test reads
    prefill_lengths: tuple[str, ...] = DEFAULT_PREFILL_LENGTHS  # globs of query-length names (`q_len > 1`)
    data_dependent_ops: tuple[str, ...] = DEFAULT_DATA_DEPENDENT  # qualname globs of data-dependent-size ops
    eager_functions: tuple[str, ...] = DEFAULT_EAGER  # qualname globs run before replay: not roots, not walked
    harness_functions: tuple[str, ...] = DEFAULT_HARNESS  # qualname globs of tests/benchmarks/references
    uncaptured_functions: tuple[str, ...] = DEFAULT_UNCAPTURED  # name/path globs run outside capture: warnings
    fail_on: str = "warning"
    all_functions: bool = False
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    root: Path = dataclasses.field(default_factory=Path.cwd)
    source: Path | None = None  # the file the settings came from

    def selects(self, code: str) -> bool:
        """Whether ``code`` is reported under select/ignore (per-file ignores aside).

        The tool's own codes (GC0xx: a file that could not be checked, a case that crashed, a broken
        marker) are always reported unless ``ignore`` names them in full: ``select`` and prefixes
        never hide them.
        """
        if is_tool_code(code):
            return not ignored_by(code, self.ignore)
        if self.select and not rules.matches(code, self.select):
            return False
        return not (self.ignore and rules.matches(code, self.ignore))

    def with_overrides(self, **changes: Any) -> Config:
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})


def is_tool_code(code: str) -> bool:
    """GC0xx: graphcheck's own findings, which no ``select`` and no prefix can hide."""
    return code.upper().startswith("GC0")


def ignored_by(code: str, selectors: tuple[str, ...] | list[str]) -> bool:
    """Whether ``selectors`` (an ``ignore`` list) drop ``code``: by prefix, but a GC0xx code only by its full name."""
    if is_tool_code(code):
        return code.upper() in {s.upper() for s in selectors}
    return rules.matches(code, selectors)


def parse_selectors(value: str | list | tuple, where: str) -> tuple[str, ...]:
    """Validate a list of codes or prefixes (``GC101``, ``GC1``); unknown codes are errors."""
    if isinstance(value, str):
        items = [v for v in re.split(r"[,\s]+", value) if v]
    elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        items = [v.strip() for v in value if v.strip()]
    else:
        raise ConfigError(f"{where}: expected a list of rule codes, got {value!r}")
    out = []
    for item in items:
        sel = item.upper()
        if not _CODE_SELECTOR.match(sel):
            raise ConfigError(f"{where}: {item!r} is not a rule code or prefix (like GC101 or GC1)")
        if len(sel) == 5:
            if sel not in rules.RULES:
                raise ConfigError(f"{where}: unknown rule {item!r}; `graphcheck rules` lists them")
        elif not any(code.startswith(sel) for code in rules.RULES):
            raise ConfigError(f"{where}: no rule starts with {item!r}")
        out.append(sel)
    return tuple(out)


def _str_list(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ConfigError(f"{where}: expected a list of strings, got {value!r}")


# Keys whose value is a list of strings (or one string), stored under the field of the same name.
_STR_LIST_KEYS = ("entry-points", "custom-op-registrars", "host-names", "capture-guards", "default-exclude",
                  "vendor-exclude", "third-party", "debug-flags", "prefill-flags", "prefill-lengths",
                  "data-dependent-ops", "eager-functions", "harness-functions", "uncaptured-functions")


def _root_glob(pattern: str) -> str:
    """A glob relative to the project root: ``./vendor`` is ``vendor`` (relative paths never start with ``./``)."""
    while pattern.startswith("./"):
        pattern = pattern[2:].lstrip("/")
    return pattern


def from_table(table: dict[str, Any], source: Path | None, root: Path) -> Config:
    """Build a Config from a parsed ``[tool.graphcheck]`` table, validating every key."""
    where_file = str(source) if source else "configuration"
    values: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    for raw_key, value in table.items():
        key = raw_key.replace("_", "-")
        where = f"{where_file}: [tool.graphcheck] {raw_key}"
        if key in spelled:
            raise ConfigError(f"{where_file}: [tool.graphcheck] sets {key} twice ({spelled[key]!r} and {raw_key!r})")
        spelled[key] = raw_key
        if key in ("select", "ignore"):
            values[key] = parse_selectors(value, where)
        elif key == "per-file-ignores":
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: expected a table of glob = [codes], got {value!r}")
            values["per_file_ignores"] = tuple(
                (_root_glob(glob), parse_selectors(codes, f"{where}.{glob!r}")) for glob, codes in value.items()
            )
        elif key == "exclude":
            values["exclude"] = tuple(_root_glob(glob) for glob in _str_list(value, where))
        elif key in _STR_LIST_KEYS:
            values[key.replace("-", "_")] = _str_list(value, where)
        elif key == "fail-on":
            if not isinstance(value, str) or value.lower() not in FAIL_ON:
                raise ConfigError(f"{where}: expected one of {', '.join(FAIL_ON)}, got {value!r}")
            values["fail_on"] = value.lower()
        elif key == "all-functions":
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: expected true or false, got {value!r}")
            values["all_functions"] = value
        elif key == "max-file-size":
            if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= MAX_MAX_FILE_SIZE:
                raise ConfigError(f"{where}: expected a positive number of bytes up to {MAX_MAX_FILE_SIZE}, "
                                  f"got {value!r}")
            values["max_file_size"] = value
        else:
            known = ("select, ignore, per-file-ignores, exclude, default-exclude, vendor-exclude, third-party, "
                     "entry-points, "
                     "custom-op-registrars, host-names, capture-guards, debug-flags, prefill-flags, "
                     "prefill-lengths, data-dependent-ops, eager-functions, harness-functions, uncaptured-functions, "
                     "fail-on, all-functions, max-file-size")
            raise ConfigError(f"{where_file}: unknown key {raw_key!r} in [tool.graphcheck] (known: {known})")
    return Config(root=root, source=source, **values)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: not UTF-8 ({exc.reason} at byte {exc.start})") from None


def _table_of(path: Path, data: dict[str, Any]) -> dict[str, Any] | None:
    tool = data.get("tool")
    if isinstance(tool, dict) and "graphcheck" in tool:
        table = tool["graphcheck"]
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: [tool.graphcheck] must be a table")
        return table
    if path.name == "pyproject.toml":
        return None
    return data


def load_file(path: str | Path) -> Config:
    """Read the settings in ``path`` (``--config FILE``)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    table = _table_of(path, _read_toml(path))
    return from_table(table or {}, path, path.resolve().parent)


def discover(start: str | Path | None) -> Config:
    """The nearest config walking up from ``start`` (a file or directory); defaults if none."""
    here = Path(start) if start is not None else _cwd()
    try:
        here = here.resolve()
    except OSError:
        here = Path(os.path.abspath(here))
    if not _safe(here.is_dir):
        here = here.parent
    for folder in (here, *here.parents):
        for name in ("graphcheck.toml", "pyproject.toml"):
            candidate = folder / name
            if _safe(candidate.is_file):
                table = _table_of(candidate, _read_toml(candidate))
                if table is not None:
                    return from_table(table, candidate, folder)
    return Config(root=_cwd())


def _safe(test) -> bool:
    """``Path.is_dir``/``is_file`` that is False for a path it may not look at (a folder without
    search permission) instead of raising."""
    try:
        return bool(test())
    except OSError:
        return False


def _cwd() -> Path:
    try:
        return Path.cwd()
    except OSError:
        raise ConfigError("the current directory no longer exists (or cannot be read); cd somewhere else") from None
