"""Unions as element types (kernels/structs.py): a union whose members give its bytes one layout
is that layout, so a kernel parameter `benchtype* t` (NVIDIA's GUPS sample) can be filled and
compared; a union whose members read its bytes as different floats, or cover different sizes,
stays unknown."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fsr_lsp.drafting.resolver import file_specs

from fsr_lsp.drafting.workspace import LaunchIndex
from fsr_lsp.kernels import discover_kernels
from fsr_lsp.kernels.aliases import type_aliases
from fsr_lsp.kernels.c_types import element_type
from fsr_lsp.kernels.structs import struct_types

ROOT = Path(__file__).resolve().parent.parent.parent

# NVIDIA-developer-blog/code-samples posts/gups/gups.cu, cut down, with a launch in main
GUPS = """#include <cstdint>
#include <cuda_runtime.h>

typedef enum { GUPS = 0, READS = 1 } test_t;

union benchtype
{
  uint64_t data;
};

static __global__ void d_init(size_t n, benchtype* t)
{
  for (ptrdiff_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    t[i].data = i;
}

template <test_t T_TYPE>
__global__ void d_bench(size_t n, size_t working_set, benchtype* t, int accesses_per_elem)
{
  size_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  uint64_t v = t[i].data;
  for (int a = 0; a < accesses_per_elem; a++) {
    size_t idx = (v + a * 2654435761ull) % working_set;
    if (T_TYPE == GUPS) t[idx].data ^= v; else v += t[idx].data;
  }
}

static __global__ void d_check(size_t n, benchtype* t, uint32_t* d_error)
{
  for (ptrdiff_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    if (t[i].data != i) atomicAdd(d_error, 1u);
}

int main()
{
  size_t n = 1 << 20;
  benchtype* d_t;
  uint32_t* d_error;
  cudaMalloc(&d_t, n * sizeof(benchtype));
  cudaMalloc(&d_error, sizeof(uint32_t));
  int cdiv = (n + 255) / 256;
  d_init<<<cdiv, 256>>>(n, d_t);
  d_bench<GUPS><<<cdiv, 256>>>(n, n, d_t, 4);
  d_check<<<cdiv, 256>>>(n, d_t, d_error);
  cudaDeviceSynchronize();
  return 0;
}
"""


def lanes(text: str) -> dict[str, tuple[str | None, int]]:
    return {name: element_type(spelling) for name, spelling in struct_types(text).items()}


def test_a_single_member_union_is_its_members_layout():
    assert lanes("union benchtype\n{\n  uint64_t data;\n};\n") == {"benchtype": ("uint64", 1)}
    assert lanes("union Row { float v[8]; };\nunion Pair { float2 p; };\n") == {
        "Row": ("float32", 8), "Pair": ("float32", 2)}
    # the gups file names no struct at all: the file's own aliases still see the union
    assert element_type(type_aliases(GUPS)["benchtype"]) == ("uint64", 1)


def test_a_typedefd_anonymous_union_and_a_tagged_typedefd_one_are_named():
    assert lanes("typedef union { float a; float b; } U;\n") == {"U": ("float32", 1)}
    assert lanes("typedef union tag { int x[2]; int2 y; } Both;\n") == {"tag": ("int32", 2), "Both": ("int32", 2)}


def test_members_of_one_layout_are_that_layout():
    text = ("union V { float2 v; float a[2]; struct { float x, y; } s; };\n"
            "union H { half2 h; __half a[2]; };\n"
            "#define W 4\nunion Q { uint4 q; unsigned int w[W]; };\n"
            "typedef union alignas(16) { float4 v; float a[4]; } F4;\n")
    assert lanes(text) == {"V": ("float32", 2), "H": ("float16", 2), "Q": ("uint32", 4), "F4": ("float32", 4)}


def test_integer_members_of_one_size_are_the_widest_integer_lanes_over_the_bytes():
    """Integers are compared exactly, bits as bits: lanes of any width are equal exactly when
    the bytes are, so every integer view of them is checked; the widest member's lane is used."""
    text = ("union I { uint64_t a; uint2 b; };\n"
            "union J { int a[3]; short b[6]; };\n"  # all signed: signed lanes
            "union K { int64_t a; unsigned char b[8]; };\n"  # one unsigned view: unsigned lanes
            "union L { unsigned short s[4]; uchar4 c[2]; };\n")
    assert lanes(text) == {"I": ("uint64", 1), "J": ("int32", 3), "K": ("uint64", 1), "L": ("uint16", 4)}


def test_float_views_beside_other_layouts_and_members_of_other_sizes_stay_unknown():
    text = ("union FI { float f; uint32_t u; };\n"
            "union FV { uint64_t a; float2 b; };\n"
            "union DH { double d; half4_t h; };\n"  # a member fsr cannot read
            "union Sizes { uint64_t a; uint32_t b; };\n"  # sizeof is 8: the uint32 view leaves 4 bytes
            "union Bits { unsigned a : 3; unsigned b : 3; };\n"
            "union Ptr { int* p; long long q; };\n"
            "typedef union alignas(32) { float4 v; } Padded;\n"  # sizeof is 32, not 16
            "__global__ void k(FI* a, FV* b, DH* c, Sizes* d, Bits* e, Ptr* f, Padded* g) { }\n")
    assert lanes(text) == {}
    (k,) = discover_kernels(text)
    assert [p.dtype for p in k.params] == [None] * 7


def test_a_union_inside_a_struct_is_its_layout_there():
    text = ("union benchtype { uint64_t data; };\n"
            "struct Named { union benchtype u; benchtype v[2]; };\n"
            "struct Anonymous { union { float x; float y; }; float z; };\n"
            "struct Inline { union { float2 v; float a[2]; } p; float2 q; };\n"
            "struct Vec3 { union { struct { float x, y, z; }; float v[3]; }; };\n"
            "union V2 { float2 v; };\n"
            "struct PaddedBefore { float w; V2 v; };\n"  # V2 aligns to 8: 4 bytes of padding after w
            "struct Mixed { union { float f; int i; }; float g; };\n")
    assert lanes(text) == {"benchtype": ("uint64", 1), "Named": ("uint64", 3), "Anonymous": ("float32", 2),
                           "Inline": ("float32", 4), "Vec3": ("float32", 3), "V2": ("float32", 2)}


def test_kernel_parameters_of_union_type_get_its_element_type():
    text = ("union benchtype { uint64_t data; };\ntypedef union { float a; float b; } U;\n"
            "__global__ void k(size_t n, benchtype* t, union benchtype* c_style, const U* u) { }\n")
    (k,) = discover_kernels(text)
    assert [(p.dtype, p.lanes) for p in k.params] == [("uint64", 1), ("uint64", 1), ("uint64", 1), ("float32", 1)]


def test_fsr_spec_of_the_gups_kernels_knows_the_element_type(tmp_path: Path):
    """As `fsr spec` resolves them (file_specs with the workspace's launches, no capture), and
    through the command itself: the kernels of a `benchtype*` get a spec, not "unknown"."""
    cu = tmp_path / "gups.cu"
    cu.write_text(GUPS)
    index = LaunchIndex(tmp_path, first_wait=None)
    index.use_capture(None)
    specs = {s.kernel: s for s in file_specs(index, cu.resolve(), GUPS, {cu.resolve(): GUPS})}
    assert set(specs) == {"d_init", "d_bench", "d_check"}
    for name in ("d_init", "d_bench", "d_check"):  # drafted from main's launches: sizeof(benchtype) is read
        assert specs[name].origin == "drafted", specs[name].problems
    assert 't = "out[n]"' in specs["d_init"].spec and 'template = "' in specs["d_bench"].spec
    assert not any("unknown element type" in p for s in specs.values() for p in s.problems)

    r = subprocess.run([sys.executable, "-m", "fsr_lsp.cli.main", "spec", str(cu), "--json", "--no-capture"],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path,
                       env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"})
    assert r.returncode == 0, r.stderr
    listed = {d["kernel"]: d for d in json.loads(r.stdout)}
    assert listed["d_init"]["spec"] is not None and listed["d_init"]["origin"] != "none"
    assert "unknown element type" not in r.stdout


def test_a_template_struct_of_one_anonymous_union_is_the_unions_layout():
    """OneFlow's `template <typename T, int N> struct alignas(sizeof(T) * N) Packed { union { T
    elem[N]; }; }`: the packs its elementwise templates load are N lanes of T."""
    from fsr_lsp.kernels.structs import struct_templates

    packed = ("template <typename T, int pack_size>\nstruct alignas(sizeof(T) * pack_size) Packed {\n"
              "  __device__ Packed() {}\n  union {\n    T elem[pack_size];\n  };\n};\n")
    assert struct_templates(packed) == {"Packed<T, pack_size>": "T[pack_size]"}
    mixed = packed.replace("T elem[pack_size];", "T elem[pack_size];\n    float x;")
    assert struct_templates(mixed) == {}  # members of other sizes: no one layout
