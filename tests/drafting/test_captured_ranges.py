"""Inputs drawn in the range a captured run's own data had: a histogram over letters gets
letters, an accumulator the program zeroed starts at zero, a constant input stays random."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from fsr_lsp.capture import latest_capture
from fsr_lsp.drafting.captured_ranges import captured_values, init_from_values
from fsr_lsp.kernels.c_types import ITEMSIZE
from fsr_lsp.drafting.resolver import kernel_specs
from fsr_lsp.kernels import discover_kernels
from fsr_lsp.specs import Init, parse_spec, render_spec
from fsr_lsp.specs.model import init_spelling
from fsr_lsp.source import SourceText

from ..support.captures import i32, ptr, write_capture

HISTOGRAM = """__global__ void histogram(char *a, int *result, float *w, const float *mask, int N) {
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  for (int i = tid; i < N; i += gridDim.x * blockDim.x)
    atomicAdd(&result[(a[i] - 'a') / 4], 1);
  if (tid < N) w[tid] *= mask[tid];
}
"""


def histogram_capture(tmp_path: Path, letters: bytes, counts: list[int], weights: list[float], mask: float) -> Path:
    n = len(letters)
    record = {"id": 0, "kernel": "_Z9histogramPcPiPfPKfi", "name": "histogram(char*, int*, float*, float const*, int)",
              "base": "histogram", "grid": [(n + 255) // 256, 1, 1], "block": [256, 1, 1], "smem": 0,
              "params": [ptr(n), ptr(4 * len(counts)), ptr(4 * n), ptr(4 * n), {"offset": 32, "size": 4, "hex": i32(n)}],
              "snapshot": {"0": "in-0.bin", "1": "in-1.bin", "2": "in-2.bin", "3": "in-3.bin"}}
    folder = write_capture(tmp_path, [record])
    (folder / "in-0.bin").write_bytes(letters)
    (folder / "in-1.bin").write_bytes(struct.pack(f"<{len(counts)}i", *counts))
    (folder / "in-2.bin").write_bytes(struct.pack(f"<{n}f", *weights))
    (folder / "in-3.bin").write_bytes(struct.pack(f"<{n}f", *[mask] * n))
    (tmp_path / "h.cu").write_text(HISTOGRAM)
    return folder


def captured_spec_of(tmp_path: Path):
    (spec,) = kernel_specs([tmp_path / "h.cu"], capture=latest_capture(tmp_path))
    return spec


def test_data_dependent_indices_are_drawn_in_the_runs_range_and_the_spec_parses_back(tmp_path: Path):
    letters = bytes(ord("a") + i % 26 for i in range(1000))
    histogram_capture(tmp_path, letters, [0] * 7, [0.5 + (i % 10) / 4 for i in range(1000)], 1.0)
    spec = captured_spec_of(tmp_path)
    assert spec.origin == "captured", spec.problems
    assert 'a = "in[N] randint(97, 123)"' in spec.spec  # letters, not random bytes that index before `result`
    assert "zeros()" in spec.spec.split("result", 1)[1].splitlines()[0]  # the program zeroed its bins
    assert "observed(0.5, 2.75)" in spec.spec  # weights drawn in their range, not bound to it
    assert "mask" in spec.spec and "normal()" in spec.spec.split("mask", 1)[1].splitlines()[0]  # a constant stays random
    assert "whole numbers in [97, 122]" in spec.provenance["a"]
    assert spec.spec.splitlines()[1].startswith("# captured by fsr")  # the origin line is kept
    src = SourceText(spec.spec + HISTOGRAM)
    parsed = parse_spec(src, discover_kernels(src.text)[0]).spec
    assert parsed is not None and parsed.arg("a").init == Init("randint", 97, 123)


def test_an_unreadable_or_short_snapshot_keeps_the_default_inputs(tmp_path: Path):
    folder = histogram_capture(tmp_path, bytes(ord("a") + i % 26 for i in range(1000)), [0] * 7, [1.5] * 1000, 1.0)
    (folder / "in-0.bin").write_bytes(b"ab")  # shorter than the buffer
    (folder / "in-1.bin").unlink()
    spec = captured_spec_of(tmp_path)
    assert 'a = "in[N] randint(0, 7)"' in spec.spec  # the static guess: a[i] indexes `result`
    assert 'result = "inout[7] randint(-1000, 1000)"' in spec.spec
    assert 'w = "inout[N] fill(1.5)"' in spec.spec  # what could be read still counts


@pytest.mark.parametrize("dtype, data, direction, expected", [
    ("int32", struct.pack("<3i", -5, 0, 7), "in", Init("randint", -5, 8)),
    ("uint32", struct.pack("<2I", 0, 2**32 - 1), "in", Init("randint", 0, 2**32)),
    ("float32", struct.pack("<3f", 0.0, 1.0, 1.0), "in", Init("randint", 0, 2)),  # flags held as floats
    ("float32", struct.pack("<3f", 0.25, float("nan"), 4.0), "in", Init("uniform", 0.25, 4.0)),
    ("float16", struct.pack("<3e", -1.5, 0.0, 2.5), "in", Init("uniform", -1.5, 2.5)),
    ("float32", struct.pack("<2f", 3.0, 3.0), "inout", Init("fill", 3.0)),
    ("float32", struct.pack("<2f", 3.0, 3.0), "in", None),
    ("uint64", struct.pack("<2Q", 0, 2**64 - 1), "in", None),  # a hash: no range torch can draw
    ("float32", struct.pack("<2f", 0.0, 3.4e38), "in", None),  # FLT_MAX as a sentinel
])
def test_ranges_by_element_type(tmp_path: Path, dtype, data, direction, expected):
    path = tmp_path / "x.bin"
    path.write_bytes(b"\0" * 8 + data)
    size = ITEMSIZE[dtype]
    values = captured_values(f"8:{path}", len(data) // size, dtype)
    found = init_from_values(values, dtype, direction)
    assert (found[0] if found else None) == expected


def test_bfloat16_values_are_read_from_their_high_halves(tmp_path: Path):
    path = tmp_path / "x.bin"
    path.write_bytes(struct.pack("<f", -2.0)[2:] + struct.pack("<f", 6.5)[2:])
    assert list(captured_values(f"0:{path}", 2, "bfloat16")) == [-2.0, 6.5]
    assert captured_values(f"0:{path}", 3, "bfloat16") is None  # short
    assert captured_values(f"0:{tmp_path / 'missing.bin'}", 1, "int32") is None


def test_integer_bounds_and_edge_survive_rendering():
    src = SourceText('/* @fsr\nbench = { n = 8 }\ngrid = 1\nblock = 8\nedge = false\n[args]\n'
                     'x = "in[n] randint(0, 4294967296)"\nn = "n"\n*/\n__global__ void k(unsigned* x, int n) {}\n')
    spec = parse_spec(src, discover_kernels(src.text)[0]).spec
    text = render_spec(spec)
    assert "randint(0, 4294967296)" in text and "edge = false" in text
    assert init_spelling(Init("fill", 2147483647, 2147483647)) == "fill(2147483647)"
    assert init_spelling(Init("fill", 2.5, 2.5)) == "fill(2.5)"
    again = SourceText(text + "__global__ void k(unsigned* x, int n) {}\n")
    assert parse_spec(again, discover_kernels(again.text)[0]).spec == spec


def test_a_spec_of_the_users_own_gets_the_saved_bytes_it_asks_for_and_no_more(tmp_path: Path):
    folder = histogram_capture(tmp_path, bytes(ord("a") + i % 26 for i in range(1000)), [0] * 7, [1.5] * 1000, 1.0)
    own = ('/* @fsr\nbench = { N = 1000 }\ngrid = 4\nblock = 256\nedge = false\n[args]\n'
           'a = "in[N] captured()"\nresult = "inout[7] zeros()"\nw = "inout[N]"\nmask = "in[N]"\nN = "N"\n*/\n')
    (tmp_path / "h.cu").write_text(own + HISTOGRAM)
    spec = captured_spec_of(tmp_path)
    assert spec.origin == "attached" and spec.inputs == {"a": f"0:{folder / 'in-0.bin'}"}
    (tmp_path / "h.cu").write_text(own.replace(" captured()", "") + HISTOGRAM)
    assert captured_spec_of(tmp_path).inputs == {}
