"""``pytest --graphcheck-record=FILE``: record the captures a test run makes.

The session's hooks go in when the tests import torch. Under pytest-xdist each
worker writes ``FILE.<worker>.part`` and the controller merges the parts into
``FILE`` when the run ends.
"""

from __future__ import annotations

import glob
import json
import os
from typing import Any

from graphcheck.record import capture_map, hooks
from graphcheck.record.session import Session

_sessions: dict[int, Session] = {}


def start(config: Any) -> None:
    session = Session(root=str(config.rootpath), command=["pytest", *config.invocation_params.args])
    _sessions[id(config)] = session
    hooks.install_when_imported(session)


def finish(config: Any) -> None:
    session = _sessions.pop(id(config), None)
    if session is None:
        return
    hooks.uninstall()
    target = os.path.abspath(config.getoption("graphcheck_record"))
    worker = getattr(config, "workerinput", None)
    if worker is not None:
        if session.captures:
            capture_map.write(capture_map.build(session), f"{target}.{worker['workerid']}.part")
        return
    maps = [capture_map.build(session)] if session.captures else []
    for part in sorted(glob.glob(f"{glob.escape(target)}.*.part")):
        with open(part, encoding="utf-8") as fh:
            maps.append(json.load(fh))
        os.remove(part)
    if not maps:
        maps = [capture_map.build(session)]
    capture_map.write(capture_map.merge(maps, command=session.command), target)
