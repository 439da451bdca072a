"""What a draft may give up when the original kernel fails its proof under it, and only then:
a draft (from a launch or a capture) guesses a buffer's direction and the sizes to test at; the
user's own block is never changed. Each step is said in the proof's message.

- an `out` buffer the original does not write whole, or reads before writing: checked as
  `inout` (its unwritten elements must keep their values; a rewrite may not clobber them);
- an `in` buffer the original writes (a reduction's second pass over its own output, an
  in-place update): checked as `inout` (what the original leaves in it is compared too);
- a test size the original fails at (a reduction that assumes whole blocks): left out; the edge
  size (no block multiple): `edge = false`. The bench size, the launch a run really made, stays.
"""

from __future__ import annotations

import re

from ..evaluator.records import EvalJob
from ..specs.edit import set_key, toml_value

DIRECTION_CHECKS = ("every output written", "outputs not read before written", "outputs not read before written (initcheck)")
MAX_STEPS = 4


def relax(block: str, job: EvalJob | None, check: str, argument: str, message: str) -> tuple[str, str] | None:
    """The draft with one guess given up, and why; None when nothing can be given up."""
    if not block or job is None:
        return None
    if check in DIRECTION_CHECKS and argument:
        widened = _as_inout(block, argument, "out")
        if widened != block:
            return widened, (f"`{argument}` is not written whole by the original, or read before it is written: "
                             f"checked as inout (its other elements must keep their values)")
    if check == "in buffers unchanged" and argument:
        widened = _as_inout(block, argument, "in")
        if widened != block:
            return widened, f"the original writes `{argument}`: checked as inout (what it leaves there is compared too)"
    failed_at = _size_of(job, message)
    if failed_at is None or failed_at.role == "bench":
        return None
    if failed_at.role == "edge":
        return set_key(block, "edge", "false"), f"the original fails at {failed_at.label}, no block multiple: edge = false"
    kept = [p.sizes for p in job.sizes if p.role == "test" and p.label != failed_at.label]
    tests = "[" + ", ".join("{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in s.items()) + " }" for s in kept) + "]"
    return set_key(block, "tests", tests), f"the original fails at {failed_at.label} ({check}): that size is left out"


def _as_inout(block: str, name: str, direction: str) -> str:
    return re.sub(rf'^([ \t*]*{re.escape(name)}[ \t]*=[ \t]*"){direction}\[', r"\1inout[", block, count=1, flags=re.M)


def _size_of(job: EvalJob, message: str):
    """The size plan a failure names ("at n=1", or "at nx=1,ny=1" from the sanitizers)."""
    for plan in sorted(job.sizes, key=lambda p: -len(p.label)):
        for label in (plan.label, plan.label.replace(" ", "")):
            if re.search(rf"\bat {re.escape(label)}(?![\d.])", message):
                return plan
    return None
