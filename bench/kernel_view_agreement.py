"""A large text's kernels drafted from their views (kernels/kernel_view.py) and from the whole
text: the same spec for each, and what each way costs.

The text is a corpus's files concatenated to `--mb` megabytes (as the 10 MB bench of
real_documents.py makes it), written into a copy of the corpus (its launch index the workspace);
`--sample N` kernels drawn at random (seed 0) with the spec-less launched kernel nearest the
middle first. Every field of each KernelSpec is compared.

    python bench/kernel_view_agreement.py --corpus DIR [--mb 10] [--sample 60]
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import save, table
from real_documents import big_text, spec_less_target, workspace


def fields(spec) -> dict:
    return {f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)}


def compare(root: Path, path: Path, text: str, names: list[str]) -> dict:
    from fsr_lsp.drafting.resolver import workspace_spec
    from fsr_lsp.drafting.workspace import LaunchIndex
    from fsr_lsp.kernels import discover, kernel_view
    from fsr_lsp.source import SourceText

    kernels = {k.name: k for k in reversed(discover(SourceText(text)).kernels)}  # the first of a name
    index = LaunchIndex(root)
    rows, view_s, whole_s = [], [], []
    default = kernel_view.VIEW_BYTES
    for name in names:
        kernel = kernels[name]
        started = time.perf_counter()
        seen = workspace_spec(index, path, text, kernel, {path: text})
        view_s.append(time.perf_counter() - started)
        kernel_view.VIEW_BYTES = 1 << 62  # the whole text
        try:
            started = time.perf_counter()
            whole = workspace_spec(index, path, text, kernel, {path: text})
            whole_s.append(time.perf_counter() - started)
        finally:
            kernel_view.VIEW_BYTES = default
        a, b = fields(seen), fields(whole)
        differ = [f for f in a if a[f] != b[f]]
        rows.append({"kernel": name, "origin": whole.origin, "differ": differ,
                     "view": {f: str(a[f])[:300] for f in differ}, "whole": {f: str(b[f])[:300] for f in differ}})
    return {"rows": rows, "view_s": view_s, "whole_s": whole_s}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--mb", type=float, default=10.0)
    parser.add_argument("--sample", type=int, default=60)
    args = parser.parse_args()
    from fsr_lsp.kernels import discover_kernels
    from fsr_lsp.source import SourceText

    with tempfile.TemporaryDirectory() as tmp:
        root = workspace(args.corpus, Path(tmp))
        text = big_text(root, args.mb)
        path = root / "big_concatenated.cu"
        path.write_text(text)
        first, _, count = spec_less_target(text)
        names = sorted({k.name for k in discover_kernels(SourceText(text))} - {first})
        names = [first, *random.Random(0).sample(names, min(args.sample, len(names)))]
        result = compare(root, path, text, names)
    rows = result["rows"]
    same = sum(not r["differ"] for r in rows)
    origins = statistics.multimode([r["origin"] for r in rows])
    table(f"{len(text.encode()) / 1e6:.1f} MB of {args.corpus.name} ({count} kernels): specs from the view and the whole text",
          ["kernels", "the same", "differ", "view: first / median s", "whole: first / median s", "commonest origin"],
          [[str(len(rows)), str(same), str(len(rows) - same),
            f"{result['view_s'][0]:.2f} / {statistics.median(result['view_s']):.2f}",
            f"{result['whole_s'][0]:.2f} / {statistics.median(result['whole_s']):.2f}", ",".join(origins)]])
    for r in rows:
        if r["differ"]:
            print(f"{r['kernel']}: {', '.join(r['differ'])}\n  view:  {r['view']}\n  whole: {r['whole']}")
    save("kernel_view_agreement", {"corpus": str(args.corpus), "mb": args.mb, **result})
    return 0 if same == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
