"""The original's outcomes on range sets kept per worker (gpu/range_check.py `_Kept`): the least
recently used go first once their bytes pass the limit, by a running total."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from fsr_lsp.evaluator.gpu import range_check  # noqa: E402
from fsr_lsp.evaluator.gpu.range_check import OriginalOnSet, _Kept  # noqa: E402


def outcome(nbytes: int) -> OriginalOnSet:
    return OriginalOnSet({"y": torch.zeros(nbytes, dtype=torch.uint8)})


def test_the_least_recently_used_go_first_once_over_the_limit(monkeypatch):
    monkeypatch.setattr(range_check, "CACHE_BYTES", 100)
    kept = _Kept()
    for key in "abc":
        kept.put((key,), outcome(40))
    assert kept.get(("a",)) is None and kept.nbytes == 80  # a went first: 120 bytes were over 100
    assert kept.get(("b",)) is not None  # b used: c is now the oldest
    kept.put(("d",), outcome(40))
    assert kept.get(("c",)) is None and kept.get(("b",)) is not None and kept.nbytes == 80


def test_one_outcome_over_the_limit_is_still_kept_alone(monkeypatch):
    monkeypatch.setattr(range_check, "CACHE_BYTES", 10)
    kept = _Kept()
    kept.put(("a",), outcome(40))
    kept.put(("b",), outcome(50))
    assert kept.get(("a",)) is None and kept.get(("b",)) is not None and kept.nbytes == 50
