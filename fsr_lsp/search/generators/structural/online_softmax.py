"""A row softmax, one thread per row -> one warp per row with the max and the sum in one pass.

The naive softmax walks its row three times: the max; the exponentials and their sum (often
stored into the output); the division by the sum. The warp-per-row rewrite (rows.py) makes
those loops coalesced but keeps all three: the row is read three times and written twice.
An online softmax takes the max and the sum together: each lane keeps a running max and a sum
of exponentials relative to it, rescaling the sum by `expf(old - new)` whenever the max grows;
a butterfly of (max, sum) pairs gives every lane the row's, and one more pass writes
`expf(x - max) / sum`. Two reads and one write of the row, where memory is the bound.

The recogniser is strict, on top of the row index and guard rows.py recognises: after the
row's pointers (`const float* x = inp + row * C;`) come only the float max (`= -INFINITY`)
and sum (`= 0.0f`), the three loops over the same columns (`for (int j = 0; j < C; j++)`)
- the max: `if (E > m) m = E;` or `m = fmaxf(m, E);`,
- the sum: `s += expf(E - m);`, or `y[j] = expf(E - m); s += y[j];`,
- the outputs: `y[j] = y[j] / s;`, `y[j] /= s;`, `y[j] *= inv;` (after `float inv = 1.0f / s;`),
  `y[j] *= 1.0f / s;`, or with no store in the second loop `y[j] = expf(E - m) / s;` (or `* inv`),
with one element expression E (reads only) in all of them, and nothing after. `expf` or
`__expf`, whichever the original uses, for every exponential. Anything else: no rewrite.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from ....kernels import Kernel
from ....specs import Spec
from .column_reductions import conditional
from .rows import _FORBIDDEN, WARP, Rewrite, _NotApplicable, _Rows
from .syntax import dims, single_statement, walk

_EXP = {"expf", "__expf"}
_MAX = {"fmaxf", "max"}
_ZERO = {"0", "0.0", "0.f", "0.0f"}
_ONE = {"1", "1.0", "1.f", "1.0f"}
_NOT_A_READ = {"call_expression", "assignment_expression", "update_expression", "comma_expression"}


def online_softmax(kernel: Kernel, spec: Spec, definition: str) -> Rewrite | None:
    """The rewrite, or None when the kernel is not a naive row softmax."""
    if len(dims(spec.grid)) != 1 or len(dims(spec.block)) != 1 or spec.smem not in (0, "0"):
        return None
    try:
        return _OnlineSoftmax(kernel, spec, definition).rewrite()
    except _NotApplicable:
        return None


@dataclass(frozen=True)
class _Shape:
    """What the three loops say, in the original's own names."""
    kind: str  # the column's type
    column: str  # the last loop's column variable
    bound: str  # the column count
    maxval: str
    total: str  # the sum
    exp: str  # expf or __expf
    element: str  # E, in the last loop's column
    target: str  # the output element, in the last loop's column
    scale: str  # "/ sum", "* inv" or "* (1.0f / sum)"
    inverse: str  # the original's `float inv = 1.0f / sum;`, or ""
    stored: bool  # whether the sum's loop stored the exponentials (a second write of the row)
    total_kind: str = "float"  # the sum's type: a `double` accumulator stays one


