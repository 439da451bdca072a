"""Specs as text: a spec rendered as its `/* @fsr ... */` block, and a filled-in template for
any kernel (the inferred spec when there is one, else a best guess with TODOs; a quick fix
inserts it)."""

from __future__ import annotations

import json

from ..kernels.kernel import Kernel
from .infer import BENCH_N, DEFAULT_BLOCK, SCALAR_FLOAT, infer_from_signature
from .at_args import spelled
from .model import BufferArg, CapturedValueArg, AtArg, NullArg, ScalarArg, Spec, StructArg, TextureArg, init_spelling
from .texture import is_texture, texture_spelling


def spec_template(kernel: Kernel) -> str:
    """A `/* @fsr ... */` block for the kernel: the inferred spec when there is one, otherwise
    a best guess with `TODO` comments on what must be checked."""
    spec, _ = infer_from_signature(kernel)
    if spec is not None:
        return render_spec(spec)
    ints = [p for p in kernel.params if not p.is_pointer and p.dtype and p.dtype.startswith(("int", "uint"))]
    names = [p.name for p in ints] or ["n"]
    bench_value = BENCH_N if len(names) == 1 else 4096 if len(names) == 2 else 512
    total = " * ".join(names)
    lines = ["/* @fsr"]
    lines.append("bench = { " + ", ".join(f"{n} = {bench_value}" for n in names) + " }  # TODO: sizes to time")
    lines.append("tests = [ { " + ", ".join(f"{n} = 1" for n in names) + " }, { "
                 + ", ".join(f"{n} = 1000" for n in names) + " } ]  # TODO: sizes to check")
    grid = f'"cdiv({names[0]}, {DEFAULT_BLOCK})"' if len(names) == 1 else \
        f'["cdiv({names[-1]}, 16)", "cdiv({names[0]}, 16)"]'
    block = str(DEFAULT_BLOCK) if len(names) == 1 else "[16, 16]"
    lines.append(f"grid = {grid}  # TODO: check the launch")
    lines.append(f"block = {block}")
    if kernel.is_template:
        lines.append(f'template = "TODO"  # arguments for {", ".join(kernel.template_params)}')
    lines.append("[args]")
    for p in kernel.params:
        if is_texture(p):
            lines.append(f'{p.name} = "texture[{", ".join(names[:2])}] float"  # TODO: its shape, texel type and '
                         f'sampler (address=, filter=); or capture a run')
        elif p.is_pointer:
            direction = "in" if p.pointee_const else "inout"
            note = "" if p.pointee_const else "  # TODO: out if the kernel never reads it"
            lines.append(f'{p.name} = "{direction}[{total}]"{note}')
        elif p.fields:
            members = [f'{f.name} = "{"in" if f.pointee_const else "inout"}[{total}]"' if f.is_pointer else
                       f'{f.name} = {SCALAR_FLOAT if f.dtype and f.dtype.startswith(("float", "bfloat")) else 1}'
                       for f in p.fields]
            lines.append(f"{p.name} = {{ {', '.join(members)} }}  # TODO: a struct: each member as a parameter")
        elif p in ints:
            lines.append(f'{p.name} = "{p.name}"')
        else:
            lines.append(f"{p.name} = {SCALAR_FLOAT}  # TODO: a typical value")
    lines.append("*/")
    return "\n".join(lines) + "\n"


def render_spec(spec: Spec) -> str:
    """The TOML text of a spec inside a `/* @fsr ... */` comment."""

    def value(v: object) -> str:
        return json.dumps(v) if isinstance(v, str) else repr(v)

    def table(d: dict) -> str:
        return "{ " + ", ".join(f"{k} = {value(v)}" for k, v in d.items()) + " }"

    def dims(d: tuple) -> str:
        return value(d[0]) if len(d) == 1 else "[" + ", ".join(value(x) for x in d) + "]"

    lines = ["/* @fsr", f"bench = {table(spec.bench)}"]
    if spec.tests:
        lines.append("tests = [ " + ", ".join(table(t) for t in spec.tests) + " ]")
    lines.append(f"grid = {dims(spec.grid)}")
    lines.append(f"block = {dims(spec.block)}")
    if spec.smem:
        lines.append(f"smem = {value(spec.smem)}")
    for key in ("rtol", "atol"):
        if getattr(spec, key) is not None:
            lines.append(f"{key} = {getattr(spec, key)!r}")
    if spec.template:
        lines.append(f"template = {value(spec.template)}")
    if spec.ref:
        lines.append(f"ref = {table(spec.ref)}")
    if not spec.edge:
        lines.append("edge = false")
    if spec.defines:
        lines.append("defines = [" + ", ".join(value(d) for d in spec.defines) + "]")
    if spec.flags:
        lines.append("flags = [" + ", ".join(value(f) for f in spec.flags) + "]")
    if spec.bench_inputs != "random":
        lines.append(f"bench_inputs = {value(spec.bench_inputs)}")
    lines.append("[args]")
    for a in spec.args:
        if isinstance(a, TextureArg):
            lines.append(f'{a.name} = "{texture_spelling(a)}"')
        elif isinstance(a, StructArg):
            lines.append(f"{a.name} = {{ " + ", ".join(f"{f.name} = {_arg_value(f, value)}" for f in a.fields) + " }")
        else:
            lines.append(f"{a.name} = {_arg_value(a, value)}")
    lines.append("*/")
    return "\n".join(lines) + "\n"


def _arg_value(a: BufferArg | ScalarArg | NullArg | CapturedValueArg | AtArg, value) -> str:
    """A pointer's or a scalar's value as TOML (a parameter's, or a struct member's)."""
    if isinstance(a, NullArg):
        return '"null"'
    if isinstance(a, AtArg):
        return f'"{spelled(a)}"'
    if isinstance(a, CapturedValueArg):
        return '"captured()"'
    if isinstance(a, BufferArg):
        extent = (f"{a.start} : {a.stop}" if a.start != "0" else a.length) + (" bytes" if a.unit == "bytes" else "")
        return f'"{a.direction}[{extent}] {init_spelling(a.init)}"' if a.direction != "out" else f'"out[{extent}]"'
    if isinstance(a.value, tuple):
        return "[" + ", ".join(value(v) for v in a.value) + "]"
    return value(a.value)
