"""`fsr ... | head -1`: the reader goes away and fsr ends as Unix tools do, with no traceback
(issue 61: `fsr spec --json a.cu b.cu | head -1` ended in a BrokenPipeError traceback)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).parent.parent.parent / "examples").glob("*.cu"))


@pytest.mark.parametrize("form", [["--json"], []])
def test_a_reader_that_goes_away_ends_fsr_quietly(form):
    files = [str(f) for f in EXAMPLES] * 120  # about 370 KB of JSON: far more than a pipe's 64 KiB buffer holds
    p = subprocess.Popen([sys.executable, "-m", "fsr_lsp.cli.entry", "spec", *form, *files],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout is not None and p.stderr is not None
    p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read().decode()
    rc = p.wait(timeout=120)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err[-2000:]
    assert rc == 141, (rc, err[-500:])


def test_output_to_a_pipe_is_not_wrapped(tmp_path):
    """A line a script greps for stays one line in a pipe (rich would wrap at 80 columns)."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "k.cu").write_text("__global__ void k(float* x) { x[0] = 1.0f; }\n")
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    run = subprocess.run([sys.executable, "-m", "fsr_lsp.cli.main", "confirm", str(tmp_path / "k.cu"), "-k", "k"],
                         capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    line = next(x for x in run.stdout.splitlines() if x.startswith("no capture launched k"))
    assert line.endswith("so there is a run to confirm against") and len(line) > 100
