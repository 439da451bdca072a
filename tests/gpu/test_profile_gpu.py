"""The profiler on a GPU, end to end: `fsr profile` runs each flawed kernel of
kernels/profile_flaws.cu under ncu (the real worker, compiler and Nsight Compute) and flags the
flaw on its own line: the uncoalesced read, the bank-conflicted tile read. It prints how long a
profile took (docs/benchmarks.md)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import KERNELS

pytestmark = pytest.mark.gpu
FLAWS = KERNELS / "profile_flaws.cu"


def flaw_line(kernel_start: str) -> int:
    lines = FLAWS.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if kernel_start in line)
    return next(i for i in range(start, len(lines)) if "// FLAW" in lines[i]) + 1


@pytest.fixture(scope="module")
def folder(tmp_path_factory, evaluator) -> Path:  # the evaluator fixture skips without a GPU
    if shutil.which("ncu") is None and not Path("/usr/local/cuda/bin/ncu").exists():
        pytest.skip("no ncu on this GPU host")
    out = tmp_path_factory.mktemp("profile")
    (out / ".git").mkdir()
    shutil.copy(FLAWS, out / FLAWS.name)
    return out


@pytest.mark.parametrize("kernel, kind", [("gather_strided", "uncoalesced"),
                                          ("transpose_tiled_conflicts", "bank_conflicts")])
def test_each_flaw_is_flagged_on_its_line(folder: Path, kernel: str, kind: str):
    started = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "fsr_lsp.cli.main", "profile", FLAWS.name, "-k", kernel, "--json"],
                       cwd=folder, capture_output=True, text=True, timeout=600)
    wall = time.monotonic() - started
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    data = json.loads(r.stdout)
    print(f"[profile] {kernel}: {data['summary']}; ncu {data['seconds']:.1f} s, fsr profile {wall:.1f} s")
    for f in data["findings"]:
        print(f"[profile]   line {f['line']}: {f['kind']}: {f['message']}")
    line = flaw_line(f"void {kernel}(")
    assert [f["line"] for f in data["findings"] if f["kind"] == kind] == [line]
    assert data["facts"]["kernel_ms"] > 0 and data["size"]
