"""The `@fsr` spec: how to run a kernel. Plain records, safe to send to a worker."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..source import Span

Direction = Literal["in", "out", "inout"]
Severity = Literal["error", "warning", "info"]
SizeSet = dict[str, int]


@dataclass(frozen=True)
class Init:
    """How to fill an input buffer: uniform(lo, hi), normal() (lo = mean, hi = std),
    randint(lo, hi) (lo <= v < hi), fill (every element lo; `zeros()` is fill(0)), or captured()
    (the bytes a captured run of the program had there: structure random values lack, such as a
    scan's offsets or a CSR matrix's row pointers; at most the captured size).

    Float inputs are also checked on sets that probe their range (scaled, offset, one sign,
    ties...; evaluator/gpu/input_sets.py). A `uniform(lo, hi)` the spec's author wrote
    (`declared`) is a contract: those sets stress its edges and never pass them. fsr's own
    draws (`normal()`, and `observed(lo, hi)`, the range a captured run had) and a declared
    `normal(mean, std)`, which has no edges, are where the sets start: they go beyond, as far as
    the original stays finite. `domain(lo, hi)` after any init bounds every value drawn, the
    spec's own inputs too: the way to say that callers really pass narrow data.
    """

    kind: Literal["uniform", "normal", "randint", "fill", "captured"]
    lo: float = 0.0
    hi: float = 1.0
    declared: bool = False
    domain: tuple[float, float] | None = None

    @property
    def bounds(self) -> tuple[float, float] | None:
        """The values a caller may pass, where the spec says (a declared uniform's edges, a
        domain); None where fsr may probe beyond what it draws."""
        edges = (self.lo, self.hi) if self.declared and self.kind == "uniform" else None
        if self.domain is None:
            return edges
        if edges is None:
            return self.domain
        return max(edges[0], self.domain[0]), min(edges[1], self.domain[1])


@dataclass(frozen=True)
class BufferArg:
    name: str
    direction: Direction
    length: str  # expression over size names, in elements of the C type
    init: Init
    # `in[-3 : n + 3]`: the kernel's pointer is 3 elements into its buffer (a halo the program
    # allocated before it: `d_in + RADIUS`); `start` is the buffer's first index relative to the
    # pointer (0 or less), `stop` the text after the colon; `length` is stop - start
    start: str = "0"
    stop: str = ""
    # `in[16 bytes] captured()`: memory fsr cannot type (a struct holding pointers, a table of
    # pointers), the run's own bytes; its pointers are rebuilt at the evaluator's addresses
    unit: Literal["elements", "bytes"] = "elements"


@dataclass(frozen=True)
class TextureArg:
    """A texture object (`cudaTextureObject_t`): fsr makes the texture, fills it like an input
    buffer at every seed and passes its handle. `shape` is [W], [W, H] or [W, H, D] (a CUDA
    array, as tex1D/tex2D/tex3D read it) or, with `linear`, [N] of linear memory (tex1Dfetch)."""

    name: str
    shape: tuple[str, ...]  # expressions over size names, in texels
    texel: str  # its C type: `uchar`, `float4`, `unsigned short`
    init: Init
    linear: bool = False
    address: Literal["clamp", "wrap", "mirror", "border"] = "clamp"
    filter: Literal["point", "linear"] = "point"
    normalized: bool = False  # coordinates in [0, 1)
    read: Literal["element", "normalized"] = "element"  # integer texels read as floats in [0, 1] with "normalized"


@dataclass(frozen=True)
class ScalarArg:
    name: str
    value: str | int | float | tuple[str | int | float, ...]  # a number or an expression over size names; a tuple: one per lane (`float4 c`)


@dataclass(frozen=True)
class CapturedValueArg:
    """A parameter passed by value as a captured run passed it (`p = "captured()"`): its bytes, for a
    struct fsr cannot read member by member (a nested struct, a class, arrays of pointers); the
    memory its pointers reach comes along (evaluator/job/linked_memory.py)."""
    name: str


@dataclass(frozen=True)
class NullArg:
    """A pointer the program passes as null (`nullptr` for an optional bias): the kernel gets
    null, as it did in the run, and must not touch it."""
    name: str


@dataclass(frozen=True)
class AtArg:
    """A pointer into another parameter's buffer: at its end (`end = "end(begin)"`: a range's end,
    or an elementwise launcher's tail after its packs, `tail_r = r + n` with nothing left) or at its
    start (`out = "same(x)"`: the program passes one pointer twice, an in-place launch). It is no
    buffer of its own: the kernel gets that address at every size, so a loop to an end runs as in
    the program, a write through an alias is seen through the other, and any byte past the end is
    out of bounds."""
    name: str
    of: str
    at: Literal["start", "end"] = "end"


@dataclass(frozen=True)
class StructArg:
    """A struct passed by value whose members are scalars and pointers (`Matrix A` of
    `{ int width, height, stride; float* elements; }`): each member as a parameter would be,
    `A = { width = "N", height = "N", stride = "N", elements = "in[N * N]" }`. A pointer member
    is a buffer of its own, named `A.elements` in verdicts; the evaluator packs the members into
    the struct's bytes (kernels/struct_fields.py)."""

    name: str
    fields: tuple["BufferArg | ScalarArg | NullArg", ...]  # in the struct's member order, named by member

    def member(self, field: str) -> "BufferArg | ScalarArg | NullArg | None":
        return next((f for f in self.fields if f.name == field), None)


