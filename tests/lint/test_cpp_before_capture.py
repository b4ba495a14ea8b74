"""Code that runs only before a capture begins is not recorded by it (issue #11; eighteenth out-of-sample check,
PowerInfer row 17: ggml's graph compute refreshes its copy pointers, which may synchronize, and then begins the
capture). A C++ function every caller chain of which calls it in a function before that function's
``cudaStreamBeginCapture``/``capture_begin`` gets warnings that name the function and the begin. A call after the
begin, a begin inside a loop (the next iteration's call follows the last begin) and a call inside a lambda (which
may run later) keep the error."""

from __future__ import annotations

from pathlib import Path

from lint_trees import make

from graphcheck.config import Config
from graphcheck.lint.engine import lint_paths

COPY = """\
    #include <cuda_runtime.h>
    struct Graph { char** dest_ptrs; int dest_ptrs_size; };

    void refresh_dest_ptrs(Graph* g, int n, cudaStream_t stream) {
      if (g->dest_ptrs_size < n) {
        cudaStreamSynchronize(stream);
        cudaFree(g->dest_ptrs);
        g->dest_ptrs_size = n;
      }
    }
"""
BACKEND = """\
    #include <cuda_runtime.h>
    struct Graph;
    struct Ctx { cudaStream_t stream; cudaGraph_t graph; int n; };
    void refresh_dest_ptrs(Graph* g, int n, cudaStream_t stream);
    __global__ void node_kernel(int* o) {}

    static bool check_and_refresh(Ctx* ctx, Graph* g) {
      refresh_dest_ptrs(g, ctx->n, ctx->stream);
      return true;
    }

    static void evaluate_and_capture(Ctx* ctx, Graph* g, int* o) {
      node_kernel<<<1, 1, 0, ctx->stream>>>(o);
      AFTER
      cudaStreamEndCapture(ctx->stream, &ctx->graph);
    }

    static int graph_compute(Ctx* ctx, Graph* g, int* o) {
      bool use_graph = check_and_refresh(ctx, g);
      if (use_graph) {
        cudaStreamBeginCapture(ctx->stream, cudaStreamCaptureModeRelaxed);
      }
      evaluate_and_capture(ctx, g, o);
      return 0;
    }

    struct Iface { int (*compute)(Ctx*, Graph*, int*); };
    static Iface iface = { graph_compute };
"""


def copy_findings(tmp_path: Path, backend: str = BACKEND, after: str = "") -> list[tuple[int, str, str, str]]:
    root = make(tmp_path / "t", {"src/cpy.cu": COPY, "src/backend.cu": backend.replace("AFTER", after)})
    found = lint_paths([str(root)], Config(root=root), use_cache=False, jobs=1).findings
    return sorted((f.line, f.code, f.severity.value, f.message) for f in found if Path(f.path).name == "cpy.cu")


def test_a_sync_only_the_preparation_before_the_begin_calls_is_a_warning(tmp_path):
    got = copy_findings(tmp_path)
    assert [(line, code, sev) for line, code, sev, _ in got] == [(6, "GC110", "warning")]
    assert ("`refresh_dest_ptrs` runs only in code called before the capture begins in `graph_compute` (begins at "
            "backend.cu:21)") in got[0][3]


def test_a_call_after_the_begin_keeps_the_error(tmp_path):
    got = copy_findings(tmp_path, after="check_and_refresh(ctx, g);")
    assert [(line, code, sev) for line, code, sev, _ in got] == [(6, "GC110", "error")]


def test_a_begin_in_a_loop_keeps_the_error(tmp_path):
    looped = BACKEND.replace("if (use_graph) {", "for (int i = 0; i < 2; ++i) {")
    assert looped != BACKEND
    got = copy_findings(tmp_path, looped)
    assert [(line, code, sev) for line, code, sev, _ in got] == [(6, "GC110", "error")]


def test_a_call_in_a_lambda_before_the_begin_keeps_the_error(tmp_path):
    deferred = BACKEND.replace("bool use_graph = check_and_refresh(ctx, g);",
                               "auto later = [&]() { return check_and_refresh(ctx, g); }; bool use_graph = true;")
    assert deferred != BACKEND
    got = copy_findings(tmp_path, deferred)
    assert [(line, code, sev) for line, code, sev, _ in got] == [(6, "GC110", "error")]
