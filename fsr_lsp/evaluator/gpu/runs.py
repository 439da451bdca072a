"""Launches that verification makes: a kernel on guarded buffers (one launch or several back to
back, every buffer's contents after each), and the original built in double precision."""

from __future__ import annotations

import time
from typing import Any

from ..records import SLOW_MARK, SizePlan
from ..job.widening import wide_args
from .accuracy import to_wide
from .buffers import poisoned
from .common import Failure, JobContext, buffers_of, guarded_launch, launch_args, outputs
from .guards import GuardedSet, describe_overrun, guarded_set
from .oracle import OracleProblem
from .printed import Printed
from .relocation import canonical
from .shared import SharedPoison

WIDE_CHECK = "double-precision reference"


SLOW_LAUNCH_S = 0.25  # a launch this long is reported: verification runs each size dozens of times


def launch_runs(ctx: JobContext, who: str, plan: SizePlan, inputs: dict[str, Any], which: str, launches: int,
                shared: SharedPoison | None) -> list[dict[str, Any]]:
    """Launch `launches` times back to back on one set of guarded buffers (copies of the inputs,
    poisoned outputs); every buffer's contents after each launch."""
    kernel = ctx.kernel(who)
    launch = plan.original if who == "original" else plan.candidate
    arena = guarded_set(ctx.torch, ctx.session.device, buffers_of(plan), which,
                        {a.name: inputs.get(a.name) for a in buffers_of(plan) if a.direction != "out"})
    guards = arena.guards
    args = launch_args(plan.args, {name: g.tensor for name, g in guards.items()})
    addresses = {name: g.tensor.data_ptr() for name, g in guards.items()}
    footprint = kernel.shared_bytes + launch.smem
    if who == "original" and kernel.state is not None:
        kernel.state.restore()  # its module's variables as loaded, as the program's first launch has them
    snapshots = []
    ctx.session.take_printed()  # what earlier work printed is no launch's of these
    ctx.printed = []
    for k in range(launches):
        if shared is not None:
            shared(footprint)
        started = time.perf_counter()
        guarded_launch(ctx.session, who, plan.label, lambda: kernel.launch(args, launch))
        took = time.perf_counter() - started
        _native_time(ctx, who, plan, took)
        if took >= SLOW_LAUNCH_S:  # a time limit reached later says "slow", not "hung"
            ctx.report(f"checking {plan.label}: {SLOW_MARK} {who} took {took:.2g} s")
        ctx.printed.append(Printed.of(ctx.session.take_printed()))
        _check_bands(who, plan, arena)
        last = k == launches - 1
        snapshot = {name: g.tensor if last else g.tensor.clone() for name, g in guards.items()}
        canonical(ctx.torch, plan.args, snapshot, addresses)  # pointers put back as saved: runs compare
        snapshots.append(snapshot)
    return snapshots


def _native_time(ctx: JobContext, who: str, plan: SizePlan, seconds: float) -> None:
    """The fastest launch (and wait) of the kernel being checked at this size: what the
    sanitizers' cost model starts from (host clock: a few microseconds of launch included)."""
    if who == ("candidate" if ctx.candidate is not None else "original"):
        known = ctx.result.native_ms.get(plan.label)
        ctx.result.native_ms[plan.label] = min(known, seconds * 1e3) if known is not None else seconds * 1e3


def _check_bands(who: str, plan: SizePlan, arena: GuardedSet) -> None:
    found = arena.overrun()
    if found is None:
        return
    name, g = found
    overrun = describe_overrun(name, plan.label, g.extent())
    if who == "original":
        raise OracleProblem(f"{overrun}: the spec's length for `{name}` is too small", "in bounds", name)
    raise Failure("wrong", f"the candidate {overrun}", check="guard bands")


def double_outputs(ctx: JobContext, plan: SizePlan, inputs: dict[str, Any]) -> dict[str, Any]:
    """The original run in double precision on the same inputs (float32 promoted exactly): each
    output as that run leaves it."""
    torch, session = ctx.torch, ctx.session
    wide = wide_args(plan)
    tensors = {}
    for a in wide:
        if a.kind != "buffer":
            continue
        if a.direction == "out":
            tensors[a.name] = poisoned(torch, session.device, a, "A")  # NaN for the promoted floats
        else:
            tensors[a.name] = to_wide(torch, inputs[a.name])
    args = launch_args(wide, tensors)
    launch = plan.original
    doubled = type(launch)(launch.grid, launch.block, launch.smem * 2)  # its shared arrays hold doubles now
    assert ctx.wide is not None
    guarded_launch(session, "original", plan.label, lambda: ctx.wide.launch(args, doubled),  # type: ignore[union-attr]
                   what=f"the original built in double precision failed at {plan.label}", status="crashed",
                   check=WIDE_CHECK)
    canonical(torch, wide, tensors, {name: t.data_ptr() for name, t in tensors.items()})
    return {a.name: tensors[a.name] for a in outputs(plan)}
