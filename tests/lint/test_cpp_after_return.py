"""C++ code below an unconditional ``return`` of its own block never runs: no finding there. A return that is
the body of an ``if`` without braces, or one followed by another ``case`` label, leaves the code after it live."""

from __future__ import annotations

from graphcheck.lint.cpp_rules import lint_cpp

HEAD = "#include <torch/extension.h>\n__global__ void k(float* x) {}\n"


def syncs(body: str) -> list[int]:
    return sorted(f.line for f in lint_cpp(HEAD + body, "ops.cu") if f.code == "GC110")


def test_a_sync_below_a_return_is_dead():
    assert syncs('''
std::tuple<int, int> f(float* x, cudaStream_t s) {
  k<<<1, 32, 0, s>>>(x);
  return std::make_tuple(1, 2);
  cudaDeviceSynchronize();
}
''') == []


def test_a_sync_above_the_return_fires():
    assert syncs('''
int f(float* x, cudaStream_t s) {
  k<<<1, 32, 0, s>>>(x);
  cudaDeviceSynchronize();
  return 1;
}
''') == [6]


def test_a_conditional_return_leaves_the_rest_live():
    assert syncs('''
int g(float* x, bool c, cudaStream_t s) {
  k<<<1, 32, 0, s>>>(x);
  if (c) return 0;
  cudaDeviceSynchronize();
  if (c) { return 2; }
  cudaStreamSynchronize(s);
  return 1;
}
''') == [7, 9]


def test_a_later_case_label_is_reachable():
    assert syncs('''
int h(float* x, int c, cudaStream_t s) {
  k<<<1, 32, 0, s>>>(x);
  switch (c) {
    case 0:
      return 0;
    case 1:
      cudaDeviceSynchronize();
  }
  return 1;
}
''') == [10]


def test_a_return_inside_a_lambda_does_not_end_the_function():
    assert syncs('''
int f(float* x, cudaStream_t s) {
  auto pick = [](int v) { return v * 2; };
  k<<<1, 32, 0, s>>>(x);
  cudaDeviceSynchronize();
  return pick(1);
}
''') == [7]
