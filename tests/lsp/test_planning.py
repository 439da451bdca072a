"""Optimize and Profile plan a kernel's spec (its block, a capture, a draft from its launches)
on a thread, from the document's text as it was when asked: a large file's planning takes
seconds, and on the event loop every other request waited for it. A stand-in
(FSR_LSP_TEST_PLAN_SECONDS) makes planning sleep where it runs; hovers on another document are
answered meanwhile, a cancel stops the search before it begins, and the search and the profile
run on the text that was planned (an edit meanwhile is Apply's business, as during a search)."""

from __future__ import annotations

import asyncio
import time

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient


from ..support.recorded_profiler import KERNELS
from ..support.search_helpers import example
from .conftest import LLM, make_client, open_file, server_env_with, without_checks
from ..support.doubles import PLAN_SECONDS as PLAN_STAND_IN, command

PLAN_SECONDS = 3.0  # the stand-in's planning
QUICK_SECONDS = 1.5  # what a hover on another document may take meanwhile (a few ms unloaded)
SAXPY = example("saxpy.cu")
OTHER = """__global__ void other_scale(float* y, const float* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
"""


@pytest_lsp.fixture(config=ClientServerConfig(server_command=command("fsr-lsp"),
                                              server_env=server_env_with(PLAN_STAND_IN, PLAN_SECONDS), client_factory=make_client))
async def client(lsp_client: LanguageClient):
    async for _ in without_checks(lsp_client):
        yield


async def command(client: LanguageClient, name: str, *arguments) -> str:
    return await client.workspace_execute_command_async(types.ExecuteCommandParams(command=name,
                                                                                  arguments=list(arguments)))


async def hovers_meanwhile(client: LanguageClient, uri: str, task: asyncio.Task) -> None:
    """Hovers on `uri` while `task` plans: each answered at once."""
    await asyncio.sleep(0.3)  # the planning under way
    for _ in range(3):
        started = time.monotonic()
        found = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=0, character=18)))
        took = time.monotonic() - started
        assert found is not None and "other_scale" in found.contents.value
        assert took < QUICK_SECONDS, f"a hover on another document waited {took:.2f} s for the planning"
    assert not task.done(), "the planning ended before the hovers: the stand-in did not run"


async def test_optimize_plans_off_the_event_loop_on_the_text_as_it_was(client: LanguageClient):
    LLM.steps[:] = []
    other = open_file(client, "other.cu", OTHER)
    assert await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=other), position=types.Position(line=0, character=18)))
    uri = open_file(client, "saxpy.cu", SAXPY)
    task = asyncio.ensure_future(command(client, "fsr.optimize", uri, "saxpy"))
    await asyncio.sleep(0.1)
    client.text_document_did_change(types.DidChangeTextDocumentParams(  # the kernel renamed while it plans
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=SAXPY.replace("saxpy", "renamed"))]))
    await hovers_meanwhile(client, other, task)
    assert await command(client, "fsr.optimize", uri, "saxpy") == "saxpy is already being optimized"
    assert await task == "optimizing saxpy"  # the text it was asked on: saxpy is there
    assert await command(client, "fsr.cancel", uri, "saxpy") == "cancelling"
    await asyncio.wait_for(_no_search(client), 60)


async def _no_search(client: LanguageClient) -> None:
    while await command(client, "fsr.searches"):
        await asyncio.sleep(0.1)


async def test_a_cancel_while_optimize_plans_starts_no_search(client: LanguageClient):
    other = open_file(client, "other.cu", OTHER)
    uri = open_file(client, "saxpy.cu", SAXPY)
    task = asyncio.ensure_future(command(client, "fsr.optimize", uri, "saxpy"))
    await asyncio.sleep(0.5)
    assert await command(client, "fsr.cancel", uri, "saxpy") == "cancelling"
    assert await task == "FSR saxpy: cancelled before the search began"
    assert await command(client, "fsr.searches") == []
    assert not [t for t in client.progress_reports if str(t).startswith("fsr-")]  # no search's progress began
    assert await command(client, "fsr.cancel", uri, "saxpy") == "no search of saxpy is running"
    assert other  # opened beside it, as a user has


async def test_profile_plans_off_the_event_loop(client: LanguageClient):
    other = open_file(client, "other.cu", OTHER)
    uri = open_file(client, "profile_kernels.cu", KERNELS.read_text())
    task = asyncio.ensure_future(command(client, "fsr.profile", uri, "copy_strided"))
    await hovers_meanwhile(client, other, task)
    assert await command(client, "fsr.profile", uri, "copy_strided") == "copy_strided is already being profiled"
    said = await asyncio.wait_for(task, 60)
    assert "copy_strided" in said and "findings" in said
