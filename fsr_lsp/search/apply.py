"""Putting a verified rewrite into the user's file, touching nothing but the kernel's
definition and, when the launch changes, the grid/block/smem lines of its spec block."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..kernels import Kernel, find_kernel
from ..source import SourceText
from ..spec import parse_spec, render_spec


class ApplyError(RuntimeError):
    pass


@dataclass(frozen=True)
class Rewrite:
    text: str  # the whole new file
    edits: tuple[tuple[int, int, str], ...]  # (start byte, end byte, new text) in the old file, in order
    launch_changed: bool


def rewrite_file(text: str, kernel_name: str, candidate: str) -> Rewrite:
    """The file with `kernel_name` replaced by `candidate` (device code, optionally with its own
    @fsr block). Raises ApplyError when the kernel is gone or the candidate is not a kernel."""
    src = SourceText(text)
    kernel = find_kernel(src, kernel_name)
    if kernel is None:
        raise ApplyError(f"kernel {kernel_name} is no longer in the file")
    if not kernel.complete:
        raise ApplyError(f"kernel {kernel_name} is being edited (unbalanced braces)")
    cand_src = SourceText(candidate)
    cand = find_kernel(cand_src, kernel_name)
    if cand is None:
        raise ApplyError(f"the rewrite does not define {kernel_name}")
    body = candidate
    if cand.spec is not None:
        body = cand_src.slice(0, cand.spec.span.start_byte) + cand_src.slice(cand.spec.span.end_byte, len(cand_src.data))
    body = body.strip("\n")
    edits = []
    launch_changed = False
    if cand.spec is not None:
        spec_edit = _spec_edit(src, kernel, cand_src, cand)
        if spec_edit is not None:
            edits.append(spec_edit)
            launch_changed = True
    d = kernel.definition_span
    edits.append((d.start_byte, d.end_byte, body))
    edits.sort()
    out = bytearray()
    at = 0
    for start, end, new in edits:
        out += src.data[at:start] + new.encode()
        at = end
    out += src.data[at:]
    return Rewrite(out.decode(), tuple(edits), launch_changed)


def rewrite_if_unchanged(current: str, searched: str, kernel_name: str, candidate: str) -> Rewrite:
    """The rewrite applied to the file as it is now, provided the kernel (with its spec) is
    still exactly what was searched; edits elsewhere in the file are kept."""
    now, then = find_kernel(current, kernel_name), find_kernel(searched, kernel_name)
    if now is None:
        raise ApplyError(f"kernel {kernel_name} is no longer in the file")
    if then is None or _kernel_text(current, now) != _kernel_text(searched, then):
        raise ApplyError(f"kernel {kernel_name} changed since the search started; search it again")
    return rewrite_file(current, kernel_name, candidate)


def _kernel_text(text: str, kernel: Kernel) -> str:
    return SourceText(text).slice(kernel.span.start_byte, kernel.span.end_byte)


def _spec_edit(src: SourceText, kernel: Kernel, cand_src: SourceText, cand: Kernel) -> tuple[int, int, str] | None:
    original = parse_spec(src, kernel).spec
    own = parse_spec(cand_src, cand).spec
    if original is None or own is None:
        raise ApplyError("the rewrite's @fsr block does not parse")
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
        new = _set_key(new, key, _toml_value(value), insert=key != "smem" or own.smem not in (0, "0"))
    return kernel.spec.span.start_byte, kernel.spec.span.end_byte, new


def _set_key(comment: str, key: str, value: str, insert: bool) -> str:
    """Replace `key = ...` (keeping any trailing comment) or add it before [args]."""
    pattern = re.compile(rf"^([ \t*]*){key}([ \t]*)=[ \t]*(\"[^\"]*\"|\[[^\]]*\]|[^#\n]*?)([ \t]*(#.*)?)$", re.M)
    m = pattern.search(comment)
    if m:
        return comment[: m.start()] + f"{m.group(1)}{key}{m.group(2)}= {value}{m.group(4)}" + comment[m.end():]
    if not insert:
        return comment
    at = re.search(r"^[ \t*]*\[", comment, re.M)
    line = f"{key} = {value}\n"
    if at is None:
        close = comment.rfind("*/")
        return comment[:close] + line + comment[close:]
    return comment[: at.start()] + line + comment[at.start():]


def _toml_value(value: object) -> str:
    def one(v: object) -> str:
        return f'"{v}"' if isinstance(v, str) else str(v)

    if isinstance(value, tuple):
        return one(value[0]) if len(value) == 1 else "[" + ", ".join(one(v) for v in value) + "]"
    return one(value)
