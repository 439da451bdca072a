"""Device printf on the GPU (gpu/printed.py): a rewrite that drops the original's printf is
wrong, one that prints the same lines is verified, and nothing a kernel prints reaches the
stdout of the process that asked (the LSP channel under the server)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from fsr_lsp.evaluator import evaluate

from .conftest import KERNELS, QUICK, kernel_text

pytestmark = pytest.mark.gpu
CHECK = kernel_text("check_values.cu")


def test_a_rewrite_without_the_originals_printf_is_wrong(evaluator):
    r = evaluate(evaluator, CHECK, "check_values", kernel_text("check_values_silent.cu"), QUICK)
    assert r.status == "wrong", r.message
    assert "prints as the original" in [c.name for c in r.checks if c.status == "fail"], r.checks
    assert "ERROR at index" in r.message


def test_a_rewrite_that_prints_the_same_lines_is_verified(evaluator):
    r = evaluate(evaluator, CHECK, "check_values", kernel_text("check_values_restrict.cu"), QUICK)
    assert r.status == "verified", r.message
    assert {c.name: c.status for c in r.checks}["prints as the original"] == "pass", r.checks


def test_what_kernels_print_stays_out_of_fsr_eval_output(evaluator):
    done = subprocess.run([sys.executable, "-m", "fsr_lsp.cli.main", "eval", str(KERNELS / "check_values.cu"),
                           "--kernel", "check_values", "--reps", "30", "--candidate",
                           str(KERNELS / "check_values_restrict.cu")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ERROR at index" not in done.stdout and "ERROR at index" not in done.stderr
