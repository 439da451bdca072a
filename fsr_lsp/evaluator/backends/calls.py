"""Work of the layers above the evaluator that a backend runs where its GPU is, by name.

A spec's proof or an on-save compile must run on a cluster GPU when this machine has none,
yet the evaluator may not import the drafting or the server. So each such function is
registered here by name with its import path, and a backend runs `remote_call(name)` on its
side; `tests/test_layers.py` checks that every entry resolves.
"""

from __future__ import annotations

import os
from typing import Any, Callable

from ..support import load

REMOTE_CALLS: dict[str, str] = {
    "prove": "fsr_lsp.drafting.proof:prove_request",  # a drafted spec's proof on the original kernel
    "compile": "fsr_lsp.server.check:compile_here",  # an on-save compile where the toolkit is
}


def registered() -> dict[str, str]:
    """The registry, with what a test adds through $FSR_REMOTE_CALLS (`name=module:function;...`,
    which reaches a cluster's workers through the runtime environment)."""
    extra = dict(item.split("=", 1) for item in os.environ.get("FSR_REMOTE_CALLS", "").split(";") if "=" in item)
    return {**REMOTE_CALLS, **extra}


def remote_call(name: str) -> Callable[[Any, dict], dict]:
    """The function registered as `name`: `function(backend, payload) -> dict`."""
    try:
        path = registered()[name]
    except KeyError:
        raise KeyError(f"no remote call named {name!r} (registered: {', '.join(sorted(REMOTE_CALLS))})") from None
    return load(path)
