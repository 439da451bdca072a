"""The capture bench counts a kernel proven only through what `fsr optimize` runs before its
first round (issue 44 item 4): the same spec resolver over the workspace's captures, the same
proof. Here both run over one workspace (two programs' captures, a kernel name in both, one
kernel whose proof fails, one launched nowhere) and must agree on every kernel, on
the verdict and on the very block proven. GPU-free: the proof is a recording stand-in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fsr_lsp.kernels import discover
from fsr_lsp.settings import Settings
from fsr_lsp.source import SourceText
from fsr_lsp.instruments import Instruments

from ..support.doubles import command
from ..support.captures import f32, i32, ptr, write_capture

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "bench"))
coverage = pytest.importorskip("capture_coverage")

KERNELS = """__global__ void scale(float* out, const float* in, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * in[i];
}

__global__ void bad_shift(float* out, const float* in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] + 1.0f;
}

__global__ void lonely(float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 0.0f;
}
"""


def launch(base: str, symbol: str, n: int, with_scalar: bool, id: int) -> dict:
    params = [ptr(4 * n), ptr(4 * n)] + ([{"offset": 16, "size": 4, "hex": f32(2.0)}] if with_scalar else [])
    params.append({"offset": 16 + 4 * with_scalar, "size": 4, "hex": i32(n)})
    return {"id": id, "kernel": symbol, "name": f"{base}(...)", "base": base, "grid": [(n + 255) // 256, 1, 1],
            "block": [256, 1, 1], "smem": 0, "params": params}


def project(root: Path) -> None:
    (root / ".git").mkdir()
    for name, n in (("a", 5000), ("b", 7000)):
        (root / name).mkdir()
        (root / name / "k.cu").write_text(KERNELS)
        folder = write_capture(root, [launch("scale", "_Z5scalePfPKffi", n, True, 0),
                                      launch("bad_shift", "_Z9bad_shiftPfPKfi", n, False, 1)],
                               name=f"2026010{'12'[name == 'b']}-000000", command=(str(root / name / "app"),))
        meta = json.loads((folder / "capture.json").read_text())
        (folder / "capture.json").write_text(json.dumps({**meta, "cwd": str(root / name), "exit_code": 0}))


def bench_verdicts(root: Path, monkeypatch, log: Path) -> dict[tuple[str, str], str]:
    monkeypatch.setenv("FSR_TEST_PROOF_LOG", str(log))
    from ..support.recording_prover import prove
    out = {}
    for name in ("a", "b"):
        src = root / name / "k.cu"
        for kernel in discover(SourceText(src.read_text())).kernels:
            row = {"program": name, "kernel": kernel.name}
            coverage.prove_row(coverage.Optimizer(instruments=Instruments(prover=prove)), coverage.LaunchIndex(root, first_wait=None), root, Settings(), row,
                               src, kernel)
            # a spec inferred from the signature is searched as it is, by both
            out[(name, kernel.name)] = "searched" if row["origin"] in ("inferred", "attached") else row["status"]
    return out


def optimize_verdict(root: Path, name: str, kernel: str, log: Path) -> str:
    env = {**os.environ, "FSR_LSP_BENCH": "tests.support.scripted_bench:ScriptedBench",
           "FSR_LSP_PROVER": "tests.support.recording_prover:prove", "FSR_TEST_PROOF_LOG": str(log), "PYTHONPATH": str(ROOT)}
    r = subprocess.run([*command("fsr"), "optimize", str(root / name / "k.cu"), "-k", kernel,
                        "--rounds", "1", "--candidates", "1", "--no-sanitize", "--workspace", str(root)],
                       capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    out = r.stdout + r.stderr
    if "failed its proof" in out:
        return "failed"
    if "no @fsr spec (" in out:
        return "no spec"
    if "proving it on the GPU" in out:
        return "proven"
    assert "no win" in out or "improved" in out, out
    return "searched"


def blocks(log: Path) -> list[tuple[str, str]]:
    return [(e["kernel"], e["block"]) for e in map(json.loads, log.read_text().splitlines())] if log.exists() else []


def test_the_bench_and_fsr_optimize_agree_on_every_kernel_and_prove_the_same_block(tmp_path, monkeypatch):
    root = tmp_path / "project"
    root.mkdir()
    project(root)
    bench = bench_verdicts(root, monkeypatch, tmp_path / "bench.jsonl")
    cli = {key: optimize_verdict(root, *key, tmp_path / "cli.jsonl") for key in bench}
    assert bench == cli
    assert bench[("a", "scale")] == "proven" and bench[("a", "bad_shift")] == "failed"
    assert bench[("a", "lonely")] == "searched"
    assert blocks(tmp_path / "bench.jsonl") == blocks(tmp_path / "cli.jsonl") != []
    proven = dict(((k, i), b) for i, (k, b) in enumerate(blocks(tmp_path / "bench.jsonl")))
    # each program's kernel took its own run's launch
    assert "n = 5000" in proven[("scale", 0)] and "n = 7000" in [b for (k, _), b in proven.items() if k == "scale"][1]
