"""A screen of a configuration where the original is too slow to run beside every one: the
candidate timed alone, nothing judged, and marked so that nothing takes it for a verdict."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("torch")

from ..support.cuda_on_cpu import cxx, evaluate_on_cpu  # noqa: E402
from ..search.test_rewrites_on_cpu import CASES, proposals  # noqa: E402

pytestmark = pytest.mark.skipif(cxx() is None and os.environ.get("FSR_REQUIRE_NVCC") != "1",
                                reason="no C++ compiler (g++) to build kernels for the CPU")


def test_a_screen_alone_times_the_candidate_and_judges_nothing():
    source, kernel, bench = CASES["sgemm"]
    text = proposals(source, kernel)["builtin:tiled-product"]
    alone = evaluate_on_cpu(source, kernel, text, bench, screen=True, screen_alone=True)
    assert (alone.status, alone.screened, alone.original_time) == ("timed", True, None), alone.message
    assert alone.candidate_time is not None and not alone.verified and not alone.passed_screen
    beside = evaluate_on_cpu(source, kernel, text, bench, screen=True)
    assert beside.passed_screen and beside.original_time is not None
    # a wrong configuration screened alone is not caught here: its full verification catches it
    wrong = text.replace("k < (K);", "k < (K) - 1;")
    assert evaluate_on_cpu(source, kernel, wrong, bench, screen=True, screen_alone=True).status == "timed"
    assert evaluate_on_cpu(source, kernel, wrong, bench).status == "wrong"
