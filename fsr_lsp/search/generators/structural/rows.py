"""One thread per row -> one warp per row.

The naive kernel of a row reduction (a row sum, a max, a mean and variance, softmax, layernorm)
gives each thread a row and walks its columns: neighbouring threads read addresses a row
apart, so every load is a separate memory transaction, and a few thousand rows cannot fill
the GPU. With 32 lanes on each row, the column loops stride over the lanes (neighbouring lanes
read neighbouring addresses), each reduction ends in a butterfly of warp shuffles that gives
every lane the row's result, and what the row stores once is stored by lane 0.

The recogniser is strict: it applies to a 1-D launch whose thread index names the row, guarded
by a row count the spec knows, and whose column loops (`for (int j = a; j < e; j++)`, at the
row's top level) assign outer variables only as reductions (`v += e`, `v = fmaxf(v, e)` and
the like) and array elements only at indices that use the column. Anything else (shared
memory, barriers, other uses of the thread index, nested loops, other assignments) and it
says nothing. What it writes is verified like any candidate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from ....kernels import Kernel
from ....specs import Spec
from .column_reductions import NotApplicable as _NotApplicable, column_reductions
from .syntax import dims, indent_of, is_global_index, kernel_body, size_argument, threads_within_launch_bounds, walk as _walk

WARP = 32
BLOCK = 256  # threads per block of the rewrite: 8 rows a block
_FORBIDDEN = re.compile(r"\b(__shared__|__syncthreads|__syncwarp|__shfl\w*|atomic\w+|threadIdx|blockDim|blockIdx|"
                        r"gridDim|warpSize|cooperative_groups|asm)\b")


@dataclass(frozen=True)
class Rewrite:
    definition: str
    grid: str
    block: int
    note: str
    loops: int = 0  # column loops rewritten
    row_count: str = ""  # the spec's expression for the number of rows


def warp_per_row(kernel: Kernel, spec: Spec, definition: str) -> Rewrite | None:
    """The rewrite, or None when the kernel is not one thread walking a row."""
    if len(dims(spec.grid)) != 1 or len(dims(spec.block)) != 1 or spec.smem not in (0, "0"):
        return None
    try:
        return _Rows(kernel, spec, definition).rewrite()
    except _NotApplicable:
        return None


def rows_under_launch(kernel: Kernel, spec: Spec, definition: str) -> Rewrite | None:
    """The same rewrite under the original's launch, for a program whose launch fsr cannot change:
    each block's warps take the block's own rows (the rows its threads had) in turn, a warp per
    row. Needs a block of whole warps (a row's lanes all inside one block); None otherwise."""
    block = dims(spec.block)
    if len(dims(spec.grid)) != 1 or len(block) != 1 or spec.smem not in (0, "0") or not isinstance(block[0], int) \
            or block[0] % WARP:
        return None
    try:
        return _Rows(kernel, spec, definition, same_launch=True).rewrite()
    except _NotApplicable:
        return None


class _Rows:
    def __init__(self, kernel: Kernel, spec: Spec, definition: str, same_launch: bool = False) -> None:
        self.kernel, self.spec, self.text = kernel, spec, definition
        self.same_launch = same_launch
        self.data = definition.encode()
        self.edits: list[tuple[int, int, str]] = []
        self.turn_open: tuple[int, int, str] | None = None  # the rows-in-turn loop's two edits, where it has one
        self.turn_close: tuple[int, int, str] | None = None
        self.reduced: dict[str, str] = {}  # variable -> its reduction's function ("+" for a sum)
        self.single_stores = 0  # stores of the row's result, made by lane 0

    def s(self, node: Node) -> str:
        return self.data[node.start_byte:node.end_byte].decode()

    def rewrite(self) -> Rewrite:
        index, row, lane, rows_expr, rest = self._row()
        self._replace_row_index(index, row, lane)
        loops = 0
        for st in rest:
            loops += self._statement(st, lane, row)
        if loops == 0:
            raise _NotApplicable
        if _FORBIDDEN.search(self.data[index.end_byte:].decode()):
            raise _NotApplicable  # the thread index means something else now, or the threads cooperate
        out = self._applied()
        parts = [f"{loops} column loop{'s' if loops > 1 else ''} strided over {WARP} lanes (coalesced loads)"]
        if self.reduced:
            parts.append("butterfly shuffles reduce " + ", ".join(f"`{v}`" for v in self.reduced))
        if self.single_stores:
            parts.append("the row's own result stored by lane 0")
        note = "one warp per row" + (", shuffle reduction" if self.reduced else "") + ": " + "; ".join(parts)
        if self.same_launch:
            note += "; the program's launch kept: each block's warps take its own rows in turn"
            return Rewrite(out, "", 0, note, loops, rows_expr)
        block = self._block()
        return Rewrite(out, f"cdiv(({rows_expr}) * {WARP}, {block})", block, note, loops, rows_expr)

    def _block(self) -> int:
        """BLOCK threads, or fewer where the kernel's `__launch_bounds__` caps them (a whole
        number of warps, or no rewrite)."""
        threads = threads_within_launch_bounds(self.kernel, BLOCK)
        if threads is None:
            raise _NotApplicable
        return threads

    # ---------------------------------------------------------------- the row

    def _row(self) -> tuple[Node, str, str, str, list[Node]]:
        """The row index's declaration, its name, a free name for the lane, the row count as the
        spec says it, and the statements the guard keeps to rows that exist."""
        body = kernel_body(self.data)
        if body is None:
            raise _NotApplicable
        statements = [n for n in body.named_children if n.type != "comment"]
        row, at = self._row_index(statements)
        lane = "lane" if not re.search(r"\blane\b", self.text) else "lane_in_row"
        between = 0  # plain declarations between the row index and its guard (`float eps = 1e-5f;`)
        while at + 1 + between < len(statements) and statements[at + 1 + between].type == "declaration":
            self._no_loops_inside(statements[at + 1 + between])
            between += 1
        bound, rest = self._guard(statements[at + 1 + between:], row)
        return statements[at], row, lane, self._rows_in_spec(bound), rest

    def _row_index(self, statements: list[Node]) -> tuple[str, int]:
        for i, st in enumerate(statements):
            if st.type != "declaration":
                continue
            decl = st.child_by_field_name("declarator")
            if decl is None or decl.type != "init_declarator":
                continue
            value = decl.child_by_field_name("value")
            if value is not None and is_global_index(self.s(value)):
                name = decl.child_by_field_name("declarator")
                if name is None or name.type != "identifier":
                    raise _NotApplicable
                if any(_FORBIDDEN.search(self.s(st)) for st in statements[:i]):
                    raise _NotApplicable
                return self.s(name), i
        raise _NotApplicable

    def _guard(self, statements: list[Node], row: str) -> tuple[str, list[Node]]:
        """`if (row >= n) return;` then the rest, or `if (row < n) { ... }` as the last statement."""
        if not statements or statements[0].type != "if_statement":
            raise _NotApplicable
        guard = statements[0]
        cond = guard.child_by_field_name("condition")
        then = guard.child_by_field_name("consequence")
        if cond is None or then is None or guard.child_by_field_name("alternative") is not None:
            raise _NotApplicable
        m = re.fullmatch(r"\(\s*(\w+)\s*(>=|<)\s*(\w+)\s*\)", " ".join(self.s(cond).split()))
        if m is None or m.group(1) != row:
            raise _NotApplicable
        if m.group(2) == ">=" and then.type == "return_statement" and self.s(then).replace(" ", "") == "return;":
            if self.same_launch:  # the block's rows in turn: past the last row, the warp's turns end
                self.edits.append((then.start_byte, then.end_byte, "break;"))
            return m.group(3), statements[1:]
        if m.group(2) == "<" and then.type == "compound_statement" and len(statements) == 1:
            return m.group(3), [n for n in then.named_children if n.type != "comment"]
        raise _NotApplicable

    def _rows_in_spec(self, bound: str) -> str:
        """The row count as the spec's sizes say it (the launch's grid is written in them)."""
        size = size_argument(self.kernel, self.spec, bound)
        if size is None:
            raise _NotApplicable
        return size

    def _replace_row_index(self, declaration: Node, row: str, lane: str) -> None:
        decl = declaration.child_by_field_name("declarator")
        value = decl.child_by_field_name("value") if decl is not None else None
        assert value is not None and decl is not None
        indent = self._indent(declaration)
        if self.same_launch:
            self._rows_in_turn(declaration, decl, row, lane, indent)
            return
        self.edits.append((value.start_byte, value.end_byte, f"(blockIdx.x * blockDim.x + threadIdx.x) / {WARP}"))
        self.edits.append((declaration.start_byte, declaration.start_byte,
                           f"// one warp per row: its {WARP} lanes share the row's columns\n{indent}"
                           f"const int {lane} = threadIdx.x % {WARP};\n{indent}"))

    def _rows_in_turn(self, declaration: Node, decl: Node, row: str, lane: str, indent: str) -> None:
        """The row index's declaration made a loop over the block's own rows, a warp's turn each
        (`row` stays warp-uniform: every lane of a warp takes each turn, as the shuffles need), to the
        end of the kernel."""
        kind = self.data[declaration.start_byte:decl.start_byte].decode()
        kind = " ".join(w for w in kind.split() if w not in ("const", "register", "constexpr"))
        if not kind or len(declaration.children_by_field_name("declarator")) != 1:
            raise _NotApplicable  # `int r = ..., k = cols;`: k would be declared in the loop's header only
        warps = f"(blockDim.x / {WARP})"
        self.turn_open = (declaration.start_byte, declaration.end_byte,
                          f"// one warp per row, under the program's launch: the block's {WARP}-lane warps take\n"
                          f"{indent}// the block's own rows (those its threads had) in turn\n"
                          f"{indent}const int {lane} = threadIdx.x % {WARP};\n"
                          f"{indent}for ({kind} {row} = blockIdx.x * blockDim.x + threadIdx.x / {WARP}; "
                          f"{row} < (blockIdx.x + 1) * blockDim.x; {row} += {warps}) {{")
        body = kernel_body(self.data)
        assert body is not None
        close = body.end_byte - 1  # the kernel's closing brace
        self.turn_close = (close, close, f"{indent}}}  // the warp's next row\n")
        self.edits += [self.turn_open, self.turn_close]

    # ---------------------------------------------------------------- statements of the row

    def _statement(self, st: Node, lane: str, row: str) -> int:
        """Rewrites one statement of the row; the number of column loops it was."""
        if st.type == "for_statement":
            self._column_loop(st, lane)
            return 1
        if st.type in ("declaration", "comment"):
            self._no_loops_inside(st)
            return 0
        if st.type == "expression_statement":
            self._no_loops_inside(st)
            if self._stores(st):
                self.single_stores += 1
                indent = self._indent(st)
                self.edits.append((st.start_byte, st.start_byte, f"if ({lane} == 0)  // the row's result, stored once\n"
                                                                 f"{indent}    "))
            return 0
        raise _NotApplicable  # if, while, return, a nested block: not a shape this rewrite knows

    def _no_loops_inside(self, node: Node) -> None:
        if any(n.type in ("for_statement", "while_statement", "do_statement") for n in _walk(node)):
            raise _NotApplicable

    def _stores(self, st: Node) -> bool:
        """Whether the statement writes memory (`out[row] = s`, `*p = v`)."""
        for n in _walk(st):
            if n.type == "assignment_expression":
                left = n.child_by_field_name("left")
                if left is not None and left.type in ("subscript_expression", "pointer_expression", "field_expression"):
                    return True
            if n.type == "update_expression" and any(c.type in ("subscript_expression", "pointer_expression")
                                                     for c in n.named_children):
                return True
        return False

    # ---------------------------------------------------------------- a column loop

    def _loop_header(self, loop: Node) -> tuple[str, str, str, str]:
        """(type, variable, start, bound) of `for (type j = start; j < bound; j++)`, a column
        loop's header; any other header is no column loop."""
        init, cond, update = (loop.child_by_field_name(f) for f in ("initializer", "condition", "update"))
        if init is None or cond is None or update is None or loop.child_by_field_name("body") is None:
            raise _NotApplicable
        m = re.fullmatch(r"(int|unsigned|size_t|long|long long|unsigned int)\s+(\w+)\s*=\s*(.+?)\s*;?",
                         " ".join(self.s(init).split()))
        if m is None:
            raise _NotApplicable
        j, start = m.group(2), m.group(3)
        c = re.fullmatch(rf"{j}\s*<\s*(.+)", " ".join(self.s(cond).split()))
        u = " ".join(self.s(update).split())
        if c is None or u not in (f"{j}++", f"++{j}", f"{j} += 1", f"{j}+=1", f"{j} = {j} + 1"):
            raise _NotApplicable
        return m.group(1), j, start, c.group(1)

    def _column_loop(self, loop: Node, lane: str) -> None:
        init, update, body = (loop.child_by_field_name(f) for f in ("initializer", "update", "body"))
        kind, j, start, _ = self._loop_header(loop)
        reductions = column_reductions(self.s, body, j)
        for v, fn in reductions.items():
            if self.reduced.get(v, fn) != fn:
                raise _NotApplicable
            self.reduced[v] = fn
        first = "" if start == "0" else f"{start} + "
        self.edits.append((init.start_byte, init.end_byte, f"{kind} {j} = {first}{lane};"
                           if self.s(init).rstrip().endswith(";") else f"{kind} {j} = {first}{lane}"))
        self.edits.append((update.start_byte, update.end_byte, f"{j} += {WARP}"))
        indent = self._indent(loop)
        lines = []
        for v, fn in reductions.items():
            shuffled = f"__shfl_xor_sync(0xffffffffu, {v}, offset)"
            if fn in ("if>", "if<"):  # the kernel's own comparison, on what the other lane holds
                step = f"{{ auto other = {shuffled}; if (other {fn[2]} {v}) {v} = other; }}"
            else:
                step = f"{v} += {shuffled};" if fn == "+" else f"{v} = {fn}({v}, {shuffled});"
            lines.append(f"{indent}for (int offset = {WARP // 2}; offset > 0; offset >>= 1) {step}")
        if lines:
            comment = f"{indent}// each lane holds part of the row: the butterfly gives every lane the whole\n"
            self.edits.append((loop.end_byte, loop.end_byte, "\n" + comment + "\n".join(lines)))

    # ---------------------------------------------------------------- text

    def _indent(self, node: Node) -> str:
        return indent_of(self.data, node)

    def _applied(self) -> str:
        """The edits applied; the rows-in-turn loop's body (where there is one) indented one level,
        as a person would write it."""
        out, at, turn = bytearray(), 0, [0, 0]
        for edit in sorted(self.edits, key=lambda e: (e[0], e[1])):
            start, end, new = edit
            out += self.data[at:start]
            if edit is self.turn_close:
                turn[1] = len(out)
            out += new.encode()
            if edit is self.turn_open:
                turn[0] = len(out)
            at = max(at, end)
        out += self.data[at:]
        if self.turn_open is not None:
            lines = out[turn[0]:turn[1]].split(b"\n")  # the first: the rest of the `{` line; the last: before `}`
            inner = [b"    " + line if line.strip() else line for line in lines[1:-1]]
            out[turn[0]:turn[1]] = b"\n".join([lines[0], *inner, lines[-1]]) if len(lines) > 1 else lines[0]
        return out.decode()
