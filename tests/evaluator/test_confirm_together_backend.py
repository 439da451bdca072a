"""The local backend confirms several leaders asked in one batch together (api.confirm_together:
one sanitizer child per tool for them all), and anything else in the batch as usual."""

from __future__ import annotations

import threading
from types import SimpleNamespace

from fsr_lsp.evaluator import EvalOptions
from fsr_lsp.evaluator.backends import EvalRequest, LocalBackend, local
from fsr_lsp.evaluator.records import EvalResult


class Worker:
    device_index = 0
    alive = True
    gpu = SimpleNamespace(arch="sm_90a")

    def start(self, cancel=None):
        return self.gpu


def confirm(i: int) -> EvalRequest:
    return EvalRequest("// original", "k", f"// leader {i}", EvalOptions(), action="confirm")


def backend(monkeypatch) -> tuple[LocalBackend, list]:
    together = []

    def confirm_together(evaluator, requests, control=None):
        together.append([candidate for _, _, candidate, _ in requests])
        return [EvalResult(kernel="k", status="verified", message=f"confirmed {c}") for _, _, c, _ in requests]

    monkeypatch.setattr(local, "confirm_together", confirm_together)
    monkeypatch.setattr(local, "prepare", lambda source, kernel, candidate, arch, options: candidate)
    monkeypatch.setattr(local, "run_prepared", lambda evaluator, prepared, control=None: EvalResult(
        kernel="k", status="verified", message=f"checked {prepared}"))
    monkeypatch.setattr(local.LocalBackend, "_keep_warm", lambda self, e: None)  # no sanitizer children here
    return LocalBackend([Worker()]), together  # type: ignore[list-item]


def test_several_confirmations_in_one_batch_are_confirmed_together_and_the_rest_as_usual(monkeypatch):
    b, together = backend(monkeypatch)
    plain = EvalRequest("// original", "k", "// candidate", EvalOptions())
    arrived = {}
    lock = threading.Lock()

    def on_result(i, r):
        with lock:
            arrived[i] = r.message

    results = b.evaluate([confirm(0), plain, confirm(1)], on_result=on_result)
    assert together == [["// leader 0", "// leader 1"]]
    assert [r.message for r in results] == ["confirmed // leader 0", "checked // candidate", "confirmed // leader 1"]
    assert arrived == {0: "confirmed // leader 0", 1: "checked // candidate", 2: "confirmed // leader 1"}


def test_one_confirmation_goes_the_single_way(monkeypatch):
    b, together = backend(monkeypatch)
    monkeypatch.setattr(local, "evaluate_one", lambda evaluator, source, kernel, candidate, options, **kw: EvalResult(
        kernel="k", status="verified", message=f"alone {candidate} {kw['sanitize_winner']}"))
    assert b.evaluate([confirm(0)])[0].message == "alone // leader 0 True" and together == []
