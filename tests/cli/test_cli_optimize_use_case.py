"""`fsr optimize` runs the editor's Optimize: a kernel with no @fsr spec gets a draft from its
launch in another file of the workspace, proven first, then searched; --apply writes the
rewrite with the proven block. GPU-free: the evaluator and the proof are the test stand-ins
the server's tests use (FSR_LSP_BENCH, FSR_LSP_PROVER)."""

import os
import subprocess
from pathlib import Path

from ..support.fake_llm import FakeLLM, answer
from ..lsp.test_drafts import KERNELS, MAIN
from ..support.doubles import command

ROOT = Path(__file__).resolve().parent.parent.parent
WIN = ("```cuda\n__global__ void blend(float* out, const float* a, const float* b, int rows, int cols)\n{\n"
       "    int i = blockIdx.x * blockDim.x + threadIdx.x;  // fast\n"
       "    if (i < rows * cols) out[i] = 0.5f * (a[i] + b[i]);  // verdict: verified 1.9\n}\n```")


def run(tmp_path, llm, *extra, kernel="blend"):
    env = {**os.environ, "FSR_LSP_BENCH": "tests.support.scripted_bench:ScriptedBench", "FSR_LSP_PROVER": "tests.support.scripted_prover:prove",
           "PYTHONPATH": str(ROOT), "FSR_CLI_TEST_KEY": "unused-key-123456"}
    return subprocess.run([*command("fsr"), "optimize", str(tmp_path / "kernels.cu"), "-k", kernel,
                           "--rounds", "1", "--candidates", "1", "--fix-attempts", "0", "--no-sanitize",
                           "--llm-base-url", llm.base_url, "--llm-model", "scripted", "--llm-key-env", "FSR_CLI_TEST_KEY",
                           "--workspace", str(tmp_path), *extra],
                          capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)


def workspace(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "kernels.cu").write_text(KERNELS)
    (tmp_path / "main.cpp").write_text(MAIN)


def test_a_kernel_without_a_spec_is_drafted_from_its_launch_proven_searched_and_applied(tmp_path):
    workspace(tmp_path)
    with FakeLLM([answer(WIN)]) as llm:
        r = run(tmp_path, llm, "--apply")
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "no @fsr spec; drafted one from the launch at main.cpp:10" in out
    assert "bench = { ROWS = 512, cols = 300 }" in out  # the draft is shown before anything runs
    assert "improved" in out and "1.90x faster" in out
    text = (tmp_path / "kernels.cu").read_text()
    assert "/* @fsr\n# drafted by fsr from the launch at main.cpp:10" in text and "// fast" in text
    assert text.index("/* @fsr") < text.index("__global__ void blend")


def test_a_draft_that_fails_its_proof_is_never_searched(tmp_path):
    workspace(tmp_path)
    with FakeLLM([answer(WIN)]) as llm:
        r = run(tmp_path, llm, kernel="bad_blend")
    out = r.stdout + r.stderr
    assert r.returncode == 1 and "failed its proof" in out and "reads up to 4 bytes past the end of `x`" in out
    assert not llm.requests  # no search ran
    assert (tmp_path / "kernels.cu").read_text() == KERNELS
