"""Optimize one kernel, as the editor and `fsr optimize` both do it.

The steps: where the spec comes from (its block; a draft from a launch anywhere in the
workspace; the model's draft when no launch says enough), the draft's proof on the original
kernel, its placement above the kernel, the generator (the model's, or the built-in tuner),
and the search with its history. What the result becomes (an edit in the editor, a rewritten
file for the CLI) is the caller's.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..drafting.cache import ProofCache
from ..drafting.draft import Draft
from ..drafting.origin import Drafter, KernelSpec
from ..drafting.placement import place_spec
from ..drafting.proof import Proof, prove_with
from ..drafting.resolver import workspace_spec
from ..drafting.workspace import LaunchIndex
from ..evaluator import EvalOptions
from ..evaluator.backends import Backend, backend_missing, make_backend
from ..kernels import Kernel, find_kernel
from ..llmclient import LLMConfig
from ..search import HistoryStore, Progress, SearchControl, SearchOutcome, run_search
from ..search.apply import launch_follows
from ..search.generators.llm import LLMGenerator
from ..search.generators.tuner import BuiltinGenerator
from ..search.gpu_bench import GpuBench
from ..settings import Settings
from ..source import SourceText
from ..specs import parse_spec
from ..specs.build_flags import merged
from ..instruments import GPU, Instruments
from .program_times import against_the_run, say_build, warm_times

log = logging.getLogger("fsr_lsp.workflows.optimize")

ModelDraft = Callable[[LLMConfig], Draft]
CAPTURE_OFFER = ("Take one from a run of your program: `fsr capture -- ./your_app ARGS` in the workspace, or set "
                 "fsr.capture.command and run \"FSR: Capture launches from a run\"; then Optimize again")


@dataclass
class SpecPlan:
    """Where the searched kernel's spec comes from, before anything runs."""

    spec: KernelSpec
    draft: str | None = None  # a block drafted from a launch: proven on the original, then searched with
    ask_model: ModelDraft | None = None  # no spec and no launch to draft from: the model drafts one
    message: str = ""  # what the user is told (the draft and where it came from); '' for an attached spec


def plan_spec(index: LaunchIndex, path: Path, text: str, kernel: Kernel, settings: Settings,
              open_documents: dict[Path, str] | None = None,
              model_drafter: Callable[[], Drafter] | None = None, then: str = "searching") -> SpecPlan:
    """The spec Optimize will search with: the kernel's own block, a draft from its launch, or
    (no launch, an endpoint set) the model's draft; `model_drafter` makes the model's drafter.
    `then`: what follows the proof, as the user is told ("searching", "profiling", ...)."""
    spec = workspace_spec(index, path, text, kernel, open_documents, include_dirs=settings.include_paths,
                          flags=settings.compiler_flags)
    return plan_for(spec, index, text, kernel, settings, open_documents, model_drafter, then)


def plan_for(spec: KernelSpec, index: LaunchIndex, text: str, kernel: Kernel, settings: Settings,
             open_documents: dict[Path, str] | None = None,
             model_drafter: Callable[[], Drafter] | None = None, then: str = "searching") -> SpecPlan:
    """`plan_spec` from a spec already resolved (`workspace_spec`'s, as the editor keeps a large
    document's: drafted in its own process once per version)."""
    if kernel.spec is not None or spec.origin == "inferred":
        return SpecPlan(spec)
    if spec.origin == "captured" and spec.spec is not None:
        return SpecPlan(spec, draft=spec.spec, message=(
            f"{kernel.name}: no @fsr spec; took one from the launch captured in a run ({spec.launch}); proving it "
            f"on the GPU with the original kernel, then {then}"))
    if spec.origin == "drafted" and spec.spec is not None:
        return SpecPlan(spec, draft=spec.spec, message=(
            f"{kernel.name}: no @fsr spec; drafted one from the launch at {spec.launch}; proving it on the GPU with "
            f"the original kernel, then {then}"))
    if settings.llm_config().configured and model_drafter is not None:
        launches = index.launches(open_documents)
        why = "; ".join(spec.problems) or "no launch found"
        drafter = model_drafter()
        src = SourceText(text)
        return SpecPlan(spec, ask_model=lambda llm: drafter(src, kernel, launches, why), message=(
            f"{kernel.name}: no @fsr spec and none from a launch; asking the model to draft one, then proving it"))
    if spec.origin == "none":
        why = spec.problems[0] if spec.problems else "no launch found"
        return SpecPlan(spec, message=f"{kernel.name}: no @fsr spec ({why}). {CAPTURE_OFFER}")
    return SpecPlan(spec)


