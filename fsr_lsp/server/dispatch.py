"""Messages handed to the protocol in the order the client sent them, with the work a large
message needs done off the event loop.

A 10 MB `didOpen` is 30 ms of `json.loads` (with the body's regular expressions, 50 ms), and a
`didChange` of a 10 MB document 65 ms of pygls's line splitting, both on the event loop, where
every other document's requests wait: a hover sent right behind a 10 MB `didOpen` waited 53-96
ms (issue 46). Here:

- a body over LARGE_BODY is walked on a thread for its long strings (a document's text); what is
  around them (the message's skeleton, a few hundred bytes) is decoded there at once, the long
  strings in pieces of about PIECE bytes, each cut just after a `\\n` escape (no escape, surrogate
  pair or UTF-8 sequence is ever cut), on a thread, while the reader goes on. Python's JSON
  decoder holds the GIL for a whole string: a piece is a short hold, a 10 MB string a long one;
- a `didChange` of a document over LARGE_TEXT characters has its new text worked out on a
  thread (`changed_text`: pygls's result, from pieces of the text) and is handed to pygls as one
  whole-document change.

Order: while such work is under way, what comes after it waits in a queue and is handled in
turn, except read-only requests (GO_AHEAD: hover, code actions, ...) about a document that no
queued message concerns: those are answered at once, as if they had been sent a moment earlier
(LSP lets a server reorder requests that do not affect each other). A message about the same
document (a `didChange` after a `didOpen`, a hover on the document being opened) waits; one
that names no document (a command, a configuration change, an answer to the server's own
request, `shutdown`, `exit`) concerns them all and waits, and everything after it too.

A large body whose walk or skeleton is not JSON (a length that ran into the next header, a cut
body) is decoded as before, on the event loop, where framing.py can read the next message from
the header inside it."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
import uuid
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import accumulate
from typing import TYPE_CHECKING, Any, Callable, Sequence
from urllib.parse import unquote

from lsprotocol import types

if TYPE_CHECKING:
    from pygls.workspace.position_codec import PositionCodec

log = logging.getLogger("fsr_lsp")
LARGE_BODY = 1 << 20  # bytes: a body over this is decoded off the event loop
LARGE_TEXT = 1 << 20  # characters: a didChange of a document over this is applied off the event loop
PIECE = 1 << 18  # bytes of a long string decoded at a time (about 0.3 ms); lines of a text split at a time
BACKSLASH = 0x5C
_ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")

def slow_step(seconds: float) -> None:
    """Tests (Instruments.large_seconds): the slow work on a large message (decoding its body,
    applying its change) made to take this long, wherever it runs (off the event loop here; on it
    where it is done there)."""
    if seconds:
        time.sleep(seconds)


# Requests that read a document and change nothing: one about a document no queued message
# concerns is answered at once.
GO_AHEAD = frozenset({
    types.TEXT_DOCUMENT_HOVER, types.TEXT_DOCUMENT_CODE_ACTION, types.TEXT_DOCUMENT_CODE_LENS,
    types.TEXT_DOCUMENT_COMPLETION, types.TEXT_DOCUMENT_SIGNATURE_HELP, types.TEXT_DOCUMENT_DEFINITION,
    types.TEXT_DOCUMENT_DECLARATION, types.TEXT_DOCUMENT_TYPE_DEFINITION, types.TEXT_DOCUMENT_IMPLEMENTATION,
    types.TEXT_DOCUMENT_REFERENCES, types.TEXT_DOCUMENT_DOCUMENT_HIGHLIGHT, types.TEXT_DOCUMENT_DOCUMENT_SYMBOL,
    types.TEXT_DOCUMENT_DOCUMENT_LINK, types.TEXT_DOCUMENT_FOLDING_RANGE, types.TEXT_DOCUMENT_SELECTION_RANGE,
    types.TEXT_DOCUMENT_INLAY_HINT, types.TEXT_DOCUMENT_DIAGNOSTIC, types.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL,
    types.TEXT_DOCUMENT_SEMANTIC_TOKENS_RANGE, types.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL_DELTA,
})

# ------------------------------------------------------------ a large body, off the event loop


@dataclass
class Split:
    """A large body with its long strings cut out: the rest decoded (`skeleton`, each long
    string a placeholder), where each long string's content lies in the body, and the
    documents the message concerns."""

    skeleton: Any
    spans: list[tuple[int, int]]
    names: dict[str, int]  # placeholder -> its long string's index
    surrogates: bool  # the skeleton has \\uD800-\\uDFFF escapes (lone ones are replaced)
    uris: frozenset[str] | None


def split_body(body: bytes, piece: int = PIECE) -> Split | None:
    """The body's long strings (over `piece` bytes) found and cut out, the rest decoded; None
    when it has none, or when what is around them is not JSON (decoded whole, as before)."""
    spans: list[tuple[int, int]] = []
    find, pos = body.find, 0
    while True:  # every string, from its opening quote to the first quote not escaped
        start = find(b'"', pos)
        if start < 0:
            break
        end = start
        while True:
            end = find(b'"', end + 1)
            if end < 0:
                return None  # a string that never ends: not JSON
            k = end - 1
            while body[k] == BACKSLASH:
                k -= 1
            if (end - 1 - k) % 2 == 0:  # an even run of backslashes before it: the string's end
                break
        if end - start - 1 > piece:
            spans.append((start + 1, end))
        pos = end + 1
    if not spans:
        return None
    nonce = uuid.uuid4().hex
    names, parts, last = {}, [], 0
    for i, (s, e) in enumerate(spans):
        names[f"\x00fsr-{nonce}-{i}"] = i
        parts += [body[last:s], f"\\u0000fsr-{nonce}-{i}".encode()]
        last = e
    parts.append(body[last:])
    skeleton_bytes = b"".join(parts)
    try:
        skeleton = json.loads(skeleton_bytes)
    except (ValueError, RecursionError):
        return None
    return Split(skeleton, spans, names, _ESCAPED_SURROGATE.search(skeleton_bytes) is not None,
                 _tree_uris(skeleton, names))


def decode_strings(body: bytes, spans: list[tuple[int, int]], piece: int = PIECE, slow: float = 0.0) -> list[str]:
    """Each long string's content decoded, a piece at a time (lone surrogates replaced by
    U+FFFD, as protocol.py does). ValueError where it is not a JSON string's content."""
    slow_step(slow)
    out = []
    for start, end in spans:
        parts, pos = [], start
        while pos < end:
            cut = _cut(body, pos + piece, end)
            chunk = body[pos:cut]
            text = json.loads(b'"' + chunk + b'"')
            if _ESCAPED_SURROGATE.search(chunk):
                text = _LONE_SURROGATE.sub("\ufffd", text)
            parts.append(text)
            pos = cut
        out.append("".join(parts))
    return out


