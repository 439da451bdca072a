"""Findings from a line profile: each names a line of the kernel, what ncu measured there and,
where one of ncu's rules estimates it, what fixing it could gain. Plain data, for the editor's
diagnostics and hover, the CLI and a model's prompt alike."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Literal

from ..evaluator.profile.ncu_source import LineCounters, LineReport, Rule
from ..evaluator.profile.profile import ProfileFacts

Kind = Literal["hot", "uncoalesced", "bank_conflicts", "divergence", "local_memory"]

HOT_SHARE = 0.10  # of the kernel's stall samples: a line at least this hot is a finding
HOT_LINES = 3
# A line whose samples are mostly these is busy, not stuck: nothing for its author to fix there.
NOT_A_DEFECT = frozenset({"not_selected", "no_inst", "drain", "dispatch", "selected"})
EXCESS_SHARE = 0.05  # excessive sectors or wavefronts, of the line's own: less is noise
STALL_WORDS = {
    "long_sb": "waiting for global or local memory (long scoreboard)",
    "short_sb": "waiting for shared memory or a special function (short scoreboard)",
    "barrier": "waiting at a barrier (__syncthreads)",
    "mio": "the shared-memory and special-function queue is full (MIO throttle)",
    "lg": "the global/local memory queue is full (LG throttle)",
    "wait": "a fixed-latency dependency (wait)",
    "math": "the math pipe is busy (math throttle)",
    "not_selected": "eligible but another warp was picked (not selected)",
    "no_inst": "no instruction fetched yet (no instruction)",
    "drain": "draining memory stores at exit (drain)",
    "branch_resolving": "resolving a branch target (branch resolving)",
    "dispatch": "dispatch stall",
    "membar": "waiting at a memory barrier (membar)",
    "imc": "a constant-cache miss (IMC)",
    "tex": "the texture pipe is full (tex throttle)",
    "sleep": "sleeping (nanosleep)",
    "misc": "miscellaneous",
}
# ncu rules that estimate the gain of fixing one kind of finding
RULES_FOR = {"uncoalesced": ("UncoalescedGlobalAccess", "MemoryCacheAccessPattern"),
             "bank_conflicts": ("UncoalescedSharedAccess", "SharedMemoryConflicts"),
             "divergence": ("ThreadDivergence", "BranchDivergence")}


@dataclass
class Finding:
    kind: Kind
    line: int  # 1-based, in the kernel's file
    message: str  # one line, with its numbers
    metrics: dict[str, float | int | str] = field(default_factory=dict)  # for hover and --json
    gain_pct: float | None = None  # ncu's estimate of the kernel time saved, when it gives one
    rule: str = ""

    @property
    def severe(self) -> bool:
        """A defect worth a warning (wasted memory traffic), not just where time goes."""
        return self.kind in ("uncoalesced", "bank_conflicts", "local_memory")


@dataclass
class KernelProfile:
    """A kernel's profile, read: the summary, the findings by line, and every line's counters."""

    kernel: str
    summary: str
    findings: list[Finding]
    lines: dict[int, LineCounters]  # line number -> counters (the kernel's own file only)
    facts: ProfileFacts | None
    rules: list[Rule]
    seconds: float = 0.0
    size: str = ""  # the bench size profiled ("n=1048576")
    gpu: str = ""
    samples: int = 0  # the kernel's warp-state samples, wherever they fell
    outside_samples: int = 0  # ... in code not of the file: inlined from headers, CUDA's or the user's

    @property
    def outside(self) -> str:
        """The one line said of the samples outside the file ('' when there are none): that code
        is not the user's to edit here, so its lines are not listed."""
        if not self.outside_samples:
            return ""
        share = 100 * self.outside_samples / max(self.samples, 1)
        return f"{share:.0f}% of the samples in code outside this file" if share >= 0.5 else \
            "under 1% of the samples in code outside this file"


def read_profile(kernel: str, facts: ProfileFacts | None, report: LineReport, gpu: str = "",
                 document: str | None = None, line_of: Callable[[int], int | None] | None = None) -> KernelProfile:
    """The findings of a line report. `document`: the file as the user has it (each listed line's
    text is taken from it: ncu could not read the compiled copy); `line_of`: the document's line
    of a compiled line, None for one that is not the document's (a spec block placed for the
    run), when the compiled text was not the document itself."""
    size = report.size
    own, outside = _own_lines(report, document, line_of)
    samples = sum(c.samples for c in report.lines)
    total = samples or 1
    findings: list[Finding] = []
    hot = sorted((c for c in own.values() if c.samples >= HOT_SHARE * total and _stuck(c)),
                 key=lambda c: -c.samples)[:HOT_LINES]
    findings += [_hot(c, total) for c in hot]
    for c in own.values():
        findings += [f for f in (_uncoalesced(c, report.rules), _conflicts(c, report.rules),
                                 _divergence(c, report.rules), _local(c)) if f is not None]
    findings.sort(key=lambda f: (f.line, f.kind))
    return KernelProfile(kernel, summary(kernel, facts, report.rules, size, gpu), findings, own, facts,
                         report.rules, report.seconds, size, gpu, samples, outside)


def _stuck(c: LineCounters) -> bool:
    top = max(c.stalls.items(), key=lambda kv: kv[1], default=("", 0))[0]
    return bool(top) and top not in NOT_A_DEFECT


def _own_lines(report: LineReport, document: str | None,
               line_of: Callable[[int], int | None] | None) -> tuple[dict[int, LineCounters], int]:
    """The lines of the file the kernel was compiled from, numbered and worded as the document
    has them, and the samples of every other line (an inlined header's, a placed spec's)."""
    texts = document.splitlines() if document is not None else None
    own: dict[int, LineCounters] = {}
    outside = 0
    for c in report.lines:
        number = c.line if line_of is None else line_of(c.line)
        if c.file != report.main_file or number is None or (texts is not None and not 0 < number <= len(texts)):
            outside += c.samples
            continue
        text = texts[number - 1].strip() if texts is not None else c.text
        counted = dataclasses.replace(c, line=number, text=text)
        own[number] = _added(own[number], counted) if number in own else counted
    return own, outside


