"""Which structural rewrites fire on public kernels (issue 45 item 1: recognisers tested on code
fsr was not written for). Every kernel of every .cu file under the folders given gets its spec
as `fsr spec` resolves it (launches anywhere in its project, no GPU, no capture), then the
structural rewrites are asked for. No GPU: this says where the recognisers apply; whether a
rewrite is verified and faster is the GPU benches' (`bench/real_programs.py`).

    python bench/recognisers_on_public.py FOLDER...
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from _common import save, table

from fsr_lsp.drafting.resolver import file_specs

from fsr_lsp.drafting.workspace import LaunchIndex
from fsr_lsp.kernels import find_kernel, kernel_source
from fsr_lsp.search.generators.structural import structural_proposals
from fsr_lsp.source import SourceText
from fsr_lsp.specs import parse_spec
from fsr_lsp.drafting.placement import place_spec


def rewrites_of(path: Path, index: LaunchIndex) -> list[tuple[str, str, list[str]]]:
    """(kernel, how its spec came, the structural rewrites that fire) for each kernel of the file."""
    text = path.read_text(errors="replace")
    out = []
    for ks in file_specs(index, path, text):
        if ks.spec is None:
            out.append((ks.kernel, f"no spec: {ks.origin}", []))
            continue
        try:
            placed = place_spec(text, ks.kernel, ks.spec).text if ks.origin != "attached" else text
        except Exception:  # noqa: BLE001 - a row of the table, not a verdict
            out.append((ks.kernel, "not placed", []))
            continue
        src = SourceText(placed)
        kernel = find_kernel(src, ks.kernel)
        spec = parse_spec(src, kernel).spec if kernel else None
        if spec is None:
            out.append((ks.kernel, "spec does not parse", []))
            continue
        fired = [p.generator for p in structural_proposals(kernel, spec, kernel_source(src, kernel).definition)]
        out.append((ks.kernel, str(ks.origin), sorted(set(fired))))
    return out


def main(folders: list[Path]) -> int:
    rows, counts, records = [], Counter(), []
    kernels = specced = 0
    for folder in folders:
        index = LaunchIndex(folder, first_wait=None)
        for path in sorted(folder.rglob("*.cu")):
            for kernel, origin, fired in rewrites_of(path, index):
                kernels += 1
                specced += not origin.startswith(("no spec", "not placed", "spec does not"))
                counts.update(fired)
                records.append({"file": str(path.relative_to(folder)), "kernel": kernel, "origin": origin,
                                "rewrites": fired})
                if fired:
                    rows.append([f"{folder.name}/{path.relative_to(folder)}", kernel, ", ".join(fired)])
    table("structural rewrites that fire on public kernels (no GPU)", ["file", "kernel", "rewrites"], rows)
    print(f"{kernels} kernels, {specced} with a spec, {len(rows)} with a structural rewrite; by rewrite: "
          + ", ".join(f"{g.removeprefix('builtin:')} {n}" for g, n in counts.most_common()))
    save("recognisers_on_public", {"kernels": records, "by_rewrite": dict(counts)})
    return 0


if __name__ == "__main__":
    sys.exit(main([Path(a) for a in sys.argv[1:]]))
