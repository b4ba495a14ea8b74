"""Function extents with ``#if``/``#else`` branches that each open a brace.

Cited row of docs/precision.md ("C++ findings"): FlashInfer csrc/xqa/mha.cu:3094, a
``cudaMemcpyFromSymbol`` in the one-time ``configureKernel()``, was reported inside
``copyOutputToGlobalMem`` (a function far above it) because preprocessor branches
opened more braces than they closed. A later branch (``#elif``/``#else``) whose braces
do not balance is left out of the brace count; balanced ones are kept.
"""

from __future__ import annotations

from graphcheck.lint.cpp_rules import function_regions, lint_cpp

SPLIT_HEAD = """\
#if USE_SCALE
__device__ void copy_out(float* o, float scale) {
#else
__device__ void copy_out(float* o) {
#endif
  o[0] = 1.f;
}

__global__ void kern(float* o) { copy_out(o); }

void launch_op(float* p, cudaStream_t s) {
  kern<<<1, 32, 0, s>>>(p);
  cudaStreamSynchronize(s);
}

static uint32_t configure_kernel() {
  uint32_t size;
  cudaMemcpyFromSymbol(&size, smem_size, sizeof(size));
  return size;
}
"""


def names(src: str) -> list[str | None]:
    return [r.name for r in function_regions(src)]


def test_split_heads_do_not_swallow_the_functions_below():
    assert names(SPLIT_HEAD) == ["copy_out", "kern", "launch_op", "configure_kernel"]
    found = [(f.code, f.line, f.function) for f in lint_cpp(SPLIT_HEAD, "mha.cu")]
    # the sync is in launch_op; the one-time configuration copy is in configure_kernel, off the capture path
    assert found == [("GC110", 13, "launch_op")]


def test_hazards_inside_a_later_branch_still_belong_to_their_function():
    src = """\
void op(at::Tensor x, cudaStream_t s) {
#if FAST
  kern<<<1, 1, 0, s>>>(x.data_ptr<float>());
#else
  kern<<<1, 1>>>(x.data_ptr<float>());
  cudaDeviceSynchronize();
#endif
}
"""
    assert [(f.code, f.line, f.function) for f in lint_cpp(src, "op.cu")] == [
        ("GC201", 5, "op"), ("GC110", 6, "op")]


def test_elif_nested_and_stray_directives():
    src = """\
#if A
void f(int a) {
#elif B
void f(int a, int b) {
#else
#  if C
void f() {
#  else
void f(long) {
#  endif
#endif
  g();
}
#endif
#else
void h() { k<<<1, 1>>>(); }
"""
    assert names(src) == ["f", "h"]
    assert [(f.code, f.function) for f in lint_cpp(src, "odd.cu")] == [("GC201", "h")]


def test_balanced_branches_are_unchanged():
    src = "#ifdef X\nvoid a() { k<<<1, 1>>>(); }\n#else\nvoid b() { k<<<1, 1>>>(); }\n#endif\n"
    assert names(src) == ["a", "b"]
    assert [f.function for f in lint_cpp(src, "x.cu")] == ["a", "b"]
