"""`__constant__` data a program sets at run time, and the values the evaluator gives it.

A convolution's filter or a lookup table is declared without an initializer and set by the
host (`cudaMemcpyToSymbol`) before the launch. Left as the module loads it, zeros, the original
and a candidate would be compared on one filter, all zeros: a candidate that ignores the filter
would pass. So each input set fills these symbols with values of their type, the same bytes in
the original's module and the candidate's (gpu/constant_fill.py). Floats are drawn normal(0, 1); whole
numbers in [0, 8), small enough to index the arrays such tables index, and not all alike.
A constant with an initializer is the program's own data and is left as written; one of a type
fsr cannot fill (a struct with padding, pointers) is left as loaded, and the job says so.
"""

from __future__ import annotations

from ...kernels.c_types import element_type
from ...kernels.treesitter import nodes_of, parse
from ..records import ConstantPlan


def runtime_constants(source: str, aliases: dict[str, str]) -> tuple[list[ConstantPlan], list[str]]:
    """The `__constant__` symbols of `source` declared without an initializer, with the element
    type each is filled as; and a warning for each left as loaded."""
    plans: list[ConstantPlan] = []
    left: list[str] = []
    if "__constant__" not in source:
        return plans, left
    tree = parse(source.encode())
    for node in nodes_of(tree.root_node, "declaration"):
        scope = _file_scope(node)
        if scope is None:
            continue  # a block's declarations are no module symbols
        qualifiers = {c.text.decode() for c in node.children if c.type in ("type_qualifier", "storage_class_specifier")
                      and c.text}
        if "__constant__" not in qualifiers or "extern" in qualifiers:
            continue  # extern: another unit's symbol, set there
        type_node = node.child_by_field_name("type")
        base = " ".join((type_node.text or b"").decode().split()) if type_node is not None else ""
        base = base.removeprefix("struct ").removeprefix("union ")
        for declarator in node.children_by_field_name("declarator"):
            if declarator.type == "init_declarator":
                continue  # the program's own values
            name = _name_of(declarator)
            if name is None:
                left.append(f"__constant__ `{(declarator.text or b'').decode()}` is left as loaded (zeros): fsr cannot "
                            f"read its declarator, so the kernel is checked on that value only")
                continue
            if scope == "namespace":
                left.append(f"__constant__ `{name}` (in a namespace) is left as loaded (zeros): its symbol is mangled, "
                            f"so the kernel is checked on that value only")
                continue
            dtype, _ = element_type(aliases.get(base, base))
            if dtype is None:
                left.append(f"__constant__ `{name}` ({base}) is left as loaded (zeros): fsr cannot fill its type, "
                            f"so the kernel is checked on that value only")
                continue
            plans.append(ConstantPlan(name=name, dtype=dtype))
    return plans, left


_TRANSPARENT = {"preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef",
                "linkage_specification", "declaration_list"}


def _file_scope(node) -> str | None:
    """"file" for a declaration at file scope (include guards, #if branches and extern "C" blocks
    are still file scope), "namespace" inside a namespace, None inside a function or a type."""
    scope = "file"
    parent = node.parent
    while parent is not None and parent.type != "translation_unit":
        if parent.type == "namespace_definition":
            scope = "namespace"
        elif parent.type not in _TRANSPARENT:
            return None
        parent = parent.parent
    return scope


def _name_of(declarator) -> str | None:
    """`c_Kernel` of `c_Kernel[KERNEL_LENGTH]` or `table[4][4]` or `value`."""
    while declarator is not None and declarator.type == "array_declarator":
        declarator = declarator.child_by_field_name("declarator")
    if declarator is None or declarator.type != "identifier" or not declarator.text:
        return None
    return declarator.text.decode()
