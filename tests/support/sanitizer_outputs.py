"""compute-sanitizer's output as each tool prints it, and its children stood in for: a saxpy job
whose sanitizer runs answer what a test says (`use_tool`)."""

from __future__ import annotations

from fsr_lsp.evaluator.job.plan import build_plans
from fsr_lsp.evaluator.records import EvalJob, KernelBinary
from fsr_lsp.evaluator.sanitize import sanitizer
from fsr_lsp.kernels import find_kernel
from fsr_lsp.source import SourceText
from fsr_lsp.specs import parse_spec

from ..conftest import EXAMPLES

SAXPY = (EXAMPLES / "saxpy.cu").read_text()
X_AT_65537 = 0x7F0000400000
MAP = ("fsr-buffer x n=65537 0x7f0000400000 262148\n"
       "fsr-buffer y n=65537 0x7f0000500000 262148\n"
       "fsr-buffer x n=1000 0x7f0000300000 4000\n")


def job() -> EvalJob:
    src = SourceText(SAXPY)
    k = find_kernel(src, "saxpy")
    binary = KernelBinary(cubin=b"cubin", entry="saxpy", compiler="nvcc", arch="sm_90a")
    return EvalJob(kernel="saxpy", original=binary, candidate=binary, sizes=build_plans(k, parse_spec(src, k).spec))


def use_tool(monkeypatch, answer):
    """`answer(tool, original)` -> (exit code, output) for each sanitizer child."""
    calls = []

    def run_children(work, tool_path, device_index, timeout, cancel=None, prewarm=None):
        out = {}
        for tool, job in work:
            calls.append((tool, job.sanitize_original))
            out[tool] = answer(tool, job.sanitize_original)
        return out

    stand_in(monkeypatch, run_children)
    return calls


def stand_in(monkeypatch, run_children, modules=()):
    """`run_children` for the sanitizer's children, in sanitizer.py and each of `modules` that
    imported it, compute-sanitizer found, no original's verdict kept from another test."""
    for module in (sanitizer, *modules):
        monkeypatch.setattr(module, "run_children", run_children)
        monkeypatch.setattr(module, "find_sanitizer", lambda: "/usr/bin/compute-sanitizer")
    monkeypatch.setattr(sanitizer, "_original_verdicts", {})


def invalid(kind, width, address):
    """As compute-sanitizer 2025 prints it (older versions say `Address 0x... is out of bounds`)."""
    return (f"========= Invalid __global__ {kind} of size {width} bytes\n"
            "=========     at saxpy(int, float, const float *, float *)+0x70 in kernel.cu:23\n"
            "=========     by thread (0,0,0) in block (256,0,0)\n"
            f"=========     Access to {address:#x} is out of bounds\n")


CLEAN = {"memcheck": (0, "========= ERROR SUMMARY: 0 errors\n"),
         "racecheck": (0, "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n")}
