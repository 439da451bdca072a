"""A stencil read from global memory -> the block's tile and its halo staged in shared memory.

A naive stencil (a box blur, a 1-D convolution) gives each thread one output and reads the
input at the thread's own index plus small constant offsets: each input element is loaded by
every thread whose neighbourhood holds it, (2R+1)^d times, through L1 at best. The rewrite has
each block load its tile of the input plus a halo of R on each side into shared memory first,
every thread loading one or more elements (consecutive threads, consecutive addresses), meets
at a barrier, and then runs the original's body unchanged except that each read of the input
takes its element from the tile.

What is loaded is what the original would read: the load applies the original's own border
rule, evaluated at the tile element's global coordinate. A clamped coordinate
(`min(max(y + dy, 0), h - 1)`) is clamped the same way when loading, so the tile at an
unclamped coordinate holds the clamped element. A guarded read (`if (j >= 0 && j < n)`) loads
zero where the guard fails, and the compute phase keeps the guard as written (on global
indices), so the tile is read exactly where the original read global memory: the same values
added in the same order, bitwise the same results. The load comes before anything that may
return, so threads beyond the data still take part in it and in the barrier.

The recogniser is strict; anything else and it says nothing:
- a 1-D or 2-D block of literal sizes in the spec, the grid of as many dimensions, no dynamic
  shared memory; no shared memory, barriers, shuffles or atomics in the kernel;
- the thread's coordinates declared as `int x = blockIdx.x * blockDim.x + threadIdx.x` (and y),
  never assigned, and no other use of the thread and block indices;
- one output buffer written once, with `=`, at the thread's own index (`out[i]`, `out[y * w + x]`);
- one input buffer whose every read is at the thread's coordinates plus offsets built from
  literals, compile-time names and the variables of loops with such bounds (`for (int dy = -R;
  dy <= R; dy++)`), row-major in 2-D (`in[Y * w + X]`); each coordinate is bounded below and above
  by a clamp (`min`/`max`) or by the conditions of the `if` around the read, the same rule for
  every read; and at least one offset is not zero. Other buffers are read as written.
R is a number where the kernel spells it in literals (or a `#define` or a constexpr in the
definition); otherwise a compile-time name of the file (`MASK_LENGTH / 2`) that the rewrite's
`constexpr` makes the compiler check.
How an index is read is in stencil_forms.py, which reads are a stencil's in stencil_reads.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from ....kernels import Kernel
from ....specs import Spec
from ....specs.model import AtArg
from .stencil_forms import Coord, NotApplicable, Read
from .stencil_reads import Reads
from .syntax import add_restrict, dims, indent_of, walk

MAX_SHARED = 48 << 10  # bytes of static shared memory a block may have
_FORBIDDEN = re.compile(r"\b(__shared__|__syncthreads|__syncwarp|__shfl\w*|atomic\w+|cooperative_groups|asm|goto|"
                        r"gridDim|fsr_\w+|tile|tile_w|tile_h|tile_x0|tile_y0|halo)\b")
_ZERO = {"float32": "0.0f", "float64": "0.0", "int32": "0", "uint32": "0u"}


@dataclass(frozen=True)
class StencilTile:
    definition: str
    note: str
    input: str  # the buffer staged in shared memory
    radius: str  # R as the rewrite states it: "1", or "MASK_LENGTH / 2"
    dims: int  # 1 or 2



def stencil_tile(kernel: Kernel, spec: Spec, definition: str) -> StencilTile | None:
    """The rewrite, or None when the kernel is not a stencil of one input this transform knows."""
    block = dims(spec.block)
    if len(block) not in (1, 2) or not all(isinstance(b, int) and b > 0 for b in block) or \
            len(dims(spec.grid)) != len(block) or spec.smem not in (0, "0") or _FORBIDDEN.search(definition):
        return None
    try:
        return _Stencil(kernel, block, definition).rewrite()
    except NotApplicable:
        return None



class _Stencil(Reads):
    """The rewrite of a kernel whose reads are a stencil's."""

    def rewrite(self) -> StencilTile:
        statements = [n for n in self.body.named_children if n.type != "comment"]
        self._thread_coordinates(statements)
        first = next((st for st in statements if st.type != "declaration"), None)
        if first is None:
            raise NotApplicable
        write, reads = self._accesses()
        name, analysed = self._stencil(reads)
        if any(r.node.start_byte < first.start_byte for r in analysed):
            raise NotApplicable  # read before the place the tile is loaded
        param = self.params[name]
        if param.dtype not in _ZERO or (param.lanes or 1) != 1:
            raise NotApplicable
        radius, number, checks = self._halo(analysed)
        size = {"float32": 4, "float64": 8, "int32": 4, "uint32": 4}[param.dtype]
        if number is not None:
            elements = 1
            for b in self.block:
                elements *= b + 2 * number
            if elements * size > MAX_SHARED:
                raise NotApplicable
        definition = self._text(first, name, param.base_type, radius, number, checks, analysed)
        shape = "x".join(str(b + 2 * number) for b in reversed(self.block)) if number is not None else "block + 2R"
        note = (f"input tile with a halo of {radius} in shared memory ({shape} elements of `{name}`), loaded once a "
                "block; neighbours read from shared memory")
        return StencilTile(definition, note, name, radius, len(self.block))

    # ------------------------------------------------------------ writing the rewrite

    def _text(self, first: Node, name: str, kind: str, radius: str, number: int | None, checks: list[str],
              analysed: list[Read]) -> str:
        i = indent_of(self.data, first) or "    "
        j = i + i  # the load loop's body
        loaded, guarded = self._load_expression(name, analysed[0])
        rule = ("zero where the original's bounds check fails (the same check guards each read of the tile)"
                if guarded else "clamped as the original clamps")
        if len(self.block) == 1:
            (bx,) = self.block
            size = f"{bx + 2 * number}: " if number is not None else ""
            layout = (f"{i}constexpr int tile_w = {bx} + 2 * halo;  // {size}the block's {bx} elements and a halo each side\n"
                      f"{i}__shared__ {kind} tile[tile_w];\n"
                      f"{i}const int tile_x0 = (int)(blockIdx.x * blockDim.x) - halo;  // the global index of tile[0]\n"
                      f"{i}for (int t = threadIdx.x; t < tile_w; t += {bx}) {{  // neighbouring threads, neighbouring elements\n"
                      f"{j}const int g = tile_x0 + t;\n"
                      f"{j}// {rule}\n"
                      f"{j}tile[t] = {loaded};\n"
                      f"{i}}}\n")
        else:
            bx, by = self.block
            size = f"{by + 2 * number} x {bx + 2 * number}: " if number is not None else ""
            layout = (f"{i}constexpr int tile_h = {by} + 2 * halo, tile_w = {bx} + 2 * halo;  // {size}the block's "
                      f"{by}x{bx} elements and a halo around them\n"
                      f"{i}__shared__ {kind} tile[tile_h][tile_w];\n"
                      f"{i}const int tile_x0 = (int)(blockIdx.x * blockDim.x) - halo;  // the global column of tile[.][0]\n"
                      f"{i}const int tile_y0 = (int)(blockIdx.y * blockDim.y) - halo;  // the global row of tile[0][.]\n"
                      f"{i}for (int t = threadIdx.y * {bx} + threadIdx.x; t < tile_h * tile_w; t += {bx * by}) {{  // along rows: coalesced\n"
                      f"{j}const int gy = tile_y0 + t / tile_w, gx = tile_x0 + t % tile_w;\n"
                      f"{j}// {rule}\n"
                      f"{j}tile[t / tile_w][t % tile_w] = {loaded};\n"
                      f"{i}}}\n")
        block = "x".join(str(b) for b in reversed(self.block))
        asserts = "".join(f'{i}static_assert({x} <= halo, "the stencil reads no further than the halo");\n'
                          for x in checks)
        head = (f"{i}// fsr: `{name}` is read from a shared tile: the block's elements and a halo of `halo` on each\n"
                f"{i}// side, loaded once a block with coalesced loads, instead of from global memory once for\n"
                f"{i}// every neighbour that needs them. The arithmetic, its order and the bounds checks are the\n"
                f"{i}// original's. The tile is sized for the spec's {block} block.\n"
                f"{i}constexpr int halo = {radius};  // how far the stencil reaches on each side\n"
                f"{asserts}{layout}"
                f"{i}__syncthreads();  // every thread loads, even one past the data: nothing returns before this\n\n")
        edits = [(r.node.start_byte, r.node.end_byte, self._tile_read(r)) for r in analysed]
        edits = sorted(edits + [(*self._whole_line(st), "") for st in self._unused(first, analysed)], reverse=True)
        tail = self.data[first.start_byte:self.body.end_byte]
        for start, end, new in edits:
            tail = tail[:start - first.start_byte] + new.encode() + tail[end - first.start_byte:]
        return (self.data[:first.start_byte].decode().rstrip(" \t") + head + i + tail.decode() +
                self.data[self.body.end_byte:].decode())

    def rows(self, rows: int, restrict: bool, spec: Spec) -> StencilRows:
        """The kernel with its body run for `rows` rows a thread, `y` the thread's first row plus
        the loop's count; each `return` (the bounds check) ends that row's iteration only."""
        statements = [n for n in self.body.named_children if n.type != "comment"]
        found = self._thread_coordinates(statements)
        write, reads = self._accesses()
        _, analysed = self._stencil(reads)  # a stencil of one input, as the tile reads it
        check = self._hoistable_check(statements, write, reads, analysed)
        y_decl = next(st for st in found if self.coords[self.flat(st.child_by_field_name("declarator")
                                                                    .child_by_field_name("declarator"))] == "y")
        returns = [n for n in walk(self.body) if n.type == "return_statement"]
        for node in returns:
            up = node.parent
            while up is not None and up != self.body:
                if up.type in ("for_statement", "while_statement", "do_statement", "switch_statement"):
                    raise NotApplicable  # `continue` there would go on with that loop
                up = up.parent
            if self.flat(node) != "return;":
                raise NotApplicable
        value = y_decl.child_by_field_name("declarator").child_by_field_name("value")
        i = indent_of(self.data, y_decl) or "    "
        if check is not None:  # every read clamped: all rows' loads run, only the write is checked
            guard, statement = check
            store = write.parent.parent  # the write's expression statement
            edits = [(statement.start_byte, statement.end_byte,
                      f"const bool fsr_outside = {guard};  // the original's bounds check: no output here"),
                     (store.start_byte, store.start_byte, "if (!fsr_outside) ")]
        else:
            edits = [(n.start_byte, n.end_byte, "continue;  // this row only") for n in returns]
        edits = sorted(edits + [(value.start_byte, value.end_byte, "fsr_y0 + fsr_r")], reverse=True)
        start, end = self.data.rfind(b"\n", 0, y_decl.start_byte) + 1, self.body.end_byte - 1  # whole lines
        inner = self.data[start:end]
        for a, b, new in edits:
            inner = inner[:a - start] + new.encode() + inner[b - start:]
        loop_body = "\n".join(f"    {line}" if line.strip() else line for line in inner.decode().rstrip().splitlines())
        kept = (", kept in a register (the pointers are __restrict__: the spec passes no buffer twice; every read\n"
                f"{i}// is clamped into the image, so each row's reads run unchecked and only its write is checked)"
                if restrict and check is not None else
                ", kept in a register (the pointers are __restrict__: the spec passes no buffer twice)" if restrict else "")
        head = (f"{i}// fsr: {rows} outputs a thread down its column: a row one output reads is read again by the\n"
                f"{i}// next{kept}\n"
                f"{i}const int fsr_y0 = (blockIdx.y * blockDim.y + threadIdx.y) * {rows};  // the thread's first row\n"
                f"{i}#pragma unroll\n"
                f"{i}for (int fsr_r = 0; fsr_r < {rows}; ++fsr_r) {{\n"
                f"{loop_body}\n"
                f"{i}}}\n")
        text = self.data[:start].decode() + head + self.data[end:].decode()
        if restrict:
            text = add_restrict(text, self.kernel)
        grid = f'/* @fsr\ngrid = ["{spec.grid[0]}", "cdiv({spec.grid[1]}, {rows})"]\nblock = [{self.block[0]}, {self.block[1]}]\n*/\n'
        note = f"{rows} outputs a thread down each column" + (", pointers __restrict__" if restrict else "")
        return StencilRows(text, note, grid)

    def _hoistable_check(self, statements: list[Node], write: Node, reads: dict[str, list[Node]],
                         analysed: list[Read]) -> tuple[str, Node] | None:
        """(the bounds check, its statement) where the body is `if (outside) return;`, then code whose
        only reads are the stencil's, each clamped on both sides on both axes, ending in the one
        write as a statement of its own: running the reads for a row past the image reads inside it,
        so only the write needs the check. None for any other shape."""
        if len(reads) != 1 or any(any(r.guards.values()) or any(c.bounded != {"lower", "upper"} for c in r.coords.values())
                                  for r in analysed):
            return None
        guard = next((st for st in statements if st.type == "if_statement"), None)
        store = write.parent.parent if write.parent is not None else None
        if guard is None or store is None or store.type != "expression_statement" or store.parent != self.body or \
                statements[-1] != store or guard.child_by_field_name("alternative") is not None:
            return None
        then = guard.child_by_field_name("consequence")
        if then is None or self.flat(then).replace(" ", "") not in ("return;", "{return;}"):
            return None
        condition = guard.child_by_field_name("condition")
        if any(n.type in ("call_expression", "assignment_expression", "update_expression") for n in walk(condition)):
            return None
        return self.flat(condition), guard

    def _unused(self, first: Node, analysed: list[Read]) -> list[Node]:
        """The declarations only the replaced reads used (`int yy = min(max(y + dy, 0), h - 1);`): dead
        once the tile is read at the unclamped coordinate, so they go."""
        replaced = [(r.node.start_byte, r.node.end_byte) for r in analysed]
        out = []
        for node in walk(self.body):
            if node.type != "declaration" or node.start_byte < first.start_byte or \
                    len(node.children_by_field_name("declarator")) != 1 or \
                    node.parent is None or node.parent.type != "compound_statement":
                continue
            decl = node.child_by_field_name("declarator")
            value = decl.child_by_field_name("value") if decl.type == "init_declarator" else None
            if value is None or any(n.type in ("assignment_expression", "update_expression") or
                                    (n.type == "call_expression" and
                                     self.flat(n.child_by_field_name("function")) not in ("min", "max"))
                                    for n in walk(value)):
                continue
            name = self.flat(decl.child_by_field_name("declarator"))
            uses = [n for n in walk(self.body) if n.type == "identifier" and self.flat(n) == name and
                    not node.start_byte <= n.start_byte < node.end_byte]
            if uses and all(any(a <= n.start_byte < b for a, b in replaced) for n in uses):
                out.append(node)
        return out

    def _whole_line(self, node: Node) -> tuple[int, int]:
        """The statement's bytes, with its line when it stands alone there."""
        start, end = node.start_byte, node.end_byte
        line_start = self.data.rfind(b"\n", 0, start) + 1
        line_end = self.data.find(b"\n", end)
        if line_end >= 0 and not self.data[line_start:start].strip() and not self.data[end:line_end].strip():
            return line_start, line_end + 1
        return start, end

    def _load_expression(self, name: str, read: Read) -> tuple[str, bool]:
        """What the tile holds at (gy, gx): the input at the coordinate as the original reads it."""
        if len(self.block) == 1:
            at = read.coords["x"].clamp.replace("{}", "g")
            guards = [t.replace("{}", "g") for t in read.guards["x"]]
        else:
            stride = read.stride if re.fullmatch(r"\w+", read.stride) else f"({read.stride})"
            at = f"{read.coords['y'].clamp.replace('{}', 'gy')} * {stride} + {read.coords['x'].clamp.replace('{}', 'gx')}"
            guards = [t.replace("{}", "gy") for t in read.guards["y"]] + [t.replace("{}", "gx") for t in read.guards["x"]]
        value = f"{name}[{at}]"
        zero = _ZERO[self.params[name].dtype]
        return (f"({' && '.join(guards)}) ? {value} : {zero}", True) if guards else (value, False)

    def _tile_read(self, read: Read) -> str:
        """The tile's element at the read's unclamped coordinates."""
        def at(c: Coord, origin: str) -> str:
            text = c.text if re.fullmatch(r"\w+", c.text) else f"({c.text})"
            return f"{text} - {origin}"
        if len(self.block) == 1:
            return f"tile[{at(read.coords['x'], 'tile_x0')}]"
        return f"tile[{at(read.coords['y'], 'tile_y0')}][{at(read.coords['x'], 'tile_x0')}]"


