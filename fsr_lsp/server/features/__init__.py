"""The server's features, one module each, each registering its own handlers: start-up and
settings (lifecycle), documents and their diagnostics, hover, code actions, workspace commands,
spec drafts (drafts), searches, captures of a run's launches (capture), profiles (profiling) and
performance on save (perf_on_save)."""

from __future__ import annotations

from types import ModuleType


def all_features() -> tuple[ModuleType, ...]:
    """Imported when the server is built (they import the server module for its class)."""
    from . import capture, code_actions, commands, documents, drafts, hover, lifecycle, perf_on_save, profiling, searches

    return lifecycle, documents, hover, code_actions, commands, drafts, searches, capture, profiling, perf_on_save
