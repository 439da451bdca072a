"""Workspace trust, as the client says it in `initializationOptions` (beside the `fsr` section):

- `"trustedWorkspace": false`: the user has not trusted the workspace (VS Code's Restricted
  Mode). Diagnostics and hover work; whatever runs the workspace's code or a program it names
  (Optimize, Profile, Capture, performance checks) is refused with a message, and the workspace's
  settings may not set `compiler.flags`.
- `"configurationSource": "workspace"`: the settings this client sends after the start (answers
  to workspace/configuration, workspace/didChangeConfiguration) may hold a repository's values
  (Emacs eglot's `eglot-workspace-configuration`, which a `.dir-locals.el` may set; neoconf.nvim),
  so the settings that name a program, an address or an environment variable are refused from
  them; the user sets those in `initializationOptions`.

A client that says neither is trusted, and its settings are the user's (as before this rule).
Settings objects may also carry `"source": "workspace"` themselves (fsr_lsp/settings.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..settings import USER, WORKSPACE

TRUSTED_KEY = "trustedWorkspace"
CONFIGURATION_SOURCE_KEY = "configurationSource"


@dataclass(frozen=True)
class Trust:
    trusted: bool = True
    configuration_source: str = USER  # where the settings sent after the start come from

    def refusal(self, what: str) -> str:
        """Why `what` (Optimize, Profile, ...) may not run ('' when it may)."""
        if self.trusted:
            return ""
        return (f"FSR: {what} is off in Restricted Mode: the workspace is not trusted, and {what} would run its "
                "code; trust the workspace to use it (diagnostics and hover work without)")


def read_trust(options: Any) -> tuple[Trust, Any, list[str]]:
    """The trust a client's initializationOptions declare, the options without those keys, and
    what was wrong with them (a value that is not understood is read as the restrictive one)."""
    if not isinstance(options, dict):
        return Trust(), options, []
    rest = {k: v for k, v in options.items() if k not in (TRUSTED_KEY, CONFIGURATION_SOURCE_KEY)}
    problems = []
    trusted = options.get(TRUSTED_KEY, True)
    if not isinstance(trusted, bool):
        problems.append(f"{TRUSTED_KEY}: expected true or false, got {trusted!r}; read as false")
        trusted = False
    source = options.get(CONFIGURATION_SOURCE_KEY, USER)
    if source not in (USER, WORKSPACE):
        problems.append(f"{CONFIGURATION_SOURCE_KEY}: expected \"{USER}\" or \"{WORKSPACE}\", got {source!r}; "
                        f"read as \"{WORKSPACE}\"")
        source = WORKSPACE
    return Trust(trusted, source), rest, problems
