"""Work of the layers above the evaluator that a backend runs where its GPU is, by name.

A spec's proof or an on-save compile must run on a cluster GPU when this machine has none,
yet the evaluator may not import the drafting or the server. So each such function is
registered here by name with its import path, and a backend runs `remote_call(name)` on its
side; `tests/test_layers.py` checks that every entry resolves.
"""

from __future__ import annotations

from typing import Any, Callable

from ..support import load

REMOTE_CALLS: dict[str, str] = {
    "prove": "fsr_lsp.drafting.proof:prove_request",  # a drafted spec's proof on the original kernel
    "compile": "fsr_lsp.server.check:compile_here",  # an on-save compile where the toolkit is
}


def remote_call(name: str, extra: dict[str, str] | None = None) -> Callable[[Any, dict], dict]:
    """The function registered as `name`: `function(backend, payload) -> dict`. `extra`: calls a
    backend was given beside these (a test's stand-ins, passed to a cluster's workers as data)."""
    registry = {**REMOTE_CALLS, **(extra or {})}
    try:
        path = registry[name]
    except KeyError:
        raise KeyError(f"no remote call named {name!r} (registered: {', '.join(sorted(registry))})") from None
    return load(path)
