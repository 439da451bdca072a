"""What each `fsr` command takes: its arguments, their help and the flags of settings, apart
from what the command does (`eval_cmd.py`, `optimize_cmd.py`, ...), so that `fsr --help`, a
command's --help and a bad argument answer without importing the evaluator, the search or a
model client; main.py imports the one command that runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..settings import add_setting_flags
from .arguments import (OneLineParser, at_least, file_to_write, folder, gpu_index, no_longer_than_a_week, seconds,
                        workspace)
from .version import VersionAction

COMMANDS = ("eval", "optimize", "history", "spec", "capture", "profile", "confirm")  # each is <name>_cmd.py
SEARCH_FLAGS = ("search.rounds", "search.candidates", "search.timeBudget", "search.targetSpeedup",
                "search.fixAttempts", "search.sanitize", "search.minGain", "llm.baseUrl", "llm.model", "llm.apiKeyEnv",
                "llm.temperature", "llm.timeout", "llm.maxAnswerBytes", "compiler.nvcc", "compiler.flags",
                "includePaths", "gpus", "evaluator.address", "evaluator.backend", "evaluator.serviceIdle")
PROFILE_FLAGS = ("compiler.nvcc", "compiler.flags", "includePaths", "gpus", "evaluator.address", "evaluator.backend",
                 "evaluator.serviceIdle")
# What a setting means for a command that runs no search's rounds (the table's help speaks of those)
ONE_GPU_HELP = {"gpus": 'local GPUs ("0,1" or "all"): this command uses the first (default 0)'}
EVAL_HELP = {"search.sanitize": "compute-sanitizer on a verified candidate before its verdict counts",
             "search.minGain": "a win: the whole speedup interval above 1 + this"}
MAX_PER_KERNEL = 1_000_000  # the capture library reads it as a C int


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="fsr", description="Find, verify and time faster CUDA kernels.")
    parser.add_argument("--version", action=VersionAction)
    sub = parser.add_subparsers(dest="command", required=True)
    for add in (_eval, _optimize, _history, _spec, _capture, _profile, _confirm):
        add(sub)
    return parser


def _one_kernel(p: argparse.ArgumentParser, writes: bool | None = None) -> None:
    """FILE --kernel NAME [--workspace DIR]: the arguments of a command about one kernel;
    `writes`: its --workspace must take .fsr/ (True), must exist (False), or is not taken (None)."""
    p.add_argument("file", type=Path, help="the .cu file holding the kernel")
    p.add_argument("--kernel", "-k", required=True, help="the kernel's name")
    if writes is not None:
        p.add_argument("--workspace", type=workspace if writes else folder,
                       help="folder holding .fsr/ (default: nearest with .fsr or .git)")


def _waits(p: argparse.ArgumentParser, *flags: str) -> None:
    """Setting flags that are waits take at most a week: a thread's wait overflows far beyond it
    (a deadline that cannot be armed is no deadline, and its thread dies with a traceback). The
    settings table checks the rest (finite, its minimum) when the settings are made."""
    for action in p._actions:  # argparse keeps no public index of a parser's arguments
        if set(action.option_strings) & set(flags):
            action.type = no_longer_than_a_week


def _eval(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="verify and time a kernel, or a candidate rewrite against it",
                       description="Check that the kernel's @fsr spec makes it a usable oracle and time it; with "
                                   "--candidate, verify the rewrite against it and time both.")
    _one_kernel(p)
    p.add_argument("--candidate", "-c", type=Path, help="a file with the rewritten kernel (device code only)")
    p.add_argument("--json", action="store_true", help="print the full result record as JSON")
    p.add_argument("--timeout", type=seconds, default=120.0, help="seconds before a hung kernel is killed")
    p.add_argument("--seeds", type=at_least(1), default=3, help="random input sets per size (default 3)")
    p.add_argument("--seed", type=int, help="base seed (default: fresh every run)")
    p.add_argument("--reps", type=at_least(1), default=300, help="most timed runs per kernel (default 300)")
    # One GPU: the setting's --gpu takes a list or `all` for a search's round, which eval has not.
    p.add_argument("--gpu", dest="setting_gpus", type=gpu_index, default="0", metavar="N",
                   help="the GPU to evaluate on, by index (default 0)")
    add_setting_flags(p, "search.sanitize", "search.minGain", "compiler.nvcc", "compiler.flags", "includePaths",
                      "evaluator.backend", "evaluator.serviceIdle", helps=EVAL_HELP)
    p.add_argument("--compiler", choices=("auto", "nvrtc", "nvcc"), default="auto")


def _optimize(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("optimize", help="search for a faster verified rewrite of a kernel",
                       description="Run the FSR search on one kernel: rounds of candidates from the LLM endpoint "
                                   "(or the built-in generator), each verified against the original and timed. "
                                   "A kernel without an @fsr spec gets one drafted from its launch (in any source "
                                   "file of the workspace), proven on the GPU first.")
    _one_kernel(p, writes=True)
    p.add_argument("--apply", action="store_true", help="write the fastest verified rewrite into FILE")
    p.add_argument("--report", type=file_to_write(make_folders=True),
                   help="HTML report path (default .fsr/reports/KERNEL-TIME.html)")
    add_setting_flags(p, *SEARCH_FLAGS)
    _waits(p, "--time-budget", "--llm-timeout")


def _history(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("history", help="list the stored candidates of a kernel")
    _one_kernel(p, writes=False)
    p.add_argument("--source", action="store_true", help="print each candidate's code too")


def _spec(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("spec", help="show each kernel's @fsr spec: attached, drafted from a launch, or inferred",
                       description="For each kernel of the files: its spec block (attached, drafted from a launch "
                                   "in any of the files given or, with an LLM endpoint, by the model, or inferred "
                                   "from the signature), where it came from, and its problems. --check proves each "
                                   "spec on the GPU with the original kernel (in bounds under memcheck, no read of "
                                   "an unwritten output under initcheck, deterministic, every output written).")
    p.add_argument("files", type=Path, nargs="+", help=".cu/.cuh/.cpp/.h files (launches may be in any of them)")
    p.add_argument("--kernel", "-k", help="only this kernel")
    p.add_argument("--json", action="store_true", help="one JSON array, an object per kernel")
    p.add_argument("--check", action="store_true", help="prove each spec on the GPU (exit 1 if one fails)")
    p.add_argument("--timeout", type=seconds, default=120.0, help="seconds before a hung kernel is killed")
    p.add_argument("--workspace", type=folder, help="folder holding .fsr/ with the proof cache and captures")
    p.add_argument("--capture", type=folder, help="a capture folder (default: the workspace's latest, from fsr capture)")
    p.add_argument("--no-capture", action="store_true", help="ignore captured launches")
    add_setting_flags(p, "gpus", "evaluator.address", "evaluator.backend", "evaluator.serviceIdle", "compiler.nvcc",
                      "compiler.flags", "includePaths", "llm.baseUrl", "llm.model", "llm.apiKeyEnv", "llm.temperature",
                      "llm.timeout", "llm.maxAnswerBytes", helps=ONE_GPU_HELP)
    _waits(p, "--llm-timeout")


def _capture(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("capture", help="record each kernel launch of a run of your program (for specs)",
                       description="Runs CMD (a binary built with nvcc, static cudart included; python train.py; "
                                   "a test) with a CUPTI injection library that records, for each kernel launched, "
                                   "grid, block, dynamic shared memory, scalar arguments and the allocation each "
                                   "pointer points into. Stored in the workspace's .fsr/captures/; fsr spec, fsr "
                                   "optimize and the editor take specs from the latest capture.",
                       usage="fsr capture [options] -- CMD [ARGS...]")
    p.add_argument("--kernel", "-k", action="append", default=[], help="only this kernel (repeatable)")
    # A string default goes through the type too: this folder is checked as one given would be.
    p.add_argument("--workspace", type=workspace, default=".", help="the workspace (default: this folder)")
    p.add_argument("--timeout", type=seconds, default=None, help="stop the program after this many seconds")
    p.add_argument("--max-per-kernel", type=at_least(1, most=MAX_PER_KERNEL), default=64,
                   help=f"distinct launches kept per kernel (at most {MAX_PER_KERNEL:,})")
    p.add_argument("--build", metavar="CMD", default=None,
                   help="first run this build command (a shell line, e.g. \"make -B\"), recording each nvcc it "
                        "starts: every later compile of those files' kernels takes the build's flags "
                        "(--use_fast_math, -D, -std, ...)")
    add_setting_flags(p, "compiler.nvcc", "capture.snapshotBytes")
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="the program and its arguments, after --")


def _confirm(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("confirm", help="confirm an applied rewrite in your own program: rebuild, rerun, compare",
                       description="After a rewrite is applied: rebuild with the build command the capture ran "
                                   "(fsr capture --build), rerun the captured program under the capture, and report "
                                   "the kernel's GPU time in the real run before and after, the program's exit status "
                                   "and whether its output is the same (numbers within the kernel's tolerance, its "
                                   "own timing lines left out). Exit status 0: confirmed; 1: something differs; 2: "
                                   "it could not run.")
    _one_kernel(p, writes=True)
    p.add_argument("--build", metavar="CMD", default=None, help="the build command (default: the one the capture ran)")
    p.add_argument("--no-build", action="store_true", help="do not rebuild: the program is already built")
    p.add_argument("--timeout", type=seconds, default=None, help="stop the build and the program after this long")
    add_setting_flags(p, "compiler.nvcc")


def _profile(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("profile", help="profile a kernel under Nsight Compute, findings by source line",
                       description="Run the kernel once at its spec's bench size under ncu with source correlation "
                                   "and print what costs time, line by line: warp-stall hot spots, uncoalesced "
                                   "global accesses, shared-memory bank conflicts, divergent branches, local memory; "
                                   "with ncu's estimated gains and a summary (occupancy, DRAM, L2, SM throughput).")
    _one_kernel(p, writes=True)
    p.add_argument("--json", action="store_true", help="print the findings and every line's counters as JSON")
    add_setting_flags(p, *PROFILE_FLAGS, helps=ONE_GPU_HELP)

