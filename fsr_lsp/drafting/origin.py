"""Where each kernel's spec comes from: its own block, a launch captured from a run of the
program, a draft from a launch site, inference from the signature, or nowhere, with the
problems of each. One record per kernel, for
`fsr spec` (and the editor)."""

from __future__ import annotations

import logging

from dataclasses import asdict, dataclass, field
from collections.abc import Mapping
from pathlib import Path
from typing import Callable, Literal

from ..capture import Capture
from ..kernels import Kernel, discover, kernel_source
from ..kernels.aliases import included_texts, includer_texts, type_aliases, with_aliases
from ..kernels.callees import uses_dynamic_shared
from ..kernels.clock_reads import clock_read
from ..kernels.device_variables import compared_variables
from ..kernels.lexical import defined_macros
from ..source import SourceText
from ..specs import BufferArg, Spec, StructArg, parse_spec, render_spec
from .captured import captured_spec, saved_inputs
from .draft import Draft, draft_spec
from .host import Launch, find_launches

Origin = Literal["attached", "captured", "inferred", "drafted", "none"]

log = logging.getLogger(__name__)

CLOCK_READER = ("it reads the GPU clock ({where}): what it writes are timings, different on every run, so no spec "
                "can check its result and no rewrite of it can be verified")


@dataclass
class KernelSpec:
    file: str
    kernel: str
    line: int  # 1-based line of the kernel's name
    origin: Origin
    spec: str | None  # the /* @fsr ... */ text
    problems: list[str] = field(default_factory=list)
    provenance: dict[str, str] = field(default_factory=dict)  # for drafts: where each value came from
    launch: str = ""  # for drafts from a launch: `file.cu:85`; for captures: the captured launch
    inputs: dict[str, str] = field(default_factory=dict)  # buffer -> "OFFSET:PATH" of the bytes a captured run saved
    flags: tuple[str, ...] = ()  # flags the user's build compiles the kernel with (its compile command, its symbol)
    build: str = ""  # where those flags came from and what they are, said to the user; '' when no build says
    captured_ms: float = 0.0  # a captured spec's bench launch: its median GPU time in the user's run
    captured_timed: int = 0  # the launches that median is of
    captured_bytes: int = 0  # the memory its pointers point into in that run

    def as_json(self) -> dict:
        data = asdict(self)
        data.pop("provenance")
        data.pop("launch")
        data.pop("inputs")
        if not self.flags:  # said only where the build has flags of its own
            data.pop("flags")
        if not self.build:
            data.pop("build")
        if not self.captured_ms:
            data.pop("captured_ms")
            data.pop("captured_timed")
            data.pop("captured_bytes")
        return data


# Asked when neither a launch nor the signature gives a spec: (file text, kernel, launches, why) -> Draft.
Drafter = Callable[[SourceText, Kernel, list[Launch], str], Draft]


def kernel_specs(files: list[Path], drafter: Drafter | None = None,
                 include_dirs: tuple[Path, ...] = (), capture: Capture | None = None) -> list[KernelSpec]:
    """Every kernel of every file, with launches looked up across all the files given (a kernel
    in a .cu file is often launched from a .cpp next to it); element types a file leaves
    unknown are looked up in the headers it includes (its folder, then `include_dirs`)."""
    texts = {f: SourceText(f.read_text(encoding="utf-8", errors="replace")) for f in files}
    # each file's headers, read once: their macros serve its launches, their typedefs its kernels
    headers = {f: (*included_texts(src.text, (f.parent, *include_dirs)), *includer_texts(f, include_dirs))
               for f, src in texts.items()}
    launches = [launch for path, src in texts.items() for launch in find_launches(src, str(path), headers[path])]
    out = []
    for path, src in texts.items():
        near = capture.preferring(path.parent) if capture is not None else None
        out += specs_of(str(path), src, launches, drafter, headers[path], near)
    return out


def specs_of(name: str, src: SourceText, launches: list[Launch], drafter: Drafter | None = None,
             headers: tuple[str, ...] = (), capture: Capture | None = None) -> list[KernelSpec]:
    """Every kernel of one file; `headers`: the texts of the headers it includes."""
    found = discover(src)
    orphans = [f"the @fsr block at line {o.comment.span.start.line + 1} attaches to no kernel: {o.reason}"
               for o in found.orphan_specs]
    types = type_aliases("\n".join([*headers, src.text]), defined_macros(src.data))  # the file's own types too
    return [spec_of(name, src, with_aliases(k, types), launches, drafter, orphans, types, capture) for k in found.kernels]


