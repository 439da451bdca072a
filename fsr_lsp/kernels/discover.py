"""Find every `__global__` kernel in a CUDA source text, and the `@fsr` block of each."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from functools import lru_cache

import dataclasses
import re
from dataclasses import dataclass

from ..source import Position, SourceText, Span
from .aliases import type_aliases, with_aliases
from .attach import OrphanSpec, attach_specs
from .fallback import scan_kernel
from .lexical import lex, macro_aliases, spec_blocks
from .kernel import Kernel, SpecComment
from .structs import names_of
from .treesitter import aggregates_of, kernels_from_tree, parse
from .struct_fields import with_struct_fields
from .word_regex import word_start


@dataclass(frozen=True)
class Discovery:
    kernels: list[Kernel]  # in file order, each with its attached spec block (if any)
    orphan_specs: list[OrphanSpec]  # `@fsr` blocks that attach to no kernel, with the reason


def discover(source: str | SourceText, kernel_macros: frozenset[bytes] = frozenset()) -> Discovery:
    """Every kernel of a file (cached per file contents: the server, the drafter and the spec
    parser ask about the same text in turn). `kernel_macros`: macros that stand for
    `__global__` defined elsewhere (a candidate uses its original file's `KERNEL`)."""
    src = source if isinstance(source, SourceText) else SourceText(source)
    found = _discover(src.data, kernel_macros)
    return Discovery(list(found.kernels), list(found.orphan_specs))  # the cached lists stay as they are


@lru_cache(maxsize=16)
def _discover(data: bytes, kernel_macros: frozenset[bytes] = frozenset()) -> Discovery:
    """The declared kernels (`_declared`), each typed through the text's aliases and structs,
    with its `@fsr` block attached."""
    declared = _declared(data, kernel_macros)
    text = declared.src.text
    aliases = type_aliases(text)
    found = [with_struct_fields(with_aliases(k, aliases), text, aliases) for k in declared.kernels]
    kernels, orphans = attach_specs(declared.src, declared.masked, found, list(declared.blocks))
    return Discovery(kernels, orphans)


def first_look(source: str | SourceText) -> Discovery:
    """Every kernel as the text declares it, its `@fsr` block attached, before its types are read
    through the text's aliases and structs (a second parse, and most of a 10 MB file's seconds).
    A kernel `settled` here is the very one `discover` gives: the diagnostics of those need not
    wait for the rest."""
    src = source if isinstance(source, SourceText) else SourceText(source)
    declared = _declared(src.data, frozenset())  # the key `_discover` asks with: one reading serves both
    kernels, orphans = attach_specs(declared.src, declared.masked, list(declared.kernels), list(declared.blocks))
    return Discovery(kernels, orphans)


def settled(kernel: Kernel) -> bool:
    """Whether reading the text's aliases and structs leaves the kernel as declared: every
    parameter already has an element type (`with_aliases` and `with_struct_fields` change only
    those that have none)."""
    return all(p.dtype is not None for p in kernel.params)


@dataclass(frozen=True)
class _Declared:
    src: SourceText
    masked: bytes
    kernels: tuple[Kernel, ...]
    blocks: tuple[SpecComment, ...]


@lru_cache(maxsize=16)
def _declared(data: bytes, kernel_macros: frozenset[bytes] = frozenset()) -> _Declared:
    """Kernels from tree-sitter, plus those only the token scanner finds (macro-declared
    kernels, kernels hidden in ERROR nodes by an edit in progress). A definition whose parse
    has an error node (a pragma before an unbraced body, `#if` in a parameter list, an
    attribute macro) is measured by the scanner: it is complete when its braces balance."""
    src = SourceText(data.decode("utf-8", errors="replace"))
    lexed = lex(src.data)
    masked = lexed.masked
    words = [b"__global__", *sorted(macro_aliases(src.data) | kernel_macros)]
    pattern = re.compile(word_start(*(w.decode() for w in words)).encode() + rb"\b")
    markers = [(m.start(), m.end()) for m in pattern.finditer(masked)]

    def scanned(i: int) -> Kernel | None:
        start, end = markers[i]
        limit = markers[i + 1][0] if i + 1 < len(markers) else len(masked)
        return scan_kernel(src, masked, start, end, limit)

    starts = [m for m, _ in markers]  # in order: the markers inside a span are a slice (bisect, not a scan)
    found: list[Kernel] = []
    for k in kernels_from_tree(src, parse(src.data)):
        inside = range(bisect_left(starts, k.definition_span.start_byte), bisect_left(starts, k.definition_span.end_byte))
        if len(inside) > 1:
            continue  # swallowed another kernel's marker: mis-parsed around an edit in progress
        if not k.complete and inside:
            again = scanned(inside[0])
            if again is not None and again.complete and again.name == k.name:
                k = again
        found.append(k)
    spans = sorted((k.definition_span.start_byte, k.definition_span.end_byte) for k in found)
    span_starts = [a for a, _ in spans]
    for i, (start, _) in enumerate(markers):
        j = bisect_right(span_starts, start) - 1  # the last span starting at or before the marker
        if j >= 0 and spans[j][0] <= start < spans[j][1]:
            continue
        kernel = scanned(i)
        if kernel is not None:
            found.append(kernel)
    found.sort(key=lambda k: k.definition_span.start_byte)
    return _Declared(src, masked, tuple(found), tuple(spec_blocks(src, lexed)))


def discover_kernels(source: str | SourceText) -> list[Kernel]:
    return discover(source).kernels


def find_kernel(source: str | SourceText, name: str) -> Kernel | None:
    return next((k for k in discover_kernels(source) if k.name == name), None)


class KernelNotFound(LookupError):
    pass


def require_kernel(source: str | SourceText, name: str, error: type[Exception] = KernelNotFound,
                   message: str = "no kernel named {name}") -> Kernel:
    """The kernel named `name`, or `error(message)`: the one lookup that must find it."""
    kernel = find_kernel(source, name)
    if kernel is None:
        raise error(message.format(name=name))
    return kernel


LARGE_BYTES = 256 << 10  # above this, the kernel at a position is looked for in a window of the file
WINDOW_BYTES = 256 << 10  # the window: this much after the position, and from its kernel's marker
# read first: most kernels end within it (a hover on a 1 MB file's kernel waited 80 ms for the wide window's
# parse); a kernel not found whole in it is read from the wide one
FIRST_WINDOW_BYTES = 16 << 10
SPEC_MARGIN = 16 << 10  # before the marker (the kernel's @fsr block, `template <...>`)


def kernel_at(source: str | SourceText, byte: int) -> Kernel | None:
    """The kernel whose definition (or spec comment) contains a byte offset. In a large file
    (a generated table, ten thousand kernels) only a window around it is read, and its kernels
    moved to where they are in the file: a hover costs the window, not the file."""
    src = source if isinstance(source, SourceText) else SourceText.of(source)
    if len(src.data) <= LARGE_BYTES:
        return next((k for k in discover_kernels(src) if k.span.start_byte <= byte <= k.span.end_byte), None)
    for after in (FIRST_WINDOW_BYTES, WINDOW_BYTES):
        start, end = _window(src.data, byte, after)
        last = after == WINDOW_BYTES or end == len(src.data)
        for k in discover_kernels(SourceText.of(src.data[start:end].decode("utf-8", errors="replace"))):
            if k.span.start_byte + start <= byte <= k.span.end_byte + start:
                if last or (k.complete and k.definition_span.end_byte + start < end - 1):
                    return moved(k, start, src.line_of(start))
                break  # its end may lie past this window: the wider one reads it
        else:
            if last:
                return None
    return None


def _window(data: bytes, byte: int, after: int = WINDOW_BYTES) -> tuple[int, int]:
    """Whole lines around `byte`: from a little above the last kernel marker before it to
    `after` bytes after it."""
    marker = data.rfind(b"__global__", max(0, byte - WINDOW_BYTES), byte + len(b"__global__"))
    start = data.rfind(b"\n", 0, max(0, (marker if marker >= 0 else byte) - SPEC_MARGIN)) + 1
    end = data.find(b"\n", min(len(data), byte + after))
    return start, len(data) if end < 0 else end + 1


def moved(k: Kernel, by_bytes: int, by_lines: int) -> Kernel:
    """A kernel found in a window, at its place in the file (a window starts a line: columns stay)."""
    def span(s: Span) -> Span:
        return Span(s.start_byte + by_bytes, s.end_byte + by_bytes, Position(s.start.line + by_lines, s.start.character),
                    Position(s.end.line + by_lines, s.end.character))

    spec = None if k.spec is None else dataclasses.replace(k.spec, span=span(k.spec.span),
                                                           body_start_byte=k.spec.body_start_byte + by_bytes)
    return dataclasses.replace(k, span=span(k.span), definition_span=span(k.definition_span),
                               name_span=span(k.name_span), spec=spec)


@dataclass(frozen=True)
class KernelSource:
    """The texts of a kernel a rewrite works with."""

    definition: str  # from `template`/`extern "C"`/`__global__` to the closing brace
    spec: str  # its `@fsr` block as written ('' when it has none)
    declarations: str  # device-side declarations between the block and the kernel ('' usually)

    @property
    def unit(self) -> str:
        """What a rewrite replaces and a model is shown: the block right above the definition."""
        return f"{self.spec}\n{self.definition}" if self.spec else self.definition


def kernel_source(src: SourceText, kernel: Kernel) -> KernelSource:
    d = kernel.definition_span
    definition = src.slice(d.start_byte, d.end_byte)
    if kernel.spec is None:
        return KernelSource(definition, "", _joined("", struct_texts(src, kernel)))
    s = kernel.spec.span
    between = src.slice(s.end_byte, d.start_byte).strip()
    return KernelSource(definition, src.slice(s.start_byte, s.end_byte), _joined(between, struct_texts(src, kernel)))


def _joined(declarations: str, structs: list[str]) -> str:
    return "\n\n".join([*(t for t in structs if t not in declarations), *([declarations] if declarations else [])])


def struct_texts(src: SourceText, kernel: Kernel) -> list[str]:
    """The definitions, as the file writes them, of the structs the kernel takes by value (a
    rewrite uses their members, and must not define them again); [] where it takes none."""
    from .struct_fields import instance_name

    wanted = {instance_name(p.base_type) for p in kernel.params if p.fields}
    if not wanted:
        return []
    out = []
    for node in aggregates_of(src.data, "struct_specifier", "class_specifier"):
        if node.child_by_field_name("body") is None or node.start_byte >= kernel.definition_span.start_byte:
            continue
        outer = node.parent if node.parent is not None and node.parent.type in ("type_definition",
                                                                                  "template_declaration") else node
        if wanted & set(names_of(node)):
            out.append(src.slice(outer.start_byte, outer.end_byte).rstrip(";") + ";")
    return out
