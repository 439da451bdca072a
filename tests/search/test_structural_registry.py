"""The structural rewrites' registry (search/generators/structural/registry.py): each rewrite
listed once, and each recogniser run once for a round's proposals and once for a prompt's
patterns (they were each called twice, from two hand-kept lists)."""

from __future__ import annotations

import dataclasses
import re

from fsr_lsp.kernels import find_kernel
from fsr_lsp.search.generators import structural
from fsr_lsp.search.generators.structural import registry
from fsr_lsp.source import SourceText
from fsr_lsp.specs import parse_spec

from ..support.search_helpers import example


def test_each_rewrite_is_listed_once():
    names = [r.name for r in registry.REWRITES]
    assert len(names) == len(set(names)) and len(names) >= 9


def test_each_recogniser_runs_once_a_call_and_what_applies_is_proposed_and_said(monkeypatch):
    text = example("softmax.cu")
    src = SourceText(text)
    kernel = find_kernel(text, re.search(r"__global__ void (\w+)", text).group(1))
    spec = parse_spec(src, kernel).spec
    definition = src.slice(kernel.definition_span.start_byte, kernel.definition_span.end_byte)
    calls: dict[str, int] = {}

    def counted(rewrite):
        def find(*args):
            calls[rewrite.name] = calls.get(rewrite.name, 0) + 1
            return rewrite.find(*args)
        return dataclasses.replace(rewrite, find=find)

    monkeypatch.setattr(registry, "REWRITES", tuple(counted(r) for r in registry.REWRITES))
    proposals = structural.structural_proposals(kernel, spec, definition)
    free = [r for r in registry.REWRITES if not r.fixed_launch_only]  # variants under the launch: only where fixed
    assert calls == {r.name: 1 for r in free} and len(free) < len(registry.REWRITES)
    lines = structural.patterns(kernel, spec, definition)
    assert calls == {r.name: 2 for r in free}
    calls.clear()
    under = structural.structural_proposals(kernel, spec, definition, launch_fixed=True)
    assert calls == {r.name: 1 for r in registry.REWRITES}
    assert {p.generator for p in under} - {p.generator for p in proposals} == {"builtin:warp-per-row-same-launch"}
    applied = {rewrite.name for rewrite, _ in registry.recognised(kernel, spec, definition)}
    assert applied and proposals and len(lines) == sum(1 for r in registry.REWRITES if r.name in applied and r.line)
