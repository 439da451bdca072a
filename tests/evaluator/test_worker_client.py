"""The worker supervision: crashes, hangs, restarts and cancellation never reach the caller."""

import threading
import time

import pytest

from fsr_lsp.evaluator.worker.worker_client import Evaluator, EvaluatorUnavailable
from fsr_lsp.evaluator.records import EvalJob, KernelBinary, LaunchPlan, SizePlan

from ..support import fake_workers


def job(kernel):
    launch = LaunchPlan((1, 1, 1), (1, 1, 1))
    return EvalJob(kernel=kernel, original=KernelBinary(b"", "k", "nvcc", "sm_90a"), candidate=None,
                   sizes=[SizePlan("n=1", "bench", {"n": 1}, [], launch, launch)])


@pytest.fixture
def evaluator():
    ev = Evaluator(timeout=20, start_timeout=60, target=fake_workers.scripted)
    yield ev
    ev.close()


def pid(result):
    return int(result.message.split()[-1])


def test_jobs_reuse_one_worker_and_report_stages(evaluator):
    stages = []
    first = evaluator.run(job("a"), on_stage=stages.append)
    second = evaluator.run(job("b"))
    assert first.status == second.status == "verified"
    assert pid(first) == pid(second) and stages == ["checking a"]
    assert first.gpu.name == "Scripted GPU" and evaluator.restarts == 0


@pytest.mark.parametrize("kernel, words", [("exit", "exit code 3"), ("segv", "killed by SIGSEGV")])
def test_a_dying_worker_is_a_result_and_is_replaced(evaluator, kernel, words):
    before = evaluator.run(job("a"))
    r = evaluator.run(job(kernel))
    assert r.status == "crashed" and words in r.message and f"checking {kernel}" in r.message
    after = evaluator.run(job("a"))
    assert after.status == "verified" and pid(after) != pid(before) and evaluator.restarts == 1


def test_a_hang_is_killed_at_the_timeout(evaluator):
    started = time.monotonic()
    r = evaluator.run(job("hang"), timeout=1.5)
    assert r.status == "timeout" and "checking hang" in r.message
    assert time.monotonic() - started < 10
    assert evaluator.run(job("a")).status == "verified"


def test_a_timeout_says_hung_or_slow_as_the_last_launch_showed(evaluator):
    hung = evaluator.run(job("hang"), timeout=1.0)
    assert "a kernel probably hangs" in hung.message
    slow = evaluator.run(job("slow"), timeout=1.0)
    assert slow.status == "timeout" and "probably hangs" not in slow.message
    assert "one launch of the original took 1.3 s: the kernel is slow at this size, not hung" in slow.message
    assert evaluator.run(job("a")).status == "verified"


def test_an_evaluator_bug_is_a_crashed_result_not_an_exception(evaluator):
    r = evaluator.run(job("bug"))
    assert r.status == "crashed" and "internal evaluator error: an evaluator bug" in r.message and "ValueError" not in r.message
    assert evaluator.run(job("a")).status == "verified"


def test_a_worker_asking_for_restart_is_replaced(evaluator):
    first = evaluator.run(job("poisoned"))
    assert first.status == "crashed"
    assert pid(evaluator.run(job("a"))) != pid(first)


def test_cancel_from_another_thread(evaluator):
    evaluator.start()
    timer = threading.Timer(0.5, evaluator.cancel)
    timer.start()
    r = evaluator.run(job("hang"), timeout=30)
    assert r.status == "cancelled"
    assert evaluator.run(job("a")).status == "verified"


def test_a_cancelled_start_goes_on_for_the_next_job():
    """A search cancelled (its deadline) while the worker starts returns at once; the start runs no
    candidate's code, so it goes on, and the next job (on a warm service, the next command's) finds
    that same worker ready instead of waiting for a new one's seconds of start."""
    ev = Evaluator(timeout=20, start_timeout=60, target=fake_workers.slow_start)
    try:
        threading.Timer(0.3, ev.cancel).start()
        began = time.monotonic()
        assert ev.run(job("a")).status == "cancelled"
        assert time.monotonic() - began < 1.2  # not the whole start
        time.sleep(1.6)  # the start ends meanwhile
        began = time.monotonic()
        first = ev.run(job("a"))
        assert first.status == "verified" and time.monotonic() - began < 1.0 and ev.restarts == 0
        assert pid(ev.run(job("b"))) == pid(first)
    finally:
        ev.close()


