"""Reading the offending source lines for a report (lazily, once per file)."""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=256)
def _lines(path: str) -> tuple[str, ...]:
    from graphcheck.lint.files import read_regular

    try:
        data = read_regular(path, 10 * 1024 * 1024)  # never a FIFO or device: the read could block
    except OSError:
        return ()
    if b"\x00" in data[:8192]:
        return ()
    return tuple(data.decode("utf-8", errors="replace").splitlines())


def context(path: str, line: int, before: int = 1, after: int = 1) -> list[tuple[int, str]]:
    """``(line number, text)`` around ``line`` (1-based); empty when the file cannot be read."""
    lines = _lines(path)
    if not lines or line < 1 or line > len(lines):
        return []
    lo, hi = max(1, line - before), min(len(lines), line + after)
    return [(n, lines[n - 1].expandtabs(4)) for n in range(lo, hi + 1)]


def display_col(path: str, line: int, col: int) -> int:
    """Where 0-based character column ``col`` of ``line`` falls once :func:`context` expands the tabs."""
    lines = _lines(path)
    if not lines or line < 1 or line > len(lines):
        return col
    return len(lines[line - 1][: max(0, col)].expandtabs(4))


def clear() -> None:
    _lines.cache_clear()
