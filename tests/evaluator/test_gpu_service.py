"""The warm GPU service (evaluator/service/, backends/service_client.py) without a GPU: the
protocol over its socket with a scripted backend inside (results as they finish, a cancel that
stops its own batch only, a service that dies), the folder and key that keep other users out,
and the real service process started by a client, saying why there is no GPU and exiting when
idle."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Client
from pathlib import Path

import pytest

from fsr_lsp.evaluator.backends import BackendChoice, make_backend
from fsr_lsp.evaluator.backends.request import EvalRequest
from fsr_lsp.evaluator.backends.service_client import ServiceBackend, ServiceUnsafe, service_dir
from fsr_lsp.evaluator.profile.profile import Profiled
from fsr_lsp.evaluator.records import EvalResult, GpuInfo
from fsr_lsp.evaluator.service.warm_service import Service
from fsr_lsp.evaluator.worker.worker_client import EvaluatorUnavailable

GPU = GpuInfo(0, "Scripted GPU", "9.0", 132, 50 << 20, 80 << 30)


class ScriptedBackend:
    """What the service holds: answers by kernel name ("slow" waits for a cancel, up to 30 s)."""

    gpus = 1

    def __init__(self) -> None:
        self.started = 0
        self.closed = False
        self.cancelled: list[str] = []

    def start(self) -> GpuInfo:
        self.started += 1
        return GPU

    def evaluate(self, requests, cancel=None, on_result=None):
        out = []
        for i, r in enumerate(reversed(requests)):  # finishes in another order than asked
            index = len(requests) - 1 - i
            if r.kernel == "slow":
                deadline = time.monotonic() + 30
                while not cancel.is_set() and time.monotonic() < deadline:
                    time.sleep(0.02)
                status = "cancelled" if cancel.is_set() else "verified"
                if cancel.is_set():
                    self.cancelled.append(r.kernel)
            else:
                status = "verified"
            result = EvalResult(kernel=r.kernel, status=status, message=f"{r.kernel} {r.candidate}")
            out.append(result)
            if on_result is not None:
                on_result(index, result)
        return list(reversed(out))

    def profile(self, request, lines=False, cancel=None):
        return Profiled(None, f"no ncu here ({request.kernel}, lines={lines})")

    def evaluate_one(self, request, sanitize=False, on_stage=None, cancel=None):
        for stage in ("compiling", "checking n=1000", "timing at n=4096"):
            if on_stage is not None:
                on_stage(stage)
            if request.kernel == "slow":
                cancel.wait(30)
                if cancel.is_set():
                    self.cancelled.append(request.kernel)
                    return EvalResult(kernel=request.kernel, status="cancelled", message=f"cancelled while {stage}")
        return EvalResult(kernel=request.kernel, status="verified", message=f"sanitize={sanitize}")

    def call(self, name, payload, timeout=None):
        return {"name": name, **payload}

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def runtime(tmp_path, monkeypatch):
    folder = tmp_path / "run"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    return folder


def in_thread(backend, idle: float = 60.0):
    """A spawn for the client: the service on a thread of this process, holding `backend`."""
    services: list[Service] = []

    def spawn(path: Path) -> None:
        service = Service(backend, idle)
        services.append(service)
        threading.Thread(target=service.serve, args=(path,), daemon=True).start()

    return spawn, services


def test_requests_cross_and_results_come_back_by_index_as_they_finish(runtime):
    backend = ScriptedBackend()
    spawn, services = in_thread(backend)
    client = ServiceBackend("0", 120.0, spawn=spawn)
    assert client.start() == GPU and client.gpus == 1
    seen: list[int] = []
    requests = [EvalRequest("src", f"k{i}", f"cand{i}") for i in range(3)]
    results = client.evaluate(requests, on_result=lambda i, r: seen.append(i))
    assert [r.message for r in results] == ["k0 cand0", "k1 cand1", "k2 cand2"]
    assert seen == [2, 1, 0]  # as they finished
    assert client.profile(EvalRequest("src", "k")).note == "no ncu here (k, lines=False)"
    assert client.call("compile", {"x": 1}) == {"name": "compile", "x": 1}
    # a second client (another command) meets the same service, started once
    other = ServiceBackend("0", 120.0, spawn=lambda p: pytest.fail("started a second service"))
    assert other.start() == GPU and len(services) == 1 and backend.started == 2


def test_a_cancel_stops_its_own_batch_never_another_commands(runtime):
    backend = ScriptedBackend()
    spawn, _ = in_thread(backend)
    mine, theirs = ServiceBackend("0", 120.0, spawn=spawn), ServiceBackend("0", 120.0, spawn=spawn)
    stop = threading.Event()
    got: dict[str, list[EvalResult]] = {}
    t = threading.Thread(target=lambda: got.setdefault("mine", mine.evaluate([EvalRequest("s", "slow")], stop)))
    t.start()
    time.sleep(0.5)
    got["theirs"] = theirs.evaluate([EvalRequest("s", "fast")])
    stop.set()
    t.join(10)
    assert not t.is_alive()
    assert got["mine"][0].status == "cancelled" and got["theirs"][0].status == "verified"
    assert backend.cancelled == ["slow"]


ROOT = Path(__file__).resolve().parents[2]
SERVE = ("import sys; from pathlib import Path; from tests.evaluator.test_gpu_service import ScriptedBackend; "
         "from fsr_lsp.evaluator.service.warm_service import Service; Service(ScriptedBackend(), 60).serve(Path(sys.argv[1]))")


def test_a_service_that_dies_answers_crashed_and_the_next_call_starts_another(runtime):
    """The service killed (SIGKILL) while it holds a batch: the batch comes back "crashed", and
    the next request starts a new service over the dead one's socket."""
    procs: list[subprocess.Popen] = []

    def spawn(path: Path) -> None:
        procs.append(subprocess.Popen([sys.executable, "-c", SERVE, str(path)], cwd=ROOT,
                                      env={**os.environ, "XDG_RUNTIME_DIR": str(runtime)}))

    client = ServiceBackend("0", 120.0, spawn=spawn)
    try:
        assert client.start() == GPU
        box: dict[str, list[EvalResult]] = {}
        t = threading.Thread(target=lambda: box.setdefault("r", client.evaluate([EvalRequest("s", "slow")])))
        t.start()
        time.sleep(1.0)
        procs[0].kill()
        t.join(20)
        assert not t.is_alive()
        assert box["r"][0].status == "crashed" and "went away" in box["r"][0].message
        assert client.path.exists()  # the dead service's socket, left behind
        assert client.start() == GPU and len(procs) == 2
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_a_service_dying_as_it_is_dialled_is_taken_for_gone(runtime, caplog):
    """A killed service whose socket still accepts for a moment resets the connection during the
    handshake (seen in CI: errno 104): that is a service gone, so a new one starts, where the
    command used to give up on the service for good."""
    import socket

    backend = ScriptedBackend()
    spawn, services = in_thread(backend)
    client = ServiceBackend("0", 120.0, spawn=spawn)
    dying = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dying.bind(str(client.path))
    dying.listen(8)

    def hang_up() -> None:
        while True:
            try:
                conn, _ = dying.accept()
            except OSError:
                return
            conn.close()

    threading.Thread(target=hang_up, daemon=True).start()
    try:
        with caplog.at_level("WARNING"):
            assert client.start() == GPU
        assert len(services) == 1 and "cannot be used" not in caplog.text
    finally:
        dying.close()


