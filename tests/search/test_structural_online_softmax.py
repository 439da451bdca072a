"""The online-softmax recogniser and its rewrite (one thread per row -> one warp per row, the max
and the sum in one pass): the naive softmaxes fsr ships and the spellings of their loops, what
it must leave alone, and that what it writes passes the candidate check and, where nvcc is
here, compiles. tests/search/test_rewrites_on_cpu.py verifies the rewrites against the originals."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fsr_lsp.evaluator.compile.compiler import CompileOptions, compile_kernel
from fsr_lsp.evaluator.job.prepare import kernel_ref
from fsr_lsp.search.generators.structural import patterns, structural_proposals

from ..support.search_helpers import context, relaunched

ROOT = Path(__file__).parent.parent.parent
SOFTMAXES = {
    "bench: the exponentials stored, then divided": (ROOT / "bench" / "naive_kernels" / "softmax.cu", "softmax_forward"),
    "example: the sum alone, the division stored": (ROOT / "examples" / "softmax.cu", "softmax"),
    "accuracy: a guard that returns": (Path(__file__).parent.parent / "gpu" / "kernels" / "accuracy" / "softmax.cu", "softmax"),
}
SPEC = ('/* @fsr\nbench = { n = 4096 }\ntests = [ { n = 100 } ]\ngrid = "cdiv(n, 256)"\nblock = 256\n[args]\n'
        'y = "out[n * 64]"\nx = "in[n * 64] normal(0, 2)"\nn = "n"\n*/\n')
HEAD = ("__global__ void k(float* y, const float* x, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i >= n) return;\n  const float* row = x + i * 64;\n  float* out = y + i * 64;\n"
        "  float maxval = -INFINITY;\n  for (int j = 0; j < 64; j++) maxval = fmaxf(maxval, row[j]);\n"
        "  float sum = 0.0f;\n")
STORED = "  for (int j = 0; j < 64; j++) { out[j] = expf(row[j] - maxval); sum += out[j]; }\n"
DIVISIONS = {  # the last loop, as people write it: (its text, how the rewrite divides)
    "y = y / sum": (STORED + "  for (int j = 0; j < 64; j++) out[j] = out[j] / sum;\n}\n", "/ sum;"),
    "y /= sum": (STORED + "  for (int j = 0; j < 64; j++) out[j] /= sum;\n}\n", "/ sum;"),
    "an inverse declared": (STORED + "  float inv = 1.0f / sum;\n  for (int j = 0; j < 64; j++) out[j] *= inv;\n}\n",
                            "* inv;"),
    "an inverse inline": (STORED + "  for (int j = 0; j < 64; j++) out[j] *= 1.0f / sum;\n}\n", "* (1.0f / sum);"),
    "y = y * inv": (STORED + "  const float inv = 1.0f / sum;\n  for (int j = 0; j < 64; j++) out[j] = out[j] * inv;\n}\n",
                    "* inv;"),
    "recomputed, times an inverse": ("  for (int j = 0; j < 64; j++) sum += expf(row[j] - maxval);\n  float inv = 1.0f / sum;\n"
                                     "  for (int j = 0; j < 64; j++) out[j] = expf(row[j] - maxval) * inv;\n}\n", "* inv;"),
}
# The textbook shape of real code: the kernel's body inside `if (i < N) { ... }`, the max taken by
# an `if` in braces, the exponentials stored into the output and summed back from there into a
# `double`, then divided in place by the sum cast back to float.
TEXTBOOK = """/* @fsr
bench = { N = 4096, C = 1000 }
tests = [ { N = 100, C = 37 } ]
grid = "cdiv(N, 256)"
block = 256
[args]
out = "out[N * C]"
inp = "in[N * C] normal(0, 2)"
N = "N"
C = "C"
*/
__global__ void row_softmax(float* out, const float* inp, int N, int C) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        const float* x = inp + i * C;
        float* y = out + i * C;
        float mx = -INFINITY;
        for (int j = 0; j < C; j++) {
            if (x[j] > mx) {
                mx = x[j];
            }
        }
        double total = 0.0;
        for (int j = 0; j < C; j++) {
            y[j] = expf(x[j] - mx);
            total += y[j];
        }
        for (int j = 0; j < C; j++) {
            y[j] /= (float)total;
        }
    }
}
"""
TEXTBOOK_CASTS = {"(float)total": "/ (float)total;", "(float)(total)": "/ (float)(total);",
                  "static_cast<float>(total)": "/ static_cast<float>(total);"}


NOT_SOFTMAX = {
    "a row sum": SPEC + "__global__ void k(float* y, const float* x, int n) {\n"
                 "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i >= n) return;\n  float s = 0.0f;\n"
                 "  for (int j = 0; j < 64; j++) s += x[i * 64 + j];\n  for (int j = 0; j < 64; j++) y[i * 64 + j] = s;\n}\n",
    "the max taken off after the exponential": SPEC + HEAD + "  for (int j = 0; j < 64; j++) sum += expf(row[j]) - maxval;\n"
                 "  for (int j = 0; j < 64; j++) out[j] = expf(row[j] - maxval) / sum;\n}\n",
    "no division": SPEC + HEAD + "  for (int j = 0; j < 64; j++) { out[j] = expf(row[j] - maxval); sum += out[j]; }\n}\n",
    "the division by something else": SPEC + HEAD + STORED + "  for (int j = 0; j < 64; j++) out[j] = out[j] / maxval;\n}\n",
    "another element in the sum": SPEC + HEAD + "  for (int j = 0; j < 64; j++) sum += expf(row[j + 1] - maxval);\n"
                 "  for (int j = 0; j < 64; j++) out[j] = expf(row[j] - maxval) / sum;\n}\n",
    "a statement after it": SPEC + HEAD + STORED + "  for (int j = 0; j < 64; j++) out[j] /= sum;\n  y[0] = sum;\n}\n",
    "a max that starts at zero": SPEC + HEAD.replace("-INFINITY", "0.0f") + STORED
                 + "  for (int j = 0; j < 64; j++) out[j] /= sum;\n}\n",
    "a double max": SPEC + HEAD.replace("float maxval", "double maxval") + STORED
                 + "  for (int j = 0; j < 64; j++) out[j] /= sum;\n}\n",
    "divided by a cast of something else": SPEC + HEAD + STORED
                 + "  for (int j = 0; j < 64; j++) out[j] /= (float)maxval;\n}\n",
}


def online(text: str, name: str):
    ctx = context(text, name)
    return [p for p in structural_proposals(ctx.kernel, ctx.spec, ctx.definition)
            if p.generator == "builtin:online-softmax"]


def vetted(text: str, name: str, source: str):
    """The rewrite as the evaluator takes it: its launch one warp per row, its arguments the original's."""
    return relaunched(text, name, source)


