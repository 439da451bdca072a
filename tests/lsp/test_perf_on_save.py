"""Performance on save over LSP (a scripted clock, tests/support/scripted_timer.py; the CPU half is
real): with fsr.perfOnSave a save that doubles a kernel's work warns on its name with how much
slower and since when, a save that only changes a comment does not; without the setting saves
time nothing, and the command fsr.checkPerformance checks on demand."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from ..workflows.test_perf_check import COMMENTED, DOUBLED, SAXPY, stored
from .conftest import open_file, wait_until

pytestmark = pytest.mark.nvcc
NAME = next(i for i, line in enumerate(SAXPY.splitlines()) if "void saxpy(" in line)


def perf(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    return [d for d in client.diagnostics.get(uri, []) if str(d.code or "").startswith("perf-")]


def save(client: LanguageClient, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))


async def test_a_save_that_doubles_the_work_warns_and_a_comment_does_not(client: LanguageClient):
    stored(client.workspace_dir)  # type: ignore[attr-defined]  (as a search would have)
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"fsr": {"perfOnSave": True}}))
    uri = open_file(client, "saxpy.cu", SAXPY)
    save(client, uri, DOUBLED, 2)
    (slower,) = await wait_until(lambda: perf(client, uri), 30)
    assert slower.code == "perf-regression" and slower.severity == types.DiagnosticSeverity.Warning
    assert slower.range.start.line == NAME and "100% slower than at " in slower.message and "0.4 ms -> 0.8 ms" in slower.message
    save(client, uri, COMMENTED, 3)
    await wait_until(lambda: not perf(client, uri), 30)
    await asyncio.sleep(3)  # the check after the comment's save: still nothing
    assert not perf(client, uri)


async def test_without_the_setting_saves_time_nothing_and_the_command_checks(client: LanguageClient):
    stored(client.workspace_dir)  # type: ignore[attr-defined]
    uri = open_file(client, "saxpy.cu", SAXPY)
    save(client, uri, DOUBLED, 2)
    await asyncio.sleep(3)
    assert not perf(client, uri)
    said = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="fsr.checkPerformance", arguments=[uri]))
    assert "100% slower" in said
    await wait_until(lambda: perf(client, uri), 30)
