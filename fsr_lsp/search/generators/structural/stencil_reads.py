"""Which reads of a kernel are a stencil's: each read's coordinates (the thread's plus an offset),
the border rule around it (a clamp, or the conditions of the `if` it stands in), the one write
at the thread's own index, and the radius every offset lies within. The rewrite
(stencil_tile.py) writes what these found; anything unsure raises NotApplicable.
"""

from __future__ import annotations

import re
from dataclasses import replace

from tree_sitter import Node

from .stencil_forms import Coord, Forms, Linear, NotApplicable, Read, index_of, operator_of, stripped
from .syntax import is_global_index, walk

MAX_RADIUS = 32  # "small constant offsets": beyond this the tile is mostly halo
_THREAD = re.compile(r"\b(threadIdx|blockIdx|blockDim)\b")


class Reads(Forms):
    """A stencil's reads and write, found in the kernel's body."""

    # ------------------------------------------------------------ coordinates and reads

    def coord(self, node: Node) -> Coord:
        """One axis of an index: the thread's coordinate plus an offset, maybe clamped."""
        node = stripped(node)
        if node.type == "identifier" and self.flat(node) in self.locals and self._loop(node) is None and \
                self.flat(node) not in self.coords:
            inner = self.coord(self._local(self.flat(node)))
            return inner if inner.clamp != "{}" else replace(inner, text=self.flat(node))
        if node.type == "call_expression" and self.flat(node.child_by_field_name("function")) in ("min", "max"):
            args = [n for n in node.child_by_field_name("arguments").named_children if n.type != "comment"]
            moving = [a for a in args if not self.free(a)]
            if len(args) != 2 or len(moving) != 1:
                raise NotApplicable
            inner = self.coord(moving[0])
            a = moving[0]
            clamp = self.data[node.start_byte:a.start_byte].decode() + inner.clamp + \
                self.data[a.end_byte:node.end_byte].decode()
            side = "upper" if self.flat(node.child_by_field_name("function")) == "min" else "lower"
            return replace(inner, clamp=clamp, bounded=inner.bounded | {side})
        form = self.linear(node)
        axes = [key for key, _ in form.terms if key.startswith("thread:")]
        if len(axes) != 1 or form.coefficient(axes[0]) != 1 or not form.kinds() <= {"thread", "loop", "const"}:
            raise NotApplicable
        return Coord(axes[0].split(":")[1], form, self.flat(node))

    def _terms(self, node: Node, sign: int = 1) -> list[tuple[int, Node]]:
        """`a * w + b - c` -> [(1, a * w), (1, b), (-1, c)]; a local's initialiser is looked into."""
        node = stripped(node)
        if node.type == "identifier" and self.flat(node) in self.locals and self.flat(node) not in self.coords and \
                self._loop(node) is None:
            return self._terms(self._local(self.flat(node)), sign)
        if node.type == "binary_expression" and operator_of(node) in ("+", "-"):
            right = -sign if operator_of(node) == "-" else sign
            return self._terms(node.child_by_field_name("left"), sign) + \
                self._terms(node.child_by_field_name("right"), right)
        return [(sign, node)]

    def row_major(self, index: Node) -> tuple[Coord, Coord, str]:
        """`Y * w + X` (in any order, X maybe several terms): the y and x coordinates and `w`."""
        terms = self._terms(index)
        rows = []
        for sign, term in terms:
            if sign == 1 and term.type == "binary_expression" and operator_of(term) == "*":
                for p, w in ((term.child_by_field_name("left"), term.child_by_field_name("right")),
                             (term.child_by_field_name("right"), term.child_by_field_name("left"))):
                    try:
                        y = self.coord(p)
                    except NotApplicable:
                        continue
                    if y.axis == "y" and self.free(w):
                        rows.append((term, y, self.flat(w)))
                        break
        if len(rows) != 1:
            raise NotApplicable
        row, y, stride = rows[0]
        rest = [(s, t) for s, t in terms if t != row]
        if len(rest) == 1 and rest[0][0] == 1:
            x = self.coord(rest[0][1])
        else:
            form = Linear()
            for s, t in rest:
                form = form + self.linear(t).scaled(s)
            text = " ".join(("- " if s < 0 else "+ " if i else "") + self.flat(t) for i, (s, t) in enumerate(rest))
            if rest[0][0] < 0 or form.coefficient("thread:x") != 1 or not form.kinds() <= {"thread", "loop", "const"}:
                raise NotApplicable
            x = Coord("x", form, text)
        if x.axis != "x" or x.form.coefficient("thread:y") or y.form.coefficient("thread:x"):
            raise NotApplicable
        return y, x, stride

    def coordinates_of(self, index: Node) -> tuple[dict[str, Coord], str]:
        if len(self.block) == 1:
            c = self.coord(index)
            if c.axis != "x":
                raise NotApplicable
            return {"x": c}, ""
        y, x, stride = self.row_major(index)
        return {"y": y, "x": x}, stride

    def read(self, sub: Node) -> Read:
        """A read of the input: its coordinates, the conditions around it on them, its rule."""
        coords, stride = self.coordinates_of(index_of(sub))
        guards: dict[str, list[str]] = {axis: [] for axis in coords}
        sides = {axis: set(c.bounded) for axis, c in coords.items()}
        for condition in self._conditions(sub):
            for conjunct in self._conjuncts(condition):
                found = self._on_coordinate(conjunct, coords)
                if found is not None:
                    axis, side, template = found
                    guards[axis].append(template)
                    sides[axis].add(side)
        if any(sides[axis] != {"lower", "upper"} for axis in coords):
            raise NotApplicable  # a border neither clamped nor checked: the load could read past the buffer
        rule = (stride, tuple((axis, " ".join(c.clamp.split()), frozenset(guards[axis]))
                              for axis, c in sorted(coords.items())))
        return Read(sub, coords, rule, guards, stride)

    def _conditions(self, sub: Node) -> list[Node]:
        """The conditions the read happens under (the `if`s and `?:` whose taken side holds it)."""
        out, child, node = [], sub, sub.parent
        while node is not None and node != self.body:
            if node.type in ("if_statement", "conditional_expression"):
                condition = node.child_by_field_name("condition")
                if node.child_by_field_name("alternative") == child or \
                        (node.type == "conditional_expression" and child == condition):
                    raise NotApplicable  # under an `else`: the condition's negation, not a shape this knows
                if node.child_by_field_name("consequence") == child and condition is not None:
                    value = condition.child_by_field_name("value") if condition.type == "condition_clause" else condition
                    out.append(value)
            elif node.type == "binary_expression" and operator_of(node) in ("&&", "||"):
                raise NotApplicable
            child, node = node, node.parent
        return out

    def _conjuncts(self, node: Node) -> list[Node]:
        node = stripped(node)
        if node.type == "binary_expression" and operator_of(node) == "&&":
            return self._conjuncts(node.child_by_field_name("left")) + self._conjuncts(node.child_by_field_name("right"))
        return [node]

    def _on_coordinate(self, node: Node, coords: dict[str, Coord]) -> tuple[str, str, str] | None:
        """(axis, "lower" or "upper", the condition with `{}` for the coordinate) of a comparison of
        a read's coordinate with a bound; None for any other condition (it stays in the compute
        phase, where the tile is read; the load needs only those that bound the coordinate)."""
        op = operator_of(node)
        if node.type != "binary_expression" or op not in ("<", "<=", ">", ">="):
            return None
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        for side, other, swapped in ((left, right, False), (right, left, True)):
            try:
                form = self.linear(side)
            except NotApplicable:
                continue
            for axis, c in coords.items():
                if form == c.form and self.free(other):
                    lower = (op in (">", ">=")) != swapped
                    template = self.data[node.start_byte:side.start_byte].decode() + "{}" + \
                        self.data[side.end_byte:node.end_byte].decode()
                    return axis, "lower" if lower else "upper", " ".join(template.split())
        return None

    def offsets(self, c: Coord) -> tuple[Linear, Linear]:
        """The least and greatest offset of a coordinate from the thread's, over its loops."""
        low = high = Linear()
        for key, k in c.form.terms:
            if key.startswith("thread:"):
                continue
            if key.startswith("loop:"):
                start = int(key.rsplit("@", 1)[1])
                _, a, b = self.loops[start]
                low, high = (low + a.scaled(k), high + b.scaled(k)) if k > 0 else (low + b.scaled(k), high + a.scaled(k))
            else:
                low, high = low + Linear(((key, k),)), high + Linear(((key, k),))
        return low + Linear(constant=c.form.constant), high + Linear(constant=c.form.constant)

    # ------------------------------------------------------------ the whole kernel

    def _thread_coordinates(self, statements: list[Node]) -> list[Node]:
        """The declarations `int x = blockIdx.x * blockDim.x + threadIdx.x;` (and y)."""
        self.coords, found = {}, []
        for st in statements:
            if st.type != "declaration" or len(st.children_by_field_name("declarator")) != 1:
                continue
            decl = st.child_by_field_name("declarator")
            value = decl.child_by_field_name("value") if decl.type == "init_declarator" else None
            if value is None or not _THREAD.search(self.text(value)):
                continue
            for axis in "xy":
                other = "y" if axis == "x" else "x"
                raw = self.text(value)
                if f".{other}" not in raw and f".{axis}" in raw and is_global_index(raw.replace(f".{axis}", ".x")):
                    if self.flat(st.child_by_field_name("type")) not in ("int", "const int") or axis in self.coords.values():
                        raise NotApplicable
                    self.coords[self.flat(decl.child_by_field_name("declarator"))] = axis
                    found.append(st)
        wanted = {"x"} if len(self.block) == 1 else {"x", "y"}
        if set(self.coords.values()) != wanted or any(name in self.assigned for name in self.coords):
            raise NotApplicable
        rest = self.data.decode()
        for st in found:
            rest = rest.replace(self.text(st), "")
        if _THREAD.search(rest):
            raise NotApplicable  # the thread or block index used elsewhere: not one thread per output
        return found

    def _accesses(self) -> tuple[Node, dict[str, list[Node]]]:
        """The one write (at the thread's own index) and the reads of each buffer."""
        writes, reads = [], {}
        for node in walk(self.body):
            if node.type != "identifier" or self.flat(node) not in self.params or \
                    not self.params[self.flat(node)].is_pointer:
                continue
            sub = node.parent
            if sub is None or sub.type != "subscript_expression" or sub.child_by_field_name("argument") != node:
                raise NotApplicable  # `*out`, `in + 1`, a buffer passed on: not a shape this knows
            parent = sub.parent
            if parent is not None and parent.type == "update_expression":
                raise NotApplicable
            if parent is not None and parent.type == "assignment_expression" and parent.child_by_field_name("left") == sub:
                writes.append(sub)
            else:
                reads.setdefault(self.flat(node), []).append(sub)
        if len(writes) != 1 or operator_of(writes[0].parent) != "=":
            raise NotApplicable
        write = writes[0]
        out = self.flat(write.child_by_field_name("argument"))
        if out in reads or any(n.type in ("for_statement", "while_statement", "do_statement")
                               for n in self._ancestors(write)):
            raise NotApplicable
        coords, _ = self.coordinates_of(index_of(write))
        if any(c.clamp != "{}" or c.form != Linear.atom(f"thread:{axis}") for axis, c in coords.items()):
            raise NotApplicable  # written at another index than the thread's own
        return write, reads

    def _ancestors(self, node: Node):
        node = node.parent
        while node is not None and node != self.body:
            yield node
            node = node.parent

    def _stencil(self, reads: dict[str, list[Node]]) -> tuple[str, list[Read]]:
        """The one buffer read only at neighbours of the thread, some not its own place."""
        found = []
        for name, subs in reads.items():
            try:
                analysed = [self.read(s) for s in subs]
            except NotApplicable:
                continue
            if len({r.rule for r in analysed}) != 1:
                raise NotApplicable  # borders handled differently by different reads
            if any(self.offsets(c) != (Linear(), Linear()) for r in analysed for c in r.coords.values()):
                found.append((name, analysed))
        if len(found) != 1:
            raise NotApplicable
        return found[0]

    def _halo(self, analysed: list[Read]) -> tuple[str, int | None, list[str]]:
        """R (text, number where known) covering every offset, and what the compiler must check."""
        reaches = []
        for r in analysed:
            for c in r.coords.values():
                low, high = self.offsets(c)
                reaches += [low.scaled(-1), high]
        if all(x.numeric() is not None for x in reaches):
            radius = max(x.constant for x in reaches)
            if not 0 < radius <= MAX_RADIUS:
                raise NotApplicable
            return str(radius), radius, []
        symbolic = [x for x in reaches if x.numeric() is None]
        halo = symbolic[0]
        checks = []
        for x in reaches:
            gap = halo + x.scaled(-1)
            if gap.numeric() is not None:
                if gap.constant < 0:
                    raise NotApplicable
            elif x.render() not in checks:
                checks.append(x.render())
        return halo.render(), None, checks