def test_a_crashed_worker_is_replaced_at_once_not_at_the_next_job():
    """After a crash the new worker's start begins right away, overlapping whatever the caller does
    next (compiles, the next round's drafts): a job that comes after a start's time waits for none."""
    ev = Evaluator(timeout=20, start_timeout=60, target=fake_workers.slow_start)
    try:
        before = ev.run(job("a"))
        assert ev.run(job("exit")).status == "crashed"
        time.sleep(1.8)
        began = time.monotonic()
        after = ev.run(job("a"))
        assert after.status == "verified" and pid(after) != pid(before)
        assert time.monotonic() - began < 1.0 and ev.restarts == 1
    finally:
        ev.close()


def test_a_spare_worker_takes_over_at_a_crash_at_once():
    """With `spare` (the warm service's workers), a second process loads once the worker is up, and
    waits without a CUDA context; a candidate that faults then costs the next job no start."""
    ev = Evaluator(timeout=20, start_timeout=60, target=fake_workers.slow_start, spare=True)
    try:
        before = ev.run(job("a"))
        time.sleep(1.8)  # the spare loads meanwhile
        assert ev.run(job("exit")).status == "crashed"
        began = time.monotonic()
        after = ev.run(job("a"))
        assert after.status == "verified" and pid(after) != pid(before)
        assert time.monotonic() - began < 1.0 and ev.restarts == 1
        time.sleep(1.8)  # and another spare loads
        assert ev.run(job("segv")).status == "crashed"
        began = time.monotonic()
        assert ev.run(job("a")).status == "verified" and time.monotonic() - began < 1.0
    finally:
        ev.close()


def test_a_jobs_checks_share_the_gpu_and_its_timed_runs_wait_for_it_alone():
    """A sanitizer run (a share of the gate) no longer holds a job back: its checks run beside it,
    and only its timed runs wait, however long, for the GPU alone (the wait is not the job's
    time: no timeout for a job that waited)."""
    from fsr_lsp.evaluator.worker.gpu_gate import gate

    ev = Evaluator(timeout=1.0, start_timeout=60, target=fake_workers.gated, device_index=11)
    stages: list[str] = []
    done: dict = {}
    try:
        ev.start()
        gate(11).take_shared()  # a sanitizer run, say
        t = threading.Thread(target=lambda: done.update(r=ev.run(job("a"), on_stage=stages.append)))
        t.start()
        time.sleep(2.0)  # twice the job's limit
        assert stages == ["checking a"] and t.is_alive() and gate(11).state == (False, 1)
        gate(11).give_shared()
        t.join(10)
        assert done["r"].status == "verified" and stages == ["checking a", "timing a"]
        assert gate(11).state == (False, 0)  # nothing left held
    finally:
        ev.close()


def test_a_job_cancelled_while_it_waits_for_the_gpu_alone_ends_at_once():
    from fsr_lsp.evaluator.worker.gpu_gate import gate

    ev = Evaluator(timeout=20, start_timeout=60, target=fake_workers.gated, device_index=12)
    try:
        ev.start()
        gate(12).take_shared()
        threading.Timer(0.5, ev.cancel).start()
        began = time.monotonic()
        assert ev.run(job("a")).status == "cancelled" and time.monotonic() - began < 3
        gate(12).give_shared()
        assert gate(12).state == (False, 0)
        assert ev.run(job("b")).status == "verified"  # a new worker (that one was waiting mid-job)
    finally:
        ev.close()


def test_unavailable_gpu_is_one_clear_line():
    ev = Evaluator(target=fake_workers.unavailable)
    with pytest.raises(EvaluatorUnavailable, match="no CUDA GPU is visible"):
        ev.start()
    r = ev.run(job("a"))
    assert r.status == "unavailable" and r.message == "no CUDA GPU is visible"


def test_a_worker_dying_at_start_up():
    ev = Evaluator(target=fake_workers.dies_at_start, start_timeout=30)
    with pytest.raises(EvaluatorUnavailable, match="exit code 7"):
        ev.start()


def test_the_real_worker_without_torch_or_gpu_says_why():
    pytest.importorskip("fsr_lsp")
    ev = Evaluator(start_timeout=120)
    try:
        ev.start()
    except EvaluatorUnavailable as e:
        assert "\n" not in str(e) and any(w in str(e) for w in ("torch", "pycuda", "GPU", "driver"))
    else:
        pytest.skip("a GPU is available here")
    finally:
        ev.close()


