"""The struct, union and class specifiers of a text are queried once (kernels/treesitter.py
`aggregates_of`): the readers of layouts (struct types, their fields, template structs, the
structs a kernel takes) each queried a 10 MB file's tree on their own, 0.5 s a time."""

from __future__ import annotations

from fsr_lsp.kernels import discover, treesitter
from fsr_lsp.kernels.discover import _discover
from fsr_lsp.kernels.struct_fields import struct_declarations

SOURCE = """struct Pair { float a; float b; };
union Bits { float f; float g; };
class Params { public: int n; float scale; };
template <typename T, int N> struct Pack { T v[N]; };
#if 0
struct Hidden { double d; };
#endif
__global__ void k(Pair* p, Bits* b, Params q, Pack<float, 4>* packs, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { p[i].a = q.scale * p[i].b; b[i].f = 1.0f; packs[i].v[0] = 0.0f; }
}
"""


def test_one_query_a_text_serves_every_reader_of_layouts(monkeypatch):
    calls = []
    real = treesitter.nodes_of

    def counted(root, *types):
        if "struct_specifier" in types:
            calls.append(types)
        return real(root, *types)

    monkeypatch.setattr(treesitter, "nodes_of", counted)
    for cache in (_discover, struct_declarations, treesitter._aggregates):
        cache.cache_clear()
    (kernel,) = discover(SOURCE).kernels
    assert [p.dtype for p in kernel.params if p.name in ("p", "b")] == ["float32", "float32"]  # layouts read
    assert {f.name for f in next(p for p in kernel.params if p.name == "q").fields} == {"n", "scale"}
    assert len(calls) <= 2, calls  # the text as written and its active branches: once each


def test_each_reader_gets_only_the_kinds_it_asks_for():
    data = SOURCE.encode()
    kinds = {n.type for n in treesitter.aggregates_of(data, "union_specifier")}
    assert kinds == {"union_specifier"}
    names = [n.child_by_field_name("name").text.decode() for n in treesitter.aggregates_of(data, "struct_specifier")]
    assert names == ["Pair", "Pack", "Hidden"]  # in source order; the inactive one too (the raw text)
