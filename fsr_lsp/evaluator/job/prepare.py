"""The CPU half of an evaluation: find the kernel, read its spec, vet and compile the
candidate, and build the job. Runs anywhere nvcc does; the GPU half takes the job."""

from __future__ import annotations

import dataclasses
import os
import re
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ...kernels import Kernel, discover
from ...kernels.device_variables import compared_variables
from ...kernels.aliases import flag_defines, included_texts, type_aliases, with_included_aliases
from ...kernels.lexical import defined_macros
from ...kernels.packs import expanded
from ... import scratch
from ...source import SourceText
from ...specs import Spec, parse_spec
from ...specs.defines import with_defines
from ...specs.param_types import template_substitution
from .candidate_compile import Compiled, Original, vet_and_compile
from .options import EvalOptions
from .captured_buffers import with_captured_sources
from .constants import runtime_constants
from ..compile.compiler import CompileOptions, CompilerMissing, KernelRef, compile_kernel
from ..compile.device_unit import missing_in_headers, device_unit, error_lines, missing_headers
from .launch_kind import needs_cooperative_launch
from .plan import build_plans, variable_plans
from .struct_layout import layout_checks
from ..records import Check, CompileResult, EvalJob, EvalResult, KernelBinary, SizePlan
from .verdicts import Final, final, first_error
from .widening import NotWidenable, grounded_buffers, widen


@dataclass
class Prepared:
    job: EvalJob | None = None
    result: EvalResult | None = None  # final when `job` is None; else the CPU-side checks to merge
    kernel: Kernel | None = None
    spec: Spec | None = None
    launch_changed: bool = False


def prepare(source: str, kernel_name: str, candidate: str | None, arch: str, options: EvalOptions) -> Prepared:
    """A job for the GPU, or the final verdict when none is needed (bad spec, rejected or
    uncompilable candidate)."""
    started = time.perf_counter()
    try:
        return _prepare(source, kernel_name, candidate, arch, options, started)
    except Final as verdict:
        return Prepared(result=verdict.result)


@dataclass
class _Read:
    """The kernel as its spec instantiates it, and what reading it found."""

    kernel: Kernel
    instance: Kernel
    spec: Spec
    options: EvalOptions  # with the block's own defines and the compared `__device__` variables
    kept: list
    warnings: list[str]


def _prepare(source: str, kernel_name: str, candidate: str | None, arch: str, options: EvalOptions,
             started: float) -> Prepared:
    read = _read(source, kernel_name, options, started)
    options, spec = read.options, read.spec
    original = _compile_original(source, read, arch, started)
    checks = [Check("compile original", "pass", f"{original.compiled.compiler}, {original.compiled.seconds:.2f} s"
                    + (" (cached)" if original.compiled.cached else ""))]
    compiled = vet_and_compile(original, candidate, arch, options, started, checks) if candidate is not None else None
    orig = compiled.original if compiled else original.compiled
    source = original.source
    # the headers' types are read only for a file that has __constant__ data: this runs per candidate
    constants, left = runtime_constants(source, constant_aliases(source, options)) if "__constant__" in source \
        else ([], [])
    sizes, unmet = with_captured_sources(build_plans(read.instance, spec, compiled.vetted.spec if compiled else None),
                                         dict(options.real_inputs), spec.bench_inputs == "captured")
    variables = variable_plans(read.kept, spec)  # the same buffers at every size
    sizes = [dataclasses.replace(p, args=[*p.args, *variables]) for p in sizes]
    if unmet:
        raise final(kernel_name, "spec_error", f"the spec of {kernel_name} cannot run: {unmet}", started, checks)
    # A screening job's outputs are checked within the default tolerance: it is never a verdict, and
    # the double run of the original at the bench size would cost as much as the screen itself.
    wide, wide_why = (None, "") if options.time_only or options.screen else \
        _double_precision(source, original.ref, sizes, options, arch, original.wide_layouts)
    job = dataclasses.replace(_job(original, orig, compiled, sizes, options), wide=wide, wide_why=wide_why,
                              constants=constants)
    pre = Prepared(job=job, kernel=read.instance, spec=spec,
                   launch_changed=compiled.vetted.launch_changed if compiled else False)
    pre.result = EvalResult(kernel=kernel_name, status="verified", message="", checks=checks,
                            warnings=read.warnings + left,
                            compile={"original": orig, **({"candidate": compiled.candidate} if compiled else {})})
    return pre


