"""The profiler stand-in (FSR_LSP_PROFILER): what ncu 2025.3 exported for the kernels of
tests/data/ncu/profile_kernels.cu on an H200 (bench/record_ncu.sh), returned for the kernel
asked, as the GPU worker would return it."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from fsr_lsp.evaluator.ncu_source import LineReport, parse_rules, parse_source_page
from fsr_lsp.evaluator.profile import Profiled, parse_ncu_csv

DATA = Path(__file__).parent / "data" / "ncu"
KERNELS = Path(DATA / "profile_kernels.cu")


def raw_page(kernel: str) -> str:
    """The raw page's header, units and the one row of `kernel`."""
    rows = list(csv.reader((DATA / "raw.csv").read_text().splitlines()))
    at = rows[0].index("Kernel Name")
    keep = rows[:2] + [r for r in rows[2:] if r[at].startswith(f"{kernel}(")]
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(keep)
    return out.getvalue()


def recorded(kernel: str) -> Profiled:
    source = DATA / f"source_both_{kernel}.csv"
    if not source.exists():
        return Profiled(None, f"not profiled: nothing recorded for {kernel}")
    report = LineReport(parse_source_page(source.read_text()), parse_rules((DATA / "details.csv").read_text(), kernel),
                        seconds=3.4, size="n=4194304")
    return Profiled(parse_ncu_csv(raw_page(kernel), "original"), lines=report)


def profile(request) -> Profiled:
    return recorded(request.kernel)
