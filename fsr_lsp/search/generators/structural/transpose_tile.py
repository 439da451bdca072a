"""An element copied to a transposed place -> the copy staged through a shared tile.

A naive transpose gives each thread of a 2-D block one element: it reads `in[y * w + x]` and
writes `out[x * h + y]`, so one of the two accesses walks a warp down a column, 32 separate
memory transactions where a row would take one. The rewrite keeps each access's own index
expressions and swaps which thread makes the second one: every thread reads its element into a
shared tile (one padding column, so reading the tile by columns hits 32 banks), the block
meets at a barrier, and then each thread writes the element its transposed neighbour read,
so both global accesses go along rows of the block.

The recogniser is strict: a 2-D block (a square one of 16x16 or 32x32 is kept; any other,
32x8 say, becomes blocks of 32x32, their grid from the guard's bounds, `x < cols && y < rows`
with size parameters the spec gives, and the candidate's @fsr block says so); a body that declares the
thread's x and y as `blockIdx * blockDim + threadIdx` (any order) and then copies one element
of one buffer to another at two different indices that both use x and y, under one guard
(`if (in bounds) { copy }`, or `if (out of bounds) return;` before it). The guard and both
indices are the kernel's own text, evaluated for the thread that made each access in the
original, so the rewrite is correct whatever they are; it pays where they transpose.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from ....kernels import Kernel
from ....specs import Spec
from .syntax import dims, is_global_index, kernel_body, single_statement, size_argument

RELAUNCH_TILE = 32  # the square block a transpose gets when its own block is not square
# (tile, rows of threads): a tile of several elements a thread, the block a few rows of threads
ROW_TILES = ((32, 8), (64, 8))
_FORBIDDEN = re.compile(r"\b(__shared__|__syncthreads|__shfl\w*|atomic\w+|asm|fsr_\w+|goto)\b")


@dataclass(frozen=True)
class _Copy:
    """The kernel's one element copy, as its own text says it: the element type, each axis's
    declared type and name, the guard, and both sides (`out[write] = source[read]`)."""

    kind: str
    declared: dict[str, str]
    names: dict[str, str]
    cond: str
    source: str
    read: str
    out: str
    write: str


@dataclass(frozen=True)
class TileTranspose:
    definition: str
    note: str
    exchanged: str  # "write" (a row-major read stays) or "read" (a column-major read, say)
    launch: str = ""  # the candidate's @fsr block when the tile needs a new block shape, else ''
    elements: int = 1  # a thread's: several where each thread takes rows of the tile


def transpose_tile(kernel: Kernel, spec: Spec, definition: str) -> list[TileTranspose]:
    """The rewrites (the write exchanged, then the read), or [] when the kernel is not one
    element copied to another index."""
    copy = _recognised(kernel, spec, definition)
    if copy is None:
        return []
    launch = ""
    if not copy.square:  # a 32x8 block, say: the tile needs a square one, so the launch changes
        grid = _square_grid(kernel, spec, copy.guard, copy.of.names, RELAUNCH_TILE)
        if grid is None or "__launch_bounds__" in definition:
            return []
        launch = (f'/* @fsr\ngrid = ["{grid[0]}", "{grid[1]}"]\nblock = [{RELAUNCH_TILE}, {RELAUNCH_TILE}]\n*/\n')
    variants = [_one_a_thread(copy, exchanged, launch) for exchanged in ("write", "read")]
    c = copy.of
    if re.search(r"\b(threadIdx|blockIdx|blockDim|gridDim)\b", f"{c.cond} {c.read} {c.write}"):
        return variants
    return variants + _rows_a_thread(kernel, spec, definition, copy)


@dataclass(frozen=True)
class _Recognised:
    """A kernel that copies one element to another index: its text, body, index declarations and
    the copy itself."""

    data: bytes
    body: Node
    axes: dict  # "x"/"y" -> (its declaration, the index expression)
    guard: str
    square: bool  # a square block of 16 or 32: the tile is the block
    tile: int
    of: _Copy


def _recognised(kernel: Kernel, spec: Spec, definition: str) -> _Recognised | None:
    block = dims(spec.block)
    if len(block) != 2 or len(dims(spec.grid)) != 2 or _FORBIDDEN.search(definition):
        return None
    square = block[0] == block[1] and block[0] in (16, 32)
    data = definition.encode()
    body = kernel_body(data)
    if body is None:
        return None

    def text(node: Node) -> str:
        return data[node.start_byte:node.end_byte].decode()

    statements = [n for n in body.named_children if n.type != "comment"]
    if statements and statements[-1].type == "return_statement" and text(statements[-1]).replace(" ", "") == "return;":
        statements = statements[:-1]
    if len(statements) < 3:
        return None
    axes = {}
    for st in statements[:2]:
        found = _index_declaration(st, text)
        if found is None:
            return None
        axes[found[0]] = (st, found[1])
    if set(axes) != {"x", "y"}:
        return None
    guard, copy = _guarded_copy(statements[2:], text)
    m = re.fullmatch(r"(\w+)\s*\[(.+)\]\s*=\s*(\w+)\s*\[(.+)\]\s*;", " ".join(text(copy).split())) \
        if copy is not None else None
    if m is None:
        return None
    out, write, source, read = m.group(1), m.group(2).strip(), m.group(3), m.group(4).strip()
    params = {p.name: p for p in kernel.params}
    if out not in params or source not in params or out == source or not params[out].is_pointer or \
            params[out].dtype is None or params[out].dtype != params[source].dtype or (params[out].lanes or 1) != 1:
        return None
    names = {axis: _declared_name(st) for axis, (st, _) in axes.items()}
    if write.replace(" ", "") == read.replace(" ", "") or \
            not all(re.search(rf"\b{names[a]}\b", idx) for a in "xy" for idx in (write, read)):
        return None
    declared = {axis: _declared_type(st, data) for axis, (st, _) in axes.items()}
    of = _Copy(params[out].base_type, declared, names, guard or "true", source, read, out, write)
    return _Recognised(data, body, axes, guard, square, block[0] if square else RELAUNCH_TILE, of)


def _one_a_thread(r: _Recognised, exchanged: str, launch: str) -> TileTranspose:
    """One element a thread through a shared tile, the write (or the read) made by the
    transposed thread of the block, so that both go along rows."""
    data, c, tile, i = r.data, r.of, r.tile, "    "
    own = [data[st.start_byte:st.end_byte].decode() for st in (r.axes["x"][0], r.axes["y"][0])]
    swapped = [_swapped(r.axes["x"][0], r.axes["x"][1], "x", data), _swapped(r.axes["y"][0], r.axes["y"][1], "y", data)]
    read_decls, write_decls = (own, swapped) if exchanged == "write" else (swapped, own)
    load, store = (("[threadIdx.y][threadIdx.x]", "[threadIdx.x][threadIdx.y]") if exchanged == "write"
                   else ("[threadIdx.x][threadIdx.y]", "[threadIdx.y][threadIdx.x]"))
    new_body = (
        "{\n"
        f"{i}// fsr: the {exchanged} is made by the transposed thread of the block, through a shared tile, so\n"
        f"{i}// the {'read' if exchanged == 'write' else 'write'} and the {exchanged} both go along rows\n"
        f"{i}__shared__ {c.kind} fsr_tile[{tile}][{tile} + 1];  // + 1: reading it by columns hits every bank\n"
        f"{i}{{  // {'each thread reads the element it read before' if exchanged == 'write' else 'each thread reads the element its transposed neighbour in the block read'}\n"
        f"{i}{i}{read_decls[0]}\n{i}{i}{read_decls[1]}\n"
        f"{i}{i}if ({c.cond}) fsr_tile{load} = {c.source}[{c.read}];\n"
        f"{i}}}\n"
        f"{i}__syncthreads();\n"
        f"{i}{{  // {'and writes the element its transposed neighbour in the block read' if exchanged == 'write' else 'and writes the element it wrote before'}\n"
        f"{i}{i}{write_decls[0]}\n{i}{i}{write_decls[1]}\n"
        f"{i}{i}if ({c.cond}) {c.out}[{c.write}] = fsr_tile{store};\n"
        f"{i}}}\n"
        "}")
    note = (f"transpose through a shared tile, the {exchanged} of `{c.out if exchanged == 'write' else c.source}` "
            f"made by the transposed thread: both accesses along rows, a {tile}x{tile + 1} tile between them"
            + (f"; blocks of {tile}x{tile} threads" if launch else ""))
    return TileTranspose(data[:r.body.start_byte].decode() + new_body + data[r.body.end_byte:].decode(), note,
                         exchanged, launch)


def _rows_a_thread(kernel: Kernel, spec: Spec, definition: str, r: _Recognised) -> list[TileTranspose]:
    """Several elements a thread (ROW_TILES' shapes), each shape's launch its own."""
    head, tail = r.data[:r.body.start_byte].decode(), r.data[r.body.end_byte:].decode()
    c, out = r.of, []
    for tile, rows in ROW_TILES:
        grid = _square_grid(kernel, spec, r.guard, c.names, tile)
        if grid is None or "__launch_bounds__" in definition:
            break
        launch_rows = f'/* @fsr\ngrid = ["{grid[0]}", "{grid[1]}"]\nblock = [{tile}, {rows}]\n*/\n'
        for exchanged in ("write", "read"):
            note = (f"transpose through a shared {tile}x{tile + 1} tile, {tile // rows} elements a thread, the "
                    f"{exchanged} of `{c.out if exchanged == 'write' else c.source}` made by the transposed thread; "
                    f"blocks of {tile}x{rows} threads")
            out.append(TileTranspose(head + _rows_body(exchanged, tile, rows, c) + tail, note, exchanged, launch_rows,
                                     tile // rows))
    return out


def _rows_body(exchanged: str, tile: int, rows: int, c: _Copy) -> str:
    """A tile of `tile` x `tile` elements a block of `tile` x `rows` threads, each thread taking
    `tile / rows` of them `rows` apart: its reads (or writes) along rows of the input, the
    others along rows of the output, each element at the original's indices."""
    kind, declared, names, cond, source, read, out, write = (c.kind, c.declared, c.names, c.cond, c.source, c.read,
                                                             c.out, c.write)
    i = "    "
    along = ("blockIdx.x * {t} + threadIdx.x", "blockIdx.y * {t} + threadIdx.y + fsr_j")  # (x, y): the tile's own
    across = ("blockIdx.x * {t} + threadIdx.y + fsr_j", "blockIdx.y * {t} + threadIdx.x")  # the transposed thread's
    first, second = (along, across) if exchanged == "write" else (across, along)
    own_slot, other_slot = "[threadIdx.y + fsr_j][threadIdx.x]", "[threadIdx.x][threadIdx.y + fsr_j]"
    load, store = (own_slot, other_slot) if exchanged == "write" else (other_slot, own_slot)

    def declarations(values: tuple[str, str]) -> str:
        return "".join(f"{i}{i}{declared[axis]}{names[axis]} = {value.format(t=tile)};\n"
                       for axis, value in zip("xy", values))

    return ("{\n"
            f"{i}// fsr: a {tile}x{tile} tile a block, {tile // rows} elements a thread; the {exchanged} is made by the\n"
            f"{i}// transposed thread through the shared tile, so reads and writes both go along rows\n"
            f"{i}__shared__ {kind} fsr_tile[{tile}][{tile} + 1];  // + 1: reading it by columns hits every bank\n"
            f"{i}#pragma unroll\n"
            f"{i}for (int fsr_j = 0; fsr_j < {tile}; fsr_j += {rows}) {{\n"
            + declarations(first) +
            f"{i}{i}if ({cond}) fsr_tile{load} = {source}[{read}];\n"
            f"{i}}}\n"
            f"{i}__syncthreads();\n"
            f"{i}#pragma unroll\n"
            f"{i}for (int fsr_j = 0; fsr_j < {tile}; fsr_j += {rows}) {{\n"
            + declarations(second) +
            f"{i}{i}if ({cond}) {out}[{write}] = fsr_tile{store};\n"
            f"{i}}}\n"
            "}")


def _declared_type(st: Node, data: bytes) -> str:
    """`const int ` of `const int x = ...;`: what comes before the declared name."""
    declarator = st.children_by_field_name("declarator")[0]
    return data[st.start_byte:declarator.start_byte].decode()


def _square_grid(kernel: Kernel, spec: Spec, guard: str | None, names: dict[str, str],
                 tile: int) -> tuple[str, str] | None:
    """The grid of `tile` x `tile` blocks over what the guard bounds (`x < cols && y < rows`,
    each bound a size parameter the spec gives), in the spec's names; None for any other guard."""
    if guard is None:
        return None
    bounds: dict[str, str] = {}
    for term in guard.split("&&"):
        m = re.fullmatch(r"\(?\s*(\w+)\s*<\s*(\w+)\s*\)?", term.strip())
        if m is None:
            return None
        bounds[m.group(1)] = m.group(2)
    sizes = []
    for axis in "xy":
        size = size_argument(kernel, spec, bounds.get(names[axis], ""))
        if size is None:
            return None
        sizes.append(f"cdiv({size}, {tile})")
    return sizes[0], sizes[1]


def _index_declaration(st: Node, text) -> tuple[str, Node] | None:
    """('x' or 'y', the value node) of `int x = blockIdx.x * blockDim.x + threadIdx.x;`."""
    if st.type != "declaration":
        return None
    declarators = st.children_by_field_name("declarator")
    if len(declarators) != 1 or declarators[0].type != "init_declarator":
        return None
    value = declarators[0].child_by_field_name("value")
    if value is None:
        return None
    for axis in "xy":
        flat = text(value).replace(f".{axis}", ".x")
        if f".{'y' if axis == 'x' else 'x'}" not in text(value).replace(f".{axis}", "") and is_global_index(flat):
            return axis, value
    return None


def _declared_name(st: Node) -> str:
    name = st.children_by_field_name("declarator")[0].child_by_field_name("declarator")
    return (name.text or b"").decode() if name is not None else ""


def _swapped(st: Node, value: Node, axis: str, data: bytes) -> str:
    """The declaration with its thread index taken from the other axis: the thread that reads
    (x, y) of the tile writes (y, x)."""
    other = "y" if axis == "x" else "x"
    new_value = f"blockIdx.{axis} * blockDim.{axis} + threadIdx.{other}"
    return (data[st.start_byte:value.start_byte] + new_value.encode() + data[value.end_byte:st.end_byte]).decode()


def _guarded_copy(rest: list[Node], text) -> tuple[str | None, Node | None]:
    """(guard, the copy statement) of `if (g) { copy }` or `if (!g) return; copy`."""
    if len(rest) == 1 and rest[0].type == "if_statement" and rest[0].child_by_field_name("alternative") is None:
        inner = single_statement(rest[0].child_by_field_name("consequence"))
        condition = rest[0].child_by_field_name("condition")
        if inner is not None and inner.type == "expression_statement" and condition is not None:
            return _unwrapped(text(condition)), inner
        return None, None
    if len(rest) == 2 and rest[0].type == "if_statement" and rest[0].child_by_field_name("alternative") is None:
        leave = single_statement(rest[0].child_by_field_name("consequence"))
        condition = rest[0].child_by_field_name("condition")
        if leave is not None and text(leave).replace(" ", "") == "return;" and condition is not None and \
                rest[1].type == "expression_statement":
            return f"!({_unwrapped(text(condition))})", rest[1]
    if len(rest) == 1 and rest[0].type == "expression_statement":
        return None, rest[0]
    return None, None


def _unwrapped(condition: str) -> str:
    c = " ".join(condition.split())
    return c[1:-1].strip() if c.startswith("(") and c.endswith(")") else c