def test_a_folder_others_can_enter_is_refused(runtime):
    folder = service_dir()
    os.chmod(folder, 0o755)
    with pytest.raises(ServiceUnsafe, match="not a folder of this user's own"):
        service_dir()  # nothing sent through it: the command does its GPU work itself (below)


def test_a_connection_without_the_key_is_refused(runtime):
    spawn, services = in_thread(ScriptedBackend())
    client = ServiceBackend("0", 120.0, spawn=spawn)
    client.start()
    assert oct(client.path.stat().st_mode & 0o777) == "0o600"
    assert oct((client.path.parent / "key").stat().st_mode & 0o777) == "0o600"
    with pytest.raises(Exception):  # multiprocessing's AuthenticationError
        Client(str(client.path), family="AF_UNIX", authkey=b"not the key")
    assert client.start() == GPU and len(services) == 1  # the same service, still up


def test_the_settings_choose_the_service(runtime):
    backend = make_backend(BackendChoice(kind="service", gpus="0", timeout=30.0, idle=20.0))
    assert isinstance(backend, ServiceBackend) and backend.idle == 20.0 and backend.path.name.startswith("gpus-0-t30-")
    with pytest.raises(ValueError):
        make_backend(BackendChoice(kind="service", gpus="x"))


def test_the_real_service_starts_says_why_there_is_no_gpu_and_exits_when_idle(runtime):
    """The client starts `python -m fsr_lsp.evaluator.service` detached; on a machine without a
    GPU its answer is the worker's own reason; idle, it exits and removes its socket."""
    client = ServiceBackend("0", 60.0, idle=5.0)
    env_ok = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True).returncode == 0
    started = time.monotonic()
    try:
        client.start()
        gpu = True
    except EvaluatorUnavailable as e:
        gpu = False
        assert str(e), "no reason given"
        if env_ok:
            assert "GPU" in str(e) or "CUDA" in str(e) or "torch" in str(e), str(e)
    assert client.path.exists()
    if gpu:
        pytest.skip("this machine has a GPU: the service is up")
    deadline = time.monotonic() + 60
    while client.path.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not client.path.exists(), "the idle service did not close its socket"
    assert time.monotonic() - started >= 5.0
    deadline = time.monotonic() + 20  # and the process itself ends (its socket gone is not enough)
    while _running(client.path) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _running(client.path), "the idle service's process is still running"
    log = (client.path.parent / "service.log").read_text()
    assert "GPU service for GPUs 0" in log and "idle for 5 s: exiting" in log


