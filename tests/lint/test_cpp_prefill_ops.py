"""A bound C++ op whose every in-tree Python use runs only through prefill (graphcheck.lint.cold_reach.cold_use):
the use sits in a prefill branch (``if q_len > 1:``, HF-style model code), in prefill code by its name
(``prefill_forward``), or in a function whose every resolved caller reaches it only through such a branch. Its
C++ errors are warnings naming the branch and the chain; one decode use keeps them. Cause: thirteenth
out-of-sample check (Quest ``prefill_with_paged_kv_cache``, KVQuant ``parallel_pack``)."""

from __future__ import annotations

from pathlib import Path

from graphcheck.config import Config
from graphcheck.lint.engine import lint_paths

OP = """\
#include <torch/extension.h>

__global__ void ragged_kernel(float* x, int n) {}

torch::Tensor ragged_attn(torch::Tensor x) {
  ragged_kernel<<<64, 256>>>(x.data_ptr<float>(), x.numel());
  return x;
}
"""
BINDING = """\
#include <torch/extension.h>
torch::Tensor ragged_attn(torch::Tensor x);

PYBIND11_MODULE(attn_ops, m) {
  m.def("ragged_attn", &ragged_attn, "ragged attention");
}
"""
# a benchmark program that times the op's C++ function
BENCH = """\
#include <torch/extension.h>
torch::Tensor ragged_attn(torch::Tensor x);

void bench_ragged_attn(torch::Tensor x) {
  ragged_attn(x);
}
"""


def model(test: str = "q_len > 1", decode: str = "out = x * 2", helper: str = "") -> str:
    return f"""\
import attn_ops
import torch


class Attention(torch.nn.Module):
    def __init__(self, num_heads):
        super().__init__()
        self.num_heads = num_heads

    def forward(self, x):
        bsz, q_len, _ = x.size()
        if {test}:
            out = attn_ops.ragged_attn(x)
        else:
            {decode}
        return out
{helper}

def capture(layer, x):
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = layer(x)
    return g, y
"""


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def cpp_findings(root: Path):
    found = lint_paths([root], Config(root=root), jobs=1, use_cache=False).findings
    return [f for f in found if f.path.endswith(".cu") and not f.code.startswith("GC0")]


def run(root: Path, text: str, **more: str):
    return cpp_findings(write(root, {"csrc/attn.cu": OP, "csrc/binding.cpp": BINDING, "pkg/model.py": text, **more}))


def test_an_op_used_only_under_a_query_length_test_gives_warnings_that_name_the_branch(tmp_path):
    found = run(tmp_path / "a", model())
    assert [(f.code, f.severity.value) for f in found] == [("GC201", "warning")]
    message = found[0].message
    assert ("`ragged_attn` runs only for prefill: every in-tree Python caller of it (through the op bound to it) "
            "calls it only through prefill, which engines do not capture (they capture decode): ") in message
    assert ("`model.py: Attention.forward` (its use runs only under `if q_len > 1:` (line 12), a prefill branch "
            "(a query of more than one token is the prompt") in message
    assert found[0].evidence["caller_check"] == "prefill only"
    # the else of the one-token test, and a prefill flag
    for name, test in (("e", "q_len == 1"), ("f", "self.is_prefill")):
        text = model(test, decode="out = attn_ops.ragged_attn(x)").replace(
            "            out = attn_ops.ragged_attn(x)\n        else:", "            out = x * 2\n        else:")
        if test == "self.is_prefill":
            text = model(test)
        got = run(tmp_path / name, text)
        assert [f.severity.value for f in got] == ["warning"], test


def test_an_op_reached_through_a_helper_or_prefill_code_names_the_chain(tmp_path):
    # a helper the forward calls only under the test: cold_reach's verdict on the helper
    helper = """

def ragged(x):
    return attn_ops.ragged_attn(x)
"""
    text = model(helper=helper).replace("out = attn_ops.ragged_attn(x)", "out = ragged(x)")
    found = run(tmp_path / "h", text)
    assert [f.severity.value for f in found] == ["warning"]
    assert ("`model.py: ragged` (it runs only through `Attention.forward`'s call under `if q_len > 1:` (line 12), "
            "a prefill branch") in found[0].message
    # prefill code by its name, called under the test: both said
    named = helper.replace("def ragged(", "def prefill_forward(")
    text = model(helper=named).replace("out = attn_ops.ragged_attn(x)", "out = prefill_forward(x)")
    found = run(tmp_path / "n", text)
    assert [f.severity.value for f in found] == ["warning"]
    assert ("`model.py: prefill_forward` (prefill code by its name: `prefill_forward` looks like a prefill path; "
            "engines capture decode; uncaptured-functions `*prefill*`; it runs only through `Attention.forward`'s "
            "call under `if q_len > 1:` (line 12)") in found[0].message


def test_a_decode_use_or_a_test_of_another_count_keeps_the_error(tmp_path):
    cases = {
        "decode": model(decode="out = attn_ops.ragged_attn(x)"),  # the decode arm uses it too
        "heads": model("self.num_heads > 1"),
        "seq": model("x.size(1) > 1 and self.seq_len > 1"),
        "wide": model("q_len > 8"),
    }
    for name, text in cases.items():
        found = run(tmp_path / name, text)
        assert [(f.code, f.severity.value) for f in found] == [("GC201", "error")], name
        assert "prefill" not in found[0].message, name


def test_a_benchmark_caller_beside_prefill_callers_is_named_and_alone_changes_nothing(tmp_path):
    found = run(tmp_path / "p", model(), **{"csrc/bench.cu": BENCH})
    assert [f.severity.value for f in found] == ["warning"]
    assert ("through prefill, which engines do not capture (they capture decode), and its other callers time "
            "kernels: `model.py: Attention.forward`") in found[0].message
    assert found[0].message.endswith("`bench_ragged_attn` (its name says it times or benchmarks kernels, which "
                                     "engines do not capture))")
    # with a decode use, or beside load-time callers only, a benchmark caller is no reason: as before
    found = run(tmp_path / "d", model(decode="out = attn_ops.ragged_attn(x)"), **{"csrc/bench.cu": BENCH})
    assert [f.severity.value for f in found] == ["error"]
    loader = model("self.num_heads > 1") + """

def load_weights(x):
    return attn_ops.ragged_attn(x)
"""
    loader = loader.replace("out = attn_ops.ragged_attn(x)", "out = x")
    found = run(tmp_path / "l", loader, **{"csrc/bench.cu": BENCH})
    assert [f.severity.value for f in found] == ["error"]
