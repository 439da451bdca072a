"""Rewrites that need no LLM, so the tool is useful out of the box.

Each candidate is a point in a small space of well-understood changes: the launch
configuration (block size or shape), `__restrict__` on pointers, a grid-stride loop over a
grid capped at a few waves of the GPU, `#pragma unroll` on loops, `__launch_bounds__`, and
`-use_fast_math`. Round 0 tries each change alone; every later round adds one more change to
the fastest verified candidates (coordinate descent). Everything is deterministic, and every
candidate is verified like any other: a change that breaks the kernel simply loses.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from ...kernels import Kernel
from ...spec import Spec, render_spec
from ...spec.expr import has_literal, replace_literal
from ..context import RoundContext
from ..proposal import Proposal, Tried

BLOCKS_1D = (128, 512, 1024, 64, 32, 256)  # 32 and 64: row-wise kernels with few rows need more blocks
LOSER = 0.9  # a change measured this much slower on its own is not combined with others
BLOCKS_2D = ((32, 8), (32, 4), (16, 16), (32, 16), (64, 4), (32, 32), (16, 8), (64, 8))
WAVES = (4, 8)
_GLOBAL_INDEX = re.compile(
    r"(?:const\s+)?(?:int|unsigned(?:\s+int)?|long\s+long|size_t)\s+(\w+)\s*=\s*"
    r"(?:blockIdx\.x\s*\*\s*blockDim\.x\s*\+\s*threadIdx\.x|blockDim\.x\s*\*\s*blockIdx\.x\s*\+\s*threadIdx\.x|"
    r"threadIdx\.x\s*\+\s*blockIdx\.x\s*\*\s*blockDim\.x)\s*;")
_FOR = re.compile(r"^([ \t]*)for\s*\(", re.M)


@dataclass(frozen=True)
class Variant:
    block: tuple[int, ...] | None = None  # None: the original's
    restrict: bool = False
    grid_stride_waves: int | None = None
    unroll: bool = False
    fast_math: bool = False
    launch_bounds: bool = False

    def describe(self) -> str:
        parts = []
        if self.block:
            parts.append("block " + "x".join(map(str, self.block)))
        if self.restrict:
            parts.append("__restrict__")
        if self.grid_stride_waves:
            parts.append(f"grid-stride over {self.grid_stride_waves} waves")
        if self.unroll:
            parts.append("#pragma unroll")
        if self.launch_bounds:
            parts.append("__launch_bounds__")
        if self.fast_math:
            parts.append("-use_fast_math")
        return ", ".join(parts) or "original"


class BuiltinGenerator:
    name = "builtin"

    def __init__(self) -> None:
        self._variants: dict[str, Variant] = {}  # proposal key -> variant

    # ------------------------------------------------------------ the generator interface

    def propose(self, ctx: RoundContext, n: int) -> list[Proposal]:
        tried = {t.proposal.key for t in ctx.history}
        out: list[Proposal] = []
        for variant in self._candidates(ctx):
            proposal = self._render(ctx, variant)
            if proposal is None or proposal.key in tried or any(p.key == proposal.key for p in out):
                continue
            self._variants[proposal.key] = variant
            out.append(proposal)
            if len(out) >= n:
                break
        return out

    def fix(self, ctx: RoundContext, failed: Tried) -> Proposal | None:
        return None  # a deterministic rewrite that fails stays failed; the search moves on

    # ------------------------------------------------------------ which variants, in order

    def _candidates(self, ctx: RoundContext):
        singles = list(self._singles(ctx))
        if ctx.round == 0 or not ctx.seeds:
            yield from singles
            return
        measured = {self._variants.get(t.proposal.key): t.result.speedup or 0.0 for t in ctx.history if t.verified}
        untried = [v for v in singles if v not in measured]
        # Compose onto the fastest: changes not measured yet first, then the ones that helped most
        # on their own; clear losers are left out.
        helpful = sorted((v for v in singles if measured.get(v, 0.0) >= LOSER), key=lambda v: -measured[v])
        for seed in ctx.seeds:
            base = self._variants.get(seed.proposal.key)
            if base is None:
                continue
            for single in untried + helpful:
                combined = _combine(base, single)
                if combined is not None and combined != base:
                    yield combined
        yield from untried

    def _singles(self, ctx: RoundContext):
        body = _body(_definition(ctx))
        yield Variant(restrict=True)
        for block in self._blocks(ctx.spec, body):
            yield Variant(block=block)
        if _grid_stride_site(body) is not None and len(ctx.spec.grid) == 1:
            for waves in WAVES:
                yield Variant(grid_stride_waves=waves)
        if _FOR.search(body) and "#pragma unroll" not in body:
            yield Variant(unroll=True)
        yield Variant(fast_math=True)
        if not ctx.kernel.launch_bounds:
            yield Variant(launch_bounds=True)

    def _blocks(self, spec: Spec, body: str):
        current = tuple(int(b) for b in spec.block)
        if any(has_literal(body, b) for b in current if b > 8):
            return  # the body hard-codes the block size (shared arrays, strides): leave it alone
        if len(current) == 1:
            if len(spec.grid) == 1 and has_literal(spec.grid[0], current[0]):
                yield from ((b,) for b in BLOCKS_1D if b != current[0])
        elif len(current) == 2 and len(spec.grid) == 2:
            if has_literal(spec.grid[0], current[0]) and has_literal(spec.grid[1], current[1]):
                yield from (b for b in BLOCKS_2D if b != current)

    # ------------------------------------------------------------ rendering a variant

    def _render(self, ctx: RoundContext, v: Variant) -> Proposal | None:
        text = _definition(ctx)
        spec = ctx.spec
        block = v.block or tuple(int(b) for b in spec.block)
        grid = list(spec.grid)
        if v.block:
            grid = [replace_literal(g, old, new) for g, old, new in zip(grid, spec.block, v.block)]
        if v.restrict:
            text = _add_restrict(text, ctx.kernel)
        if v.grid_stride_waves:
            rewritten = _to_grid_stride(text)
            if rewritten is None:
                return None
            text = rewritten
            grid = [f"min({grid[0]}, {ctx.gpu.sm_count * v.grid_stride_waves})"]
        if v.unroll:
            text = _FOR.sub(lambda m: f"{m.group(1)}#pragma unroll 4\n{m.group(1)}for (", text)
        if v.launch_bounds:
            threads = 1
            for b in block:
                threads *= b
            text = _add_launch_bounds(text, ctx.kernel.name, threads)
        launch_changed = tuple(grid) != tuple(spec.grid) or tuple(block) != tuple(spec.block)
        if launch_changed:
            new_spec = dataclasses.replace(spec, grid=tuple(grid), block=tuple(block))
            text = render_spec(new_spec) + text
        flags = ("-use_fast_math",) if v.fast_math else ()
        return Proposal(source=text, generator=f"builtin:{v.describe()}", note=v.describe(), flags=flags,
                        round=ctx.round)


def _combine(a: Variant, b: Variant) -> Variant | None:
    merged = {}
    for f in dataclasses.fields(Variant):
        va, vb = getattr(a, f.name), getattr(b, f.name)
        default = f.default
        if va != default and vb != default and va != vb:
            return None  # both set the same knob differently
        merged[f.name] = va if va != default else vb
    return Variant(**merged)


def _definition(ctx: RoundContext) -> str:
    """The kernel's definition without its spec comment."""
    return ctx.definition