def _read(source: str, kernel_name: str, options: EvalOptions, started: float) -> _Read:
    """The kernel found, typed as the build reads it, and its spec parsed; raises the verdict
    where the kernel or its spec cannot be used."""
    src = SourceText(source)
    found = discover(src)
    kernel = next((k for k in found.kernels if k.name == kernel_name), None)
    if kernel is None:
        names = ", ".join(k.name for k in found.kernels) or "none"
        raise final(kernel_name, "spec_error", f"no kernel named {kernel_name} (kernels in the file: {names})", started)
    options = dataclasses.replace(options, flags=with_defines(options.flags, kernel))  # the block's own `defines`
    kernel = with_included_aliases(kernel, source, options.include_dirs, options.flags)  # `floatX` in a header, -D
    orphans = [f"the @fsr block at line {o.comment.span.start.line + 1} attaches to no kernel: {o.reason}"
               for o in found.orphan_specs]
    spec_result = parse_spec(src, kernel)
    if spec_result.spec is None:
        problems = "; ".join([f"line {p.span.start.line + 1}: {p.message}" for p in spec_result.problems
                              if p.severity != "info"] + orphans) or "no spec"
        raise final(kernel_name, "spec_error", f"the spec of {kernel_name} is unusable: {problems}", started)
    kept, why = compared_variables(src, kernel)  # results kept in the file's `__device__` variables: made buffers
    if why:  # where no check looks: nothing it does could be verified
        raise final(kernel_name, "spec_error", f"{kernel_name} cannot be verified: {why}", started)
    options = dataclasses.replace(options, device_variables=tuple(v.name for v in kept))
    spec = spec_result.spec
    instance = expanded(kernel, spec.template, source)  # the parameters as its spec instantiates the kernel
    warnings = [p.message for p in spec_result.problems if p.severity == "warning"] + orphans
    return _Read(kernel, instance, spec, options, list(kept), warnings)


def _compile_original(source: str, read: _Read, arch: str, started: float) -> Original:
    """The original compiled (as device code alone where the whole file does not compile), with
    the checks of its struct layouts; raises the verdict where it cannot be."""
    options, name = read.options, read.kernel.name
    ref = kernel_ref(read.instance, read.spec)
    layouts, wide_layouts = layout_checks(read.instance, read.spec, dict(options.real_inputs))  # '' unless it takes values
    try:
        orig = compile_kernel(source + layouts, ref, options.compile_options(arch))
        if not orig.ok:
            orig, source = _device_side(source, ref, options.compile_options(arch), orig, read.warnings)
            if orig.ok and layouts:  # the device-side unit, with the layouts checked as well
                orig = compile_kernel(source + layouts, ref, options.compile_options(arch))
    except CompilerMissing as e:
        raise final(name, "unavailable", str(e), started) from None
    if not orig.ok:
        raise final(name, "spec_error", f"the original {name} does not compile:\n{orig.log}", started,
                    compiled={"original": orig})
    return Original(read.kernel, read.spec, ref, source, layouts, orig, wide_layouts)


def _job(original: Original, orig: CompileResult, compiled: Compiled | None, sizes: list[SizePlan],
         options: EvalOptions) -> EvalJob:
    """The GPU's job: the binaries (`orig`: the original's, built again by nvcc where the
    candidate needed it), the sizes (the bench size alone for a screen or a timing), the mode,
    and the settings it runs with."""
    seeds, timing, defences = options.job_settings()
    name = original.kernel.name
    return EvalJob(
        kernel=name,
        original=_launched_as_needed(orig.binary, original.source, name),  # type: ignore[arg-type]
        candidate=_launched_as_needed(compiled.candidate.binary, compiled.vetted.source, name) if compiled else None,
        sizes=sizes[-1:] if options.screen or options.time_only else sizes,  # the bench size comes last
        mode="time" if options.time_only else "alone" if options.screen and options.screen_alone else "full",
        seeds_per_size=seeds,
        base_seed=options.base_seed if options.base_seed is not None else int.from_bytes(os.urandom(4), "little"),
        bench_seed=options.bench_seed,
        seeds_shared=options.base_seed is not None,
        ref={} if options.screen else dict(original.spec.ref),
        timing=timing,
        defences=defences,
        screen=options.screen,
        real_inputs={} if options.screen else dict(options.real_inputs),
    )


def constant_aliases(source: str, options: EvalOptions) -> dict[str, str]:
    """Type names as the build reads them: the file's and its headers', under its -D macros."""
    headers = included_texts(source, tuple(map(Path, options.include_dirs))) if "#include" in source else []
    return type_aliases("\n".join([*headers, source]), defined_macros(source.encode()) | flag_defines(options.flags))


def _device_side(source: str, ref: KernelRef, options: CompileOptions, failed: CompileResult,
                 warnings: list[str]) -> tuple[CompileResult, str]:
    """The file compiled without the headers it cannot find and its host code, when that is
    why it failed (the compiler names one missing header, or one layer of errors, at a time);
    else the first failure."""
    missing, errors = missing_headers(failed.log), error_lines(failed.log)
    with scratch.folder("headers") as patched:
        return _device_side_in(source, ref, options, failed, warnings, missing, errors, patched)


