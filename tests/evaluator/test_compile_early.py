"""Compiling overlaps the GPU worker's start (issue 43 item 4): the arch comes from nvidia-smi
in a fraction of a second, the worker's own answer still decides, and a wrong guess only costs
the compile again."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from fsr_lsp.evaluator import api
from fsr_lsp.evaluator.job.prepare import Prepared
from fsr_lsp.evaluator.records import EvalResult, GpuInfo
from fsr_lsp.evaluator.support import predicted_arch


def fake_smi(tmp_path: Path, monkeypatch, answer: str) -> Path:
    """An nvidia-smi first on PATH that prints `answer` and records its arguments."""
    tool = tmp_path / "bin" / "nvidia-smi"
    tool.parent.mkdir(exist_ok=True)
    tool.write_text(f"#!/bin/sh\necho \"$@\" > {tmp_path}/args\nprintf '{answer}\\n'\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tool.parent}:/usr/bin:/bin")
    return tmp_path / "args"


@pytest.mark.parametrize("answer, arch", [("9.0", "sm_90a"), ("8.6", "sm_86"), ("12.0", "sm_120a"),
                                          ("No devices were found", None), ("", None)])
def test_the_arch_nvidia_smi_reports(tmp_path, monkeypatch, answer, arch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    args = fake_smi(tmp_path, monkeypatch, answer)
    assert predicted_arch(1) == arch
    assert args.read_text().split()[-2:] == ["-i", "1"]


def test_a_visible_devices_list_maps_the_index_to_the_gpu_nvidia_smi_knows(tmp_path, monkeypatch):
    args = fake_smi(tmp_path, monkeypatch, "9.0")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,GPU-1234abcd")
    assert predicted_arch(1) == "sm_90a" and args.read_text().split()[-1] == "GPU-1234abcd"
    assert predicted_arch(2) is None  # not visible: no guess


def test_no_nvidia_smi_no_guess(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert predicted_arch(0) is None


class SlowStart:
    """A worker that takes a while to start, on a GPU of compute capability `cc`."""

    device_index = 0

    def __init__(self, cc: str) -> None:
        self.cc, self.gpu, self.alive, self.started_at = cc, None, False, 0.0

    def start(self, stop=None) -> GpuInfo:
        time.sleep(0.4)
        self.started_at = time.monotonic()
        self.gpu, self.alive = GpuInfo(0, "test", self.cc, 1, 1, 1), True
        return self.gpu


def recorded_prepare(calls: list):
    def prepare(source, kernel, candidate, arch, options):
        calls.append((arch, time.monotonic(), threading.current_thread().name))
        return Prepared(result=EvalResult(kernel=kernel, status="compile_error", message=f"built for {arch}"))
    return prepare


def test_the_compile_runs_while_the_worker_starts(monkeypatch):
    calls: list = []
    monkeypatch.setattr(api, "prepare", recorded_prepare(calls))
    monkeypatch.setattr(api, "predicted_arch", lambda index: "sm_90a")
    worker = SlowStart("9.0")
    result = api.evaluate(worker, "src", "k", "cand")  # type: ignore[arg-type]
    assert [c[0] for c in calls] == ["sm_90a"] and calls[0][1] < worker.started_at, calls
    assert calls[0][2] == "fsr-compile-early" and result.message == "built for sm_90a"


def test_a_wrong_guess_is_compiled_again_for_the_workers_arch(monkeypatch):
    calls: list = []
    monkeypatch.setattr(api, "prepare", recorded_prepare(calls))
    monkeypatch.setattr(api, "predicted_arch", lambda index: "sm_80")
    result = api.evaluate(SlowStart("9.0"), "src", "k", "cand")  # type: ignore[arg-type]
    assert [c[0] for c in calls] == ["sm_80", "sm_90a"] and result.message == "built for sm_90a"


def test_a_worker_already_up_compiles_for_its_arch_alone(monkeypatch):
    calls: list = []
    monkeypatch.setattr(api, "prepare", recorded_prepare(calls))
    monkeypatch.setattr(api, "predicted_arch", lambda index: pytest.fail("no guess needed"))
    worker = SlowStart("9.0")
    worker.start()
    api.evaluate(worker, "src", "k", "cand")  # type: ignore[arg-type]
    assert [c[0] for c in calls] == ["sm_90a"]


def test_fsr_eval_starts_the_worker_while_it_finds_the_spec(monkeypatch, tmp_path):
    """`fsr eval`: the worker's start (about 5 s on a GPU host) overlaps finding and checking the
    spec, then evaluate() takes the worker as started; a bad spec still stops the command, and
    the worker with it."""
    from fsr_lsp.cli import eval_cmd, main as cli

    events: list = []

    class Worker:
        def __init__(self, index, timeout=0.0):
            self.device_index, self.alive, self.gpu = index, False, None

        def start(self, stop=None):
            events.append(("start begins", time.monotonic()))
            time.sleep(0.3)
            self.alive = True
            return GpuInfo(0, "test", "9.0", 1, 1, 1)

        def close(self):
            events.append(("closed", time.monotonic()))

    def finding(file, source, kernel, settings):
        time.sleep(0.1)  # the spec's planning takes a while (a workspace's launches, a capture)
        events.append(("spec found", time.monotonic()))
        return source, (), "", None

    def evaluate(evaluator, source, kernel, candidate, options, **kw):
        events.append(("evaluate", time.monotonic()))
        return EvalResult(kernel=kernel, status="verified", message="ok")

    monkeypatch.setattr(eval_cmd, "gpu_support_missing", lambda needs: "")
    monkeypatch.setattr(eval_cmd, "local_gpus", lambda spec: [0])
    monkeypatch.setattr(eval_cmd, "Evaluator", Worker)
    monkeypatch.setattr(eval_cmd, "spec_and_inputs", finding)
    from fsr_lsp.evaluator.backends import local

    monkeypatch.setattr(local, "evaluate_one", evaluate)  # what the local backend's evaluate_one runs
    monkeypatch.setattr(eval_cmd, "render_result", lambda *a, **k: None)
    source = tmp_path / "k.cu"
    spec = Path(__file__).parent.parent.parent / "examples" / "saxpy.cu"
    source.write_text(spec.read_text())
    assert cli.main(["eval", str(source), "--kernel", "saxpy"]) == 0
    order = [name for name, _ in sorted(events, key=lambda e: e[1])]
    assert order.index("start begins") < order.index("spec found") < order.index("evaluate") < order.index("closed"), order
    events.clear()
    assert cli.main(["eval", str(source), "--kernel", "nothing_here"]) == 2
    assert [name for name, _ in events][-1] == "closed"
