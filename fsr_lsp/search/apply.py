"""Putting a verified rewrite into the user's file, touching nothing but the kernel's
definition and, when the launch changes, the grid/block/smem lines of its spec block."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from ..kernels import Kernel, find_kernel, require_kernel
from ..kernels.lexical import mask, split_top_level
from ..source import SourceText
from ..specs import Spec, parse_spec, render_spec
from ..specs.edit import set_key, toml_value
from ..specs.expr import replace_literal


GONE = "kernel {name} is no longer in the file"


class ApplyError(RuntimeError):
    pass


@dataclass(frozen=True)
class Rewrite:
    text: str  # the whole new file
    edits: tuple[tuple[int, int, str], ...]  # (start byte, end byte, new text) in the old file, in order
    launch_changed: bool
    notes: tuple[str, ...] = ()  # launches in the file that could not be updated safely
    relaunched: int = 0  # launches in the file changed to the rewrite's launch


def rewrite_file(text: str, kernel_name: str, candidate: str) -> Rewrite:
    """The file with `kernel_name` replaced by `candidate` (device code, optionally with its own
    @fsr block). Raises ApplyError when the kernel is gone or the candidate is not a kernel."""
    src = SourceText(text)
    kernel = require_kernel(src, kernel_name, ApplyError, GONE)
    if not kernel.complete:
        raise ApplyError(f"kernel {kernel_name} is being edited (unbalanced braces)")
    cand_src = SourceText(candidate)
    cand = require_kernel(cand_src, kernel_name, ApplyError, "the rewrite does not define {name}")
    body = candidate
    if cand.spec is not None:
        body = cand_src.slice(0, cand.spec.span.start_byte) + cand_src.slice(cand.spec.span.end_byte, len(cand_src.data))
    body = body.strip("\n")
    edits = []
    notes: list[str] = []
    launch_changed = False
    relaunched = 0
    if cand.spec is not None:
        original, own = _specs(src, kernel, cand_src, cand)
        spec_edit = _spec_edit(src, kernel, original, own)
        if spec_edit is not None:
            edits.append(spec_edit)
            launch_changed = True
            launches, notes = launch_edits(src, kernel_name, original, own)
            edits += launches
            relaunched = len(launches)
    d = kernel.definition_span
    edits.append((d.start_byte, d.end_byte, body))
    edits.sort()
    return Rewrite(_applied(src.data, edits), tuple(edits), launch_changed, tuple(notes), relaunched)


def _applied(data: bytes, edits: list[tuple[int, int, str]]) -> str:
    """`data` with the sorted, non-overlapping byte-range edits made."""
    out = bytearray()
    at = 0
    for start, end, new in edits:
        out += data[at:start] + new.encode()
        at = end
    out += data[at:]
    return out.decode()


def launch_edits(src: SourceText, kernel_name: str, old: Spec, new: Spec) -> tuple[list[tuple[int, int, str]], list[str]]:
    """Update `kernel<<<grid, block>>>` launches in the file when that is safe: the new launch
    differs from the old only by its block size, and the launch spells the old block size as
    literals that appear in both its grid and block arguments. Other launches are listed."""
    masked = mask(src.data)
    pattern = re.compile(rb"\b" + re.escape(kernel_name.encode()) + rb"\s*(?:<[^<>;]*>)?\s*<<<(.*?)>>>", re.S)
    edits, notes = [], []
    for m in pattern.finditer(masked):
        start, end = m.span(1)
        args = src.slice(start, end)
        new_args = _relaunch(args, old, new)
        line = src.position(m.start()).line + 1
        if new_args is None:
            notes.append(f"line {line}: the launch of {kernel_name} was not changed; use grid {_describe(new.grid)}, "
                         f"block {_describe(new.block)}" + (f", {new.smem} bytes of dynamic shared memory" if new.smem else ""))
        elif new_args != args:
            edits.append((start, end, new_args))
    return edits, notes


def launch_follows(text: str, kernel_name: str, spec: Spec, launched_elsewhere: bool) -> bool:
    """Whether the program's launches of the kernel would follow a rewrite's new block: the file
    launches it, and every launch spells its block size as `launch_edits` can rewrite (tried
    with the block's first side doubled). False where the launch is elsewhere (the spec drafted or
    captured from another file's, `launched_elsewhere`) or none is rewritable; True for a kernel
    whose launches fsr knows nothing of (a library's: whoever launches it reads its block)."""
    src = SourceText(text)
    if not spec.block or not isinstance(spec.block[0], int):
        return False
    old, wider = spec.block[0], spec.block[0] * 2
    trial = dataclasses.replace(spec, block=(wider, *spec.block[1:]),
                                grid=tuple(replace_literal(g, old, wider) for g in spec.grid))
    edits, notes = launch_edits(src, kernel_name, spec, trial)
    if notes:
        return False
    return bool(edits) or not launched_elsewhere


def _relaunch(args: str, old: Spec, new: Spec) -> str | None:
    if old.smem != new.smem or len(old.block) != len(new.block):
        return None
    changes = dict(zip(old.block, new.block))
    expected = tuple(old.grid)
    for o, n in changes.items():
        expected = tuple(replace_literal(g, o, n) for g in expected)
    if expected != tuple(new.grid) or len(changes) != len(old.block):
        return None  # more than a block-size change (a grid-stride cap, a new tiling): not ours to guess
    parts = split_top_level(args, angles=False)
    if len(parts) < 2:
        return None
    grid = _dims(parts[0])
    block = _dims(parts[1])
    if grid is None or block is None or len(block) != len(old.block) or len(grid) != len(old.block):
        return None
    new_block = []
    for text, o in zip(block, old.block):
        if text.strip() != str(o):
            return None  # the block is a variable or another number: leave the launch alone
        new_block.append(text.replace(str(o), str(changes[o])))
    new_grid = []
    for text, o in zip(grid, old.block):
        regridded = _regrid(text, o, changes[o])
        if regridded is None:
            return None
        new_grid.append(regridded)
    return ",".join([_join_dims(parts[0], new_grid), _join_dims(parts[1], new_block), *parts[2:]])


def _regrid(expr: str, old: int, new: int) -> str | None:
    """`(E + B - 1) / B`, `(E + (B - 1)) / B`, `(E + 255) / 256` or `*div*(E, B)` for block B,
    rewritten for the new block size; None for anything else."""
    if old == new:
        return expr
    b, b1 = str(old), str(old - 1)
    idioms = [
        rf"\(\s*(?P<e>.+?)\s*\+\s*(?:{b}\s*-\s*1|\(\s*{b}\s*-\s*1\s*\)|{b1})\s*\)\s*/\s*{b}",
        rf"(?P<f>\w*[dD][iI][vV]\w*)\s*\(\s*(?P<e>.+?)\s*,\s*{b}\s*\)",
    ]
    for idiom in idioms:
        m = re.fullmatch(rf"\s*{idiom}\s*", expr)
        if m and "f" not in m.groupdict():
            return f"{_lead(expr)}({m.group('e')} + {new - 1}) / {new}{_trail(expr)}"
        if m:
            return f"{_lead(expr)}{m.group('f')}({m.group('e')}, {new}){_trail(expr)}"
    return None


def _dims(arg: str) -> list[str] | None:
    """The components of a launch argument: `dim3(a, b)` or a single expression."""
    m = re.fullmatch(r"\s*dim3\s*\((.*)\)\s*", arg, re.S)
    if m:
        dims = split_top_level(m.group(1), angles=False)
        while len(dims) > 1 and dims[-1].strip() == "1":
            dims.pop()  # dim3(x, y, 1) is dim3(x, y)
        return dims
    return [arg]


def _join_dims(original: str, dims: list[str]) -> str:
    m = re.fullmatch(r"(\s*dim3\s*\()(.*)(\)\s*)", original, re.S)
    if m:
        rest = split_top_level(m.group(2), angles=False)[len(dims):]
        return m.group(1) + ",".join(dims + rest) + m.group(3)
    return dims[0]


def _lead(text: str) -> str:
    return text[: len(text) - len(text.lstrip())]


def _trail(text: str) -> str:
    return text[len(text.rstrip()):]


def _describe(dims: tuple) -> str:
    return " x ".join(str(d) for d in dims)


def rewrite_if_unchanged(current: str, searched: str, kernel_name: str, candidate: str) -> Rewrite:
    """The rewrite applied to the file as it is now, provided the kernel (with its spec) is
    still exactly what was searched; edits elsewhere in the file are kept."""
    now, then = require_kernel(current, kernel_name, ApplyError, GONE), find_kernel(searched, kernel_name)
    if then is None or _kernel_text(current, now) != _kernel_text(searched, then):
        raise ApplyError(f"kernel {kernel_name} changed since the search started; search it again")
    return rewrite_file(current, kernel_name, candidate)


def _kernel_text(text: str, kernel: Kernel) -> str:
    return SourceText(text).slice(kernel.span.start_byte, kernel.span.end_byte)


def _specs(src: SourceText, kernel: Kernel, cand_src: SourceText, cand: Kernel) -> tuple[Spec, Spec]:
    """The kernel's spec in the file and the rewrite's: its block states only what it changes (its
    launch) over the original's, and its types are the file's (a typedef the rewrite only uses),
    as the evaluator read them when it verified the rewrite."""
    original = parse_spec(src, kernel).spec
    own = parse_spec(cand_src, cand.typed_as(kernel), base=original, types_from=src.text).spec \
        if original is not None else None
    if original is None or own is None:
        raise ApplyError("the rewrite's @fsr block does not parse")
    return original, own


def _spec_edit(src: SourceText, kernel: Kernel, original: Spec, own: Spec) -> tuple[int, int, str] | None:
    if (own.grid, own.block, own.smem) == (original.grid, original.block, original.smem):
        return None
    if kernel.spec is None:  # an inferred spec: write the whole block, new launch included
        import dataclasses

        merged = dataclasses.replace(original, grid=own.grid, block=own.block, smem=own.smem)
        start = kernel.definition_span.start_byte
        return start, start, render_spec(merged)
    comment = src.slice(kernel.spec.span.start_byte, kernel.spec.span.end_byte)
    new = comment
    for key, value in (("grid", own.grid), ("block", own.block), ("smem", own.smem)):
        new = set_key(new, key, toml_value(value), insert=key != "smem" or own.smem not in (0, "0"))
    return kernel.spec.span.start_byte, kernel.spec.span.end_byte, new


def rewrite_with_block(current: str, searched: str, kernel_name: str, candidate: str, block: str) -> Rewrite:
    """The rewrite of a search that ran on a drafted spec (`searched` is the file with `block`
    above the kernel): applied to the file as it is now, with the block inserted too, so the
    file says what the rewrite was verified against. Edits are in `current`'s coordinates."""
    kernel = require_kernel(current, kernel_name, ApplyError, GONE)
    src = SourceText(current)
    block = block.rstrip("\n")
    if kernel.spec is not None:  # the user put a block there since: it must be the one searched with
        if src.slice(kernel.spec.span.start_byte, kernel.spec.span.end_byte) != block:
            raise ApplyError(f"the @fsr block of {kernel_name} changed since the search started; search it again")
        return rewrite_if_unchanged(current, searched, kernel_name, candidate)
    at = kernel.definition_span.start_byte
    inserted = (block + "\n").encode()
    placed = (src.data[:at] + inserted + src.data[at:]).decode()
    rewrite = rewrite_if_unchanged(placed, searched, kernel_name, candidate)
    new_block = bytearray(inserted)
    edits: list[tuple[int, int, str]] = []
    for start, end, text in sorted(rewrite.edits, reverse=True):  # back to front: offsets stay valid
        if end <= at:
            edits.append((start, end, text))
        elif start >= at + len(inserted):
            edits.append((start - len(inserted), end - len(inserted), text))
        elif start >= at and end <= at + len(inserted):  # the launch lines of the block itself
            new_block[start - at:end - at] = text.encode()
        else:
            raise ApplyError("the rewrite's edits overlap the drafted block")
    following = next((e for e in edits if e[0] == at), None)  # the definition itself, right after the block
    if following is not None:  # one edit: clients differ on an insert touching a replacement
        edits.remove(following)
        edits.append((at, following[1], new_block.decode() + following[2]))
    else:
        edits.append((at, at, new_block.decode()))
    edits.sort()
    return Rewrite(_applied(src.data, edits), tuple(edits), rewrite.launch_changed, rewrite.notes, rewrite.relaunched)
