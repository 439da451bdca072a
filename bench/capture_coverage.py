"""With capture, on a GPU host: of the kernels a public project's own programs launch, the share
that gets a proven spec (issue 24's goal: >= 90%).

For each project DIR, every `.cu` file holding `main` is built with nvcc (the project's header
folders as include paths), then run with no arguments (its own defaults) under `fsr capture`,
each program its own capture; then each kernel that run launched, defined in the program's own
source, gets its spec (the workspace's static draft checked against the capture, or the
capture alone) and the proof on this GPU. Programs that do not build or launch nothing are
counted apart, and so are launched kernels that take no pointer (nothing to compare).

    python bench/capture_coverage.py DIR... [--run-timeout 20] [--deadline 480]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _common import console, save, table

from fsr_lsp.capture.records import latest_capture
from fsr_lsp.drafting.cache import ProofCache
from fsr_lsp.drafting.origin import kernel_specs
from fsr_lsp.drafting.proof import prove_with
from fsr_lsp.evaluator.backends.local import LocalBackend
from fsr_lsp.evaluator.worker_client import Evaluator
from fsr_lsp.kernels import discover
from fsr_lsp.settings import Settings
from fsr_lsp.source import SourceText

MAIN = re.compile(r"\bint\s+main\s*\(")
HEADERS = (".h", ".cuh", ".hpp")


def programs(project: Path) -> list[Path]:
    return sorted(p for p in project.rglob("*.cu") if MAIN.search(p.read_text(errors="replace")))


def include_dirs(project: Path) -> list[Path]:
    return sorted({p.parent for p in project.rglob("*") if p.suffix in HEADERS})


def build(source: Path, out: Path, includes: list[Path]) -> tuple[Path | None, str]:
    binary = out / (source.relative_to(source.anchor).as_posix().replace("/", "_") + ".bin")
    cmd = ["nvcc", "-O2", "-arch=native", "-std=c++17", "-w", *[f"-I{d}" for d in includes], "-o", str(binary),
           str(source), "-lcublas", "-lcurand"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    except subprocess.TimeoutExpired:
        return None, "nvcc took over 180 s"
    return (binary, "") if proc.returncode == 0 else (None, (proc.stderr.strip().splitlines() or ["?"])[-1][:160])


def capture(project: Path, source: Path, binary: Path, timeout: float):
    cmd = [sys.executable, "-m", "fsr_lsp.cli.main", "capture", "--workspace", str(project), "--timeout", str(timeout),
           "--", str(binary)]
    subprocess.run(cmd, cwd=source.parent, capture_output=True, text=True, timeout=timeout + 120)
    found = latest_capture(project)
    return found if found is not None and str(binary) in " ".join(found.command) else None


def measure(project: Path, backend: LocalBackend, run_timeout: float, deadline: float) -> dict:
    includes = include_dirs(project)
    headers = [p for p in project.rglob("*") if p.suffix in HEADERS]
    out = Path("/tmp/fsr-capture-coverage") / project.name
    out.mkdir(parents=True, exist_ok=True)
    progs = programs(project)
    with ThreadPoolExecutor(max_workers=16) as pool:
        built = list(pool.map(lambda s: build(s, out, includes), progs))
    rows, unbuilt, silent = [], [], []
    settings = Settings()
    with ProofCache(project) as cache:
        for source, (binary, why) in zip(progs, built):
            if binary is None:
                unbuilt.append(f"{source.relative_to(project)}: {why}")
                continue
            if time.monotonic() > deadline:
                rows.append({"program": str(source.relative_to(project)), "kernel": "-", "status": "not reached"})
                continue
            cap = capture(project, source, binary, run_timeout)
            kernels = {k.name: k for k in discover(SourceText(source.read_text(errors="replace"))).kernels}
            own = set(kernels)
            launched = sorted({x.base for x in cap.launches} & own) if cap else []
            if not launched:
                silent.append(str(source.relative_to(project)))
                continue
            specs = {s.kernel: s for s in kernel_specs([source, *headers], None, tuple(includes), cap)
                     if s.file == str(source)}
            for name in launched:
                s = specs.get(name)
                row = {"program": str(source.relative_to(project)), "kernel": name, "origin": s.origin if s else "none"}
                if not any(p.is_pointer for p in kernels[name].params):
                    row.update(status="takes no pointers", why="nothing to compare: left out of the share")
                elif s is None or s.spec is None:
                    row.update(status="no spec", why="; ".join(s.problems if s else [])[:160])
                elif time.monotonic() > deadline:
                    row.update(status="not reached")
                else:
                    block = None if s.origin == "attached" else s.spec
                    proof = prove_with(backend, source.read_text(errors="replace"), name, block,
                                       settings.eval_options(source), cache=cache, timeout=60)
                    row.update(status=proof.status, why=proof.message[:160])
                rows.append(row)
                console.print(f"{project.name} {row['program']} {name}: {row['origin']}, {row['status']}", highlight=False)
    launched_rows = [r for r in rows if r["status"] not in ("not reached", "takes no pointers")]
    proven = sum(r["status"] == "proven" for r in launched_rows)
    return {"project": project.name, "programs": len(progs), "unbuilt": unbuilt, "silent": silent, "rows": rows,
            "no_pointers": sum(r["status"] == "takes no pointers" for r in rows),
            "launched": len(launched_rows), "proven": proven,
            "share": proven / len(launched_rows) if launched_rows else 0.0}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("projects", type=Path, nargs="+")
    parser.add_argument("--run-timeout", type=float, default=20.0)
    parser.add_argument("--deadline", type=float, default=480.0, help="seconds for everything; the rest is 'not reached'")
    args = parser.parse_args()
    deadline = time.monotonic() + args.deadline
    backend = LocalBackend(Evaluator(0))
    try:
        results = [measure(p.resolve(), backend, args.run_timeout, deadline) for p in args.projects]
    finally:
        backend.close()
    table("Kernels launched by each project's own programs, with a proven spec (capture + proof on this GPU)",
          ["project", "programs", "did not build", "launched nothing", "launched, no pointers",
           "launched, taking pointers", "proven", "share"],
          [[r["project"], r["programs"], len(r["unbuilt"]), len(r["silent"]), r["no_pointers"], r["launched"], r["proven"],
            r["share"]]
           for r in results])
    for r in results:
        for row in r["rows"]:
            if row["status"] not in ("proven", "takes no pointers"):
                console.print(f"  {r['project']} {row['program']} {row['kernel']}: {row['status']} "
                              f"({row.get('origin', '')}) {row.get('why', '')}", highlight=False)
        for line in r["unbuilt"][:10]:
            console.print(f"  {r['project']} did not build: {line}", highlight=False)
    total_l = sum(r["launched"] for r in results)
    total_p = sum(r["proven"] for r in results)
    console.print(f"total: {total_p} of {total_l} launched kernels proven ({100 * total_p / max(total_l, 1):.0f}%)")
    save("capture_coverage", {"date": time.strftime("%Y-%m-%d"), "results": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
