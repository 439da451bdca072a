"""The sanitizer child without torch (evaluator/sanitize/plain_runs.py) on a real GPU: a clean
kernel passes memcheck and an over-read is named, an `out` buffer the original reads is
initcheck's, a cooperative kernel runs through it, a texture job still goes through torch, and
the child without torch starts faster under the tool than the one with it."""

from __future__ import annotations

import dataclasses
import io
import re
import time
from pathlib import Path

import pytest

from fsr_lsp.evaluator import prepare
from fsr_lsp.evaluator.records import EvalJob
from fsr_lsp.evaluator.sanitize import plain_runs
from fsr_lsp.evaluator.sanitize.sanitizer import Prewarm, find_sanitizer, sanitize, sanitize_original, sanitized_sizes

from .conftest import QUICK, kernel_text
from .test_textures_gpu import GATHER

pytestmark = pytest.mark.gpu
needs_sanitizer = pytest.mark.skipif(find_sanitizer() is None, reason="compute-sanitizer not installed")
VADD = kernel_text("vadd.cu")
BUFFER = re.compile(r"^fsr-buffer (\S+) (\S+) (0x[0-9a-f]+) (\d+)$", re.M)


def job_of(evaluator, source: str, kernel: str, candidate: str | None) -> EvalJob:
    gpu = evaluator.start()
    prepared = prepare(source, kernel, candidate, gpu.arch, QUICK)
    assert prepared.job is not None, prepared.result.message
    return prepared.job


def child_logs(folder: Path, tool: str, who: str = "candidate") -> str:
    return "".join(p.read_text() for p in folder.glob(f"{tool}-{who}-*.log"))


def test_a_plain_run_allocates_exactly_and_runs_clean_outside_the_tool(evaluator):
    pytest.importorskip("pycuda.driver")
    job = job_of(evaluator, VADD, "vadd", kernel_text("good_restrict.cu"))
    job = dataclasses.replace(job, sizes=sanitized_sizes(job), mode="sanitize", seeds_per_size=1)
    out = io.StringIO()
    result = plain_runs.run_plain(job, evaluator.device_index, out=out)
    assert (result.status, result.message) == ("verified", plain_runs.MESSAGE)
    buffers = [(m.group(1), m.group(2), int(m.group(3), 16), int(m.group(4))) for m in BUFFER.finditer(out.getvalue())]
    assert len(buffers) == 3 * len(job.sizes)
    for plan in job.sizes:
        mine = {name: nbytes for name, size, _, nbytes in buffers if size == plan.label.replace(" ", "")}
        assert mine == {a.name: a.nbytes for a in plan.args if a.kind == "buffer"}  # exact lengths
    spans = sorted((address, address + nbytes) for _, _, address, nbytes in buffers)
    assert all(start % 256 == 0 for start, _ in spans)
    assert all(end <= after for (_, end), (after, _) in zip(spans, spans[1:]))  # each its own allocation


@needs_sanitizer
def test_memcheck_passes_a_clean_kernel_and_names_an_over_read_without_torch(evaluator, tmp_path, monkeypatch):
    monkeypatch.setenv("FSR_SANITIZER_LOG", str(tmp_path))
    clean = job_of(evaluator, VADD, "vadd", kernel_text("good_restrict.cu"))
    (memcheck,) = sanitize(clean, evaluator.device_index, tools=("memcheck",))
    assert memcheck.status == "pass", memcheck.detail
    log = child_logs(tmp_path, "memcheck")
    assert f"fsr sanitize run: verified: {plain_runs.MESSAGE}" in log and "through torch" not in log, log[-2000:]
    over = job_of(evaluator, VADD, "vadd", kernel_text("oob_read.cu"))
    (memcheck,) = sanitize(over, evaluator.device_index, tools=("memcheck",))
    assert memcheck.status == "fail", memcheck.detail
    assert "reads up to 4 bytes past the end of `a` at n=1" in memcheck.detail, memcheck.detail


