"""`__constant__` data the host sets at run time, filled per input set on the GPU (job/constants.py):
a candidate that ignores the filter, or hardcodes one, is wrong; a faithful rewrite is verified.
The same kernels run on the CPU emulator in tests/evaluator/test_runtime_constants.py."""

from __future__ import annotations

import pytest

from fsr_lsp.evaluator import evaluate

from ..evaluator.test_runtime_constants import BOX_FILTER, CONV, GOOD, IGNORES_THE_FILTER
from .conftest import QUICK

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("candidate", [IGNORES_THE_FILTER, BOX_FILTER])
def test_a_candidate_that_does_not_read_the_hosts_filter_is_wrong(evaluator, candidate):
    r = evaluate(evaluator, CONV, "conv", candidate, QUICK)
    assert r.status == "wrong", r.message


def test_a_faithful_rewrite_is_verified_with_the_filter_filled(evaluator):
    r = evaluate(evaluator, CONV, "conv", GOOD, QUICK)
    assert r.status == "verified", r.message
