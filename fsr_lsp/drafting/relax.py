"""What a draft may give up when the original kernel fails its proof under it, and only then:
a draft (from a launch or a capture) guesses a buffer's direction and the sizes to test at; the
user's own block is never changed. Each step is said in the proof's message.

- an `out` buffer the original does not write whole, or reads before writing: checked as
  `inout` (its unwritten elements must keep their values; a rewrite may not clobber them);
- an `in` buffer the original writes (a reduction's second pass over its own output, an
  in-place update): checked as `inout` (what the original leaves in it is compared too);
- a test size the original fails at (a reduction that assumes whole blocks): the tests move to
  whole blocks of the bench launch's tile (`_whole_blocks`), or where they are whole blocks
  already, that size is left out; the edge size (no block multiple): `edge = false`. The bench
  size, the launch a run really made, stays.
- when a run's inputs were saved (a capture) and the original goes out of bounds at a smaller
  size, its indices come from its data (values drawn in the run's range, a scan's offsets), and
  those fit the captured size alone: every smaller size goes at once, and the spec is checked
  at the captured size only, with the run's own inputs as one of its input sets;
- a size where random inputs would make the original print past the device's printf buffer (a
  check kernel printing each mismatch): the bench size takes the run's own inputs
  (`bench_inputs = "captured"`), a test size is left out;
- when it still fails at the captured size, the inputs drawn in the run's range of whole numbers
  (offsets, flags, indices) have structure random values lack (a scan's offsets are distinct):
  those take the run's own bytes, `captured()`, at every seed; the other inputs stay random.
"""

from __future__ import annotations

import re

from ..evaluator.records import EvalJob
from ..specs.edit import set_key, toml_value
from .captured import CAPTURED_ONLY
from .untied import tied_groups

IN_BOUNDS_CHECKS = ("in bounds", "in bounds (memcheck)")
DIRECTION_CHECKS = ("every output written", "outputs not read before written", "outputs not read before written (initcheck)")
NOT_ABOUT_INPUTS = ("compiles", "timeout", "spec")  # failures other inputs cannot mend
MAX_STEPS = 6  # the two sizes-apart tests may each need one (untied.py)
TILE_MULTIPLES = (1, 3, 13)  # whole blocks to test at, below the bench size
APART_TILES = (1, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 12)  # whole blocks for sizes that move together, set apart


def relax(block: str, job: EvalJob | None, check: str, argument: str, message: str) -> tuple[str, str] | None:
    """The draft with one guess given up, and why; None when nothing can be given up."""
    if not block or job is None:
        return None
    if check in DIRECTION_CHECKS and argument:
        widened = _as_inout(block, argument, "out")
        if widened != block:
            return widened, (f"`{argument}` is not written whole by the original, or read before it is written: "
                             f"checked as inout (its other elements must keep their values)")
    if check == "in buffers unchanged" and argument:
        widened = _as_inout(block, argument, "in")
        if widened != block:
            return widened, f"the original writes `{argument}`: checked as inout (what it leaves there is compared too)"
    failed_at = _size_of(job, message)
    if check == "printing" and failed_at is not None:
        return _printing(block, job, failed_at)
    if failed_at is None or failed_at.role == "bench":
        return None if check in NOT_ABOUT_INPUTS else _structure_from_capture(block, job)
    if job.real_inputs and check in IN_BOUNDS_CHECKS:
        return _captured_size_only(block), (f"the original goes out of bounds at {failed_at.label} with inputs drawn in the captured run's "
                       f"range: its indices come from its data, which fit the captured size alone, so it is "
                       f"{CAPTURED_ONLY}")
    if failed_at.role == "edge":
        return set_key(block, "edge", "false"), f"the original fails at {failed_at.label}, no block multiple: edge = false"
    tiled = _whole_blocks(block, job, failed_at, check)
    if tiled is not None:
        return tiled
    kept = [p.sizes for p in job.sizes if p.role == "test" and p.label != failed_at.label]
    bench = next((p for p in job.sizes if p.role == "bench"), None)
    apart = bench is not None and any(failed_at.sizes.get(a) != failed_at.sizes.get(b)
                                      for g in tied_groups(bench.sizes, set(bench.sizes)) for a in g for b in g)
    also = " (sizes equal at the bench set apart: where the original fails so, rewrites are not tested so)" if apart else ""
    return (set_key(block, "tests", _tests(kept)),
            f"the original fails at {failed_at.label} ({check}): that size is left out{also}")


