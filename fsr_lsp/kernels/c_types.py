"""C parameter text -> what the evaluator needs to know about it.

tree-sitter's `type` field holds only the base type, so both discovery paths hand the full
parameter text to `parse_param`.
"""

from __future__ import annotations

import re

from .kernel import Param

# C spelling (qualifiers removed, words joined by one space) -> (element dtype, lanes)
_SCALARS: dict[str, str] = {
    "float": "float32",
    "double": "float64",
    "__half": "float16",
    "half": "float16",
    "__nv_bfloat16": "bfloat16",
    "nv_bfloat16": "bfloat16",
    "int": "int32",
    "signed": "int32",
    "signed int": "int32",
    "int32_t": "int32",
    "unsigned": "uint32",
    "unsigned int": "uint32",
    "uint32_t": "uint32",
    "long": "int64",
    "long int": "int64",
    "long long": "int64",
    "long long int": "int64",
    "int64_t": "int64",
    "unsigned long": "uint64",
    "unsigned long long": "uint64",
    "unsigned long long int": "uint64",
    "uint64_t": "uint64",
    "size_t": "uint64",
    "short": "int16",
    "int16_t": "int16",
    "unsigned short": "uint16",
    "uint16_t": "uint16",
    "char": "int8",
    "signed char": "int8",
    "int8_t": "int8",
    "unsigned char": "uint8",
    "uint8_t": "uint8",
    "bool": "bool",
    # the short names CUDA's samples and image code typedef (after the standard ones: C_SPELLING takes the first)
    "uchar": "uint8",
    "ushort": "uint16",
    "uint": "uint32",
}

# dtype -> bytes per element, and a C spelling of it (the first listed above)
ITEMSIZE = {"float64": 8, "int64": 8, "uint64": 8, "float32": 4, "int32": 4, "uint32": 4,
            "float16": 2, "bfloat16": 2, "int16": 2, "uint16": 2, "int8": 1, "uint8": 1, "bool": 1}
C_SPELLING: dict[str, str] = {}
for _c, _d in _SCALARS.items():
    C_SPELLING.setdefault(_d, _c)

_VECTOR_BASES = {
    "float": "float32",
    "double": "float64",
    "int": "int32",
    "uint": "uint32",
    "longlong": "int64",
    "ulonglong": "uint64",
    "short": "int16",
    "ushort": "uint16",
    "char": "int8",
    "uchar": "uint8",
}

# Element types the CUDA libraries' headers name (cuComplex.h, cufft.h, curand_kernel.h)
_LIBRARY: dict[str, tuple[str, int]] = {
    "cuComplex": ("float32", 2), "cuFloatComplex": ("float32", 2), "cufftComplex": ("float32", 2),
    "cuDoubleComplex": ("float64", 2), "cufftDoubleComplex": ("float64", 2),
    "cufftReal": ("float32", 1), "cufftDoubleReal": ("float64", 1),
    # cuRAND generator states, as their bytes: a rewrite must leave every state as the original does
    **{name: ("uint8", 48) for name in ("curandState", "curandState_t", "curandStateXORWOW", "curandStateXORWOW_t")},
    **{name: ("uint8", 64) for name in ("curandStatePhilox4_32_10", "curandStatePhilox4_32_10_t")},
}

_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "struct", "union", "__grid_constant__"}


def without_qualifiers(type_text: str) -> str:
    """A declared type as its words name it, qualifiers left out: `const struct Point` -> `Point`."""
    return " ".join(w for w in type_text.split() if w not in _QUALIFIERS)
_TOKEN = re.compile(r"[A-Za-z_]\w*|::|[*&\[\]<>,()]|\d+")


def element_type(base: str) -> tuple[str | None, int]:
    """(dtype, lanes) of a C base type such as `float`, `unsigned int` or `float4`."""
    base = " ".join(base.replace("std::", "").split())
    if base in _SCALARS:
        return _SCALARS[base], 1
    if base in _LIBRARY:
        return _LIBRARY[base]
    m = re.fullmatch(r"(.+?)\s*\[(\d+)\]", base)  # a struct of one element type (kernels/structs.py)
    if m:
        dtype, lanes = element_type(m.group(1))
        return (dtype, lanes * int(m.group(2))) if dtype is not None else (None, 1)
    if base in ("__half2", "half2"):
        return "float16", 2
    if base in ("__nv_bfloat162", "nv_bfloat162"):
        return "bfloat16", 2
    m = re.fullmatch(r"([a-z]+)([1234])", base)
    if m and m.group(1) in _VECTOR_BASES:
        return _VECTOR_BASES[m.group(1)], int(m.group(2))
    return None, 1


