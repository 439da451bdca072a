"""The evaluator's interface: a job in, a result out, both plain data.

A job carries compiled cubins and concrete launch plans, nothing that needs the source tree
or an editor, so it can run in a local worker process today and on a remote GPU tomorrow.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..kernels.c_types import ITEMSIZE
from ..specs.model import Init

Status = Literal[
    "verified",  # correct at every size and seed, timed (a candidate), or self-consistent (original)
    "wrong",  # ran, but its outputs or its behaviour differ from the original's
    "compile_error",
    "rejected",  # refused before compiling: renamed, other parameters, host code, changed spec
    "unchanged",  # the original's own code (modulo whitespace and comments) and launch: not timed
    "crashed",  # CUDA error or dead worker
    "timeout",  # hung: the worker was killed
    "oom",
    "spec_error",  # the original kernel or its spec cannot serve as the oracle
    "unavailable",  # no GPU, no pycuda, no torch
    "cancelled",
    "timed",  # time_only: both timed at the bench size, outputs not judged (a user's own edit, never a candidate's verdict)
]
CheckStatus = Literal["pass", "fail", "skip"]


@dataclass
class Resources:
    """Per-kernel resource use, from ptxas -v or the loaded function's attributes."""

    registers: int = 0
    shared_bytes: int = 0  # static shared memory
    stack_bytes: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    local_bytes: int = 0
    max_threads_per_block: int = 0


@dataclass
class KernelBinary:
    cubin: bytes
    entry: str  # the symbol to load (mangled or lowered name)
    compiler: str  # "nvrtc" or "nvcc"
    arch: str
    flags: tuple[str, ...] = ()
    cooperative: bool = False  # syncs its whole grid: launched with cuLaunchCooperativeKernel


@dataclass
class CompileResult:
    ok: bool
    binary: KernelBinary | None
    log: str  # the compiler's own text (errors, warnings), paths made relative
    seconds: float
    cached: bool = False
    compiler: str = ""
    resources: Resources | None = None
    limit: str = ""  # the limit that stopped the compiler (memory, cpu, output, wall); '' when none did


@dataclass
class LaunchPlan:
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    smem: int = 0




SLOW_MARK = "one launch of the"  # in a stage's text: the last launch was slow (gpu/runs.py, worker_client.py)


@dataclass(frozen=True)
class ConstantPlan:
    """A `__constant__` symbol the program sets at run time: filled per input set (job/constants.py)."""

    name: str
    dtype: str  # the element type its bytes are drawn as ("float32", "int32", ...)


@dataclass(frozen=True)
class TexturePlan:
    """A texture object at one size (specs.TextureArg with its sizes evaluated)."""

    dims: tuple[int, ...]  # texels: (W,), (W, H) or (W, H, D)
    texel: str  # the element type of one channel
    channels: int = 1
    linear: bool = False  # linear memory (tex1Dfetch), else a CUDA array
    address: str = "clamp"
    filter: str = "point"
    normalized: bool = False
    read: str = "element"

    @property
    def texels(self) -> int:
        n = 1
        for d in self.dims:
            n *= d
        return n