def _printing(block: str, job: EvalJob, failed_at) -> tuple[str, str] | None:
    """A size where random inputs would make the original print past the device's buffer: the
    bench size takes the run's own inputs (where a check kernel finds nothing to print), a test
    size is left out."""
    if failed_at.role != "bench":
        kept = [p.sizes for p in job.sizes if p.role == "test" and p.label != failed_at.label]
        edge = failed_at.role == "edge"
        return (set_key(block, "edge", "false") if edge else set_key(block, "tests", _tests(kept)),
                f"on random inputs the original would print past the device's printf buffer at {failed_at.label}: "
                f"{'edge = false' if edge else 'that size is left out'}")
    if not job.real_inputs or "bench_inputs" in block:
        return None
    return (set_key(block, "bench_inputs", '"captured"'),
            f"on random inputs the original would print past the device's printf buffer at {failed_at.label}: the "
            "bench size takes the run's own inputs (bench_inputs = \"captured\"), the test sizes stay random")


def _tests(sizes: list[dict[str, int]]) -> str:
    return "[" + ", ".join("{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in s.items()) + " }" for s in sizes) + "]"


def _whole_blocks(block: str, job: EvalJob, failed_at, check: str) -> tuple[str, str] | None:
    """Test sizes in whole blocks of the bench launch's elements a block, in place of the draft's.

    A kernel that reads `arr[i + blockDim.x]` unguarded, or reduces whole tiles, is written for
    sizes in whole blocks: that is its domain, and the bench launch (a run's, when captured) shows
    the tile. Testing there keeps several sizes checked; dropping the failing sizes one by one
    would leave the bench size alone, and spend the steps the direction guesses need."""
    bench = next((p for p in job.sizes if p.role == "bench"), None)
    tests = [p for p in job.sizes if p.role == "test"]
    if bench is None or failed_at.role != "test":
        return None
    varying = sorted({k for p in tests for k, v in p.sizes.items() if v != bench.sizes.get(k)})
    axes = [d for d in range(3) if failed_at.original.grid[d] != bench.original.grid[d]]
    apart = [p for p in tests if not _together(varying, [p])]  # untied.py's tests, sizes equal at the bench apart
    if not varying or not axes or not _together(varying, [bench, *[p for p in tests if p not in apart]]):
        return None  # one size, or several that always move together (a square matmul's M = N = K)
    # the grid's axes that vary cover that size alike (a square matmul's x and y): one tile
    if len({(bench.original.grid[d], bench.original.block[d]) for d in axes}) != 1:
        return None
    name, blocks = varying[0], bench.original.grid[axes[0]]
    total = bench.sizes.get(name, 0)
    if blocks <= 1 or total % blocks or total // blocks <= 1:
        return None
    tile = total // blocks
    if tile % bench.original.block[axes[0]]:
        return None  # no whole number of elements a thread: not a tile the kernel was written for
    if all(p.sizes[name] % tile == 0 for p in tests):
        return None  # whole blocks already: what fails there goes size by size
    sizes = [tile * m for m in TILE_MULTIPLES if tile * m < total]
    if not sizes:
        return None
    base = bench.sizes
    whole = [{**base, **{k: s for k in varying}} for s in sizes]
    apart_too = _apart_in_tiles(base, varying, tile, total) if apart else []
    block = set_key(set_key(block, "tests", _tests(whole + apart_too)), "edge", "false")
    name = " = ".join(varying)
    also = f", and apart in whole blocks ({_labels(apart_too)})" if apart_too else ""
    return block, (f"the original fails at {failed_at.label} ({check}): it takes `{name}` in whole blocks of {tile} "
                   f"(the bench launch's {blocks} blocks over {name}={total}), so it is tested at "
                   f"{name}={', '.join(map(str, sizes))} instead{also}, with no edge size")