STARTER = ("import sys; from fsr_lsp import processes; processes.start_reaper(processes.mark_tree()); "
           "from fsr_lsp.evaluator.backends.service_client import ServiceBackend; "
           "from fsr_lsp.evaluator.worker.worker_client import EvaluatorUnavailable\n"
           "b = ServiceBackend('0', 61.0, idle=30.0)\n"
           "try:\n    b.start()\nexcept EvaluatorUnavailable as e:\n    print('unavailable:', e)\n"
           "print(b.path)")


def test_the_service_outlives_the_command_that_started_it(runtime):
    """A command marks its process tree and its reaper kills the tree when it exits (processes.py):
    the service it started is no part of that tree, and answers the next command."""
    ran = subprocess.run([sys.executable, "-c", STARTER], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "XDG_RUNTIME_DIR": str(runtime)})
    assert ran.returncode == 0, ran.stderr
    path = Path(ran.stdout.strip().splitlines()[-1])
    time.sleep(1.5)  # the reaper's round, after its parent is gone
    client = ServiceBackend("0", 61.0, spawn=lambda p: pytest.fail("the service did not outlive its starter"))
    try:
        try:
            client.start()
        except EvaluatorUnavailable:
            pass  # no GPU here: the service answered all the same
        assert path.exists()
    finally:
        subprocess.run(["pkill", "-f", "--", f"--socket {path}"], check=False)


def test_another_build_or_gpu_set_never_meets_an_older_service(runtime, monkeypatch):
    """A service started by another version of fsr, an edited checkout, or under another
    CUDA_VISIBLE_DEVICES has a socket of its own: work never goes to code or GPUs it was not meant for."""
    from fsr_lsp.evaluator.backends import service_client

    first = service_client.socket_path("0", 120.0)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    service_client._build_digest.cache_clear()
    try:
        assert service_client.socket_path("0", 120.0) != first
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
        monkeypatch.setattr(service_client, "__version__", "9.9.9")
        service_client._build_digest.cache_clear()
        assert service_client.socket_path("0", 120.0) != first
    finally:
        service_client._build_digest.cache_clear()


def test_no_service_to_be_had_means_the_command_runs_its_gpu_work_itself(runtime, monkeypatch, caplog):
    """A service that does not start, or a folder that is not the user's own: the same answers
    from the command's own (local) backend, and one line saying why."""
    from fsr_lsp.evaluator.backends import service_client

    monkeypatch.setattr(service_client, "START_WAIT_S", 0.5)
    own = ScriptedBackend()
    client = ServiceBackend("0", 120.0, spawn=lambda p: None, local=lambda: own)
    with caplog.at_level("WARNING", logger="fsr_lsp.evaluator"):
        assert client.start() == GPU
        assert [r.message for r in client.evaluate([EvalRequest("s", "k", "c")])] == ["k c"]
    assert own.started == 1 and "did not start within" in caplog.text
    os.chmod(service_dir(), 0o755)
    other = ScriptedBackend()
    unsafe = ServiceBackend("0", 120.0, local=lambda: other)
    assert unsafe.start() == GPU and other.started == 1
    assert unsafe.call("compile", {"x": 1}) == {"name": "compile", "x": 1}


def _running(path: Path) -> bool:
    """Whether a service process for this socket is alive."""
    return subprocess.run(["pgrep", "-f", "--", f"--socket {path}"], capture_output=True).returncode == 0


