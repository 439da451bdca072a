"""Issue 60 item 3: how long the editor's static draft of one kernel takes on real documents
(`drafting/workspace.py: workspace_spec`, what a hover on a kernel without a spec waits for). No
GPU. Every `.cu` of the corpus folder is a document of one workspace (the folder); the workspace's
very first draft also builds the launch index (timed apart: the server does that once), then each kernel
that takes a pointer is drafted, as the file's first or later kernel would be ("first draft":
the server has drafted nothing of it yet), then again (what a later hover pays). Target: p95 <= 10 ms.

    python bench/draft_latency.py CORPUS [--files N] [--slowest K]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from _common import console, save, table

from fsr_lsp.drafting.resolver import workspace_spec

from fsr_lsp.drafting.workspace import LaunchIndex
from fsr_lsp.kernels import discover
from fsr_lsp.source import SourceText


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def takes_a_pointer(kernel) -> bool:
    return any(p.is_pointer for p in kernel.params)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--files", type=int, default=0, help="at most this many documents (0: all)")
    parser.add_argument("--slowest", type=int, default=8)
    args = parser.parse_args()
    files = sorted(args.corpus.rglob("*.cu"))[: args.files or None]
    index = LaunchIndex(args.corpus)
    started = time.perf_counter()
    rows, cold, warm, slow, drafted = [], [], [], [], 0
    first: float | None = None
    for path in files:
        text = path.read_text(errors="replace")
        try:
            kernels = [k for k in discover(SourceText.of(text)).kernels if takes_a_pointer(k)]
        except Exception as e:  # a document tree-sitter cannot read: said, not counted
            console.print(f"{path}: {e}", markup=False)
            continue
        for kernel in kernels:
            if first is None:  # the workspace's first draft also reads every file's launches: apart
                t = time.perf_counter()
                workspace_spec(index, path, text, kernel)
                first = (time.perf_counter() - t) * 1e3
            for times in (cold, warm):
                t = time.perf_counter()
                spec = workspace_spec(index, path, text, kernel)
                times.append((time.perf_counter() - t) * 1e3)
            drafted += spec.spec is not None
            slow.append((cold[-1], warm[-1], f"{path.relative_to(args.corpus)}:{kernel.name}"))
    total = time.perf_counter() - started
    if not cold:
        console.print("no kernel that takes a pointer in the corpus")
        return 1
    for name, values in (("first draft of a kernel", cold), ("the same again", warm)):
        rows.append([name, len(values), round(statistics.median(values), 2), round(percentile(values, 0.95), 2),
                     round(max(values), 1)])
    rows.append(["the workspace's first (its launch index built)", 1, round(first or 0.0, 1), "", ""])
    table(f"static drafts, {len(files)} documents of {args.corpus.name} ({total:.1f} s in all; {drafted} of {len(cold)} "
          "kernels got a spec)", ["", "kernels", "p50 ms", "p95 ms", "max ms"], rows)
    table("the slowest first drafts", ["first ms", "again ms", "kernel"],
          [[round(c, 1), round(w, 1), where] for c, w, where in sorted(slow, reverse=True)[: args.slowest]])
    save("draft_latency", {"rows": rows, "slowest": sorted(slow, reverse=True)[:50], "drafted": drafted})
    return 0


if __name__ == "__main__":
    sys.exit(main())
