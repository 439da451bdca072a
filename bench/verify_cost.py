"""What a full verification costs: `fsr eval --candidate` with the sanitizers, per candidate.

The candidates (bench/verify_candidates/) are rewrites of our own in the shapes that cost most:
a 32x32-tiled sgemm (1,024-thread blocks), a register-blocked sgemm, a shared-memory reduction
in 1,024-thread blocks, float4 and 1,024-thread elementwise kernels; and broken ones that must
still be caught, each for its reason (an out-of-bounds read at a mid test size, a race on a
shared tile, stale shared memory). Each runs as a user runs it, `fsr eval FILE -k K -c CAND
--json`, in its own process, timed whole; the table shows the seconds and the sizes each
sanitizer ran at. Goals: p95 <= 30 s, p50 <= 15 s over the correct candidates.

  python bench/verify_cost.py [--timeout S] [--only NAME...] [--backend service]
  python bench/verify_cost.py --calibrate   # each sanitizer alone at each size, with the native time
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import ROOT, console, save, table

CANDIDATES = ROOT / "bench" / "verify_candidates"
ORIGINALS = {"matmul": ROOT / "examples" / "matmul.cu", "reduce_sum": ROOT / "bench" / "naive_kernels" / "reduction.cu",
             "saxpy": ROOT / "examples" / "saxpy.cu"}
# Broken candidates and what must catch them: a check name (or a prefix of one).
EXPECTED_FAILURES = {
    "matmul_tiled32_oob_mid": ("guard bands", "unmapped pages", "sanitizer memcheck", "matches original"),
    "matmul_tiled32_race": ("sanitizer racecheck", "repeatable", "matches original"),
    "reduce_sum_stale_shared": ("shared memory poisoned", "matches original", "repeatable"),
}


def cases(only: list[str]) -> list[tuple[str, str, Path]]:
    out = []
    for path in sorted(CANDIDATES.glob("*.cu")):
        if only and path.stem not in only:
            continue
        kernel = next(k for k in ORIGINALS if path.stem.startswith(k))
        out.append((path.stem, kernel, path))
    return out


def run_eval(kernel: str, candidate: Path, timeout: float, *extra: str) -> tuple[float, dict | None, str]:
    cmd = [sys.executable, "-m", "fsr_lsp.cli.main", "eval", str(ORIGINALS[kernel]), "-k", kernel, "-c", str(candidate),
           "--json", *extra]
    started = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return time.monotonic() - started, None, f"killed after {timeout:.0f} s"
    seconds = time.monotonic() - started
    try:
        return seconds, json.loads(proc.stdout), ""
    except ValueError:
        return seconds, None, (proc.stderr or proc.stdout).strip().splitlines()[-1:][0] if (proc.stderr or proc.stdout) else "no output"


def sanitizer_sizes(result: dict) -> str:
    parts = []
    for c in result.get("checks", []):
        if c["name"].startswith("sanitizer"):
            parts.append(f"{c['name'].split()[1]}: {c['status']} {c['detail'][:60]}")
    return "; ".join(parts)


def phases(result: dict) -> str:
    """The worker's own seconds per phase (load, verify, unmapped pages, time): the rest of the
    process's time is start-up, compiling and the sanitizers."""
    return " ".join(f"{k} {v:.2f}" for k, v in result.get("phase_seconds", {}).items())


def caught_by(result: dict) -> str:
    return next((c["name"] for c in result.get("checks", []) if c["status"] == "fail"), result.get("status", ""))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--timeout", type=float, default=180.0)
    parser.add_argument("--only", nargs="*", default=[])
    parser.add_argument("--calibrate", action="store_true")
    parser.add_argument("--backend", choices=["local", "service"], default="local",
                        help="service: every `fsr eval` on one warm GPU service, started (and timed apart) by a "
                             "first evaluation before the table's")
    args = parser.parse_args()
    extra = ("--backend", "service", "--service-idle", "120") if args.backend == "service" else ()
    if extra:  # the service's start is paid once, by an evaluation the table leaves out
        name, kernel, path = cases(["saxpy_float4"])[0]
        seconds, _, problem = run_eval(kernel, path, args.timeout, *extra)
        console.print(f"service started by {name}: {seconds:.1f} s {problem}", highlight=False)
    if args.calibrate:
        return calibrate(args)
    rows, good, record, wrong_reason = [], [], [], []
    for name, kernel, path in cases(args.only):
        seconds, result, problem = run_eval(kernel, path, args.timeout, *extra)
        broken = name in EXPECTED_FAILURES
        status = result["status"] if result else problem
        if broken:
            reason = caught_by(result) if result else problem
            ok = bool(result) and result["status"] != "verified" and reason.startswith(EXPECTED_FAILURES[name])
            if not ok:
                wrong_reason.append(name)
            verdict = f"caught: {reason}" if ok else f"NOT CAUGHT for its reason: {reason}"
        else:
            verdict = "verified" if result and result["status"] == "verified" else f"FAILED: {status}"
            good.append(seconds)
        rows.append([name, verdict, round(seconds, 1), phases(result) if result else "",
                     sanitizer_sizes(result) if result else problem])
        record.append({"name": name, "seconds": seconds, "status": status, "result": result})
        console.print(f"{name}: {verdict} in {seconds:.1f} s", highlight=False)
    table(f"fsr eval --candidate (sanitizers on), {args.backend} backend", ["candidate", "verdict", "seconds", "worker phases s", "sanitizers"],
          rows)
    if good:
        p50 = statistics.median(good)
        p95 = sorted(good)[max(0, int(round(0.95 * len(good))) - 1)]
        console.print(f"p50 verification: {p50:.1f} s; p95 verification: {p95:.1f} s (over {len(good)} correct "
                      f"candidates; goals 15 s and 30 s)")
    save("verify_cost", record)
    if extra:
        subprocess.run(["pkill", "-f", "fsr_lsp.evaluator.service"], check=False)
    return 1 if wrong_reason else 0


def calibrate(args: argparse.Namespace) -> int:
    """Each sanitizer alone, at each size, on each candidate: where the time goes."""
    from fsr_lsp.evaluator import EvalOptions, Evaluator, evaluate
    from fsr_lsp.evaluator.sanitize import sanitizer
    from fsr_lsp.evaluator.job.prepare import prepare

    rows = []
    tool_path = sanitizer.find_sanitizer()
    with Evaluator(0) as evaluator:
        arch = evaluator.start().arch
        for name, kernel, path in cases(args.only):
            source, candidate = ORIGINALS[kernel].read_text(), path.read_text()
            native = evaluate(evaluator, source, kernel, candidate, EvalOptions())
            per_size = native.phase_seconds
            prepared = prepare(source, kernel, candidate, arch, EvalOptions())
            for tool in ("memcheck", "racecheck", "initcheck"):
                for plan in prepared.job.sizes:
                    started = time.monotonic()
                    outcome = sanitizer._run(tool_path, tool, prepared.job, [plan], 0, args.timeout, original=False)
                    rows.append([name, tool, plan.label, round(time.monotonic() - started, 2), outcome.check.status,
                                 plan.threads if hasattr(plan, "threads") else "", str(per_size.get("verify", ""))[:5]])
                    console.print(" ".join(str(x) for x in rows[-1]), highlight=False)
    table("one sanitizer, one size", ["candidate", "tool", "size", "seconds", "status", "threads", "verify s"], rows)
    save("sanitizer_calibration", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