ROWS = (4, 8)  # outputs a thread down a column, for the rows variant


@dataclass(frozen=True)
class StencilRows:
    definition: str
    note: str
    launch: str  # the candidate's @fsr block: the grid's rows divided among each thread's outputs


def stencil_rows(kernel: Kernel, spec: Spec, definition: str) -> list[StencilRows]:
    """The 2-D stencil with each thread computing ROWS outputs down its column (their pointers
    `__restrict__` where the spec passes no buffer twice, so that the compiler keeps a row read
    for one output in a register for the next), or [] when the kernel is no stencil this knows."""
    block = dims(spec.block)
    if len(block) != 2 or not all(isinstance(b, int) and b > 0 for b in block) or len(dims(spec.grid)) != 2 or \
            spec.smem not in (0, "0") or _FORBIDDEN.search(definition):
        return []
    distinct = not any(isinstance(a, AtArg) for a in spec.args)
    try:
        stencil = _Stencil(kernel, block, definition)
        return [stencil.rows(r, distinct, spec) for r in ROWS]
    except NotApplicable:
        return []


def patterns_line(found: StencilTile) -> str:
    """The sentence for the model's prompt."""
    power = "" if found.dims == 1 else f"^{found.dims}"
    reach = f"{(2 * int(found.radius) + 1) ** found.dims}" if found.radius.isdigit() else \
        f"(2R+1){power} (R = {found.radius})"
    return (f"a {found.dims}-D stencil: each element of `{found.input}` is read from global memory by {reach} "
            "threads. Staging the block's tile with its halo in shared memory reads it once a block; fsr's own "
            "such rewrite is measured in the first round")
