"""Element types as the build compiles them (issue 44 item 2): a header's `#if` that picks a
typedef is read with the including file's own `#define`s, as nvcc reads it. llm.c-style GELU
defines ENABLE_BF16 before including the header whose branch typedefs `floatX` as
`__nv_bfloat16`; fsr read it as float and refused the captured spec."""

from __future__ import annotations

from pathlib import Path

from fsr_lsp.drafting.resolver import kernel_specs
from fsr_lsp.kernels import find_kernel
from fsr_lsp.kernels.aliases import with_included_aliases
from fsr_lsp.source import SourceText

from ..support.captures import i32, ptr, write_capture

HEADER = """#pragma once
#if defined(ENABLE_BF16)
typedef __nv_bfloat16 floatX;
#elif defined(ENABLE_FP16)
typedef half floatX;
#else
typedef float floatX;
#endif
"""
GELU = """#define ENABLE_BF16
#include "common.h"
__global__ void gelu_forward(floatX* out, const floatX* inp, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) out[i] = inp[i];
}
"""


def gelu_dtypes(tmp_path: Path, source: str) -> list:
    (tmp_path / "common.h").write_text(HEADER)
    kernel = with_included_aliases(find_kernel(SourceText(source), "gelu_forward"), source, (tmp_path,))
    return [p.dtype for p in kernel.params]


def test_the_files_own_define_picks_the_headers_typedef(tmp_path):
    assert gelu_dtypes(tmp_path, GELU) == ["bfloat16", "bfloat16", "int32"]
    assert gelu_dtypes(tmp_path, GELU.replace("ENABLE_BF16", "ENABLE_FP16")) == ["float16", "float16", "int32"]
    assert gelu_dtypes(tmp_path, GELU.replace("#define ENABLE_BF16\n", "")) == ["float32", "float32", "int32"]


def test_a_capture_of_the_bf16_build_gives_a_bf16_spec(tmp_path):
    (tmp_path / "common.h").write_text(HEADER)
    (tmp_path / "gelu.cu").write_text(GELU)
    n = 4096
    record = {"id": 0, "kernel": "_Z12gelu_forwardP13__nv_bfloat16PKS_i",
              "name": "gelu_forward(__nv_bfloat16*, __nv_bfloat16 const*, int)", "base": "gelu_forward",
              "grid": [n // 256, 1, 1], "block": [256, 1, 1], "smem": 0,
              "params": [ptr(2 * n), ptr(2 * n), {"offset": 16, "size": 4, "hex": i32(n)}]}
    write_capture(tmp_path, [record])
    from fsr_lsp.capture import latest_capture

    (spec,) = kernel_specs([tmp_path / "gelu.cu"], capture=latest_capture(tmp_path))
    assert spec.origin == "captured", spec.problems
    assert "N = 4096" in spec.spec and 'out = "out[N]"' in spec.spec, spec.spec  # 2-byte elements: n of them


def test_an_include_guard_is_defined_where_it_is_not_before_the_header():
    """`#ifndef MD_H` / `#define MD_H` around a header: its types are read (a guard counted as
    defined from the start blanked the whole header), the branch the build's -D takes chosen."""
    from fsr_lsp.kernels.aliases import type_aliases

    header = ("#ifndef MD_H__\n#define MD_H__\n\n#ifdef SINGLE_PRECISION\n#define FPTYPE float\n#define POSVECTYPE float4\n"
              "#else\n#define FPTYPE double\n#define POSVECTYPE double4\n#endif\n#endif\n")
    assert type_aliases(header, {"SINGLE_PRECISION"}) == {"FPTYPE": "float", "POSVECTYPE": "float4"}
    assert type_aliases(header) == {"FPTYPE": "double", "POSVECTYPE": "double4"}
    guarded_twice = header + header.replace("MD_H__", "OTHER_H").replace("FPTYPE", "REAL").replace("POSVECTYPE", "VEC")
    assert type_aliases(guarded_twice)["REAL"] == "double"
    bang = "#if !defined(T_H)\n#define T_H\ntypedef float real_t;\n#endif\n"
    assert type_aliases(bang) == {"real_t": "float"}


def test_a_texts_types_and_structs_are_read_once_per_text_and_build():
    """A 10 MB file's 2,464 kernels each read its structs again (about 1 s each): one read per
    text and macros now; the aliases handed out are a copy each, so no caller changes another's."""
    from fsr_lsp.kernels.aliases import type_aliases
    from fsr_lsp.kernels.struct_fields import struct_declarations

    text = "typedef float real;\nstruct P { real* x; int n; };\n" + "// padding\n" * 1000
    assert struct_declarations(text) is struct_declarations(text)  # the same answer, not read again
    assert struct_declarations(text, frozenset({"X"})) is not struct_declarations(text)
    first = type_aliases(text)
    first["real"] = "double"
    assert type_aliases(text)["real"] == "float"


def test_the_texts_own_defines_passed_again_read_the_text_once():
    """Discovery reads a file's aliases without `defined`; a draft passes the file's own `#define`s
    (which count anyway): one reading serves both (0.5 s of a 10 MB file's first draft)."""
    from fsr_lsp.kernels import aliases
    from fsr_lsp.kernels.lexical import defined_macros

    text = "#define USE_HALF\n#ifdef USE_HALF\ntypedef __half real;\n#else\ntypedef float real;\n#endif\n"
    aliases._type_aliases.cache_clear()
    first = aliases.type_aliases(text)
    again = aliases.type_aliases(text, defined_macros(text.encode()) | {"USE_HALF"})
    assert first == again and first["real"] == "__half"
    assert aliases._type_aliases.cache_info().misses == 1
    assert aliases.type_aliases(text, {"OTHER"}) == first and aliases._type_aliases.cache_info().misses == 2
