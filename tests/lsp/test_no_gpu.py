"""A server on a machine without GPU support (CI): one clear message, and the rest still works."""

from __future__ import annotations

import importlib.util
import os
import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from ..support.search_helpers import example
from .conftest import WORKSPACE, make_client, open_file, wait_until
from ..support.doubles import STAND_INS

ENV = {k: v for k, v in os.environ.items() if k not in STAND_INS}  # the GPU-less machine as it is
pytestmark = pytest.mark.skipif(importlib.util.find_spec("pycuda") is not None, reason="pycuda is installed here")


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "fsr_lsp.server.main"],
                                              server_env=ENV, client_factory=make_client))
async def bare(lsp_client: LanguageClient):
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("neovim"), root_uri=WORKSPACE.as_uri()))
    yield
    await lsp_client.shutdown_session()


async def test_no_gpu_support_is_said_once(bare: LanguageClient):
    uri = open_file(bare, "nogpu.cu", example("saxpy.cu"))
    for _ in range(2):
        result = await bare.workspace_execute_command_async(types.ExecuteCommandParams(
            command="fsr.optimize", arguments=[uri, "saxpy"]))
        assert "not installed" in result
    messages = await wait_until(lambda: [m for m in bare.messages if "not installed" in m.message])
    assert len(messages) == 1 and "pip install 'fsr-lsp[gpu]'" in messages[0].message


async def test_profile_without_gpu_support_names_profiling_not_searches(bare: LanguageClient):
    uri = open_file(bare, "nogpu_profile.cu", example("saxpy.cu"))
    result = await bare.workspace_execute_command_async(types.ExecuteCommandParams(
        command="fsr.profile", arguments=[uri, "saxpy"]))
    assert "profiling needs" in result and "searches need" not in result, result
