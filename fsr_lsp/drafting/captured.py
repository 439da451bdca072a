"""A spec from a launch captured in a run of the user's program.

The captured launch is the bench size: its grid, block, shared memory and scalar values as the
program passed them, each buffer as long as the allocation it points into. Relations come
from the static draft when there is one: evaluated at the captured values it must reproduce
the captured grid, block and extents, and then it is kept with the captured sizes (its test
sizes scale). Where it does not, the capture wins and says why. Without a draft, lengths and
grid are related to the integer arguments when the captured numbers show it (an extent equal
to `n` or `rows * cols`, a grid of `cdiv(n, block)`); when every one is, smaller test sizes
follow; when not, the spec checks the captured size only and says so. Like every draft, it is
proven on the GPU before any search uses it.
"""

from __future__ import annotations

import dataclasses
import json

from ..capture import Capture, CapturedLaunch
from ..kernels import Kernel, Param
from ..kernels.lexical import lex, spec_blocks
from ..kernels.packs import expanded
from ..source import SourceText
from ..specs import BufferArg, ScalarArg, StructArg, evaluate, evaluate_int, parse_spec, render_spec
from ..specs.model import Spec
from ..specs.param_types import param_dtype
from .captured_ranges import captured_values, init_from_values
from .captured_values import CapturedValues, NotCaptured, launch_substitution, struct_offsets, values_of
from .captured_sizes import grid_expression, named_values
from .captured_textures import NotATexture, texture_value
from .draft import Draft, read_back
from .spec_text import positive, toml_dims
from .untied import apart_safe, tied_groups, untied_tests
from .writes import Access, direction, index_arrays, merged, pointer_access

TEST_SIZES = (1, 17, 1000, 33, 100, 4096)
TESTS_WANTED = 3
CAPTURED_ONLY = "verified at the captured size only"


def _lines(src: SourceText, kernel: Kernel, draft: Draft | None, launch, values, out: Draft):
    """The spec's lines from the draft checked against the capture, else from the capture alone."""
    lines, note = None, ""
    if draft is not None and draft.text is not None:
        lines, note = _from_draft(kernel, draft.text, launch, values)
        if lines is None:
            out.problems.append(f"the capture wins over the draft from {draft.launch.where if draft.launch else 'the launch'}: "
                                f"{note}")
        else:
            out.provenance.update(draft.provenance)
    if lines is None:
        lines, note = _from_capture_alone(src, kernel, launch, values, out)
    return lines, note


def captured_spec(src: SourceText, kernel: Kernel, capture: Capture, draft: Draft | None = None) -> Draft:
    """The kernel's spec from its most frequent captured launch (a Draft whose text is the block)."""
    launches = capture.of(kernel.name)
    out = Draft(kernel.name, None, launches=sum(x.count for x in launches))
    if not launches:
        out.problems.append(f"{kernel.name} was not launched in {capture.describe()}"
                            + (" or any earlier capture" if capture.runs else ""))
        return out
    if not gets_memory(kernel, launches):
        out.problems.append(f"{kernel.name} takes no pointers, so there is nothing to compare: it was launched, "
                            f"but no spec can check what it does")
        return out
    run = capture.run_of(kernel.name)  # the run this kernel's launches are from
    launch = _chosen(launches)
    kernel = expanded(kernel, launch.template_args, src.text)  # its parameters as this launch has them
    n_variants = len({(x.template_args, x.grid, x.block) for x in launches})
    try:
        values = values_of(kernel, launch)
    except NotCaptured as e:
        out.problems.append(f"not from the capture: {e}")
        return out
    origin = (f"captured by fsr from a run of `{' '.join(run.command)}`: {launch.where()}, "
              f"{launch.count} launch{'es' if launch.count != 1 else ''}")
    if n_variants > 1:
        out.problems.append(f"{n_variants} captured launch shapes differ; this spec is the most frequent "
                            f"({launch.where()}); the others are in {run.folder}")
    try:
        lines, note = _lines(src, kernel, draft, launch, values, out)
    except NotCaptured as e:  # a texture fsr does not make, say: the launch still gives no spec
        out.problems.append(f"not from the capture: {e}")
        return out
    header = ["/* @fsr", f"# {origin}; check it, then remove this line"]
    text = "\n".join(header + lines + ["*/"]) + "\n"
    errors = read_back(kernel, text)
    if errors:
        out.problems += [f"the captured spec does not parse: {e}" for e in errors]
        return out
    out.inputs = _saved(kernel, launch)
    out.text = _in_captured_ranges(kernel, text, values, out) if out.inputs else text
    if out.inputs:
        note += "; the inputs of its first launch were saved: they join the random input sets at the bench size"
    out.provenance["capture"] = note
    out.provenance["launch"] = f"{launch.where()} in {run.describe()}"
    out.captured_ms, out.captured_timed, out.captured_bytes = launch.gpu_ns / 1e6, launch.timed, launch.memory_bytes()
    return out


