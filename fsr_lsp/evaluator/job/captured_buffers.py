"""Buffers whose spec says `captured()`: their contents are the bytes a captured run of the
user's program had there (`fsr capture --snapshot-bytes`), at every seed, while the other
inputs stay random. For inputs whose structure random values cannot have (a scan's offsets,
CSR row pointers, a permutation), at the size the run had (a smaller size takes their start,
and the proof says whether that serves).

A spec's `bench_inputs = "captured"` gives every saved input the run's bytes at the bench size
alone, the test sizes staying random: a check kernel that prints a line per mismatch prints
millions on random inputs the size a run had, and none on the run's own. A few elements of each
are drawn afresh (as the spec draws the buffer elsewhere) at every input set and timed run, so
no two sets are the same bytes: a rewrite that skips the bench size's work, or returns a result
cached from an earlier launch, differs from the original there.

Plain data in and out (no GPU): the plans get each such buffer's source here, before the job
leaves for a worker, and a spec that cannot be met is said before anything runs.
"""

from __future__ import annotations

import dataclasses
import os

from ..records import ArgPlan, SizePlan
from ...specs.model import Init
from .linked_memory import value_from_capture, with_linked_memory


def with_captured_sources(plans: list[SizePlan], real_inputs: dict[str, str],
                          bench_from_run: bool = False) -> tuple[list[SizePlan], str]:
    """The plans with each captured() buffer's "OFFSET:PATH" (with `bench_from_run`, every saved
    input's at the bench size); ([], why) when one has no saved bytes, or fewer than a size needs."""
    out = []
    for plan in plans:
        args = []
        if bench_from_run and plan.role == "bench":
            plan, why = _bench_from_capture(plan, real_inputs)
            if why:
                return [], why
        for arg in plan.args:
            if arg.kind == "bytes":
                where = real_inputs.get(arg.name)
                if where is None or not saved_bytes("0:" + where.partition(":")[2]):
                    return [], (f"`{arg.name}` = captured() needs the bytes a captured run passed for it, and none were "
                                f"saved: run your program under `fsr capture --snapshot-bytes N -- CMD` first")
                args.append(value_from_capture(arg, where))
                continue
            if arg.kind == "buffer" and arg.init is not None and arg.init.kind == "captured" and arg.direction != "out":
                where = real_inputs.get(arg.name)
                if where is None:
                    return [], (f"`{arg.name}` = captured() needs the bytes a captured run saved for it, and none were "
                                f"given: run your program under `fsr capture --snapshot-bytes N -- CMD` first")
                saved = saved_bytes(where)
                if saved < arg.nbytes:
                    return [], (f"`{arg.name}` = captured() fits the captured size only: at {plan.label} it needs "
                                f"{arg.nbytes} bytes, the run saved {saved} (give no test sizes and edge = false)")
                arg = dataclasses.replace(arg, source=where)
            args.append(arg)
        out.append(with_linked_memory(dataclasses.replace(plan, args=args)))
    return out, ""


def _bench_from_capture(plan: SizePlan, real_inputs: dict[str, str]) -> tuple[SizePlan, str]:
    """The bench size with each input the run saved as captured() (`bench_inputs = "captured"`)."""
    saved = [a for a in plan.args if _takes_saved(a, real_inputs)]
    if not saved:
        return plan, ('bench_inputs = "captured" needs the bytes a captured run saved for the kernel\'s input buffers, '
                      'and none were given: run your program under `fsr capture --snapshot-bytes N -- CMD` first')
    short = next((a for a in saved if saved_bytes(real_inputs[a.name]) < a.nbytes), None)
    if short is not None:
        return plan, (f'bench_inputs = "captured" gives the bench size the run\'s own inputs, so it must be the run\'s '
                      f'size: at {plan.label} `{short.name}` needs {short.nbytes} bytes, the run saved '
                      f'{saved_bytes(real_inputs[short.name])}')
    args = [dataclasses.replace(a, init=Init("captured"), source=real_inputs[a.name], fresh=a.init) if a in saved
            else a for a in plan.args]
    return dataclasses.replace(plan, args=args), ""


def _takes_saved(arg: ArgPlan, real_inputs: dict[str, str]) -> bool:
    return (arg.kind == "buffer" and arg.direction != "out" and not arg.hidden and arg.name in real_inputs
            and (arg.init is None or arg.init.kind != "captured"))


def bench_captured(plan: SizePlan, real_inputs: dict[str, str]) -> bool:
    """Whether every input the run saved is its own bytes at this size already (the captured
    input set would repeat the spec's own)."""
    own = [a for a in plan.args if a.kind == "buffer" and a.direction != "out" and a.name in real_inputs]
    return plan.role == "bench" and bool(own) and all(a.init is not None and a.init.kind == "captured" for a in own)


def saved_bytes(where: str) -> int:
    """Bytes of a saved buffer from its offset on; 0 when the file is gone."""
    offset, _, path = where.partition(":")
    try:
        return max(0, os.path.getsize(path) - int(offset))
    except (OSError, ValueError):
        return 0


def read_saved(where: str, nbytes: int) -> bytes:
    """Up to `nbytes` of a saved buffer ("OFFSET:PATH"), fewer when the file ends first;
    OSError or ValueError when it cannot be read."""
    offset, _, path = where.partition(":")
    with open(path, "rb") as f:
        f.seek(int(offset))
        return f.read(nbytes)