def parse_param(text: str) -> Param:
    """Analyse one parameter declaration such as `const float* __restrict__ x`."""
    clean = " ".join(text.split())
    tokens = _TOKEN.findall(clean)
    # The name is the last identifier that is neither a qualifier nor followed by `::`.
    name_index = -1
    for i in range(len(tokens) - 1, -1, -1):
        tok = tokens[i]
        if re.fullmatch(r"[A-Za-z_]\w*", tok) and tok not in _QUALIFIERS:
            name_index = i
            break
    name = tokens[name_index] if name_index >= 0 else ""
    type_tokens = tokens[:name_index] + tokens[name_index + 1 :] if name_index >= 0 else tokens
    # A parameter with no name (`float*`): the last identifier was the type.
    if name and not any(re.fullmatch(r"[A-Za-z_]\w*", t) and t not in _QUALIFIERS for t in type_tokens):
        type_tokens, name = tokens, ""
    is_pointer = "*" in type_tokens or "[" in type_tokens
    first_ptr = next((i for i, t in enumerate(type_tokens) if t in ("*", "[")), len(type_tokens))
    stars = [i for i, t in enumerate(type_tokens) if t in ("*", "[")]
    # what the pointer points to is const: `const float* p`; for `const float** t` its pointee is a
    # `const float*`, itself writable, and `const float* const* t` points to const pointers
    pointee_const = is_pointer and "const" in type_tokens[(stars[-2] + 1 if len(stars) > 1 else 0):stars[-1]]
    base_words = [t for t in type_tokens[:first_ptr] if t not in _QUALIFIERS and t not in ("&",)]
    base = _join_type(base_words)
    dtype, lanes = element_type(base)
    if base == "void" and is_pointer:  # untyped memory (a bandwidth test, a memcpy): a buffer of bytes
        dtype, lanes = "uint8", 1
    if type_tokens.count("*") + type_tokens.count("[") > 1:
        dtype = None  # pointer to pointer: not a flat buffer we can fill
    type_text = _join_type([t for t in type_tokens if t not in ("[", "]")]) + (" *" if "[" in type_tokens else "")
    return Param(
        name=name,
        text=clean,
        type_text=type_text,
        base_type=base,
        is_pointer=is_pointer,
        pointee_const=pointee_const,
        dtype=dtype,
        lanes=lanes,
    )


def _join_type(tokens: list[str]) -> str:
    out = ""
    for tok in tokens:
        if not out or tok in ("::", "<", ">", ",", "*", "&") or out.endswith(("::", "<")):
            out += tok
        else:
            out += " " + tok
    return out.replace("*", " *").replace("  ", " ").strip()


def abi_signature(params: tuple[Param, ...]) -> tuple[tuple[str, bool], ...]:
    """What must match between an original and a candidate: base type and pointer-ness
    per position. Qualifiers (`const`, `__restrict__`) and names may change."""
    return tuple((p.base_type, p.is_pointer) for p in params)


POINTER_BYTES = 8  # a 64-bit build's pointer: its size and alignment


def layout(fields: list[tuple[int, int]]) -> tuple[list[int], int, int]:
    """Offsets of members of (size, alignment) laid out in order, the struct's size (rounded up
    to its alignment) and its alignment: the C ABI's rule, which nvcc and the host compiler share."""
    offsets, at, widest = [], 0, 1
    for size, align in fields:
        at = -(-at // align) * align
        offsets.append(at)
        at += size
        widest = max(widest, align)
    return offsets, -(-at // widest) * widest, widest


def member_size(dtype: str | None, lanes: int, is_pointer: bool) -> tuple[int, int]:
    """(size, alignment) of one member: a pointer's, or lanes of `dtype` as a CUDA vector type
    (float2 and float4 align to their size, at most 16: double4 is 16; float3 to one lane)."""
    if is_pointer:
        return POINTER_BYTES, POINTER_BYTES
    assert dtype is not None
    size = ITEMSIZE[dtype] * lanes
    return size, min(size, 16) if lanes in (2, 4) else ITEMSIZE[dtype]


def by_value_alignment(base: str, dtype: str, lanes: int) -> int:
    """The alignment of a parameter of `lanes` of `dtype` passed by value: a CUDA vector type of
    2 or 4 lanes aligns to its size (`float4` 16, `half2` 4), anything else (`float3`, a struct
    of floats) to one lane."""
    builtin = lanes > 1 and re.fullmatch(r"\w+", base.strip()) is not None and element_type(base) == (dtype, lanes)
    return member_size(dtype, lanes, False)[1] if builtin else ITEMSIZE[dtype]