def spec_options(options: EvalOptions, spec: KernelSpec | None) -> EvalOptions:
    """`options` for a kernel whose spec came from `spec`: the inputs a captured run saved join
    the checks, and the flags the user's build compiles the kernel with (its compile command,
    the -D its captured symbol names) are the compiler's."""
    if spec is None:
        return options
    if spec.inputs:
        options = dataclasses.replace(options, real_inputs=tuple(sorted(spec.inputs.items())))
    if spec.flags:  # the build's own first: the settings' flags add to them, never replace one
        flags = merged(tuple(f for f in spec.flags if not f.startswith("-I")), options.flags)
        dirs = tuple(f[2:] for f in spec.flags if f.startswith("-I") and f[2:] not in options.include_dirs)
        options = dataclasses.replace(options, flags=flags, include_dirs=(*options.include_dirs, *dirs))
    return options


@dataclass
class KernelJob:
    """One job on a kernel, Optimize or Profile: what was asked (the file as it was, the kernel,
    its planned spec), and what became of it."""

    text: str  # the file as it was when Optimize was asked
    path: Path
    kernel: str
    workspace: Path  # where .fsr/ (history, proofs) lives
    settings: Settings
    plan: SpecPlan | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    searched_text: str = ""  # the file searched: with the proven draft placed, when there was one
    draft: str | None = None  # the proven block the rewrite must carry into the file
    proof: Proof | None = None
    outcome: SearchOutcome | None = None
    started: float = 0.0  # monotonic clock when Optimize began: the time budget counts from there
    focus: str = ""  # a profile finding to address (from the finding's code action), for the model

    def eval_options(self) -> EvalOptions:
        """The settings' options, with the inputs a captured run saved (they join the checks) and
        the -D flags its build compiled the kernel with (its symbol's types)."""
        return spec_options(self.settings.eval_options(self.path), self.plan.spec if self.plan is not None else None)

    def launch_fixed(self) -> bool:
        """Whether the program's launch of the kernel cannot follow a rewrite's new launch (see
        search/apply.py's `launch_follows`), read from the file searched."""
        text = self.searched_text or self.text
        kernel = find_kernel(text, self.kernel)
        spec = parse_spec(SourceText(text), kernel).spec if kernel is not None else None
        return spec is not None and not launch_follows(text, self.kernel, spec, bool(self.launched_from))

    @property
    def launched_from(self) -> str:
        """Where the program launches the kernel, when the searched spec was drafted from that
        launch or captured from it ('' for the user's own block): a rewrite that changes the launch
        changes the program only where that launch is rewritten too."""
        spec = self.plan.spec if self.plan is not None else None
        return spec.launch if self.draft and spec is not None and spec.origin in ("drafted", "captured") else ""


