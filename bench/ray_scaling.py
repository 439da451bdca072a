"""Candidates per minute through the Ray backend with every GPU of the cluster against one GPU
(issue 13's target: at least 1.8x with 2 GPUs). The candidates are the built-in tuner's
launch shapes and knobs for a naive kernel, each fully verified and timed, the same set for
both runs. Run on a machine with 2+ GPUs, after `ray start --head` or with a local Ray:

    python bench/ray_scaling.py [ADDRESS] [COUNT]
"""

from __future__ import annotations

import sys
import time

from _common import ROOT, save, table

from fsr_lsp.evaluator.ray_backend import RayBackend
from fsr_lsp.evaluator.requests import EvalRequest
from fsr_lsp.kernels import discover, kernel_source
from fsr_lsp.search.tuning import Config, render, space_of
from fsr_lsp.source import SourceText
from fsr_lsp.spec import parse_spec

KERNEL = ROOT / "bench" / "naive_kernels" / "transpose.cu"


def requests(count: int, gpu) -> list[EvalRequest]:
    source = KERNEL.read_text()
    src = SourceText(source)
    kernel = discover(src).kernels[0]
    spec = parse_spec(src, kernel).spec
    definition = kernel_source(src, kernel).definition
    space = space_of(kernel, spec, definition, gpu)
    configs = space.block_configs() + [Config(block=c.block, restrict="restrict") for c in space.block_configs()]
    out = []
    for c in configs[:count]:
        p = render(c, space, kernel, spec, definition, gpu)
        if p is not None:
            out.append(EvalRequest(source, kernel.name, p.source))
    return out


def rate(backend: RayBackend, work: list[EvalRequest]) -> tuple[float, int]:
    backend.start()
    backend.handle(work[:backend.gpus])  # compile caches and worker start-up out of the timing
    started = time.monotonic()
    results = backend.handle(work)
    seconds = time.monotonic() - started
    return len(work) / seconds * 60, sum(r.verified for r in results)


def main(address: str, count: int) -> None:
    import ray

    if address == "local":
        ray.init(include_dashboard=False, logging_level="ERROR", log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}})
    one = RayBackend(address, max_gpus=1)
    gpu = one.start()
    work = requests(count, gpu)
    single, ok1 = rate(one, work)
    one.close()
    every = RayBackend(address)
    n = every.gpus
    multi, ok2 = rate(every, work)
    hosts = sorted({f"{i.name} {i.uuid} on {i.host}" for i in every.infos})
    every.close()
    table(f"Ray backend: {len(work)} candidates of {KERNEL.name}, verified and timed in full",
          ["GPUs", "candidates/min", "verified", "scaling"],
          [[1, single, ok1, 1.0], [n, multi, ok2, multi / single]])
    print("GPUs:", "; ".join(hosts))
    save("ray_scaling", {"gpus": n, "per_min_1": single, "per_min_n": multi, "scaling": multi / single,
                         "candidates": len(work), "devices": hosts, "date": time.strftime("%Y-%m-%d")})


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "local", int(sys.argv[2]) if len(sys.argv) > 2 else 48)
