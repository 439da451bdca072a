"""Start-up, settings and shutdown: initializationOptions, workspace/configuration (pulled after
initialized and on every change), the workspace watcher, stopping searches on shutdown."""

from __future__ import annotations

import logging
from typing import Any

from lsprotocol import types

from ...processes import hard_exit
from ..server import FsrServer, is_cuda
from ..trust import read_trust
from .documents import index_launches, schedule_check, watch

log = logging.getLogger("fsr_lsp")


def register(server: FsrServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: FsrServer, params: types.InitializeParams) -> None:
        ls.trust, options, problems = read_trust(params.initialization_options)
        for problem in problems:
            ls.show_once(f"fsr: {problem}", types.MessageType.Warning)
        if isinstance(options, dict) and "fsr" in options:
            options = options["fsr"]
        ls.apply_settings(options)
        if not ls.trust.trusted:
            log.info("the workspace is not trusted: Optimize, Profile, Capture and performance checks are off")

    @server.feature(types.INITIALIZED)
    async def initialized(ls: FsrServer, params: types.InitializedParams) -> None:
        watch(ls)
        index_launches(ls)
        await pull_configuration(ls)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: FsrServer, params: types.DidChangeConfigurationParams) -> None:
        settings = params.settings
        if isinstance(settings, dict) and isinstance(settings.get("fsr"), dict):
            ls.apply_settings(settings["fsr"], after_start=True)
        else:
            await pull_configuration(ls)
        for uri in list(ls.workspace.text_documents):
            if is_cuda(uri):
                schedule_check(ls, uri)

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: FsrServer, *args: Any) -> None:
        # The requests still running are cancelled here, over a copy: pygls's own loop cancels
        # them while iterating the dict a cancel removes them from ("dictionary changed size").
        current = ls.protocol.msg_id
        for msg_id, future in list(ls.protocol._request_futures.items()):
            if msg_id != current and not future.done():
                future.cancel()
        ls.searches.shutdown()
        ls.cache.shutdown()  # drafts not started are dropped
        if ls.watcher is not None:
            ls.watcher.stop()

    @server.feature(types.EXIT)
    def exit_now(ls: FsrServer, *args: Any) -> None:
        """End at once, as the specification asks (0 after shutdown, else 1): compiles still
        running are the reaper's to end, and an asyncio loop torn down around them would print
        "Event loop is closed" tracebacks into the editor's output panel."""
        hard_exit(0 if ls.protocol._shutdown else 1)


async def pull_configuration(ls: FsrServer) -> None:
    caps = ls.client_capabilities
    if caps and caps.workspace and caps.workspace.configuration:
        try:
            (section,) = await ls.workspace_configuration_async(
                types.ConfigurationParams(items=[types.ConfigurationItem(section="fsr")]))
        except Exception as e:  # a client that fails the request keeps the options it gave
            log.warning("workspace/configuration failed: %s", e)
            return
        if section:
            ls.apply_settings(section, after_start=True)
