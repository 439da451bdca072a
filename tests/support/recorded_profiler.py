"""The profiler stand-in (FSR_LSP_PROFILER): what Nsight Compute exported, returned for the
kernel asked as the GPU worker would return it.

Two recordings: ncu 2025.3 on an H200 for the kernels of tests/data/ncu/profile_kernels.cu,
built by nvcc straight from that file (bench/record_ncu.sh), and ncu 2025.3.1 on an H100 for
`probe` of tests/data/ncu/inlined_code.cu, built and profiled by the evaluator itself
(bench/record_ncu_inlined.py): its own lines come numbered from `kernel.cu`, a scratch copy ncu
could no longer open ("<Unable to open source file>"), and code inlined from cuda_fp16.hpp,
sm_32_intrinsics.hpp and the user's helper.cuh in sections of their own. The first recording is
handed back in the second's form: the kernel's file is the scratch `kernel.cu` ncu cannot read,
its lines numbered as in the text the evaluator was asked to profile (a drafted spec placed
above the kernel moves them down), as the real profiler does."""

from __future__ import annotations

import csv
import dataclasses
import difflib
import io
from pathlib import Path

from fsr_lsp.evaluator.profile.ncu_source import LineCounters, LineReport, parse_rules, parse_source_page
from fsr_lsp.evaluator.profile.profile import Profiled, parse_ncu_csv

DATA = Path(__file__).parent.parent / "data" / "ncu"
KERNELS = Path(DATA / "profile_kernels.cu")
INLINED = Path(DATA / "inlined_code.cu")  # kernel `probe`, recorded as the evaluator builds it
SCRATCH = "/tmp/fsr-nvcc-1-recorded/kernel.cu"  # where the evaluator's nvcc compiled the kernel


def _own(kernel: str, name: str) -> Path:
    """A recording of `kernel` alone where there is one, else the file shared by the kernels."""
    path = DATA / name.replace(".csv", f"_{kernel}.csv")
    return path if path.exists() else DATA / name


def raw_page(kernel: str) -> str:
    """The raw page's header, units and the one row of `kernel`."""
    rows = list(csv.reader(_own(kernel, "raw.csv").read_text().splitlines()))
    at = rows[0].index("Kernel Name")
    keep = rows[:2] + [r for r in rows[2:] if r[at].startswith(f"{kernel}(")]
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(keep)
    return out.getvalue()


def recorded(kernel: str, profiled_text: str | None = None) -> Profiled:
    """The recording of `kernel`; with `profiled_text` (the text the evaluator was asked to
    profile), its lines as the evaluator's build shows them to ncu."""
    source = DATA / f"source_both_{kernel}.csv"
    if not source.exists():
        return Profiled(None, f"not profiled: nothing recorded for {kernel}")
    lines = parse_source_page(source.read_text())
    if profiled_text is not None and lines and lines[0].file.endswith(KERNELS.name):
        lines = as_built_by_the_evaluator(lines, KERNELS.read_text(), profiled_text)
    report = LineReport(lines, parse_rules(_own(kernel, "details.csv").read_text(), kernel),
                        seconds=3.4, size="n=4194304")
    return Profiled(parse_ncu_csv(raw_page(kernel), "original"), lines=report)


def as_built_by_the_evaluator(lines: list[LineCounters], recorded_text: str, profiled_text: str) -> list[LineCounters]:
    """The kernel file's lines renamed to the scratch `kernel.cu`, without text, renumbered from
    the recorded file to the profiled text; other files' lines as they were."""
    main = lines[0].file
    numbers: dict[int, int] = {}
    matcher = difflib.SequenceMatcher(None, recorded_text.splitlines(), profiled_text.splitlines(), autojunk=False)
    for block in matcher.get_matching_blocks():
        numbers.update({block.a + k + 1: block.b + k + 1 for k in range(block.size)})
    return [dataclasses.replace(c, file=SCRATCH, text="", line=numbers[c.line]) if c.file == main else c
            for c in lines if c.file != main or c.line in numbers]


def profile(request) -> Profiled:
    return recorded(request.kernel, request.source)
