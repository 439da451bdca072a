"""The original kernel in double precision: the reference that accuracy is measured against.

A rewrite of a float reduction rounds differently from the original; whether it is as
accurate cannot be told by comparing the two with each other, only against something more
accurate than both. The same code with `float` promoted to `double` (types, vector types,
literals, the single-precision math functions and intrinsics) computes the same function with
rounding errors some nine digits smaller: the original's distance from it is the original's
own error, the bound a candidate is held to (`gpu/accuracy.py`).

The promotion is textual, on the code the compiler sees (comments and strings untouched), and
refused where it cannot mean the same function: bit casts of floats (`__float_as_int`, an
atomic max by compare-and-swap) and texture reads. Whatever still goes wrong (a library type
that stays float, a header the promotion does not reach) shows as a reference that disagrees
with the original, and the evaluator then falls back to a default tolerance and says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ...kernels.lexical import lex
from ..compile.compiler import KernelRef
from ..records import ArgPlan, SizePlan

# Single-precision math functions whose double version is the name without the final `f`.
_MATH_F = """acosf acoshf asinf asinhf atan2f atanf atanhf cbrtf ceilf copysignf cosf coshf cospif erfcf
erfcinvf erfcxf erff erfinvf exp10f exp2f expf expm1f fabsf fdimf floorf fmaf fmaxf fminf fmodf frexpf
hypotf ldexpf lgammaf log10f log1pf log2f logbf logf modff nearbyintf nextafterf norm3df norm4df normcdff
normcdfinvf powf rcbrtf remainderf rhypotf rintf rnorm3df rnorm4df roundf rsqrtf scalbnf sincosf sincospif
sinf sinhf sinpif sqrtf tanf tanhf tgammaf truncf""".split()

# Intrinsics and fast-math functions -> their double-precision counterpart (or a helper below).
_INTRINSICS = {
    "__expf": "exp", "__exp10f": "exp10", "__logf": "log", "__log2f": "log2", "__log10f": "log10",
    "__powf": "pow", "__sinf": "sin", "__cosf": "cos", "__tanf": "tan", "__sincosf": "sincos",
    "__fsqrt_rn": "__dsqrt_rn", "__fsqrt_rz": "__dsqrt_rz", "__fsqrt_ru": "__dsqrt_ru", "__fsqrt_rd": "__dsqrt_rd",
    "__frsqrt_rn": "rsqrt", "__fdividef": "fsr_wide_div", "fdividef": "fsr_wide_div",
    "__frcp_rn": "__drcp_rn", "__frcp_rz": "__drcp_rz", "__frcp_ru": "__drcp_ru", "__frcp_rd": "__drcp_rd",
    "__saturatef": "fsr_wide_saturate",
    **{f"__f{op}_{r}": f"__d{op}_{r}" for op in ("add", "sub", "mul", "div") for r in ("rn", "rz", "ru", "rd")},
    **{f"__fmaf_{r}": f"__fma_{r}" for r in ("rn", "rz", "ru", "rd")},
    **{f"__float2{t}_{r}": f"__double2{t}_{r}" for t in ("int", "uint", "ll", "ull") for r in ("rn", "rz", "ru", "rd")},
    "__int2float_rn": "__int2double_rn", "__uint2float_rn": "__uint2double_rn",
    "__ll2float_rn": "__ll2double_rn", "__ull2float_rn": "__ull2double_rn",
}
_RENAMES = {
    "float": "double",
    **{f"float{n}": f"double{n}" for n in range(1, 4)},
    **{f"make_float{n}": f"make_double{n}" for n in range(1, 4)},
    "float4": "fsr_double4", "make_float4": "fsr_make_double4",  # CUDA 13 deprecates plain double4
    **{name: name[:-1] for name in _MATH_F},
    **_INTRINSICS,
}
_HELPERS = {
    "fsr_double4": "#if defined(__CUDACC_VER_MAJOR__) && __CUDACC_VER_MAJOR__ >= 13\n#define fsr_double4 double4_16a\n"
                   "#define fsr_make_double4 make_double4_16a\n#else\n#define fsr_double4 double4\n"
                   "#define fsr_make_double4 make_double4\n#endif\n",
    "fsr_wide_div": "static __device__ __forceinline__ double fsr_wide_div(double a, double b) { return a / b; }\n",
    "fsr_wide_saturate": "static __device__ __forceinline__ double fsr_wide_saturate(double a) "
                         "{ return a < 0.0 ? 0.0 : (a > 1.0 ? 1.0 : a); }\n",
}
# Code that depends on a float's bits or on the texture unit: promoted, it is another function.
_UNWIDENABLE = re.compile(rb"\b(__float_as_u?int|__u?int_as_float|__float2half_as|tex[123]D\w*|texCubemap\w*|"
                          rb"surf[123]D\w*|reinterpret_cast\s*<\s*(?:unsigned\s+)?int\s*\*)")
_IDENT = re.compile(rb"[A-Za-z_]\w*")
# 1.5f, .5f, 1.f, 1e-5f, 2.5e3F: a decimal floating literal with its float suffix
_FLOAT_LITERAL = re.compile(rb"(?<![\w.])((?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)[fF](?![\w.])")
_DEFINE = re.compile(rb"^[ \t]*#[ \t]*define\b[^\n]*(?:\\\n[^\n]*)*", re.M)


def grounded_buffers(plan: SizePlan) -> set[str]:
    """Outputs the accuracy criterion can judge against a double-precision run (`gpu/accuracy.py`):
    float32 ones whose tolerance is not the spec's own; with none, no double-precision build is made."""
    return {a.name for a in plan.args if a.kind == "buffer" and a.direction != "in" and a.dtype == "float32"
            and a.tolerance == "default"}


