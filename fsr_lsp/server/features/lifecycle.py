"""Start-up, settings and shutdown: initializationOptions, workspace/configuration (pulled after
initialized and on every change), the workspace watcher, stopping searches on shutdown."""

from __future__ import annotations

import logging
from typing import Any

from lsprotocol import types

from ..server import FsrServer, is_cuda
from .documents import schedule_check, watch

log = logging.getLogger("fsr_lsp")


def register(server: FsrServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: FsrServer, params: types.InitializeParams) -> None:
        options = params.initialization_options
        if isinstance(options, dict) and "fsr" in options:
            options = options["fsr"]
        ls.apply_settings(options)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: FsrServer, params: types.InitializedParams) -> None:
        watch(ls)
        await pull_configuration(ls)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: FsrServer, params: types.DidChangeConfigurationParams) -> None:
        settings = params.settings
        if isinstance(settings, dict) and isinstance(settings.get("fsr"), dict):
            ls.apply_settings(settings["fsr"])
        else:
            await pull_configuration(ls)
        for uri in list(ls.workspace.text_documents):
            if is_cuda(uri):
                schedule_check(ls, uri)

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: FsrServer, *args: Any) -> None:
        ls.searches.shutdown()
        if ls.watcher is not None:
            ls.watcher.stop()


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
            ls.apply_settings(section)
