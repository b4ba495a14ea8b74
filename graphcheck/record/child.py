"""The recorder inside a program started by ``graphcheck record -- python ...``.

``graphcheck record`` puts a generated ``sitecustomize.py`` first on the
program's ``PYTHONPATH`` and names a folder in ``GRAPHCHECK_RECORD_DIR``. The
``sitecustomize`` calls :func:`start_from_env`, which starts a session whose
hooks go in when the program imports torch, and writes the process's capture
map to ``<folder>/part-<pid>.json`` after a capture (at most once every
``FLUSH_SECONDS``) and at exit, so a crash loses at most the captures of the
last seconds. Child processes inherit both variables
and write their own parts; ``graphcheck record`` merges them.
"""

from __future__ import annotations

import atexit
import importlib.machinery
import importlib.util
import os
import sys
import time

ENV_DIR = "GRAPHCHECK_RECORD_DIR"
ENV_ROOT = "GRAPHCHECK_RECORD_ROOT"
#: the shortest time between two writes of a process's map part while it runs
FLUSH_SECONDS = 2.0

SITECUSTOMIZE = '''\
"""Started by `graphcheck record`: record CUDA-graph captures of this process."""
try:
    from graphcheck.record.child import start_from_env, chain_sitecustomize
except Exception as _exc:  # graphcheck is not importable from this interpreter
    import sys as _sys
    print(f"graphcheck record: cannot record this process: {type(_exc).__name__}: {_exc}", file=_sys.stderr)
else:
    start_from_env()
    chain_sitecustomize(__file__)
'''


def start_from_env() -> None:
    folder = os.environ.get(ENV_DIR)
    if not folder:
        return
    from graphcheck.record import capture_map, hooks
    from graphcheck.record.session import Session

    part = os.path.join(folder, f"part-{os.getpid()}.json")
    last = [0.0]

    def flush(session: Session) -> None:
        last[0] = time.monotonic()
        try:
            capture_map.write(capture_map.build(session), part)
        except Exception as exc:  # never break the program over its map
            print(f"graphcheck record: cannot write {part}: {type(exc).__name__}: {exc}", file=sys.stderr)

    def after_capture(session: Session) -> None:
        # rewriting the whole map after each of an engine's many captures would cost more than the
        # captures: at most once per FLUSH_SECONDS, and at exit
        if time.monotonic() - last[0] >= FLUSH_SECONDS:
            flush(session)

    session = Session(root=os.environ.get(ENV_ROOT) or os.getcwd(), on_capture_end=after_capture)
    hooks.install_when_imported(session)
    atexit.register(lambda: flush(session) if session.captures else None)


def chain_sitecustomize(ours: str) -> None:
    """Run the ``sitecustomize`` that ours shadows, if the environment has one."""
    here = os.path.dirname(os.path.abspath(ours))
    path = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        print(f"graphcheck record: the environment's sitecustomize failed: {type(exc).__name__}: {exc}",
              file=sys.stderr)
