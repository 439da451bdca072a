"""A round's leaders under the sanitizers in one child per tool: a pass only from a clean whole,
and a fault named by each leader's own runs."""

import dataclasses
import json
import threading

from fsr_lsp.evaluator.records import KernelBinary
from fsr_lsp.evaluator.sanitize import batch

from ..support.sanitizer_outputs import CLEAN, MAP, invalid, job, stand_in

RACE = (86, "========= Error: Race reported between Write access at saxpy+0x90\n"
            "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n")


def leader(name: str, shared: int | None = None) -> batch.Leader:
    binary = KernelBinary(cubin=name.encode(), entry="saxpy", compiler="nvcc", arch="sm_90a")
    return batch.Leader(dataclasses.replace(job(), candidate=binary), {}, shared)


def tools(monkeypatch, together, alone=None):
    """`together(tool, names)` answers a child given several jobs; `alone(tool, name, original)`
    one given one job (a leader's own run, or the original's). Returns the calls, in order."""
    calls = []

    def run_children(work, tool_path, device_index, timeout, cancel=None, prewarm=None):
        out = {}
        for tool, jobs in work:
            if isinstance(jobs, list):
                names = [j.candidate.cubin.decode() for j in jobs]
                calls.append((tool, names))
                out[tool] = together(tool, names)
            else:
                name = "original" if jobs.sanitize_original else jobs.candidate.cubin.decode()
                calls.append((tool, name))
                out[tool] = alone(tool, name, jobs.sanitize_original)
        return out

    stand_in(monkeypatch, run_children, (batch,))
    return calls


def test_clean_leaders_share_one_child_per_tool_and_each_passes_its_own_plan(monkeypatch):
    calls = tools(monkeypatch, lambda tool, names: CLEAN[tool])
    checks = batch.sanitize_many([leader("A"), leader("B"), leader("C")])
    assert calls == [("memcheck", ["A", "B", "C"]), ("racecheck", ["A", "B", "C"])]
    for own in checks:
        assert [(c.name, c.status) for c in own] == [("sanitizer memcheck", "pass"), ("sanitizer racecheck", "pass")]
        assert own[0].detail.startswith("0 errors at n=1, n=1000, n=65537 (exact allocations)")
        assert own[0].detail.endswith("; in one child with 2 other leaders")


def test_a_fault_in_the_shared_child_is_named_by_each_leaders_own_runs(monkeypatch):
    fault = (86, MAP + invalid("read", 4, 0x7F0000400000 + 262148) + "========= ERROR SUMMARY: 1 error\n")
    calls = tools(monkeypatch, lambda tool, names: fault if tool == "memcheck" else CLEAN[tool],
                  lambda tool, name, original: fault if name == "B" else CLEAN[tool])
    a, b = batch.sanitize_many([leader("A"), leader("B")])
    assert calls == [("memcheck", ["A", "B"]), ("racecheck", ["A", "B"]), ("memcheck", "A"), ("memcheck", "B"),
                     ("memcheck", "original")]
    assert [(c.name, c.status) for c in a] == [("sanitizer memcheck", "pass"), ("sanitizer racecheck", "pass")]
    assert "in one child" not in a[0].detail and "in one child" in a[1].detail  # memcheck its own; racecheck shared
    assert b[0].status == "fail" and "reads up to 4 bytes past the end of `x` at n=65537" in b[0].detail
    assert b[1].status == "pass"


def test_a_race_in_the_shared_child_fails_only_the_leader_whose_own_run_races(monkeypatch):
    calls = tools(monkeypatch, lambda tool, names: RACE if tool == "racecheck" else CLEAN[tool],
                  lambda tool, name, original: RACE if name == "A" else CLEAN[tool])
    a, b = batch.sanitize_many([leader("A"), leader("B")])
    assert ("racecheck", "A") in calls and ("racecheck", "B") in calls and ("memcheck", "A") not in calls
    assert a[1].status == "fail" and "Race reported" in a[1].detail and b[1].status == "pass"


