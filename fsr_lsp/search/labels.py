"""One-line labels of what a candidate changed, for the table, the report and the history:
the model's own `Change:` line, else a summary read off the code ("block 256 -> (32, 8);
shared tile")."""

from __future__ import annotations

import re

from ..kernels import find_kernel
from ..kernels.lexical import code_only
from ..source import SourceText
from ..specs import Spec, parse_spec

MAX_LABEL = 120
_CHANGE = re.compile(r"^[ \t>*_#-]*change\s*[:\-]\s*(.+?)\s*$", re.I | re.M)
_FENCE = re.compile(r"```.*?```", re.S)
# (pattern in the code, what it means): shown when the candidate has it and the original had not.
_FEATURES = (
    (r"__shared__", "shared tile"),
    (r"__shfl\w*", "warp shuffles"),
    (r"\b(?:float|int|uint|half|double)[248]\b|__half2|__nv_bfloat162", "vector loads"),
    (r"#\s*pragma\s+unroll", "unrolled loops"),
    (r"__restrict__", "__restrict__"),
    (r"__ldg\b", "__ldg loads"),
    (r"\bgridDim\b", "grid-stride loop"),
    (r"__launch_bounds__", "launch bounds"),
    (r"\batomic\w+", "atomics"),
    (r"cooperative_groups|\bcg::", "cooperative groups"),
    (r"\basm\b", "inline PTX"),
    (r"\bwmma::|\bmma\.sync", "tensor cores"),
    (r"__expf|__fdividef|__sinf|__cosf|__tanhf|__frcp_rn|rsqrtf", "fast intrinsics"),
    (r"cp\.async|__pipeline_memcpy_async|memcpy_async", "async copies"),
)


def model_label(answer: str) -> str:
    """The `Change:` line of a model's answer, outside its code block; '' when there is none."""
    m = _CHANGE.search(_FENCE.sub("", answer))
    if not m:
        return ""
    label = m.group(1).strip(" \t`*")
    return label[:MAX_LABEL]


def code_label(original: str, spec: Spec, kernel: str, candidate: str) -> str:
    """What the candidate changed, read off the code: a new launch shape, then the features it
    has that the original had not."""
    parts = []
    block = _candidate_block(candidate, kernel)
    if block and tuple(block) != tuple(spec.block):
        parts.append(f"block {_shape(spec.block)} -> {_shape(block)}")
    before, after = code_only(original), code_only(candidate)
    for pattern, label in _FEATURES:
        if re.search(pattern, after) and not re.search(pattern, before) and label not in parts:
            parts.append(label)
    return "; ".join(parts) or "code rewritten (no named change found)"


def _candidate_block(candidate: str, kernel: str) -> tuple[int, ...] | None:
    src = SourceText(candidate)
    found = find_kernel(src, kernel)
    if found is None:
        return None
    spec = parse_spec(src, found).spec
    return None if spec is None or spec.inferred else spec.block


def _shape(block: tuple[int, ...]) -> str:
    return str(block[0]) if len(block) == 1 else "(" + ", ".join(map(str, block)) + ")"
