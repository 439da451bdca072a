"""Where does a same-code timing bias come from? The original against itself three ways: as
compiled from the candidate's file, with the very same binary on both sides, and with the two
binaries swapped. A bias that follows the binary is the binary's; one that stays with the
side is the protocol's."""

from __future__ import annotations

import dataclasses
import hashlib

from _common import ROOT, save, table

from fsr_lsp.evaluator import EvalOptions, Evaluator, prepare, run_prepared
from fsr_lsp.kernels import find_kernel, kernel_source
from fsr_lsp.source import SourceText

KERNELS = [("tests/gpu/kernels/vadd.cu", "vadd"), ("examples/saxpy.cu", "saxpy"), ("examples/softmax.cu", "softmax")]


def main() -> None:
    rows, records = [], []
    options = dataclasses.replace(EvalOptions(), skip_unchanged=False)
    with Evaluator() as ev:
        gpu = ev.start()
        for path, name in KERNELS:
            source = (ROOT / path).read_text()
            src = SourceText(source)
            itself = kernel_source(src, find_kernel(src, name)).definition
            base = prepare(source, name, itself, gpu.arch, options)
            job = base.job
            same = hashlib.sha256(job.original.cubin).hexdigest() == hashlib.sha256(job.candidate.cubin).hexdigest()
            one = dataclasses.replace(job, candidate=job.original)
            variants = {
                "as compiled": job,
                "one binary": one,
                "swapped": dataclasses.replace(job, original=job.candidate, candidate=job.original),
                "one, hold x4": dataclasses.replace(one, timing=dataclasses.replace(job.timing, hold_cycles=400_000)),
                "one, no flush": dataclasses.replace(one, timing=dataclasses.replace(job.timing, flush_l2=False)),
                "one, flush x4": dataclasses.replace(one, timing=dataclasses.replace(job.timing, flush_factor=4)),
            }
            for label, variant in variants.items():
                for attempt in range(2):
                    r = run_prepared(ev, dataclasses.replace(base, job=variant, result=dataclasses.replace(base.result)))
                    low, high = r.speedup_ci or (0.0, 0.0)
                    rows.append([name, label, attempt, same, r.speedup or 0.0, low, high])
                    records.append({"kernel": name, "variant": label, "identical_cubins": same, "speedup": r.speedup,
                                    "interval": [low, high], "status": r.status})
    table(f"same code against itself on {gpu.name}", ["kernel", "variant", "try", "same cubin", "speedup", "low", "high"], rows)
    save("bias_probe", {"gpu": gpu.name, "runs": records})


if __name__ == "__main__":
    main()