@dataclass
class ArgPlan:
    """One kernel argument at one size: a buffer to allocate, a scalar to pass, or a texture
    object (passed as its 64-bit handle, `value`, once the GPU session has made and filled it)."""

    name: str
    # struct: a by-value struct, its members after it; bytes: a value passed as a captured run passed
    # it (`source`: "OFFSET:PATH", OFFSET where the run placed it among the parameters), `links` in it
    kind: Literal["buffer", "scalar", "texture", "struct", "bytes"]
    dtype: str  # numpy-style element type
    lanes: int = 1
    length: int = 0  # in elements of the C type (a float4 counts once)
    direction: Literal["in", "out", "inout"] = "in"
    init: Init | None = None
    source: str = ""  # init captured(): "OFFSET:PATH" of the bytes a captured run had
    # bench_inputs = "captured": the spec's own draw, for a few elements drawn afresh over the run's
    # bytes at every input set and timed run (so no set repeats another: gpu/buffers.py `fresh_over`)
    fresh: Init | None = None
    texture: TexturePlan | None = None
    value: int | float | tuple[int | float, ...] | None = None  # a tuple: one per lane (`float4 c` by value)
    rtol: float = 0.0
    atol: float = 0.0
    tolerance: Literal["default", "spec"] = "default"  # "spec": the spec's own rtol/atol, compared as they say
    offset: int = 0  # elements of the buffer before the kernel's pointer (a spec's `in[-3 : n + 3]`)
    member: str = ""  # the struct parameter this is a member of (`A` for `A.elements`; gpu/packing.py)
    align: int = 0  # a scalar of several lanes passed by value (`float4 c`): its alignment
    free: bool = False  # a float scalar the spec gives as a number: callers may pass others (input_sets.py)
    # memory holding pointers, from a capture (job/linked_memory.py): `hidden` is memory the kernel
    # reaches through another buffer's pointers, no argument of its own; `links` are this buffer's
    # pointers as (byte in this buffer, the buffer pointed into, byte in that buffer)
    hidden: bool = False
    links: tuple[tuple[int, str, int], ...] = ()
    pointers: bool = False  # bytes that may hold pointers (`in[N bytes]`): compared with them as (buffer, byte)
    # a pointer into buffer `of[0]` (a spec's `end(X)`, `same(X)`), at its "end" or "start" (the kernel's
    # pointer to it): known once that buffer has its address
    at: tuple[str, str] | None = None
    # a hidden buffer standing for the file's `__device__` variable (kernels/device_variables.py): the
    # module's pointer of this name is pointed at it before each launch
    symbol: str = ""

    @property
    def numel(self) -> int:
        return self.length * self.lanes

    @property
    def nbytes(self) -> int:
        return self.numel * ITEMSIZE[self.dtype]


@dataclass
class SizePlan:
    label: str  # "n=1000"
    role: Literal["test", "edge", "bench"]  # edge: added by fsr so that a size is not a block multiple
    sizes: dict[str, int]
    args: list[ArgPlan]
    original: LaunchPlan
    candidate: LaunchPlan

    @property
    def buffer_bytes(self) -> int:
        return sum(a.nbytes for a in self.args if a.kind == "buffer")


KEEP_TIMED_MS = 20.0  # an original this slow a run has its timed runs kept for later jobs (oracle_cache.py)


@dataclass
class TimingConfig:
    warmup: int = 3
    min_reps: int = 20
    max_reps: int = 100  # medians of 100 runs repeat within 0.3% (docs/benchmarks.md)
    target_seconds: float = 0.1  # of kernel time per contender, after warm-up
    flush_l2: bool = True
    flush_factor: int = 2  # the flush reads this many times the L2's size (1-4)
    confidence: float = 0.95  # of the speedup's bootstrap interval
    hold_cycles: int = 100_000  # GPU spin before each timed launch, so host latency stays out of the time
    # "kernel": each run's time from the kernel's own GPU stamps (CUPTI; gpu/kernel_clock.py), events where
    # that cannot be had; "events": CUDA events around each launch
    clock: Literal["kernel", "events"] = "kernel"
    # a timing stops before max_reps (after min_reps) once its speedup's 95% interval, or with one contender its
    # median's, lies within this share either side (gpu/timing_stats.py); 0: always max_reps
    precision: float = 0.005
    # the speedup a win's whole interval must clear, where the caller decides only that (the search: 1 +
    # its min_gain): a candidate whose interval lies wholly below it stops at LOSER_SLACK times the
    # precision (timing_stats.py); 0: every candidate is timed to the precision
    win_above: float = 0.0
    # the candidate's outputs compared bit for bit first, counted on the device with no wait a repetition;
    # at the first difference the timing runs again under the tolerance (gpu/timing.py); False: the tolerance throughout
    exact_first: bool = True