@pytest.mark.parametrize("case", sorted(SOFTMAXES))
def test_the_naive_softmaxes_get_one_pass_for_max_and_sum(case):
    path, name = SOFTMAXES[case]
    text = path.read_text()
    ctx = context(text, name)
    out = structural_proposals(ctx.kernel, ctx.spec, ctx.definition)
    assert [p.generator for p in out] == ["builtin:warp-per-row", "builtin:online-softmax"]
    p = out[1]
    assert p.note.startswith("one warp per row, online softmax: max and sum in one pass")
    assert "2 reads and 1 write of the row instead of 3 reads" in p.note
    assert "* 32, 256)" in p.source and "block = 256" in p.source and "+= 32) {" in p.source
    assert re.search(r"if \(v > (\w+)\) \{ \w+ \*= expf\(\1 - v\); \1 = v; \}", p.source)  # the running max
    assert p.source.count("__shfl_xor_sync(0xffffffffu") == 2 and "!= -INFINITY" in p.source
    assert p.source.count("for (") == 3  # one pass for max and sum, the butterfly, one pass for the outputs
    vetted(text, name, p.source)
    assert any("online softmax" in f for f in patterns(ctx.kernel, ctx.spec, ctx.definition))


def test_the_bench_softmax_is_written_as_the_brief_says():
    path, name = SOFTMAXES["bench: the exponentials stored, then divided"]
    (p,) = online(path.read_text(), name)
    assert "instead of 3 reads and 2 writes" in p.note
    assert "float maxval = -INFINITY, sum = 0.0f;" in p.source and "const float v = x[j];" in p.source
    assert "sum = sum * expf(maxval - larger) + other_sum * expf(other_max - larger);" in p.source
    assert p.source.rstrip().endswith("y[j] = expf(x[j] - maxval) / sum;\n    }\n}")
    path, name = SOFTMAXES["accuracy: a guard that returns"]
    (q,) = online(path.read_text(), name)
    assert "out[(size_t)i * C + j] = expf(x[j] - maxval) / sum;" in q.source and "3 reads and 1 write" in q.note


