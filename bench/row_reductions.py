"""Row reductions at real sizes searched by the built-in generator, through `fsr optimize` as a
user runs it (issue 36): the naive one-thread-per-row softmax, layernorm and row sum of
tests/gpu/kernels/accuracy/ at 8,192 rows of 768 and of 50,257 columns, and the README's own
examples/softmax.cu. Prints the speedup found, when the first verified win came, and the
candidate that won.

    cd bench && python3 row_reductions.py [SECONDS]   (default 60 s a search)
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import ROOT, save, table

ACCURACY = ROOT / "tests" / "gpu" / "kernels" / "accuracy"
CASES = [
    ("softmax 8192 x 50257", ACCURACY / "softmax.cu", "softmax", "bench = { N = 8192, C = 50257 }"),
    ("softmax 8192 x 768", ACCURACY / "softmax.cu", "softmax", "bench = { N = 8192, C = 768 }"),
    ("layernorm 8192 x 768", ACCURACY / "layernorm.cu", "layernorm", "bench = { N = 8192, C = 768 }"),
    ("rowsum 8192 x 768", ACCURACY / "rowsum.cu", "rowsum", "bench = { rows = 8192, cols = 768 }"),
    ("examples/softmax.cu (README)", ROOT / "examples" / "softmax.cu", "softmax", None),
]


def run(label: str, path: Path, kernel: str, bench: str | None, seconds: float, work: Path) -> dict:
    text = path.read_text()
    if bench is not None:
        text = re.sub(r"^bench\s*=.*$", bench, text, count=1, flags=re.M)
    folder = work / kernel / re.sub(r"\W+", "_", label)
    folder.mkdir(parents=True)
    (folder / ".git").mkdir()  # the workspace: its own .fsr/ history, nothing stored from another run
    file = folder / path.name
    file.write_text(text)
    proc = subprocess.run([sys.executable, "-m", "fsr_lsp.cli.main", "optimize", str(file), "--kernel", kernel,
                           "--time-budget", str(seconds)], capture_output=True, text=True, timeout=seconds * 4 + 120,
                          cwd=folder)
    out = proc.stdout + proc.stderr
    first = re.search(r"first fully verified win after ([\d.]+) s; the search took ([\d.]+) s", out)
    final = re.search(rf"{kernel}: (\w[\w ]*?): (.*)", out)
    speedup = re.search(r"([\d.]+)x", final.group(2)) if final else None
    return {"case": label, "status": final.group(1) if final else f"rc {proc.returncode}",
            "speedup": float(speedup.group(1)) if speedup else None,
            "first_win_s": float(first.group(1)) if first else None, "search_s": float(first.group(2)) if first else None,
            "winner": "warp-per-row" if "one warp per row" in out.split("first fully verified")[0] else "",
            "log": out[-4000:]}


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, path, kernel, bench in CASES:
            results.append(run(label, path, kernel, bench, seconds, Path(tmp)))
            r = results[-1]
            print(f"{label}: {r['status']} {r['speedup']}x, first win {r['first_win_s']} s", flush=True)
    table(f"built-in search, {seconds:g} s a kernel, through fsr optimize",
          ["kernel", "result", "speedup", "first win (s)", "search (s)"],
          [[r["case"], r["status"], f"{r['speedup']:.2f}x" if r["speedup"] else "-",
            r["first_win_s"] if r["first_win_s"] is not None else "-", r["search_s"] or "-"] for r in results])
    save("row_reductions", results)


if __name__ == "__main__":
    main()