def _added(a: LineCounters, b: LineCounters) -> LineCounters:
    """One line's counters from two sections of the export (one per function ncu lists)."""
    stalls = {r: a.stalls.get(r, 0) + b.stalls.get(r, 0) for r in {**a.stalls, **b.stalls}}
    sums = {f.name: getattr(a, f.name) + getattr(b, f.name) for f in dataclasses.fields(LineCounters)
            if f.type in ("int", int) and f.name not in ("line", "shared_conflict_ways")}
    return dataclasses.replace(a, stalls=stalls, shared_conflict_ways=max(a.shared_conflict_ways, b.shared_conflict_ways),
                               spaces=tuple(dict.fromkeys(a.spaces + b.spaces)), **sums)


def _gain(kind: str, rules: list[Rule]) -> tuple[float | None, str]:
    for name in RULES_FOR.get(kind, ()):
        for r in rules:
            if r.name == name and r.speedup_pct is not None:
                return r.speedup_pct, r.name
    return None, ""


def _with_gain(message: str, gain: float | None) -> str:
    return f"{message}; ncu estimates up to {gain:.0f}% of the kernel's time could be saved" if gain else message


def _hot(c: LineCounters, total: int) -> Finding:
    share = c.samples / total
    reasons = sorted(c.stalls.items(), key=lambda kv: -kv[1])[:2]
    why = "; ".join(f"{100 * n / max(c.samples, 1):.0f}% {STALL_WORDS.get(r, r)}" for r, n in reasons)
    metrics: dict[str, float | int | str] = {"stall samples": c.samples, "share of the kernel's samples": f"{100 * share:.0f}%",
                                             **{f"stall: {r}": n for r, n in sorted(c.stalls.items(), key=lambda kv: -kv[1])}}
    return Finding("hot", c.line, f"{100 * share:.0f}% of the kernel's warp stall samples are at this line: {why}",
                   metrics)


def _uncoalesced(c: LineCounters, rules: list[Rule]) -> Finding | None:
    if c.global_sectors_excessive <= 0 or c.global_sectors_excessive < EXCESS_SHARE * max(c.global_sectors, 1):
        return None
    ideal = max(c.global_sectors_ideal, 1)
    gain, rule = _gain("uncoalesced", rules)
    message = (f"uncoalesced global access: {c.global_sectors:,} L2 sectors where {c.global_sectors_ideal:,} would do "
               f"({c.global_sectors / ideal:.1f}x; {c.global_sectors_excessive:,} excessive)")
    return Finding("uncoalesced", c.line, _with_gain(message, gain),
                   {"global sectors": c.global_sectors, "ideal sectors": c.global_sectors_ideal,
                    "excessive sectors": c.global_sectors_excessive}, gain, rule)


def _conflicts(c: LineCounters, rules: list[Rule]) -> Finding | None:
    if c.shared_wavefronts_excessive <= 0 or c.shared_wavefronts_excessive < EXCESS_SHARE * max(c.shared_wavefronts, 1):
        return None
    gain, rule = _gain("bank_conflicts", rules)
    ways = f"up to {c.shared_conflict_ways}-way " if c.shared_conflict_ways > 1 else ""
    message = (f"shared-memory bank conflicts: {ways}conflicts, {c.shared_wavefronts_excessive:,} excessive wavefronts "
               f"of {c.shared_wavefronts:,}")
    return Finding("bank_conflicts", c.line, _with_gain(message, gain),
                   {"shared wavefronts": c.shared_wavefronts, "ideal wavefronts": c.shared_wavefronts_ideal,
                    "excessive wavefronts": c.shared_wavefronts_excessive, "worst n-way": c.shared_conflict_ways},
                   gain, rule)


def _divergence(c: LineCounters, rules: list[Rule]) -> Finding | None:
    if c.divergent_branches <= 0:
        return None
    gain, rule = _gain("divergence", rules)
    message = f"divergent branch: warps split here {c.divergent_branches:,} times, running both sides one after the other"
    return Finding("divergence", c.line, _with_gain(message, gain), {"divergent branches": c.divergent_branches}, gain, rule)


def _local(c: LineCounters) -> Finding | None:
    if "Local" not in c.spaces:
        return None
    return Finding("local_memory", c.line, "local-memory access here: spilled registers or an array indexed at run time",
                   {"address spaces": ", ".join(c.spaces)})


def summary(kernel: str, facts: ProfileFacts | None, rules: list[Rule], size: str = "", gpu: str = "") -> str:
    """One line for the kernel's name: time, bound, occupancy, throughputs, the limiting unit."""
    where = f" at {size}" if size else ""
    on = f" on {gpu}" if gpu else ""
    if facts is None:
        return f"{kernel}{where}{on}: no summary metrics"
    bottleneck = next((r.description for r in rules if r.name == "SOLBottleneck"), "")
    limit = f"; ncu: {bottleneck.split('. ')[0].rstrip('.')}" if bottleneck else ""
    return (f"{kernel}{where}{on}: {facts.kernel_ms:.4g} ms, {facts.bound}-bound at {facts.bound_pct:.0f}% of that peak "
            f"(DRAM {facts.dram_pct:.0f}%, L2 {facts.l2_pct:.0f}%, SM {facts.sm_pct:.0f}% of peak), achieved occupancy "
            f"{facts.occupancy_pct:.0f}%{limit}")