def gets_memory(kernel: Kernel, launches: list[CapturedLaunch]) -> bool:
    """Whether the kernel gets memory to work on: a pointer (its own, or a readable struct's
    member), or a value holding pointers a run passed (a struct fsr cannot read, whose words the
    capture found pointing into allocations)."""
    return kernel.takes_pointers or any(c.words for x in launches for c in x.params)


def saved_inputs(kernel: Kernel, capture: Capture, text: str | None = None) -> dict[str, str]:
    """Buffer -> "OFFSET:PATH" of the bytes the run saved before the launch a captured spec is
    drafted from (for a spec of the user's own: its `captured()` buffers, one more input set);
    `text`, the kernel's file, types the structs its template parameters name."""
    launches = capture.of(kernel.name)
    if not launches:
        return {}
    launch = _chosen(launches)
    return _saved(expanded(kernel, launch.template_args, text), launch)


def _saved(kernel: Kernel, launch: CapturedLaunch) -> dict[str, str]:
    out = {p.name: f"{c.alloc.offset}:{launch.snapshot[i]}" for i, (p, c) in enumerate(zip(kernel.params, launch.params))
           if i in launch.snapshot and c.alloc is not None and not p.fields}
    subst = launch_substitution(kernel, launch)
    for i, path in launch.value_snapshot.items():  # values passed as the run passed them: where each was placed
        if i < len(kernel.params) and not kernel.params[i].is_pointer and (
                launch.params[i].size > 8 or param_dtype(kernel.params[i], subst)[0] is None):
            out.setdefault(kernel.params[i].name, f"{launch.params[i].offset}:{path}")
    for i, (p, c) in enumerate(zip(kernel.params, launch.params)):  # a struct's pointer members, where saved
        saved = {at: path for (index, at), path in launch.member_snapshot.items() if index == i}
        words = dict(c.words)
        if p.fields and i in launch.snapshot and c.alloc is not None:  # `{ float* p; }`: saved as the pointer it is
            saved, words = {0: launch.snapshot[i]}, {0: c.alloc}
        if not p.fields or not saved:
            continue
        try:
            offsets = struct_offsets(p, launch_substitution(kernel, launch))[0]
        except NotCaptured:
            continue
        for f, at in zip(p.fields, offsets):
            if f.is_pointer and at in saved and at in words:
                out[f"{p.name}.{f.name}"] = f"{words[at].offset}:{saved[at]}"
    return out


def _in_captured_ranges(kernel: Kernel, text: str, values: "CapturedValues", out: Draft) -> str:
    """The spec with each saved input drawn in the range the run's values had (captured_ranges)."""
    spec = _parsed(kernel, text)
    if spec is None:
        return text
    def in_range(a, name: str, lanes: int):
        """`a` drawn in the range its saved bytes had (`name`: `A.elements` for a struct's member)."""
        where = out.inputs.get(name) if isinstance(a, BufferArg) and a.direction != "out" else None
        if where is not None and a.init.kind == "captured":
            return a  # the run's own bytes already
        found = None
        if where is not None:
            data = captured_values(where, values.extents[name] * lanes, values.dtypes[name])
            found = init_from_values(data, values.dtypes[name], a.direction) if data is not None else None
        if found is None or found[0] == a.init:
            return a
        out.provenance[name] = out.provenance.get(name, "") + f"; {found[1]}: drawn from that range"
        return dataclasses.replace(a, init=found[0])

    params = {p.name: p for p in kernel.params}
    args = []
    for a in spec.args:
        if isinstance(a, StructArg):
            fields = {f.name: f for f in params[a.name].fields}
            a = dataclasses.replace(a, fields=tuple(in_range(m, f"{a.name}.{m.name}", fields[m.name].lanes or 1)
                                                    for m in a.fields))
        else:
            a = in_range(a, a.name, (params[a.name].lanes if a.name in params else 1) or 1)
        args.append(a)
    rendered = render_spec(dataclasses.replace(spec, args=tuple(args))).splitlines()
    header = text.splitlines()[1]
    return "\n".join([rendered[0], header, *rendered[1:]]) + "\n"


