"""Agreement with Nsight Compute: our median kernel time against ncu's gpu__time_duration,
same sizes, clocks left as they are. Target: within 5%.

Also measured: the fixed cost of the event pair around a launch, timed on an empty kernel
with the same protocol. fsr does not subtract it (an over-correction would inflate the
speedups of short kernels); it is why very short kernels read a few microseconds high.
"""

from __future__ import annotations

import csv
import io
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import ROOT, save, table

from fsr_lsp.evaluator import Evaluator, evaluate

# (label, example file, kernel, bench-size edit)
KERNELS = [
    ("saxpy", "saxpy.cu", "saxpy", None),
    ("saxpy (n=2^26)", "saxpy.cu", "saxpy", ("bench = { n = 16777216 }", "bench = { n = 67108864 }")),
    ("transpose", "transpose.cu", "transpose", None),
    ("matmul", "matmul.cu", "matmul", None),
]
UNIT = {"nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0, "second": 1e3, "ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


def source(file: str, edit: tuple[str, str] | None) -> str:
    text = (ROOT / "examples" / file).read_text()
    return text.replace(*edit) if edit else text


def ncu_times(ncu: str, path: str, name: str) -> list[float]:
    cmd = [ncu, "--metrics", "gpu__time_duration.sum", "--kernel-name", f"regex:{name}", "--clock-control", "none",
           "--cache-control", "all", "--csv", sys.executable, str(ROOT / "bench" / "ncu_target.py"), path, name, "7"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    text = out.stdout[out.stdout.find('"ID"'):]
    times = [float(row["Metric Value"].replace(",", "")) * UNIT[row["Metric Unit"]]
             for row in csv.DictReader(io.StringIO(text)) if row.get("Metric Name") == "gpu__time_duration.sum"]
    if not times:
        raise SystemExit(f"ncu gave no times for {name}:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return times


def main() -> None:
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    rows, records = [], {}
    with Evaluator() as ev:
        ev.start()
        ours = {}
        for label, file, name, edit in KERNELS:
            r = evaluate(ev, source(file, edit), name)
            assert r.verified, r.message
            ours[label] = (r.original_time.median_ms, r.bench_size)
    with tempfile.TemporaryDirectory() as tmp:
        for label, file, name, edit in KERNELS:
            path = Path(tmp) / f"{label.split()[0]}-{len(records)}.cu"
            path.write_text(source(file, edit))
            theirs = statistics.median(ncu_times(ncu, str(path), name))
            mine, size = ours[label]
            diff = 100.0 * (mine - theirs) / theirs
            rows.append([label, size, mine, theirs, diff])
            records[label] = {"bench": size, "fsr_median_ms": mine, "ncu_median_ms": theirs, "diff_pct": diff}
    overhead = empty_kernel_ms()
    table(f"fsr timing vs ncu gpu__time_duration on {ev.gpu.name}",
          ["kernel", "bench size", "fsr median ms", "ncu median ms", "difference %"], rows)
    print(f"event pair around an empty kernel, same protocol: {overhead * 1000:.2f} us (not subtracted)")
    save("ncu_agreement", {"gpu": ev.gpu.name, "kernels": records, "empty_kernel_event_ms": overhead})


def empty_kernel_ms() -> float:
    """Median event time of a do-nothing kernel under fsr's timing protocol."""
    from fsr_lsp.evaluator.gpu.session import GpuSession

    session = GpuSession(0)
    torch = session.torch
    times = []
    for _ in range(60):
        session.flush_l2()
        release = session.hold_gpu()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(0)
        end.record()
        release()
        times.append((start, end))
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in times[10:])


if __name__ == "__main__":
    main()
