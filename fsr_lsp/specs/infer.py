"""Specs for kernels that have none, inferred when the signature is unambiguous (pointers and
exactly one integer size)."""

from __future__ import annotations

import dataclasses

from ..kernels.c_types import ITEMSIZE, element_type
from ..kernels.callees import EXTERN_SHARED, extern_shared_type
from ..kernels.kernel import Kernel
from ..source import SourceText
from .model import BufferArg, Problem, ScalarArg, Spec, SpecResult
from .texture import is_texture

BENCH_N = 1 << 24
TEST_NS = (1, 1000, 65537)
DEFAULT_BLOCK = 256
SCALAR_FLOAT = 1.5  # any valid value will do for verification; 0 and 1 hide bugs


# `extern __shared__ float s_data[];` (alignment attributes and qualifiers between): its type and name


def infer_spec(src: SourceText, kernel: Kernel) -> SpecResult:
    spec, why = infer_from_signature(kernel)
    if spec is not None:
        spec, why = _dynamic_shared(src, kernel, spec, why)
    if spec is None:
        return SpecResult(None, (Problem(
            f"{kernel.name} has no @fsr spec and one cannot be inferred: {why}. "
            "Insert a spec (quick fix) and fill in what is missing.",
            kernel.name_span, "warning", "spec-missing"),))
    return SpecResult(spec, (Problem(f"{kernel.name} has no @fsr spec; inferred: {why}",
                                     kernel.name_span, "info", "spec-inferred"),))


def infer_from_signature(kernel: Kernel) -> tuple[Spec | None, str]:
    if kernel.is_template:
        return None, "it is a template (the spec must name its template arguments)"
    pointers = [p for p in kernel.params if p.is_pointer]
    ints = [p for p in kernel.params if not p.is_pointer and p.dtype and p.dtype.startswith(("int", "uint"))]
    others = [p for p in kernel.params if not p.is_pointer and p not in ints]
    structs = [p.name for p in kernel.params if p.fields]
    if structs:
        return None, (f"{', '.join(structs)} {'is a struct' if len(structs) == 1 else 'are structs'} passed by value: "
                      f"{'its' if len(structs) == 1 else 'their'} members come from a captured run (fsr capture) or a spec's "
                      f"`{structs[0]} = {{ {kernel_member_example(kernel, structs[0])} }}`")
    if not pointers:
        return None, "it takes no pointers, so there is nothing to compare"
    textures = [p.name for p in kernel.params if is_texture(p)]
    if textures:
        return None, (f"{', '.join(textures)} {'is a texture object' if len(textures) == 1 else 'are texture objects'}: "
                      f"its shape and texel type come from a captured run (fsr capture) or a spec's "
                      f"\"texture[W, H] TYPE\"")
    unknown = [p.name for p in kernel.params if p.dtype is None]
    if unknown:
        return None, f"unknown element type of {', '.join(unknown)}"
    if len(ints) != 1:
        found = ", ".join(p.name for p in ints) or "none"
        return None, f"it needs exactly one integer size parameter to size the buffers (found: {found})"
    n = ints[0].name
    block = _block_for(kernel)
    args = []
    notes = [f"{n} is the length of every buffer", f"grid cdiv({n}, {block}), block {block}"]
    for p in kernel.params:
        if p.is_pointer:
            direction = "in" if p.pointee_const else "inout"
            args.append(BufferArg(p.name, direction, n, _default_init(p.dtype)))
        elif p is ints[0]:
            args.append(ScalarArg(p.name, n))
        else:
            args.append(ScalarArg(p.name, SCALAR_FLOAT))
    ins = [p.name for p in pointers if p.pointee_const]
    inouts = [p.name for p in pointers if not p.pointee_const]
    if ins:
        notes.append(f"{', '.join(ins)} in (const)")
    if inouts:
        notes.append(f"{', '.join(inouts)} inout (not const)")
    if others:
        notes.append(f"{', '.join(p.name for p in others)} = {SCALAR_FLOAT}")
    spec = Spec(bench={n: BENCH_N}, tests=tuple({n: t} for t in TEST_NS), grid=(f"cdiv({n}, {block})",),
                block=(block,), args=tuple(args), inferred=True)
    return spec, "; ".join(notes)


def _dynamic_shared(src: SourceText, kernel: Kernel, spec: Spec, why: str) -> tuple[Spec | None, str]:
    """A kernel that declares an `extern __shared__` array faults when launched with no dynamic
    shared memory: its inferred launch gives one element of the array's type a thread (how a
    block reduction or scan sizes it; the proof says where that is too little). A type fsr
    cannot size leaves no spec. Only the kernel's own declarations are read (a cheap look: every
    kernel of a large file is inferred)."""
    definition = src.slice(kernel.definition_span.start_byte, kernel.definition_span.end_byte)
    if "extern" not in definition:
        return spec, why
    sizes = {}
    for m in EXTERN_SHARED.finditer(definition):
        dtype, lanes = element_type(extern_shared_type(m))
        sizes[m.group("name")] = ITEMSIZE[dtype] * lanes if dtype is not None else None
    if not sizes:
        return spec, why
    unsized = [name for name, size in sizes.items() if size is None]
    if unsized:
        return None, f"it uses dynamic shared memory (`extern __shared__` {', '.join(unsized)}) of a type fsr cannot size"
    threads = spec.block[0]
    smem = threads * max(s for s in sizes.values() if s is not None)
    names = ", ".join(sizes)
    return dataclasses.replace(spec, smem=smem), f"{why}; smem {smem} bytes, one element of {names} a thread (a guess)"


def _default_init(dtype: str | None):
    from .model import default_init

    return default_init(dtype or "float32")


def _block_for(kernel: Kernel) -> int:
    bound = (kernel.launch_bounds or "").split(",")[0].strip()
    return min(DEFAULT_BLOCK, int(bound)) if bound.isdigit() else DEFAULT_BLOCK


def kernel_member_example(kernel: Kernel, name: str) -> str:
    """`width = ..., elements = "in[n]"`: what a spec gives a struct parameter's members."""
    param = next(p for p in kernel.params if p.name == name)
    return ", ".join(f'{f.name} = "in[n]"' if f.is_pointer else f"{f.name} = ..." for f in param.fields)