def test_an_idle_worker_gives_back_what_it_keeps_once_until_its_next_job():
    """After its idle time with no job, the worker drops the original's kept runs (GPU memory the
    user's own programs may need while no search runs): once, and again only after another job."""
    from multiprocessing import Pipe

    from fsr_lsp.evaluator.records import EvalResult
    from fsr_lsp.evaluator.worker.serde import from_data, to_data
    from fsr_lsp.evaluator.worker.worker import serve

    parent, child = Pipe()
    released: list[float] = []
    handler = lambda job, report: EvalResult(kernel=job.kernel, status="verified", message="ok")  # noqa: E731
    t = threading.Thread(target=serve, args=(child, fake_workers.GPU, handler),
                         kwargs={"on_idle": lambda: released.append(time.monotonic()), "idle_s": 0.2}, daemon=True)
    t.start()
    assert parent.recv()[0] == "ready"
    time.sleep(0.7)
    assert len(released) == 1  # once, not every 0.2 s
    parent.send(("job", to_data(job("k"))))
    assert from_data(EvalResult, parent.recv()[1]).status == "verified"
    time.sleep(0.5)
    assert len(released) == 2
    parent.send(("stop",))
    t.join(5)
    assert not t.is_alive()


def test_a_cancelled_job_that_ends_within_the_grace_keeps_its_worker():
    """The warm service's workers: a search's deadline cancels the job under way; one that ends
    soon after leaves the worker (its CUDA context, the original's kept runs) to the next command.
    Its result is dropped all the same; one that does not end is killed as before."""
    ev = Evaluator(timeout=20, start_timeout=60, target=fake_workers.scripted_slow, cancel_grace=2.0)
    try:
        first = ev.run(job("a"))
        threading.Timer(0.1, ev.cancel).start()
        cancelled = ev.run(job("a"))  # half a second a job: it ends within the grace
        assert cancelled.status == "cancelled"
        after = ev.run(job("a"))
        assert after.status == "verified" and pid(after) == pid(first) and ev.restarts == 0
    finally:
        ev.close()
    hung = Evaluator(timeout=20, start_timeout=60, target=fake_workers.scripted, cancel_grace=0.5)
    try:
        before = hung.run(job("a"))
        threading.Timer(0.2, hung.cancel).start()
        started = time.monotonic()
        assert hung.run(job("hang"), timeout=30).status == "cancelled"
        assert time.monotonic() - started < 5
        assert pid(hung.run(job("a"))) != pid(before)  # killed at the grace's end, a new worker
    finally:
        hung.close()


def test_the_bandwidth_probe_waits_until_the_gpu_is_the_workers_alone(tmp_path, monkeypatch):
    """Sanitizer children may run beside a worker's start (they share the gate); the copy
    bandwidth, a yardstick for every later verdict, is measured only once they are done."""
    from fsr_lsp.evaluator.worker.gpu_gate import gate

    marker = tmp_path / "probed"
    monkeypatch.setenv("FSR_TEST_PROBE_MARKER", str(marker))
    ev = Evaluator(timeout=20, start_timeout=60, target=fake_workers.probed, device_index=7)
    started: list = []
    try:
        with gate(7).shared():
            thread = threading.Thread(target=lambda: started.append(ev.start()))
            thread.start()
            thread.join(timeout=8)  # the worker is up; its probe waits for the shared work to end
            assert thread.is_alive() and not marker.exists()
            released = time.time()
        thread.join(timeout=20)
        assert started and started[0].bandwidth_gbps == 1234.0
        assert float(marker.read_text().split()[0]) >= released
        assert ev.run(job("a")).status == "verified"  # a job's own start, under its gate, probes without waiting
    finally:
        ev.close()


def test_a_jobs_start_probes_under_the_jobs_own_gate(tmp_path, monkeypatch):
    monkeypatch.setenv("FSR_TEST_PROBE_MARKER", str(tmp_path / "probed"))
    ev = Evaluator(timeout=20, start_timeout=60, target=fake_workers.probed, device_index=8)
    try:
        result = ev.run(job("a"))
        assert result.status == "verified" and ev.gpu is not None and ev.gpu.bandwidth_gbps == 1234.0
    finally:
        ev.close()
