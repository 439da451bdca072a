"""Prompts from the templates in prompts/: what the model is told about the kernel, the GPU,
the measurements and the history of candidates."""

from __future__ import annotations

import re
from functools import lru_cache
from importlib.resources import files
from string import Template

from ..evaluator.records import EvalResult, GpuInfo, SizePlan
from .context import RoundContext
from .proposal import Tried
from .generators.structural import patterns

MAX_HISTORY_LINES = 12
MAX_ERROR_LINES = 30
MAX_ERROR_LINE_CHARS = 400
MAX_SHOWN_SOURCE = 32 * 1024  # a candidate shown as fastest or slowest; a larger one is named, not shown
PROMPT_CAP = 192 * 1024  # sections are dropped, least useful first, to stay under it
_DIAGNOSTIC = re.compile(r"\berror\s*:|fatal error|\bwarning\s*#|ptxas (error|fatal)")


@lru_cache(maxsize=None)
def template(name: str) -> Template:
    return Template(files("fsr_lsp.search").joinpath("prompts", name).read_text(encoding="utf-8"))


def system_prompt() -> str:
    return template("system.md").template.strip()


def propose_prompt(ctx: RoundContext, index: int, count: int) -> str:
    if ctx.mode == "staged":
        task = template("task_staged.md").substitute(round=ctx.round + 1, rounds=ctx.rounds,
                                                     guide=template(f"staged/{ctx.workload}.md").template.strip())
    else:
        task = template("task_fsr.md").substitute(index=index + 1, count=count, round=ctx.round + 1, rounds=ctx.rounds)
    # Staged refinement starts from the code alone; profiler feedback joins after the first rounds.
    show_resources = ctx.mode == "fsr" or ctx.round >= 2
    sections = {"declarations": describe_declarations(ctx), "resources": describe_resources(ctx) if show_resources else "",
                "profile": describe_profile(ctx), "history": history_section(ctx)}
    # Over the cap: the slowest example goes first, then the fastest's code, then the rest.
    for trim in ("", "slowest", "fastest", "profile", "declarations"):
        if trim in ("slowest", "fastest"):
            sections["history"] = history_section(ctx, show=("fastest",) if trim == "slowest" else ())
        elif trim:
            sections[trim] = ""
        prompt = template("propose.md").substitute(
            kernel=ctx.kernel_text.strip(), workload=ctx.workload, buffers=describe_buffers(ctx.bench),
            gpu=describe_gpu(ctx.gpu), baseline_ms=f"{ctx.baseline_ms:.4g}", bench_size=ctx.bench.label,
            task=task.strip(), **sections).strip()
        if len(prompt.encode()) <= PROMPT_CAP:
            break
    return prompt


def fix_prompt(failed: Tried) -> str | None:
    """The request to fix a failed candidate, or None when it would be over the prompt cap."""
    r = failed.result
    prompt = template("fix.md").substitute(status=r.status.replace("_", " "), candidate=failed.proposal.source.strip(),
                                           error=error_text(r)[: MAX_ERROR_LINES * MAX_ERROR_LINE_CHARS]).strip()
    return prompt if len(prompt.encode()) <= PROMPT_CAP else None


def describe_declarations(ctx: RoundContext) -> str:
    """Helpers that stand between the spec block and the kernel in the file: the rewrite can use
    them, and must not define them again."""
    if not ctx.declarations:
        return ""
    return ("\nDeclared above the kernel in the same file (your rewrite may use these; do not repeat them):\n\n"
            f"```cuda\n{ctx.declarations}\n```\n")


def describe_gpu(gpu: GpuInfo) -> str:
    parts = [f"{gpu.name}, compute capability {gpu.compute_capability} (compile target {gpu.arch})",
             f"{gpu.sm_count} SMs", f"L2 {gpu.l2_bytes / 2**20:.0f} MiB", f"{gpu.memory_bytes / 2**30:.0f} GiB memory"]
    if gpu.smem_per_block_bytes:
        parts.append(f"shared memory up to {gpu.smem_per_block_bytes // 1024} KiB per block "
                     f"({gpu.smem_per_sm_bytes // 1024} KiB per SM)")
    if gpu.bandwidth_gbps:
        parts.append(f"measured memory bandwidth {gpu.bandwidth_gbps:.0f} GB/s (device-to-device copy)")
    return "; ".join(parts) + "."


def describe_buffers(bench: SizePlan) -> str:
    items = []
    for a in bench.args:
        if a.kind == "buffer" and a.hidden:  # no parameter: what `elem`'s pointers reach (`elem->1`)
            items.append(f"{a.name}: memory reached through {a.name.split('->')[0]}'s pointers, {a.numel} bytes, "
                         "compared after the run")
        elif a.kind == "buffer":
            items.append(f"{a.name}: {a.direction} {'bytes holding pointers' if a.pointers else a.dtype}[{a.numel}]")
        elif a.kind == "bytes":
            items.append(f"{a.name}: passed by value as a captured run passed it ({a.dtype.split(':')[1]} bytes)")
        elif a.texture is not None:
            t = a.texture
            items.append(f"{a.name}: texture object over {'linear memory' if t.linear else 'a CUDA array'} of "
                         f"{'x'.join(map(str, t.dims))} {t.texel}{'x' + str(t.channels) if t.channels > 1 else ''} "
                         f"texels ({t.address}, {t.filter} filtering)")
        elif a.kind == "struct":
            items.append(f"{a.name}: a struct passed by value, its members below")
        else:
            items.append(f"{a.name} = {a.value}")
    return ", ".join(items)


