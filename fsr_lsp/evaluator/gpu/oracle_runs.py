"""Verification's use of the kept runs (oracle_cache.py): which of the original's runs are kept,
under what key, and what of them."""

from __future__ import annotations

import time
from typing import Any

from ..records import SizePlan
from .common import JobContext, outputs
from .oracle_cache import WORTH_SECONDS, OracleRuns, cacheable, has_variables, run_key, tensor_bytes
from .printed import Printed
from .shared import SharedPoison


def verify_key(ctx: JobContext, index: int, plan: SizePlan, seed: int, launches: int,
                shared: SharedPoison | None) -> str | None:
    """The original's runs at this size and seed, as a later job of the same original meets them
    (gpu/oracle_cache.py): the bench size's, where the job's bench seed is one a search keeps, and
    every size's where its seeds are (a search's rounds). None elsewhere (fresh seeds never come
    again), and for memory holding pointers, textures, and a module with variables of its own."""
    job = ctx.job
    shared_here = job.seeds_shared or (plan.role == "bench" and job.bench_seed is not None)
    if not shared_here or not cacheable(plan) or has_variables(ctx.original):
        return None
    return run_key("verify", ctx.job, ctx.original.digest, ctx.wide.digest if ctx.wide is not None else "", plan, seed,
                   index=index, launches=launches, shared=shared is not None, grounded=sorted(ctx.accuracy.grounded),
                   why_not=ctx.accuracy.why_not)


def worth_keeping(ctx: JobContext, plan: SizePlan, printed: list[Printed], printed_again: Printed,
                   started: float) -> bool:
    """Runs that printed nothing (a printing original is compared line by line, and its flood
    watched, as it runs) and cost enough to keep: any, where every job of a search draws these
    seeds (a quick original's test sizes are still most of a small candidate's host time)."""
    costly = ctx.job.seeds_shared or time.perf_counter() - started >= WORTH_SECONDS
    return costly and not printed_again.lines and not any(p.lines for p in printed)


def kept_runs(plan: SizePlan, expected: list[dict], again: dict, printed: list[Printed], printed_again: Printed,
          spread: set[str], double: dict | None) -> tuple[OracleRuns, int]:
    """What a later job reads of these runs (the outputs), and its bytes."""
    names = [a.name for a in outputs(plan)]
    runs = OracleRuns([{n: _own(e[n]) for n in names} for e in expected], {n: _own(again[n]) for n in names},
                      printed, printed_again, set(spread), double)
    return runs, tensor_bytes([runs.expected, runs.again, runs.double])


def _own(tensor: Any) -> Any:
    """An output on its own memory: a run's last outputs are views of its buffers' one allocation
    (gpu/guards.py), which a kept view would hold whole, unseen by the cache's byte count."""
    return tensor.clone() if tensor.untyped_storage().nbytes() > tensor.nbytes else tensor
