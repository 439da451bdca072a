"""Which configurations of a kernel the tuner may try: every legal launch shape, and the code
changes that keep the kernel's meaning (restrict/const, a grid-stride loop over a grid of
resident blocks, launch bounds, unroll factors, the block size as a constant, fast math)."""

from __future__ import annotations

import dataclasses
import random
import re
from dataclasses import dataclass

from ....evaluator.records import GpuInfo
from ....kernels import Kernel
from ....specs import Spec
from ....specs.expr import has_literal
from .transforms import grid_stride_site, has_loops, privatizable, uses_block_dim

MAX_THREADS = 1024
BLOCKS_2D_X = (8, 16, 32, 64, 128)
UNROLL = (2, 4, 8)
WAVES = (1, 2, 4)  # grid = SMs x resident blocks per SM x waves
MIN_BLOCKS = (1, 2, 4)
# Config field -> the Space attribute holding its values.
KNOBS = {"block": "blocks", "restrict": "restrict", "grid_stride_waves": "waves", "unroll": "unroll",
         "min_blocks": "min_blocks", "static_block": "static_block", "fast_math": "fast_math", "privatize": "privatize"}


@dataclass(frozen=True)
class Config:
    """One point of the space; every field at its default is the original kernel."""

    block: tuple[int, ...] | None = None  # None: the original's
    restrict: str = ""  # "", "restrict" (every pointer), "const" (restrict, and const on read-only ones)
    grid_stride_waves: int | None = None
    unroll: int | None = None  # #pragma unroll factor on the loops
    min_blocks: int | None = None  # __launch_bounds__(threads, min_blocks)
    static_block: bool = False  # blockDim.* as the launch's numbers
    fast_math: bool = False
    privatize: bool = False  # atomicAdds into a small buffer go through a per-block shared copy

    def describe(self) -> str:
        parts = []
        if self.block:
            parts.append("block " + "x".join(map(str, self.block)))
        if self.restrict:
            parts.append("const __restrict__" if self.restrict == "const" else "__restrict__")
        if self.grid_stride_waves:
            parts.append(f"grid-stride over {self.grid_stride_waves} wave{'s' * (self.grid_stride_waves > 1)} "
                         "of resident blocks")
        if self.unroll:
            parts.append(f"#pragma unroll {self.unroll}")
        if self.min_blocks:
            parts.append(f"__launch_bounds__ min {self.min_blocks} blocks" if self.min_blocks > 1 else "__launch_bounds__")
        if self.privatize:
            parts.append("atomics privatised in shared memory")
        if self.static_block:
            parts.append("blockDim as a constant")
        if self.fast_math:
            parts.append("-use_fast_math")
        return ", ".join(parts) or "original"

    def only_block(self) -> bool:
        return self == Config(block=self.block)


