"""Specs drafted from where a kernel is launched (host code), for kernels that have none."""

from .draft import Draft, draft_spec, draft_specs
from .host import Launch, find_launches

__all__ = ["Draft", "Launch", "draft_spec", "draft_specs", "find_launches"]
