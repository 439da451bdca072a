"""Specs for kernels that have none, through one resolver (resolver.py: the kernel typed once
in typed.py, its spec's origins tried in order in stages.py, the record in origin.py): drafted
from where a kernel is launched (launches and host scope in host.py, C expressions in cexpr.py
and their ternaries in conditionals.py, what the body writes in writes.py, the draft in
draft.py), across a workspace (workspace.py), from a captured run (captured.py) or by a model
(by_llm.py); where a spec goes in the file (placement.py), and its proof on the GPU with the
original kernel (proof.py, cached in cache.py)."""

from .draft import Draft, draft_spec, draft_specs
from .host import Launch, find_launches

__all__ = ["Draft", "Launch", "draft_spec", "draft_specs", "find_launches"]
