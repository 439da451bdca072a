"""Each buffer, once per size, placed against unmapped address space: a read or write past it
faults, and the fault names the buffer (the guard bands catch only what changes a canary)."""

from __future__ import annotations

from ..records import Check, SizePlan
from .buffers import poisoned
from .common import JobContext, buffers_of, guarded_launch, launch_args, make_inputs, seed_for
from .guards import UnmappedPages, UnmappedUnavailable, placements


def unmapped_layer(ctx: JobContext, who: str) -> Check:
    """Each buffer, one launch at a time, against unmapped address space; a fault fails the
    kernel (the original's: the spec's lengths) and names the buffer."""
    d = ctx.job.defences
    if not d.unmapped_pages:
        return Check("unmapped pages", "skip", "switched off")
    try:
        pages = ctx.session.unmapped_pages()
    except UnmappedUnavailable as e:
        return Check("unmapped pages", "skip", str(e))
    kernel = ctx.kernel(who)
    memo = (kernel.digest, tuple((p.label, tuple(a.length for a in p.args)) for p in ctx.job.sizes))
    ran: dict[str, list[str]] = {"start": [], "end": []}
    left: list[str] = []
    for index, plan in enumerate(ctx.job.sizes):
        sizes = {a.name: a.nbytes for a in buffers_of(plan)}
        if sum(sizes.values()) > d.layered_max_bytes:
            left.append(plan.label)
            continue
        if memo not in ctx.session.vetted:
            ctx.report(f"unmapped-page placements at {plan.label}")
            inputs = make_inputs(ctx.session, plan, seed_for(ctx.job, index, 0))
            for a in buffers_of(plan):
                for where in placements(sizes[a.name]):
                    _run_placed(ctx, who, plan, inputs, a.name, sizes[a.name], where, pages)
        for where in ("start", "end"):
            if all(where in placements(n) for n in sizes.values()):
                ran[where].append(plan.label)
    if who == "original":
        ctx.session.vetted.add(memo)
    parts = [f"every buffer starting at unmapped memory at {', '.join(ran['start'])}"]
    if ran["end"]:
        parts.append(f"ending there at {', '.join(ran['end'])}")
    others = [p.label for p in ctx.job.sizes if p.label not in ran["end"] and p.label not in left]
    if others:
        parts.append(f"not ending there at {', '.join(others)} (lengths off the 256-byte alignment: guard bands only)")
    if left:
        parts.append(f"{', '.join(left)} left to the guard bands (over {d.layered_max_bytes >> 20} MiB)")
    return Check("unmapped pages", "pass", "; ".join(parts))


def _run_placed(ctx: JobContext, who: str, plan: SizePlan, inputs: dict, name: str, nbytes: int, where: str,
                pages: UnmappedPages) -> None:
    torch, session = ctx.torch, ctx.session
    kernel = ctx.kernel(who)
    launch = plan.original if who == "original" else plan.candidate
    tensors = {a.name: inputs[a.name].clone() if a.direction != "out" else poisoned(torch, session.device, a, "A")
               for a in buffers_of(plan)}
    ptr = pages.place(nbytes, at_end=where == "end")
    args = launch_args(plan.args, tensors, placed={name: ptr})  # before the copy: it writes the pointers it holds
    session.cuda.memcpy_dtod(ptr, tensors[name].data_ptr(), nbytes)
    side = "past the end" if where == "end" else "before the start"
    what = (f"the {who} kernel faulted with `{name}` {'ending' if where == 'end' else 'starting'} at unmapped memory at "
            f"{plan.label}: it reads or writes {side} of `{name}`")
    if who == "original":
        what += f" (the spec's length for `{name}` is too small)"
    guarded_launch(session, who, plan.label, lambda: kernel.launch(args, launch), what=what,
                   status="wrong" if who == "candidate" else "spec_error", check="unmapped pages", argument=name)

