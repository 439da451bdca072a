"""The Ray backend on a local Ray (2 CPUs, 2 GPUs declared) with a GPU-less stand-in in each
actor: fan-out over the GPUs, a worker killed mid-request, cancel, a hung request, and the
settings that choose the backend."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from fsr_lsp.evaluator.backends import ray_cluster as ray_backend
from fsr_lsp.evaluator.worker.worker_client import EvaluatorUnavailable
from fsr_lsp.evaluator.backends.ray_cluster import RayBackend, ray_missing
from fsr_lsp.evaluator.backends.local import EvalRequest
from fsr_lsp.search.gpu_bench import GpuBench
from fsr_lsp.search.proposal import Proposal

from ..support.ray_standin import SECONDS

if os.environ.get("FSR_REQUIRE_RAY") == "1":
    import ray
else:
    ray = pytest.importorskip("ray")

ROOT = Path(__file__).resolve().parent.parent.parent
FACTORY = "tests.support.ray_standin:scripted_backend"
STANDIN_CALLS = {"echo": "tests.support.ray_standin:echo", "fails": "tests.support.ray_standin:fails"}  # given to the workers
pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def backend(tmp_path_factory):
    flags = tmp_path_factory.mktemp("ray-flags")
    ray.init(num_cpus=2, num_gpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(ROOT), "FSR_RAY_TEST_DIR": str(flags)}})
    b = RayBackend("local", factory=FACTORY, timeout=5.0, calls=STANDIN_CALLS)
    yield b
    b.close()
    ray.shutdown()


def request(marker: str, timeout: float | None = None, action: str = "evaluate") -> EvalRequest:
    return EvalRequest("// the original", "k", f"__global__ void k() {{}} // {marker}", timeout=timeout, action=action)


def batch_of(result) -> int:
    return int(next(w for w in result.warnings if w.startswith("batch of")).split()[-1])


def test_requests_fan_out_over_every_gpu_of_the_cluster(backend):
    info = backend.start()
    assert backend.gpus == 2 and info.host
    started = time.monotonic()
    results = backend.evaluate([request(f"verified {1 + i / 10}") for i in range(6)])
    elapsed = time.monotonic() - started
    assert [r.speedup for r in results] == [1.0, 1.1, 1.2, 1.3, 1.4, 1.5]  # in the order asked
    assert {r.gpu.uuid for r in results} == {"GPU-standin-0", "GPU-standin-1"}  # each names the GPU it ran on
    assert elapsed < 6 * SECONDS * 0.9  # two at a time (3 x 0.5 s), not one by one (3 s)


def test_a_worker_that_dies_has_its_request_run_again_and_nothing_is_lost(backend):
    before = backend.resubmitted
    results = backend.evaluate([request("verified 1.7 die-once"), request("verified 1.2"), request("die-always")])
    assert results[0].status == "verified" and results[0].speedup == 1.7
    assert results[1].status == "verified"
    assert results[2].status == "crashed" and "died twice" in results[2].message
    assert backend.resubmitted - before == 2  # die-once once, die-always once
    assert backend.evaluate([request("verified 1.1")])[0].status == "verified"  # the restarted workers serve again


def test_a_rounds_confirmations_are_shared_out_one_batch_a_gpu(backend):
    """Three leaders on two GPUs: one GPU confirms two of them together (one sanitizer child per
    tool on a real GPU), the other the third; a plain request beside them runs alone."""
    asked = [request(f"verified 1.{i}", action="confirm") for i in range(3)] + [request("verified 2.0")]
    said: list[int] = []
    results = backend.evaluate(asked, on_result=lambda i, r: said.append(i))
    assert [r.speedup for r in results] == [1.0, 1.1, 1.2, 2.0]
    assert sorted(batch_of(r) for r in results[:3]) == [1, 2, 2] and batch_of(results[3]) == 1
    assert {r.gpu.uuid for r in results[:3]} == {"GPU-standin-0", "GPU-standin-1"}
    assert sorted(said) == [0, 1, 2, 3]
    two = backend.evaluate([request(f"verified 1.{i}", action="confirm") for i in range(2)])
    assert [batch_of(r) for r in two] == [1, 1]  # a GPU each: side by side, not one batch


def test_a_batch_whose_worker_dies_is_sent_again_one_by_one(backend):
    """A leader that kills its worker takes no other leader of its batch down with it: each is
    sent again alone, and only the killer ends crashed."""
    before = backend.resubmitted
    asked = [request(m, action="confirm") for m in ("verified 1.6", "verified 1.3 die-always", "verified 1.8",
                                                      "verified 1.9 die-once", "verified 1.4")]
    results = backend.evaluate(asked)
    assert [r.status for r in results] == ["verified", "crashed", "verified", "verified", "verified"], \
        [r.message for r in results]
    assert results[3].speedup == 1.9 and "died twice" in results[1].message
    assert backend.resubmitted - before >= 3  # the dead batches' members, each alone


def test_cancel_cancels_what_is_queued_and_running(backend):
    cancel = threading.Event()
    threading.Timer(0.6, cancel.set).start()
    started = time.monotonic()
    results = backend.evaluate([request(f"verified 1.{i}") for i in range(10)], cancel)
    assert time.monotonic() - started < 3.0
    statuses = [r.status for r in results]
    assert "cancelled" in statuses and statuses.count("verified") < 10


def test_a_hung_request_is_a_timeout_and_its_worker_comes_back(backend, monkeypatch):
    monkeypatch.setattr(ray_backend, "GRACE_SECONDS", 0.5)
    started = time.monotonic()
    results = backend.evaluate([request("hang", timeout=0.5), request("verified 1.3")])
    assert results[0].status == "timeout" and "restarted" in results[0].message
    assert results[1].status == "verified"
    assert time.monotonic() - started < 20
    assert [r.status for r in backend.evaluate([request("verified 1.4"), request("verified 1.5")])] == ["verified"] * 2


def test_the_bench_runs_a_search_round_on_the_cluster(backend):
    bench = GpuBench(backend, "// original", "k")
    proposals = [Proposal(f"__global__ void k() {{}} // verified {s}", "test") for s in (1.5, 2.0, 0.9)]
    results = bench.evaluate(proposals)
    assert [r.speedup for r in results] == [1.5, 2.0, 0.9]
    assert bench.profile(proposals[0]).note == "stand-in: no profiler"


def test_a_cluster_without_gpus_is_a_clear_message(backend, monkeypatch):
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"CPU": 2.0})
    empty = RayBackend("local", factory=FACTORY)
    with pytest.raises(EvaluatorUnavailable, match="offers no GPU"):
        empty.start()
    (result,) = empty.evaluate([request("verified 1.1")])
    assert result.status == "unavailable" and "ray start --head" in result.message


def test_workers_that_cannot_start_are_a_clear_message_not_a_hang(backend):
    backend.start()  # its two actors hold both of the cluster's GPUs: another backend's wait forever
    started = time.monotonic()
    with pytest.raises(EvaluatorUnavailable, match="started within 2 s: its GPUs may all be taken"):
        RayBackend("local", factory=FACTORY, start_timeout=2.0).start()
    assert time.monotonic() - started < 15
    assert backend.evaluate([request("verified 1.2")])[0].status == "verified"  # the first backend is untouched


def test_batches_share_confirmations_out_over_the_gpus():
    asked = [request("a"), request("b", action="confirm"), request("c", action="confirm"), request("d"),
             request("e", action="confirm")]
    assert ray_backend.batches(asked, 2) == [[0], [3], [1, 4], [2]]
    assert ray_backend.batches(asked, 1) == [[0], [3], [1, 2, 4]]
    assert ray_backend.batches(asked, 8) == [[0], [3], [1], [2], [4]]
    assert ray_backend.batches(asked[:2], 1) == [[0], [1]]  # one confirmation: alone


def test_without_ray_installed_the_message_says_what_to_install(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    assert ray_missing() == "the ray backend needs Ray on this machine: pip install 'fsr-lsp[ray]'"


def test_the_servers_settings_choose_the_ray_backend():
    from fsr_lsp.server.gpu_owner import GpuOwner
    from fsr_lsp.settings import load_settings

    loaded = load_settings({"evaluator": {"backend": "ray", "address": "ray://gpu-box:10001"}})
    assert loaded.problems == []
    settings = loaded.settings
    assert (settings.evaluator_backend, settings.evaluator_address) == ("ray", "ray://gpu-box:10001")
    gpu = GpuOwner()
    backend = gpu.backend(settings)
    assert isinstance(backend, RayBackend) and backend.address == "ray://gpu-box:10001"
    assert gpu.backend(settings) is backend  # one connection per address
    assert gpu.remote(settings) is backend  # on-save checks without a local nvcc compile there
    assert gpu.remote(load_settings({}).settings) is None
    assert gpu.unavailable(settings) == ""  # no CUDA needed here: the cluster compiles and runs
    bad = load_settings({"evaluator.backend": "cuda"})
    assert bad.settings.evaluator_backend == "local"
    assert bad.problems == ["fsr.evaluator.backend: expected one of local, service, ray, got 'cuda'"]


@pytest.mark.nvcc
def test_the_local_backend_fans_a_round_out_over_every_local_gpu(cache_dir):
    from fsr_lsp.evaluator import EvalOptions, Evaluator
    from fsr_lsp.evaluator.backends.local import LocalBackend

    from ..support.fake_workers import scripted_slow
    from ..support.search_helpers import example

    source = example("saxpy.cu")
    body = "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[i] = a * x[i] + y[i];"
    candidates = [f"__global__ void saxpy(int n, float a, const float* __restrict__ x, float* y)\n{{\n{body}  // {k}\n}}\n"
                  for k in range(6)]
    options = EvalOptions(compiler="nvcc", cache_dir=cache_dir)
    backend = LocalBackend([Evaluator(i, target=scripted_slow) for i in (0, 1)])
    work = [EvalRequest(source, "saxpy", c, options) for c in candidates]
    try:
        backend.start()
        backend.evaluate(work[:2])  # compiled once (cached), so the wall clock below is the GPUs' alone
        started = time.monotonic()
        results = backend.evaluate(work)
        elapsed = time.monotonic() - started
    finally:
        backend.close()
    assert [r.status for r in results] == ["verified"] * 6
    assert len({r.message for r in results}) == 2  # both workers (GPUs) took jobs
    assert elapsed < 6 * 0.5 * 0.85


def test_gpu_lists_read_as_the_cli_writes_them(monkeypatch):
    from fsr_lsp.evaluator.backends.local import local_gpus

    assert local_gpus("1") == [1] and local_gpus("0,2") == [0, 2]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    assert local_gpus("all") == [0, 1]


def test_on_save_checks_without_nvcc_say_why_they_are_off(monkeypatch):
    import asyncio

    from fsr_lsp.evaluator.compile import compiler
    from fsr_lsp.server import check
    from fsr_lsp.settings import Settings

    monkeypatch.setattr(compiler, "find_nvcc", lambda _: None)
    local = asyncio.run(check.check_source("", Path("k.cu"), Settings()))
    assert local.problem.startswith("nvcc not found")
    remote = asyncio.run(check.check_source("", Path("k.cu"), Settings(evaluator_backend="ray")))
    assert remote.problem.startswith("on-save diagnostics are off: nvcc is not on this machine")


def test_the_servers_gpus_setting_gives_one_worker_per_local_gpu():
    from fsr_lsp.server.gpu_owner import GpuOwner
    from fsr_lsp.settings import load_settings

    gpu = GpuOwner()
    two = gpu.backend(load_settings({"gpus": "0,1"}).settings)
    assert [e.device_index for e in two.firsts] == [0, 1] and two.gpus == 2  # two workers a GPU (gpu_workers)
    assert gpu.backend(load_settings({"gpus": "0,1"}).settings) is two
    one = gpu.backend(load_settings({"gpu": 1}).settings)
    assert {e.device_index for e in one.evaluators} == {1}
    assert one.evaluator.device_index == 1  # proofs run on the first GPU of the list
    gpu.close()


def test_work_of_the_layers_above_runs_whole_on_a_cluster_gpu(backend):
    answer = backend.call("echo", {"kernel": "k"})
    assert answer["kernel"] == "k" and answer["gpu"].startswith("GPU-standin-")
    with pytest.raises(EvaluatorUnavailable, match="GPU worker failed"):
        backend.call("fails", {})


def test_a_drafted_spec_is_proven_on_the_cluster_and_cached_here(tmp_path):
    from fsr_lsp.drafting.cache import ProofCache
    from fsr_lsp.drafting.proof import Proof, prove_with
    from fsr_lsp.evaluator.worker.serde import to_data

    from ..support.search_helpers import GPU, example

    class Cluster:
        calls = []

        def start(self):
            return GPU

        def call(self, function, payload):
            self.calls.append((function, payload["kernel"], payload["block"]))
            return to_data(Proof(payload["kernel"], "proven", "proven at 3 sizes", spec=payload["block"] or ""))

    cluster = Cluster()
    source = example("saxpy.cu")
    with ProofCache(tmp_path) as cache:
        first = prove_with(cluster, source, "saxpy", None, cache=cache)
        again = prove_with(cluster, source, "saxpy", None, cache=cache)
    assert first.status == "proven" and not first.cached and again.cached
    assert cluster.calls == [("prove", "saxpy", None)]  # once: then the cache


@pytest.mark.nvcc
def test_on_save_checks_compile_on_the_cluster_with_the_files_headers(backend, monkeypatch, tmp_path):
    import asyncio

    from fsr_lsp.evaluator.compile import compiler
    from fsr_lsp.server import check
    from fsr_lsp.settings import Settings

    monkeypatch.setattr(compiler, "find_nvcc", lambda _: None)  # this process only: the workers have theirs
    (tmp_path / "util").mkdir()
    (tmp_path / "util" / "twice.cuh").write_text("__device__ inline float twice(float v) { return 2.0f * v; }\n")
    good = '#include "util/twice.cuh"\n__global__ void k(float* y)\n{\n    y[threadIdx.x] = twice(y[threadIdx.x]);\n}\n'
    settings = Settings(evaluator_backend="ray")
    result = asyncio.run(check.check_source(good, tmp_path / "k.cu", settings, remote=backend))
    assert result.problem == "" and result.messages == [] and result.resources  # registers per kernel came back
    bad = good.replace("twice(y", "thrice(y")
    result = asyncio.run(check.check_source(bad, tmp_path / "k.cu", settings, remote=backend))
    errors = [m for m in result.messages if m.severity == "error"]
    assert errors and "thrice" in errors[0].text and errors[0].line == 3 and errors[0].file == "k.cu"


def test_the_local_backend_starts_its_gpu_workers_side_by_side():
    """Each start makes a context and measures bandwidth: two in a row put seconds before a search."""
    import threading

    from fsr_lsp.evaluator.backends.local import LocalBackend
    from fsr_lsp.evaluator.records import GpuInfo

    both = threading.Barrier(2, timeout=5)  # broken (an error) unless both starts run at once

    class Starting:
        def __init__(self, index: int) -> None:
            self.device_index = index

        def start(self, stop=None) -> GpuInfo:
            both.wait()
            return GpuInfo(index=self.device_index, name="fake", compute_capability="9.0", sm_count=1,
                           l2_bytes=1, memory_bytes=1)

    backend = LocalBackend([Starting(0), Starting(1)])  # type: ignore[list-item]
    assert backend.start().index == 0


def test_the_ray_actors_default_backend_factory_is_importable():
    """The actor loads it by name in the cluster: a stale module path kills every actor at start."""
    from fsr_lsp.evaluator.backends.ray_cluster import DEFAULT_FACTORY, local_backend_on_this_gpu
    from fsr_lsp.evaluator.support import load

    assert load(DEFAULT_FACTORY) is local_backend_on_this_gpu


def test_the_first_job_starts_every_gpus_worker_in_the_background():
    """The baseline runs on one GPU; the next round's other workers start meanwhile, not after it."""
    import threading

    from fsr_lsp.evaluator.backends.local import LocalBackend
    from fsr_lsp.evaluator.worker.worker_client import EvaluatorUnavailable

    asked = [threading.Event(), threading.Event()]

    class Starting:
        def __init__(self, index: int) -> None:
            self.device_index = index

        def start(self, stop=None):
            asked[self.device_index].set()
            raise EvaluatorUnavailable("not this time")

    backend = LocalBackend([Starting(0), Starting(1)])  # type: ignore[list-item]
    assert backend.evaluate([]) == []
    assert asked[1].wait(5) and asked[0].wait(5)