Arg = BufferArg | ScalarArg | TextureArg | NullArg | StructArg | CapturedValueArg | AtArg


@dataclass(frozen=True)
class Spec:
    bench: SizeSet
    tests: tuple[SizeSet, ...]
    grid: tuple[str | int, ...]  # 1 to 3 entries
    block: tuple[int, ...]  # 1 to 3 entries
    args: tuple[Arg, ...]  # in parameter order
    smem: str | int = 0
    rtol: float | None = None
    atol: float | None = None
    ref: dict[str, str] = field(default_factory=dict)
    template: str | None = None  # template arguments used to instantiate a templated kernel
    inferred: bool = False
    edge: bool = True  # add a size that is no block multiple (false: the kernel requires multiples, say)
    defines: tuple[str, ...] = ()  # macros its build defines (specs/defines.py): typed and compiled with them
    flags: tuple[str, ...] = ()  # the build's other flags that change device code (specs/build_flags.py)
    # "captured": at the bench size, the inputs a captured run saved take its own bytes at every seed
    # (a check kernel prints a line per mismatch: random inputs there print millions); tests stay random
    bench_inputs: Literal["random", "captured"] = "random"

    def arg(self, name: str) -> Arg | None:
        return next((a for a in self.args if a.name == name), None)

    def size_names(self) -> tuple[str, ...]:
        return tuple(self.bench)

    def without_launch(self) -> dict:
        """Everything a candidate's own spec may not change (all but grid, block, smem)."""
        from dataclasses import asdict

        d = asdict(self)
        for key in ("grid", "block", "smem", "inferred"):
            d.pop(key)
        return d


@dataclass(frozen=True)
class Problem:
    """A spec problem at a place in the file."""

    message: str
    span: Span
    severity: Severity = "error"
    code: str = "spec"  # a stable id for quick fixes: spec-syntax, spec-missing-arg, ...


@dataclass(frozen=True)
class SpecResult:
    spec: Spec | None  # None when an error makes the kernel unrunnable
    problems: tuple[Problem, ...]

    @property
    def errors(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity == "error")


# Default tolerances by element type, (rtol, atol): torch.testing's, so that no default is
# stricter than the one PyTorch users know. They apply where a candidate cannot be measured
# against the original run in double precision (evaluator/gpu/accuracy.py), with the absolute
# part scaled down for outputs smaller than 1. Integers must match exactly.
DEFAULT_TOLERANCE: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-7),
    "float32": (1.3e-6, 1e-5),
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
}


def tolerance(dtype: str, rtol: float | None, atol: float | None) -> tuple[float, float]:
    base = DEFAULT_TOLERANCE.get(dtype, (0.0, 0.0))
    return (base[0] if rtol is None else rtol, base[1] if atol is None else atol)


def default_init(dtype: str) -> Init:
    if dtype.startswith(("float", "bfloat")):
        return Init("normal")
    if dtype == "bool":
        return Init("randint", 0, 2)
    if dtype.startswith("uint"):
        return Init("randint", 0, 200 if dtype != "uint8" else 256)
    if dtype == "int8":
        return Init("randint", -100, 100)
    return Init("randint", -1000, 1000)


def init_spelling(init) -> str:
    """An Init as the spec writes it."""
    return _kind_spelling(init) + (f" domain({init.domain[0]:g}, {init.domain[1]:g})" if getattr(init, "domain", None)
                                   else "")


def _kind_spelling(init) -> str:
    if init.kind == "captured":
        return "captured()"
    if init.kind == "fill":  # exact for integers: an accumulator may start at INT_MAX
        return "zeros()" if init.lo == 0 else f"fill({int(init.lo)})" if float(init.lo).is_integer() else f"fill({init.lo!r})"
    if init.kind == "normal" and not init.declared and (init.lo, init.hi) == (0.0, 1.0):
        return "normal()"
    if init.kind == "randint":  # exact: a bound like 2^32 must not round
        return f"randint({int(init.lo)}, {int(init.hi)})"
    if init.kind == "uniform" and not init.declared:
        return f"observed({init.lo:g}, {init.hi:g})"
    return f"{init.kind}({init.lo:g}, {init.hi:g})"