@needs_sanitizer
def test_initcheck_sees_the_original_read_its_unwritten_output(evaluator):
    body = "    if (i < n) c[i] = a[i] + b[i];"
    assert body in VADD
    reads_c = VADD.replace(body, "    if (i < n) c[i] = c[i] * 0.0f + a[i] + b[i];")
    job = job_of(evaluator, reads_c, "vadd", None)
    memcheck, initcheck = sanitize_original(job, evaluator.device_index, ("memcheck", "initcheck"))
    assert memcheck.status == "pass", memcheck.detail
    assert initcheck.status == "fail" and "reads `c` before anything wrote it" in initcheck.detail, initcheck.detail
    clean = job_of(evaluator, VADD, "vadd", None)
    assert [c.status for c in sanitize_original(clean, evaluator.device_index, ("initcheck",))] == ["pass"]


@needs_sanitizer
def test_a_cooperative_kernel_runs_without_torch_and_a_texture_job_through_torch(evaluator, tmp_path, monkeypatch):
    monkeypatch.setenv("FSR_SANITIZER_LOG", str(tmp_path))
    grid_sync = job_of(evaluator, kernel_text("grid_sync.cu"), "grid_sum", None)
    assert grid_sync.original.cooperative
    (memcheck,) = sanitize_original(grid_sync, evaluator.device_index, ("memcheck",))
    assert memcheck.status == "pass", memcheck.detail
    log = child_logs(tmp_path, "memcheck", "original")
    assert f"fsr sanitize run: verified: {plain_runs.MESSAGE}" in log, log[-2000:]
    for old in tmp_path.glob("*.log"):
        old.unlink()
    texture = job_of(evaluator, GATHER, "sum4", None)
    (memcheck,) = sanitize_original(texture, evaluator.device_index, ("memcheck",))
    assert memcheck.status == "pass", memcheck.detail
    log = child_logs(tmp_path, "memcheck", "original")
    assert "fsr sanitize run through torch: `x` is a texture" in log, log[-2000:]
    assert "fsr sanitize run: verified:" in log, log[-2000:]


@needs_sanitizer
def test_the_child_without_torch_finishes_sooner_once_handed_its_job(evaluator):
    """Prewarmed children (loaded, waiting) handed the same memcheck job: the seconds from the
    job to the verdict, with torch (`through_torch`, the child as it was) and without."""
    job = job_of(evaluator, VADD, "vadd", kernel_text("good_restrict.cu"))
    seconds = {}
    for name, through_torch in (("torch", True), ("plain", False)):
        warm = Prewarm(("memcheck",), evaluator.device_index, through_torch=through_torch)
        time.sleep(12.0)  # long enough for torch's import: only the run after the job is timed
        started = time.perf_counter()
        (memcheck,) = sanitize(job, evaluator.device_index, tools=("memcheck",), prewarm=warm)
        seconds[name] = time.perf_counter() - started
        assert memcheck.status == "pass", (name, memcheck.detail)
    print(f"\n[sanitizer child] memcheck after the job: torch {seconds['torch']:.2f} s, "
          f"pycuda alone {seconds['plain']:.2f} s")
    assert seconds["plain"] < seconds["torch"], seconds


@needs_sanitizer
def test_leaders_share_one_child_per_tool_and_a_fault_among_them_names_its_leader(evaluator, tmp_path, monkeypatch):
    from fsr_lsp.evaluator.sanitize.batch import Leader, sanitize_many

    monkeypatch.setenv("FSR_SANITIZER_LOG", str(tmp_path))
    clean = [Leader(job_of(evaluator, VADD, "vadd", kernel_text(name)), {}) for name in ("good_restrict.cu", "good_launch.cu")]
    both = sanitize_many(clean, evaluator.device_index)
    assert all(c.status == "pass" and "in one child with 1 other leader" in c.detail for own in both for c in own), both
    log = child_logs(tmp_path, "memcheck")
    assert f"fsr sanitize run 1/2: verified: {plain_runs.MESSAGE}" in log and "fsr sanitize run 2/2: verified" in log
    over = Leader(job_of(evaluator, VADD, "vadd", kernel_text("oob_read.cu")), {})
    good, bad = sanitize_many([clean[0], over], evaluator.device_index, tools=("memcheck",))
    assert good[0].status == "pass" and "in one child" not in good[0].detail, good  # judged again alone
    assert bad[0].status == "fail" and "reads up to 4 bytes past the end of `a` at n=1" in bad[0].detail, bad