def _device_side_in(source: str, ref: KernelRef, options: CompileOptions, failed: CompileResult, warnings: list[str],
                    missing: tuple[str, ...], errors: frozenset[int], patched: Path) -> tuple[CompileResult, str]:
    """`_device_side`'s tries; a header of the user's that includes a missing one is compiled
    from a copy in `patched` (first on the include path) without that include and its host code."""
    headers = 0
    for _ in range(8):
        headers += _patch_headers(failed.log, options.include_dirs, patched)
        unit = device_unit(source, missing, errors, hosts=headers > 0)
        if unit is None:
            return failed, source
        if headers:
            options = dataclasses.replace(options, include_dirs=(str(patched), *options.include_dirs)) \
                if str(patched) not in options.include_dirs else options
        result = compile_kernel(unit.text, ref, options)
        if result.ok:
            why = (f"{', '.join(unit.missing)} not found" if unit.missing else
                   f"its host code does not compile here ({first_error(failed.log)[:160]})")
            blanked = f"{unit.host_functions} host functions" + (
                f" and {unit.declarations} host declarations" if unit.declarations else "")
            warnings.append(f"compiled without its host code: {why} ({blanked} left out; -I adds include folders)")
            return result, unit.text
        more = tuple(h for h in missing_headers(result.log) if h not in missing)
        new_errors = error_lines(result.log) - errors
        deeper = _patch_headers(result.log, options.include_dirs, patched)
        if not more and not new_errors and not deeper:
            return failed, source
        headers += deeper
        missing, errors = missing + more, errors | new_errors
        failed = result if deeper else failed
    return failed, source


def _patch_headers(log: str, include_dirs: tuple[str, ...], patched: Path) -> int:
    """Copies, in `patched`, of the user's headers that include one the compiler cannot find:
    that include and their host functions left out (lines kept). How many were written."""
    written = 0
    for named, missing in missing_in_headers(log).items():
        path = _header_path(named, include_dirs)
        if path is None or path.parent == patched:
            continue
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        unit = device_unit(text, missing)
        target = patched / path.name
        if unit is not None and not target.exists():
            target.write_text(unit.text, encoding="utf-8")
            written += 1
    return written


def _header_path(named: str, include_dirs: tuple[str, ...]) -> Path | None:
    """The header the compiler names (an absolute path, or one relative to an include folder)."""
    candidates = [Path(named)] + [Path(d) / named for d in include_dirs] + [Path(d) / Path(named).name
                                                                           for d in include_dirs]
    return next((c for c in candidates if c.is_absolute() and c.is_file()), None)


WIDE_MAX_BYTES = 4 << 30  # buffers above this at the bench size: no double-precision copy beside them


def _double_precision(source: str, ref: KernelRef, sizes: list[SizePlan], options: EvalOptions,
                      arch: str, checks: str = "") -> tuple[KernelBinary | None, str]:
    """The original built with float promoted to double, for the accuracy criterion, when an
    output can be judged against it; else (None, why not) where one could have been."""
    plan = sizes[0]
    if not grounded_buffers(plan):
        return None, ""
    if any(a.kind == "texture" for a in plan.args):
        return None, "it reads textures, whose texels stay float"
    if any(a.kind == "bytes" or a.links for a in plan.args):
        return None, "it takes memory holding pointers as a run left it, whose layout a double build would change"
    largest = max(p.buffer_bytes for p in sizes)
    if largest > WIDE_MAX_BYTES:  # a run of a program that fills the GPU: a double copy would not fit beside it
        return None, (f"its buffers take {largest / (1 << 30):.1f} GiB at the bench size: a double-precision copy "
                      f"would need as much again (more than {WIDE_MAX_BYTES >> 30} GiB)")
    return _wide_binary(source, ref, options.compile_options(arch), checks)


@lru_cache(maxsize=64)  # every candidate of a search shares the original: a failure is not compiled again
def _wide_binary(source: str, ref: KernelRef, options: CompileOptions,
                 checks: str = "") -> tuple[KernelBinary | None, str]:
    """`checks`: the parameters' layouts as the double-precision plan packs them (struct_layout.py)."""
    try:
        wide = widen(source, ref)
    except NotWidenable as e:
        return None, str(e)
    compiled = compile_kernel(wide.source + checks, wide.ref, options)
    if not compiled.ok:
        compiled, unit = _device_side(wide.source, wide.ref, options, compiled, [])
        if compiled.ok and checks:
            compiled = compile_kernel(unit + checks, wide.ref, options)
    if not compiled.ok or compiled.binary is None:
        return None, f"it does not compile with float promoted to double ({first_error(compiled.log)[:160]})"
    return _launched_as_needed(compiled.binary, wide.source, ref.name), ""


def _launched_as_needed(binary: KernelBinary | None, text: str, kernel: str) -> KernelBinary | None:
    """The binary marked for a cooperative launch when its code syncs the whole grid."""
    if binary is None or not needs_cooperative_launch(text, kernel):
        return binary
    return dataclasses.replace(binary, cooperative=True)


def kernel_ref(kernel: Kernel, spec: Spec) -> KernelRef:
    subst = template_substitution(kernel, spec.template)
    types = []
    for p in kernel.params:
        t = p.type_text
        for name, value in subst.items():
            t = re.sub(rf"\b{re.escape(name)}\b", value, t)
        types.append(t)
    return KernelRef(kernel.name, spec.template, tuple(types))