@pytest.mark.parametrize("case", sorted(DIVISIONS))
def test_the_division_is_kept_as_the_original_writes_it(case):
    tail, divides = DIVISIONS[case]
    text = SPEC + HEAD + tail
    (p,) = online(text, "k")
    assert f"out[j] = expf(row[j] - maxval) {divides}" in p.source, p.source
    assert ("float inv = 1.0f / sum;" in p.source) == ("float inv" in tail)
    vetted(text, "k", p.source)


def test_the_exponential_is_the_originals():
    text = SPEC + HEAD.replace("maxval = fmaxf(maxval, row[j]);", "if (row[j] > maxval) maxval = row[j];") \
        + STORED.replace("expf", "__expf") + "  for (int j = 0; j < 64; j++) out[j] /= sum;\n}\n"
    (p,) = online(text, "k")
    assert p.source.count("__expf(") == p.source.count("expf(") >= 5  # none of them expf
    vetted(text, "k", p.source)


def test_a_name_the_kernel_uses_is_not_taken_for_the_rewrites_own():
    text = SPEC + HEAD.replace("const float* row", "const float* v").replace("row[j]", "v[j]") + \
        STORED.replace("row[j]", "v[j]") + "  for (int j = 0; j < 64; j++) out[j] /= sum;\n}\n"
    (p,) = online(text, "k")
    assert "const float fsr_v = v[j];" in p.source
    vetted(text, "k", p.source)


@pytest.mark.parametrize("case", sorted(NOT_SOFTMAX))
def test_what_is_no_naive_softmax_gets_no_online_softmax(case):
    assert online(NOT_SOFTMAX[case], "k") == [], case


def test_layernorm_gets_no_online_softmax():
    text = (ROOT / "bench" / "naive_kernels" / "layernorm.cu").read_text()
    assert online(text, "layernorm_forward") == []
    ctx = context(text, "layernorm_forward")
    assert not any("online softmax" in f for f in patterns(ctx.kernel, ctx.spec, ctx.definition))


@pytest.mark.nvcc
@pytest.mark.parametrize("case", sorted(SOFTMAXES))
def test_the_rewrite_compiles(case):
    path, name = SOFTMAXES[case]
    text = path.read_text()
    (p,) = online(text, name)
    kernel, spec, checked = vetted(text, name, p.source)
    compiled = compile_kernel(checked.source, kernel_ref(kernel, spec), CompileOptions(arch="sm_90a", compiler="nvcc"))
    assert compiled.ok, compiled.log


@pytest.mark.parametrize("cast", sorted(TEXTBOOK_CASTS))
def test_the_textbook_shape_a_double_sum_divided_by_its_cast_gets_the_online_softmax(cast):
    """Real code's spelling (issue 45): the double accumulator stays double in the rewrite (the
    original's accuracy), its lanes' sums shuffled as doubles, and the division keeps the cast."""
    text = TEXTBOOK.replace("(float)total", cast)
    (p,) = online(text, "row_softmax")
    assert "double total = 0.0;" in p.source and "const double other_sum = __shfl_xor_sync" in p.source
    assert "float mx = -INFINITY;" in p.source
    assert re.search(r"y\[j\] = expf\(x\[j\] - mx\) " + re.escape(TEXTBOOK_CASTS[cast]), p.source), p.source
    vetted(text, "row_softmax", p.source)  # the candidate check takes it, one warp per row
