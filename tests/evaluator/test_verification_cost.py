"""What verification costs, and what stops it: the sanitizers' sizes chosen by their cost (each
with its reason), the tools side by side and loaded early, cancel, and the GPU never shared
between a timed run and anything else. GPU-free."""

import dataclasses
import threading
import time
from pathlib import Path

import pytest

from fsr_lsp.evaluator.sanitize import children, sanitizer
from fsr_lsp.evaluator.worker.gpu_gate import GpuGate
from fsr_lsp.evaluator.records import Defences
from fsr_lsp.evaluator.sanitize.sanitizer_plan import plan_tool

from ..support.sanitizer_outputs import CLEAN, job, use_tool

FAKE = str(Path(__file__).parent.parent / "support" / "fake_sanitizer.py")
NATIVE = {"n=1": 0.004, "n=1000": 0.004, "n=65537": 0.006, "n=16777216": 0.15}


def small_job():
    return dataclasses.replace(job(), defences=Defences(layered_max_bytes=1 << 30))


def test_racecheck_does_not_run_on_a_kernel_without_shared_memory():
    plan = plan_tool("racecheck", small_job(), NATIVE, uses_shared=False)
    assert plan.skipped and plan.describe() == \
        "not run: the kernel uses no shared memory (racecheck checks shared memory only)"


def test_the_test_sizes_always_run_and_the_bench_size_only_when_cheap():
    memcheck = plan_tool("memcheck", small_job(), NATIVE, uses_shared=True)
    assert [p.label for p in memcheck.sizes] == ["n=1", "n=1000", "n=65537", "n=16777216"]  # 0.15 ms x 1000: cheap
    racecheck = plan_tool("racecheck", small_job(), NATIVE, uses_shared=True)
    assert [p.label for p in racecheck.sizes] == ["n=1", "n=1000", "n=65537"]
    (label, why), = racecheck.left_out
    assert label == "n=16777216" and why.startswith("predicted 6 s (0.15 ms native x 40000 under racecheck)")
    assert "the test sizes carry the check" in racecheck.describe()


def test_a_test_size_that_would_take_minutes_is_left_out_and_says_why():
    slow = {**NATIVE, "n=65537": 5.0}
    plan = plan_tool("racecheck", small_job(), slow, uses_shared=True)
    assert "n=65537" in dict(plan.left_out) and "predicted 200 s" in dict(plan.left_out)["n=65537"]


def test_each_check_says_which_sizes_it_ran_at_and_why_the_others_not(monkeypatch):
    use_tool(monkeypatch, lambda tool, original: CLEAN[tool])
    memcheck, racecheck = sanitizer.sanitize(small_job(), native_ms=NATIVE, static_shared=1024)
    assert memcheck.detail == "0 errors at n=1, n=1000, n=65537, n=16777216 (exact allocations)"
    assert racecheck.detail.startswith("0 errors at n=1, n=1000, n=65537 (exact allocations); n=16777216 left out "
                                       "(predicted 6 s")
    memcheck, racecheck = sanitizer.sanitize(small_job(), native_ms=NATIVE, static_shared=0)
    assert racecheck.status == "skip" and "uses no shared memory" in racecheck.detail


@pytest.fixture
def fake_tool(monkeypatch, tmp_path):
    log = tmp_path / "runs.log"
    monkeypatch.setenv("FAKE_SANITIZER_LOG", str(log))
    monkeypatch.setattr(sanitizer, "find_sanitizer", lambda: FAKE)
    monkeypatch.setattr(children, "find_sanitizer", lambda: FAKE)  # where Prewarm looks
    return log


def test_the_tools_run_side_by_side(fake_tool, monkeypatch):
    monkeypatch.setenv("FAKE_SANITIZER_SECONDS", "1.5")
    started = time.monotonic()
    checks = sanitizer.sanitize(small_job(), native_ms=NATIVE, static_shared=1024)
    wall = time.monotonic() - started
    assert [c.status for c in checks] == ["pass", "pass"]
    assert wall < 2 * 1.5 + 1.0, wall  # not one after the other
    starts = [float(line.split()[1]) for line in fake_tool.read_text().splitlines()]
    assert len(starts) == 2 and abs(starts[0] - starts[1]) < 1.0


def test_prewarmed_children_wait_for_their_job_and_a_cancel_stops_them(fake_tool, monkeypatch):
    monkeypatch.setenv("FAKE_SANITIZER_SECONDS", "60")
    warm = sanitizer.Prewarm(sanitizer.TOOLS)
    time.sleep(0.5)
    assert warm.alive and not fake_tool.exists()  # loaded, waiting: nothing ran yet
    cancel = threading.Event()
    threading.Timer(1.0, cancel.set).start()
    started = time.monotonic()
    checks = sanitizer.sanitize(small_job(), native_ms=NATIVE, static_shared=1024, cancel=cancel, prewarm=warm)
    assert time.monotonic() - started < 5
    assert [(c.status, c.detail) for c in checks] == [("skip", "cancelled"), ("skip", "cancelled")]
    assert len(fake_tool.read_text().splitlines()) == 2  # the warm children ran the job


