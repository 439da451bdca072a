"""compute-sanitizer's output, as each tool prints it, turned into checks."""

import subprocess

from fsr_lsp.evaluator import sanitizer


def fake_run(rc, out):
    def run(cmd, capture_output, text, timeout):
        return subprocess.CompletedProcess(cmd, rc, stdout=out, stderr="")
    return run


def check(monkeypatch, rc, out):
    monkeypatch.setattr(sanitizer.subprocess, "run", fake_run(rc, out))
    return sanitizer._run_tool("racecheck", ["x"], 10, "n=1")


def test_clean_racecheck_passes(monkeypatch):
    out = "========= COMPUTE-SANITIZER\n========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"
    assert check(monkeypatch, 0, out).status == "pass"


def test_racecheck_hazard_fails(monkeypatch):
    out = ("========= Error: Race reported between Write access at vadd(int, const float *, const float *, float *)+0x90\n"
           "=========     and Read access at vadd(int, const float *, const float *, float *)+0xb0 [4 hazards]\n"
           "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n")
    c = check(monkeypatch, 86, out)
    assert c.status == "fail" and "Race reported" in c.detail


def test_memcheck_error_fails(monkeypatch):
    out = ("========= Invalid __global__ read of size 4 bytes\n=========     at vadd(int, const float *, const float *, float *)+0x70\n"
           "=========     Address 0x7f0000000004 is out of bounds\n========= ERROR SUMMARY: 1 error\n")
    c = check(monkeypatch, 86, out)
    assert c.status == "fail" and "Invalid __global__ read" in c.detail


def test_clean_memcheck_passes_and_odd_exits_skip(monkeypatch):
    assert check(monkeypatch, 0, "========= ERROR SUMMARY: 0 errors\n").status == "pass"
    c = check(monkeypatch, 1, "Device not supported\n")
    assert c.status == "skip" and "Device not supported" in c.detail
    assert check(monkeypatch, 0, "no summary at all\n").status == "skip"
