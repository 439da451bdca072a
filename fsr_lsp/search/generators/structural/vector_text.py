"""The text of the vector-map rewrite (vector_map.py reads the kernel): the element-wise
statements as a `__device__` function of one element, and the kernel body that calls it for each
lane of its 128-bit vectors, with the original's one element at a time where a pointer is not
16-byte aligned and for the last elements."""

from __future__ import annotations

from dataclasses import dataclass

from ....kernels import Param

ELEMENTS = 4  # a thread's elements: one 128-bit access of 32-bit elements
_LANES = ("x", "y", "z", "w")


def elements_of(buffers: list["Buffer"]) -> int:
    """Elements a 128-bit access holds: 4 of 32 bits, 8 of 16 (`__half`, `__nv_bfloat16`)."""
    return 8 if buffers and buffers[0].bits == 16 else ELEMENTS


@dataclass
class Buffer:
    name: str
    scalar: str  # its C element type: float, int, __half or __nv_bfloat16
    vector: str  # float4 or int4; uint4 for 16-bit elements, reached through an array of eight
    const: bool
    bits: int = 32
    read: bool = False  # its element is read (or updated: `p[i] += e`)
    written: bool = False
    assigned: bool = False  # by a statement `p[i] = ...` of the element-wise statements themselves

    @property
    def loaded(self) -> bool:
        """Whether the vector path loads it first: it is read, or a lane the statements may
        leave alone must keep what memory held."""
        return self.read or not self.assigned


class Names:
    """Names the rewrite adds, none of them one the kernel uses (`fsr_` in front until free)."""

    def __init__(self, taken: set[str]) -> None:
        self.taken = set(taken)

    def fresh(self, name: str) -> str:
        while name in self.taken:
            name = "fsr_" + name
        self.taken.add(name)
        return name


@dataclass(frozen=True)
class Helper:
    """The `__device__` function of one element: an argument for each buffer's element (a
    reference where it is written), then the scalar parameters the statements use."""

    name: str
    buffers: list[Buffer]
    scalars: list[Param]

    def definition(self, kernel: str, element: dict[str, str], statements: str) -> str:
        params = [f"{b.scalar}& {element[b.name]}" if b.written else f"const {b.scalar} {element[b.name]}"
                  for b in self.buffers] + [p.text for p in self.scalars]
        return (f"// fsr: the statements of {kernel} for one element, called for each lane of its vectors\n"
                f"__device__ __forceinline__ void {self.name}({', '.join(params)})\n{{\n{statements}\n}}\n\n")

    def call(self, element: dict[str, str]) -> str:
        return f"{self.name}({', '.join([element[b.name] for b in self.buffers] + [p.name for p in self.scalars])});"


def kernel_body(helper: Helper, names: Names, index: str, index_type: str, first_value: str, bound: str) -> str:
    """The kernel's new body: the alignment check, the scalar path, the vectors, the tail."""
    first, stride, aligned = names.fresh("first"), names.fresh("stride"), names.fresh("aligned")
    vectors, v = names.fresh("vectors"), names.fresh("v")
    buffers = helper.buffers
    elements = elements_of(buffers)
    registers = {b.name: names.fresh(f"{b.name}{elements}") for b in buffers}
    lanes = {b.name: names.fresh(f"{b.name}_lanes") for b in buffers} if elements == 8 else {}
    scalar_call = helper.call({b.name: f"{b.name}[{index}]" for b in buffers})
    checks = " | ".join(f"reinterpret_cast<size_t>({b.name})" for b in buffers)
    checks = f"({checks})" if len(buffers) > 1 else checks
    kinds = "/".join(sorted({b.vector for b in buffers}))
    i = "    "
    lines = [
        "{",
        f"{i}// fsr: {elements} elements a thread through {kinds} (128-bit) loads and stores, grid-stride, and",
        f"{i}// the last {bound} % {elements} elements one at a time. A 128-bit access needs a 16-byte aligned",
        f"{i}// address and a caller may pass `p + 1`: then every element goes one at a time, grid-stride.",
        f"{i}const {index_type} {first} = {first_value};",
        f"{i}const {index_type} {stride} = gridDim.x * blockDim.x;",
        f"{i}const bool {aligned} = {checks} % 16 == 0;",
        f"{i}if (!{aligned}) {{",
        f"{i}{i}for ({index_type} {index} = {first}; {index} < {bound}; {index} += {stride})",
        f"{i}{i}{i}{scalar_call}",
        f"{i}{i}return;",
        f"{i}}}",
        f"{i}const {index_type} {vectors} = {bound} / {elements};",
        f"{i}for ({index_type} {v} = {first}; {v} < {vectors}; {v} += {stride}) {{",
    ]
    for b in buffers:
        if b.loaded:
            lines.append(f"{i}{i}{'const ' if not b.written else ''}{b.vector} {registers[b.name]} = "
                         f"reinterpret_cast<const {b.vector}*>({b.name})[{v}];")
        else:
            lines.append(f"{i}{i}{b.vector} {registers[b.name]};")
        if lanes:  # the eight 16-bit elements of the 128 bits, by reference
            lines.append(f"{i}{i}{'const ' if not b.written else ''}{b.scalar}* {lanes[b.name]} = "
                         f"reinterpret_cast<{'const ' if not b.written else ''}{b.scalar}*>(&{registers[b.name]});")
    for lane in range(elements):
        element = {b.name: f"{lanes[b.name]}[{lane}]" if lanes else f"{registers[b.name]}.{_LANES[lane]}"
                   for b in buffers}
        lines.append(f"{i}{i}{helper.call(element)}")
    for b in buffers:
        if b.written:
            lines.append(f"{i}{i}reinterpret_cast<{b.vector}*>({b.name})[{v}] = {registers[b.name]};")
    lines += [
        f"{i}}}",
        f"{i}for ({index_type} {index} = {vectors} * {elements} + {first}; {index} < {bound}; {index} += {stride})",
        f"{i}{i}{scalar_call}",
        "}",
    ]
    return "\n".join(lines) + "\n"
