"""`fsr spec FILE... [--kernel K] [--json] [--check]`: each kernel's spec, where it came from,
and its problems (attached, captured from a run, drafted from a launch site or by the model,
inferred from the signature, or none); with --check, the proof of each spec on the GPU with the original kernel."""

from __future__ import annotations

import argparse
import contextlib
import json
from pathlib import Path

from rich.markup import escape

from .arguments import unwritable, workspace_of
from ..capture import read_capture
from ..drafting.cache import ProofCache
from ..drafting.by_llm import model_draft
from ..drafting.origin import Drafter, KernelSpec
from ..drafting.resolver import file_specs
from ..drafting.workspace import LaunchIndex
from ..kernels import discover
from ..source import SourceText
from ..drafting.proof import Proof, prove_with
from ..evaluator import EvaluatorUnavailable
from ..evaluator.backends import backend_missing, make_backend
from ..llmclient import ChatClient
from ..settings import Settings, settings_from_args
from .console import InputError, fail, make_console, read_source
from ..workflows.optimize import spec_options
from .eval_cmd import _Status




def run(args: argparse.Namespace) -> int:
    try:
        for f in args.files:
            read_source(f)  # one line for a file that is missing, a folder, or not UTF-8
    except InputError as e:
        return fail(str(e), 2)
    try:
        settings = settings_from_args(args)
    except ValueError as e:
        return fail(str(e), 2)
    llm = settings.llm_config()
    drafter: Drafter | None = None
    if llm.configured:
        chat = ChatClient(llm)
        drafter = lambda src, k, launches, why: model_draft(chat, src, k, launches, why)  # noqa: E731
    index = LaunchIndex(workspace_of(args.files[0], args.workspace), first_wait=None)
    if args.capture is not None:
        capture = read_capture(args.capture)
        if not capture.launches:
            return fail(f"{args.capture} holds no captured launch", 2)
        index.use_capture(capture)
    elif args.no_capture:
        index.use_capture(None)
    found = _resolved(index, list(args.files), drafter, settings, args.kernel)
    if not found and (not args.kernel or not _has_kernels(args.files)):
        # an empty file, a header of host code, a file that is no CUDA at all: said, not silence
        return fail(f"no kernel (__global__ function) in {', '.join(map(str, args.files))}", 2)
    specs = [s for s in found if args.kernel in (None, s.kernel)]
    if args.kernel and not specs:
        return fail(f"no kernel named {args.kernel} in {', '.join(map(str, args.files))}", 2)
    proofs: dict[tuple[str, str], Proof] = {}
    if args.check:
        why = unwritable(workspace_of(args.files[0], args.workspace))  # the proofs are cached there
        if why:
            return fail(why, 2)
        why = backend_missing(settings.backend_choice(), "--check needs")
        if why:
            return fail(why, 3)
        try:
            proofs = _prove_all(args, settings, specs)
        except ValueError:
            return fail(f"--gpu {settings.gpus}: expected a GPU index, a list such as 0,1, or all", 2)
        except EvaluatorUnavailable as e:  # no GPU reached (a Ray cluster down, say): as every command says it
            return fail(str(e), 3)
    if args.json:
        print(json.dumps([_json(s, proofs.get((s.file, s.kernel)), args.check) for s in specs], indent=2))
    else:
        _print(specs, proofs)
    return 1 if any(p.status == "failed" for p in proofs.values()) else 0


def _has_kernels(files: list[Path]) -> bool:
    return any(discover(SourceText(f.read_text(encoding="utf-8", errors="replace"))).kernels for f in files)


def _resolved(index: LaunchIndex, files: list[Path], drafter: Drafter | None, settings: Settings,
              only: str | None = None) -> list[KernelSpec]:
    """Every kernel of the files (or only the one named `only`: a 10 MB file's other kernels are
    not drafted for it), resolved as `fsr optimize` resolves one (`file_specs`: the workspace's
    launches and captures, the files given counting as they are), named by the paths as given."""
    texts = {f.resolve(): f.read_text(encoding="utf-8", errors="replace") for f in files}
    out = []
    for f in files:
        for s in file_specs(index, f.resolve(), texts[f.resolve()], texts, drafter, settings.include_paths,
                            settings.compiler_flags, only):
            s.file = str(f)
            out.append(s)
    return out


def _prove_all(args: argparse.Namespace, settings: Settings, specs: list[KernelSpec]) -> dict[tuple[str, str], Proof]:
    out = {}
    backend = make_backend(settings.backend_choice(timeout=args.timeout))
    with contextlib.closing(backend), ProofCache(workspace_of(args.files[0], args.workspace)) as cache, \
            _Status(not args.json) as status:
        status.update("starting the GPU workers")
        backend.start()  # GPUs that cannot be reached (a Ray cluster down): one line and exit 3, before any spec
        for s in specs:
            if s.spec is None:
                continue
            path = Path(s.file)
            options = spec_options(settings.eval_options(path), s)  # as `fsr optimize` proves it
            status.update(f"proving the spec of {s.kernel}")
            block = None if s.origin == "attached" else s.spec
            out[(s.file, s.kernel)] = prove_with(backend, path.read_text(encoding="utf-8", errors="replace"), s.kernel,
                                                 block, options, cache=cache, timeout=args.timeout,
                                                 on_stage=lambda m, k=s.kernel: status.update(f"{k}: {m}"))
    return out


def _json(s: KernelSpec, proof: Proof | None, checked: bool) -> dict:
    data = s.as_json()
    if proof is not None and proof.spec and proof.spec != s.spec and s.origin != "attached":
        data["spec"] = proof.spec  # the proof added a tolerance
    if checked:
        data["proof"] = None if proof is None else {
            "status": proof.status, "message": proof.message, "check": proof.check, "argument": proof.argument,
            "nondeterministic": proof.nondeterministic, "gpu": proof.gpu, "cached": proof.cached}
        if proof is not None and proof.status == "failed":
            data["problems"] = data["problems"] + [f"proof failed: {proof.message}"]
    return data


def _print(specs: list[KernelSpec], proofs: dict[tuple[str, str], Proof]) -> None:
    console = make_console(soft_wrap=True)
    for s in specs:
        console.print(f"[bold]{escape(s.kernel)}[/] ({escape(s.file)}:{s.line}): [cyan]{s.origin}[/]", highlight=False)
        if s.trail:  # the stages tried, in order, the last the one that answered (or none did)
            console.print("  tried: " + " > ".join(stage for stage, _ in s.trail), markup=False, highlight=False)
        proof = proofs.get((s.file, s.kernel))
        spec = proof.spec if proof is not None and proof.spec and s.origin != "attached" else s.spec
        if spec:
            console.print(spec.rstrip(), markup=False, highlight=False)
        for key, origin in s.provenance.items():
            console.print(f"  {key}: {origin}", markup=False, highlight=False)
        if s.build:
            console.print(f"  {s.build}", markup=False, highlight=False)
        for problem in s.problems:
            console.print(f"  [yellow]problem:[/] {escape(problem)}", highlight=False)
        if proof is not None:
            colour = {"proven": "green", "failed": "red"}.get(proof.status, "yellow")
            cached = " (cached)" if proof.cached else ""
            console.print(f"  [{colour}]{proof.status}{cached}[/] on {escape(proof.gpu or 'no GPU')}: ", end="", highlight=False)
            console.print(proof.message, markup=False, highlight=False)