def describe_resources(ctx: RoundContext) -> str:
    best = ctx.seeds[0] if ctx.seeds else None
    result = best.result if best else ctx.baseline
    which = "candidate" if best else "original"
    res = result.resources.get(which) or result.resources.get("original")
    compiled = result.compile.get(which)
    ptxas = compiled.resources if compiled and compiled.resources else None
    if res is None and ptxas is None:
        return ""
    known = ptxas or res
    assert known is not None
    regs, smem = known.registers, known.shared_bytes
    spill = f", {ptxas.spill_stores} bytes spill stores, {ptxas.spill_loads} bytes spill loads" if ptxas else ""
    label = "the fastest version so far" if best else "the original"
    return f"Resource use of {label}: {regs} registers per thread, {smem} bytes static shared memory{spill}."


def describe_profile(ctx: RoundContext) -> str:
    """Nsight Compute's view of the leader (from round 2 on), with the roofline position; and
    the patterns fsr's recognisers found in the kernel."""
    found = patterns(ctx.kernel, ctx.spec, ctx.definition)
    focus = "".join(f"Pattern fsr found in the original: {p}.\n" for p in found)
    facts = ctx.profile
    focus += (f"The user profiled the original and asks you to address this finding first: {ctx.focus}\n"
              if ctx.focus else "")
    if facts is None:
        return focus
    which = "the fastest version so far" if facts.who == "candidate" else "the original"
    lines = [f"Nsight Compute on {which} at the bench size ({facts.kernel_ms:.4g} ms under the profiler):"]
    return focus + "\n".join(lines + [f"- {line}" for line in facts.describe()]) + "\n"


def history_section(ctx: RoundContext, show: tuple[str, ...] = ("fastest", "slowest")) -> str:
    """Earlier candidates with their measured times; the fastest and the slowest verified ones
    shown side by side so the model can contrast what helped and what hurt."""
    if not ctx.history and not ctx.screened_out:
        return "No candidates have been tried yet."
    lines = ["## Candidates so far (speedup over the original; higher is better)", ""]
    lines += [f"- {note[:200]}: screened slower than the original on this GPU at the bench size; dropped "
              "before verification" for note in ctx.screened_out]
    for t in ctx.history[-MAX_HISTORY_LINES:]:
        what = (t.proposal.note or t.proposal.generator)[:200]
        if t.verified and t.result.speedup:
            lines.append(f"- {what}: verified, {t.result.speedup:.2f}x ({t.time_ms:.4g} ms)")
        else:
            lines.append(f"- {what}: {t.result.status.replace('_', ' ')}: {_first_line(t.result.message)}")
    verified = [t for t in ctx.history if t.verified and t.result.speedup]
    if verified:
        fastest = max(verified, key=lambda t: t.result.speedup or 0)
        slowest = min(verified, key=lambda t: t.result.speedup or 0)
        if "fastest" in show:
            lines += ["", f"### Fastest so far: {fastest.result.speedup:.2f}x", *_shown(fastest.proposal.source)]
        if slowest is not fastest and "slowest" in show:
            lines += ["", f"### Slowest verified: {slowest.result.speedup:.2f}x", *_shown(slowest.proposal.source)]
    return "\n".join(lines)


def _shown(source: str) -> list[str]:
    size = len(source.encode())
    if size > MAX_SHOWN_SOURCE:
        return [f"(its code, {size // 1024} KB, is too long to show)"]
    return ["```cuda", source.strip(), "```"]


def error_text(result: EvalResult) -> str:
    """What a generator needs to fix a failure: the compiler's errors (trimmed to the lines that
    matter), or which size, output and elements were wrong, or why it was rejected."""
    if result.status == "compile_error":
        return _trim_compiler(result.message)
    if result.mismatch is not None:
        m = result.mismatch
        return (f"check '{m.check}' failed at size {m.size}: output {m.buffer} has {m.bad} of {m.total} elements "
                f"wrong" + (f" ({m.unwritten} never written)" if m.unwritten else "") +
                (f", largest error {m.max_abs_err:.3g}" if m.max_abs_err is not None else "") +
                f"; first wrong element [{m.first_index}]: got {m.got}, expected {m.expected}")
    return result.message


def _trim_compiler(log: str) -> str:
    lines = log.splitlines()
    keep: list[str] = []
    for i, line in enumerate(lines):
        if _DIAGNOSTIC.search(line):
            keep.extend(lines[i: i + 3])  # the message, the source line, the caret
    keep = keep or lines
    return "\n".join(line[:MAX_ERROR_LINE_CHARS] for line in keep[:MAX_ERROR_LINES])


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:200] if text.strip() else ""
