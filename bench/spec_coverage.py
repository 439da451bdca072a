"""Issue 10's targets on the corpus in bench/spec_corpus (files in the shapes real projects use):

- coverage: the share of kernels taking a pointer that get a spec of any origin (target 80%);
- proof: the share of drafts that pass the proof on the GPU with the original kernel (target 90%);
- speed: the time to draft every kernel of a 2,000-line file (target under 200 ms).

`python bench/spec_coverage.py` runs all three (the proof needs a GPU, compute-sanitizer and
pycuda); `--no-gpu` only the first and last. Prints tables; JSON goes to bench/results and $OUT.

`--corpus DIR...` measures on projects nobody here wrote instead (each DIR one project, opened
as a workspace has it: all its sources together, every folder holding a header an include
path): per project and in total, the share of pointer-taking kernels with a spec that parses
back, by origin, and why the others have none.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import itertools
import re
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _common import ROOT, console, save, table

from fsr_lsp.drafting.origin import KernelSpec
from fsr_lsp.drafting.resolver import kernel_specs
from fsr_lsp.kernels import discover
from fsr_lsp.source import SourceText

CORPUS = ROOT / "bench" / "spec_corpus"
# Files that belong together (kernels in one file, launches in another); every other file stands alone.
GROUPS = [("kernels_ops.cu", "kernels_ops.cuh", "ops_launch.cpp"), ("template_scale.cuh", "scale_main.cu")]
SOURCES = (".cu", ".cuh", ".cpp", ".h")


def groups() -> list[list[Path]]:
    grouped = {name for g in GROUPS for name in g}
    out = [[CORPUS / n for n in g] for g in GROUPS]
    out += [[f] for f in sorted(CORPUS.iterdir()) if f.suffix in SOURCES and f.name not in grouped]
    return out


def takes_pointer(s: KernelSpec) -> bool:
    src = SourceText(Path(s.file).read_text(errors="replace"))
    k = next(k for k in discover(src).kernels if k.name == s.kernel)
    return any(p.is_pointer for p in k.params)


def coverage() -> list[KernelSpec]:
    specs = [s for g in groups() for s in kernel_specs(g) if not s.file.endswith((".cpp",))]
    # a declaration in a header is not a kernel of its own
    specs = [s for s in specs if not (s.file.endswith(".cuh") and s.origin == "none" and "incomplete" in " ".join(s.problems))]
    pointer = [s for s in specs if takes_pointer(s)]
    covered = [s for s in pointer if s.spec is not None]
    rows = [[Path(s.file).name, s.kernel, s.origin, (s.problems[0][:70] if s.problems and s.origin == "none" else "")]
            for s in pointer]
    table("spec of each pointer-taking kernel", ["file", "kernel", "origin", "why none"], rows)
    by_origin = {o: sum(1 for s in pointer if s.origin == o) for o in ("attached", "drafted", "inferred", "none")}
    share = len(covered) / len(pointer)
    console.print(f"coverage: {len(covered)} of {len(pointer)} pointer-taking kernels get a spec ({share:.0%}; "
                  f"target 80%): {by_origin}")
    return pointer


def draft_speed() -> dict:
    lines: list[str] = []
    files = sorted(CORPUS.glob("*.cu"))
    while len(lines) < 2000:  # the corpus files one after another (again from the start if need be)
        for f in files:
            lines += f.read_text().splitlines()
            if len(lines) >= 2000:
                break
    big = CORPUS.parent / "results" / "corpus_2000_lines.cu"
    big.parent.mkdir(parents=True, exist_ok=True)
    big.write_text("\n".join(lines[:2000]) + "\n")
    from fsr_lsp.drafting.cexpr import _expression_node
    from fsr_lsp.kernels.discover import _discover
    from fsr_lsp.kernels.lexical import lex
    from fsr_lsp.kernels.treesitter import parse
    from fsr_lsp.specs.expr import parse_expr

    times: list[float] = []
    cpu: list[float] = []
    for _ in range(7):
        for cached in (_expression_node, _discover, lex, parse, parse_expr):  # cold every time: no help from an earlier run
            cached.cache_clear()
        t0, c0 = time.perf_counter(), time.process_time()
        specs = kernel_specs([big])
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    ms, cpu_ms = 1000 * statistics.median(times), 1000 * statistics.median(cpu)
    console.print(f"speed: {len(specs)} kernels of a {len(lines[:2000])}-line file drafted in {ms:.0f} ms "
                  f"({cpu_ms:.0f} ms of CPU; median of 7, cold; target under 200 ms)")
    return {"lines": len(lines[:2000]), "kernels": len(specs), "median_ms": ms, "cpu_ms": cpu_ms,
            "runs_ms": [1000 * t for t in times]}


def proofs(drafts: list[KernelSpec], threads: int, include_dirs: dict[str, tuple[str, ...]] | None = None,
           seconds: float = 0.0) -> list[dict]:
    """Each draft proven on the GPU against its kernel, each said as it ends; `include_dirs`: a
    file's include folders (a public project's header folders), by file (else the corpus
    folder); `seconds` (0: no limit): no proof starts after that long."""
    from concurrent.futures import as_completed

    from fsr_lsp.drafting.proof import prove
    from fsr_lsp.evaluator import EvalOptions, Evaluator, TimingConfig

    timing = TimingConfig(warmup=2, min_reps=10, max_reps=30, target_seconds=0.05)
    results: list[dict] = []
    started = time.monotonic()
    with Evaluator(timeout=120.0) as evaluator:
        gpu = evaluator.start()

        def one(s: KernelSpec) -> dict | None:
            if seconds and time.monotonic() - started > seconds:
                return None
            t0 = time.perf_counter()
            dirs = (include_dirs or {}).get(s.file, (str(CORPUS),))
            options = EvalOptions(include_dirs=dirs, flags=s.flags, timing=timing)
            row = {"file": s.file, "kernel": s.kernel, "origin": s.origin, "gpu": gpu.name}
            try:
                p = prove(evaluator, Path(s.file).read_text(errors="replace"), s.kernel, s.spec, options, timeout=60.0)
            except Exception as e:  # noqa: BLE001 - a bench: say it and go on
                return {**row, "status": "error", "check": "", "argument": "", "message": f"{type(e).__name__}: {e}",
                        "seconds": time.perf_counter() - t0, "tolerance": None}
            return {**row, "status": p.status, "check": p.check, "argument": p.argument, "message": p.message,
                    "seconds": time.perf_counter() - t0, "tolerance": p.tolerance}

        with ThreadPoolExecutor(max_workers=threads) as pool:  # the GPU runs one at a time; sanitizers overlap
            for done in as_completed([pool.submit(one, d) for d in drafts]):
                r = done.result()
                if r is not None:
                    results.append(r)
                    print(f"proof {len(results)}: {Path(r['file']).name}::{r['kernel']} {r['status']} "
                          f"{r['check']} {r['argument']} {r['seconds']:.1f} s", flush=True)
    rows = [[Path(r["file"]).name, r["kernel"], r["status"], f"{r['check']} {r['argument']}".strip(), f"{r['seconds']:.1f}"]
            for r in results]
    table(f"proof of each draft on {results[0]['gpu'] if results else 'the GPU'}",
          ["file", "kernel", "proof", "failed check", "s"], rows)
    for r in results:
        if r["status"] != "proven":
            console.print(f"  {r['kernel']}: {r['message'][:300]}", markup=False)
    passed = sum(r["status"] == "proven" for r in results)
    console.print(f"proof: {passed} of {len(results)} drafts proven ({passed / max(1, len(results)):.0%}; target 90%)"
                  + (f", {len(drafts) - len(results)} not started within {seconds:g} s" if len(results) < len(drafts) else ""))
    return results


def project_files(root: Path) -> tuple[list[Path], tuple[Path, ...]]:
    """A project's sources, and its include path: every folder that holds a header."""
    skip = {".git", "build", "third_party", "3rdparty", "external", "extern", "deps"}
    files = [f for f in sorted(root.rglob("*")) if f.suffix in SOURCES + (".cc", ".hpp", ".cuh", ".hh")
             and f.is_file() and not skip & set(f.relative_to(root).parts) and f.stat().st_size < 2 << 20]
    return files, tuple(sorted({f.parent for f in files if f.suffix in (".h", ".hpp", ".cuh", ".hh")}))


