"""What the stencil rewrite reads an index as: a linear form in the thread's coordinates, the
variables of loops with compile-time bounds and the file's constants (`tid - MASK_LENGTH / 2 + j`),
the identifiers it names resolved where they stand (a loop's variable, a local's initialiser, a
parameter, a macro). The reads and the rewrite (stencil_reads.py, stencil_tile.py) stand on this.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tree_sitter import Node

from ....kernels import Kernel
from .syntax import kernel_body, walk

LOADER = {"t", "g", "gx", "gy"}  # the names the rewrite's load loop declares
DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+\(?(-?\d+)\)?[ \t]*$", re.MULTILINE)


class NotApplicable(Exception):
    pass


@dataclass(frozen=True)
class Linear:
    """constant + the sum of coefficient * atom. An atom is `thread:x` (the thread's coordinate),
    `loop:<name>@<byte>` (a loop variable), `const:<text>` (a compile-time name, or an expression of
    them) or `runtime:<text>` (one with a parameter in it)."""

    terms: tuple[tuple[str, int], ...] = ()
    constant: int = 0

    @staticmethod
    def atom(key: str) -> Linear:
        return Linear(((key, 1),))

    def __add__(self, other: Linear) -> Linear:
        merged = dict(self.terms)
        for key, c in other.terms:
            merged[key] = merged.get(key, 0) + c
        return Linear(tuple(sorted((k, c) for k, c in merged.items() if c)), self.constant + other.constant)

    def scaled(self, k: int) -> Linear:
        return Linear(tuple((key, c * k) for key, c in self.terms if c * k), self.constant * k)

    def kinds(self) -> set[str]:
        return {key.split(":", 1)[0] for key, _ in self.terms}

    def coefficient(self, key: str) -> int:
        return dict(self.terms).get(key, 0)

    def numeric(self) -> int | None:
        return None if self.terms else self.constant

    def render(self) -> str:
        """C text for a form of constants: `MASK_LENGTH - (MASK_LENGTH / 2) - 1`."""
        if len(self.terms) == 1 and self.terms[0][1] == 1 and not self.constant:
            return self.terms[0][0].split(":", 1)[1]
        out = ""
        for key, c in self.terms:
            text = key.split(":", 1)[1]
            text = text if re.fullmatch(r"\w+", text) else f"({text})"
            term = text if abs(c) == 1 else f"{abs(c)} * {text}"
            out += (" - " if c < 0 else " + ") + term if out else ("-" if c < 0 else "") + term
        if not out:
            return str(self.constant)
        return out + (f" + {self.constant}" if self.constant > 0 else f" - {-self.constant}" if self.constant else "")


@dataclass(frozen=True)
class Coord:
    """One axis of a read: the neighbour's coordinate (thread + offset) and its border rule."""

    axis: str  # "x" or "y"
    form: Linear
    text: str  # the unclamped coordinate as written, valid where the read is
    clamp: str = "{}"  # the clamp around it, `{}` standing for the coordinate
    bounded: frozenset[str] = frozenset()  # the sides the clamp bounds: "lower", "upper"


@dataclass(frozen=True)
class Read:
    node: Node  # the subscript expression
    coords: dict[str, Coord]
    rule: tuple  # what the load must do at a coordinate: the same for every read
    guards: dict[str, list[str]] = field(default_factory=dict)  # axis -> conditions, `{}` for the coordinate
    stride: str = ""  # the row stride of a 2-D read


def stripped(node: Node) -> Node:
    while node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
    return node


def operator_of(node: Node) -> str:
    op = node.child_by_field_name("operator")
    return (op.text or b"").decode() if op is not None else ""


def index_of(sub: Node) -> Node:
    indices = sub.child_by_field_name("indices")
    kept = [n for n in indices.named_children if n.type != "comment"] if indices is not None else []
    if len(kept) != 1:
        raise NotApplicable
    return kept[0]


class Forms:
    """The kernel's body, its locals, loops and parameters: what an index expression is made of."""

    def __init__(self, kernel: Kernel, block: tuple, definition: str) -> None:
        self.kernel, self.block = kernel, tuple(int(b) for b in block)
        self.data = definition.encode()
        body = kernel_body(self.data)
        if body is None:
            raise NotApplicable
        self.body = body
        self.params = {p.name: p for p in kernel.params}
        self.macros = {m.group(1): int(m.group(2)) for m in DEFINE.finditer(definition)}
        self.locals: dict[str, list[Node | None]] = {}
        self.assigned: set[str] = set()
        self.loops: dict[int, tuple[str, Linear, Linear]] = {}
        self.coords: dict[str, str] = {}  # the thread's coordinates: name -> axis
        self._scan()

    def text(self, node: Node) -> str:
        return self.data[node.start_byte:node.end_byte].decode()

    def flat(self, node: Node) -> str:
        return " ".join(self.text(node).split())

    def _scan(self) -> None:
        """The locals (name -> initialisers) and the names assigned anywhere but a loop's update."""
        for node in walk(self.body):
            if node.type == "init_declarator" or (node.type == "identifier" and node.parent is not None and
                                                  node.parent.type == "declaration"):
                name = node.child_by_field_name("declarator") if node.type == "init_declarator" else node
                if name is None or name.type != "identifier":
                    raise NotApplicable  # an array or a pointer declared: not a shape this knows
                self.locals.setdefault(self.flat(name), []).append(node.child_by_field_name("value"))
            elif node.type in ("assignment_expression", "update_expression"):
                target = node.child_by_field_name("left" if node.type == "assignment_expression" else "argument")
                target = stripped(target) if target is not None else None
                if target is not None and target.type == "identifier" and not self._in_update(node):
                    self.assigned.add(self.flat(target))

    def _in_update(self, node: Node) -> bool:
        parent = node.parent
        return parent is not None and parent.type == "for_statement" and parent.child_by_field_name("update") == node

    # ------------------------------------------------------------ identifiers and forms

    def _loop(self, ident: Node) -> Node | None:
        """The `for` whose initialiser declares this identifier's name, around it."""
        name, node = self.flat(ident), ident.parent
        while node is not None and node != self.body:
            if node.type == "for_statement":
                init = node.child_by_field_name("initializer")
                if init is not None and init.type == "declaration" and any(
                        d.type == "init_declarator" and d.child_by_field_name("declarator") is not None and
                        self.flat(d.child_by_field_name("declarator")) == name
                        for d in init.children_by_field_name("declarator")):
                    return node
            node = node.parent
        return None

    def _bounds(self, loop: Node) -> tuple[str, Linear, Linear]:
        """`for (int v = A; v <= B; v++)` (or `v < B`): (v, A, B) with A and B compile-time."""
        if loop.start_byte in self.loops:
            return self.loops[loop.start_byte]
        init, cond, update = (loop.child_by_field_name(f) for f in ("initializer", "condition", "update"))
        if init is None or cond is None or update is None:
            raise NotApplicable
        declarators = init.children_by_field_name("declarator")
        if len(declarators) != 1 or self.flat(init.child_by_field_name("type")) != "int":
            raise NotApplicable
        name = self.flat(declarators[0].child_by_field_name("declarator"))
        cond = stripped(cond)
        left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
        if cond.type != "binary_expression" or left is None or self.flat(left) != name or \
                operator_of(cond) not in ("<", "<=") or name in self.assigned or \
                self.flat(update).replace(" ", "") not in (f"{name}++", f"++{name}", f"{name}+=1"):
            raise NotApplicable
        low, high = self.linear(declarators[0].child_by_field_name("value")), self.linear(right)
        if operator_of(cond) == "<":
            high = high + Linear(constant=-1)
        if not (low.kinds() | high.kinds()) <= {"const"}:
            raise NotApplicable  # a bound that is a parameter, or depends on the thread
        if low.numeric() is not None and high.numeric() is not None and low.constant > high.constant:
            raise NotApplicable
        self.loops[loop.start_byte] = (name, low, high)
        return self.loops[loop.start_byte]

    def _local(self, name: str) -> Node:
        """The one initialiser of a local never assigned again."""
        inits = self.locals.get(name, [])
        if len(inits) != 1 or inits[0] is None or name in self.assigned:
            raise NotApplicable
        return inits[0]

    def identifier(self, ident: Node) -> Linear:
        name = self.flat(ident)
        if name in self.coords:
            return Linear.atom(f"thread:{self.coords[name]}")
        loop = self._loop(ident)
        if loop is not None:
            self._bounds(loop)
            return Linear.atom(f"loop:{name}@{loop.start_byte}")
        if name in self.locals:
            return self.linear(self._local(name))
        if name in self.params:
            if self.params[name].is_pointer:
                raise NotApplicable
            return Linear.atom(f"runtime:{name}")
        if name in self.macros:
            return Linear(constant=self.macros[name])
        return Linear.atom(f"const:{name}")  # a macro or a constant of the file: the compiler checks it

    def linear(self, node: Node) -> Linear:
        """The index expression as a linear form; not linear in the thread's coordinates or the
        loop variables (a product of two of them, a division of one) raises."""
        node = stripped(node)
        if node.type == "number_literal":
            try:
                return Linear(constant=int(self.flat(node).rstrip("uUlL"), 0))
            except ValueError:
                raise NotApplicable from None
        if node.type == "identifier":
            return self.identifier(node)
        if node.type == "unary_expression" and operator_of(node) in ("-", "+"):
            inner = self.linear(node.child_by_field_name("argument"))
            return inner.scaled(-1) if operator_of(node) == "-" else inner
        if node.type != "binary_expression":
            return self._opaque(node)
        op = operator_of(node)
        left, right = self.linear(node.child_by_field_name("left")), self.linear(node.child_by_field_name("right"))
        if op == "+":
            return left + right
        if op == "-":
            return left + right.scaled(-1)
        if op == "*" and (left.numeric() is not None or right.numeric() is not None):
            return right.scaled(left.constant) if left.numeric() is not None else left.scaled(right.constant)
        if op in ("/", "%") and left.numeric() is not None and right.numeric() not in (None, 0):
            a, b = left.constant, right.constant
            quotient = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)  # C truncates toward zero
            return Linear(constant=quotient if op == "/" else a - b * quotient)
        if (left.kinds() | right.kinds()) <= {"const", "runtime"}:
            return self._opaque(node)
        raise NotApplicable

    def _opaque(self, node: Node) -> Linear:
        """An expression of compile-time names (or parameters) taken whole: `MASK_LENGTH / 2`."""
        names = [self.flat(n) for n in walk(node) if n.type == "identifier"]
        if any(n.type in ("subscript_expression", "field_expression", "assignment_expression", "update_expression",
                          "call_expression") for n in walk(node)) or \
                any(n in self.coords or n in self.locals or n in LOADER for n in names):
            raise NotApplicable
        kind = "runtime" if any(n in self.params for n in names) else "const"
        return Linear.atom(f"{kind}:{self.flat(node)}")

    def free(self, node: Node) -> bool:
        """A bound the load can evaluate as written: parameters and the file's constants only."""
        for n in walk(node):
            if n.type in ("subscript_expression", "field_expression", "assignment_expression", "update_expression"):
                return False
            if n.type == "identifier":
                name = self.flat(n)
                if name in self.coords or name in self.locals or name in LOADER or self._loop(n) is not None or \
                        (name in self.params and self.params[name].is_pointer):
                    return False
        return True

