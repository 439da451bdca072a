"""`fsr eval FILE.cu --kernel NAME [--candidate OTHER.cu]`: one verified, timed comparison."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import threading
from pathlib import Path

from .arguments import workspace_of
from ..evaluator import Evaluator, EvaluatorUnavailable, TimingConfig
from ..evaluator.records import EvalResult
from ..evaluator.worker.serde import to_json
from ..evaluator.support import gpu_support_missing
from ..evaluator.backends import local_gpus
from ..evaluator.compile.compiler import find_nvcc, CompilerMissing
from ..evaluator.job.prepare import prepare
from ..kernels.aliases import with_included_aliases
from ..specs.defines import with_defines
from ..settings import Settings, settings_from_args
from ..kernels import discover
from ..source import SourceText
from ..specs import parse_spec
from ..drafting.placement import place_spec
from ..drafting.workspace import LaunchIndex
from ..kernels import find_kernel
from ..evaluator.backends.local import LocalBackend
from ..evaluator.backends.request import EvalRequest
from ..evaluator.backends.service_client import ServiceBackend
from ..workflows.optimize import Optimizer, KernelJob, SpecPlan, plan_spec, spec_options
from rich.markup import escape

from .console import InputError, fail, make_console, read_source
from .tables import render_result

EXIT = {"verified": 0, "spec_error": 2, "unavailable": 3}




def run(args: argparse.Namespace) -> int:
    try:
        source = read_source(args.file)
        candidate = read_source(args.candidate) if args.candidate else None
        settings = settings_from_args(args)
    except (InputError, ValueError) as e:
        return fail(str(e), 2)
    missing = gpu_support_missing("GPU evaluation needs")
    backend: LocalBackend | ServiceBackend | None = None
    if not missing:
        try:
            gpu = local_gpus(settings.gpus or "0")[0]
        except ValueError:
            return fail(f"--gpu {settings.gpus}: expected a GPU index", 2)
        # the warm service where the settings ask for it (no CUDA start here); else a worker of its own
        backend = ServiceBackend(str(gpu), args.timeout, settings.evaluator_service_idle) \
            if settings.evaluator_backend == "service" else LocalBackend(_starting(Evaluator(gpu, timeout=args.timeout)))
    try:
        return _evaluate(args, settings, source, candidate, backend, missing)
    finally:
        if backend is not None:
            backend.close()


def _starting(evaluator: Evaluator) -> Evaluator:
    """The worker starts (torch and the CUDA context: about 5 s) while the spec is found and
    checked; evaluate() waits for it, or says why it could not start."""
    def start() -> None:
        try:
            evaluator.start()
        except (EvaluatorUnavailable, OSError, EOFError, ValueError):  # said by evaluate(), or closed meanwhile
            pass

    threading.Thread(target=start, daemon=True, name="fsr-worker-start").start()
    return evaluator


def _evaluate(args: argparse.Namespace, settings: Settings, source: str, candidate: str | None,
              backend: LocalBackend | ServiceBackend | None, missing: str) -> int:
    original = source
    source, plan = _with_spec(args, settings, source)
    # the settings' options with what the spec's run saved and its build's -D, as `fsr optimize` has them
    base = spec_options(settings.eval_options(args.file), plan.spec if plan is not None else None)
    problem = _precheck(args, source, base.include_dirs, base.flags)
    if problem:  # what the CPU can tell is said before asking for a GPU
        return fail(problem, 2)
    if backend is None:
        return _without_gpu(args, settings, source, candidate, missing)
    if plan is not None and plan.draft is not None:  # proven first, as `fsr optimize` proves it (the same code)
        job = KernelJob(original, args.file.resolve(), args.kernel, workspace_of(args.file), settings, plan)
        with _Status(not args.json) as status:
            stopped = Optimizer(backend, args.instruments).prepare(job, lambda p: status.update(p.message))
        if stopped is not None:
            return fail(stopped.message, 3 if job.proof is not None and job.proof.status == "unavailable" else 2)
        source = job.searched_text
    options = dataclasses.replace(base, compiler=args.compiler, seeds_per_size=args.seeds, base_seed=args.seed,
                                  timing=TimingConfig(max_reps=args.reps, min_reps=min(20, args.reps)))
    with _Status(not args.json) as status:
        result = backend.evaluate_one(EvalRequest(source, args.kernel, candidate, options), settings.search_sanitize,
                                      status.update)
    if result.status == "unavailable":
        return fail(result.message, 3)
    if args.json:
        print(to_json(result, indent=2))
    else:
        render_result(result, args.file, args.candidate, min_gain=settings.search_min_gain)
    return EXIT.get(result.status, 1)


def _without_gpu(args: argparse.Namespace, settings: Settings, source: str, candidate: str | None, missing: str) -> int:
    """No GPU here: still compile what can be compiled (for `compiler.arch`) and show a verdict
    that needs no GPU (the candidate does not compile, is rejected, the original is no oracle)
    before saying what is missing."""
    options = dataclasses.replace(settings.eval_options(args.file), compiler="nvcc")
    if find_nvcc(settings.compiler_nvcc or None) is None:  # nothing can be compiled either: no arch to name
        return fail(f"{missing}; nvcc is not here either, so nothing was compiled", 3)
    try:
        prepared = prepare(source, args.kernel, candidate, settings.compiler_arch, options)
    except CompilerMissing:
        return fail(missing, 3)
    if prepared.job is None and prepared.result is not None and prepared.result.status != "unavailable":
        result = prepared.result
        if args.json:
            print(to_json(result, indent=2))
        else:
            render_result(result, args.file, args.candidate, min_gain=settings.search_min_gain)
        return EXIT.get(result.status, 1)
    return fail(f"{missing} (it compiles for {settings.compiler_arch}: the rest needs the GPU)", 3)


def _with_spec(args: argparse.Namespace, settings: Settings, source: str) -> tuple[str, SpecPlan | None]:
    text, _, message, plan = spec_and_inputs(args.file, source, args.kernel, settings)
    if message and not args.json:
        make_console(stderr=True).print(escape(message), highlight=False)
    return text, plan


def spec_and_inputs(file: Path, source: str, kernel_name: str,
                    settings: Settings) -> tuple[str, tuple[tuple[str, str], ...], str, SpecPlan | None]:
    """The text to evaluate, the saved inputs that join its checks, what to tell the user and
    the plan they came from, found as Optimize finds them: the kernel's own block, else its
    launch in the workspace's captures, else a draft from its launch (placed above the kernel,
    in memory only; with a GPU it is proven first, as Optimize proves it)."""
    kernel = find_kernel(source, kernel_name)
    if kernel is None:
        return source, (), "", None  # the precheck names the kernels there are
    plan = plan_spec(LaunchIndex(workspace_of(file), first_wait=None), file.resolve(), source, kernel, settings,
                     then="evaluating")
    text = place_spec(source, kernel.name, plan.draft).text if plan.draft else source
    return text, tuple(sorted(plan.spec.inputs.items())), plan.message, plan


def _precheck(args: argparse.Namespace, source: str, include_dirs: tuple[str, ...] = (),
              flags: tuple[str, ...] = ()) -> str:
    """Why this evaluation cannot run, as far as the CPU can tell ('' when it can)."""
    for name, value, floor in (("--reps", args.reps, 1), ("--seeds", args.seeds, 1)):
        if value < floor:
            return f"{name} {value}: expected at least {floor}"
    if args.timeout <= 0:
        return f"--timeout {args.timeout:g}: expected a positive number of seconds"
    src = SourceText(source)
    found = discover(src)
    kernel = next((k for k in found.kernels if k.name == args.kernel), None)
    if kernel is None:
        names = ", ".join(k.name for k in found.kernels) or "none"
        return f"no kernel named {args.kernel} in {args.file} (kernels there: {names})"
    if not kernel.complete:
        return f"{args.kernel} in {args.file} is incomplete: its braces do not balance"
    kernel = with_included_aliases(kernel, source, include_dirs, with_defines(tuple(flags), kernel))  # as the evaluator types it
    result = parse_spec(src, kernel)
    if result.spec is None:
        errors = [f"line {p.span.start.line + 1}: {p.message}" for p in result.problems if p.severity == "error"]
        return f"the @fsr spec of {args.kernel} is unusable: " + ("; ".join(errors[:3]) or "no spec")
    return ""


class _Status:
    """A one-line live stage display on stderr (nothing when printing JSON)."""

    def __init__(self, enabled: bool) -> None:
        self._status = None
        if enabled and sys.stderr.isatty():

            self._status = make_console(stderr=True).status("starting the GPU worker")

    def __enter__(self) -> "_Status":
        if self._status is not None:
            self._status.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._status is not None:
            self._status.__exit__(*exc)

    def update(self, text: str) -> None:
        if self._status is not None:
            self._status.update(text)


__all__ = ["run", "EvalResult"]
