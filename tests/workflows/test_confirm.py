"""`fsr confirm` (issue 58, item 3): the applied rewrite rebuilt and rerun in the user's program,
its kernel time, exit status and output held against the captured run; a regression said as
clearly as a gain; every step that cannot run ends in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fsr_lsp.capture import CaptureOptions, run_capture
from fsr_lsp.capture.program_output import compare_outputs
from fsr_lsp.kernels import find_kernel, kernel_source
from fsr_lsp.profiling.timings import Timings
from fsr_lsp.settings import Settings
from fsr_lsp.source import SourceText
from fsr_lsp.workflows.confirm import CONFIRMS, confirm

APP = Path(__file__).parent.parent / "data" / "fake_timed_app.py"
ORIGINAL = """__global__ void scale(float* y, const float* x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}
"""
REWRITE = ORIGINAL.replace("y[i] = a * x[i];", "y[i] = __fmul_rn(a, x[i]);")


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A workspace whose program was captured with its build (the original kernel, 2 ms a launch),
    then searched (2.0x verified) and the rewrite applied."""
    bin_dir = tmp_path / "toolkit" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "nvcc").write_text("#!/bin/sh\nwhile [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then touch \"$2\"; fi; "
                                  "shift; done\n")
    (bin_dir / "nvcc").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FSR_CAPTURE_LIBRARY", str(APP))  # no GPU: any file stands in for the library
    (tmp_path / ".git").mkdir()
    file = tmp_path / "k.cu"
    file.write_text(ORIGINAL)
    state(tmp_path, ns=2_000_000)
    first = run_capture([sys.executable, str(APP)], tmp_path, CaptureOptions(build="nvcc -O3 -c k.cu -o k.o"),
                        on_output=lambda line: None)
    assert first.launches and first.exit_code == 0
    with Timings(tmp_path) as timings:
        for text, ms, label in ((ORIGINAL, 4.0, "the original a search timed"), (REWRITE, 2.0, "the rewrite a search found")):
            src = SourceText(text)
            timings.record(str(file), "scale", text, kernel_source(src, find_kernel(src, "scale")).definition, ms,
                           "NVIDIA H100", label)
    file.write_text(REWRITE)
    return tmp_path


def state(root: Path, **values) -> None:
    (root / "state.json").write_text(json.dumps(values))


def confirmed(root: Path, **kwargs):
    return confirm(root, root / "k.cu", "scale", Settings(), on_output=lambda line: None, **kwargs)


def test_a_rewrite_that_gains_in_the_program_what_was_verified_is_confirmed(project):
    state(project, ns=1_000_000)
    done = confirmed(project)
    assert done.status == "confirmed" and done.exit_code == 0, done.lines
    assert done.lines == [
        "scale in your program: 2 ms -> 1 ms a launch (10 launches timed before, 10 after): 2.00x faster",
        "fsr verified 2.00x at its bench size on NVIDIA H100; the program gains 2.00x: within 0%",
        "exit status 0, as before",
        "the same output: 2 lines compared (1 timing line not compared)"]
    assert list((project / CONFIRMS).iterdir())  # the rerun is kept apart: specs still come from the first run


def test_a_regression_in_the_program_is_said_as_clearly_as_a_gain(project):
    state(project, ns=3_000_000)
    done = confirmed(project)
    assert done.status == "differs" and done.exit_code == 1
    assert "1.50x SLOWER: a regression in the real run" in done.lines[0]
    assert "fsr verified 2.00x" in done.lines[1] and "Likely causes" in done.lines[1]


def test_a_smaller_gain_than_verified_is_explained(project):
    state(project, ns=1_600_000)
    done = confirmed(project)
    assert done.status == "differs" and "the program gains 1.25x, 62% of it. Likely causes" in done.lines[1]


