"""Issue 60's walk: how often one kernel's plan (`workflows/optimize.py: plan_spec`, what Optimize
does before the GPU) crosses between fsr's modules, read from the calls themselves.

Each kernel is planned in a fresh process (no cache warm from another), its workspace the
file's folder, with a profile hook on every call into `fsr_lsp`: a call whose function lives in
another module than its caller's is a crossing into that module. Reported per kernel: crossings,
modules entered, the module entered most often (the target: every module at most twice),
entries into a module already left, climbs from `kernels/` back up to `drafting/`, and how
often `kernels/c_types.py: element_type` and `kernels/aliases.py` were entered from outside.

    python bench/kernel_walk.py [FILE::KERNEL ...]   (default: the repository's examples)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

from _common import ROOT, save, table

# a kernel with its own @fsr block, and kernels drafted from their launches (a typedef'd element type among them)
DEFAULT = [f"{ROOT}/examples/softmax.cu::softmax", f"{ROOT}/tests/data/drafting/sample.cu::saxpy",
           f"{ROOT}/tests/data/drafting/sample.cu::transpose", f"{ROOT}/tests/data/drafting/sample.cu::histogram"]


VALUE_MODULE = "source.py"


def walk(path: Path, kernel: str) -> dict:
    """In this process: plan the kernel once under the hook; the crossings, counted."""
    from fsr_lsp.drafting.workspace import LaunchIndex
    from fsr_lsp.kernels import find_kernel
    from fsr_lsp.settings import Settings
    from fsr_lsp.source import SourceText
    from fsr_lsp.workflows.optimize import plan_spec

    package = str(ROOT / "fsr_lsp") + "/"
    text = path.read_text(errors="replace")
    found = find_kernel(SourceText(text), kernel)
    if found is None:
        return {"kernel": kernel, "error": "no such kernel"}
    crossings: list[tuple[str, str]] = []
    edges: set[tuple[str, str]] = set()  # (caller module:function, callee module:function), each once
    functions: Counter = Counter()

    def module(frame) -> str | None:
        name = frame.f_code.co_filename
        return name[len(package):] if name.startswith(package) else None

    def hook(frame, event, arg) -> None:
        if event != "call":
            return
        here = module(frame)
        if here is None:
            return
        caller = frame.f_back
        while caller is not None and module(caller) is None:  # through a library (tree-sitter's, re's) to fsr's caller
            caller = caller.f_back
        there = module(caller) if caller is not None else None
        if there != here:
            crossings.append((there or "(start)", here))
            functions[f"{here}:{frame.f_code.co_name}"] += 1
            edges.add((f"{there}:{caller.f_code.co_name}" if caller is not None else "(start)",
                       f"{here}:{frame.f_code.co_name}"))

    index = LaunchIndex(path.parent)
    sys.setprofile(hook)
    try:
        plan = plan_spec(index, path, text, found, Settings())
    finally:
        sys.setprofile(None)
    entries = Counter(into for _, into in crossings)
    # entered from distinct call sites (a loop's calls count once), the value types left out: source.py
    # (SourceText, spans) is read by every stage and is no stage of its own
    distinct = Counter(into.split(":")[0] for _, into in edges)
    distinct.pop(VALUE_MODULE, None)
    top_distinct, most_distinct = distinct.most_common(1)[0] if distinct else ("", 0)
    seen: set[str] = set()
    again = 0
    for _, into in crossings:
        again += into in seen
        seen.add(into)
    climbs = sum(1 for came, into in crossings if came.startswith("kernels/") and into.startswith("drafting/"))
    top, most = entries.most_common(1)[0] if entries else ("", 0)
    return {"kernel": kernel, "file": str(path), "origin": plan.spec.origin, "crossings": len(crossings),
            "modules": len(entries), "most": most, "most_module": top, "again": again, "climbs": climbs,
            "edges": len(edges), "most_distinct": most_distinct, "most_distinct_module": top_distinct,
            "over_twice": sorted(m for m, n in distinct.items() if n > 2),
            "element_type": functions.get("kernels/c_types.py:element_type", 0),
            "aliases": sum(n for k, n in functions.items() if k.startswith("kernels/aliases.py:")),
            "entries": dict(entries.most_common())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("targets", nargs="*", default=DEFAULT, help="FILE::KERNEL")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # FILE::KERNEL, in the child: its walk as JSON
    args = parser.parse_args()
    if args.one:
        file, kernel = args.one.rsplit("::", 1)
        print(json.dumps(walk(Path(file), kernel)))
        return 0
    results = []
    for target in args.targets:
        done = subprocess.run([sys.executable, __file__, "--one", target], capture_output=True, text=True, check=False)
        try:
            results.append(json.loads(done.stdout.strip().splitlines()[-1]))
        except (IndexError, json.JSONDecodeError):
            results.append({"kernel": target, "error": done.stderr.strip()[-300:]})
    rows = [[r["kernel"], r.get("origin", r.get("error", "")), str(r.get("crossings", "")), str(r.get("modules", "")),
             str(r.get("again", "")), str(r.get("edges", "")),
             f"{r.get('most_distinct', '')} ({r.get('most_distinct_module', '')})", str(len(r.get("over_twice", []))),
             str(r.get("climbs", "")), str(r.get("element_type", "")), str(r.get("aliases", ""))] for r in results]
    table("one kernel's plan, its crossings between fsr's modules (target: every module entered at most twice)",
          ["kernel", "spec", "crossings", "modules", "into a module left before", "distinct call edges",
           "most call sites into one module", "modules entered from > 2 sites", "kernels/ -> drafting/",
           "element_type", "aliases.py"], rows)
    for r in results:
        if r.get("over_twice"):
            print(f"{r['kernel']}: entered from more than two call sites: {', '.join(r['over_twice'])}")
    save("kernel_walk", {"walks": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
