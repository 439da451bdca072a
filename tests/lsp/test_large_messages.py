"""A large message's work is done off the event loop and in order (fsr_lsp/server/dispatch.py):
a body over a megabyte (a 10 MB didOpen) is decoded on a thread, in pieces, and a large
document's incremental change applied on a thread; meanwhile requests about other documents are
answered, and what concerns the large document waits its turn (a didChange sent right behind
the didOpen applies after it; a hover on it sees both).

The server's tests make that work slow with a stand-in (FSR_LSP_TEST_LARGE_SECONDS: it sleeps
where the work runs): on the event loop, as the work ran before, every hover would wait for it."""

from __future__ import annotations

import asyncio
import copy
import json
import random
import re
import time

import pytest_lsp
from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec
from pygls.workspace.text_document import TextDocument
from pytest_lsp import ClientServerConfig, LanguageClient

from fsr_lsp.server.dispatch import LARGE_BODY, LARGE_TEXT, changed_text, decode_strings, split_body
from fsr_lsp.server.framing import CHUNK

from .conftest import make_client, open_file, server_env_with, without_checks
from ..support.lsp_stream import frame
from ..support.lsp_stream import read_in_chunks
from ..support.doubles import LARGE_SECONDS, command

SLOW_SECONDS = 3.0  # the stand-in's large-message work
QUICK_SECONDS = 1.5  # what a hover on another document may take meanwhile (about 5 ms unloaded)


# ---------------------------------------------------------------- the pieces, against what they replace


def test_a_large_body_decoded_in_pieces_is_the_body_decoded_whole():
    rng = random.Random(46)
    alphabet = ["a", "\n", "\r\n", "\\", '"', "é", "😋", "\ud800", "\udc00", "\t", "/", "\x00", "\u2028"]
    lone = re.compile("[\ud800-\udfff]")
    checked = 0
    for _ in range(1500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 300)))
        ascii_only = rng.random() < 0.5
        if not ascii_only:  # raw UTF-8 cannot carry a surrogate
            text = "".join(c for c in text if not "\ud800" <= c <= "\udfff")
        message = {"jsonrpc": "2.0", "method": "textDocument/didOpen",
                   "params": {"textDocument": {"uri": "file:///w/a%20b.cu", "languageId": "cuda", "version": 1,
                                               "text": text, "short": 'a "quoted" \\ one'}}}
        body = json.dumps(message, ensure_ascii=ascii_only).encode()
        piece = rng.choice([20, 21, 33, 64])
        split = split_body(body, piece)
        if split is None:  # no string longer than a piece
            assert len(json.dumps(text, ensure_ascii=ascii_only).encode()) <= piece + 2
            continue
        strings = decode_strings(body, split.spans, piece)

        def build(value):
            if isinstance(value, dict):
                return {k: build(v) for k, v in value.items()}
            return strings[split.names[value]] if isinstance(value, str) and value in split.names else value

        def clean(value):  # what protocol.py makes of a decoded message: lone surrogates replaced
            if isinstance(value, dict):
                return {k: clean(v) for k, v in value.items()}
            return lone.sub("\ufffd", value) if isinstance(value, str) else value

        assert build(split.skeleton) == clean(json.loads(body))
        assert split.uris == frozenset({"file:///w/a b.cu"})
        checked += 1
    assert checked > 1000


def test_what_is_not_json_around_the_long_strings_is_left_to_the_reader():
    text = "x" * 100
    body = json.dumps({"params": {"textDocument": {"uri": "u", "text": text}}}).encode()
    assert split_body(body, 50) is not None
    assert split_body(body[:-1], 50) is None  # cut short
    assert split_body(body + b"Content-Length: 12\r\n\r\n" + body, 50) is None  # a length that ran into the next
    assert split_body(body[:60], 50) is None  # a string that never ends


