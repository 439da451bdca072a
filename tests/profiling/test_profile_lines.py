"""The profiler in the editor, without a GPU: what ncu 2025.3 exported on an H200 for our own
flawed kernels (tests/data/ncu/, made by bench/record_ncu.sh) read into per-line counters,
rules and findings on the right lines; the ncu run's command and its failures (a fake ncu);
and `fsr profile` end to end with the recorded profiler standing in for the GPU."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from fsr_lsp.evaluator.profile.ncu_source import UNREADABLE, LineReport, parse_rules, parse_source_page
from fsr_lsp.evaluator.profile.profile import parse_ncu_csv
from fsr_lsp.profiling.findings import read_profile

from ..support.recorded_profiler import DATA, INLINED, KERNELS, raw_page, recorded
from ..support.doubles import command

ROOT = Path(__file__).resolve().parent.parent.parent


def lines_of(kernel: str) -> dict[int, object]:
    return {c.line: c for c in parse_source_page((DATA / f"source_both_{kernel}.csv").read_text())}


def line_number(text: str) -> int:
    """The line of profile_kernels.cu holding `text` (1-based), so no test hard-codes a number."""
    return next(i for i, line in enumerate(KERNELS.read_text().splitlines(), 1) if text in line)


def test_the_source_page_gives_each_cuda_line_its_counters():
    strided = lines_of("copy_strided")
    access = strided[line_number("out[i] = in[j] * 2.0f;")]
    assert access.file.endswith("profile_kernels.cu") and access.text.startswith("out[i] = in[j]")
    assert (access.global_sectors, access.global_sectors_ideal, access.global_sectors_excessive) == (4718592, 1048576, 3670016)
    assert access.stalls["long_sb"] == 2146 and access.samples == 2198 and access.spaces == ("Global",)
    assert "selected" not in access.stalls  # the issuing warp is not a stall
    conflicts = lines_of("transpose_conflicts")[line_number("= tile[threadIdx.x][threadIdx.y];")]
    assert conflicts.shared_conflict_ways == 32 and conflicts.shared_wavefronts_excessive == 4063232
    assert conflicts.spaces == ("Global", "Shared")
    branch = lines_of("divergent")[line_number("if (threadIdx.x % 2 == 0)")]
    assert branch.divergent_branches == 131072


def test_columns_a_kernel_lacks_read_as_zero():
    """ncu leaves out columns a kernel has nothing for (no branches diverge: no such column)."""
    header = (DATA / "source_both_copy_coalesced.csv").read_text().splitlines()[2]
    assert "Divergent Branches" not in header
    assert all(c.divergent_branches == 0 and c.shared_wavefronts == 0 for c in lines_of("copy_coalesced").values())


def test_rules_are_read_per_kernel_with_their_estimated_gains():
    rules = {r.name: r for r in parse_rules((DATA / "details.csv").read_text(), "copy_strided")}
    uncoalesced = rules["UncoalescedGlobalAccess"]
    assert uncoalesced.kind == "OPT" and uncoalesced.speedup_pct == pytest.approx(73.83)
    assert "3670016 excessive sectors" in uncoalesced.description
    shared = {r.name: r for r in parse_rules((DATA / "details.csv").read_text(), "transpose_conflicts")}
    assert shared["UncoalescedSharedAccess"].speedup_pct == pytest.approx(85.7)
    assert "UncoalescedGlobalAccess" not in shared
    first = parse_rules((DATA / "details.csv").read_text())  # the first kernel of the export
    assert first and "UncoalescedGlobalAccess" not in {r.name for r in first}


def test_a_duration_is_read_in_the_unit_ncu_chose():
    facts = parse_ncu_csv(raw_page("copy_strided"))
    assert facts is not None and facts.kernel_ms == pytest.approx(0.03312, rel=0.01)  # "33.12" in "us"


def test_each_flaw_is_found_on_its_own_line_and_nowhere_else():
    cases = {"copy_strided": ("uncoalesced", "out[i] = in[j] * 2.0f;"),
             "transpose_conflicts": ("bank_conflicts", "= tile[threadIdx.x][threadIdx.y];"),
             "divergent": ("divergence", "if (threadIdx.x % 2 == 0)")}
    for kernel, (kind, text) in cases.items():
        p = recorded(kernel)
        profile = read_profile(kernel, p.facts, p.lines, "NVIDIA H200")
        flagged = [f.line for f in profile.findings if f.kind == kind]
        assert flagged == [line_number(text)], (kernel, profile.findings)
    clean = recorded("copy_coalesced")
    assert not [f for f in read_profile("copy_coalesced", clean.facts, clean.lines).findings if f.severe]


def test_findings_carry_the_numbers_and_ncus_estimate():
    p = recorded("copy_strided")
    profile = read_profile("copy_strided", p.facts, p.lines, "NVIDIA H200")
    f = next(f for f in profile.findings if f.kind == "uncoalesced")
    assert "4,718,592 L2 sectors where 1,048,576 would do (4.5x" in f.message
    assert f.gain_pct == pytest.approx(73.83) and f.rule == "UncoalescedGlobalAccess" and f.severe
    hot = next(f for f in profile.findings if f.kind == "hot")
    assert hot.line == f.line and "waiting for global or local memory" in hot.message
    assert profile.summary.startswith("copy_strided at n=4194304 on NVIDIA H200: 0.03312 ms")
    assert "achieved occupancy 82%" in profile.summary


def test_busy_lines_are_not_findings():
    """A line whose samples are mostly 'not selected' (warps ready, another issued) is busy, not stuck."""
    p = recorded("divergent")
    signature = line_number("__global__ void divergent(")
    assert lines_of("divergent")[signature].stalls["not_selected"] > 500
    assert signature not in [f.line for f in read_profile("divergent", p.facts, p.lines).findings]


def test_a_header_lines_counters_stay_off_the_document():
    p = recorded("copy_strided")
    extra = parse_source_page((DATA / "source_both_copy_strided.csv").read_text().replace(
        "/work/main/tests/data/ncu/profile_kernels.cu", "/usr/include/helpers.cuh"))
    report = LineReport(p.lines.lines + extra, p.lines.rules)
    assert set(read_profile("copy_strided", p.facts, report).lines) == {c.line for c in p.lines.lines}


# ------------------------------------------------------------ code outside the file

# probe() of inlined_code.cu as the evaluator built it (ncu on an H100): samples by line of the
# kernel's file, and the one header line with samples (helper.cuh's loop, inlined at line 18)
PROBE_OWN = {13: 13, 15: 19, 16: 10, 17: 224, 18: 0, 19: 0, 20: 44, 22: 39}
PROBE_OUTSIDE = 12


def test_an_evaluator_builds_lines_are_numbered_without_text_and_headers_come_apart():
    """ncu cannot open the evaluator's scratch kernel.cu: its lines have a number and no text;
    cuda_fp16.hpp, sm_32_intrinsics.hpp and helper.cuh come in sections of their own."""
    assert UNREADABLE in (DATA / "source_both_probe.csv").read_text()
    lines = parse_source_page((DATA / "source_both_probe.csv").read_text())
    own = [c for c in lines if c.file.endswith("/kernel.cu")]
    assert {c.line: c.samples for c in own} == PROBE_OWN and all(c.text == "" for c in own)
    headers = {c.file.rsplit("/", 1)[1] for c in lines if c not in own}
    assert headers == {"cuda_fp16.hpp", "sm_32_intrinsics.hpp", "helper.cuh"}
    assert sum(c.samples for c in lines if c not in own) == PROBE_OUTSIDE


def test_the_kernels_file_is_the_evaluators_kernel_cu_wherever_ncu_puts_it():
    lines = parse_source_page((DATA / "source_both_probe.csv").read_text())
    headers_first = [c for c in lines if not c.file.endswith("/kernel.cu")] + [c for c in lines if c.file.endswith("/kernel.cu")]
    assert LineReport(headers_first).main_file.endswith("/kernel.cu")
    assert LineReport(parse_source_page((DATA / "source_both_divergent.csv").read_text())).main_file == str(
        Path("/work/main/tests/data/ncu/profile_kernels.cu"))  # a recording of a direct build: its first file


def test_only_the_files_own_lines_are_listed_and_the_rest_is_one_share():
    p = recorded("probe")
    profile = read_profile("probe", p.facts, p.lines, "NVIDIA H100", document=INLINED.read_text())
    assert {n: c.samples for n, c in profile.lines.items()} == PROBE_OWN  # no header line among them
    doc = INLINED.read_text().splitlines()
    assert all(c.text == doc[n - 1].strip() for n, c in profile.lines.items())  # the document's words
    assert profile.lines[17].text == "float v = __ldg(&x[i]);"
    total = sum(PROBE_OWN.values()) + PROBE_OUTSIDE
    assert (profile.samples, profile.outside_samples) == (total, PROBE_OUTSIDE)
    assert profile.outside == f"{100 * PROBE_OUTSIDE / total:.0f}% of the samples in code outside this file" \
        == "3% of the samples in code outside this file"
    hot = next(f for f in profile.findings if f.kind == "hot")  # shares are of every sample, outside ones too
    assert hot.line == 17 and hot.message.startswith(f"{100 * 224 / total:.0f}% of the kernel's warp stall samples")


def test_without_samples_outside_nothing_is_said_of_them():
    p = recorded("copy_strided")
    assert read_profile("copy_strided", p.facts, p.lines).outside == ""


def test_a_placed_specs_lines_map_back_to_the_document():
    from fsr_lsp.drafting.placement import place_spec
    from fsr_lsp.workflows.profile_kernel import _document_line

    text = "#include <x.h>\n\n__global__ void k(float* a)\n{\n    a[0] = 1;\n}\n"
    placed = place_spec(text, "k", "/* @fsr\nbench = { n = 1 }\n*/\n")  # three lines above line 3
    line_of = _document_line(text, placed)
    assert placed.text.splitlines()[5] == "__global__ void k(float* a)"
    assert [line_of(n) for n in range(1, 10)] == [1, 2, None, None, None, 3, 4, 5, 6]
    with_spec = placed.text  # the kernel at line 6 under a block of 3 lines ...
    replaced = place_spec(with_spec, "k", "/* @fsr\nbench = { n = 1 }\ntests = [ { n = 2 } ]\nblock = 32\n*/")
    line_of = _document_line(with_spec, replaced)  # ... replaced by one of 5
    assert replaced.text.splitlines()[7] == "__global__ void k(float* a)"
    assert [line_of(n) for n in range(1, 11)] == [1, 2, None, None, None, None, None, 6, 7, 8]


# ------------------------------------------------------------ the ncu run (a fake ncu)

FAKE_NCU = """#!/bin/sh
echo "$@" >> "{log}"
case " $* " in
  *" -i "*)
    case " $* " in
      *" --page source "*) cat "{data}/source_both_copy_strided.csv" ;;
      *" --page details "*) cat "{data}/details.csv" ;;
      *" --page raw "*) cat "{raw}" ;;
    esac ;;
  *) {profile_run} ;;
