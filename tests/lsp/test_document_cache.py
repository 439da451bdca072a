"""What hover and code actions read is worked out once per document version (its kernels, a
kernel's drafted spec), an edit makes the next request work it out for the new text, and a
draft never runs on the event loop: a hover answers while a slow draft runs on the drafting
thread or, for a large document, in a process of its own, and hovers on other documents go on
being answered meanwhile (fsr_lsp/server/document_cache.py, large_documents.py)."""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from ..support.cache_probe import events
from .conftest import make_client, open_file, probed_env, without_checks
from ..support.doubles import command

PROBE_LOG = str(Path(tempfile.mkdtemp(prefix="fsr-cache-probe-")) / "probe.jsonl")
SLOW_SECONDS = 3.0


@pytest_lsp.fixture(config=ClientServerConfig(server_command=command("fsr-lsp"),
                                              server_env=probed_env(PROBE_LOG, FSR_TEST_SLOW_DRAFT=SLOW_SECONDS),
                                              client_factory=make_client))
async def client(lsp_client: LanguageClient):
    async for _ in without_checks(lsp_client):
        yield


def program(kernel: str, n: int) -> str:
    return f"""__global__ void {kernel}(float* y, const float* x, int n)
{{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}}

int main()
{{
    const int n = {n};
    float *x, *y;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    {kernel}<<<(n + 255) / 256, 256>>>(y, x, n);
    return 0;
}}
"""


async def hover(client: LanguageClient, uri: str, line: int = 0, character: int = 18) -> str:
    found = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=character)))
    return found.contents.value if found is not None else ""


async def actions(client: LanguageClient, uri: str, line: int = 0) -> list[types.CodeAction]:
    at = types.Position(line=line, character=18)
    return await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=types.Range(start=at, end=at),
        context=types.CodeActionContext(diagnostics=[])))


async def drafted(client: LanguageClient, uri: str, line: int = 0, timeout: float = 30.0) -> str:
    """The hover once it shows the spec drafted for the document as it is."""
    async def wait() -> str:
        while True:
            text = await hover(client, uri, line)
            if "spec: drafted from the launch" in text and "drafting" not in text:
                return text
            await asyncio.sleep(0.05)

    return await asyncio.wait_for(wait(), timeout)


def counted(uri: str, event: str, version: int) -> int:
    return sum(1 for e in events(PROBE_LOG, uri) if e["event"] == event and e["version"] == version)


async def test_a_version_is_worked_out_once_and_an_edit_is_seen_by_the_next_hover(client: LanguageClient):
    uri = open_file(client, "cache.cu", program("scale", 4096))
    assert "`size n`: n = 4096" in await drafted(client, uri)
    for _ in range(3):  # the same version: kernels and spec reused
        assert "spec: drafted from the launch at cache.cu:13" in await hover(client, uri)
        assert any("n = 4096" in str(a.edit) for a in await actions(client, uri)
                   if a.title.startswith("Draft @fsr spec for `scale`"))
    assert counted(uri, "discover", 1) == 1
    assert counted(uri, "draft", 1) == 1

    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=program("scale_twice", 8192))]))
    assert (await hover(client, uri)).startswith("**`scale_twice`** (3 parameters)")  # the next hover: the new text
    assert "n = 8192" in await drafted(client, uri)
    for _ in range(3):
        assert "n = 8192" in await hover(client, uri)
        draft = next(a for a in await actions(client, uri) if a.title.startswith("Draft @fsr spec"))
        assert draft.title.startswith("Draft @fsr spec for `scale_twice`") and "n = 8192" in str(draft.edit)
    assert counted(uri, "discover", 2) == 1
    assert counted(uri, "draft", 2) == 1


async def test_an_edited_version_is_discovered_beside_the_loop_once_its_edits_pause(client: LanguageClient):
    """Typing: the versions that follow each other quickly are never discovered; the last one's
    kernels are found on a thread of their own before any request asks, and once."""
    uri = open_file(client, "typed.cu", program("typed", 1024))
    assert "n = 1024" in await drafted(client, uri)
    text = program("typed", 1024)
    for version in range(2, 7):  # faster than DISCOVER_AFTER apart
        text = "// typing\n" + text
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
    deadline = time.monotonic() + 10
    while counted(uri, "discover", 6) == 0 and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    found = [e for e in events(PROBE_LOG, uri) if e["event"] == "discover" and e["version"] == 6]
    assert len(found) == 1 and found[0]["thread"].startswith("fsr-discover"), found
    assert all(counted(uri, "discover", v) == 0 for v in range(2, 6))
    assert "**`typed`**" in await hover(client, uri, line=5)
    assert counted(uri, "discover", 6) == 1


