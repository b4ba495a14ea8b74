"""Regenerate ``tests/record/data/capture-map.json`` and ``tree-map.json`` (run from the repository root):

    python tests/record/make_map.py

``capture-map.json``: three simulated captures of ``fixture/step.py`` on the
CPU (Triton's interpreter), at batch sizes 4, 8 and 16, with a kernel scalar
that differs by value (1.5, 0.5, 2.5) and not by shape.

``tree-map.json``: two simulated captures of ``fixture_tree/mini_engine`` (a
package of three modules) at batch sizes 2 and 4; the branch to the helpers in
the other modules is not taken.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "fixture"))
sys.path.insert(0, os.path.join(HERE, "fixture_tree"))


def main() -> None:
    import step
    import torch

    from graphcheck.record import capture_map
    from graphcheck.record.session import Session
    from graphcheck.trace.launches import interpreter_route

    session = Session(root=os.path.join(HERE, "fixture"), command=["python", "fixture/step.py"])
    with interpreter_route():
        for bs, scale in ((4, 1.5), (8, 0.5), (16, 2.5)):
            step.capture(torch.arange(bs, dtype=torch.float32), torch.empty(bs), scale, session)
    session.close()
    data = capture_map.build(session)
    data["root"] = "../fixture"  # relative to the map's folder
    data["environment"] = {"python": "3.11", "torch": "2.13.0+cpu", "triton": "3.9.0"}
    data["created"] = "2026-12-01T03:00:00Z"
    for cap in data["captures"]:
        cap["seconds"] = 0.01
        for launch in cap["launches"]:  # frames of this script are outside the fixture
            launch["stack"] = [loc for loc in launch["stack"] if not os.path.isabs(loc["path"])]
    os.makedirs(os.path.join(HERE, "data"), exist_ok=True)
    capture_map.write(json.loads(json.dumps(data)), os.path.join(HERE, "data", "capture-map.json"))


def tree_map() -> None:
    import torch
    from mini_engine import runner

    from graphcheck.record import capture_map
    from graphcheck.record.session import Session

    session = Session(root=os.path.join(HERE, "fixture_tree"), command=["python", "mini_engine/run.py"])
    for bs in (2, 4):
        runner.capture(torch.ones(bs, 8), session)
    session.close()
    data = capture_map.build(session)
    data["root"] = "../fixture_tree"
    data["environment"] = {"python": "3.11", "torch": "2.13.0+cpu", "triton": "3.9.0"}
    data["created"] = "2026-12-01T06:00:00Z"
    for cap in data["captures"]:
        cap["seconds"] = 0.01
    capture_map.write(json.loads(json.dumps(data)), os.path.join(HERE, "data", "tree-map.json"))


if __name__ == "__main__":
    main()
    tree_map()