def requested_inputs(spec: Spec | None, kernel: Kernel, capture: Callable[[], Capture | None],
                     text: str | None = None) -> dict[str, str]:
    """The saved bytes a spec of the user's own asks for (its captured() buffers, or every input
    with `bench_inputs = "captured"`), no more: the run's other buffers may fit no size of the
    spec. `capture` is asked for only then (reading one is a walk over files; a save should not
    pay it for nothing)."""
    every = spec is not None and spec.bench_inputs == "captured"
    wanted = {a.name for a in (spec.args if spec else ()) if isinstance(a, BufferArg)
              and (a.init.kind == "captured" or every and a.direction != "out")}
    wanted |= {f"{a.name}.{m.name}" for a in (spec.args if every and spec else ()) if isinstance(a, StructArg)
               for m in a.fields if isinstance(m, BufferArg) and m.direction != "out"}
    found = capture() if wanted else None
    if found is None:
        return {}
    return {b: where for b, where in saved_inputs(kernel, found, text).items() if b in wanted}


def spec_of(name: str, src: SourceText, k: Kernel, launches: list[Launch], drafter: Drafter | None = None,
            orphans: list[str] | None = None, types: Mapping[str, str] | None = None,
            capture: Capture | None = None) -> KernelSpec:
    """One kernel's spec: its own block, else its launch captured from a run (checked against
    the draft), else a draft from its launch, else one inferred from its signature, else (with
    a drafter) the model's draft, else none, with why. A kernel fsr cannot read is a line with
    its reason: the file's other kernels, and the listing, go on."""
    try:
        return _spec_of(name, src, k, launches, drafter, orphans, types, capture)
    except Exception as e:  # noqa: BLE001  (one kernel's problem never ends the listing)
        log.warning("no spec for %s in %s", k.name, name, exc_info=True)
        return KernelSpec(name, k.name, k.name_span.start.line + 1, "none", None,
                          [f"fsr could not work out a spec for it: {str(e) or 'an internal error'} (please report it)"])


def _spec_of(name: str, src: SourceText, k: Kernel, launches: list[Launch], drafter: Drafter | None,
             orphans: list[str] | None, types: Mapping[str, str] | None, capture: Capture | None) -> KernelSpec:
    orphans = orphans or []
    line = k.name_span.start.line + 1
    if not k.complete:
        return KernelSpec(name, k.name, line, "none", None, ["the kernel is incomplete (unbalanced braces)"])
    result = parse_spec(src, k)
    problems = [p.message for p in result.problems if p.severity != "info"]
    if k.spec is not None:
        inputs = requested_inputs(result.spec, k, lambda: capture, src.text)
        return KernelSpec(name, k.name, line, "attached", kernel_source(src, k).spec, problems, inputs=inputs)
    clock = clock_read(src, k)
    if clock is not None:
        return KernelSpec(name, k.name, line, "none", None, [CLOCK_READER.format(where=clock)])
    why = compared_variables(src, k)[1]
    if why:
        return KernelSpec(name, k.name, line, "none", None, [why])
    draft = draft_spec(src, k, launches, name, types)  # grounded in how the kernel is used: before a guess from its signature
    not_captured: list[str] = []
    if capture is not None and capture.of(k.name):
        taken = _captured(src, k, capture, draft)
        if taken.text is not None:
            return KernelSpec(name, k.name, line, "captured", taken.text, taken.problems + orphans, taken.provenance,
                              launch=taken.provenance.get("launch", ""), inputs=taken.inputs,
                              captured_ms=taken.captured_ms, captured_timed=taken.captured_timed,
                              captured_bytes=taken.captured_bytes)
        not_captured = taken.problems
    if draft.text is not None:
        return KernelSpec(name, k.name, line, "drafted", draft.text, not_captured + draft.problems + orphans, draft.provenance,
                          launch=draft.launch.where if draft.launch else "")
    if result.spec is not None:
        return KernelSpec(name, k.name, line, "inferred", render_spec(result.spec),
                          not_captured + [f"not drafted: {p}" for p in draft.problems] + orphans)
    if drafter is not None:
        why = "; ".join(draft.problems) or "no launch found"
        by_model = drafter(src, k, launches, why)
        if by_model.text is not None:
            return KernelSpec(name, k.name, line, "drafted", by_model.text, by_model.problems + orphans,
                              by_model.provenance)
        draft.problems += by_model.problems
    # a kernel the run launched: why its capture gave no spec comes first
    return KernelSpec(name, k.name, line, "none", None, not_captured + problems + draft.problems + orphans)


def _captured(src: SourceText, k: Kernel, capture: Capture, draft: Draft) -> Draft:
    """The spec from the kernel's chosen run; where that run's kernel of this name does not fit
    this one (another program's, with other parameters), from an older run that launched it.
    What the chosen run said comes back when none fits."""
    first: Draft | None = None
    dynamic = uses_dynamic_shared(src.text, k.name)
    for run in capture.candidates(k.name) if capture.every_run else [capture]:
        if dynamic and run.of(k.name) and not any(x.smem for x in run.of(k.name)):
            first = first or Draft(k.name, None, problems=[
                f"{k.name} uses dynamic shared memory (`extern __shared__`), and {run.describe()} launched a kernel "
                "of its name with none: another program's kernel of that name, or one that faults"])
            continue  # two programs of a folder may each define a kernel of that name and parameters
        taken = captured_spec(src, k, run, draft)
        if taken.text is not None:
            return taken
        first = first or taken
    assert first is not None
    return first