@dataclass
class Defences:
    """Which of the checks beyond the single-launch comparison a job runs (all by default;
    benchmarks switch them to measure their cost)."""

    chained_launches: int = 3  # launches back to back on the same buffers, compared after each
    poison_shared: bool = True  # fill every SM's shared memory with NaN/0xFF bytes before each launch
    guard_bands: bool = True  # canary bands around every buffer, checked after every launch
    unmapped_pages: bool = True  # each buffer once against unmapped address space, at each size
    # The per-buffer layers (unmapped pages, the sanitizers) run at sizes whose buffers hold at
    # most this much; larger (bench) sizes are left to the guard bands and the timed-run checks.
    layered_max_bytes: int = 64 << 20
    input_ranges: bool = True  # the sets that probe float inputs' range (gpu/input_sets.py)


@dataclass
class EvalJob:
    kernel: str
    original: KernelBinary
    candidate: KernelBinary | None  # None: check and time the original alone
    sizes: list[SizePlan]
    seeds_per_size: int = 3
    base_seed: int = 0
    # the bench size's input set and the timed runs' inputs, where a search keeps them for all its jobs:
    # the original's runs there are then made once (gpu/oracle_cache.py); None: drawn from base_seed
    bench_seed: int | None = None
    # base_seed chosen by the caller (a search's rounds share one): later jobs meet these input sets
    # again, so the original's runs at every size are kept, however quick (gpu/oracle_runs.py)
    seeds_shared: bool = False
    ref: dict[str, str] = field(default_factory=dict)
    timing: TimingConfig = field(default_factory=TimingConfig)
    defences: Defences = field(default_factory=Defences)
    # sanitize: run one kernel once per size, exact allocations; time: time both at the bench size only
    # time: both timed, nothing judged (a user's edit); alone: the candidate timed alone, nothing
    # judged (a screen where the original is too slow to run again for every configuration)
    mode: Literal["full", "sanitize", "time", "alone"] = "full"
    sanitize_original: bool = False  # in sanitize mode: run the original instead of the candidate
    screen: bool = False  # a tuner's quick look: the bench size only, one input set, few repetitions
    real_inputs: dict[str, str] = field(default_factory=dict)  # buffer -> "OFFSET:PATH" of captured bytes (bench size)
    # The original with float promoted to double: the reference accuracy is measured against
    # (gpu/accuracy.py); None with `wide_why` saying why there is none.
    wide: KernelBinary | None = None
    wide_why: str = ""
    range_skip: list[str] = field(default_factory=list)  # range sets left out: the original faulted on them
    constants: list[ConstantPlan] = field(default_factory=list)  # `__constant__` data set by the host at run time


@dataclass
class GpuInfo:
    index: int
    name: str
    compute_capability: str  # "9.0"
    sm_count: int
    l2_bytes: int
    memory_bytes: int
    clock_khz: int = 0
    driver: str = ""
    bandwidth_gbps: float = 0.0  # measured: a large device-to-device copy, bytes read + written
    smem_per_block_bytes: int = 0  # the opt-in maximum
    smem_per_sm_bytes: int = 0
    max_threads_per_sm: int = 0  # resident threads an SM holds (2048 on sm_80 and sm_90)
    uuid: str = ""  # the GPU itself (GPU-xxxxxxxx-...), so records from a cluster say where they ran
    host: str = ""

    @property
    def arch(self) -> str:
        """nvcc -arch for this GPU; Hopper and newer get their arch-specific `a` targets."""
        major, minor = self.compute_capability.split(".")
        return f"sm_{major}{minor}" + ("a" if int(major) >= 9 else "")


@dataclass
class Check:
    name: str
    status: CheckStatus
    detail: str = ""
    argument: str = ""  # the buffer or argument it is about, where one is to blame


