"""A large text is parsed in chunks and its tree queried in slices (so that another thread, the
server's event loop, gets the GIL in between): the same tree and the same nodes, in the same
order, as in one go."""

from tree_sitter import QueryCursor

from fsr_lsp.kernels import discover_kernels, treesitter
from fsr_lsp.source import SourceText


def large_text() -> bytes:
    one = ("template <typename T>\n__global__ void k{i}(T* y, const T* x, int n)\n{{\n"
           "    int i = blockIdx.x * blockDim.x + threadIdx.x;  // é ü\n    if (i < n) y[i] = x[i] * {i};\n}}\n"
           "void launch{i}(float* y, float* x, int n) {{ k{i}<float><<<(n + 255) / 256, 256>>>(y, x, n); }}\n")
    return "".join(one.format(i=i) for i in range(2500)).encode()


def test_chunks_and_slices_give_what_one_parse_and_one_query_give():
    data = large_text()
    assert len(data) > treesitter.YIELDING_BYTES
    chunked = treesitter.parse(data)
    whole = treesitter._parser().parse(data)
    assert str(chunked.root_node) == str(whole.root_node)
    for types in (("function_definition",), ("call_expression", "template_declaration"), ("identifier",)):
        sliced = treesitter.nodes_of(chunked.root_node, *types)
        once = sorted(QueryCursor(treesitter._query(types)).captures(whole.root_node).get("n", []),
                      key=lambda n: (n.start_byte, -n.end_byte))
        assert [(n.start_byte, n.end_byte, n.type) for n in sliced] == [(n.start_byte, n.end_byte, n.type) for n in once]
    assert len(discover_kernels(SourceText(data.decode()))) == 2500
