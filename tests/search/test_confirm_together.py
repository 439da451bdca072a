"""A round's leaders confirmed together: one batch of the bench's stricter verification for all
of them, each still judged on its own, a demoted one replaced by the next, which is confirmed too."""

from __future__ import annotations

from fsr_lsp.search.config import SearchConfig
from fsr_lsp.search.proposal import Proposal, Tried
from fsr_lsp.search.verdict import promote

from ..support.scripted_bench import ScriptedBench


class Batching(ScriptedBench):
    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[str]] = []

    def confirm_many(self, proposals):
        self.batches.append([p.note for p in proposals])
        return [self.confirm(p) for p in proposals]


def tried(note: str, mark: str) -> Tried:
    bench = ScriptedBench()
    p = Proposal(f"__global__ void k() {{}} // verdict: {mark}", "test", note=note)
    return Tried(p, bench._verdict(p.source))


def test_the_leaders_are_confirmed_in_one_batch_and_a_demoted_ones_successor_in_the_next():
    history = [tried("a", "verified 3.0"), tried("b", "unconfirmed 2.5"), tried("c", "verified 2.0"),
               tried("d", "verified 1.5")]
    bench = Batching()
    recorded, shown = [], []
    promote(history, bench, SearchConfig(seeds=3), 0, recorded.append, on_confirmed=lambda: shown.append(1))
    assert bench.batches == [["a", "b", "c"], ["d"]]
    assert [t.result.confirmed for t in history] == [True, False, True, True]
    assert history[1].result.status == "wrong" and "demoted as round 1 leader" in history[1].result.message
    assert len(recorded) == 4 and shown == [1, 1]


def test_with_the_launch_fixed_the_applicable_win_is_confirmed_first_and_alone():
    from dataclasses import replace

    history = [tried("a", "verified 3.0"), tried("b", "verified 2.5"), tried("c", "verified 2.0")]
    for t in history[:2]:  # a and b state launches of their own: the program's launch cannot take them
        t.proposal = replace(t.proposal, source="/* @fsr\nblock = 128\n*/\n" + t.proposal.source)
    bench = Batching()
    promote(history, bench, SearchConfig(seeds=2, launch_fixed=True), 0, lambda t: None)
    assert bench.batches == [["c"], ["a", "b"]]
    assert all(t.result.confirmed for t in history)
