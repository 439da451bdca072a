"""Read and check the `@fsr` TOML block of a kernel; every problem gets its place in the file."""

from __future__ import annotations

import dataclasses
import re
import tomllib
from dataclasses import dataclass, field
from typing import Any

from ..kernels.packs import expanded
from ..kernels.kernel import Kernel, Param, SpecComment
from ..source import SourceText, Span
from .build_flags import flags_problem
from .defines import defines_problem
from .at_args import at_arg, ats_ok
from .expr import ExprError, evaluate, evaluate_int
from .locate import locate, strip_stars
from .overlay import overlay
from .torch_ref import read_ref
from .inits import INIT_FORMS, INT_RANGE, read_init
from .model import (Arg, BufferArg, CapturedValueArg, NullArg, Problem, ScalarArg, Severity, SizeSet, Spec, SpecResult,
                    StructArg)
from .texture import is_texture
from .param_types import param_dtype, template_substitution
from .windows import read_window
from .scalar_keys import one_of, tolerance
from .size_warnings import tied_sizes_message
from .texture_args import texture_param

KNOWN_KEYS = ("bench", "tests", "grid", "block", "smem", "rtol", "atol", "args", "ref", "template", "edge", "defines",
              "flags", "bench_inputs")
_BYTES = re.compile(r"\s*\bbytes\s*$")  # `in[16 bytes]`: a length in bytes
_BUFFER = re.compile(r"^\s*(in|out|inout)\b\s*(?:\[(?P<len>[^\]]*)\])?\s*(?P<init>.*?)\s*$")
MAX_TESTS = 64
MAX_SMEM = 227 * 1024  # dynamic shared memory per block, the most of any GPU (Hopper, opt-in)
_TOML_POS = re.compile(r"\(at line (\d+), column (\d+)\)")
MAX_THREADS_PER_BLOCK = 1024


class _Invalid(Exception):
    """A problem that makes the current key unusable (already recorded)."""


@dataclass
class _Ctx:
    src: SourceText
    kernel: Kernel
    comment: SpecComment
    body: str
    problems: list[Problem] = field(default_factory=list)
    types_from: str | None = None  # the text defining the structs its template parameters name
    aliased: set[str] = field(default_factory=set)  # buffers another parameter is `same(X)` as: written through it

    def at(self, key: str | None = None, section: str | None = None) -> Span:
        """The span of `key = ...` in the block (section-aware), or the block's first line; a
        struct member's (`A.elements`) is its parameter's line."""
        return locate(self.src, self.comment, self.body, key.split(".")[0] if key else key, section)

    def add(self, message: str, key: str | None = None, section: str | None = None,
            severity: Severity = "error", code: str = "spec") -> None:
        self.problems.append(Problem(message, self.at(key, section), severity, code))

    def fail(self, message: str, key: str | None = None, section: str | None = None, code: str = "spec") -> _Invalid:
        self.add(message, key, section, code=code)
        return _Invalid()


def parse_spec(src: SourceText, kernel: Kernel, base: Spec | None = None, types_from: str | None = None) -> SpecResult:
    """The kernel's spec, or an inferred one when it has no `@fsr` block. With `base` (a
    candidate's block over the original's spec), the block states only what it changes;
    `types_from` is the text whose structs type its by-value template parameters (a candidate's
    block is read against the original's file, which defines them)."""
    if kernel.spec is None:
        from .infer import infer_spec

        return infer_spec(src, kernel)
    comment = kernel.spec
    ctx = _Ctx(src, kernel, comment, strip_stars(comment.body), types_from=types_from)
    try:
        data = tomllib.loads(ctx.body)
    except tomllib.TOMLDecodeError as e:
        return SpecResult(None, (Problem(f"@fsr spec is not valid TOML: {e}", _toml_error_span(ctx, str(e)), "error", "spec-syntax"),))
    spec = _build(ctx, overlay(base, data) if base is not None else data)
    has_error = any(p.severity == "error" for p in ctx.problems)
    return SpecResult(None if has_error else spec, tuple(ctx.problems))