esac
"""


def fake_ncu(tmp_path: Path, monkeypatch, profile_run: str) -> Path:
    raw = tmp_path / "raw.csv"
    raw.write_text(raw_page("copy_strided"))
    script = tmp_path / "ncu"
    log = tmp_path / "ncu.log"
    script.write_text(FAKE_NCU.format(log=log, data=DATA, raw=raw, profile_run=profile_run))
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr("fsr_lsp.evaluator.profile.profile_lines.find_ncu", lambda: str(script))
    return log


@pytest.fixture
def job():
    from fsr_lsp.evaluator import EvalOptions
    from fsr_lsp.evaluator.job.prepare import prepare

    from ..support.search_helpers import example

    prepared = prepare(example("saxpy.cu"), "saxpy", None, "sm_90", EvalOptions(compiler="nvcc"))
    assert prepared.job is not None, prepared.result
    return prepared.job


@pytest.mark.nvcc
def test_the_profile_runs_ncu_with_source_counters_and_reads_every_page(tmp_path, monkeypatch, job):
    from fsr_lsp.evaluator.profile.profile_lines import profile_lines

    # the profiling run writes the report where -o says
    log = fake_ncu(tmp_path, monkeypatch, 'while [ "$1" != "-o" ]; do shift; done; touch "$2.ncu-rep"')
    result = profile_lines(job)
    assert result.lines is not None, result.note
    run = log.read_text().splitlines()[0]
    assert "--import-source yes" in run and "--section SourceCounters" in run and "--launch-count 1" in run
    assert f"--kernel-name {job.original.entry}" in run and "fsr_lsp.evaluator.sanitize.sanitize_main" in run
    assert result.facts is not None and result.facts.kernel_ms == pytest.approx(0.03312, rel=0.01)
    assert any(c.global_sectors_excessive for c in result.lines.lines) and result.lines.rules
    assert result.lines.size == next(p.label for p in job.sizes if p.role == "bench")


@pytest.mark.nvcc
def test_counters_the_user_may_not_read_are_said_plainly(tmp_path, monkeypatch, job):
    from fsr_lsp.evaluator.profile.profile_lines import DENIED_MESSAGE, profile_lines

    fake_ncu(tmp_path, monkeypatch, 'echo "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access '
                                    'NVIDIA GPU Performance Counters on the target device 0."; exit 1')
    result = profile_lines(job)
    assert result.lines is None and result.note == DENIED_MESSAGE


@pytest.mark.nvcc
def test_an_ncu_that_writes_no_report_is_said_with_its_last_words(tmp_path, monkeypatch, job):
    from fsr_lsp.evaluator.profile.profile_lines import profile_lines

    fake_ncu(tmp_path, monkeypatch, 'echo "==ERROR== Failed to prepare kernel for profiling"; exit 1')
    result = profile_lines(job)
    assert result.lines is None and "Failed to prepare kernel for profiling" in result.note


def test_without_ncu_the_line_profile_says_how_to_get_it(monkeypatch):
    from fsr_lsp.evaluator.profile.profile_lines import profile_lines

    monkeypatch.setattr("fsr_lsp.evaluator.profile.profile_lines.find_ncu", lambda: None)
    result = profile_lines(job=None)  # the job is never looked at
    assert result.lines is None and "ncu" in result.note and "not on PATH" in result.note


# ------------------------------------------------------------ fsr profile

def fsr_profile(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "FSR_LSP_PROFILER": "tests.support.recorded_profiler:profile", "FSR_LSP_PROVER": "tests.support.scripted_prover:prove",
           "PYTHONPATH": str(ROOT)}
    return subprocess.run([*command("fsr"), "profile", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_fsr_profile_prints_the_findings_line_by_line(tmp_path):
    (tmp_path / ".git").mkdir()
    kernels = tmp_path / "profile_kernels.cu"
    kernels.write_text(KERNELS.read_text())
    r = fsr_profile(str(kernels), "-k", "transpose_conflicts", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    line = line_number("= tile[threadIdx.x][threadIdx.y];")
    assert f"{kernels}:{line}: warning: shared-memory bank conflicts: up to 32-way" in r.stdout
    assert "ncu estimates up to 86% of the kernel's time could be saved" in r.stdout
    assert r.stdout.startswith("transpose_conflicts at n=4194304")
    assert "drafted one from the launch" in r.stderr  # no @fsr block: the launch in main() gave one
    data = json.loads(fsr_profile(str(kernels), "-k", "transpose_conflicts", "--json", cwd=tmp_path).stdout)
    assert [f["line"] for f in data["findings"] if f["kind"] == "bank_conflicts"] == [line]
    assert data["facts"]["occupancy_pct"] > 0 and any(c["line"] == line for c in data["lines"])


def test_fsr_profile_lists_the_files_own_lines_and_sums_the_rest_in_one(tmp_path):
    """Never "<Unable to open source file>" nor a header's line among the file's lines: the
    document's own text, and one line for the samples elsewhere."""
    (tmp_path / ".git").mkdir()
    kernels = tmp_path / INLINED.name
    kernels.write_text(INLINED.read_text())
    (tmp_path / "helper.cuh").write_text((DATA / "helper.cuh").read_text())
    r = fsr_profile(str(kernels), "-k", "probe", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert UNREADABLE not in r.stdout and "helper.cuh" not in r.stdout
    assert f"{kernels}:17: note: 62% of the kernel's warp stall samples are at this line" in r.stdout
    assert "\n    float v = __ldg(&x[i]);\n" in r.stdout
    assert r.stdout.rstrip().endswith("\n3% of the samples in code outside this file")
    data = json.loads(fsr_profile(str(kernels), "-k", "probe", "--json", cwd=tmp_path).stdout)
    assert {c["line"]: c["samples"] for c in data["lines"]} == PROBE_OWN
    assert all(c["text"] and c["text"] != UNREADABLE for c in data["lines"] if c["line"] != 22) and UNREADABLE not in json.dumps(data)
    assert (data["outside_samples"], data["samples"]) == (PROBE_OUTSIDE, sum(PROBE_OWN.values()) + PROBE_OUTSIDE)
    assert data["outside"] == "3% of the samples in code outside this file"


def test_fsr_profile_of_a_kernel_nothing_launches_asks_for_a_spec(tmp_path):
    (tmp_path / ".git").mkdir()
    lone = tmp_path / "lone.cu"
    lone.write_text("__global__ void lone(float* out, const float* in)\n{\n"  # no size to infer a spec from
                    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    out[i] = in[i];\n}\n")
    r = fsr_profile(str(lone), "-k", "lone", cwd=tmp_path)
    assert r.returncode == 3 and "no @fsr spec" in r.stderr and "fsr capture" in r.stderr
    assert "Traceback" not in r.stderr


def test_a_finding_to_address_reaches_the_models_prompt_from_round_one():
    import dataclasses

    from fsr_lsp.search.prompting import propose_prompt

    from ..support.search_helpers import context, example

    ctx = context(example("saxpy.cu"), "saxpy")
    assert "asks you to address" not in propose_prompt(ctx, 0, 4)
    focused = dataclasses.replace(ctx, focus="line 18: uncoalesced global access: 4.5x the ideal sectors")
    assert "asks you to address this finding first: line 18: uncoalesced global access" in propose_prompt(focused, 0, 4)


def test_optimize_carries_the_finding_into_the_search_config(monkeypatch, tmp_path):
    from fsr_lsp.search import SearchOutcome
    from fsr_lsp.settings import Settings
    from fsr_lsp.workflows import optimize

    seen = {}

    def search(text, path, kernel, config, *rest, **kw):
        seen["focus"] = config.focus
        return SearchOutcome("no_win", "scripted")

    monkeypatch.setattr(optimize, "run_search", search)
    monkeypatch.setattr(optimize.Optimizer, "_bench", lambda self, job: None)
    run = optimize.KernelJob("", tmp_path / "k.cu", "k", tmp_path, Settings(), focus="line 3: divergent branch")
    optimize.Optimizer().run(run, lambda p: None)
    assert seen == {"focus": "line 3: divergent branch"}


def test_a_line_profile_travels_from_a_cluster_worker_intact():
    """The Ray backend sends the result record as plain data; nested counters must survive."""
    from fsr_lsp.evaluator.profile.profile import Profiled
    from fsr_lsp.evaluator.worker.serde import from_data, to_data

    p = recorded("transpose_conflicts")
    assert from_data(Profiled, to_data(p)) == p


@pytest.mark.nvcc
def test_a_cancel_kills_ncu_and_the_kernels_process(tmp_path, monkeypatch, job):
    import threading
    import time

    from fsr_lsp.evaluator.profile.profile_lines import profile_lines

    marker = tmp_path / "still-running"
    # a child of ncu (as the kernel's process is) that shows it is alive every 0.1 s
    fake_ncu(tmp_path, monkeypatch, f'(while true; do touch "{marker}"; sleep 0.1; done) & sleep 30')
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    started = time.monotonic()
    result = profile_lines(job, cancel=cancel)
    assert result.lines is None and result.note == "cancelled" and time.monotonic() - started < 10
    assert marker.exists()  # it did run
    marker.unlink()
    time.sleep(1)
    assert not marker.exists()  # and is gone with ncu