class _OnlineSoftmax(_Rows):
    def rewrite(self) -> Rewrite:
        index, row, lane, rows_expr, rest = self._row()
        if _FORBIDDEN.search(self.data[index.end_byte:].decode()):
            raise _NotApplicable
        self._replace_row_index(index, row, lane)
        pointers = 0
        while pointers < len(rest) and self._row_pointer(rest[pointers]):
            pointers += 1
        statements = rest[pointers:]
        if not statements:
            raise _NotApplicable
        shape = self._shape(statements)
        self.edits.append((statements[0].start_byte, statements[-1].end_byte,
                           self._online(shape, lane, self._indent(statements[0]))))
        block = self._block()
        writes = "2 writes" if shape.stored else "1 write"
        note = ("one warp per row, online softmax: max and sum in one pass over the row (the sum rescaled when the "
                f"max grows), then one pass writing the outputs: 2 reads and 1 write of the row instead of 3 reads "
                f"and {writes}")
        return Rewrite(self._applied(), f"cdiv(({rows_expr}) * {WARP}, {block})", block, note, 3, rows_expr)

    # ---------------------------------------------------------------- the statements

    def _row_pointer(self, st: Node) -> bool:
        """`const float* x = inp + row * C;`: a pointer into the row, kept as it is."""
        decl = st.child_by_field_name("declarator") if st.type == "declaration" else None
        if decl is None or decl.type != "init_declarator" or len(st.named_children) > 3:
            return False
        name, value = decl.child_by_field_name("declarator"), decl.child_by_field_name("value")
        return name is not None and name.type == "pointer_declarator" and value is not None and \
            value.type == "binary_expression" and not any(n.type in _NOT_A_READ for n in walk(value))

    def _shape(self, statements: list[Node]) -> _Shape:
        """The max, sum and division loops, with the declarations they need and nothing else."""
        declared: dict[str, str] = {}  # float (or double) variable -> its initial value
        kinds: dict[str, str] = {}  # variable -> float or double
        before_max: dict[str, str] = {}
        loops: list[Node] = []
        inverse: Node | None = None
        for st in statements:
            if st.type == "for_statement" and len(loops) < 3:
                before_max = dict(declared) if not loops else before_max
                loops.append(st)
            elif st.type == "declaration" and len(loops) < 2:
                found, kind = self._floats(st)
                declared.update(found)
                kinds.update(dict.fromkeys(found, kind))
            elif st.type == "declaration" and len(loops) == 2 and inverse is None:
                inverse = st
            else:
                raise _NotApplicable
        if len(loops) != 3:
            raise _NotApplicable
        headers = [self._loop_header(loop) for loop in loops]
        if any(start != "0" for _, _, start, _ in headers) or \
                len({_key(bound) for _, _, _, bound in headers}) != 1 or len({kind for kind, *_ in headers}) != 1:
            raise _NotApplicable
        columns = [j for _, j, _, _ in headers]
        maxval, element = self._max_loop(loops[0], columns[0])
        total, exp, stored = self._sum_loop(loops[1], columns[1], maxval, _template(element, columns[0]))
        if before_max.get(maxval) != "-INFINITY" or declared.get(total) not in _ZERO or \
                set(declared) != {maxval, total} or kinds[maxval] != "float":
            raise _NotApplicable  # a double sum is kept double (the original's accuracy), the max is a float
        inv = self._inverse(inverse, total) if inverse is not None else ""
        target, scale = self._output_loop(loops[2], columns[2], maxval, total, inv, exp,
                                          _template(element, columns[0]), stored)
        bound = headers[0][3]
        if columns[2] != columns[0] and re.search(rf"\b{re.escape(columns[2])}\b", element):
            raise _NotApplicable  # the element's own names would be taken by the last loop's column
        if any(re.search(rf"\b{re.escape(v)}\b", bound) for v in (maxval, total, inv) if v):
            raise _NotApplicable
        return _Shape(headers[0][0], columns[2], bound, maxval, total, exp,
                      _rename(element, columns[0], columns[2]), target, scale,
                      self.s(inverse) if inverse is not None else "", stored is not None, kinds[total])

    def _floats(self, st: Node) -> tuple[dict[str, str], str]:
        """`float m = -INFINITY, s = 0.0f;` (or `double s = 0.0;`): each variable with its initial
        value, and the declaration's type."""
        kind = st.child_by_field_name("type")
        if kind is None or self.s(kind) not in ("float", "double") or any(c.type == "type_qualifier" for c in st.children):
            raise _NotApplicable
        out = {}
        for decl in st.named_children:
            if decl.type == "init_declarator":
                name, value = decl.child_by_field_name("declarator"), decl.child_by_field_name("value")
                if name is None or name.type != "identifier" or value is None:
                    raise _NotApplicable
                out[self.s(name)] = "".join(self.s(value).split())
            elif decl.id != kind.id:
                raise _NotApplicable
        return out, self.s(kind)

    def _max_loop(self, loop: Node, j: str) -> tuple[str, str]:
        """`if (E > m) m = E;` or `m = fmaxf(m, E);`: (m, E)."""
        st = single_statement(loop.child_by_field_name("body"))
        if st is None:
            raise _NotApplicable
        found = conditional(self.s, st, set())
        if found is not None:
            maxval, how, assignment = found
            if how != "if>":
                raise _NotApplicable
            return maxval, self._element(assignment.child_by_field_name("right"), j, maxval)
        assignment = _expression(st)
        right = assignment.child_by_field_name("right") if assignment is not None else None
        if assignment is None or self.s(assignment.child_by_field_name("operator")) != "=" or right is None or \
                right.type != "call_expression" or self.s(right.child_by_field_name("function")) not in _MAX:
            raise _NotApplicable
        maxval = self.s(assignment.child_by_field_name("left"))
        args = right.child_by_field_name("arguments").named_children
        texts = [self.s(a) for a in args]
        if len(args) != 2 or texts.count(maxval) != 1:
            raise _NotApplicable
        return maxval, self._element(args[1 - texts.index(maxval)], j, maxval)

    def _sum_loop(self, loop: Node, j: str, maxval: str, element: str) -> tuple[str, str, str | None]:
        """`s += expf(E - m);` or `y[j] = expf(E - m); s += y[j];`: (s, the exponential's
        function, the stored element's template or None)."""
        body = loop.child_by_field_name("body")
        kept = [n for n in body.named_children if n.type != "comment"] if body.type == "compound_statement" else [body]
        added = _expression(kept[-1])
        if added is None or self.s(added.child_by_field_name("operator")) != "+=" or \
                added.child_by_field_name("left").type != "identifier":
            raise _NotApplicable
        total = self.s(added.child_by_field_name("left"))
        if len(kept) == 1:
            return total, self._exp(added.child_by_field_name("right"), j, maxval, element), None
        stored = _expression(kept[0])
        if len(kept) != 2 or stored is None or self.s(stored.child_by_field_name("operator")) != "=":
            raise _NotApplicable
        target = self._target(stored.child_by_field_name("left"), j)
        if _template(self.s(added.child_by_field_name("right")), j) != target:
            raise _NotApplicable
        return total, self._exp(stored.child_by_field_name("right"), j, maxval, element), target

    def _inverse(self, st: Node, total: str) -> str:
        """`float inv = 1.0f / s;` (const or not): inv."""
        decl = st.child_by_field_name("declarator")
        value = decl.child_by_field_name("value") if decl is not None and decl.type == "init_declarator" else None
        kind = st.child_by_field_name("type")
        if value is None or kind is None or self.s(kind) != "float" or not self._is_inverse(value, total) or \
                decl.child_by_field_name("declarator").type != "identifier":
            raise _NotApplicable
        return self.s(decl.child_by_field_name("declarator"))

    def _output_loop(self, loop: Node, j: str, maxval: str, total: str, inv: str, exp: str, element: str,
                     stored: str | None) -> tuple[str, str]:
        """The division's loop: (the output element, in its own column; "/ s" or "* inv" or
        "* (1.0f / s)", the original's way to divide)."""
        body = single_statement(loop.child_by_field_name("body"))
        assignment = _expression(body) if body is not None else None
        if assignment is None:
            raise _NotApplicable
        left, right = assignment.child_by_field_name("left"), assignment.child_by_field_name("right")
        op = self.s(assignment.child_by_field_name("operator"))
        target = self._target(left, j)
        if stored is not None and target != stored:
            raise _NotApplicable
        if op in ("/=", "*="):
            if stored is None:
                raise _NotApplicable
            return self.s(left), self._scale(op[0], right, total, inv)
        if op != "=" or right.type != "binary_expression":
            raise _NotApplicable
        first, second = right.child_by_field_name("left"), right.child_by_field_name("right")
        if stored is not None and _template(self.s(first), j) != stored:
            raise _NotApplicable
        if stored is None and self._exp(first, j, maxval, element) != exp:
            raise _NotApplicable
        return self.s(left), self._scale(self.s(right.child_by_field_name("operator")), second, total, inv)

    # ---------------------------------------------------------------- expressions

    def _element(self, node: Node, j: str, maxval: str) -> str:
        """E: an expression that reads the column's element and nothing else."""
        text = self.s(node)
        if any(n.type in _NOT_A_READ for n in walk(node)) or not re.search(rf"\b{re.escape(j)}\b", text) or \
                re.search(rf"\b{re.escape(maxval)}\b", text):
            raise _NotApplicable
        return text

    def _exp(self, node: Node, j: str, maxval: str, element: str) -> str:
        """`expf(E - m)` with the max loop's E: the function's name."""
        fn, args = node.child_by_field_name("function"), node.child_by_field_name("arguments")
        if node.type != "call_expression" or fn is None or self.s(fn) not in _EXP or args is None or \
                len(args.named_children) != 1:
            raise _NotApplicable
        arg = args.named_children[0]
        if arg.type != "binary_expression" or self.s(arg.child_by_field_name("operator")) != "-" or \
                self.s(arg.child_by_field_name("right")) != maxval:
            raise _NotApplicable
        if _template(self._element(arg.child_by_field_name("left"), j, maxval), j) != element:
            raise _NotApplicable
        return self.s(fn)

    def _target(self, node: Node, j: str) -> str:
        """An output element at an index that uses the column, as a template."""
        index = node.child_by_field_name("indices") or (node.named_children[-1] if node.named_children else None)
        if node.type != "subscript_expression" or index is None or \
                not re.search(rf"\b{re.escape(j)}\b", self.s(index)) or any(n.type in _NOT_A_READ for n in walk(node)):
            raise _NotApplicable
        return _template(self.s(node), j)

    def _scale(self, op: str, node: Node, total: str, inv: str) -> str:
        """`/ s`, `* inv` or `* (1.0f / s)`, as the original divides."""
        text = self.s(node)
        if op == "/" and (text == total or self._float_of(node) == total):
            return f"/ {' '.join(text.split())}"
        if op == "*" and inv and text == inv:
            return f"* {inv}"
        if op == "*" and self._is_inverse(node, total):
            return f"* ({' '.join(text.strip('()').split())})"
        raise _NotApplicable

    def _float_of(self, node: Node) -> str:
        """`x` of `(float)x`, `(float)(x)` or `static_cast<float>(x)`; '' for anything else."""
        while node.type == "parenthesized_expression" and node.named_children:
            node = node.named_children[0]
        if node.type == "cast_expression":
            kind, value = node.child_by_field_name("type"), node.child_by_field_name("value")
            if kind is not None and value is not None and _key(self.s(kind)) == "float":
                while value.type == "parenthesized_expression" and value.named_children:
                    value = value.named_children[0]
                return self.s(value) if value.type == "identifier" else ""
        if node.type == "call_expression" and _key(self.s(node.child_by_field_name("function"))) == "static_cast<float>":
            args = node.child_by_field_name("arguments").named_children
            return self.s(args[0]) if len(args) == 1 and args[0].type == "identifier" else ""
        return ""

    def _is_inverse(self, node: Node, total: str) -> bool:
        """`1.0f / s`, parenthesised or not."""
        while node.type == "parenthesized_expression" and node.named_children:
            node = node.named_children[0]
        return node.type == "binary_expression" and self.s(node.child_by_field_name("operator")) == "/" and \
            self.s(node.child_by_field_name("left")) in _ONE and self.s(node.child_by_field_name("right")) == total

    # ---------------------------------------------------------------- the rewrite

    def _online(self, shape: _Shape, lane: str, i: str) -> str:
        """The one pass for max and sum, the butterfly of (max, sum) pairs and the output pass."""
        v, offset, other_max, other_sum, larger = (self._fresh(n) for n in
                                                   ("v", "offset", "other_max", "other_sum", "larger"))
        m, s, e, j, kind, n = shape.maxval, shape.total, shape.exp, shape.column, shape.kind, shape.bound
        inverse = f"{i}{shape.inverse}\n" if shape.inverse else ""
        declarations = (f"float {m} = -INFINITY, {s} = 0.0f;" if shape.total_kind == "float" else
                        f"float {m} = -INFINITY;\n{i}{shape.total_kind} {s} = 0.0;")  # a double sum stays double
        return (f"// online softmax: the max and the sum in one pass, the sum rescaled whenever the max grows\n"
                f"{i}{declarations}\n"
                f"{i}for ({kind} {j} = {lane}; {j} < {n}; {j} += {WARP}) {{\n"
                f"{i}    const float {v} = {shape.element};\n"
                f"{i}    if ({v} > {m}) {{ {s} *= {e}({m} - {v}); {m} = {v}; }}  // {e}(-INFINITY) = 0 at the first\n"
                f"{i}    if ({m} != -INFINITY) {s} += {e}({v} - {m});  // a column of -INFINITY adds 0, as it did\n"
                f"{i}}}\n"
                f"{i}// each lane holds its columns' (max, sum): the butterfly gives every lane the row's, each sum\n"
                f"{i}// rescaled to the larger max\n"
                f"{i}for (int {offset} = {WARP // 2}; {offset} > 0; {offset} >>= 1) {{\n"
                f"{i}    const float {other_max} = __shfl_xor_sync(0xffffffffu, {m}, {offset});\n"
                f"{i}    const {shape.total_kind} {other_sum} = __shfl_xor_sync(0xffffffffu, {s}, {offset});\n"
                f"{i}    const float {larger} = fmaxf({m}, {other_max});\n"
                f"{i}    if ({larger} != -INFINITY)  // lanes without columns hold (-INFINITY, 0): they add 0, not NaN\n"
                f"{i}        {s} = {s} * {e}({m} - {larger}) + {other_sum} * {e}({other_max} - {larger});\n"
                f"{i}    {m} = {larger};\n"
                f"{i}}}\n"
                f"{inverse}"
                f"{i}for ({kind} {j} = {lane}; {j} < {n}; {j} += {WARP})\n"
                f"{i}    {shape.target} = {e}({shape.element} - {m}) {shape.scale};")

    def _fresh(self, name: str) -> str:
        """`name`, or `fsr_name` where the kernel already uses it."""
        return name if not re.search(rf"\b{name}\b", self.text) else f"fsr_{name}"


def _expression(st: Node | None) -> Node | None:
    """The assignment of `a = b;` (or `a op= b;`), else None."""
    if st is None or st.type != "expression_statement" or not st.named_children:
        return None
    e = st.named_children[0]
    return e if e.type == "assignment_expression" else None


def _key(text: str) -> str:
    return "".join(text.split())


def _template(text: str, j: str) -> str:
    """An expression of the column `j`, comparable with the same expression of another loop's column."""
    return re.sub(rf"\b{re.escape(j)}\b", "\0", _key(text))


def _rename(text: str, old: str, new: str) -> str:
    return re.sub(rf"\b{re.escape(old)}\b", new, text)