def test_warm_children_make_their_contexts_once_loaded_under_a_share_of_the_gpu(fake_tool, monkeypatch, tmp_path):
    """A warm child's CUDA context (0.3-0.8 s under the tools) is made before its job comes, while
    the parent holds a share of the GPU: a timed run waits for it, and no share is taken while the
    children still load (a timed run is not held back by their imports)."""
    from fsr_lsp.evaluator.worker.gpu_gate import gate

    contexts = tmp_path / "contexts.log"
    monkeypatch.setenv("FAKE_SANITIZER_CONTEXT_LOG", str(contexts))
    monkeypatch.setenv("FAKE_SANITIZER_CONTEXT_SECONDS", "1.0")
    shared = gate(7)
    with shared.exclusive():  # a timed run under way: no context is made meanwhile
        warm = sanitizer.Prewarm(sanitizer.TOOLS, device_index=7)
        time.sleep(1.0)
        assert not contexts.exists()
    deadline = time.monotonic() + 10
    while shared.state[1] == 0 and time.monotonic() < deadline:  # the share, taken once the run ended
        time.sleep(0.01)
    assert shared.state == (False, 1)
    began = time.monotonic()
    with shared.exclusive():  # the next timed run waits for both contexts
        waited = time.monotonic() - began
    assert sorted(line.split()[0] for line in contexts.read_text().splitlines()) == ["memcheck", "racecheck"]
    assert 0.3 < waited < 5, waited
    warm.close()


def test_a_closed_prewarm_gives_its_share_back():
    from fsr_lsp.evaluator.worker.gpu_gate import gate

    class Stuck:
        """A child that loaded but never makes its context."""

        proc = type("Proc", (), {"poll": staticmethod(lambda: None)})()

        def loaded(self):
            return True

        def ask_context(self):
            pass

        def context_made(self):
            return False

    warm = sanitizer.Prewarm((), device_index=8, contexts=False)
    thread = threading.Thread(target=warm._make_contexts, args=([Stuck()],))
    thread.start()
    time.sleep(0.3)
    assert gate(8).state == (False, 1)
    warm.close()
    thread.join(2)
    assert not thread.is_alive() and gate(8).state == (False, 0)


def test_a_waiting_child_makes_its_context_only_when_asked_and_keeps_it_for_its_job(tmp_path, monkeypatch):
    from fsr_lsp.evaluator.sanitize import sanitize_main

    made = []
    monkeypatch.setattr(sanitize_main, "open_context", lambda index: (made.append(index) or "ctx", ""))
    got = {}
    waiting = threading.Thread(target=lambda: got.update(answer=sanitize_main._wait_for_job(tmp_path, 3)))
    waiting.start()
    time.sleep(0.2)
    assert made == [] and not (tmp_path / "context-made").exists()
    (tmp_path / "context").touch()
    time.sleep(0.2)
    assert made == [3] and (tmp_path / "context-made").read_text() == ""
    (tmp_path / "go").touch()
    waiting.join(2)
    assert got["answer"] == (tmp_path / "job.json", "ctx") and made == [3]


def test_a_timed_run_never_shares_the_gpu():
    gate = GpuGate()
    seen = []

    def timed():
        with gate.exclusive():
            seen.append(("timed", gate.state))
            time.sleep(0.2)

    def sanitizer_run():
        with gate.shared():
            seen.append(("shared", gate.state))
            time.sleep(0.2)

    threads = [threading.Thread(target=f) for f in (sanitizer_run, timed, sanitizer_run, timed, sanitizer_run)]
    for t in threads:
        t.start()
        time.sleep(0.02)
    for t in threads:
        t.join()
    for who, (exclusive, sharing) in seen:
        if who == "timed":
            assert exclusive and sharing == 0
        else:
            assert not exclusive and sharing >= 1


def test_a_kernel_that_calls_printf_leaves_the_bench_size_to_the_gpu_checks():
    """Device printf under a tool costs per call what the native time does not show."""
    from fsr_lsp.evaluator.sanitize.sanitizer_plan import calls_printf

    plain = small_job()
    printing = dataclasses.replace(plain, original=dataclasses.replace(plain.original, cubin=b"\x7fELF...vprintf..."))
    assert not calls_printf(plain.original) and calls_printf(printing.original)
    memcheck = plan_tool("memcheck", printing, NATIVE, uses_shared=True, prints=True)
    assert [p.label for p in memcheck.sizes] == ["n=1", "n=1000", "n=65537"]
    assert "calls printf" in dict(memcheck.left_out)["n=16777216"]


def test_the_contexts_wait_for_the_gpu_to_be_idle_a_moment_not_just_for_a_share():
    """Shared work under way (a round's checks): a share could be had, but a timed run may come
    next; the contexts wait until nothing has held the GPU for CONTEXT_IDLE_S."""
    gate = GpuGate()
    taken = []
    gate.take_shared()  # a round's checks
    thread = threading.Thread(target=lambda: taken.append((gate.take_shared_when_idle(0.2, lambda: False),
                                                           time.monotonic())))
    thread.start()
    time.sleep(0.4)
    assert taken == []
    released = time.monotonic()
    gate.give_shared()
    thread.join(2)
    assert taken and taken[0][0] and 0.2 <= taken[0][1] - released < 1.0
    stopped = gate.take_shared_when_idle(10.0, lambda: True)
    assert stopped is False and gate.state == (False, 1)