def _parsed(kernel: Kernel, text: str) -> Spec | None:
    block = SourceText(text)
    (comment,) = spec_blocks(block, lex(block.data))
    return parse_spec(block, dataclasses.replace(kernel, spec=comment)).spec


def _chosen(launches: list[CapturedLaunch]) -> CapturedLaunch:
    """The instantiation launched most, and its most frequent (then largest) launch."""
    by_template: dict[str, int] = {}
    for x in launches:
        by_template[x.template_args] = by_template.get(x.template_args, 0) + x.count
    template = max(by_template, key=lambda t: by_template[t])
    mine = [x for x in launches if x.template_args == template]
    return max(mine, key=lambda x: (x.count, _threads(x)))


def _threads(x: CapturedLaunch) -> int:
    return x.grid[0] * x.grid[1] * x.grid[2] * x.block[0] * x.block[1] * x.block[2]


def _from_draft(kernel: Kernel, text: str, launch: CapturedLaunch, values: CapturedValues) -> tuple[list[str] | None, str]:
    """The draft's lines with the captured sizes, when it reproduces the capture; else (None, why)."""
    spec = _parsed(kernel, text)
    if spec is None:
        return None, "the draft does not parse"
    sizes: dict[str, int] = {}
    for a in spec.args:
        if isinstance(a, ScalarArg) and isinstance(a.value, str) and a.value in spec.bench:
            sizes[a.value] = int(values.scalars[a.name])
    missing = [k for k in spec.bench if k not in sizes]
    if missing:
        return None, f"no captured value for the draft's size{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
    try:
        why = _mismatch(spec, sizes, launch, values)
    except Exception as e:  # an expression that cannot be evaluated at the captured sizes
        return None, f"the draft cannot be evaluated at the captured sizes ({e})"
    if why:
        return None, why
    tests = []
    for t in spec.tests:
        entry = {k: min(v, sizes[k]) for k, v in t.items()}
        if entry != sizes and entry not in tests:
            tests.append(entry)
    varying = {k for t in spec.tests for k, v in t.items() if v != spec.bench.get(k)}
    checks = [a.length for a in spec.args if isinstance(a, BufferArg)] + [str(g) for g in spec.grid]
    tests += [e for e in untied_tests(sizes, varying, checks, tests) if e not in tests]
    spec = dataclasses.replace(spec, bench=sizes, tests=tuple(tests))
    body = render_spec(spec).splitlines()[1:-1]
    return body, "the draft from the launch site reproduces the captured grid, block and extents: its sizes take the captured values"


def _mismatch(spec: Spec, sizes: dict[str, int], launch: CapturedLaunch, values: CapturedValues) -> str:
    grid = _padded([evaluate_int(g, sizes, "grid") for g in spec.grid])
    if grid != launch.grid:
        return f"the draft's grid at the captured sizes is {grid}, the run launched {launch.grid}"
    if _padded(list(spec.block)) != launch.block:
        return f"the draft's block is {tuple(spec.block)}, the run launched {launch.block}"
    if evaluate_int(spec.smem or 0, sizes, "smem") != launch.smem:
        return f"the draft's shared memory is {spec.smem}, the run launched with {launch.smem} bytes"
    for a in spec.args:
        if isinstance(a, BufferArg) and a.name in values.nulls:
            return f"the draft gives `{a.name}` a buffer, the run passed a null pointer"
        if isinstance(a, BufferArg) and a.name in values.ends:
            return f"the draft gives `{a.name}` a buffer, the run passed the end of `{values.ends[a.name]}`'s"
        if isinstance(a, BufferArg) and a.name in values.sames:
            return f"the draft gives `{a.name}` a buffer of its own, the run passed `{values.sames[a.name]}`'s pointer"
        if isinstance(a, BufferArg) and values.before.get(a.name) and a.start == "0":
            return (f"the run's `{a.name}` points {values.before[a.name]} elements into its allocation, which the "
                    "kernel may read; the draft starts the buffer at the pointer")
        if isinstance(a, BufferArg):
            length = evaluate_int(a.length, sizes, "length")
            if length != values.extents[a.name]:
                return (f"the draft's length of `{a.name}` at the captured sizes is {length}, its allocation "
                        f"holds {values.extents[a.name]} from the pointer on")
        elif isinstance(a, ScalarArg) and isinstance(a.value, tuple):  # lanes of a vector by value
            if list(a.value) != values.scalars[a.name]:
                return f"the draft passes {a.name} = {list(a.value)}, the run passed {values.scalars[a.name]!r}"
        elif isinstance(a, ScalarArg):
            mine, run = evaluate(a.value, sizes), values.scalars[a.name]
            if abs(mine - run) > 1e-6 * max(abs(mine), abs(run)):
                return f"the draft passes {a.name} = {a.value}, the run passed {run!r}"
    return ""


