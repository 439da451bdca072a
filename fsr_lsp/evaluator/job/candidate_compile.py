"""The candidate vetted against the rules and compiled as the original was: with the original's
compiler, or both with nvcc where NVRTC cannot build the candidate (so both are timed as code of
one compiler). A candidate that breaks a rule, hits a limit, does not compile or is the original
itself ends here with its verdict (verdicts.py)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

from ...kernels import Kernel
from ...kernels.device_variables import shadowed
from ...kernels.lexical import code_only
from ...source import SourceText
from ...specs import Spec
from ..compile.compiler import KernelRef, compile_kernel
from ..compile.compiler_output import scrub
from ..records import Check, CompileResult
from .candidate import CandidateCheck, check_candidate
from .options import EvalOptions
from .preprocessing import original_includes
from .verdicts import final, first_error


@dataclass
class Compiled:
    """The candidate built beside the original (which nvcc may have built again)."""

    vetted: CandidateCheck
    candidate: CompileResult
    original: CompileResult


@dataclass(frozen=True)
class Original:
    """What the candidate is held to: the kernel as found, its spec and compiled reference, and
    the source it was compiled from (with any layout checks appended: `layouts`)."""

    kernel: Kernel
    spec: Spec
    ref: KernelRef
    source: str
    layouts: str
    compiled: CompileResult
    wide_layouts: str = ""  # the layout checks of its double-precision build


def vet_and_compile(original: Original, candidate: str, arch: str, options: EvalOptions, started: float,
                    checks: list[Check]) -> Compiled:
    """The candidate's checks appended to `checks`; raises its verdict where it goes no further."""
    name, source = original.kernel.name, original.source
    vetted = check_candidate(SourceText(source), original.kernel, original.spec, candidate, options.include_dirs)
    if not vetted.ok:
        raise final(name, "rejected", vetted.reason, started, [*checks, Check("candidate rules", "fail", vetted.reason)])
    mine = shadowed(vetted.source, options.device_variables)
    if mine:  # made a pointer, its own `mine` would be another thing
        why = (f"the rewrite declares its own `{mine}`, the name of the file's `__device__` variable fsr compares: "
               "give it another name")
        raise final(name, "rejected", why, started, [*checks, Check("candidate rules", "fail", why)])
    checks.append(Check("candidate rules", "pass", "device code only; same name and parameters"))
    if options.skip_unchanged and not vetted.launch_changed and not options.candidate_flags \
            and code_only(vetted.source) == code_only(source):
        raise final(name, "unchanged", "no change: the candidate is the original's own code (modulo whitespace and "
                    "comments) with the same launch; not timed", started,
                    [*checks, Check("changes the code", "fail", "same code and launch as the original")])
    compiled = _compile(original, vetted, arch, options)
    cand = compiled.candidate
    if cand.limit:
        raise final(name, "rejected", cand.log, started, [*checks, Check("compile candidate", "fail", cand.log)])
    if not cand.ok:
        raise final(name, "compile_error", f"the candidate does not compile:\n{cand.log}", started,
                    [*checks, Check("compile candidate", "fail", first_error(cand.log))],
                    {"original": compiled.original, "candidate": cand})
    checks.append(Check("compile candidate", "pass", f"{cand.compiler}, {cand.seconds:.2f} s"
                        + (" (cached)" if cand.cached else "")))
    return compiled


def _compile(original: Original, vetted: CandidateCheck, arch: str, options: EvalOptions) -> Compiled:
    """The candidate by the original's compiler; where NVRTC cannot build it, both by nvcc."""
    shown = _candidate_log(vetted, original.source)
    orig = original.compiled
    code = vetted.source + original.layouts
    cand = shown(compile_kernel(code, original.ref, options.compile_options(arch, orig.compiler, candidate=True)))
    if not cand.ok and not cand.limit and orig.compiler == "nvrtc":
        cand = shown(compile_kernel(code, original.ref, options.compile_options(arch, "nvcc", candidate=True)))
        if cand.ok:  # time both with the same compiler's code
            orig = compile_kernel(original.source + original.layouts, original.ref, options.compile_options(arch, "nvcc"))
    return Compiled(vetted, cand, orig)


def _candidate_log(vetted: CandidateCheck, original: str) -> Callable[[CompileResult], CompileResult]:
    """The compiler's text about a candidate as the candidate may see it: its own lines named,
    no text of files outside it, the original and the headers they may include."""
    headers = {name.strip('<>"').rsplit("/", 1)[-1] for name in original_includes(original)}
    return lambda c: dataclasses.replace(c, log=scrub(c.log, vetted.lines, headers)) if c.log and not c.limit else c