class Optimizer:
    """Runs Optimize requests on the backend the settings choose (one per optimizer, kept
    between requests: a worker per GPU, or one connection to a cluster)."""

    def __init__(self, backend: Backend | None = None, instruments: Instruments = GPU) -> None:
        """`backend`: one to use whatever the settings say (a bench's own worker); closed by the
        caller. `instruments`: stand-ins for the GPU work (tests); the backend's own by default."""
        self.instruments = instruments
        self._backend: Backend | None = backend
        self._fixed = backend is not None
        self._choice = None
        self._lock = threading.Lock()

    def unavailable(self, settings: Settings, needs: str = "searches need") -> str:
        """Why the GPU work `needs` names cannot run here, or ''. With the ray backend this
        machine needs Ray, not CUDA: the cluster's GPU machines compile and run."""
        if self.instruments.stands_in_for_searches():
            return ""
        missing = backend_missing(settings.backend_choice(), needs)
        return f"fsr: {missing}" if missing else ""

    def backend(self, settings: Settings) -> Backend:
        """This machine's GPU(s), or the Ray cluster the settings name (kept while they stay)."""
        choice = settings.backend_choice()
        with self._lock:
            if self._fixed:
                assert self._backend is not None
                return self._backend
            if self._backend is None or self._choice != choice:
                if self._backend is not None:
                    self._backend.close()
                self._backend, self._choice = make_backend(choice), choice
            return self._backend

    def run(self, job: KernelJob, report: Callable[[Progress], None]) -> SearchOutcome:
        """Draft, prove and place the spec when the kernel has none, then search; the outcome
        is also kept on the run."""
        job.started = job.started or time.monotonic()
        job.outcome = self._run(job, report)
        return job.outcome

    def _run(self, job: KernelJob, report: Callable[[Progress], None]) -> SearchOutcome:
        config = dataclasses.replace(job.settings.search_config(), focus=job.focus)
        stopped = self.prepare(job, report)
        if stopped is not None:
            return stopped
        config = dataclasses.replace(config, launch_fixed=job.launch_fixed())
        generator = LLMGenerator(config.llm) if config.llm.configured else BuiltinGenerator()
        with HistoryStore(job.workspace, secrets=[os.environ.get(config.llm.api_key_env, "")]) as store:
            bench = self._bench(job)
            control = SearchControl(report, job.cancel, job.started, job.eval_options().include_dirs)
            outcome = run_search(job.searched_text, str(job.path), job.kernel, config, bench, generator, store, control)
        spec = job.plan.spec if job.plan is not None else None
        say_build(outcome, spec)
        against_the_run(outcome, spec, warm=lambda: warm_times(bench, outcome) if isinstance(bench, GpuBench) else None)
        from .perf_check import record_search  # what it timed: a later edit is checked against it

        try:
            record_search(job.workspace, job.path, job.searched_text, job.kernel, outcome)
        except Exception as e:  # bookkeeping for later edits: never worth the search's result
            log.warning("what the search of %s timed was not recorded (a later edit's check has no baseline): %s",
                        job.kernel, e)
            log.debug("recording the search's timings failed", exc_info=True)
        return outcome

    def prepare(self, job: KernelJob, report: Callable[[Progress], None]) -> SearchOutcome | None:
        """What runs before the search's first round: the model's draft where the plan asks for
        one, the draft's proof on the original, and its placement in the searched text. None
        when the search can start; else why not. The capture bench counts a kernel proven
        only through this (what it accepts, `fsr optimize` and the editor accept)."""
        config = job.settings.search_config()
        job.searched_text = job.searched_text or job.text
        plan = job.plan or SpecPlan(KernelSpec(str(job.path), job.kernel, 0, "attached", None))
        job.draft = plan.draft
        if plan.ask_model is not None and config.llm.configured:
            report(Progress(0, config.rounds, 0, 0, None, f"asking {config.llm.model} to draft the @fsr spec"))
            drafted = plan.ask_model(config.llm)
            if drafted.text is None:
                return SearchOutcome("failed", f"{job.kernel} has no @fsr spec and none could be drafted: "
                                               + "; ".join(drafted.problems))
            job.draft = drafted.text
        if job.draft is not None:
            job.proof = self.prove(job, report)
            if not job.proof.proven:
                return SearchOutcome("failed", f"the drafted @fsr spec of {job.kernel} failed its proof: "
                                               f"{job.proof.message}")
            job.draft = job.proof.spec  # with the tolerance the proof may have added
            job.searched_text = place_spec(job.searched_text, job.kernel, job.draft).text
            if job.cancel.is_set():
                return SearchOutcome("cancelled", "cancelled after the proof of the drafted spec")
        return None

    def prove(self, job: KernelJob, report: Callable[[Progress], None]) -> Proof:
        """The draft's proof on the original kernel (cached per kernel text and GPU in .fsr/)."""
        rounds = job.settings.search_rounds
        assert job.draft is not None
        if self.instruments.prover is not None:
            return self.instruments.prover(job.searched_text, job.kernel, job.draft)
        with ProofCache(job.workspace) as cache:
            return prove_with(self.backend(job.settings), job.searched_text, job.kernel, job.draft,
                              job.eval_options(), cache=cache,
                              on_stage=lambda message: report(Progress(0, rounds, 0, 0, None, message)))

    def _bench(self, job: KernelJob) -> GpuBench:
        if self.instruments.bench is not None:
            return self.instruments.bench()
        return GpuBench(self.backend(job.settings), job.searched_text, job.kernel, job.eval_options(), cancel=job.cancel,
                        min_gain=job.settings.search_min_gain)

    def cancel(self) -> None:
        """Stop the GPU work running now (each run's own cancel event stops the rest)."""
        if self._backend is not None:
            self._backend.cancel()

    def close(self) -> None:
        with self._lock:
            if self._fixed:
                return
            if self._backend is not None:
                self._backend.close()
            self._backend = None
