"""One thread per output of a matrix product -> shared-memory tiles and a register tile.

The naive kernel of a matrix product gives each thread one output `(row, col)` and loops over
`k`, reading a row of A and a column of B straight from global memory: every operand is read
from DRAM or L2 once per output that needs it (M or N times), and each multiply waits on a load.
The rewrite gives a block a tile x tile tile of the output and each of its THREADS x THREADS
threads a per x per tile of it; the block stages a DEPTH-deep slice of A's rows and B's columns
in shared memory (each operand read from global memory once per block), and each thread keeps
its per x per sums in registers, so a shared-memory load feeds `per` multiplies. Two shapes
(SHAPES) are proposed: the search measures which fits the problem's size.

The sums are taken over `k` in the original's order, so each output is the same sum of the same
products. What the original does with a sum after its loop (scaling, a bias, an activation, the
store) runs per output unchanged, under the original's own guard.

The recogniser is strict: a 2-D launch; `row` and `col` from `blockIdx * blockDim + threadIdx` of
the two dimensions; one guard on them (`if (row < M && col < N) { ... }`, or `if (... ) return;`)
whose every condition names one of them only; inside, the accumulator's declaration, one loop
`for (int k = 0; k < K; ++k) acc += A[...] * B[...];` whose one factor indexes with `row` and
`k`, the other with `k` and `col`, both buffers of the accumulator's type (float or double),
then statements without loops. Anything else and it says nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from ....kernels import Kernel
from ....kernels.brackets import split_top_level
from ....specs import Spec
from .syntax import dims, kernel_body, single_statement, walk as _walk

DEPTH = 16  # k of A and B a block stages at a time
THREADS = 16  # threads a block, on each side (16 x 16 = 256)
# (outputs a block on each side, outputs a thread on each side): the large tile reuses each
# operand more; the small one gives a small product four times the blocks to fill the GPU with
SHAPES = ((64, 4), (32, 2))
_INDEX = re.compile(r"^blockIdx\.([xy])\s*\*\s*blockDim\.\1\s*\+\s*threadIdx\.\1$|"
                    r"^blockDim\.([xy])\s*\*\s*blockIdx\.\2\s*\+\s*threadIdx\.\2$|"
                    r"^threadIdx\.([xy])\s*\+\s*blockIdx\.\3\s*\*\s*blockDim\.\3$|"
                    r"^threadIdx\.([xy])\s*\+\s*blockDim\.\4\s*\*\s*blockIdx\.\4$")
_FORBIDDEN = re.compile(r"\b(__shared__|__syncthreads|__syncwarp|__shfl\w*|atomic\w+|threadIdx|blockDim|blockIdx|"
                        r"gridDim|warpSize|cooperative_groups|asm|goto)\b")
_TYPES = {"float": "float32", "double": "float64"}


@dataclass(frozen=True)
class Tiled:
    definition: str
    grid: tuple[str, str]
    block: tuple[int, int]
    note: str
    summed: str  # the loop's bound, for the prompt: "K"


class _NotApplicable(Exception):
    pass


def shared_tiles(kernel: Kernel, spec: Spec, definition: str, tile: int = 64, per: int = 4) -> Tiled | None:
    """The rewrite with `tile` x `tile` outputs a block and `per` x `per` a thread, or None when
    the kernel is not one thread per output of a matrix product."""
    assert tile == THREADS * per
    if len(dims(spec.grid)) != 2 or len(dims(spec.block)) != 2 or spec.smem not in (0, "0") or "fsr_" in definition:
        return None
    bound = re.search(r"__launch_bounds__\s*\(\s*(\d+)", definition)
    if bound is not None and int(bound.group(1)) < THREADS * THREADS:
        return None
    try:
        return _Product(kernel, spec, definition, tile, per).rewrite()
    except _NotApplicable:
        return None


@dataclass
class _Index:
    name: str
    type: str
    dim: int  # 0 for x, 1 for y


class _Product:
    def __init__(self, kernel: Kernel, spec: Spec, definition: str, tile: int, per: int) -> None:
        self.kernel, self.spec, self.text = kernel, spec, definition
        self.tile, self.per = tile, per
        self.data = definition.encode()

    def s(self, node: Node) -> str:
        return " ".join(self.data[node.start_byte:node.end_byte].decode().split())

    def raw(self, node: Node) -> str:
        return self.data[node.start_byte:node.end_byte].decode()

    def rewrite(self) -> Tiled:
        body = kernel_body(self.data)
        if body is None:
            raise _NotApplicable
        statements = [n for n in body.named_children if n.type != "comment"]
        indices, before, at = self._indices(statements)
        row, col = self._roles(indices, before)
        guard, inner = self._guard(statements[at:], row, col)
        acc, acc_type, init, loop, epilogue = self._parts(inner)
        k, bound, a_factor, b_factor = self._loop(loop, acc, row, col)
        self._check_factors(a_factor, b_factor, acc_type)
        if any(re.search(rf"\b{re.escape(x)}\b", self.s(n)) for n in epilogue for x in (k,)) or \
                any(_FORBIDDEN.search(self.s(n)) for n in epilogue + before):
            raise _NotApplicable
        row_guard, col_guard = self._split_guard(guard, row.name, col.name)
        signature = self.data[:body.start_byte].decode()
        text = self._text(signature, before, row, col, guard, acc, acc_type, init, k, bound, a_factor, b_factor,
                          row_guard, col_guard, epilogue)
        grid = (self._cover(col.dim), self._cover(row.dim))
        note = (f"shared-memory tiles: {self.tile}x{self.tile} outputs a block, {self.per}x{self.per} a thread in registers; "
                f"A and B staged {DEPTH} deep in shared memory, the sum over `{k}` in the original's order")
        return Tiled(text, grid, (THREADS, THREADS), note, bound)

    # ---------------------------------------------------------------- reading the kernel

    def _indices(self, statements: list[Node]) -> tuple[list[_Index], list[Node], int]:
        """The two thread indices, the other declarations before the guard, and where the guard is."""
        found: list[_Index] = []
        before: list[Node] = []
        for i, st in enumerate(statements):
            if st.type != "declaration":
                if len(found) != 2:
                    raise _NotApplicable
                return found, before, i
            decl = st.child_by_field_name("declarator")
            value = decl.child_by_field_name("value") if decl is not None and decl.type == "init_declarator" else None
            m = _INDEX.match(self.s(value)) if value is not None else None
            name = decl.child_by_field_name("declarator") if m is not None else None
            if m is not None and name is not None and name.type == "identifier" and \
                    len(st.children_by_field_name("declarator")) == 1:
                dim = next(g for g in m.groups() if g)
                found.append(_Index(self.s(name), self.s(st.child_by_field_name("type")), 0 if dim == "x" else 1))
            elif _FORBIDDEN.search(self.s(st)) or any(n.type in ("for_statement", "while_statement") for n in _walk(st)):
                raise _NotApplicable
            else:
                before.append(st)
        raise _NotApplicable

    def _roles(self, indices: list[_Index], before: list[Node]) -> tuple[_Index, _Index]:
        """(row, col): the y index and the x index (x is where neighbouring threads sit, so the
        output's contiguous side); which factor is A the factors tell."""
        if {i.dim for i in indices} != {0, 1} or indices[0].name == indices[1].name:
            raise _NotApplicable
        if any(re.search(rf"\b{re.escape(i.name)}\b", self.s(st)) for st in before for i in indices):
            raise _NotApplicable  # a pointer to the thread's row, say: not a shape this rewrite knows
        row = next(i for i in indices if i.dim == 1)
        col = next(i for i in indices if i.dim == 0)
        return row, col

    def _guard(self, statements: list[Node], row: _Index, col: _Index) -> tuple[str, list[Node]]:
        """The condition under which a thread's output exists, and the statements it guards."""
        if not statements or statements[0].type != "if_statement":
            raise _NotApplicable
        st = statements[0]
        cond, then = st.child_by_field_name("condition"), st.child_by_field_name("consequence")
        if cond is None or then is None or st.child_by_field_name("alternative") is not None:
            raise _NotApplicable
        condition = self.s(cond)
        if condition.startswith("(") and condition.endswith(")"):
            condition = condition[1:-1].strip()
        if then.type == "return_statement" and self.s(then) == "return;":
            return f"!({condition})", statements[1:]
        if then.type == "compound_statement" and len(statements) == 1:
            return condition, [n for n in then.named_children if n.type != "comment"]
        raise _NotApplicable

    def _parts(self, inner: list[Node]) -> tuple[str, str, str, Node, list[Node]]:
        """The accumulator (name, type, start), the loop, and what follows it."""
        if len(inner) < 2 or inner[0].type != "declaration" or inner[1].type != "for_statement":
            raise _NotApplicable
        decl = inner[0]
        declarators = decl.children_by_field_name("declarator")
        type_text = self.s(decl.child_by_field_name("type"))
        if len(declarators) != 1 or declarators[0].type != "init_declarator" or type_text not in _TYPES:
            raise _NotApplicable
        name, value = declarators[0].child_by_field_name("declarator"), declarators[0].child_by_field_name("value")
        if name is None or value is None or name.type != "identifier" or not re.fullmatch(r"[-+\w.]+", self.s(value)):
            raise _NotApplicable
        epilogue = inner[2:]
        for st in epilogue:
            if st.type not in ("expression_statement", "declaration", "comment") or \
                    any(n.type in ("for_statement", "while_statement", "do_statement", "return_statement") for n in _walk(st)):
                raise _NotApplicable
        return self.s(name), type_text, self.s(value), inner[1], epilogue

    def _loop(self, loop: Node, acc: str, row: _Index, col: _Index) -> tuple[str, str, str, str]:
        """`for (int k = 0; k < K; ++k) acc += X[..] * Y[..];`: (k, K, X[..], Y[..])."""
        init, cond, update = (loop.child_by_field_name(f) for f in ("initializer", "condition", "update"))
        body = loop.child_by_field_name("body")
        if init is None or cond is None or update is None or body is None:
            raise _NotApplicable
        m = re.fullmatch(r"int\s+(\w+)\s*=\s*0\s*;?", self.s(init))
        if m is None:
            raise _NotApplicable
        k = m.group(1)
        c = re.fullmatch(rf"{k}\s*<\s*(.+)", self.s(cond))
        if c is None or self.s(update) not in (f"{k}++", f"++{k}", f"{k} += 1", f"{k}+=1"):
            raise _NotApplicable
        bound = c.group(1)
        if any(re.search(rf"\b{re.escape(x)}\b", bound) for x in (k, row.name, col.name, acc)) or _FORBIDDEN.search(bound):
            raise _NotApplicable
        body = single_statement(body)
        if body is None or body.type != "expression_statement" or not body.named_children:
            raise _NotApplicable
        assign = body.named_children[0]
        if assign.type != "assignment_expression" or self.s(assign.child_by_field_name("operator")) != "+=" or \
                self.s(assign.child_by_field_name("left")) != acc:
            raise _NotApplicable
        product = assign.child_by_field_name("right")
        while product is not None and product.type == "parenthesized_expression":
            product = product.named_children[0] if product.named_children else None
        if product is None or product.type != "binary_expression" or self.s(product.child_by_field_name("operator")) != "*":
            raise _NotApplicable
        left, right = product.child_by_field_name("left"), product.child_by_field_name("right")
        if left.type != "subscript_expression" or right.type != "subscript_expression":
            raise _NotApplicable
        return k, bound, self.s(left), self.s(right)

    def _check_factors(self, a: str, b: str, acc_type: str) -> None:
        """Each factor a buffer of the accumulator's type, indexed by `k` and one thread index."""
        for factor in (a, b):
            buffer = factor.split("[", 1)[0].strip()
            param = next((p for p in self.kernel.params if p.name == buffer), None)
            if param is None or not param.is_pointer or param.dtype != _TYPES[acc_type] or (param.lanes or 1) != 1:
                raise _NotApplicable
            if _FORBIDDEN.search(factor) or factor.count("[") != 1:
                raise _NotApplicable

    def _split_guard(self, guard: str, row: str, col: str) -> tuple[str, str]:
        """The guard's conditions on the row alone and on the column alone (a row of A is staged
        when its row exists, a column of B when its column does)."""
        negated = guard.startswith("!(")
        inner = guard[2:-1] if negated else guard
        parts = _split_top(inner, "||" if negated else "&&")
        rows, cols = [], []
        for part in parts:
            on_row = bool(re.search(rf"\b{re.escape(row)}\b", part))
            on_col = bool(re.search(rf"\b{re.escape(col)}\b", part))
            if on_row and on_col or _FORBIDDEN.search(part):
                raise _NotApplicable
            text = f"!({part})" if negated else f"({part})"
            if on_row or not on_col:
                rows.append(text)
            if on_col or not on_row:
                cols.append(text)
        return " && ".join(rows) or "true", " && ".join(cols) or "true"

    def _cover(self, dim: int) -> str:
        """The new grid along one side: blocks of TILE over the threads the original launched."""
        return f"cdiv(({self.spec.grid[dim]}) * {self.spec.block[dim]}, {self.tile})"

    # ---------------------------------------------------------------- writing the rewrite

    def _text(self, signature: str, before: list[Node], row: _Index, col: _Index, guard: str, acc: str, acc_type: str,
              init: str, k: str, bound: str, a: str, b: str, row_guard: str, col_guard: str,
              epilogue: list[Node]) -> str:
        a_row = re.search(rf"\b{re.escape(row.name)}\b", a) is not None
        b_col = re.search(rf"\b{re.escape(col.name)}\b", b) is not None
        a_col = re.search(rf"\b{re.escape(col.name)}\b", a) is not None
        b_row = re.search(rf"\b{re.escape(row.name)}\b", b) is not None
        if a_col or b_row:  # `acc += B[k * N + col] * A[row * K + k]`: the factors in the other order
            if a_row or b_col:
                raise _NotApplicable
            a, b = b, a
            a_row, b_col = b_row, a_col
        if not (a_row and b_col and re.search(rf"\b{k}\b", a) and re.search(rf"\b{k}\b", b)):
            raise _NotApplicable
        t, T, P, D = acc_type, self.tile, self.per, DEPTH
        kept = "".join(f"    {self.raw(st).strip()}\n" for st in before)
        after = "".join(f"                {self.raw(st).strip()}\n" for st in epilogue)
        return (
            f"{signature}{{\n"
            f"    // fsr: one {T}x{T} tile of the output a block, {P}x{P} outputs a thread (kept in registers);\n"
            f"    // A's rows and B's columns are staged in shared memory {D} values of `{k}` at a time, so each is\n"
            f"    // read from global memory once a block. Every sum runs over `{k}` in the original's order.\n"
            f"{kept}"
            f"    __shared__ {t} fsr_a[{D}][{T} + 1];  // [{k}][row within the tile], padded against bank conflicts\n"
            f"    __shared__ {t} fsr_b[{D}][{T}];      // [{k}][column within the tile]\n"
            f"    const int fsr_thread = threadIdx.y * {THREADS} + threadIdx.x;\n"
            f"    const int fsr_row0 = blockIdx.y * {T}, fsr_col0 = blockIdx.x * {T};\n"
            f"    {t} fsr_sum[{P}][{P}];\n"
            f"    #pragma unroll\n"
            f"    for (int fsr_i = 0; fsr_i < {P}; ++fsr_i) {{\n"
            f"        #pragma unroll\n"
            f"        for (int fsr_j = 0; fsr_j < {P}; ++fsr_j) fsr_sum[fsr_i][fsr_j] = {init};\n"
            f"    }}\n"
            f"    for (int fsr_k0 = 0; fsr_k0 < ({bound}); fsr_k0 += {D}) {{\n"
            f"        for (int fsr_e = fsr_thread; fsr_e < {T} * {D}; fsr_e += {THREADS * THREADS}) {{\n"
            f"            const {row.type} {row.name} = fsr_row0 + fsr_e / {D};\n"
            f"            const int {k} = fsr_k0 + fsr_e % {D};\n"
            f"            fsr_a[fsr_e % {D}][fsr_e / {D}] = ({row_guard} && {k} < ({bound})) ? {a} : ({t})0;\n"
            f"        }}\n"
            f"        for (int fsr_e = fsr_thread; fsr_e < {D} * {T}; fsr_e += {THREADS * THREADS}) {{\n"
            f"            const {col.type} {col.name} = fsr_col0 + fsr_e % {T};\n"
            f"            const int {k} = fsr_k0 + fsr_e / {T};\n"
            f"            fsr_b[fsr_e / {T}][fsr_e % {T}] = ({col_guard} && {k} < ({bound})) ? {b} : ({t})0;\n"
            f"        }}\n"
            f"        __syncthreads();\n"
            f"        #pragma unroll\n"
            f"        for (int fsr_kk = 0; fsr_kk < {D}; ++fsr_kk) {{\n"
            f"            {t} fsr_ra[{P}], fsr_rb[{P}];\n"
            f"            #pragma unroll\n"
            f"            for (int fsr_i = 0; fsr_i < {P}; ++fsr_i) fsr_ra[fsr_i] = fsr_a[fsr_kk][threadIdx.y * {P} + fsr_i];\n"
            f"            #pragma unroll\n"
            f"            for (int fsr_j = 0; fsr_j < {P}; ++fsr_j) fsr_rb[fsr_j] = fsr_b[fsr_kk][threadIdx.x + {THREADS} * fsr_j];\n"
            f"            #pragma unroll\n"
            f"            for (int fsr_i = 0; fsr_i < {P}; ++fsr_i) {{\n"
            f"                #pragma unroll\n"
            f"                for (int fsr_j = 0; fsr_j < {P}; ++fsr_j) fsr_sum[fsr_i][fsr_j] += fsr_ra[fsr_i] * fsr_rb[fsr_j];\n"
            f"            }}\n"
            f"        }}\n"
            f"        __syncthreads();\n"
            f"    }}\n"
            f"    // each output as the original finishes it, under the original's guard\n"
            f"    #pragma unroll\n"
            f"    for (int fsr_i = 0; fsr_i < {P}; ++fsr_i) {{\n"
            f"        #pragma unroll\n"
            f"        for (int fsr_j = 0; fsr_j < {P}; ++fsr_j) {{\n"
            f"            const {row.type} {row.name} = fsr_row0 + threadIdx.y * {P} + fsr_i;\n"
            f"            const {col.type} {col.name} = fsr_col0 + threadIdx.x + {THREADS} * fsr_j;\n"
            f"            if ({guard}) {{\n"
            f"                {t} {acc} = fsr_sum[fsr_i][fsr_j];\n"
            f"{after}"
            f"            }}\n"
            f"        }}\n"
            f"    }}\n"
            f"}}\n")


def _split_top(text: str, op: str) -> list[str]:
    """`a && (b && c)` -> [`a`, `(b && c)`]: split at `op` outside brackets."""
    parts = [p.strip() for p in split_top_level(text, op, "([", ")]")]
    if any(not p for p in parts) or (op == "&&" and any("||" in p and not p.startswith("(") for p in parts)):
        raise _NotApplicable
    return parts