def _apart_in_tiles(base: dict[str, int], names: list[str], tile: int, total: int) -> list[dict[str, int]]:
    """The sizes that move together set apart in whole tiles, in one order and the other."""
    multiples = [m for m in APART_TILES if tile * m < total][:len(names)]
    if len(multiples) < 2:
        return []
    out = []
    for order in (multiples, multiples[::-1]):
        entry = {**base, **{k: tile * order[i % len(order)] for i, k in enumerate(names)}}
        if entry not in out:
            out.append(entry)
    return out


def _labels(tests: list[dict[str, int]]) -> str:
    return "; ".join(", ".join(f"{k}={v}" for k, v in t.items()) for t in tests)


def _together(names: list[str], plans: list) -> bool:
    """Whether the sizes `names` hold one value in each plan (they move together)."""
    return all(len({p.sizes.get(k) for k in names}) == 1 for p in plans)


def _structure_from_capture(block: str, job: EvalJob) -> tuple[str, str] | None:
    """Saved buffers drawn as whole numbers take the run's own bytes (captured()), at the captured
    size only; when none is left, every saved input does (a neighbour list sized for the run's
    lattice overflows on random positions in the same range)."""
    whole = [name for name in job.real_inputs
             if re.search(rf'{_arg_line(name)}(in|inout)\[[^"]*\]\s*randint\(', block, flags=re.M)]
    names = whole or [name for name in job.real_inputs
                      if re.search(rf'{_arg_line(name)}(in|inout)\[[^"]*\](?!\s*captured\(\))', block, flags=re.M)]
    if not names:
        return None
    for name in names:
        block = re.sub(rf'({_arg_line(name)}(?:in|inout)\[[^"]*\])(?:\s*\w+\([^)]*\))?', r"\1 captured()", block,
                       count=1, flags=re.M)
    block = _captured_size_only(block)
    listed = ", ".join(f"`{n}`" for n in names)
    if whole:
        return block, (f"random values in the run's range do not serve: {listed} take{'s' if len(names) == 1 else ''} "
                       f"the captured run's own bytes at every seed (captured()), the other inputs stay random; "
                       f"{CAPTURED_ONLY}")
    return block, (f"the original fails on random inputs in the run's ranges, so its work depends on the data's "
                   f"structure: {listed} take{'s' if len(names) == 1 else ''} the captured run's own bytes at every seed "
                   f"(captured()); {CAPTURED_ONLY}, on the run's data")


def _captured_size_only(block: str) -> str:
    return set_key(set_key(block, "tests", "[]"), "edge", "false")


def _as_inout(block: str, name: str, direction: str) -> str:
    return re.sub(rf'({_arg_line(name)}){direction}\[', r"\1inout[", block, count=1, flags=re.M)


def _arg_line(name: str) -> str:
    """The start of the block's line for argument `name`, up to its opening quote; for a struct's
    member (`A.elements`), its struct's line up to the member's quote."""
    if "." in name:
        struct, member = name.split(".", 1)
        return rf'^[ \t*]*{re.escape(struct)}[ \t]*=[ \t]*\{{[^\n]*?\b{re.escape(member)}[ \t]*=[ \t]*"'
    return rf'^[ \t*]*{re.escape(name)}[ \t]*=[ \t]*"'



def _size_of(job: EvalJob, message: str):
    """The size plan a failure names ("at n=1", or "at nx=1,ny=1" from the sanitizers)."""
    for plan in sorted(job.sizes, key=lambda p: -len(p.label)):
        for label in (plan.label, plan.label.replace(" ", "")):
            if re.search(rf"\bat {re.escape(label)}(?![\d.])", message):
                return plan
    return None
