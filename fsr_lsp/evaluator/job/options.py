"""What an evaluation is asked to do: the build's flags and the compiler, seeds, timing and
defences, a screen or a timing only, the run's own inputs; as a job's settings and as the
compiler's options."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ...specs.build_flags import merged
from ..compile.compiler import CompileOptions
from ..compile.limits import CompileLimits
from ..records import Defences, TimingConfig

__all__ = ["SCREEN_TIMING", "EvalOptions"]


# Enough to rank configurations of one kernel, a tenth of a full timing's cost; the few that
# rank first are then verified and timed in full.
SCREEN_TIMING = TimingConfig(warmup=1, min_reps=5, max_reps=15, target_seconds=0.01)


@dataclass(frozen=True)
class EvalOptions:
    flags: tuple[str, ...] = ()
    candidate_flags: tuple[str, ...] = ()  # added for the candidate only (e.g. -use_fast_math)
    include_dirs: tuple[str, ...] = ()
    compiler: str = "auto"
    nvcc: str | None = None
    cache_dir: str | None = None
    seeds_per_size: int = 3
    base_seed: int | None = None  # None: fresh seeds every evaluation
    # the bench size's inputs and the timed runs', the same for every job that passes it (a search's:
    # the original's runs there are made once); None: drawn like the others
    bench_seed: int | None = None
    timing: TimingConfig = field(default_factory=TimingConfig)
    defences: Defences = field(default_factory=Defences)
    skip_unchanged: bool = True  # the original's own code as a candidate is "unchanged", not timed
    screen: bool = False  # a tuner's quick look (see SCREEN_TIMING); its results are never verdicts
    limits: CompileLimits = field(default_factory=CompileLimits)  # on compiling a candidate (untrusted text)
    # Time the two at the bench size and judge nothing: is the user's edit slower than the version
    # before it (performance on save)? Its result is "timed", never "verified".
    time_only: bool = False
    # A screen that times the candidate alone and compares nothing, for an original too slow to run
    # again for every configuration screened (a 275 ms matrix product): its result is "timed" and
    # screened; a wrong configuration is caught by the full verification every screened one gets.
    screen_alone: bool = False
    # (buffer, "OFFSET:PATH"): its bytes as a run of the user's program had them (fsr capture), checked
    # as one more input set at the bench size
    real_inputs: tuple[tuple[str, str], ...] = ()
    # the file's `__device__` variables the kernel writes: compiled as pointers, each pointed at a buffer
    device_variables: tuple[str, ...] = ()

    def job_settings(self) -> tuple[int, TimingConfig, Defences]:
        """Seeds per size, timing and defences of a job: the user's, or a screening job's."""
        if not self.screen:
            return self.seeds_per_size, self.timing, self.defences
        defences = dataclasses.replace(self.defences, chained_launches=1, unmapped_pages=False)
        return 1, SCREEN_TIMING, defences

    def compile_options(self, arch: str, compiler: str | None = None, candidate: bool = False) -> CompileOptions:
        flags = merged(self.flags, self.candidate_flags) if candidate else self.flags  # adds, never replaces
        return CompileOptions(arch=arch, flags=flags, include_dirs=self.include_dirs,
                              compiler=compiler or self.compiler, nvcc=self.nvcc, cache_dir=self.cache_dir,  # type: ignore[arg-type]
                              limits=self.limits if candidate else None, redirect=self.device_variables)