@dataclass
class Mismatch:
    """Where a candidate's output first differed: enough to tell a generator what to fix."""

    check: str
    size: str
    seed: int
    buffer: str
    bad: int
    total: int
    max_abs_err: float | None
    first_index: int
    got: str
    expected: str
    unwritten: int = 0  # elements still holding the poison value
    scaled: bool = False  # max_abs_err is relative to the output's scale, against the double-precision run
    inputs: str = ""  # the input set that decided, where not the spec's own ("inputs scaled x100")

    def describe(self) -> str:
        err = "" if self.max_abs_err is None else \
            f", largest error {self.max_abs_err:.3g} of the output's scale" if self.scaled else \
            f", largest error {self.max_abs_err:.3g}"
        unwritten = f" ({self.unwritten} never written)" if self.unwritten else ""
        where = f"{self.inputs}, seed {self.seed}" if self.inputs else f"seed {self.seed}"
        return (f"{self.buffer}: {self.bad} of {self.total} elements wrong{unwritten} at {self.size} "
                f"({where}){err}; " + (
                    f"worst at [{self.first_index}]: got {self.got}, in double precision {self.expected}" if self.scaled
                    else f"first at [{self.first_index}]: got {self.got}, expected {self.expected}"))


@dataclass
class TimingStats:
    median_ms: float
    min_ms: float
    max_ms: float
    p25_ms: float
    p75_ms: float
    reps: int

    @property
    def spread_pct(self) -> float:
        """Inter-quartile range relative to the median, in percent."""
        return 100.0 * (self.p75_ms - self.p25_ms) / self.median_ms if self.median_ms > 0 else 0.0


@dataclass
class EvalResult:
    kernel: str
    status: Status
    message: str  # one line: why, or how fast
    checks: list[Check] = field(default_factory=list)
    mismatch: Mismatch | None = None
    original_time: TimingStats | None = None
    candidate_time: TimingStats | None = None
    ref_time: TimingStats | None = None
    speedup: float | None = None  # original / candidate
    speedup_ci: tuple[float, float] | None = None  # bootstrap interval of the speedup, from the run itself
    speedup_vs_ref: float | None = None  # ref / candidate (or ref / original without a candidate)
    clock: str = ""  # what timed the runs: "kernel" (CUPTI's stamps), else "events" and why (gpu/kernel_clock.py)
    bench_size: str = ""
    sizes_checked: list[str] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    compile: dict[str, CompileResult] = field(default_factory=dict)
    resources: dict[str, Resources] = field(default_factory=dict)  # "original"/"candidate", from the loaded cubin
    gpu: GpuInfo | None = None
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    phase_seconds: dict[str, float] = field(default_factory=dict)  # worker time per phase: load, verify, ...
    native_ms: dict[str, float] = field(default_factory=dict)  # per size label: one launch of the kernel checked
    restart_worker: bool = False  # set by the worker when its CUDA context can no longer be trusted
    reference_failed: str = ""  # the double-precision run of the original failed: run the job again without it
    range_failed: str = ""  # the original faulted on this range set: run the job again without it
    range_sets: list[str] = field(default_factory=list)  # the range sets the candidate was judged on
    confirmed: bool = False  # passed the sanitizers too (in a search: the leaders' check, with more seeds)
    screened: bool = False  # from a screening job: checked at the bench size only, never a verdict

    @property
    def verified(self) -> bool:
        """A full verification passed. A screening result never counts: it saw one size."""
        return self.status == "verified" and not self.screened

    @property
    def passed_screen(self) -> bool:
        return self.status == "verified" and self.screened

    def is_win(self, min_gain: float) -> bool:
        """Faster beyond doubt: the whole interval of the speedup lies above 1 + min_gain."""
        if not self.verified or self.speedup is None:
            return False
        low = self.speedup_ci[0] if self.speedup_ci else self.speedup / (1 + self.noise_pct / 100)
        return low > 1.0 + min_gain

    @property
    def noise_pct(self) -> float:
        """The larger of the two spreads: a speedup inside it is not a win."""
        spreads = [t.spread_pct for t in (self.original_time, self.candidate_time) if t is not None]
        return max(spreads, default=0.0)