def test_a_job_that_failed_or_a_child_out_of_time_says_nothing_of_who_and_each_runs_alone(monkeypatch):
    for shared in [(1, "fsr sanitize run 1/2: crashed: ...\n========= ERROR SUMMARY: 0 errors\n"),
                   (None, "did not finish within 600 s")]:
        calls = tools(monkeypatch, lambda tool, names: shared if tool == "memcheck" else CLEAN[tool],
                      lambda tool, name, original: CLEAN[tool])
        a, b = batch.sanitize_many([leader("A"), leader("B")])
        assert ("memcheck", "A") in calls and ("memcheck", "B") in calls
        assert a[0].status == b[0].status == "pass"


def test_a_tool_that_cannot_check_the_kernel_sends_each_leader_to_its_own_run(monkeypatch):
    unsupported = (0, "========= Error: Device not supported: this kernel is not supported by the selected tool\n"
                      "========= ERROR SUMMARY: 0 errors\n")
    calls = tools(monkeypatch, lambda tool, names: unsupported if tool == "racecheck" else CLEAN[tool],
                  lambda tool, name, original: unsupported if tool == "racecheck" else CLEAN[tool])
    a, b = batch.sanitize_many([leader("A"), leader("B")])
    assert ("racecheck", "A") in calls and a[1].status == b[1].status == "skip"


def test_a_cancel_skips_every_leader_and_runs_none_alone(monkeypatch):
    cancel = threading.Event()
    cancel.set()
    calls = tools(monkeypatch, lambda tool, names: (None, "cancelled"))
    checks = batch.sanitize_many([leader("A"), leader("B")], cancel=cancel)
    assert len(calls) == 2
    assert all(c.status == "skip" and c.detail == "cancelled" for own in checks for c in own)


def test_a_leader_that_needs_no_racecheck_is_left_out_of_its_child(monkeypatch):
    calls = tools(monkeypatch, lambda tool, names: CLEAN[tool])
    a, b = batch.sanitize_many([leader("A", shared=0), leader("B")])
    assert ("racecheck", ["B"]) in calls and ("memcheck", ["A", "B"]) in calls
    assert a[1].status == "skip" and b[1].status == "pass" and "in one child" not in b[1].detail


def test_one_leader_is_sanitized_as_a_single_candidate(monkeypatch):
    calls = tools(monkeypatch, None, lambda tool, name, original: CLEAN[tool])
    (only,) = batch.sanitize_many([leader("A")])
    assert calls == [("memcheck", "A"), ("racecheck", "A")] and [c.status for c in only] == ["pass", "pass"]


def test_the_child_runs_its_jobs_in_turn_under_one_context_and_stops_at_the_first_that_fails(monkeypatch, tmp_path,
                                                                                            capsys):
    from fsr_lsp.evaluator.records import EvalResult
    from fsr_lsp.evaluator.sanitize import plain_runs, sanitize_main
    from fsr_lsp.evaluator.worker.serde import to_json

    ran, contexts = [], []

    def run_plain(j, device_index=0):
        ran.append(j.candidate.cubin.decode())
        return EvalResult(kernel=j.kernel, status="crashed" if ran[-1] == "B" else "verified", message="m")

    monkeypatch.setattr(plain_runs, "run_plain", run_plain)
    monkeypatch.setattr(plain_runs, "why_not_plain", lambda j, through_torch=False: "")
    monkeypatch.setattr(sanitize_main, "open_context", lambda i: (contexts.append(i) or "ctx", ""))
    monkeypatch.setattr(sanitize_main, "release_context", lambda c: contexts.append(("released", c)))
    path = tmp_path / sanitize_main.BATCH_FILE
    path.write_text(to_json([leader(n).job for n in "AC"]))
    assert sanitize_main._run([str(path), "0"], False) == 0
    path.write_text(to_json([leader(n).job for n in "ABC"]))
    assert sanitize_main._run([str(path), "0"], False) == 1
    assert ran == ["A", "C", "A", "B"]  # C never runs after B's fault
    assert contexts == [0, ("released", "ctx")] * 2
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("fsr sanitize run")]
    assert lines[:2] == ["fsr sanitize run 1/2: verified: m", "fsr sanitize run 2/2: verified: m"]
    assert lines[-1] == "fsr sanitize run 2/3: crashed: m"
    assert json.loads(path.read_text())[0]["kernel"] == "saxpy"