def test_a_kernel_of_a_few_microseconds_gaining_more_than_verified_names_the_launch_overhead(project):
    """fsr's per-launch timing adds microseconds to both versions of a 2.3 µs kernel: its verified
    speedup is smaller than the program's (a public reduction: 1.21x verified, 1.71x in its run)."""
    state(project, ns=4_000)  # the program captured again before the rewrite: 4 µs a launch
    run_capture([sys.executable, str(APP)], project, CaptureOptions(build="nvcc -O3 -c k.cu -o k.o"),
                on_output=lambda line: None)
    state(project, ns=1_000)
    done = confirmed(project)
    said = next(line for line in done.lines if line.startswith("fsr verified"))
    assert "Likely causes: a launch this short (4 µs in your run)" in said, done.lines


def test_another_output_or_exit_status_is_found(project):
    state(project, ns=1_000_000, result=2.5, status=4)
    done = confirmed(project)
    assert done.status == "differs"
    assert "exit status 4, where the first run's was 0" in done.lines
    assert done.lines[-1] == "a different output: line 1: 'checksum: 3.14159' then, now 'checksum: 2.5' " \
                             "(1 timing line not compared)"


def test_what_cannot_run_ends_in_one_line(project):
    failed = confirmed(project, rebuild="exit 5")
    assert failed.status == "failed" and failed.exit_code == 2
    assert failed.lines[0].startswith("the build `exit 5` failed (exit status 5): nothing was run")
    assert (project / "k.cu").read_text() == REWRITE  # nothing lost
    unknown = confirm(project, project / "k.cu", "other", Settings())
    assert unknown.status == "failed" and "no capture launched other" in unknown.lines[0]


def test_a_capture_without_its_build_asks_for_one(project):
    meta_path = next((project / ".fsr" / "captures").iterdir()) / "capture.json"
    meta = json.loads(meta_path.read_text())
    meta_path.write_text(json.dumps({**meta, "build": ""}))
    done = confirmed(project)
    assert done.status == "failed" and "captured without --build" in done.lines[0]
    state(project, ns=1_000_000)
    assert confirmed(project, rebuild=False).status == "confirmed"


def test_fsr_confirm_on_the_command_line(project):
    state(project, ns=1_000_000)
    run = subprocess.run([sys.executable, "-m", "fsr_lsp.cli.main", "confirm", str(project / "k.cu"), "-k", "scale"],
                         capture_output=True, text=True, cwd=project, timeout=120, env=os.environ)
    assert run.returncode == 0, run.stderr + run.stdout
    assert "2.00x faster" in run.stdout and "scale: confirmed" in run.stdout


def test_outputs_compare_numbers_to_their_printed_precision_and_skip_timings():
    assert compare_outputs("sum = 1.00\nkernel: 3.2 ms\n", "sum = 1.01\nkernel: 1.1 ms\n").same
    assert not compare_outputs("sum = 1.00\n", "sum = 1.03\n").same
    assert compare_outputs("x 1.0000001\n", "x 1.0000002\n", rtol=1e-5).same
    assert not compare_outputs("PASSED\n", "FAILED\n").same
    assert not compare_outputs("a\nb\n", "a\n").same
    assert compare_outputs("nan\n", "nan\n").same and not compare_outputs("nan\n", "1.0\n").same


def test_a_rewrite_verified_under_another_launch_than_the_programs_is_said_first(project):
    """The rewrite's @fsr block launches it with 128 threads; the program still launches 256."""
    spec = ("/* @fsr\nbench = { n = 4096 }\ngrid = \"cdiv(n, 128)\"\nblock = 128\n[args]\ny = \"out[n]\"\nx = \"in[n]\"\n"
            "a = 2.0\nn = \"n\"\n*/\n")
    (project / "k.cu").write_text(spec + REWRITE)
    state(project, ns=1_000_000)
    done = confirmed(project)
    assert done.status == "differs"
    assert done.lines[0] == ("the applied rewrite was verified with block (128, 1, 1) (its @fsr block), but your "
                             "program launches it with block (256, 1, 1): change the program's launch as the block "
                             "says (grid and block), or the rewrite runs as it was never verified")
