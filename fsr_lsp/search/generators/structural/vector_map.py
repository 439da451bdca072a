"""One thread per element of an element-wise map -> four elements a thread, through 128-bit loads
and stores.

An element-wise kernel (GELU, SAXPY, a vector add, ReLU, a scale) gives each thread one element:
it loads one 32-bit value of each input and stores one of each output, so the GPU issues a load
or store instruction for every four bytes and an index computation for every element. The
rewrite gives each thread four consecutive elements through `float4` (or `int4`) accesses, one
instruction for sixteen bytes, and strides over the grid; the last `N % 4` elements are done one
at a time. Maps over `__half` or `__nv_bfloat16` (a typedef of either included) take eight
elements a thread, packed in a `uint4` and reached through an array of eight, as hand-written
training code packs them; every buffer of the map must then be 16-bit. The element-wise statements themselves become a `__device__` function of one element,
called for each lane of the vector, so every element is computed by the kernel's own text.

A 128-bit access needs a 16-byte aligned address, and a caller may pass `p + 1`: the rewrite
checks every vectorised pointer at run time and, when one is not aligned, runs the original's
one element at a time (grid-stride, since the grid is now a quarter of the elements).

The recogniser is strict: a 1-D launch whose grid covers the guard's bound at every size of the
spec; a body that declares the thread's index (`blockIdx.x * blockDim.x + threadIdx.x`, any
order) and guards it by a size parameter (`if (i < n) { ... }` or `if (i >= n) return;`); and
element-wise statements that use the index only as `p[i]` of float, int, half or bfloat16 buffers, write a
buffer only by a statement `p[i] = ...` (or `p[i] += ...`), never read one buffer after writing
another (an in-place call, `out == in`, reads what it read before), and have no loops, jumps,
atomics, barriers, shared memory or other thread indices. Anything else and it says nothing.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

from tree_sitter import Node

from ....kernels import Kernel
from ....specs import Spec
from ....specs.expr import ExprError, evaluate_int
from .syntax import dims, is_global_index, kernel_body, size_argument, threads_within_launch_bounds, walk
from .vector_text import Buffer, Helper, Names, elements_of, kernel_body as vector_kernel_body

BLOCK = 256  # threads a block of the rewrite: 1024 elements a block
# element type -> (C type, 128-bit type, bits): 16-bit elements go eight to a uint4, as real code packs them
_VECTORS = {"float32": ("float", "float4", 32), "int32": ("int", "int4", 32),
            "float16": ("__half", "uint4", 16), "bfloat16": ("__nv_bfloat16", "uint4", 16)}
_INDEX_TYPES = {"int", "unsigned", "unsigned int", "long", "long long", "unsigned long", "unsigned long long",
                "size_t", "int64_t", "uint32_t", "uint64_t"}
_FORBIDDEN = re.compile(r"\b(__shared__|__syncthreads|__syncwarp|__shfl\w*|atomic\w+|threadIdx|blockDim|blockIdx|"
                        r"gridDim|warpSize|cooperative_groups|asm|goto|volatile|fsr_\w+)\b")
_NOT_ELEMENT_WISE = {"for_statement", "while_statement", "do_statement", "return_statement", "break_statement",
                     "continue_statement", "goto_statement", "switch_statement", "labeled_statement",
                     "reference_declarator", "lambda_expression", "comma_expression"}


@dataclass(frozen=True)
class VectorMap:
    helper: str  # the element-wise statements as a `__device__` function of one element
    definition: str  # the kernel, calling it
    grid: str
    block: int
    note: str
    buffers: tuple[str, ...]  # the pointers read and written through 128-bit accesses


class _NotApplicable(Exception):
    pass


def vector_map(kernel: Kernel, spec: Spec, definition: str) -> VectorMap | None:
    """The rewrite, or None when the kernel is not one thread per element of an element-wise map."""
    if len(dims(spec.grid)) != 1 or len(dims(spec.block)) != 1 or spec.smem not in (0, "0") or \
            kernel.template_params:
        return None
    try:
        return _Map(kernel, spec, definition).rewrite()
    except _NotApplicable:
        return None


class _Map:
    def __init__(self, kernel: Kernel, spec: Spec, definition: str) -> None:
        self.kernel, self.spec = kernel, spec
        self.data = definition.encode()
        self.params = {p.name: p for p in kernel.params}
        self.buffers: dict[str, Buffer] = {}
        # each `p[i]`: its start byte -> (its end byte, the buffer, "read", "write" or "update": both)
        self.accesses: dict[int, tuple[int, str, str]] = {}
        self.pointers = {name for name, p in self.params.items() if p.is_pointer}
        self.named: set[str] = set()  # identifiers of the element-wise statements
        self.names = Names(set(re.findall(r"\b\w+\b", definition)))
        self.element: dict[str, str] = {}  # buffer -> the helper's parameter for its element
        self.constants: set[str] = set()  # named constants declared before the thread's index

    def s(self, node: Node) -> str:
        return self.data[node.start_byte:node.end_byte].decode()

    def rewrite(self) -> VectorMap:
        body = kernel_body(self.data)
        if body is None:
            raise _NotApplicable
        statements = [n for n in body.named_children if n.type != "comment"]
        constants = []
        while statements and self._constant(statements[0]):  # `const float GELU_COEF_A = 0.044715f;` first
            constants.append(statements.pop(0))
        if not statements:
            raise _NotApplicable
        index, index_type, first_value = self._index(statements[0])
        bound, elements, span = self._guard(statements[1:], index, body)
        count = self._count(bound)
        for st in elements:
            self._element_wise(st, index)
        if not any(b.written for b in self.buffers.values()):
            raise _NotApplicable  # no map: nothing stored per element
        self._reads_before_other_writes(elements, set())
        order = [p.name for p in self.kernel.params]
        self.buffers = dict(sorted(self.buffers.items(), key=lambda item: order.index(item[0])))
        block = self._block()
        helper = Helper(self.names.fresh(f"fsr_{self.kernel.name}_element"), list(self.buffers.values()),
                        [p for p in self.kernel.params if not p.is_pointer and p.name in self.named])
        self.element = {b: self.names.fresh(f"{b}_{index}") for b in self.buffers}
        declared = "".join(f"    {' '.join(self.s(c).split())}\n" for c in constants)  # the helper's own constants
        helper_text = helper.definition(self.kernel.name, self.element, declared + self._statements(span))
        signature = self.data[:body.start_byte].decode()
        kernel_text = signature + vector_kernel_body(helper, self.names, index, index_type, first_value, bound)
        used = tuple(b.name for b in self.buffers.values())
        kinds = sorted({b.vector for b in self.buffers.values()})
        elements = elements_of(list(self.buffers.values()))
        packed = f" (eight {self.buffers[used[0]].scalar} a 128-bit access)" if elements == 8 else ""
        note = (f"{'four' if elements == 4 else 'eight'} elements a thread through {'/'.join(kinds)} loads and stores"
                f"{packed}, grid-stride, scalar tail; scalar path when a pointer is not 16-byte aligned")
        count_text = count if re.fullmatch(r"\w+", count) else f"({count})"
        return VectorMap(helper_text, kernel_text, f"cdiv({count_text}, {block * elements})", block, note, used)

    # ---------------------------------------------------------------- the thread's element

    def _constant(self, st: Node) -> bool:
        """`const float NAME = <literals and earlier constants>;`, declared before the thread's index
        (as real code names its coefficients): the helper declares it too."""
        if st.type != "declaration" or not re.match(r"(const|constexpr)\b", self.s(st)):
            return False
        declarators = st.children_by_field_name("declarator")
        if len(declarators) != 1 or declarators[0].type != "init_declarator":
            return False
        name, value = declarators[0].child_by_field_name("declarator"), declarators[0].child_by_field_name("value")
        if name is None or name.type != "identifier" or value is None:
            return False
        words = set(re.findall(r"\b[A-Za-z_]\w*\b", self.s(value))) - self.constants
        if any(not re.fullmatch(r"\d*[eE]?|[fFlLuU]+", w) for w in words):
            return False  # a parameter, a call, the thread's index: no constant
        self.constants.add(self.s(name))
        return True

    def _index(self, st: Node) -> tuple[str, str, str]:
        """(name, type, value) of `int i = blockIdx.x * blockDim.x + threadIdx.x;`, the body's first statement."""
        declarators = st.children_by_field_name("declarator") if st.type == "declaration" else []
        if len(declarators) != 1 or declarators[0].type != "init_declarator":
            raise _NotApplicable
        name, value = declarators[0].child_by_field_name("declarator"), declarators[0].child_by_field_name("value")
        kind = st.child_by_field_name("type")
        if name is None or name.type != "identifier" or value is None or kind is None or \
                not is_global_index(self.s(value)) or " ".join(self.s(kind).split()) not in _INDEX_TYPES:
            raise _NotApplicable
        return self.s(name), " ".join(self.s(kind).split()), " ".join(self.s(value).split())

    def _guard(self, statements: list[Node], index: str, body: Node) -> tuple[str, list[Node], tuple[int, int]]:
        """(bound, the element-wise statements, the bytes they stand in) of `if (i >= n) return;`
        followed by them, or of `if (i < n) { them }` as the last statement."""
        if not statements or statements[0].type != "if_statement" or \
                statements[0].child_by_field_name("alternative") is not None:
            raise _NotApplicable
        guard = statements[0]
        cond, then = guard.child_by_field_name("condition"), guard.child_by_field_name("consequence")
        if cond is None or then is None:
            raise _NotApplicable
        c = " ".join(self.s(cond).split())
        inside = re.fullmatch(rf"\(\s*{index}\s*<\s*(\w+)\s*\)|\(\s*(\w+)\s*>\s*{index}\s*\)", c)
        outside = re.fullmatch(rf"\(\s*{index}\s*>=\s*(\w+)\s*\)|\(\s*(\w+)\s*<=\s*{index}\s*\)", c)
        if outside is not None and "".join(self.s(then).split()) in ("return;", "{return;}") and len(statements) > 1:
            bound = outside.group(1) or outside.group(2)
            return bound, statements[1:], (guard.end_byte, body.end_byte - 1)
        if inside is None or len(statements) != 1:
            raise _NotApplicable
        bound = inside.group(1) or inside.group(2)
        if then.type == "compound_statement":
            return bound, [n for n in then.named_children if n.type != "comment"], (then.start_byte + 1,
                                                                                     then.end_byte - 1)
        return bound, [then], (then.start_byte, then.end_byte)

    def _count(self, bound: str) -> str:
        """The elements as the spec's sizes say them; the original's grid must cover them (a
        launch that leaves elements out is no map of all of them)."""
        count = size_argument(self.kernel, self.spec, bound)
        if count is None:
            raise _NotApplicable
        for sizes in (self.spec.bench, *self.spec.tests):
            try:
                threads = evaluate_int(self.spec.grid[0], sizes, "grid") * int(dims(self.spec.block)[0])
                if threads < evaluate_int(count, sizes, bound):
                    raise _NotApplicable
            except (ExprError, TypeError, ValueError):
                raise _NotApplicable from None
        return count

    def _block(self) -> int:
        """BLOCK threads, or fewer where the kernel's `__launch_bounds__` caps them (a whole
        number of warps, or no rewrite)."""
        threads = threads_within_launch_bounds(self.kernel, BLOCK)
        if threads is None:
            raise _NotApplicable
        return threads

    # ---------------------------------------------------------------- the element-wise statements

    def _element_wise(self, st: Node, index: str) -> None:
        """Records the buffers one statement reads and writes; raises where it does anything else."""
        if _FORBIDDEN.search(self.s(st)):
            raise _NotApplicable
        for n in walk(st):
            if n.type in _NOT_ELEMENT_WISE or n.type == "update_expression" and self._names_buffer(n):
                raise _NotApplicable
            if n.type == "assignment_expression":
                self._assignment(n, st)
            if n.type != "identifier":
                continue
            name = self.s(n)
            if name == index:
                self._own_element(n.parent.parent if n.parent is not None else None, n)
            elif name in self.pointers:
                self._access(n, index)
            self.named.add(name)
            if name in self.params and self._declares(n):
                raise _NotApplicable  # a local by a parameter's name: the helper takes the parameter

    @staticmethod
    def _declares(name: Node) -> bool:
        """Whether the identifier is what a declaration declares (`float n = ...`, `float n;`)."""
        parent = name.parent
        while parent is not None and parent.type in ("init_declarator", "array_declarator", "pointer_declarator"):
            declared = parent.child_by_field_name("declarator")
            if declared is None or declared.id != name.id:
                return False
            name, parent = parent, parent.parent
        return parent is not None and parent.type == "declaration" and \
            any(d.id == name.id for d in parent.children_by_field_name("declarator"))

    def _names_buffer(self, node: Node) -> bool:
        return any(n.type == "identifier" and self.s(n) in self.pointers for n in walk(node))

    def _own_element(self, subscript: Node | None, index: Node) -> None:
        """The index is only ever the subscript of a buffer: `p[i]`, nothing computed from it."""
        if subscript is None or subscript.type != "subscript_expression" or index.parent is None or \
                index.parent.type != "subscript_argument_list" or \
                [c.id for c in index.parent.named_children] != [index.id]:
            raise _NotApplicable
        argument = subscript.child_by_field_name("argument")
        if argument is None or argument.type != "identifier" or self.s(argument) not in self.pointers:
            raise _NotApplicable

    def _access(self, name: Node, index: str) -> None:
        """`p[i]` read, or written by the statement `p[i] = ...` (checked in _assignment); any
        other element (`p[0]`, `p[n - 1]`) is no element of this thread's."""
        subscript = name.parent
        if subscript is None or subscript.type != "subscript_expression" or \
                subscript.child_by_field_name("argument") is None or \
                subscript.child_by_field_name("argument").id != name.id:
            raise _NotApplicable  # the pointer itself: `p + i`, `*p`, passed on
        indices = subscript.child_by_field_name("indices")
        inside = [c for c in indices.named_children if c.type != "comment"] if indices is not None else []
        if len(inside) != 1 or inside[0].type != "identifier" or self.s(inside[0]) != index:
            raise _NotApplicable
        buffer = self._buffer(self.s(name))
        outer = subscript.parent
        if outer is not None and outer.type == "pointer_expression":
            raise _NotApplicable  # `&p[i]`: an address the helper's element does not have
        at = (subscript.start_byte, subscript.end_byte)
        if outer is not None and outer.type == "assignment_expression" and \
                outer.child_by_field_name("left") is not None and outer.child_by_field_name("left").id == subscript.id:
            operator = outer.child_by_field_name("operator")
            updated = operator is None or self.s(operator) != "="
            self.accesses[at[0]] = (at[1], buffer.name, "update" if updated else "write")
            return
        kind = "read"
        if outer is not None and outer.type == "argument_list" and not buffer.const:
            buffer.written, kind = True, "update"  # a function may take it by reference: loaded and stored back
        buffer.read = True
        self.accesses[at[0]] = (at[1], buffer.name, kind)

    def _assignment(self, node: Node, statement: Node) -> None:
        """A buffer is written only by a statement of its own, `p[i] = e` or `p[i] op= e`."""
        left, op = node.child_by_field_name("left"), node.child_by_field_name("operator")
        names_buffer = left is not None and self._names_buffer(left)
        if not names_buffer:
            return
        argument = left.child_by_field_name("argument") if left.type == "subscript_expression" else None
        if argument is None or argument.type != "identifier" or node.parent is None or \
                node.parent.type != "expression_statement" or op is None:
            raise _NotApplicable
        buffer = self._buffer(self.s(argument))
        if buffer.const:
            raise _NotApplicable
        buffer.written = True
        if self.s(op) != "=":
            buffer.read = True
        elif node.parent.id == statement.id:
            buffer.assigned = True

    def _buffer(self, name: str) -> Buffer:
        """The buffer's record; only float and int buffers of one element an index are vectorised."""
        if name in self.buffers:
            return self.buffers[name]
        p = self.params[name]
        if p.dtype not in _VECTORS or (p.lanes or 1) != 1 or "volatile" in p.type_text:
            raise _NotApplicable
        scalar, vector, bits = _VECTORS[p.dtype]
        if any(b.bits != bits for b in self.buffers.values()):
            raise _NotApplicable  # one 128-bit access a buffer holds the same number of elements for all
        self.buffers[name] = Buffer(name, scalar, vector, p.pointee_const, bits)
        return self.buffers[name]

    def _reads_before_other_writes(self, statements: list[Node], written: set[str]) -> set[str]:
        """No buffer is read after another was written: called in place (`out == in`), the
        original's later read would see the new value, the helper's argument the old one."""
        for st in statements:
            if st.type == "if_statement":
                self._check_reads(st.child_by_field_name("condition"), written)
                branches = [c for c in (st.child_by_field_name("consequence"), st.child_by_field_name("alternative"))
                            if c is not None]
                written = written.union(*(self._reads_before_other_writes([b], set(written)) for b in branches))
            elif st.type in ("compound_statement", "else_clause"):
                written = self._reads_before_other_writes([n for n in st.named_children if n.type != "comment"],
                                                          written)
            else:
                self._check_reads(st, written)
                written = written | {b for at, (_, b, kind) in self.accesses.items()
                                     if kind != "read" and st.start_byte <= at < st.end_byte}
        return written

    def _check_reads(self, node: Node | None, written: set[str]) -> None:
        if node is None:
            return
        read = {b for at, (_, b, kind) in self.accesses.items()
                if kind != "write" and node.start_byte <= at < node.end_byte}
        if any(w != r for w in written for r in read):
            raise _NotApplicable

    # ---------------------------------------------------------------- text

    def _statements(self, span: tuple[int, int]) -> str:
        """The element-wise statements' own text, each `p[i]` its element's name, at one indent."""
        start, end = span
        line_end = self.data.find(b"\n", start)
        line_start = self.data.rfind(b"\n", 0, start) + 1
        rest = self.data[start:line_end].strip() if line_end >= 0 else b"-"
        if not rest or rest.startswith(b"//"):
            start = line_end + 1  # `{` or the early return ends its line: the statements start on the next
        elif not self.data[line_start:start].strip():
            start = line_start
        out, at = bytearray(), start
        for subscript_at, (subscript_end, buffer, _) in sorted(self.accesses.items()):
            out += self.data[at:subscript_at] + self.element[buffer].encode()
            at = subscript_end
        out += self.data[at:end]
        return textwrap.indent(textwrap.dedent(out.decode().strip("\n")).strip("\n"), "    ")
