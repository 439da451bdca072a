"""A spec drafted from a kernel's launch site.

Grid, block and shared memory come from the launch's expressions, rewritten over size names;
each pointer's length from what the argument points to (an allocation a few lines up, through
assignments, offsets and casts); directions from the kernel's body; scalars from the call;
template arguments from the launch. Sizes get their bench values from their initialisers and
small test sizes (1, a non-multiple of the block, a few hundred) derived from them.

A draft is never trusted as it is: the block says where it came from and the spec parser
reads it back; the proof on the GPU (that the original kernel runs in bounds, deterministically
and writes every output at every test size) is what makes it usable.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections import ChainMap, Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..kernels import Kernel, Param
from ..kernels.c_types import element_type
from ..kernels.discover import discover
from ..kernels.lexical import lex, spec_blocks, split_top_level
from ..kernels.structs import substituted
from ..source import SourceText
from ..specs import evaluate_int, parse_spec
from ..specs.expr import ExprError
from ..specs.parse import MAX_THREADS_PER_BLOCK
from .buffer_lengths import buffer_length, largest
from .cexpr import Translator, Unresolved, resolve_type
from .host import Launch, Scope, find_launches
from .spec_text import positive, toml_dims
from .untied import untied_tests
from .writes import Access, direction, index_arrays, pointer_access

TEST_SIZES = (1, 17, 1000)  # each capped at the size's bench value
SPARE_SIZES = (33, 100, 4096)  # tried when one of those makes a length or a grid empty
TESTS_WANTED = 3
_NULL = re.compile(r"nullptr|NULL|0|\(\s*\w+\s*\*\s*\)\s*(?:nullptr|NULL|0)")
GUESSED_BITS = 20  # a guessed size is 2^20, several share those bits


@dataclass
class Draft:
    kernel: str
    text: str | None  # the /* @fsr ... */ block, None when no usable draft could be made
    launch: Launch | None = None
    problems: list[str] = field(default_factory=list)  # what is guessed or missing
    provenance: dict[str, str] = field(default_factory=dict)  # spec key or arg -> where its value came from
    launches: int = 0  # launches of this kernel found
    inputs: dict[str, str] = field(default_factory=dict)  # buffer -> "OFFSET:PATH" of bytes a captured run had
    captured_ms: float = 0.0  # the bench launch's median GPU time in the captured run; 0 where not timed
    captured_timed: int = 0  # how many of its launches the run timed
    captured_bytes: int = 0  # the memory its pointers point into, each allocation once
    guessed_block: bool = False  # the block's numbers were not at the launch site (a launcher's parameter)


def draft_specs(source: str | SourceText, extra_launches: list[Launch] | None = None) -> dict[str, Draft]:
    """A draft for every kernel of a file that has a launch (here or in `extra_launches`, e.g.
    from the workspace's other files)."""
    src = source if isinstance(source, SourceText) else SourceText(source)
    launches = find_launches(src) + list(extra_launches or [])
    return {k.name: draft_spec(src, k, launches) for k in discover(src).kernels}


def draft_spec(src: SourceText, kernel: Kernel, launches: list[Launch], own_file: str | None = None,
               types: Mapping[str, str] | None = None) -> Draft:
    """The draft from the most common launch of `kernel`: those in its own file when there are
    any (another file's kernel may share its name), else those anywhere in `launches`.
    `types`: aliases from the headers the file includes (`sizeof(floatX)` at the launch)."""
    mine = [launch for launch in launches if launch.kernel == kernel.name]
    if own_file is not None and any(launch.file == own_file for launch in mine):
        mine = [launch for launch in mine if launch.file == own_file]
    if not mine:
        return Draft(kernel.name, None, problems=[f"no launch of {kernel.name} found"])
    counts = Counter((launch.config, launch.args, launch.template_args) for launch in mine)
    drafts = []
    for (config, args, template), n in counts.most_common():
        launch = next(x for x in mine if (x.config, x.args, x.template_args) == (config, args, template))
        if types is not None:  # a Mapping read lazily (DeferredAliases): never asked its length
            launch = dataclasses.replace(launch, scope=dataclasses.replace(launch.scope,
                                                                           types=ChainMap(launch.scope.types, types)))
        draft = _draft_from(src, kernel, launch, len(mine))
        if len(counts) > 1:
            how = "the most common" if not drafts else "the first that could be drafted"
            draft.problems.insert(0, f"{len(mine)} launches differ; drafted from {how} ({n} of them, {launch.where})")
        if draft.text is not None and not draft.guessed_block:
            return draft
        drafts.append(draft)
    # a block guessed is the last resort: any launch that gives its block is drafted first
    return next((d for d in drafts if d.text is not None), drafts[0])


def _draft_from(src: SourceText, kernel: Kernel, launch: Launch, launches: int) -> Draft:
    """The draft one launch gives (its text None, with the reason, when it cannot be read)."""
    config, template = launch.config, launch.template_args
    draft = Draft(kernel.name, None, launch=launch, launches=launches)
    definition = src.slice(kernel.definition_span.start_byte, kernel.definition_span.end_byte)
    block_text = " ".join(config[1:2])
    block_text += " " + " ".join(launch.scope.dims.get(block_text.strip(), []))  # `dim3 threads(BS, BS)`
    block_names = set(re.findall(r"[A-Za-z_]\w*", block_text + " " + template))
    # file-scope names the kernel's own code uses (a #define tile size) were compiled in: they stay numbers
    # (a name that is also a kernel parameter is the parameter inside the kernel: it may vary)
    own = set(re.findall(r"[A-Za-z_]\w*", definition)) - {p.name for p in kernel.params}
    constants = block_names | (own & launch.scope.file_names)
    t = Translator(launch.scope, constants=constants)
    try:
        lines = _spec_lines(src, kernel, launch, t, draft)
    except Unresolved as e:
        draft.problems.append(str(e))
        return draft
    text = "\n".join(lines) + "\n"
    errors = read_back(kernel, text)
    if errors:
        draft.problems += [f"the draft does not parse: {e}" for e in errors]
        return draft
    draft.text = text
    return draft


def read_back(kernel: Kernel, block: str) -> list[str]:
    """The spec parser's errors on `block` read as the kernel's own block (none: it parses)."""
    text = SourceText(block)
    (comment,) = spec_blocks(text, lex(text.data))
    result = parse_spec(text, dataclasses.replace(kernel, spec=comment))
    return [p.message for p in result.problems if p.severity == "error"]


@dataclass(frozen=True)
class _Shape:
    """The launch's configuration in spec expressions, and the template it instantiates."""

    config: list[str]
    block: list
    grid: list
    smem: str | None
    template: str
    subst: dict[str, str]  # the kernel's template names -> the launch's arguments


@dataclass(frozen=True)
class _Values:
    """Each argument as the launch passes it: buffers by their length (and where a pointer into
    an allocation starts), optional buffers left null, scalars as spec expressions."""

    pairs: list[tuple[Param, str]]
    nulls: set[str]
    starts: dict[str, str]
    lengths: dict[str, tuple[str, str]]
    scalars: dict[str, str]


def _spec_lines(src: SourceText, kernel: Kernel, launch: Launch, t: Translator, draft: Draft) -> list[str]:
    shape = _shape(kernel, launch, t)
    values = _values(kernel, launch, t, shape)  # 1. every value, in spec expressions over the size names they reach
    _bench_sizes(t, values, launch, draft)
    tests = _tests(t, values, shape, draft)  # 2. test sizes that keep every length, grid and integer argument positive
    args = _arg_lines(src, kernel, launch, values, shape, [t.sizes, *tests], draft)  # 3. directions, starts
    return _block_lines(kernel, launch, t, shape, tests, args, draft)


def _shape(kernel: Kernel, launch: Launch, t: Translator) -> _Shape:
    config = launch.config
    if len(config) < 2:
        raise Unresolved("the launch has no block size")
    if len(launch.args) != len(kernel.params):
        raise Unresolved(f"the launch passes {len(launch.args)} arguments to {len(kernel.params)} parameters")
    if any(p.fields for p in kernel.params):  # members are set in host code (`d_A.elements = ...`), not at the launch
        raise Unresolved("it takes structs by value: a captured run (fsr capture) gives their members")
    block = _dims(config[1], t, constant=True)
    grid = _dims(config[0], t, constant=False)
    smem = t.expr(config[2]) if len(config) > 2 and config[2].strip() not in ("0", "") else None
    written = launch.template_args or (deduced(kernel, launch) if kernel.is_template else "")
    template = ", ".join(_template_arg(a.strip(), tp, launch.scope, t)
                         for a, tp in zip(_split(written), [*kernel.template_params, *[""] * 99])) if written else ""
    if kernel.is_template and not template:
        raise Unresolved("a template launched without explicit template arguments, and its arguments' types do not "
                         "give them all")
    return _Shape(config, block, grid, smem, template, dict(zip(kernel.template_names, _split(template))))


def _values(kernel: Kernel, launch: Launch, t: Translator, shape: _Shape) -> _Values:
    grid_names = [n for n in t.sizes if any(re.search(rf"\b{n}\b", g) for g in shape.grid)]
    pairs = list(zip(kernel.params, launch.args))
    nulls = {p.name for p, arg in pairs if p.is_pointer and _NULL.fullmatch(arg.strip())}  # an optional buffer left out
    starts: dict[str, str] = {}  # `d_in + RADIUS`: the buffer starts RADIUS elements before the pointer
    lengths = {p.name: buffer_length(p, arg, launch.scope, t, grid_names, shape.subst, starts) for p, arg in pairs
               if p.is_pointer and p.name not in nulls}
    scalars = {p.name: t.expr(arg) for p, arg in pairs if not p.is_pointer}
    return _Values(pairs, nulls, starts, lengths, scalars)


def _bench_sizes(t: Translator, values: _Values, launch: Launch, draft: Draft) -> None:
    """The bench size where the launch site has no value for a size: compiled for one size, or
    a guess that keeps the longest buffer near 2^20 elements (said in the draft's problems)."""
    if not t.sizes:  # compiled for one size (`#define N 512` in the kernel too): checked at that size only
        t.sizes["fixed"] = 1
        draft.problems.append("every value at the launch site is a constant the kernel is compiled for: "
                              "checked at that size only")
    if t.pinned:
        draft.guessed_block = True
        draft.problems.append("no value at the launch site for the block's "
                              + ", ".join(f"{n} ({t.origins.get(n, '')})" for n in sorted(t.pinned)) + ": "
                              + ", ".join(f"{n} = {v}" for n, v in sorted(t.pinned.items()))
                              + " guessed (fsr capture takes the real one from a run)")
    if not t.guessed:
        return
    share = max(1, GUESSED_BITS // len(t.guessed))  # several guessed sizes multiply: keep the product near 2^20
    for name in t.guessed:
        t.sizes[name] = 1 << share
    while share > 1 and largest(values.lengths, t.sizes) > 1 << (GUESSED_BITS + 2):  # `in[N * N]`: a square of a guess
        share -= 1
        for name in t.guessed:
            t.sizes[name] = 1 << share
    argv = sorted(n for n in t.guessed if "from the command line" in t.origins.get(n, ""))
    params = sorted(t.guessed - set(argv))
    if params:
        draft.problems.append("no value at the launch site for " + ", ".join(params)
                              + f" (a parameter of {launch.scope.function or 'the host function'}): "
                              f"bench value {1 << share} guessed")
    if argv:
        draft.problems.append("sizes from the command line: " + ", ".join(argv) + f": bench value {1 << share} "
                              "guessed (fsr capture -- ./app ARGS takes the real ones from a run)")


def _tests(t: Translator, values: _Values, shape: _Shape, draft: Draft) -> list[dict[str, int]]:
    checks = [length for length, _ in values.lengths.values()] + list(shape.grid)
    checks += [values.scalars[p.name] for p, _ in values.pairs
               if not p.is_pointer and p.dtype not in (None, "float32", "float64")
               and any(re.search(rf"\b{re.escape(k)}\b", values.scalars[p.name]) for k in t.sizes)]  # a size, not `-100`
    # a size the kernel cannot see (in no grid, scalar or smem expression) must not shrink alone:
    # the kernel would still walk the bench extent of its buffer
    seen = " ".join(list(shape.grid) + list(values.scalars.values()) + [shape.smem or ""])
    varying = {k for k in t.sizes if re.search(rf"\b{re.escape(k)}\b", seen)}
    tests: list[dict[str, int]] = []
    for s in TEST_SIZES + SPARE_SIZES:
        entry = {k: min(s, v) if k in varying else v for k, v in t.sizes.items()}
        if entry not in tests and entry != t.sizes and positive(checks, entry) and len(tests) < TESTS_WANTED:
            tests.append(entry)
    tests += [e for e in untied_tests(t.sizes, varying, checks) if e not in tests]  # sizes equal at the bench, apart
    if not tests and "fixed" not in t.sizes:
        draft.problems.append("no test size smaller than the bench size keeps every length positive: only the bench size")
    return tests


def _arg_lines(src: SourceText, kernel: Kernel, launch: Launch, values: _Values, shape: _Shape,
               every_size: list[dict[str, int]], draft: Draft) -> list[str]:
    """Each argument's line of [args]: directions from the body, starts from the host code,
    index arrays' value ranges (`every_size`: the bench size and the tests)."""
    access = pointer_access(src, kernel)
    indexes = index_arrays(src, kernel)
    memset = _zeroed(src, launch)
    lengths, arg_lines = values.lengths, []
    for p, arg in values.pairs:
        if not p.is_pointer:
            draft.provenance[p.name] = f"the launch passes `{arg.strip()}`"
            arg_lines.append(f"{p.name} = {_toml_value(values.scalars[p.name], p, shape.subst)}")
            continue
        if p.name in values.nulls:
            draft.provenance[p.name] = f"the launch passes `{arg.strip()}`: null, as in the program"
            arg_lines.append(f'{p.name} = "null"')
            continue
        length, origin = lengths[p.name]
        draft.provenance[p.name] = origin
        d = direction(access.get(p.name) or Access(written=True, read=True, accumulates=False), p.pointee_const)
        init = ""
        target = indexes.get(p.name)
        if d == "in" and target in lengths and (p.dtype or "").startswith(("int", "uint")):
            bound = max(1, min(evaluate_int(lengths[target][0], sizes, "length") for sizes in every_size))
            init = f" randint(0, {bound})"
            draft.provenance[p.name] += f"; indexes {target}: values in [0, {bound})"
        elif d == "inout" and arg.strip() in memset:
            init, draft.provenance[p.name] = " zeros()", origin + "; zeroed by cudaMemset before the launch"
        elif d == "inout" and access.get(p.name) and access[p.name].accumulates:
            draft.problems.append(f"{p.name} accumulates (atomics or +=): give its start value, e.g. zeros()")
        extent = f"{values.starts[p.name]} : {length}" if p.name in values.starts else length
        arg_lines.append(f'{p.name} = "{d}[{extent}]{init}"')
    return arg_lines


def _block_lines(kernel: Kernel, launch: Launch, t: Translator, shape: _Shape, tests: list[dict[str, int]],
                 arg_lines: list[str], draft: Draft) -> list[str]:
    """The @fsr block's lines, where it was drafted from in its first; the sizes' origins and the
    launch into the draft's provenance."""
    where = f"drafted by fsr from the launch at {launch.where}" + \
        (f" in {launch.scope.function}()" if launch.scope.function else "") + \
        (f", called at {launch.scope.called_from}" if launch.scope.called_from else "")
    lines = ["/* @fsr", f"# {where}; check it, then remove this line",
             "bench = { " + ", ".join(f"{k} = {v}" for k, v in t.sizes.items()) + " }"]
    if tests:
        lines.append("tests = [ " + ", ".join("{ " + ", ".join(f"{k} = {v}" for k, v in e.items()) + " }"
                                              for e in tests) + " ]")
    lines += [f"grid = {toml_dims(shape.grid)}", f"block = {toml_dims([str(b) for b in shape.block])}"]
    if shape.smem:
        lines.append(f"smem = {json.dumps(shape.smem)}")
    if shape.template:
        lines.append(f"template = {json.dumps(shape.template)}")
    lines += ["[args]", *arg_lines, "*/"]
    for name, origin in t.origins.items():
        draft.provenance.setdefault(f"size {name}", origin)
    draft.provenance["launch"] = f"{kernel.name}<<<{', '.join(shape.config)}>>> at {launch.where}"
    if shape.template and not launch.template_args:
        draft.provenance["template"] = f"`{shape.template}`: deduced from the types of the arguments the launch passes"
    return lines


_PLAIN_ARG = re.compile(r"\(*\s*([A-Za-z_]\w*)\s*\)*")  # `d_x`, `(d_x)`: a cast would name the type itself


def deduced(kernel: Kernel, launch: Launch) -> str:
    """The template arguments a launch without them instantiates, as the compiler deduces them:
    each type parameter `T` from the first pointer parameter `T*` whose argument is a variable
    the host code declares (`float* d_x` -> float, through typedefs and a launcher's own
    deduced or explicit template arguments); '' when one is left (a value parameter, a pointer
    of unknown type)."""
    scope, names, found = launch.scope, kernel.template_names, {}
    for p, arg in zip(kernel.params, launch.args):
        m = _PLAIN_ARG.fullmatch(arg.strip())
        if not p.is_pointer or p.type_text.count("*") != 1 or p.base_type not in names or m is None:
            continue
        name = m.group(1)
        pointee = scope.pointee.get(name) or (scope.allocations[name].elem if name in scope.allocations else "")
        resolved = resolve_type(pointee, scope) if pointee and pointee != "void" else ""
        if resolved and resolved not in scope.template_order and resolved not in names:
            found.setdefault(p.base_type, resolved)
    return ", ".join(found[n] for n in names) if all(n in found for n in names) else ""


def _template_arg(arg: str, param: str, scope: Scope, t: Translator) -> str:
    """A template argument as the spec gives it: a type through the file's aliases, a value
    (`BLOCK`, a launcher's own template parameter) through the host code's values."""
    if re.match(r"\s*(typename|class)\b", param) or not re.fullmatch(r"[\w\s()+*/%<>-]+", arg) \
            or resolve_type(arg, scope) != arg:
        return resolve_type(arg, scope)
    try:
        return str(evaluate_int(t.expr(arg), t.sizes, "template argument"))
    except (Unresolved, ExprError):  # a value the host code does not give: kept as written
        return arg


def _dims(text: str, t: Translator, constant: bool) -> list:
    name = text.strip()
    parts = t.scope.dims.get(name) if re.fullmatch(r"[A-Za-z_]\w*", name) else None
    if parts is None:
        m = re.fullmatch(r"dim3\s*[({](.*)[)}]", name, re.S)
        parts = _split(m.group(1)) if m else [name]
    if constant:
        values = [t.constant(p) for p in parts]
        if any(not isinstance(v, int) or v < 1 for v in values):
            raise Unresolved(f"block `{text}` is not a positive integer")
        if t.pinned and math.prod(values) > MAX_THREADS_PER_BLOCK:
            raise Unresolved(f"block `{text}`: {', '.join(sorted(t.pinned))} have no value at the launch site")
        return values
    return [t.expr(p) for p in parts]


def _zeroed(src: SourceText, launch: Launch) -> set[str]:
    """Pointers set to zero with cudaMemset before the launch (an accumulator's start)."""
    text = src.slice(0, launch.byte)
    return {m.group(1) for m in re.finditer(r"cudaMemset(?:Async)?\s*\(\s*(\w+)\s*,\s*0\s*,", text)}


def _split(text: str) -> list[str]:
    return [part.strip() for part in split_top_level(text) if part.strip()]


def _toml_value(value: str, p: Param, subst: dict[str, str]) -> str:
    dtype, _ = element_type(substituted(p.base_type, subst)) if p.dtype is None else (p.dtype, 1)
    if re.fullmatch(r"-?\d+", value):
        return value if not (dtype or "").startswith(("float", "bfloat")) else f"{float(value)!r}"
    if re.fullmatch(r"-?[\d.]+(?:e[-+]?\d+)?", value):
        return value
    return json.dumps(value)
