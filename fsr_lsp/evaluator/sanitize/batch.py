"""Several candidates under the sanitizers in one child per tool: a round's leaders confirmed
together (issue 59).

A child under compute-sanitizer spends most of its second on starting: the tool's CUDA context
(0.3 s under memcheck, 0.7 s under racecheck on an H200) and its exit; a leader's runs are a few
hundredths. One child per tool runs every leader's job in turn under one context. Each leader is
still judged on its own plan (its sizes, whether racecheck is needed), and a pass is read only
from a clean whole: the tool found no error in the child (its exit code, 0 only then, and its
summary) and every job ran clean (the child exits 0 only then). Anything else (an error, a job
that failed, a tool that cannot check the kernel, a child that did not finish) says nothing of
which leader it was: each leader then runs under that tool in children of its own, as a single
candidate does (sanitizer.py), so a fault names the leader that made it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from ..records import Check, EvalJob
from .children import TOOLS, HeadStart, Output, find_sanitizer, run_children
from .sanitizer import clean, passed, sanitize, sanitize_job, tool_plans
from .sanitizer_plan import ToolPlan


@dataclass(frozen=True)
class Leader:
    """One candidate to check: its job, its native times per size, its static shared memory
    (None: unknown, so racecheck runs)."""

    job: EvalJob
    native_ms: dict[str, float]
    static_shared: int | None = None


def sanitize_many(leaders: list[Leader], device_index: int = 0, tools: tuple[str, ...] = TOOLS,
                  timeout: float = 300.0, cancel: threading.Event | None = None,
                  prewarm: HeadStart | None = None) -> list[list[Check]]:
    """Each leader's checks, one per tool, as `sanitize` gives them for it alone."""
    tool_path = find_sanitizer()
    if len(leaders) < 2 or tool_path is None:
        return [sanitize(x.job, device_index, tools, timeout, x.native_ms, x.static_shared, cancel,
                         prewarm if i == 0 else None) for i, x in enumerate(leaders)]
    plans = [tool_plans(x.job, tools, x.native_ms, x.static_shared) for x in leaders]
    runs = {t: [i for i, p in enumerate(plans) if not p[t].skipped and p[t].sizes] for t in tools}
    work = [(t, [sanitize_job(leaders[i].job, plans[i][t].sizes, original=False) for i in runs[t]])
            for t in tools if runs[t]]
    outputs = run_children(work, tool_path, device_index, timeout * len(leaders), cancel, prewarm)  # type: ignore[arg-type]
    if prewarm is not None:
        prewarm.close()
    stopped = cancel is not None and cancel.is_set()
    alone = tuple(t for t in tools if runs[t] and not stopped and not clean(outputs[t]))
    checks = [_read(plans[i], tools, runs, outputs, i) for i in range(len(leaders))]
    if alone:  # a fault, or a run that could not tell: each leader on its own under those tools
        for i, x in enumerate(leaders):
            own = dict(zip(alone, sanitize(x.job, device_index, alone, timeout, x.native_ms, x.static_shared, cancel)))
            checks[i] = [own.get(c.name.removeprefix("sanitizer "), c) for c in checks[i]]
    return checks


def _read(plans: dict[str, ToolPlan], tools: tuple[str, ...], runs: dict[str, list[int]],
          outputs: dict[str, Output], i: int) -> list[Check]:
    """Leader `i`'s check per tool from the shared children: a pass, its plan's skip, or what a
    cancel or a time limit said (replaced by its own runs where the child was not clean)."""
    out = []
    for tool in tools:
        plan = plans[tool]
        if i not in runs[tool]:
            out.append(Check(f"sanitizer {tool}", "skip", plan.describe()))
        elif clean(outputs[tool]):
            out.append(passed(tool, plan, others=len(runs[tool]) - 1))
        else:  # a time limit or a cancel said so; a fault is replaced by the leader's own runs
            code, text = outputs[tool]
            out.append(Check(f"sanitizer {tool}", "skip", text if code is None else "cancelled"))
    return out