def project_specs(root: Path) -> list[KernelSpec]:
    files, include_dirs = project_files(root)
    specs = kernel_specs(files, include_dirs=include_dirs)
    return [s for s in specs if not (s.origin == "none" and "incomplete" in " ".join(s.problems))]


def corpus_coverage(roots: list[Path], kept: list[KernelSpec] | None = None) -> dict:
    """`kept`: gets every spec found (for the proofs)."""
    rows, out, why_none = [], {}, {}
    totals = {"kernels": 0, "covered": 0}
    for root in roots:
        specs = [s for s in project_specs(root) if takes_pointer(s)]
        if kept is not None:
            kept += specs
        origins = {o: sum(1 for s in specs if s.origin == o) for o in ("attached", "captured", "drafted", "inferred", "none")}
        covered = len(specs) - origins["none"]
        totals["kernels"] += len(specs)
        totals["covered"] += covered
        out[root.name] = {"kernels": len(specs), "covered": covered, **origins}
        rows.append([root.name, str(len(specs)), f"{covered / max(1, len(specs)):.0%}",
                     *(str(origins[o]) for o in ("drafted", "inferred", "none"))])
        for s in specs:
            if s.origin == "none" and s.problems:
                said = [p for p in s.problems if "has no @fsr spec" not in p] or s.problems
                key = re.sub(r"`[^`]*`", "`…`", said[0].replace(s.kernel, "K"))
                key = re.sub(r"\d+", "N", key)[:90]
                why_none[key] = why_none.get(key, 0) + 1
    share = totals["covered"] / max(1, totals["kernels"])
    rows.append(["total", str(totals["kernels"]), f"{share:.0%}", "", "", ""])
    table("static specs on public projects (pointer-taking kernels)",
          ["project", "kernels", "with a spec", "drafted", "inferred", "none"], rows)
    table("why none (first problem, most common first)", ["reason", "kernels"],
          [[k, str(v)] for k, v in sorted(why_none.items(), key=lambda kv: -kv[1])[:15]])
    return {"projects": out, "total": totals, "why_none": why_none}


