"""Reading a naive matrix product: which thread index each factor walks, the guard, the sum and
what the kernel does with it.

The recogniser is strict: a 2-D launch of 2-D blocks (a third grid dimension is allowed for a
batch, read through `blockIdx.z` alone); two indices `blockIdx * blockDim + threadIdx` of x and
y (any order of the terms, any integer type); one guard on them (`if (row < M && col < N) {...}`,
or `if (...) return;`) whose every condition names one of them only; inside, the accumulator's
declaration, one loop `for (int k = 0; k < K; ++k) acc += X[...] * Y[...];` whose one factor
indexes with one thread index and `k`, the other with the other index and `k`, both buffers of
the accumulator's type (float or double); then statements without loops (the epilogue: scaling,
`beta * C`, an activation, the store). Anything else and it says nothing.

Which factor is "A" is read from the factors, not from x and y: the first factor's index is `p`
(the rows of a block's tile), the other's is `q` (its columns). A kernel whose x walks C's rows
(`C[x * N + y]`) is read as well as one whose y does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from .....kernels import Kernel
from .....kernels.brackets import split_top_level
from .....specs import Spec
from ..syntax import dims, kernel_body, single_statement, walk

_INDEX = re.compile(r"^\(?blockIdx\.([xy])\s*\*\s*blockDim\.\1\s*\+\s*threadIdx\.\1\)?$|"
                    r"^\(?blockDim\.([xy])\s*\*\s*blockIdx\.\2\s*\+\s*threadIdx\.\2\)?$|"
                    r"^\(?threadIdx\.([xy])\s*\+\s*blockIdx\.\3\s*\*\s*blockDim\.\3\)?$|"
                    r"^\(?threadIdx\.([xy])\s*\+\s*blockDim\.\4\s*\*\s*blockIdx\.\4\)?$")
_THREAD_WORDS = (r"__shared__|__syncthreads|__syncwarp|__shfl\w*|atomic\w+|threadIdx|blockDim|gridDim|warpSize|"
                 r"cooperative_groups|asm|goto|fsr_\w+")
_FORBIDDEN = re.compile(rf"\b({_THREAD_WORDS}|blockIdx)\b")
_FORBIDDEN_BATCHED = re.compile(rf"\b({_THREAD_WORDS})\b|\bblockIdx\s*\.\s*[xy]\b")  # blockIdx.z is the batch
_TYPES = {"float": "float32", "double": "float64"}
_LOOP_TYPES = r"(?:unsigned\s+int|unsigned|uint|int|size_t|long\s+long|long|int64_t|uint32_t|int32_t)"


class NotAProduct(Exception):
    """The kernel is not one thread per output of a matrix product (as this module reads one)."""


@dataclass(frozen=True)
class Index:
    name: str
    type: str
    dim: int  # 0 for x, 1 for y (of the original's launch)


@dataclass(frozen=True)
class Product:
    name: str  # the kernel's
    signature: str  # the definition up to its body
    before: tuple[str, ...]  # declarations before the guard, kept at the top (a batch's base pointers)
    p: Index  # the index the first factor walks: the rows of a block's tile
    q: Index  # the index the second factor walks: the columns
    guard: str  # when an output exists (the original's condition, or `!(...)` of its early return)
    p_guard: str  # the guard's conditions on p alone ("true" for none): a row of A is loaded when it holds
    q_guard: str
    acc: str
    acc_type: str  # "float" or "double"
    init: str
    k: str
    k_type: str
    bound: str  # the loop's bound: `K`
    a: str  # the first factor as written: `A[row * K + k]`
    b: str  # the second: `B[k * N + col]`
    epilogue: tuple[str, ...]  # what follows the loop, each statement as written
    extent: tuple[str, str]  # (p, q): the threads the original launched along each, spec expressions
    batch: str | None  # the grid's third dimension when the product is batched

    @property
    def swapped(self) -> bool:
        """The product's p is the launch's x (C's rows walk with threadIdx.x)."""
        return self.p.dim == 0


def read_product(kernel: Kernel, spec: Spec, definition: str) -> Product:
    """The naive product's parts, or NotAProduct."""
    grid, block = dims(spec.grid), dims(spec.block)
    if len(block) != 2 or len(grid) not in (2, 3) or spec.smem not in (0, "0") or "fsr_" in definition:
        raise NotAProduct
    batched = len(grid) == 3
    return _Reader(kernel, spec, definition, batched).read()


class _Reader:
    def __init__(self, kernel: Kernel, spec: Spec, definition: str, batched: bool) -> None:
        self.kernel, self.spec, self.text, self.batched = kernel, spec, definition, batched
        self.forbidden = _FORBIDDEN_BATCHED if batched else _FORBIDDEN
        self.data = definition.encode()

    def s(self, node: Node) -> str:
        return " ".join(self.data[node.start_byte:node.end_byte].decode().split())

    def raw(self, node: Node) -> str:
        return self.data[node.start_byte:node.end_byte].decode()

    def read(self) -> Product:
        body = kernel_body(self.data)
        if body is None:
            raise NotAProduct
        statements = [n for n in body.named_children if n.type != "comment"]
        indices, before, at = self._indices(statements)
        y, x = self._roles(indices, before)
        guard, inner = self._guard(statements[at:])
        acc, acc_type, init, loop, epilogue = self._parts(inner)
        k, k_type, bound, first, second = self._loop(loop, acc, y, x)
        self._check_factors(first, second, acc_type, [self.s(st) for st in before])
        if any(re.search(rf"\b{re.escape(k)}\b", self.s(n)) for n in epilogue) or \
                any(self.forbidden.search(self.s(n)) for n in epilogue + before):
            raise NotAProduct
        (p, a), (q, b) = self._sides(first, second, k, y, x)
        p_guard, q_guard = self._split_guard(guard, p.name, q.name)
        signature = self.data[:body.start_byte].decode()
        extent = tuple(f"({self.spec.grid[i.dim]}) * {self.spec.block[i.dim]}" for i in (p, q))
        return Product(name=self.kernel.name, signature=signature, before=tuple(self.raw(st).strip() for st in before), p=p, q=q,
                       guard=guard, p_guard=p_guard, q_guard=q_guard, acc=acc, acc_type=acc_type, init=init, k=k,
                       k_type=k_type, bound=bound, a=a, b=b, epilogue=tuple(self.raw(st).strip() for st in epilogue),
                       extent=extent, batch=str(self.spec.grid[2]) if self.batched else None)  # type: ignore[arg-type]

    # ---------------------------------------------------------------- the parts

    def _indices(self, statements: list[Node]) -> tuple[list[Index], list[Node], int]:
        """The two thread indices, the other declarations before the guard, and where the guard is."""
        found: list[Index] = []
        before: list[Node] = []
        for i, st in enumerate(statements):
            if st.type != "declaration":
                if len(found) != 2:
                    raise NotAProduct
                return found, before, i
            decl = st.child_by_field_name("declarator")
            value = decl.child_by_field_name("value") if decl is not None and decl.type == "init_declarator" else None
            m = _INDEX.match(self.s(value)) if value is not None else None
            name = decl.child_by_field_name("declarator") if m is not None else None
            if m is not None and name is not None and name.type == "identifier" and \
                    len(st.children_by_field_name("declarator")) == 1:
                dim = next(g for g in m.groups() if g)
                found.append(Index(self.s(name), self.s(st.child_by_field_name("type")), 0 if dim == "x" else 1))
            elif self.forbidden.search(self.s(st)) or any(n.type in ("for_statement", "while_statement") for n in walk(st)):
                raise NotAProduct
            else:
                before.append(st)
        raise NotAProduct

    def _roles(self, indices: list[Index], before: list[Node]) -> tuple[Index, Index]:
        """(the y index, the x index)."""
        if {i.dim for i in indices} != {0, 1} or indices[0].name == indices[1].name:
            raise NotAProduct
        if any(re.search(rf"\b{re.escape(i.name)}\b", self.s(st)) for st in before for i in indices):
            raise NotAProduct  # a pointer to the thread's row, say: not a shape this rewrite knows
        return next(i for i in indices if i.dim == 1), next(i for i in indices if i.dim == 0)

    def _guard(self, statements: list[Node]) -> tuple[str, list[Node]]:
        """The condition under which a thread's output exists, and the statements it guards."""
        if not statements or statements[0].type != "if_statement":
            raise NotAProduct
        st = statements[0]
        cond, then = st.child_by_field_name("condition"), st.child_by_field_name("consequence")
        if cond is None or then is None or st.child_by_field_name("alternative") is not None:
            raise NotAProduct
        condition = self.s(cond)
        if condition.startswith("(") and condition.endswith(")"):
            condition = condition[1:-1].strip()
        if self.forbidden.search(condition):
            raise NotAProduct
        if then.type == "return_statement" and self.s(then) == "return;":
            return f"!({condition})", statements[1:]
        if then.type == "compound_statement" and len(statements) == 1:
            return condition, [n for n in then.named_children if n.type != "comment"]
        raise NotAProduct

    def _parts(self, inner: list[Node]) -> tuple[str, str, str, Node, list[Node]]:
        """The accumulator (name, type, start), the loop, and what follows it."""
        if len(inner) < 2 or inner[0].type != "declaration" or inner[1].type != "for_statement":
            raise NotAProduct
        decl = inner[0]
        declarators = decl.children_by_field_name("declarator")
        type_text = self.s(decl.child_by_field_name("type"))
        if len(declarators) != 1 or declarators[0].type != "init_declarator" or type_text not in _TYPES:
            raise NotAProduct
        name, value = declarators[0].child_by_field_name("declarator"), declarators[0].child_by_field_name("value")
        if name is None or value is None or name.type != "identifier" or not re.fullmatch(r"[-+\w.]+", self.s(value)):
            raise NotAProduct
        epilogue = inner[2:]
        for st in epilogue:
            if st.type not in ("expression_statement", "declaration", "comment") or \
                    any(n.type in ("for_statement", "while_statement", "do_statement", "return_statement") for n in walk(st)):
                raise NotAProduct
        return self.s(name), type_text, self.s(value), inner[1], epilogue

    def _loop(self, loop: Node, acc: str, y: Index, x: Index) -> tuple[str, str, str, str, str]:
        """`for (int k = 0; k < K; ++k) acc += X[..] * Y[..];`: (k, its type, K, X[..], Y[..])."""
        init, cond, update = (loop.child_by_field_name(f) for f in ("initializer", "condition", "update"))
        body = loop.child_by_field_name("body")
        if init is None or cond is None or update is None or body is None:
            raise NotAProduct
        m = re.fullmatch(rf"({_LOOP_TYPES})\s+(\w+)\s*=\s*0\s*;?", self.s(init))
        if m is None:
            raise NotAProduct
        k_type, k = m.group(1), m.group(2)
        c = re.fullmatch(rf"{k}\s*<\s*(.+)", self.s(cond))
        if c is None or self.s(update) not in (f"{k}++", f"++{k}", f"{k} += 1", f"{k}+=1"):
            raise NotAProduct
        bound = c.group(1)
        if any(re.search(rf"\b{re.escape(v)}\b", bound) for v in (k, y.name, x.name, acc)) or self.forbidden.search(bound):
            raise NotAProduct
        body = single_statement(body)
        if body is None or body.type != "expression_statement" or not body.named_children:
            raise NotAProduct
        assign = body.named_children[0]
        if assign.type != "assignment_expression" or self.s(assign.child_by_field_name("operator")) != "+=" or \
                self.s(assign.child_by_field_name("left")) != acc:
            raise NotAProduct
        product = assign.child_by_field_name("right")
        while product is not None and product.type == "parenthesized_expression":
            product = product.named_children[0] if product.named_children else None
        if product is None or product.type != "binary_expression" or self.s(product.child_by_field_name("operator")) != "*":
            raise NotAProduct
        left, right = product.child_by_field_name("left"), product.child_by_field_name("right")
        if left.type != "subscript_expression" or right.type != "subscript_expression":
            raise NotAProduct
        return k, k_type, bound, self.s(left), self.s(right)

    def _check_factors(self, first: str, second: str, acc_type: str, before: list[str]) -> None:
        """Each factor a buffer of the accumulator's type (a parameter, or a pointer declared
        before the guard: a batch's matrix), indexed once."""
        for factor in (first, second):
            buffer = factor.split("[", 1)[0].strip()
            param = next((p for p in self.kernel.params if p.name == buffer), None)
            pointer = re.compile(rf"^(const\s+)?{acc_type}\s*(const\s*)?\*\s*(const\s+)?(__restrict__\s+)?{re.escape(buffer)}\s*=")
            if param is None and not any(pointer.match(st) for st in before):
                raise NotAProduct
            if param is not None and (not param.is_pointer or param.dtype != _TYPES[acc_type] or (param.lanes or 1) != 1):
                raise NotAProduct
            if self.forbidden.search(factor) or factor.count("[") != 1:
                raise NotAProduct

    def _sides(self, first: str, second: str, k: str, y: Index, x: Index) -> tuple[tuple[Index, str], tuple[Index, str]]:
        """((p, its factor), (q, its factor)): each factor walks `k` and exactly one thread index."""
        def walks(factor: str, i: Index) -> bool:
            return re.search(rf"\b{re.escape(i.name)}\b", factor) is not None

        if not (re.search(rf"\b{re.escape(k)}\b", first) and re.search(rf"\b{re.escape(k)}\b", second)):
            raise NotAProduct
        for p, q in ((y, x), (x, y)):
            if walks(first, p) and not walks(first, q) and walks(second, q) and not walks(second, p):
                return (p, first), (q, second)
        raise NotAProduct

    def _split_guard(self, guard: str, p: str, q: str) -> tuple[str, str]:
        """The guard's conditions on p alone and on q alone (a row of A is staged when its row
        exists, a column of B when its column does)."""
        negated = guard.startswith("!(")
        inner = guard[2:-1] if negated else guard
        parts = _split_top(inner, "||" if negated else "&&")
        ps, qs = [], []
        for part in parts:
            on_p = bool(re.search(rf"\b{re.escape(p)}\b", part))
            on_q = bool(re.search(rf"\b{re.escape(q)}\b", part))
            if on_p and on_q:
                raise NotAProduct
            text = f"!({part})" if negated else f"({part})"
            if on_p or not on_q:
                ps.append(text)
            if on_q or not on_p:
                qs.append(text)
        return " && ".join(ps) or "true", " && ".join(qs) or "true"


def _split_top(text: str, op: str) -> list[str]:
    """`a && (b && c)` -> [`a`, `(b && c)`]: split at `op` outside brackets."""
    parts = [p.strip() for p in split_top_level(text, op, "([", ")]")]
    if any(not p for p in parts) or (op == "&&" and any("||" in p and not p.startswith("(") for p in parts)):
        raise NotAProduct
    return parts