def _cut(body: bytes, at: int, end: int) -> int:
    """Just after the first `\\n` escape at or after `at` (before `end`), else `end`."""
    while at < end:
        j = body.find(b"\\n", at, end)
        if j < 0:
            return end
        k = j
        while body[k - 1] == BACKSLASH:
            k -= 1
        if (j - k) % 2 == 0:  # an odd run of backslashes ending at j: j begins an escape
            return j + 2
        at = j + 1
    return end


def _tree_uris(tree: Any, names: dict[str, int]) -> frozenset[str] | None:
    params = tree.get("params") if isinstance(tree, dict) else None
    document = params.get("textDocument") if isinstance(params, dict) else None
    uri = document.get("uri") if isinstance(document, dict) else None
    return frozenset({unquote(uri)}) if isinstance(uri, str) and uri not in names else None


def message_uris(message: Any) -> frozenset[str] | None:
    """The document a structured message is about, or None (it concerns every document)."""
    document = getattr(getattr(message, "params", None), "text_document", None)
    uri = getattr(document, "uri", None)
    return frozenset({unquote(uri)}) if isinstance(uri, str) else None


# ------------------------------------------------------------ a large document's change, off the event loop


def changed_text(text: str, changes: Sequence[Any], codec: PositionCodec, piece: int = PIECE, slow: float = 0.0) -> str:
    """The document's text after `changes`, as pygls's TextDocument.apply_change gives it (with
    incremental sync), worked out from pieces of the text: only the lines a change names are
    split out, a piece at a time (pygls splits the whole text into lines, one 25 ms call for 10
    MB, then copies it line by line)."""
    slow_step(slow)
    for change in changes:
        if isinstance(change, types.TextDocumentContentChangePartial):
            text = _apply_partial(text, change, codec, piece)
        else:
            text = change.text
    return text


def _apply_partial(text: str, change: types.TextDocumentContentChangePartial, codec: PositionCodec,
                   piece: int) -> str:
    start, end = change.range.start, change.range.end
    found, count, last = _lines(text, {start.line, end.line}, piece)
    if count == 0:  # an empty document: pygls appends
        return text + change.text

    def offset(position: types.Position) -> tuple[int, int]:
        """(the line, the offset in the text) of a client position, placed as pygls's codec
        places it: past the last line, that line's length in client units."""
        if count is not None and position.line >= count:
            line_start, line = last
            return count - 1, line_start + codec.impl.num_units(line)
        line_start, line = found[position.line]
        return position.line, line_start + codec.position_from_client_units(
            [line], types.Position(line=0, character=position.character)).character

    start_line, start_at = offset(start)
    end_line, end_at = offset(end)
    if start_line > end_line:  # pygls writes every line unchanged
        return text
    return text[:start_at] + change.text + text[end_at:]


def _lines(text: str, wanted: set[int], piece: int) -> tuple[dict[int, tuple[int, str]], int | None, tuple[int, str]]:
    """For each wanted line (as str.splitlines(True) counts them): where it starts in the text
    and the line with its break; the number of lines when the search reached the end (else
    None), and then the last line's start and text. The text is split a piece at a time, each
    cut just after a '\\n' (never inside a '\\r\\n'), so the lines are those of the whole."""
    found: dict[int, tuple[int, str]] = {}
    top = max(wanted)
    line = pos = 0
    last = (0, "")
    size = len(text)
    while pos < size:
        cut = text.find("\n", pos + piece)
        end = size if cut < 0 else cut + 1
        lines = text[pos:end].splitlines(True)
        if lines and any(line <= w < line + len(lines) for w in wanted):
            starts = list(accumulate(map(len, lines), initial=pos))
            for w in wanted:
                if line <= w < line + len(lines):
                    found[w] = (starts[w - line], lines[w - line])
        if lines:
            last = (end - len(lines[-1]), lines[-1])
        line += len(lines)
        pos = end
        if line > top:
            return found, None, last
    return found, line, last