def _build(ctx: _Ctx, data: dict[str, Any]) -> Spec | None:
    for key in data:
        if key not in KNOWN_KEYS:
            ctx.add(f"unknown key {key!r} in @fsr spec (known: {', '.join(KNOWN_KEYS)})", key, severity="warning")
    try:
        bench = _sizes(ctx, data.get("bench"), "bench", None)
    except _Invalid:
        return None
    tests: list[SizeSet] = []
    raw_tests = data.get("tests", [])
    if not isinstance(raw_tests, list):
        ctx.add("tests must be a list of size tables, e.g. [ { n = 1 }, { n = 1000 } ]", "tests")
    else:
        if len(raw_tests) > MAX_TESTS:
            ctx.add(f"{len(raw_tests)} test sizes; at most {MAX_TESTS} (each is run several times)", "tests")
            raw_tests = raw_tests[:MAX_TESTS]
        for i, entry in enumerate(raw_tests):
            try:
                tests.append(_sizes(ctx, entry, f"tests[{i}]", tuple(bench)))
            except _Invalid:
                pass
    if "tests" not in data:
        ctx.add("no test sizes: only the bench size will be checked (add tests = [ {...}, ... ])", "bench",
                severity="warning", code="spec-no-tests")
    all_sizes = [bench, *tests]
    tied = tied_sizes_message(all_sizes) if tests else None
    if tied:
        ctx.add(tied, "tests", severity="warning", code="spec-sizes-tied")
    defines = data.get("defines", [])
    if defines_problem(defines) is not None:
        ctx.add(defines_problem(defines), "defines")  # type: ignore[arg-type]
        defines = []
    flags = data.get("flags", [])
    if flags_problem(flags) is not None:
        ctx.add(flags_problem(flags), "flags")  # type: ignore[arg-type]
        flags = []
    template = data.get("template")
    if template is not None and not isinstance(template, str):
        ctx.add('template must be a string of template arguments, e.g. template = "float, 256"', "template")
        template = None
    ctx.kernel = expanded(ctx.kernel, template, ctx.types_from or ctx.src.text)  # packs, by-value structs instantiated
    if ctx.kernel.is_template and template is None:
        ctx.add(f"{ctx.kernel.name} is a template: add template = \"...\" with the arguments to instantiate it "
                f"({', '.join(ctx.kernel.template_params)})", code="spec-template")
    grid = _launch_dims(ctx, data.get("grid"), "grid", all_sizes, allow_expr=True)
    block = _launch_dims(ctx, data.get("block"), "block", all_sizes, allow_expr=False)
    if block is not None:
        _check_block(ctx, block)
    smem = data.get("smem", 0)
    if not _expr_ok(ctx, smem, "smem", all_sizes, minimum=0, maximum=MAX_SMEM):
        smem = 0
    rtol, atol = tolerance(ctx.add, data, "rtol"), tolerance(ctx.add, data, "atol")
    edge = one_of(ctx.add, data, "edge", (True, False),
                  "edge must be true or false (false: the kernel only takes sizes like the listed ones)")
    bench_inputs = one_of(ctx.add, data, "bench_inputs", ("random", "captured"), 'bench_inputs must be "random" or '
                          '"captured" (the bytes a captured run saved, at the bench size)')
    args = _args(ctx, data.get("args"), all_sizes, template)
    ref = read_ref(ctx, data.get("ref"), args)
    if grid is None or block is None or args is None:
        return None
    return Spec(bench=bench, tests=tuple(tests), grid=grid, block=tuple(int(b) for b in block), args=args,
                smem=smem, rtol=rtol, atol=atol, ref=ref, template=template, edge=edge, defines=tuple(defines),
                flags=tuple(flags), bench_inputs=bench_inputs)


def _sizes(ctx: _Ctx, value: Any, key: str, names: tuple[str, ...] | None) -> SizeSet:
    top = key.split("[")[0]
    if not isinstance(value, dict) or not value:
        raise ctx.fail(f"{key} must be a table of sizes, e.g. {top} = {{ n = 16777216 }}", top, code="spec-sizes")
    sizes: SizeSet = {}
    for name, v in value.items():
        if not name.isidentifier():
            raise ctx.fail(f"size name {name!r} in {key} is not an identifier", top)
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise ctx.fail(f"size {name} in {key} must be a positive integer, got {v!r}", top, code="spec-sizes")
        sizes[name] = v
    if names is not None and set(sizes) != set(names):
        missing = sorted(set(names) - set(sizes))
        extra = sorted(set(sizes) - set(names))
        detail = "; ".join(filter(None, [missing and f"missing {', '.join(missing)}", extra and f"unknown {', '.join(extra)}"]))
        raise ctx.fail(f"{key} must give the same sizes as bench ({', '.join(names)}): {detail}", top, code="spec-sizes")
    return sizes


