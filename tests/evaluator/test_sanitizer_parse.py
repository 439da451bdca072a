"""compute-sanitizer's output, as each tool prints it, turned into checks that name the buffer."""

import pytest

from fsr_lsp.evaluator.sanitize import sanitizer

from ..support.sanitizer_outputs import CLEAN, MAP, X_AT_65537, invalid, job, use_tool


def test_clean_tools_pass_at_every_test_size(monkeypatch):
    use_tool(monkeypatch, lambda tool, original: CLEAN[tool])
    checks = sanitizer.sanitize(job())
    assert [(c.name, c.status) for c in checks] == [("sanitizer memcheck", "pass"), ("sanitizer racecheck", "pass")]
    assert checks[0].detail == "0 errors at n=1, n=1000, n=65537 (exact allocations); n=16777216 left out (over 64 MiB of buffers)"


def test_a_large_bench_size_is_left_out():
    import dataclasses

    from fsr_lsp.evaluator.records import Defences

    small = dataclasses.replace(job(), defences=Defences(layered_max_bytes=1 << 20))
    sizes = sanitizer.sanitized_sizes(small)
    assert [p.label for p in sizes] == ["n=1", "n=1000", "n=65537"]


def test_racecheck_hazard_fails(monkeypatch):
    out = ("========= Error: Race reported between Write access at vadd(int, const float *, const float *, float *)+0x90\n"
           "=========     and Read access at vadd(int, const float *, const float *, float *)+0xb0 [4 hazards]\n"
           "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n")
    use_tool(monkeypatch, lambda tool, original: (86, out) if tool == "racecheck" else CLEAN[tool])
    checks = {c.name: c for c in sanitizer.sanitize(job())}
    assert checks["sanitizer racecheck"].status == "fail" and "Race reported" in checks["sanitizer racecheck"].detail


def test_memcheck_names_the_buffer_the_size_and_how_far(monkeypatch):
    older = invalid("read", 4, 0x7F0000300000 - 4).replace("Access to", "Address")
    out = MAP + invalid("read", 16, X_AT_65537 + 262144) + invalid("read", 16, X_AT_65537 + 262144) \
        + older + "========= ERROR SUMMARY: 3 errors\n"
    calls = use_tool(monkeypatch, lambda tool, original: CLEAN[tool] if original else (86, out) if tool == "memcheck" else CLEAN[tool])
    checks = {c.name: c for c in sanitizer.sanitize(job())}
    memcheck = checks["sanitizer memcheck"]
    assert memcheck.status == "fail"
    assert memcheck.detail == ("reads up to 12 bytes past the end of `x` at n=65537; "
                               "reads up to 4 bytes before the start of `x` at n=1000")
    assert ("memcheck", True) in calls  # the original was asked too, and is clean: the candidate's fault


def test_a_failure_the_original_shares_is_the_specs(monkeypatch):
    out = MAP + invalid("write", 4, 0x7F0000500000 + 262148) + "========= ERROR SUMMARY: 1 error\n"
    use_tool(monkeypatch, lambda tool, original: (86, out) if tool == "memcheck" else CLEAN[tool])
    checks = {c.name: c for c in sanitizer.sanitize(job())}
    spec = checks["sanitizer memcheck (spec)"]
    assert spec.status == "fail" and "the original kernel fails memcheck too" in spec.detail
    assert "writes up to 4 bytes past the end of `y` at n=65537" in spec.detail
    assert "the spec's length for `y` is too small" in spec.detail


@pytest.mark.parametrize("rc, out, status", [
    (1, "Device not supported\n", "skip"),
    (0, "no summary at all\n", "skip"),
    (86, "========= Invalid __global__ read of size 4 bytes\n========= ERROR SUMMARY: 1 error\n", "fail"),
])
def test_odd_outputs(monkeypatch, rc, out, status):
    use_tool(monkeypatch, lambda tool, original: (rc, out) if tool == "memcheck" else CLEAN[tool])
    (memcheck, _) = sanitizer.sanitize(job())
    assert memcheck.status == status, memcheck.detail


def test_initcheck_names_the_output_read_before_any_write_and_only_the_original_runs(monkeypatch):
    def uninit(address):
        return ("========= Uninitialized __global__ memory read of size 4 bytes\n"
                "=========     at saxpy(int, float, const float *, float *)+0x60 in kernel.cu:22\n"
                "=========     by thread (3,0,0) in block (0,0,0)\n"
                f"=========     Address {address:#x}\n")

    out = MAP + uninit(0x7F0000500000 + 12) + uninit(0x7F0000500000 + 8) + "========= ERROR SUMMARY: 2 errors\n"
    calls = use_tool(monkeypatch, lambda tool, original: (86, out) if tool == "initcheck" else CLEAN["memcheck"])
    memcheck, initcheck = sanitizer.sanitize_original(job())
    assert {tool for tool, _ in calls} == {"memcheck", "initcheck"} and all(original for _, original in calls)
    assert memcheck.status == "pass"
    assert initcheck.status == "fail" and initcheck.argument == "y"
    assert initcheck.detail.startswith("reads `y` before anything wrote it at n=65537 (element 2 first")


def test_a_kernel_the_tool_cannot_check_is_skipped_saying_why_not_failed():
    from fsr_lsp.evaluator.sanitize.sanitizer_plan import ToolPlan

    out = ("========= COMPUTE-SANITIZER\n"
           "========= Warning: CUDA Dynamic Parallelism is not supported by the selected tool\n"
           "========= ERROR SUMMARY: 1 error\n")
    outcome = sanitizer._outcome("initcheck", (sanitizer.EXIT_ON_ERROR, out), ToolPlan("initcheck"), 60.0)
    assert outcome.check.status == "skip" and "Dynamic Parallelism is not supported" in outcome.check.detail


def test_a_kernel_that_prints_cannot_excuse_itself_with_the_tools_not_supported_line():
    """Its printf shares the tool's output: the line could be the kernel's own."""
    from fsr_lsp.evaluator.sanitize.sanitizer_plan import ToolPlan

    out = ("========= COMPUTE-SANITIZER\n"
           "========= Warning: CUDA Dynamic Parallelism is not supported by the selected tool\n"
           "========= ERROR SUMMARY: 1 error\n")
    outcome = sanitizer._outcome("racecheck", (sanitizer.EXIT_ON_ERROR, out), ToolPlan("racecheck"), 60.0, prints=True)
    assert outcome.check.status == "fail"