# ------------------------------------------------------------ the queue


@dataclass(eq=False)
class Waiting:
    uris: frozenset[str] | None
    message: Any = None  # decoded; or, for a large body, assembled when its strings are
    strings: asyncio.Future | None = None
    split: Split | None = None


class Dispatcher:
    """The reader's messages to the protocol: in order, the slow ones' work on threads of its own
    (never pygls's pool, whose threads read the stream)."""

    def __init__(self, protocol: Any, decode: Callable[[bytes], Any], report: Callable[[Exception], None],
                 nothing: Any = None, slow: float = 0.0) -> None:
        self._protocol = protocol
        self._slow = slow  # tests: seconds each large message's work is made to take (slow_step)
        self._decode = decode  # a body to a message, on the event loop; `nothing` when already answered
        self._report = report  # a fault of ours while handling a message
        self._nothing = nothing
        self._queue: deque[Waiting] = deque()
        self._runner: asyncio.Task | None = None
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="fsr-large-message")

    async def body(self, body: bytes) -> None:
        """A body read from the stream: handled now, queued, or decoded off the event loop."""
        loop = asyncio.get_running_loop()
        if len(body) > LARGE_BODY:
            split = await loop.run_in_executor(self._pool, split_body, body)
            if split is not None:
                strings = loop.run_in_executor(self._pool, decode_strings, body, split.spans, PIECE, self._slow)
                self._enqueue(Waiting(split.uris, strings=strings, split=split))
                return
        message = self._decode(body)
        if message is not self._nothing:
            self.message(message)

    def message(self, message: Any) -> None:
        if self._queue:
            if self._may_go_ahead(message):
                self._handle(message)
            else:
                self._enqueue(Waiting(message_uris(message), message=message))
        elif self._large_change(message):
            self._enqueue(Waiting(message_uris(message), message=message))
        else:
            self._handle(message)

    async def drained(self) -> None:
        """Every queued message handled (before `shutdown`, and at the end of the stream)."""
        while self._queue and self._runner is not None:
            await asyncio.shield(self._runner)

    @property
    def waiting(self) -> int:
        return len(self._queue)

    # ------------------------------------------------------------

    def _may_go_ahead(self, message: Any) -> bool:
        if getattr(message, "method", None) not in GO_AHEAD or getattr(message, "id", None) is None:
            return False
        uris = message_uris(message)
        if uris is None:
            return False
        return all(w.uris is not None and not (w.uris & uris) for w in self._queue)

    def _enqueue(self, waiting: Waiting) -> None:
        self._queue.append(waiting)
        if self._runner is None or self._runner.done():
            self._runner = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        while self._queue:
            waiting = self._queue[0]
            try:
                message = waiting.message
                if waiting.strings is not None:
                    assert waiting.split is not None
                    try:
                        strings = await waiting.strings
                        message = self._protocol.structure_tree(waiting.split.skeleton, waiting.split.names, strings,
                                                                waiting.split.surrogates)
                    except ValueError as error:  # a long string that is not JSON (or nested past the decoder)
                        self._protocol.parse_error(error)
                        continue
                if self._large_change(message):
                    await self._apply_change(message)
                else:
                    self._handle(message)
            except asyncio.CancelledError:
                raise
            except Exception as error:  # noqa: BLE001 - the queue outlives one message's fault
                self._report(error)
            finally:
                self._queue.popleft()

    def _handle(self, message: Any) -> None:
        try:
            self._protocol.handle_message(message)
        except Exception as error:  # noqa: BLE001 - the reader outlives one message's fault
            self._report(error)

    def _large_change(self, message: Any) -> bool:
        if getattr(message, "method", None) != types.TEXT_DOCUMENT_DID_CHANGE:
            return False
        params = message.params
        doc = self._protocol.open_document(params.text_document.uri)
        return (doc is not None and doc._is_sync_kind_incremental and len(doc.source) > LARGE_TEXT
                and any(isinstance(c, types.TextDocumentContentChangePartial) for c in params.content_changes))

    async def _apply_change(self, message: Any) -> None:
        """The change's new text worked out on a thread, then handed to pygls whole (in turn:
        nothing about this document was handled meanwhile)."""
        params = message.params
        doc = self._protocol.open_document(params.text_document.uri)
        old = doc.source
        loop = asyncio.get_running_loop()
        text = await loop.run_in_executor(self._pool, changed_text, old, list(params.content_changes),
                                          doc.position_codec, PIECE, self._slow)
        if self._protocol.open_document(params.text_document.uri) is doc and doc.source is old:
            params.content_changes = [types.TextDocumentContentChangeWholeDocument(text=text)]
        self._handle(message)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