class NotWidenable(ValueError):
    """The kernel's code cannot be promoted to double and mean the same function."""


@dataclass(frozen=True)
class Widened:
    source: str
    ref: KernelRef


def widen(source: str, ref: KernelRef) -> Widened:
    """The translation unit and the kernel's reference with float promoted to double."""
    data = source.encode()
    code = bytearray(lex(data).masked)  # offsets kept: comments, strings and directives blanked
    for m in _DEFINE.finditer(data):  # a #define's body is code too (`#define T float`)
        code[m.start():m.end()] = m.group()
    visible = bytes(code)
    bad = _UNWIDENABLE.search(visible)
    if bad:
        raise NotWidenable(f"it uses `{bad.group(1).decode()}`, whose meaning depends on a float's bits or the texture unit")
    edits = [(m.start(), m.end(), _RENAMES[m.group().decode()]) for m in _IDENT.finditer(visible)
             if m.group().decode() in _RENAMES]
    edits += [(m.start(), m.end(), m.group(1).decode()) for m in _FLOAT_LITERAL.finditer(visible)]
    if not edits:
        raise NotWidenable("it has no float arithmetic to promote")
    out, at = bytearray(), 0
    for start, end, new in sorted(edits):
        out += data[at:start] + new.encode()
        at = end
    out += data[at:]
    types = tuple(_apply_names(t) for t in ref.param_types)
    template = _apply_names(ref.template_args) if ref.template_args else ref.template_args
    used = {new for _, _, new in edits}
    helpers = "".join(text for name, text in _HELPERS.items() if name in used or name == "fsr_double4" and "fsr_make_double4" in used)
    prelude = helpers + "#line 1\n" if helpers else ""  # the file's own line numbers after the helpers
    return Widened(prelude + out.decode(), KernelRef(ref.name, template, types))


def _apply_names(text: str) -> str:
    return re.sub(r"[A-Za-z_]\w*", lambda m: _RENAMES.get(m.group(), m.group()), text)


def wide_args(plan: SizePlan) -> list[ArgPlan]:
    """The plan's arguments as the double-precision run takes them: float buffers and scalars as
    float64 (a float4 stays four lanes, now of doubles, aligned as a double4 is: 16; a float[3]
    member as doubles are: 8)."""
    return [replace(a, dtype="float64", align=_wide_align(a)) if a.dtype == "float32" and a.kind != "texture" else a
            for a in plan.args]


def _wide_align(a: ArgPlan) -> int:
    if not a.align:
        return 0
    if a.align == 4:  # a lane's alignment (an array, a float3, a struct of floats): a double's
        return 8
    return min(2 * a.align, 16)  # a vector's: its size, at most 16