def large_program() -> str:
    """Over 256 KiB (a large document: looked at in windows, whole-file work in its own process),
    with a kernel whose draft is slow."""
    filler = "".join(f"__global__ void k{i}(float* y, int n) {{ int j = threadIdx.x; if (j < n) y[j] = {i}.0f; }}\n"
                     for i in range(3500))
    return program("slow_scale", 1024) + filler


async def test_a_slow_draft_runs_off_the_event_loop_and_other_documents_are_answered_meanwhile(client: LanguageClient):
    other = open_file(client, "other.cu", program("other", 512))
    assert "n = 512" in await drafted(client, other)  # known before the slow ones come

    text = large_program()
    assert len(text.encode()) > 256 << 10
    large = open_file(client, "large.cu", text)
    started = time.monotonic()
    said = await hover(client, large)
    assert time.monotonic() - started < 2.0, "the first hover on a large document waited for its draft"
    assert said.startswith("**`slow_scale`**") and "drafting the spec" in said
    for _ in range(5):  # the draft sleeps in the large documents' process: the event loop is free
        started = time.monotonic()
        assert "n = 512" in await hover(client, other)
        assert time.monotonic() - started < 0.5
    assert "n = 1024" in await drafted(client, large, timeout=60)

    small = open_file(client, "slow_small.cu", program("slow_small", 2048))
    started = time.monotonic()
    said = await hover(client, small)  # a small document's draft: on the drafting thread, sleeping
    assert time.monotonic() - started < 1.0 and "drafting the spec" in said
    for _ in range(5):
        started = time.monotonic()
        assert "n = 512" in await hover(client, other)
        assert time.monotonic() - started < 0.5
    assert "n = 2048" in await drafted(client, small)

    (server_pid,) = {e["pid"] for e in events(PROBE_LOG, other)}
    (large_draft,) = [e for e in events(PROBE_LOG, large) if e["event"] == "draft"]
    assert large_draft["pid"] != server_pid  # in the large documents' process
    threads = {e["thread"] for uri in (other, small) for e in events(PROBE_LOG, uri) if e["event"] == "draft"}
    assert threads and all(t.startswith("fsr-draft") for t in threads), threads  # never the event loop's


async def optimize(client: LanguageClient, uri: str, kernel: str) -> str:
    said = await client.workspace_execute_command_async(types.ExecuteCommandParams(command="fsr.optimize",
                                                                                  arguments=[uri, kernel]))
    await client.workspace_execute_command_async(types.ExecuteCommandParams(command="fsr.cancel",
                                                                           arguments=[uri, kernel]))
    return said


async def test_optimize_on_a_large_document_plans_with_the_draft_its_own_process_makes(client: LanguageClient):
    """A large document is never read whole in the server: Optimize takes its kernels and the
    kernel's spec from its own process, the draft a hover asked for (one a version)."""
    other = open_file(client, "other_plan.cu", program("other_plan", 256))
    text = large_program()
    large = open_file(client, "large_plan.cu", text)
    said = await asyncio.wait_for(optimize(client, large, "slow_scale"), 60)  # its draft under way, slow
    assert said == "optimizing slow_scale", said
    assert "n = 1024" in await drafted(client, large, timeout=5)  # the plan's draft is the hover's

    edited = text.replace("slow_scale", "quick_scale")
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=large, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=edited)]))
    assert "n = 1024" in await drafted(client, large, timeout=60)  # the hover first, this time
    started = time.monotonic()
    assert await asyncio.wait_for(optimize(client, large, "quick_scale"), 60) == "optimizing quick_scale"
    assert time.monotonic() - started < 2.0, "Optimize after a hover waited for a draft of its own"
    assert "n = 256" in await drafted(client, other)

    (server_pid,) = {e["pid"] for e in events(PROBE_LOG, other)}
    drafts = [e for e in events(PROBE_LOG, large) if e["event"] == "draft"]
    assert [(e["version"], e["kernel"]) for e in drafts] == [(1, "slow_scale"), (2, "quick_scale")], drafts
    assert all(e["pid"] != server_pid for e in drafts)  # in the large documents' process, never the server's
    assert counted(large, "discover", 1) == 1 and counted(large, "discover", 2) == 1
