"""The editor flow on a real GPU: fsr-lsp with the real evaluator and the built-in generator."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from ..lsp.conftest import make_client, wait_until
from ..support.search_helpers import example

pytestmark = pytest.mark.gpu
WORKSPACE = Path(tempfile.mkdtemp(prefix="fsr-lsp-gpu-"))
ENV = {k: v for k, v in os.environ.items() if k != "FSR_LSP_BENCH"}


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "fsr_lsp.server.main"],
                                              server_env=ENV, client_factory=make_client))
async def gpu_client(lsp_client: LanguageClient):
    options = {"fsr": {"search": {"rounds": 2, "candidates": 6, "timeBudget": 120, "sanitize": True}}}
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual_studio_code"), root_uri=WORKSPACE.as_uri(),
        initialization_options=options))
    yield
    await lsp_client.shutdown_session()


async def test_optimize_softmax_in_the_editor_on_the_gpu(evaluator, gpu_client: LanguageClient):
    text = example("softmax.cu")
    path = WORKSPACE / "softmax.cu"
    path.write_text(text)
    uri = path.as_uri()
    gpu_client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="cuda-cpp", version=1, text=text)))
    started = time.perf_counter()
    await gpu_client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="fsr.optimize", arguments=[uri, "softmax"]))
    win = await wait_until(lambda: [d for d in gpu_client.diagnostics.get(uri, []) if d.code == "fsr-win"] or
                           [m for m in gpu_client.messages if "FSR softmax" in m.message], timeout=300)
    elapsed = time.perf_counter() - started
    print(f"\nsearch in the editor: {elapsed:.1f} s; {win[0].message}")
    assert isinstance(win[0], types.Diagnostic), win[0].message
    assert "verified at" in win[0].message and "NVIDIA" in win[0].message
    line = text.splitlines().index("__global__ void softmax(int rows, int cols, const float* x, float* y)") + 2
    pos = types.Position(line=line, character=10)
    actions = await gpu_client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=types.Range(start=pos, end=pos),
        context=types.CodeActionContext(diagnostics=[])))
    apply = next(a for a in actions if a.title.startswith("Apply FSR rewrite"))
    resolved = await gpu_client.code_action_resolve_async(apply)
    assert resolved.edit is not None and resolved.edit.document_changes[0].text_document.version == 1