def prove_public(roots: list[Path], specs: list[KernelSpec], threads: int, seconds: float = 0.0,
                 offset: int = 0) -> list[dict]:
    """Every spec the projects got without a run (drafted, inferred), proven on the GPU, each
    compiled with its file's folder and its project's header folders on the include path; the
    projects' drafts taken in turn, so that a time limit leaves each project some."""
    dirs: dict[str, tuple[str, ...]] = {}
    for root in roots:
        files, headers = project_files(root)
        for f in files:
            dirs[str(f)] = tuple(dict.fromkeys((str(f.parent), *map(str, headers))))
    each = [[s for s in specs if s.origin in ("drafted", "inferred") and Path(s.file).is_relative_to(r)] for r in roots]
    drafts = [s for group in itertools.zip_longest(*each) for s in group if s is not None][offset:]
    results = proofs(drafts, threads, {s.file: dirs.get(s.file, (str(Path(s.file).parent),)) for s in drafts}, seconds)
    by: dict[str, dict[str, int]] = {}
    for root in roots:
        mine = [r for r in results if Path(r["file"]).is_relative_to(root)]
        by[root.name] = {k: sum(r["status"] == k for r in mine) for k in sorted({r["status"] for r in mine})}
    table("proofs of the drafts by project", ["project", "drafts", "by proof status"],
          [[name, str(sum(c.values())), ", ".join(f"{k} {v}" for k, v in c.items())] for name, c in by.items()])
    return results


def spec_records(roots: list[Path], specs: list[KernelSpec]) -> list[dict]:
    """Each pointer-taking kernel's spec, its file named from its project's folder (the same on
    another machine, where the projects lie elsewhere)."""
    out = []
    for s in specs:
        root = next(r for r in roots if Path(s.file).is_relative_to(r))
        out.append({"project": root.name, "file": str(Path(s.file).relative_to(root)), "kernel": s.kernel,
                    "origin": s.origin, "spec": s.spec})
    return out


