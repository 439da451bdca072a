"""Where a kernel's spec comes from: its own block, a launch captured from a run of the
program, a draft from a launch site, inference from the signature, a model, or nowhere, with
the problems of each. One record per kernel, for `fsr spec` and the editor; the resolver
(resolver.py) makes it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Callable, Literal

from ..capture import Capture
from ..kernels import Kernel
from ..source import SourceText
from ..specs import BufferArg, Spec, StructArg
from .captured import saved_inputs
from .draft import Draft
from .host import Launch

Origin = Literal["attached", "captured", "inferred", "drafted", "none"]

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
    trail: list[tuple[str, str]] = field(default_factory=list)  # (stage, what it said), each stage tried in order

    def as_json(self) -> dict:
        data = asdict(self)
        data.pop("provenance")
        data.pop("launch")
        data.pop("inputs")
        data.pop("trail")
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
