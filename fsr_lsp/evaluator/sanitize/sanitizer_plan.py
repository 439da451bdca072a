"""Which sizes each compute-sanitizer tool runs at, chosen by what it will cost.

The sanitizers' job is bounds, races and initialisation; the test and edge sizes exist to
exercise tails and odd shapes, so they carry that job and always run (unless one alone would
take minutes). The bench size runs only when it is cheap: a tool's cost is the kernel's own
time at that size, measured natively in the verification run, times what the tool multiplies
it by. Measured on an H100 (bench/verify_cost.py --calibrate, docs/benchmarks.md): memcheck
stays within ~1000x of the native time; racecheck tracks every shared-memory access, about
100 ns each, which is tens of thousands of times the native time of a kernel that lives in
shared memory (a 32x32-tiled sgemm at 2048^3: over 40 s). A kernel that uses no shared memory
has nothing racecheck looks at: it is not run. Every decision comes with its reason, for
`fsr eval` to show.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..records import EvalJob, KernelBinary, SizePlan

SLOWDOWN = {"memcheck": 1_000.0, "racecheck": 40_000.0, "initcheck": 1_000.0, "synccheck": 1_000.0}
BENCH_BUDGET_S = 3.0  # the bench size runs under a tool only if predicted within this
SIZE_LIMIT_S = 60.0  # a test size predicted beyond this is left out (said so), as a hung kernel would be
UNMEASURED_MS = 1.0  # a size whose native time was not measured counts as this


@dataclass
class ToolPlan:
    tool: str
    sizes: list[SizePlan] = field(default_factory=list)
    left_out: list[tuple[str, str]] = field(default_factory=list)  # (size label, why)
    skipped: str = ""  # why the tool does not run at all ('' when it runs)

    def describe(self) -> str:
        """'at n=1, n=1000, n=65537; n=16777216 left out: predicted 52 s (1.3 ms x 40000)'."""
        if self.skipped:
            return f"not run: {self.skipped}"
        text = "at " + ", ".join(p.label for p in self.sizes) if self.sizes else "at no size"
        if self.left_out:
            text += "; " + "; ".join(f"{label} left out: {why}" for label, why in self.left_out)
        return text


def uses_shared_memory(job: EvalJob, static_shared_bytes: int, who: str = "candidate") -> bool:
    """Static shared memory (ptxas) or dynamic shared memory at some size's launch."""
    return static_shared_bytes > 0 or any((p.candidate if who == "candidate" else p.original).smem > 0
                                          for p in job.sizes)


PRINTS = ("the kernel calls printf, which the tool handles call by call at a cost the native time does not "
          "show (a check printing per element on random inputs ran past the proof's limit); the test sizes carry "
          "the check")


def calls_printf(binary: KernelBinary) -> bool:
    """Device printf compiles to a call of `vprintf`, which the cubin names."""
    return b"vprintf" in binary.cubin


def plan_tool(tool: str, job: EvalJob, native_ms: dict[str, float], uses_shared: bool,
              prints: bool = False) -> ToolPlan:
    """The sizes `tool` runs at, with the reason for each left out."""
    plan = ToolPlan(tool)
    if tool == "racecheck" and not uses_shared:
        plan.skipped = "the kernel uses no shared memory (racecheck checks shared memory only)"
        return plan
    factor = SLOWDOWN.get(tool, 1_000.0)
    for p in job.sizes:
        ms = native_ms.get(p.label, UNMEASURED_MS)
        predicted = ms * factor / 1000.0
        why = f"predicted {predicted:.0f} s ({ms:.3g} ms native x {factor:g} under {tool})"
        if p.role == "bench" and p.buffer_bytes > job.defences.layered_max_bytes:
            plan.left_out.append((p.label, f"over {job.defences.layered_max_bytes >> 20} MiB of buffers"))
        elif p.role == "bench" and prints:
            plan.left_out.append((p.label, PRINTS))
        elif p.role == "bench" and predicted > BENCH_BUDGET_S:
            plan.left_out.append((p.label, why + "; the test sizes carry the check"))
        elif predicted > SIZE_LIMIT_S:
            plan.left_out.append((p.label, why))
        else:
            plan.sizes.append(p)
    return plan
