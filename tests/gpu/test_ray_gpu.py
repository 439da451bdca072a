"""The same search with the local backend and with a Ray backend on this machine's GPU(s):
verified winners, and the local winner re-measured through Ray within a few percent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fsr_lsp.evaluator.backends.ray_cluster import RayBackend
from fsr_lsp.search import SearchConfig, run_search
from fsr_lsp.search.generators.tuner.generator import BuiltinGenerator
from fsr_lsp.search.gpu_bench import GpuBench

from .conftest import QUICK

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.gpu
ROOT = str(Path(__file__).parents[2])  # where Ray's workers import fsr_lsp from, ahead of the rest
TRANSPOSE = (Path(ROOT) / "bench" / "naive_kernels" / "transpose.cu").read_text()
NAME = "transpose_naive"


def test_local_and_ray_give_verified_winners_with_matching_speedups(evaluator):
    config = SearchConfig(rounds=1, candidates=3, time_budget=60, fix_attempts=0)
    local = run_search(TRANSPOSE, "transpose.cu", NAME, config, GpuBench(evaluator, TRANSPOSE, NAME, QUICK),
                       BuiltinGenerator(seconds=20))
    ray.init(num_gpus=None, include_dashboard=False, logging_level="ERROR", log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))}})
    backend = RayBackend("local")
    try:
        bench = GpuBench(backend, TRANSPOSE, NAME, QUICK)
        remote = run_search(TRANSPOSE, "transpose.cu", NAME, config, bench, BuiltinGenerator(seconds=20))
        again = bench.evaluate([local.best.proposal])[0]
    finally:
        backend.close()
        ray.shutdown()
    print(f"\n[ray] local: {local.message}\n[ray] ray: {remote.message}\n[ray] local winner on ray: {again.message}")
    assert local.status == "improved" and remote.status == "improved"
    assert local.best.result.confirmed and remote.best.result.confirmed
    assert again.verified and abs(again.speedup / local.best.result.speedup - 1) < 0.05
    assert again.gpu.uuid.startswith("GPU-") and again.gpu.host