def _from_capture_alone(src: SourceText, kernel: Kernel, launch: CapturedLaunch, values: CapturedValues,
                        out: Draft) -> tuple[list[str], str]:
    sizes = {_size_name(k): int(v) for k, v in values.scalars.items()
             if isinstance(v, int) and v >= 1 and not values.dtypes[k].startswith(("float", "bfloat"))}
    named = named_values(sizes)
    lengths = {k: named.get(v, str(v)) for k, v in values.extents.items()}
    try:
        textures = {k: texture_value(info, named) for k, info in values.textures.items()}
    except NotATexture as e:
        raise NotCaptured(str(e)) from None
    for k, (_, extents) in textures.items():  # a texture scales with the sizes when each of its extents does
        fixed = [e for e in extents if e.isdigit()]
        texels = " * ".join(extents)
        lengths[f"{k} (texture)"] = texels if not fixed else str(evaluate_int(texels, sizes, "texels"))
    covered = {v: lengths[k] for k, v in values.extents.items() if not lengths[k].isdigit()}  # what a grid covers
    grid = [grid_expression(g, b, covered, named) for g, b in zip(launch.grid, launch.block)]
    tied = tied_groups(sizes, set(sizes))  # equal in the run: which one a length follows, the run cannot tell
    lengths = {k: apart_safe(e, tied) if k in values.extents else e for k, e in lengths.items()}
    grid = [apart_safe(g, tied) for g in grid]
    block = list(launch.block)
    related = sizes and all(not e.isdigit() for e in lengths.values()) and \
        all(not e.isdigit() or e == "1" for e in grid)
    tests: list[dict[str, int]] = []
    if related:
        checks = list(lengths.values()) + [g for g in grid if g != "1"]
        for s in TEST_SIZES:
            entry = {k: min(s, v) for k, v in sizes.items()}
            if entry != sizes and entry not in tests and len(tests) < TESTS_WANTED and positive(checks, entry):
                tests.append(entry)
        apart = [e for e in untied_tests(sizes, set(sizes), checks) if e not in tests]
        tests += apart
        note = "grid and lengths follow the integer arguments at the captured values: smaller test sizes scale them"
        if apart:
            note += ("; " + ", ".join(" = ".join(g) for g in tied) + " held one value in the run: tested apart too, "
                     "each length and grid over the largest of them")
    else:
        fixed = [f"`{k}` ({v} elements)" for k, v in lengths.items() if v.isdigit()]
        fixed += [f"grid {g}" for g in grid if g.isdigit() and g != "1"]
        note = f"{CAPTURED_ONLY}: no integer argument gives " + ", ".join(fixed or ["the sizes"])
        out.problems.append(note)
    if not sizes:
        sizes = {"captured": 1}  # a spec needs a size; nothing here varies
    access = pointer_access(src, kernel)
    indexes = index_arrays(src, kernel)
    args = []
    for p in kernel.params:
        if p.name in textures:
            args.append(f'{p.name} = "{textures[p.name][0]}"')
            out.provenance[p.name] = f"the texture object the run passed: {textures[p.name][0]}"
            continue
        entry = _Entry(values, sizes, lengths, tests, access, indexes, out)
        if p.fields:  # a struct passed by value: each member as a parameter of its type
            members = [f"{f.name} = {entry.value(f, f'{p.name}.{f.name}')}" for f in p.fields]
            args.append(f"{p.name} = {{ {', '.join(members)} }}")
        else:
            args.append(f"{p.name} = {entry.value(p, p.name)}")
    lines = ["bench = { " + ", ".join(f"{k} = {v}" for k, v in sizes.items()) + " }"]
    if tests:
        lines.append("tests = [ " + ", ".join("{ " + ", ".join(f"{k} = {v}" for k, v in t.items()) + " }"
                                              for t in tests) + " ]")
    lines += [f"grid = {toml_dims(_trimmed(grid))}", f"block = {toml_dims(_trimmed(block))}"]
    if launch.smem:
        lines.append(f"smem = {launch.smem}")
    if values.template:
        lines.append(f"template = {json.dumps(values.template)}")
    return lines + ["[args]", *args], note