def test_fsr_evals_one_request_streams_its_stages_and_stops_on_cancel(runtime):
    """`fsr eval --backend service`: each stage said as the service starts it, then the result;
    a cancel (Ctrl-C) stops that request in the service."""
    backend = ScriptedBackend()
    spawn, _ = in_thread(backend)
    client = ServiceBackend("0", 120.0, spawn=spawn)
    stages: list[str] = []
    result = client.evaluate_one(EvalRequest("s", "k", "c"), True, stages.append)
    assert result.status == "verified" and result.message == "sanitize=True"
    assert stages == ["compiling", "checking n=1000", "timing at n=4096"]
    stop = threading.Event()
    threading.Timer(0.5, stop.set).start()
    cancelled = client.evaluate_one(EvalRequest("s", "slow", "c"), False, None, stop)
    assert cancelled.status == "cancelled" and backend.cancelled == ["slow"]


class VerdictBackend(ScriptedBackend):
    """A service's backend that answers as the scripted bench does, from each candidate's
    `// verdict:` marker: enough for a whole search to run through a real service process."""

    def evaluate(self, requests, cancel=None, on_result=None):
        from ..support.scripted_bench import ScriptedBench

        bench = ScriptedBench()
        out = []
        for i, r in enumerate(requests):
            if r.candidate is None:
                result = bench.baseline()
            elif "// held" in r.candidate:  # a candidate the service holds until it is killed
                time.sleep(30)
                result = bench._verdict(r.candidate)
            elif r.action == "confirm":
                result = bench.confirm(type("P", (), {"source": r.candidate})())
            else:
                result = bench._verdict(r.candidate)
            out.append(result)
            if on_result is not None:
                on_result(i, result)
        return out


SERVE_VERDICTS = SERVE.replace("ScriptedBackend", "VerdictBackend")


def test_a_service_killed_mid_search_loses_nothing_the_search_found(runtime, tmp_path, monkeypatch,
                                                                     without_structural_rewrites):
    """Issue 59: the service is killed (SIGKILL) while a search's second round waits on it. That
    round's candidates come back "crashed", the next request starts a new service, the search
    ends with round 1's verified win, and the workspace's history holds every verdict."""
    from fsr_lsp.search import HistoryStore, LLMConfig, SearchConfig, SearchControl, run_search
    from fsr_lsp.search.generators.llm import LLMGenerator
    from fsr_lsp.search.gpu_bench import GpuBench

    from ..support.fake_llm import FakeLLM, answer
    from ..support.search_helpers import example

    def kernel(verdict: str, tag: str) -> str:
        return answer(f"```cuda\n__global__ void saxpy(int n, float a, const float* __restrict__ x, float* y)\n"
                      f"{{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;  // {tag}\n"
                      f"    if (i < n) y[i] = a * x[i] + y[i];  // verdict: {verdict}\n}}\n```\n")

    procs: list[subprocess.Popen] = []

    def spawn(path: Path) -> None:
        procs.append(subprocess.Popen([sys.executable, "-c", SERVE_VERDICTS, str(path)], cwd=ROOT,
                                      env={**os.environ, "XDG_RUNTIME_DIR": str(runtime)}))

    def kill_in_round_2(progress) -> None:  # while the service holds round 2's candidate
        if "round 2: evaluating" in progress.message and len(procs) == 1:
            threading.Timer(1.0, procs[0].kill).start()

    monkeypatch.setenv("FSR_SVC_KEY", "unused-key-0123456789")
    saxpy = example("saxpy.cu")
    steps = [kernel("verified 1.5", "first"), kernel("verified 2.5", "held"), kernel("verified 1.2", "after")]
    client = ServiceBackend("0", 120.0, spawn=spawn)
    try:
        with FakeLLM(steps, default=kernel("verified 1.1", "more")) as llm, HistoryStore(tmp_path) as store:
            config = SearchConfig(rounds=3, candidates=1, fix_attempts=0, sanitize_winner=False,
                                  llm=LLMConfig(base_url=llm.base_url, model="m", api_key_env="FSR_SVC_KEY",
                                                max_retries=1))
            outcome = run_search(saxpy, "examples/saxpy.cu", "saxpy", config, GpuBench(client, saxpy, "saxpy"),
                                 LLMGenerator(config.llm, sleep=lambda s: None, parallel=1), store,
                                 SearchControl(kill_in_round_2))
            rows = store.history("examples/saxpy.cu", "saxpy")
    finally:
        for p in procs:
            p.kill()
            p.wait()
    assert len(procs) == 2  # killed once, started again by the next request
    lost = next(t for t in outcome.tried if "// held" in t.proposal.source)
    assert lost.result.status == "crashed" and "went away" in lost.result.message
    assert outcome.status == "improved" and "// first" in outcome.best.proposal.source
    statuses = {r.source.split("// ")[1].split()[0]: r.status for r in rows}
    assert statuses["first"] == "verified" and statuses["held"] == "crashed" and statuses["after"] == "verified"
