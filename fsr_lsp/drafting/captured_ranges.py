"""Input values in the range a run of the user's program had, from the bytes `fsr capture
--snapshot-bytes` saved before a kernel's first launch.

Uniform noise in a default range sends data-dependent indices out of bounds (a histogram of
letters `a`..`z`, token ids below the vocabulary, a bin count from the data), so the original
cannot serve as the oracle. Drawing each input at random within the range the program's own
data had keeps the indices meaningful while every test set stays fresh and random: integers
(and floats that hold only whole numbers: flags, counts, pixels) as randint(min, max + 1), other
floats as observed(min, max): drawn in that range, and not a bound (the evaluator's range
sets still probe beyond it, as far as the original stays finite; a user who knows callers pass
no more writes uniform(min, max) or domain(min, max)). An accumulator the program started at one value starts there
(`inout` all zeros: zeros()). An `in` buffer the program filled with one value keeps its random
default: a constant input would let a rewrite hard-code it.
"""

from __future__ import annotations

import math
import struct

from ..evaluator.job.captured_buffers import read_saved
from ..kernels.c_types import ITEMSIZE
from ..specs.model import Init

NATIVE = {"int8": "b", "uint8": "B", "bool": "B", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I",
          "int64": "q", "uint64": "Q", "float32": "f", "float64": "d"}
WHOLE = {"int": 1 << 24, "float": 1 << 22}  # elements read whole up to these, else a strided sample
SAMPLE = 1 << 20  # elements checked for whole numbers, and the sample of 16-bit floats
LARGEST = 2.0 ** 52  # values beyond: no range (torch draws int64; floats lose whole numbers)


def captured_values(where: str, count: int, dtype: str) -> list[float] | memoryview | None:
    """The `count` elements of `dtype` a run saved ("OFFSET:PATH", a strided sample when there
    are very many); None when the file is unreadable or short."""
    size = ITEMSIZE.get(dtype)
    if size is None or count < 1:
        return None
    try:
        data = read_saved(where, count * size)
    except (OSError, ValueError):
        return None
    if len(data) < count * size:
        return None
    if dtype in NATIVE:
        values = memoryview(data).cast(NATIVE[dtype])
        most = WHOLE["float" if dtype.startswith("float") else "int"]
        return values if count <= most else values[::count // most + 1]
    step = count // SAMPLE + 1
    halves = memoryview(data).cast("H")[::step]
    if dtype == "float16":
        return [struct.unpack("<e", h.to_bytes(2, "little"))[0] for h in halves]
    return [struct.unpack("<f", (h << 16).to_bytes(4, "little"))[0] for h in halves]


def init_from_values(values, dtype: str, direction: str) -> tuple[Init, str] | None:
    """The Init that draws inputs in the captured range, and why; None to keep the default."""
    finite = values if dtype not in ("float16", "bfloat16", "float32", "float64") else \
        [v for v in values if math.isfinite(v)]
    if not len(finite):
        return None
    lo, hi = min(finite), max(finite)
    if max(abs(lo), abs(hi)) > LARGEST:  # sentinels (FLT_MAX, hashes): no range to draw from
        return None
    if lo == hi:
        if direction == "inout":
            return Init("fill", float(lo)), f"every element was {lo:g} before the captured launch: it starts there"
        return None  # a constant input: random values keep a rewrite from relying on it
    step = max(1, len(finite) // SAMPLE)
    whole = all(float(v).is_integer() for v in finite[::step])
    if whole:
        return Init("randint", int(lo), int(hi) + 1), f"the run's values were whole numbers in [{lo:g}, {hi:g}]"
    # observed(lo, hi): drawn there, not a bound; the evaluator still probes beyond (scaled, offset...)
    return Init("uniform", float(lo), float(hi)), f"the run's values were in [{lo:g}, {hi:g}]"