def _launch_dims(ctx: _Ctx, value: Any, key: str, sizes: list[SizeSet], allow_expr: bool) -> tuple | None:
    if value is None:
        example = '"cdiv(n, 256)"' if allow_expr else "256"
        ctx.add(f"missing {key} (e.g. {key} = {example})", code=f"spec-{key}")
        return None
    dims = value if isinstance(value, list) else [value]
    if not 1 <= len(dims) <= 3:
        ctx.add(f"{key} must have 1 to 3 dimensions, got {len(dims)}", key, code=f"spec-{key}")
        return None
    for d in dims:
        if isinstance(d, str) and not allow_expr:
            ctx.add(f"{key} must be integers, got {d!r}", key, code=f"spec-{key}")
            return None
        if not _expr_ok(ctx, d, key, sizes, minimum=1):
            return None
    return tuple(dims)


def _expr_ok(ctx: _Ctx, value: Any, key: str, sizes: list[SizeSet], minimum: int, maximum: int | None = None) -> bool:
    """Check that an int or expression gives an integer in [minimum, maximum] at every size."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        ctx.add(f"{key} must be an integer or an expression string, got {value!r}", key, code=f"spec-{key}")
        return False
    for s in sizes:
        try:
            v = evaluate_int(value, s, key)
        except ExprError as e:
            ctx.add(f"{key}: {e}", key, code=f"spec-{key}")
            return False
        if v < minimum or (maximum is not None and v > maximum):
            bound = f">= {minimum}" if v < minimum else f"at most {maximum} (what any GPU allows a block)"
            ctx.add(f"{key} = {value!r} gives {v} at {_fmt(s)}; it must be {bound}", key, code=f"spec-{key}")
            return False
    return True


def _check_block(ctx: _Ctx, block: tuple) -> None:
    threads = 1
    for b in block:
        threads *= int(b)
    if threads > MAX_THREADS_PER_BLOCK:
        ctx.add(f"block has {threads} threads; a block may have at most {MAX_THREADS_PER_BLOCK}", "block", code="spec-block")
    elif len(block) == 3 and int(block[2]) > 64:
        ctx.add(f"block z = {block[2]} exceeds 64", "block", code="spec-block")
    bounds = ctx.kernel.launch_bounds
    if bounds:
        first = bounds.split(",")[0].strip()
        if first.isdigit() and threads > int(first):
            ctx.add(f"block has {threads} threads but __launch_bounds__ allows {first}", "block", code="spec-block")


def _args(ctx: _Ctx, table: Any, sizes: list[SizeSet], template: str | None) -> tuple[Arg, ...] | None:
    params = ctx.kernel.params
    if not isinstance(table, dict):
        names = ", ".join(p.name for p in params)
        ctx.add(f"missing [args] table: give one entry per kernel parameter ({names})", code="spec-missing-arg")
        return None
    known = {p.name for p in params}
    for name in table:
        if name not in known:
            ctx.add(f"[args] names {name!r}, which is not a parameter of {ctx.kernel.name} "
                    f"(parameters: {', '.join(p.name for p in params)})", name, "args", code="spec-unknown-arg")
    out: list[Arg] = []
    ok = True
    missing = [p.name for p in params if p.name not in table]
    if missing:
        ctx.add(f"[args] has no entry for {', '.join(missing)}", "args", code="spec-missing-arg")
        ok = False
    subst = template_substitution(ctx.kernel, template)
    ctx.aliased = {a.of for v in table.values() if (a := at_arg("", v)) is not None and a.at == "start"}
    for p in params:
        if p.name not in table:
            continue
        try:
            out.append(_arg(ctx, p, table[p.name], sizes, subst))
        except _Invalid:
            ok = False
    ok = ats_ok(ctx, out, ctx.kernel.name) and ok
    return tuple(out) if ok else None


def _arg(ctx: _Ctx, p: Param, value: Any, sizes: list[SizeSet], subst: dict[str, str]) -> Arg:
    if is_texture(p):
        return texture_param(ctx, p, value, sizes)
    if not p.is_pointer and isinstance(value, str) and value.strip() == "captured()":
        return CapturedValueArg(p.name)  # the run's bytes of a value fsr may not read member by member
    if p.is_pointer and (at := at_arg(p.name, value)) is not None:
        return at
    if p.fields:
        return _struct(ctx, p, value, sizes, subst)
    return _plain_arg(ctx, p, value, sizes, subst, p.name)


def _struct(ctx: _Ctx, p: Param, value: Any, sizes: list[SizeSet], subst: dict[str, str]) -> StructArg:
    """A struct passed by value: one entry per member, each read as a parameter of its type."""
    names = [f.name for f in p.fields]
    example = ", ".join(f"{f.name} = " + ('"in[n]"' if f.is_pointer else "...") for f in p.fields)
    if not isinstance(value, dict):
        raise ctx.fail(f"{p.name} is a struct ({p.base_type}) passed by value: give each member, "
                       f"{p.name} = {{ {example} }}", p.name, "args", code="spec-bad-arg")
    unknown = [k for k in value if k not in names]
    missing = [n for n in names if n not in value]
    if unknown or missing:
        said = "; ".join(filter(None, [missing and f"no entry for {', '.join(missing)}",
                                       unknown and f"{', '.join(unknown)} is no member"]))
        raise ctx.fail(f"{p.name} ({p.base_type}, members {', '.join(names)}): {said}", p.name, "args",
                       code="spec-bad-arg")
    fields = []
    for f in p.fields:
        arg = _plain_arg(ctx, f, value[f.name], sizes, subst, f"{p.name}.{f.name}")
        assert isinstance(arg, (BufferArg, ScalarArg, NullArg))
        fields.append(arg)
    return StructArg(p.name, tuple(fields))


def _plain_arg(ctx: _Ctx, p: Param, value: Any, sizes: list[SizeSet], subst: dict[str, str], key: str) -> Arg:
    """A pointer or a scalar: a parameter, or a member of a struct parameter (`key` names it in
    messages, `A.elements`; problems are placed on the parameter's line)."""
    if p.name != key:
        return _renamed(_plain_arg(ctx, dataclasses.replace(p, name=key), value, sizes, subst, key), p.name)
    if not p.is_pointer:
        if isinstance(value, str) and _BUFFER.match(value):
            raise ctx.fail(f"{p.name} is a scalar ({p.type_text}); give a number or a size expression, not {value!r}", p.name, "args")
        dtype, lanes = param_dtype(p, subst)
        if dtype is None:  # a class fsr cannot read, or a template parameter the spec leaves open
            raise ctx.fail(f"{p.name}: fsr cannot pass a value of type {p.base_type!r} (numbers, enums, vector types, "
                           "and structs of scalars and pointers it can read); the bytes a captured run passed: "
                           "\"captured()\"", p.name, "args", code="spec-bad-arg")
        p = dataclasses.replace(p, dtype=dtype, lanes=lanes)  # `T v` under the spec's template: float4's lanes
        if dtype == "bool" and isinstance(value, bool):
            value = int(value)  # `flag = true`
        elif dtype == "bool" and isinstance(value, list):
            value = [int(v) if isinstance(v, bool) else v for v in value]
        if not _expr_ok_scalar(ctx, p, value, sizes):
            raise _Invalid()
        return ScalarArg(p.name, tuple(value) if isinstance(value, list) else value)
    if not isinstance(value, str):
        end = "" if "." in p.name else ', "end(BUFFER)" (the end of another)'
        raise ctx.fail(f'{p.name} is a pointer: give "in[len]", "out[len]", "inout[len]" (and an init) or "null"{end}, '
                       f'got {value!r}', p.name, "args", code="spec-bad-arg")
    if value.strip() == "null":
        return NullArg(p.name)
    m = _BUFFER.match(value)
    if not m:
        raise ctx.fail(f"{p.name} = {value!r}: expected in|out|inout [length] [{INIT_FORMS.replace(' or ', ', ')}]",
                       p.name, "args", code="spec-bad-arg")
    direction = m.group(1)
    length = m.group("len")
    in_bytes = length is not None and _BYTES.search(length) is not None
    if in_bytes:
        length = _BYTES.sub("", length)
    dtype, _ = ("uint8", 1) if in_bytes else param_dtype(p, subst)
    if dtype is None:
        raise ctx.fail(f"{p.name}: element type {p.pointee!r} is not one fsr can fill "
                       "(float, double, __half, __nv_bfloat16, integer types and their vector types); memory "
                       f"holding pointers takes the bytes a captured run saved: \"{direction}[LENGTH bytes] captured()\"",
                       p.name, "args")
    if p.pointee_const and direction != "in" and p.name not in ctx.aliased:  # `same(x)` may write what x reads
        raise ctx.fail(f"{p.name} points to const data but is declared {direction}", p.name, "args", code="spec-bad-arg")
    if length is None or not length.strip():
        if len(sizes[0]) != 1:
            raise ctx.fail(f"{p.name}: give a length, e.g. {direction}[{' * '.join(sizes[0])}]", p.name, "args", code="spec-bad-arg")
        length = next(iter(sizes[0]))
    try:
        start, stop = read_window(length, sizes, p.name)
    except ValueError as e:
        raise ctx.fail(str(e), p.name, "args", code="spec-bad-arg") from None
    length = length if start == "0" else f"({stop}) - ({start})"
    for s in sizes:
        try:
            n = evaluate_int(length, s, f"length of {p.name}")
        except ExprError as e:
            raise ctx.fail(f"{p.name}: length {length!r} does not evaluate: {e}", p.name, "args", code="spec-bad-arg") from None
        if n <= 0:
            raise ctx.fail(f"{p.name}: length {length!r} gives {n} at {_fmt(s)}", p.name, "args", code="spec-bad-arg")
    init = read_init(ctx, p, m.group("init"), dtype)
    if direction == "out" and m.group("init"):
        ctx.add(f"{p.name} is out: its init is ignored (outputs are poisoned before each run; use inout to read them)",
                p.name, "args", severity="warning")
    if in_bytes and direction != "out" and init.kind != "captured":
        raise ctx.fail(f"{p.name}: a length in bytes is memory fsr cannot type: it takes the bytes a captured run "
                       f"saved (\"{direction}[{length.strip()} bytes] captured()\")", p.name, "args", code="spec-bad-arg")
    return BufferArg(p.name, direction, length.strip(), init, start, stop, unit="bytes" if in_bytes else "elements")


def _renamed(arg: Arg, name: str) -> Arg:
    return dataclasses.replace(arg, name=name)


def _expr_ok_scalar(ctx: _Ctx, p: Param, value: Any, sizes: list[SizeSet]) -> bool:
    if isinstance(value, list) and p.lanes > 1:  # `float4 c`: a value per lane
        if len(value) != p.lanes:
            ctx.add(f"{p.name} ({p.type_text}) has {p.lanes} lanes: give one value for all or a list of "
                    f"{p.lanes}, got {len(value)}", p.name, "args", code="spec-bad-arg")
            return False
        return all(_expr_ok_scalar(ctx, dataclasses.replace(p, lanes=1), v, sizes) for v in value)
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        ctx.add(f"{p.name} must be a number or an expression string, got {value!r}", p.name, "args", code="spec-bad-arg")
        return False
    is_int = p.dtype is not None and p.dtype.startswith(("int", "uint", "bool"))
    for s in sizes:
        try:
            v = evaluate_int(value, s, p.name) if is_int else evaluate(value, s)
        except ExprError as e:
            ctx.add(f"{p.name}: {e}", p.name, "args", code="spec-bad-arg")
            return False
        if is_int and p.dtype in INT_RANGE and not INT_RANGE[p.dtype][0] <= v <= INT_RANGE[p.dtype][1]:
            ctx.add(f"{p.name} ({p.type_text}) cannot hold {value!r} = {v} at {_fmt(s)}", p.name, "args", code="spec-bad-arg")
            return False
    return True


def _fmt(sizes: SizeSet) -> str:
    return ", ".join(f"{k}={v}" for k, v in sizes.items())


def _toml_error_span(ctx: _Ctx, message: str) -> Span:
    m = _TOML_POS.search(message)
    if not m:
        return ctx.at()
    line, col = int(m.group(1)) - 1, int(m.group(2)) - 1
    lines = ctx.body.split("\n")
    line = min(line, len(lines) - 1)
    prefix = "\n".join(lines[:line]) + ("\n" if line else "")
    start = ctx.comment.body_start_byte + len(prefix.encode()) + len(lines[line][:col].encode())
    end = ctx.comment.body_start_byte + len(prefix.encode()) + len(lines[line].encode())
    return ctx.src.span(start, max(start, end))
