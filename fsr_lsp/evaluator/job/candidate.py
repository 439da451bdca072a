"""What a candidate may be, checked before anything is compiled.

A candidate is device code only: one kernel with the original's name and parameter list,
any `__device__` helpers, constants and types it needs, and optionally its own `@fsr` block
that may change the launch (grid, block, smem) and nothing else; it need state only what it
changes, the rest (sizes, arguments, captured or written) comes from the original's spec. It is compiled as the
original file with the kernel's definition replaced, which is exactly the file the user
gets if they accept the rewrite.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tree_sitter import Node

from ...kernels import Kernel, abi_signature, discover
from ...kernels.lexical import macro_aliases
from ...kernels.treesitter import parse
from ...source import SourceText, Span
from ...specs import Spec, parse_spec
from ..compile.compiler_output import CandidateLines
from .preprocessing import preprocessing_problem

_DEVICE_QUALIFIERS = {"__device__", "__global__", "__constant__", "constexpr", "__shared__"}
_ALLOWED_TOP = {"comment", "preproc_def", "preproc_function_def", "preproc_call", "preproc_ifdef", "preproc_if",
                "preproc_else", "preproc_elif", "struct_specifier", "class_specifier", "union_specifier",
                "enum_specifier", "type_definition", "alias_declaration", "using_declaration",
                "static_assert_declaration", "namespace_alias_definition", ";", "ERROR"}
_CONTAINERS = {"namespace_definition", "linkage_specification", "template_declaration", "declaration_list",
               "preproc_ifdef", "preproc_if", "preproc_else", "preproc_elif"}


@dataclass(frozen=True)
class CandidateCheck:
    ok: bool
    reason: str = ""
    kernel: Kernel | None = None
    spec: Spec | None = None  # the original spec with the candidate's launch
    source: str = ""  # the translation unit to compile: the original file with the kernel replaced
    launch_changed: bool = False
    lines: CandidateLines | None = None  # where the candidate stands in `source`


def check_candidate(original_src: SourceText, original: Kernel, original_spec: Spec, text: str,
                    include_dirs: tuple[str, ...] = ()) -> CandidateCheck:
    problem = preprocessing_problem(text, original_src.text, include_dirs)
    if problem:
        return CandidateCheck(False, problem)
    src = SourceText(text)
    found = discover(src, frozenset(macro_aliases(original_src.data)))
    kernels = found.kernels
    if not kernels:
        return CandidateCheck(False, "the candidate defines no __global__ kernel")
    if len(kernels) > 1:
        names = ", ".join(k.name for k in kernels)
        return CandidateCheck(False, f"the candidate defines {len(kernels)} kernels ({names}); it must define exactly one")
    kernel = kernels[0]
    # One kernel: its @fsr block is the candidate's launch wherever it stands in the text.
    blocks = [o.comment for o in found.orphan_specs] + ([kernel.spec] if kernel.spec else [])
    if len(blocks) > 1:
        lines = ", ".join(str(b.span.start.line + 1) for b in sorted(blocks, key=lambda b: b.span.start_byte))
        return CandidateCheck(False, f"the candidate has {len(blocks)} @fsr blocks (lines {lines}); it may have one, "
                                     "which sets its launch")
    if blocks and kernel.spec is None:
        kernel = dataclasses.replace(kernel, spec=blocks[0])
    if kernel.name != original.name:
        return CandidateCheck(False, f"the candidate renames the kernel to {kernel.name!r}; it must stay {original.name!r}")
    if abi_signature(kernel.params) != abi_signature(original.params):
        want = ", ".join(p.type_text for p in original.params)
        got = ", ".join(p.type_text for p in kernel.params)
        return CandidateCheck(False, f"the candidate changes the parameter list to ({got}); it must stay ({want}) "
                                     "(adding const or __restrict__ is fine)")
    if not kernel.complete:
        return CandidateCheck(False, "the candidate kernel is incomplete: its braces do not balance")
    host = host_code(src, original_src, kernel.definition_span)
    if host:
        return CandidateCheck(False, f"the candidate contains host code: {host}; only device code is allowed")
    spec, launch_changed, why = _candidate_spec(src, kernel.typed_as(original), original_spec,
                                                original_src.text)
    if spec is None:
        return CandidateCheck(False, why)
    body = _without_spec(src, kernel)
    definition = original.definition_span
    before = original_src.slice(0, definition.start_byte)
    source = before + body + original_src.slice(definition.end_byte, len(original_src.data))
    lines = CandidateLines(before.count("\n") + 1, body.count("\n") + 1)
    return CandidateCheck(True, "", kernel, spec, source, launch_changed, lines)


def _candidate_spec(src: SourceText, kernel: Kernel, original: Spec, original_text: str) -> tuple[Spec | None, bool, str]:
    if kernel.spec is None:
        return original, False, ""
    # the block states what it changes; the rest is the original's, whose file defines its types
    result = parse_spec(src, kernel, base=original, types_from=original_text)
    if result.spec is None:
        first = result.errors[0] if result.errors else None
        where = f" (line {first.span.start.line + 1} of the candidate)" if first else ""
        return None, False, f"the candidate's @fsr block is invalid{where}: {first.message if first else 'invalid'}"
    own = result.spec
    if own.without_launch() != original.without_launch():
        changed = sorted(k for k, v in own.without_launch().items() if original.without_launch()[k] != v)
        return None, False, f"the candidate's @fsr block changes {', '.join(changed)}; it may change only grid, block and smem"
    merged = dataclasses.replace(original, grid=own.grid, block=own.block, smem=own.smem)
    changed = (own.grid, own.block, own.smem) != (original.grid, original.block, original.smem)
    return merged, changed, ""


def _without_spec(src: SourceText, kernel: Kernel) -> str:
    """The candidate text with its `@fsr` comment removed (the launch lives in the spec we pass on)."""
    if kernel.spec is None:
        return src.text
    span = kernel.spec.span
    return src.slice(0, span.start_byte) + src.slice(span.end_byte, len(src.data))


def host_code(src: SourceText, original_src: SourceText | None = None, kernel: Span | None = None) -> str:
    """A description of the first piece of host code in `src`, or '' when there is none.
    `kernel`: the candidate's kernel, found already, whose signature the grammar may misread
    (`__cluster_dims__(2, 1, 1)`, an attribute macro)."""
    # `#define DEVICE __device__ __forceinline__`, `#define KERNEL __global__`: qualifiers by another name
    both = src.data + b"\n" + (original_src.data if original_src else b"")
    qualifiers = {m.decode() for m in macro_aliases(both, (b"__global__", b"__device__"))}
    tree = parse(src.data)
    for node in _top_level(tree.root_node):
        if kernel is not None and kernel.start_byte <= node.start_byte and node.end_byte <= kernel.end_byte:
            continue
        problem = _host_problem(src, node, qualifiers)
        if problem:
            line = src.position(node.start_byte).line + 1
            return f"{problem} (line {line})"
    return ""


def _top_level(node: Node):
    for child in node.children:
        if child.type in _CONTAINERS:
            yield from _top_level(child)
        else:
            yield child


def _host_problem(src: SourceText, node: Node, qualifiers: set[str]) -> str:
    t = node.type
    if t in _ALLOWED_TOP or t.startswith("preproc_") or node.is_missing:
        return ""
    if t in ("namespace", "extern", "string_literal", "template", "template_parameter_list", "{", "}",
             "namespace_identifier", "identifier"):
        return ""  # the pieces of containers we walked through
    if t == "function_definition":
        kinds = {c.type for c in node.children}
        first = src.slice(node.start_byte, node.end_byte).split(None, 1)[0]
        if "__global__" in kinds or "__device__" in kinds or first in qualifiers:
            return ""
        return f"host function {_declared_name(src, node)}"
    if t == "declaration":
        quals = {src.slice(c.start_byte, c.end_byte) for c in node.children if c.type in ("type_qualifier", "__device__")}
        if quals & _DEVICE_QUALIFIERS or "const" in quals:
            return ""
        if any(c.type == "function_declarator" for c in node.children):
            return f"host function declaration {_declared_name(src, node)}"
        if any(c.type in ("struct_specifier", "class_specifier", "enum_specifier") for c in node.children) and \
                not any(c.type in ("init_declarator", "identifier") for c in node.children):
            return ""
        return f"host variable {_declared_name(src, node)}"
    return f"{t.replace('_', ' ')} at file scope"


def _declared_name(src: SourceText, node: Node) -> str:
    d = node.child_by_field_name("declarator")
    while d is not None and d.child_by_field_name("declarator") is not None:
        d = d.child_by_field_name("declarator")
    return src.slice(d.start_byte, d.end_byte) if d is not None else src.slice(node.start_byte, node.end_byte)[:40]