def test_a_large_documents_change_is_pyglss_change():
    rng = random.Random(46)
    alphabet = ["a", "b", " ", "\n", "\r\n", "\r", "é", "😋", "\u2028", "\x0c", "xxxxx"]
    for _ in range(1500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        codec = PositionCodec(encoding=rng.choice(list(types.PositionEncodingKind)))
        lines = text.count("\n") + 3
        changes: list = []
        for _ in range(rng.randint(1, 3)):
            if rng.random() < 0.1:
                changes.append(types.TextDocumentContentChangeWholeDocument(text=rng.choice(["", "a\nb"])))
                continue

            def at() -> types.Position:
                return types.Position(line=rng.randint(0, lines), character=rng.randint(0, 12))

            changes.append(types.TextDocumentContentChangePartial(range=types.Range(start=at(), end=at()),
                                                                  text=rng.choice(["", "Z", "Q\nR", "😋"])))
        doc = TextDocument("file:///w/x.cu", text, 1, position_codec=codec)
        for change in copy.deepcopy(changes):
            doc.apply_change(change)
        for piece in (1, 3, 8, 1 << 18):
            assert changed_text(text, copy.deepcopy(changes), codec, piece) == doc.source, (text, changes, piece)


def test_the_checks_lines_are_the_texts_lines(monkeypatch):
    """The on-save check splits a large text into lines a piece at a time: the same lines."""
    from fsr_lsp.server import check

    rng = random.Random(46)
    alphabet = ["a", "\n", "\r\n", "\r", "\u2028", "\x0c", "bb"]
    for piece in (1, 2, 5, 1 << 20):
        monkeypatch.setattr(check, "PIECE", piece)
        for _ in range(500):
            text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
            assert check.lines_of(text) == text.splitlines(), (text, piece)


def test_a_large_body_is_read_whole_whatever_the_chunks():
    big = json.dumps({"text": "y" * (3 * CHUNK)}).encode()
    stream = frame(b"[1]") + frame(big) + b"junk" + frame(b"[2]")

    for step in (1000, CHUNK, CHUNK + 7, len(stream)):
        assert read_in_chunks(stream, step) == [b"[1]", big, b"[2]"], step


# ---------------------------------------------------------------- the server


def test_a_large_stream_in_order_and_a_large_body_that_is_not_json(tmp_path):
    """Raw bytes, no stand-in: a large didOpen, a change and a hover right behind it, then a
    large body with a bad escape inside its text (-32700, and the next request is answered)."""
    from ..support.lsp_stream import message, session
    from ..support.lsp_stream import assert_clean, end, init

    uri = (tmp_path / "large.cu").as_uri()
    opened = message(method="textDocument/didOpen", params={"textDocument": {
        "uri": uri, "languageId": "cuda", "version": 1, "text": large_text()}})
    at = {"start": {"line": 0, "character": 20}, "end": {"line": 0, "character": 25}}
    changed = message(method="textDocument/didChange", params={
        "textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"range": at, "text": "renamed"}]})
    hovered = message(id=2, method="textDocument/hover", params={
        "textDocument": {"uri": uri}, "position": {"line": 0, "character": 18}})
    bad = json.dumps({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": (tmp_path / "bad.cu").as_uri(), "languageId": "cuda", "version": 1, "text": large_text()}}}).encode()
    middle = len(bad) // 2
    bad = bad[:middle] + b"\\q" + bad[middle:]  # an escape JSON has not
    again = message(id=3, method="textDocument/hover", params={
        "textDocument": {"uri": uri}, "position": {"line": 1, "character": 18}})
    proc, replies, by_id = session(init(tmp_path) + opened + changed + hovered + frame(bad) + again + end(), tmp_path)
    assert by_id[2]["result"]["contents"]["value"].startswith("**`big_renamed`**"), by_id[2]
    assert by_id[None]["error"]["code"] == -32700
    assert by_id[3]["result"]["contents"]["value"].startswith("**`k0`**"), by_id[3]
    assert 99 in by_id
    assert_clean(proc, replies)


@pytest_lsp.fixture(config=ClientServerConfig(server_command=command("fsr-lsp"),
                                              server_env=server_env_with(LARGE_SECONDS, SLOW_SECONDS), client_factory=make_client))
async def client(lsp_client: LanguageClient):
    async for _ in without_checks(lsp_client):
        yield


SMALL = """__global__ void small_scale(float* y, const float* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
"""


def large_text() -> str:
    """Over LARGE_BODY bytes and LARGE_TEXT characters; its first kernel on line 0."""
    filler = "".join(f"__global__ void k{i}(float* y, int n) {{ int j = threadIdx.x; if (j < n) y[j] = {i}.0f; }}\n"
                     for i in range(16000))
    text = "__global__ void big_first(float* y, int n) { if (threadIdx.x < n) y[threadIdx.x] = 1.0f; }\n" + filler
    assert len(text.encode()) > LARGE_BODY and len(text) > LARGE_TEXT
    return text


async def hover(client: LanguageClient, uri: str, line: int = 0, character: int = 18) -> tuple[float, str]:
    started = time.monotonic()
    found = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=character)))
    return time.monotonic() - started, found.contents.value if found is not None else ""


def rename_first_kernel(client: LanguageClient, uri: str, version: int) -> None:
    """`big_first` becomes `big_renamed` (an incremental change on line 0)."""
    at = types.Range(start=types.Position(line=0, character=20), end=types.Position(line=0, character=25))
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangePartial(range=at, text="renamed")]))


async def test_other_documents_are_answered_while_a_large_didopen_is_decoded_and_its_change_waits(
        client: LanguageClient):
    small = open_file(client, "small.cu", SMALL)
    assert "small_scale" in (await hover(client, small))[1]

    large = open_file(client, "large.cu", large_text())  # its decoding takes SLOW_SECONDS
    rename_first_kernel(client, large, 2)  # sent right behind it: must apply after it
    for _ in range(3):
        took, said = await hover(client, small)
        assert "small_scale" in said
        assert took < QUICK_SECONDS, f"a hover on another document waited {took:.2f} s for the large didOpen"
    took, said = await hover(client, large)  # waits its turn: the open, then the change
    assert said.startswith("**`big_renamed`**"), said
    assert took > 0.5 * SLOW_SECONDS  # it did wait (the decoding, then the change, each SLOW_SECONDS)


async def test_other_documents_are_answered_while_a_large_documents_change_is_applied(client: LanguageClient):
    small = open_file(client, "small.cu", SMALL)
    assert "small_scale" in (await hover(client, small))[1]
    large = open_file(client, "large.cu", large_text())
    assert "big_first" in (await asyncio.wait_for(hover(client, large), 60))[1]

    rename_first_kernel(client, large, 2)  # applying it takes SLOW_SECONDS
    for _ in range(3):
        took, said = await hover(client, small)
        assert "small_scale" in said
        assert took < QUICK_SECONDS, f"a hover on another document waited {took:.2f} s for a large document's change"
    said = (await hover(client, large))[1]
    assert said.startswith("**`big_renamed`**"), said