def _size_name(name: str) -> str:
    """A size named after a scalar: its own name, `A_width` for a struct's member `A.width`."""
    return name.replace(".", "_")


@dataclasses.dataclass
class _Entry:
    """The spec's value for one parameter or struct member, from the run's."""

    values: CapturedValues
    sizes: dict[str, int]
    lengths: dict[str, str]
    tests: list[dict[str, int]]
    access: dict
    indexes: dict[str, str]
    out: Draft

    def _access(self, name: str) -> Access:
        """How the kernel uses the buffer `name`, through it and through every parameter the run
        passed the same pointer (a write through `out` of `scale(a, a)` changes `a`)."""
        return merged([self.access.get(n) for n in [name, *(o for o, of in self.values.sames.items() if of == name)]])

    def value(self, p: Param, name: str) -> str:
        values, out = self.values, self.out
        if name in values.nulls:
            out.provenance[name] = "the run passed a null pointer"
            return '"null"'
        if name in values.ends:
            out.provenance[name] = f"the run passed the end of `{values.ends[name]}`'s buffer (its allocation's end)"
            return f'"end({values.ends[name]})"'
        if name in values.sames:
            out.provenance[name] = f"the run passed `{values.sames[name]}`'s pointer: one buffer, written through either"
            return f'"same({values.sames[name]})"'
        if name in values.as_passed:
            out.provenance[name] = f"a {p.base_type} fsr cannot read member by member: the run's bytes, as passed"
            return '"captured()"'
        if not p.is_pointer:
            value = values.scalars[name]
            out.provenance[name] = f"the run passed {value!r}"
            return f'"{_size_name(name)}"' if _size_name(name) in self.sizes else repr(value)
        d = direction(self._access(name), p.pointee_const and name not in values.sames.values())
        init = ""
        target = self.indexes.get(name)
        if d == "in" and target in values.extents and values.dtypes[name].startswith(("int", "uint")):
            bound = values.extents[target] if not self.tests else \
                max(1, min(evaluate_int(self.lengths[target], t, "length") for t in self.tests))
            init = f" randint(0, {bound})"
        elif d == "inout" and self.access.get(name) and self.access[name].accumulates:
            out.problems.append(f"{name} accumulates (atomics or +=): give its start value, e.g. zeros()")
        if name in values.opaque:  # memory fsr cannot type: the run's bytes, its pointers followed
            out.provenance[name] = (f"{p.pointee} fsr cannot type: the "
                                    f"run's {values.extents[name]} bytes to the end of its allocation, and what "
                                    "their pointers reach")
            return f'"{d}[{values.extents[name]} bytes] captured()"'
        extent = self.lengths[name] if name not in values.before else f"-{values.before[name]} : {self.lengths[name]}"
        out.provenance[name] = f"{values.extents[name]} elements to the end of its allocation" + (
            f", {values.before[name]} before the pointer" if name in values.before else "")
        return f'"{d}[{extent}]{init}"'


def _padded(values: list[int]) -> tuple[int, int, int]:
    return (*values, *[1] * (3 - len(values)))  # type: ignore[return-value]


def _trimmed(values: list) -> list:
    out = list(values)
    while len(out) > 1 and str(out[-1]) == "1":
        out.pop()
    return out
