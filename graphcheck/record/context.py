"""``with graphcheck.recording("capture-map.json"):`` for programs that capture in-process."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from graphcheck.record import capture_map, hooks
from graphcheck.record.session import Session


@contextlib.contextmanager
def recording(path: str | None = "capture-map.json", *, root: str | None = None,
              graphs_module: object = None) -> Iterator[Session]:
    """Record every CUDA-graph capture made inside the block.

    The capture map is written to ``path`` when the block ends (also when it
    raises); ``path=None`` writes nothing, and the :class:`Session` yielded holds
    the captures and findings. Paths in the map are relative to ``root``
    (default: the current directory). ``graphs_module`` replaces
    ``torch.cuda.graphs`` (for tests without a GPU).
    """
    session = Session(root=root)
    hooks.install(session, graphs_module)
    try:
        yield session
    finally:
        if session.capturing:  # the block left in the middle of a capture
            session.end(None, None)
        hooks.uninstall()
        if path is not None:
            capture_map.write(capture_map.build(session), path)
