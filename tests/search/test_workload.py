import pytest

from ..support.search_helpers import context, example


@pytest.mark.parametrize("file, name, workload", [
    ("saxpy.cu", "saxpy", "elementwise"), ("matmul.cu", "matmul", "gemm"), ("softmax.cu", "softmax", "rowwise"),
    ("layernorm.cu", "layernorm", "rowwise"), ("stencil.cu", "stencil", "stencil"), ("transpose.cu", "transpose", "elementwise"),
])
def test_examples(file, name, workload):
    assert context(example(file), name).workload == workload
