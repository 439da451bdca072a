"""On a GPU host: how the evaluator's own build of a kernel looks to Nsight Compute. Profiles
probe() of tests/data/ncu/inlined_code.cu (code inlined from cuda_fp16.hpp,
sm_32_intrinsics.hpp and the user's helper.cuh) through evaluator/profile/profile_lines.py, as `fsr
profile` does, and writes the three pages it read to $OUT: source_both_probe.csv,
raw_probe.csv, details_probe.csv (the recording under tests/data/ncu/). Run from the repository
root: `python3 bench/record_ncu_inlined.py`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fsr_lsp.evaluator import EvalOptions  # noqa: E402
from fsr_lsp.evaluator.profile import profile_lines as pl  # noqa: E402
from fsr_lsp.evaluator.job.prepare import prepare  # noqa: E402

DATA = ROOT / "tests" / "data" / "ncu"
NAMES = {"source": "source_both_probe.csv", "raw": "raw_probe.csv", "details": "details_probe.csv"}


def main() -> int:
    out = Path(os.environ.get("OUT", "/tmp"))
    pages: dict[str, str] = {}
    export = pl._export

    def keep(tool, report, *args, timeout):
        pages[args[1]] = text = export(tool, report, *args, timeout=timeout)
        return text

    pl._export = keep
    prepared = prepare((DATA / "inlined_code.cu").read_text(), "probe", None, "sm_90",
                       EvalOptions(compiler="nvcc", include_dirs=(str(DATA),)))
    if prepared.job is None:
        print("not compiled:", prepared.result)
        return 1
    result = pl.profile_lines(prepared.job)
    if result.lines is None:
        print("not profiled:", result.note)
        return 1
    for c in result.lines.lines:
        print(f"{c.file}:{c.line}: {c.samples} samples  {c.text[:60]}")
    for page, text in pages.items():
        (out / NAMES[page]).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
