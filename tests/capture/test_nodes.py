"""Kernel-name normalisation and the escaped-kernel comparison on fake node lists (CPU only)."""

import enum

import pytest

from graphcheck.capture import nodes as N
from graphcheck.capture.nodes import GraphNode


@pytest.mark.parametrize(
    "name, base",
    [
        ("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_",
         "vectorized_elementwise_kernel"),
        ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >"
         "(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)", "vectorized_elementwise_kernel"),
        ("_Z9add_sevenPKfPfi", "add_seven"),
        ("add_seven", "add_seven"),
        ("add_seven(float const*, float*, int)", "add_seven"),
        ("twice", "twice"),
        ("_ZNK3foo3barEv", "bar"),
    ],
)
def test_base_kernel_name(name, base):
    assert N.base_kernel_name(name) == base


def kernel(name):
    return GraphNode("kernel", name, (1, 1, 1), (128, 1, 1), 0)


def test_escaped_user_kernel_is_named():
    graph = [kernel("_ZN2at6native18elementwise_kernelILi128ELi2EEEviT_"), GraphNode("memcpy")]
    eager = ["void at::native::elementwise_kernel<128, 2>(int)", "add_seven", "Memcpy DtoD (Device -> Device)"]
    assert N.escaped_kernels(eager, graph) == ["add_seven"]


def test_kernel_present_under_other_spelling_is_not_escaped():
    graph = [kernel("_Z9add_sevenPKfPfi"), kernel("twice_0d1d2d")]
    assert N.escaped_kernels(["add_seven(float const*, float*, int)", "twice", "twice"], graph) == []


def test_library_kernels_are_not_compared():
    # cuBLAS may choose another kernel while capturing: not a reliable escape
    eager = ["sm90_xmma_gemm_f32f32_tn_n", "void at::native::reduce_kernel<512, 1>(int)"]
    assert N.escaped_kernels(eager, [kernel("nvjet_tst_64x8")]) == []


def test_empty_graph_escapes_everything_user():
    assert N.escaped_kernels(["add_seven", "twice"], []) == ["add_seven", "twice"]


def test_summarize_counts_kinds():
    summary = N.summarize([kernel("twice"), GraphNode("memset"), GraphNode("memcpy"), kernel("add_seven")])
    assert summary["node_count"] == 4
    assert summary["kinds"] == {"kernel": 2, "memcpy": 1, "memset": 1}
    assert summary["kernels"] == ["twice", "add_seven"]


class RtType(enum.IntEnum):
    cudaGraphNodeTypeKernel = 0
    cudaGraphNodeTypeEventRecord = 7


class DrvType(enum.IntEnum):
    CU_GRAPH_NODE_TYPE_MEM_ALLOC = 10


def test_node_kind_names_across_binding_versions():
    assert N._kind(RtType.cudaGraphNodeTypeKernel) == "kernel"
    assert N._kind(RtType.cudaGraphNodeTypeEventRecord) == "event_record"
    assert N._kind(DrvType.CU_GRAPH_NODE_TYPE_MEM_ALLOC) == "mem_alloc"


class Err(enum.IntEnum):
    cudaSuccess = 0
    cudaErrorInvalidValue = 1


def test_unwrap_tuple_results():
    assert N._unwrap("f", (Err.cudaSuccess, "x")) == "x"
    assert N._unwrap("f", (Err.cudaSuccess, [1, 2], 2)) == ([1, 2], 2)
    with pytest.raises(N.GraphInspectionError, match="f failed"):
        N._unwrap("f", (Err.cudaErrorInvalidValue, None))
