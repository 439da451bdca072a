"""Run one example kernel at its bench size a few times, for ncu to measure (see ncu_agreement)."""

from __future__ import annotations

import sys
from pathlib import Path

from _common import ROOT

from fsr_lsp.evaluator import EvalOptions, prepare
from fsr_lsp.evaluator.gpu.run import _inputs
from fsr_lsp.evaluator.gpu.buffers import poisoned
from fsr_lsp.evaluator.gpu.session import GpuSession


def main(file: str, name: str, launches: int) -> None:
    session = GpuSession(0)
    path = Path(file) if Path(file).is_absolute() else ROOT / "examples" / file
    prepared = prepare(path.read_text(), name, None, session.info.arch, EvalOptions())
    job = prepared.job
    bench = job.sizes[-1]
    kernel = session.load(job.original, [None if a.kind == "buffer" else a.dtype for a in bench.args])
    inputs = _inputs(session, bench, 1)
    for _ in range(launches):
        bufs = {a.name: inputs[a.name].clone() if a.direction != "out" else poisoned(session.torch, session.device, a, "A")
                for a in bench.args if a.kind == "buffer"}
        session.flush_l2()
        kernel.launch([bufs[a.name].data_ptr() if a.kind == "buffer" else a.value for a in bench.args], bench.original)
        session.synchronize()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