def prove_changed(roots: list[Path], specs: list[KernelSpec], before: list[dict], threads: int) -> list[dict]:
    """The kernels whose spec differs from `before` (another commit's `--save-specs`): the old
    spec and the new one, each proven against the kernel as it is; a kernel whose old spec is
    proven and whose new one is not has lost its spec."""
    old = {(b["project"], b["file"], b["kernel"]): b for b in before}
    pairs = []
    for r, s in zip(spec_records(roots, specs), specs):
        was = old.get((r["project"], r["file"], r["kernel"]))
        if was is not None and was["spec"] != s.spec:
            pairs.append((was, s))
    olds = [dataclasses.replace(s, spec=was["spec"], origin="before: " + was["origin"]) for was, s in pairs if was["spec"]]
    news = [s for _, s in pairs if s.spec]
    dirs: dict[str, tuple[str, ...]] = {}
    for root in roots:
        files, headers = project_files(root)
        dirs.update({str(f): tuple(dict.fromkeys((str(f.parent), *map(str, headers)))) for f in files})
    results = proofs(olds + news, threads, {s.file: dirs.get(s.file, (str(Path(s.file).parent),)) for s in olds + news})
    said = {(r["file"], r["kernel"], r["origin"]): r["status"] for r in results}
    rows, lost = [], 0
    for was, s in pairs:
        before_status = said.get((s.file, s.kernel, "before: " + was["origin"]), "-") if was["spec"] else "no spec"
        after_status = said.get((s.file, s.kernel, s.origin), "-") if s.spec else "no spec"
        lost += before_status == "proven" and after_status != "proven"
        rows.append([Path(s.file).name, s.kernel, f"{was['origin']}: {before_status}", f"{s.origin}: {after_status}"])
    table("kernels whose spec changed: proven before and after", ["file", "kernel", "before", "after"], rows)
    console.print(f"changed: {len(pairs)}; proven before {sum(r[2].endswith(': proven') for r in rows)}, "
                  f"after {sum(r[3].endswith(': proven') for r in rows)}; lost (proven before, not after): {lost}")
    return results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--no-gpu", action="store_true", help="coverage and speed only")
    ap.add_argument("--threads", type=int, default=8, help="proofs in flight (sanitizer children overlap)")
    ap.add_argument("--corpus", type=Path, nargs="+", help="public projects to measure on")
    ap.add_argument("--prove", action="store_true", help="with --corpus: prove each project's drafts on the GPU")
    ap.add_argument("--seconds", type=float, default=0.0, help="with --prove: start no proof after this long (0: none)")
    ap.add_argument("--offset", type=int, default=0, help="with --prove: leave out the first N drafts (proven by a call before)")
    ap.add_argument("--save-specs", type=Path, help="with --corpus: write every kernel's spec here (for --changed)")
    ap.add_argument("--changed", type=Path, help="with --corpus: prove the kernels whose spec differs from this "
                                                 "--save-specs file, old spec and new")
    args = ap.parse_args()
    if args.corpus:
        found: list[KernelSpec] = []
        covered = corpus_coverage(args.corpus, found)
        if args.save_specs:
            args.save_specs.write_text(json.dumps(spec_records(args.corpus, found), indent=1))
        if args.changed:
            changed = prove_changed(args.corpus, found, json.loads(args.changed.read_text()), args.threads)
            save("spec_coverage_changed", {"date": time.strftime("%Y-%m-%d"), **covered, "proofs": changed})
            return 0
        proven = prove_public(args.corpus, found, args.threads, args.seconds, args.offset) if args.prove else []
        save("spec_coverage_public", {"date": time.strftime("%Y-%m-%d"), **covered, "proofs": proven})
        return 0
    pointer = coverage()
    speed = draft_speed()
    drafted = [s for s in pointer if s.origin == "drafted"]
    proven = [] if args.no_gpu else proofs(drafted, args.threads)
    save("spec_coverage", {"date": time.strftime("%Y-%m-%d"), "kernels": [s.as_json() for s in pointer],
                           "speed": speed, "proofs": proven})
    return 0


if __name__ == "__main__":
    sys.exit(main())