def _body(definition: str) -> str:
    """From the opening brace of a definition (one without its spec comment)."""
    return definition[definition.find("{"):]


def _add_restrict(text: str, kernel: Kernel) -> str:
    open_ = text.find("(", text.find(kernel.name))
    close = _matching(text, open_)
    if open_ < 0 or close < 0:
        return text
    params = []
    for p in kernel.params:
        decl = p.text
        if p.is_pointer and "__restrict__" not in decl and "restrict" not in decl:
            star = decl.rfind("*")
            decl = decl[: star + 1] + " __restrict__ " + decl[star + 1 :].lstrip()
        params.append(decl)
    return text[: open_ + 1] + ", ".join(params) + text[close:]


def _add_launch_bounds(text: str, name: str, threads: int) -> str:
    existing = re.search(r"__launch_bounds__\s*\([^)]*\)", text)
    if existing:
        return text[: existing.start()] + f"__launch_bounds__({threads})" + text[existing.end():]
    at = re.search(rf"\b{re.escape(name)}\s*\(", text)
    return text if at is None else text[: at.start()] + f"__launch_bounds__({threads}) " + text[at.start():]


def _grid_stride_site(body: str) -> tuple[re.Match, re.Match] | None:
    """`int i = blockIdx.x * blockDim.x + threadIdx.x;` directly followed by `if (i < n) ...`,
    whose guarded statement neither returns nor synchronises (both change meaning in a loop)."""
    decls = list(_GLOBAL_INDEX.finditer(body))
    if len(decls) != 1:
        return None
    decl = decls[0]
    guard = re.compile(rf"\s*if\s*\(\s*{re.escape(decl.group(1))}\s*<\s*([^()]+|[^()]*\([^()]*\)[^()]*)\)").match(body, decl.end())
    if guard is None:
        return None
    rest = body[guard.end():]
    statement = rest[: _statement_end(rest)]
    if re.search(r"\breturn\b|__syncthreads|\bbreak\b|\bcontinue\b", statement):
        return None
    if re.search(rf"\b{re.escape(decl.group(1))}\b", body[guard.end() + len(statement):]):
        return None  # the index is used after the guarded statement
    return decl, guard


def _to_grid_stride(text: str) -> str | None:
    body_start = text.find("{")
    body = text[body_start:]
    site = _grid_stride_site(body)
    if site is None:
        return None
    decl, guard = site
    var = decl.group(1)
    type_ = decl.group(0)[: decl.start(1) - decl.start(0)].strip()
    loop = (f"for ({type_} {var} = blockIdx.x * blockDim.x + threadIdx.x; {var} < {guard.group(1).strip()}; "
            f"{var} += blockDim.x * gridDim.x)")
    return text[:body_start] + body[: decl.start()] + loop + body[guard.end():]


def _statement_end(text: str) -> int:
    """Length of the statement at the start of `text`: a braced block or up to `;`."""
    stripped = len(text) - len(text.lstrip())
    if text[stripped:stripped + 1] == "{":
        close = _matching(text, stripped, "{", "}")
        return close + 1 if close >= 0 else len(text)
    semi = text.find(";")
    return semi + 1 if semi >= 0 else len(text)


def _matching(text: str, i: int, open_: str = "(", close: str = ")") -> int:
    depth = 0
    for j in range(i, len(text)):
        if text[j] == open_:
            depth += 1
        elif text[j] == close:
            depth -= 1
            if depth == 0:
                return j
    return -1

