"""nn.Module forwards: calls through ``self.layer(x)`` are followed to the class ``__init__`` assigns to
``self.layer`` (its ``forward``, or a plain class's ``__call__``; ``self.layer.m()`` to its method), and a
module's ``forward`` is a guessed capture root of its own (engines capture model forwards whole): its
findings are warnings, errors once a root that is a fact reaches it. Attributes whose class is not known
stay unresolved, never guessed."""

from __future__ import annotations

import textwrap
from pathlib import Path

from graphcheck.config import Config
from graphcheck.lint.engine import lint_paths


def lint(root: Path, files: dict[str, str]):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    found = lint_paths([str(root)], Config(root=root), use_cache=False, jobs=1).findings
    return {(Path(f.path).name, f.line, f.code): f for f in found}


LAYERS = """\
    import torch
    from torch import nn


    class Sampler(nn.Module):
        def forward(self, probs):
            if probs.isnan().any():
                probs = probs.nan_to_num()
            return probs.argmax(-1)


    class Helper:
        def __call__(self, x):
            return x.tolist()

        def lengths(self, x):
            return x.sum().item()


    class Model(nn.Module):
        def __init__(self, flag):
            super().__init__()
            self.sampler = Sampler()
            self.helper = Helper()
            self.other = Sampler() if flag else None
            self.head = build_head()

        def forward(self, x):
            self.helper(x)
            self.helper.lengths(x)
            self.head(x)
            return self.sampler(x)


    def build_head():
        return nn.Linear(4, 4)
"""

RUNNER = """\
    import torch
    from pkg.layers import Model


    class Runner:
        def __init__(self):
            self.model = Model(True)

        def capture(self, g, x):
            with torch.cuda.graph(g):
                self.out = self.model(x)
"""


def test_a_capture_body_reaches_module_forwards_through_attributes(tmp_path):
    got = lint(tmp_path, {"pkg/__init__.py": "", "pkg/layers.py": LAYERS, "pkg/runner.py": RUNNER})
    sync = got[("layers.py", 7, "GC111")]
    assert sync.severity.value == "error"  # reached from the capture body: a fact
    assert sync.evidence["chain"] == ["pkg.layers.Model.forward", "pkg.layers.Sampler.forward"]
    assert "called inside `with torch.cuda.graph(...)` in `Runner.capture`" in sync.message
    assert got[("layers.py", 14, "GC103")].severity.value == "error"  # Helper.__call__ via self.helper(x)
    assert got[("layers.py", 17, "GC101")].severity.value == "error"  # self.helper.lengths(x)


def test_a_module_forward_alone_is_a_guessed_root(tmp_path):
    got = lint(tmp_path, {"pkg/__init__.py": "", "pkg/layers.py": LAYERS})
    sync = got[("layers.py", 7, "GC111")]
    assert sync.severity.value == "warning" and sync.evidence["reach"] == "guessed"
    assert "forward of nn.Module `Sampler`" in sync.message
    # the helpers are reached from Model.forward, itself a guess
    assert got[("layers.py", 14, "GC103")].severity.value == "warning"


def test_plain_classes_and_unknown_attributes_are_not_followed(tmp_path):
    got = lint(tmp_path, {"pkg/__init__.py": "", "pkg/plain.py": """\
        import torch


        class Sampler:  # not an nn.Module: its forward is no root
            def forward(self, probs):
                return probs.sum().item()


        class Factory(torch.nn.Module):
            def __init__(self, flag):
                super().__init__()
                self.picked = Sampler() if flag else None  # which class: not known
                self.made = make()  # a function's result: not known
                self.twice = Sampler()
                self.twice = Other()  # two classes: not known

            def forward(self, x):
                self.picked(x)
                self.made(x)
                return self.twice(x)


        class Other:
            def __call__(self, x):
                return x.cpu()


        def make():
            return Sampler()
    """})
    assert got == {}
