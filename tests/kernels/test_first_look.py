"""What a large document's diagnostics are first published from (kernels/discover.py:
`first_look`, `settled`), the kernels' definitions found from the places of `__global__`
(kernels/treesitter.py), and the whole-word patterns that start with the word (word_regex.py)."""

from __future__ import annotations

import re

import pytest

from fsr_lsp.kernels import discover
from fsr_lsp.kernels.discover import first_look, settled
from fsr_lsp.kernels.word_regex import word_start

TEXT = """typedef float real;
struct Pair { float a; float b; };
// __global__ void in_a_comment(float* y) {}
const char* s = "__global__ void in_a_string(float* y) {}";

/* @fsr
bench = { n = 1024 }
grid = "cdiv(n, 256)"
block = 256
[args]
y = "inout[n]"
n = "n"
*/
__global__ void plain(float* y, int n) { if (threadIdx.x < n) y[threadIdx.x] += 1.0f; }
__global__ void aliased(real* y, int n) { if (threadIdx.x < n) y[threadIdx.x] *= 2; }
__global__ void by_value(Pair p, float* y) { y[0] = p.a + p.b; }
template <typename T> __global__ void templated(T* y) { y[0] = T(1); }
namespace inner { extern "C" __global__ void wrapped(double* y) { y[0] = 1.0; } }
void host()
{
    __global__ void declared_here(float* y);  // a declaration in a host function: no kernel
}
/* @fsr
bench = { n = 1 }
*/
int not_a_kernel;
"""


def test_the_first_look_has_every_kernel_and_the_settled_ones_as_discovery_gives_them():
    whole, first = discover(TEXT), first_look(TEXT)
    names = [k.name for k in whole.kernels]
    assert names == ["plain", "aliased", "by_value", "templated", "wrapped"]
    assert [k.name for k in first.kernels] == names and first.orphan_specs == whole.orphan_specs
    assert first.orphan_specs and first.kernels[0].spec is not None
    by_name = {k.name: k for k in first.kernels}
    assert {k.name for k in first.kernels if settled(k)} == {"plain", "wrapped"}
    for k in whole.kernels:
        assert k.span == by_name[k.name].span
        if settled(by_name[k.name]):
            assert k == by_name[k.name]
    # what waits for the aliases and structs: read there, not at the first look
    assert by_name["aliased"].params[0].dtype is None
    assert next(k for k in whole.kernels if k.name == "aliased").params[0].dtype == "float32"
    assert by_name["by_value"].params[0].dtype is None  # a struct of one element type: two float lanes
    assert next(k for k in whole.kernels if k.name == "by_value").params[0].lanes == 2


@pytest.mark.parametrize("words", [("typedef",), ("__global__", "__device__"), ("const", "constexpr"), ("x",)])
def test_a_word_start_matches_where_a_leading_word_boundary_does(words):
    texts = ["typedef float x;", "mytypedef x;", "a.typedef", "_typedef", "typedef", "x typedefs",
             "__global____device__ __device__", "constexpr const consts", "1const", "é__global__ __global__",
             "über xüber über_", "\ntypedef\ttypedef"]
    slow = re.compile(r"\b(?:" + "|".join(map(re.escape, words)) + r")\w*")
    fast = re.compile(word_start(*words) + r"\w*")
    for text in texts:
        assert [m.span() for m in fast.finditer(text)] == [m.span() for m in slow.finditer(text)], text
    slow_bytes = re.compile(slow.pattern.encode())
    fast_bytes = re.compile(fast.pattern.encode())
    for text in texts:
        data = text.encode()
        assert [m.span() for m in fast_bytes.finditer(data)] == [m.span() for m in slow_bytes.finditer(data)], text
    assert fast.pattern.startswith(re.escape(words[0])) or fast.pattern.startswith("(?:" + re.escape(words[0]))


def test_a_word_start_needs_words_that_begin_with_a_word_character():
    with pytest.raises(ValueError):
        word_start("->x")
    with pytest.raises(ValueError):
        word_start("über")


def test_the_discovery_after_a_first_look_reads_the_declared_kernels_once():
    from fsr_lsp.kernels.discover import _declared

    text = TEXT + "\n// once\n"
    before = _declared.cache_info().misses
    first_look(text)
    discover(text)
    assert _declared.cache_info().misses == before + 1