@dataclass(frozen=True)
class Space:
    """The values each knob may take (the first of each is the original's)."""

    original_block: tuple[int, ...]
    blocks: tuple[tuple[int, ...] | None, ...] = (None,)
    restrict: tuple[str, ...] = ("",)
    waves: tuple[int | None, ...] = (None,)
    unroll: tuple[int | None, ...] = (None,)
    min_blocks: tuple[int | None, ...] = (None,)
    static_block: tuple[bool, ...] = (False,)
    fast_math: tuple[bool, ...] = (False, True)
    privatize: tuple[bool, ...] = (False,)
    private: tuple[str, str, int] | None = None  # the buffer privatize applies to: name, type, length
    const_names: frozenset[str] = frozenset()  # read-only pointer parameters
    max_threads_per_sm: int = 2048

    @property
    def size(self) -> int:
        n = 1
        for values in self._values().values():
            n *= len(values)
        return n

    def threads(self, c: Config) -> int:
        n = 1
        for b in c.block or self.original_block:
            n *= b
        return n

    def legal(self, c: Config) -> bool:
        threads = self.threads(c)
        if c.min_blocks and c.min_blocks * threads > self.max_threads_per_sm:
            return False
        return threads <= MAX_THREADS

    def block_configs(self) -> list[Config]:
        """The sweep: every launch shape, nothing else changed; powers of two first, since
        other shapes break kernels that assume them, and a break can cost a worker restart."""
        shapes = [Config(block=b) for b in self.blocks if b is not None]
        return sorted(shapes, key=lambda c: self.shape_class(c) == "odd")

    def shape_class(self, c: Config) -> str:
        """"odd" for a launch shape with a dimension that is not a power of two: kernels that
        halve a stride or a tree over the block break on all of those at once."""
        return "usual" if all(n & (n - 1) == 0 for n in c.block or self.original_block) else "odd"

    def neighbours(self, c: Config) -> list[Config]:
        """One knob changed; launch shapes only to nearby ones (within a factor of two). Atomics
        privatised where each block still takes one element a thread are grid-strided too: a
        block's shared copy only pays once it gathers many elements (alone, privatising adds a
        flush of every bin per block and is slower, so annealing would never step onto it)."""
        out = []
        for field, values in self._values().items():
            current = getattr(c, field)
            for v in values:
                if v == current or (field == "block" and not self._near(c.block, v)):
                    continue
                n = dataclasses.replace(c, **{field: v})
                if field == "privatize" and v and n.grid_stride_waves is None and len(self.waves) > 1:
                    n = dataclasses.replace(n, grid_stride_waves=self.waves[1])
                if self.legal(n):
                    out.append(n)
        return out

    def restructured(self) -> list[Config]:
        """The original with its work split anew (atomics privatised over a grid stride, each
        wave count), measured beside the launch shapes at the start: the gain of a new split can
        be tens of times, and only shows with its knobs together."""
        if True not in self.privatize:
            return []
        return [c for w in self.waves if w is not None
                if self.legal(c := Config(privatize=True, grid_stride_waves=w))]

    def random(self, rng: random.Random) -> Config:
        for _ in range(100):
            c = Config(**{f: rng.choice(v) for f, v in self._values().items()})
            if self.legal(c):
                return c
        return Config()

    def _values(self) -> dict[str, tuple]:
        return {f: getattr(self, attr) for f, attr in KNOBS.items()}

    def _near(self, a: tuple[int, ...] | None, b: tuple[int, ...] | None) -> bool:
        a, b = a or self.original_block, b or self.original_block
        return all(max(x, y) <= 2 * min(x, y) for x, y in zip(a, b))


def space_of(kernel: Kernel, spec: Spec, definition: str, gpu: GpuInfo) -> Space:
    body = definition[definition.find("{"):]
    block = tuple(int(b) for b in spec.block)
    pointers = [p for p in kernel.params if p.is_pointer]
    read_only = frozenset(p.name for p in pointers if _direction(spec, p.name) == "in"
                          and not re.search(r"\bconst\b", p.text[: p.text.find("*")]))
    restrict: tuple[str, ...] = ("",)
    if any("restrict" not in p.text for p in pointers):
        restrict += ("restrict",)
    if read_only:
        restrict += ("const",)
    grid_stride = len(spec.grid) == 1 and len(block) == 1 and grid_stride_site(body) is not None
    private = privatizable(body, kernel, _constant_lengths(spec))
    return Space(
        original_block=block,
        blocks=(None, *_blocks(spec, block, body)),
        restrict=restrict,
        waves=(None, *WAVES) if grid_stride else (None,),
        unroll=(None, *UNROLL) if has_loops(body) else (None,),
        min_blocks=(None, *MIN_BLOCKS),
        static_block=(False, True) if uses_block_dim(body) else (False,),
        privatize=(False, True) if private else (False,),
        private=private,
        const_names=read_only,
        max_threads_per_sm=gpu.max_threads_per_sm or 2048,
    )


def _blocks(spec: Spec, block: tuple[int, ...], body: str) -> list[tuple[int, ...]]:
    """Every legal shape of the original's rank, when the launch can follow the block: the body
    must not spell the block size (shared arrays, strides), and a grid that divides by it must
    name it so that it can be rescaled."""
    if any(has_literal(body, b) for b in block if b > 8):
        return []
    if len(block) == 1 and len(spec.grid) == 1:
        shapes = [(b,) for b in range(32, MAX_THREADS + 1, 32)]
    elif len(block) == 2 and len(spec.grid) == 2:
        shapes = [(x, y) for x in BLOCKS_2D_X for y in (1, 2, 4, 8, 16, 32, 64, 128) if 32 <= x * y <= MAX_THREADS]
    else:
        return []
    return [s for s in shapes if s != block]


def _constant_lengths(spec: Spec) -> dict[str, int]:
    """Buffers whose length is a number, whatever the sizes (bins, accumulators)."""
    out = {}
    for arg in spec.args:
        length = getattr(arg, "length", None)
        if isinstance(length, int) or (isinstance(length, str) and length.strip().isdigit()):
            out[arg.name] = int(length)
    return out


def _direction(spec: Spec, name: str) -> str:
    arg = spec.arg(name)
    return getattr(arg, "direction", "")
