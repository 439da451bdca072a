"""Candidates per minute through the Ray backend with every GPU of the cluster against one GPU
(issue 13's target: at least 1.8x with 2 GPUs). The candidates are the built-in tuner's
launch shapes and knobs for a naive kernel, each fully verified and timed, the same set for
both runs. Run on a machine with 2+ GPUs, after `ray start --head` or with a local Ray:

    python bench/ray_scaling.py [ADDRESS] [COUNT] [--share N]

With `--share N` (a local Ray on a machine with one GPU, when no multi-GPU machine is to be
had) Ray is told of N GPUs and every actor uses the one physical GPU: the fan-out runs as on
N GPUs, but its workers compete for one device, so the rate says how the fan-out overlaps
compilation and verification, not how N GPUs scale.
"""

from __future__ import annotations

import os
import sys
import time

from _common import ROOT, save, table

from fsr_lsp.evaluator.backends.ray_cluster import DEFAULT_FACTORY, RayBackend, local_backend_on_this_gpu
from fsr_lsp.evaluator.backends.local import EvalRequest
from fsr_lsp.kernels import discover, kernel_source
from fsr_lsp.search.generators.tuner import Config, render, space_of
from fsr_lsp.source import SourceText
from fsr_lsp.specs import parse_spec

KERNEL = ROOT / "bench" / "naive_kernels" / "transpose.cu"


def one_physical_gpu():
    """An actor's backend on the machine's only GPU, whichever GPU id Ray gave the actor."""
    os.environ["CUDA_VISIBLE_DEVICES"] = "0"
    return local_backend_on_this_gpu()


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
    backend.evaluate(work[:backend.gpus])  # compile caches and worker start-up out of the timing
    started = time.monotonic()
    results = backend.evaluate(work)
    seconds = time.monotonic() - started
    return len(work) / seconds * 60, sum(r.verified for r in results)


def main(address: str, count: int, share: int) -> None:
    import ray

    factory = "ray_scaling:one_physical_gpu" if share else DEFAULT_FACTORY
    if address == "local":
        ray.init(include_dashboard=False, logging_level="ERROR", log_to_driver=False,
                 num_gpus=share or None,
                 runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(
                     filter(None, [str(ROOT), str(ROOT / "bench"), os.environ.get("PYTHONPATH")]))}})
    one = RayBackend(address, max_gpus=1, factory=factory)
    gpu = one.start()
    work = requests(count, gpu)
    single, ok1 = rate(one, work)
    one.close()
    every = RayBackend(address, factory=factory)
    n = every.gpus
    multi, ok2 = rate(every, work)
    hosts = sorted({f"{i.name} {i.uuid} on {i.host}" for i in every.infos})
    every.close()
    shared = f", {n} workers sharing one GPU" if share else ""
    table(f"Ray backend: {len(work)} candidates of {KERNEL.name}, verified and timed in full{shared}",
          ["GPUs", "candidates/min", "verified", "scaling"],
          [[1, single, ok1, 1.0], [n, multi, ok2, multi / single]])
    print("GPUs:", "; ".join(hosts))
    save("ray_scaling", {"gpus": n, "per_min_1": single, "per_min_n": multi, "scaling": multi / single,
                         "candidates": len(work), "devices": hosts, "shared_gpu": bool(share), "date": time.strftime("%Y-%m-%d")})


if __name__ == "__main__":
    args = sys.argv[1:]
    share = 0
    if "--share" in args:
        at = args.index("--share")
        share = int(args[at + 1])
        del args[at:at + 2]
    main(args[0] if args else "local", int(args[1]) if len(args) > 1 else 48, share)
