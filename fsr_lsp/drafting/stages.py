"""The stages a kernel's spec is resolved through, in their fixed order, each with one
interface: given the request (the typed kernel, its launches, the capture, a model) and what
the stages before it said, a stage either answers (a spec, or a kernel no spec can check) or
says why it found nothing. The resolver (resolver.py) runs them; the proof comes after."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..capture import Capture
from ..kernels import kernel_source
from ..kernels.callees import uses_dynamic_shared
from ..kernels.clock_reads import clock_read
from ..kernels.device_variables import compared_variables
from ..source import SourceText
from ..specs import SpecResult, parse_spec, render_spec
from .captured import captured_spec
from .draft import Draft, draft_spec
from .host import Launch
from .origin import CLOCK_READER, Drafter, KernelSpec, Origin, requested_inputs
from .typed import TypedKernel


@dataclass
class SpecRequest:
    """One kernel to resolve. The draft from its launches and the parse of its signature are
    made once, by the first stage that needs them."""

    file: str  # the file's name as specs carry it (relative to the workspace)
    src: SourceText
    typed: TypedKernel
    launches: list[Launch]
    capture: Capture | None = None
    drafter: Drafter | None = None
    orphans: list[str] = field(default_factory=list)  # the file's @fsr blocks that attach to no kernel
    _draft: Draft | None = None
    _parsed: SpecResult | None = None

    @property
    def kernel(self):
        return self.typed.kernel

    @property
    def line(self) -> int:
        return self.kernel.name_span.start.line + 1

    def draft(self) -> Draft:
        """The draft from the kernel's launches: grounded in how it is used."""
        if self._draft is None:
            self._draft = draft_spec(self.src, self.kernel, self.launches, self.file, self.typed.types)
        return self._draft

    def parsed(self) -> SpecResult:
        """Its own block read, or (none) a spec inferred from its signature."""
        if self._parsed is None:
            self._parsed = parse_spec(self.src, self.kernel)
        return self._parsed

    def answer(self, origin: Origin, text: str | None, problems: list[str], **more) -> KernelSpec:
        return KernelSpec(self.file, self.kernel.name, self.line, origin, text, problems, **more)


@dataclass(frozen=True)
class Said:
    """A stage's word: `spec` when it answers, else `why` it found nothing (empty: it did not apply)."""

    spec: KernelSpec | None = None
    why: tuple[str, ...] = ()


Misses = Mapping[str, tuple[str, ...]]  # each earlier stage's why-not, by its name
Stage = Callable[[SpecRequest, Misses], Said]


def complete(req: SpecRequest, misses: Misses) -> Said:
    if req.kernel.complete:
        return Said()
    return Said(req.answer("none", None, ["the kernel is incomplete (unbalanced braces)"]))


def attached(req: SpecRequest, misses: Misses) -> Said:
    kernel = req.kernel
    if kernel.spec is None:
        return Said(why=("no @fsr block",))
    result = req.parsed()
    problems = [p.message for p in result.problems if p.severity != "info"]
    inputs = requested_inputs(result.spec, kernel, lambda: req.capture, req.src.text)
    return Said(req.answer("attached", kernel_source(req.src, kernel).spec, problems, inputs=inputs))


def checkable(req: SpecRequest, misses: Misses) -> Said:
    """A kernel whose results are timings (it reads the clock) or that compares device
    variables no spec can give: no spec can check it."""
    clock = clock_read(req.src, req.kernel)
    if clock is not None:
        return Said(req.answer("none", None, [CLOCK_READER.format(where=clock)]))
    why = compared_variables(req.src, req.kernel)[1]
    return Said(req.answer("none", None, [why])) if why else Said()


def captured(req: SpecRequest, misses: Misses) -> Said:
    """Its launch captured from a run of the program, checked against the draft."""
    if req.capture is None or not req.capture.of(req.kernel.name):
        return Said()
    taken = _captured(req)
    if taken.text is None:
        return Said(why=tuple(taken.problems))
    return Said(req.answer("captured", taken.text, taken.problems + req.orphans, provenance=taken.provenance,
                           launch=taken.provenance.get("launch", ""), inputs=taken.inputs,
                           captured_ms=taken.captured_ms, captured_timed=taken.captured_timed,
                           captured_bytes=taken.captured_bytes))


def drafted(req: SpecRequest, misses: Misses) -> Said:
    """A draft from a launch in reach."""
    draft = req.draft()
    if draft.text is None:
        return Said(why=tuple(draft.problems))
    return Said(req.answer("drafted", draft.text, [*misses["captured"], *draft.problems, *req.orphans],
                           provenance=draft.provenance, launch=draft.launch.where if draft.launch else ""))


def inferred(req: SpecRequest, misses: Misses) -> Said:
    """A spec inferred from the signature alone."""
    result = req.parsed()
    if result.spec is None:
        return Said(why=tuple(p.message for p in result.problems if p.severity != "info"))
    return Said(req.answer("inferred", render_spec(result.spec),
                           [*misses["captured"], *(f"not drafted: {p}" for p in misses["drafted"]), *req.orphans]))


def by_model(req: SpecRequest, misses: Misses) -> Said:
    """The model's draft, where a model is configured."""
    if req.drafter is None:
        return Said()
    why = "; ".join(misses["drafted"]) or "no launch found"
    draft = req.drafter(req.src, req.kernel, req.launches, why)
    if draft.text is None:
        return Said(why=tuple(draft.problems))
    return Said(req.answer("drafted", draft.text, draft.problems + req.orphans, provenance=draft.provenance))


# The order is the trust: the user's own block, then what a run of the program did, then how the
# code launches it, then its signature, then a model's guess.
STAGES: tuple[tuple[str, Stage], ...] = (
    ("complete", complete), ("attached", attached), ("checkable", checkable), ("captured", captured),
    ("drafted", drafted), ("inferred", inferred), ("model", by_model))
# where none answers, why not, in this order (a kernel the run launched: why its capture gave none first)
WHY_ORDER = ("captured", "inferred", "drafted", "model")


def _captured(req: SpecRequest) -> Draft:
    """The spec from the kernel's chosen run; where that run's kernel of this name does not fit
    this one (another program's, with other parameters), from an older run that launched it.
    What the chosen run said comes back when none fits."""
    assert req.capture is not None
    kernel, capture = req.kernel, req.capture
    first: Draft | None = None
    dynamic = uses_dynamic_shared(req.src.text, kernel.name)
    for run in capture.candidates(kernel.name) if capture.every_run else [capture]:
        if dynamic and run.of(kernel.name) and not any(x.smem for x in run.of(kernel.name)):
            first = first or Draft(kernel.name, None, problems=[
                f"{kernel.name} uses dynamic shared memory (`extern __shared__`), and {run.describe()} launched a "
                "kernel of its name with none: another program's kernel of that name, or one that faults"])
            continue  # two programs of a folder may each define a kernel of that name and parameters
        taken = captured_spec(req.src, kernel, run, req.draft())
        if taken.text is not None:
            return taken
        first = first or taken
    assert first is not None
    return first
