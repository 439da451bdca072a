"""LSP's base protocol (`Content-Length: N` headers, a blank line, N bytes of JSON), read so that a
client's framing mistake costs one message, never the session.

pygls 2 reads a line at a time and trusts the first length it matches: a length that is not a
number, or one shorter than its body, glues the next header to the tail of a body, so no header
matches again (the server stays up and never answers); a length of 10^12 asks for a terabyte
(MemoryError, a traceback, exit 1). Here the bytes go into a buffer of our own, a header block is
checked line by line, and what is not a valid block is skipped, with one warning, up to the next
`Content-Length:` header; a body that is not JSON but holds such a header (its length ran past
it) is cut there and the rest read as the stream it is.

A length over MAX_BODY ends the server with one line on stderr and exit code 1. 64 MiB: the
largest real CUDA file seen in use is 10 MB (2,464 kernels), a body is held several times over
(bytes, text, the parsed message, the document), and no editor sends a message anywhere near it;
so such a length is a corrupt stream or a document we could not serve. Skipping is no answer
there: the body it announces may still be coming, document text that can hold anything, a
`Content-Length:` included, so no next header found in it can be trusted, and a client whose
didOpen was dropped believes we hold a document we never saw. Ending says so plainly; an editor
starts its server again.

Framing only: what a body says is the protocol's business (`protocol.py`), and in what order
and on which thread a body is decoded and handed on, `dispatch.py`'s (a 10 MB didOpen off the
event loop, requests about other documents answered meanwhile). Stdio and TCP share the reader;
FsrServer's start_io and start_tcp call serve_stdio and serve_tcp here.
"""

from __future__ import annotations

import asyncio
import logging
import re
import sys
import threading
from typing import TYPE_CHECKING, Any, Awaitable, BinaryIO, Callable, Coroutine

from pygls.exceptions import JsonRpcInternalError
from pygls.io_ import StdoutWriter

from ..processes import hard_exit

if TYPE_CHECKING:
    from pygls.server import JsonRPCServer

    from .protocol import FsrProtocol

log = logging.getLogger("fsr_lsp")
MAX_BODY = 64 * 1024 * 1024
MAX_HEADER_LINE = 1024  # a header line is a few dozen bytes: a longer one is no header
CHUNK = 65536
EXIT_UNREADABLE_STREAM = 1
TEARDOWN_SECONDS = 0.5  # what the server's end gives the tasks it cancels
_CONTENT_LENGTH = re.compile(rb"content-length:", re.IGNORECASE)
_TOKEN = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # a header's name (RFC 9110)

# Bytes wanted (0: any amount) -> bytes read; b"" at the end of the stream.
ReadSome = Callable[[int], Awaitable[bytes]]


class MessageTooLarge(Exception):
    """A length over MAX_BODY: the stream cannot be read past it (see the module's docstring)."""

    def __init__(self, length: int, limit: int) -> None:
        super().__init__(f"a message announced Content-Length: {length}, over the {limit // 2**20} MiB limit; "
                         "the stream cannot be read past it: exiting")


class FrameReader:
    """Bodies from a byte stream, past bad headers and lengths (each costs one warning)."""

    def __init__(self, read_some: ReadSome, limit: int = MAX_BODY) -> None:
        self._read_some = read_some
        self._buffer = bytearray()
        self._ended = False
        self._quiet = False  # the next skip follows a body answered -32700: that warning said it
        self.limit = limit

    async def next_body(self) -> bytes | None:
        """The next body; None at the end of the stream. Raises MessageTooLarge."""
        while True:
            block = await self._header_block()
            if block is None:
                return None
            if isinstance(block, str):
                if not await self._skip_to_next_header(block):
                    return None
                continue
            start, length = block
            if start + length - len(self._buffer) > CHUNK:  # a large body: read past the buffer
                return await self._large_body(start, length)
            while len(self._buffer) < start + length:
                if not await self._fill(start + length - len(self._buffer)):
                    log.warning("the client's stream ended inside a message (%d of %d bytes)",
                                len(self._buffer) - start, length)
                    return None
            body = bytes(self._buffer[start:start + length])
            del self._buffer[:start + length]
            return body

    def after_unreadable_body(self) -> None:
        """The last body was not JSON (answered -32700, with its own warning): a length shorter
        than its body leaves the rest before the next header, and that skip need not be told twice."""
        self._quiet = True

    def push_back(self, data: bytes) -> None:
        """Bytes read as part of a body that belong to the stream after it."""
        self._buffer[:0] = data

    @staticmethod
    def header_inside(body: bytes) -> int | None:
        """Where a `Content-Length:` header begins inside a body (not at its start), if it does."""
        found = _CONTENT_LENGTH.search(body, 1)
        return found.start() if found else None

    async def _large_body(self, start: int, length: int) -> bytes | None:
        """A body that runs past the buffer by more than a read: the rest read as bytes of its
        own and joined once (one copy of a 10 MB body, where growing the buffer, slicing it and
        cutting it made four, 10 ms in which the event loop answered nothing)."""
        with memoryview(self._buffer) as view:
            parts = [bytes(view[start:])]
        del self._buffer[:]
        have = len(parts[0])
        while have < length:
            chunk = await self._read(length - have)
            if not chunk:
                log.warning("the client's stream ended inside a message (%d of %d bytes)", have, length)
                return None
            parts.append(chunk)
            have += len(chunk)
        body = b"".join(parts)
        if have > length:  # a read past the body (TCP): the rest is the stream's
            self._buffer += memoryview(body)[length:]
            body = body[:length]
        return body

    async def _read(self, wanted: int = 0) -> bytes:
        """Bytes from the stream (b"" at its end)."""
        if self._ended:
            return b""
        try:
            chunk = await self._read_some(wanted)
        except (OSError, ValueError) as error:  # a closed or broken stream is its end
            log.warning("the client's stream could not be read (%s): treated as closed", error)
            chunk = b""
        if not chunk:
            self._ended = True
        return chunk

    async def _fill(self, wanted: int = 0) -> bool:
        chunk = await self._read(wanted)
        if not chunk:
            return False
        self._buffer += chunk
        return True

    async def _header_block(self) -> tuple[int, int] | str | None:
        """(where the body starts, its length) when the buffer begins with a valid header block;
        what is wrong when it begins with anything else; None at the end of the stream."""
        quiet, self._quiet = self._quiet, False
        pos, length = 0, None
        while True:
            end = self._buffer.find(b"\n", pos)
            if end < 0:
                if len(self._buffer) - pos > MAX_HEADER_LINE:
                    return self._bad(quiet, f"a line of over {MAX_HEADER_LINE} bytes where a header belongs")
                if not await self._fill():
                    if self._buffer.strip():
                        log.warning("the client's stream ended inside a header (%d bytes)", len(self._buffer))
                    return None
                continue
            line = bytes(self._buffer[pos:end]).rstrip(b"\r")
            pos = end + 1
            if not line:
                if length is not None:
                    return pos, length
                if not self._buffer[:pos].strip():  # a stray line break between messages: no harm
                    del self._buffer[:pos]
                    pos = 0
                    continue
                return self._bad(quiet, "a header block without Content-Length")
            name, colon, value = line.partition(b":")
            if not colon or not _TOKEN.fullmatch(name):
                return self._bad(quiet, f"bytes that are no header ({_shown(line)})")
            if name.lower() == b"content-length":
                value = value.strip(b" \t")
                if not value.isdigit():
                    return self._bad(quiet, f"Content-Length {_shown(value)} is not a number")
                if length is not None and int(value) != length:
                    return self._bad(quiet, "two different Content-Length headers")
                length = int(value)
                if length > self.limit:
                    raise MessageTooLarge(length, self.limit)

    def _bad(self, quiet: bool, what: str) -> str:
        (log.debug if quiet else log.warning)("%s: skipped to the next Content-Length header", what)
        return what

    async def _skip_to_next_header(self, what: str) -> bool:
        """Drop bytes up to the next `Content-Length:` after the buffer's start; False at the end."""
        start, skipped = 1, 0
        while True:
            found = _CONTENT_LENGTH.search(self._buffer, start)
            if found:
                skipped += found.start()
                del self._buffer[:found.start()]
                log.debug("%d bytes skipped (%s)", skipped, what)
                return True
            keep = len(b"content-length:") - 1  # a header may straddle two reads
            drop = max(len(self._buffer) - keep, 0)
            skipped += drop
            del self._buffer[:drop]
            start = 0
            if not await self._fill():
                log.debug("the stream ended while skipping (%d bytes)", skipped + len(self._buffer))
                return False


def _shown(data: bytes) -> str:
    """Bytes for a log line: short, and no document text beyond a few dozen bytes."""
    return repr(data[:40]) + ("..." if len(data) > 40 else "")


# ------------------------------------------------------------ the loop and its transports


NOTHING = object()  # decode_body's answer for a body answered already (-32700)


def decode_body(body: bytes, protocol: FsrProtocol, frames: FrameReader) -> Any:
    """One body to a message (NOTHING when it could not be read: answered -32700). A body that
    is not JSON but holds a header was longer by its length than by its content: the part
    before the header is the message, the rest the stream."""
    try:
        return protocol.decode(body)
    except ValueError as error:
        cut = frames.header_inside(body)
        if cut is None:
            protocol.parse_error(error)
            frames.after_unreadable_body()
            return NOTHING
        log.warning("a message's Content-Length (%d) ran %d bytes into the next header: read from there",
                    len(body), len(body) - cut)
        frames.push_back(body[cut:])
        try:
            return protocol.decode(body[:cut])
        except ValueError as error:
            protocol.parse_error(error)
            return NOTHING


_SHUTDOWN = re.compile(rb'"method"\s*:\s*"shutdown"')
SHUTDOWN_BODY = 4096  # a shutdown request is a few dozen bytes: a longer body is none (no search of 10 MB)
SHUTDOWN_GRACE = 1.0  # seconds the requests in flight get to answer before a shutdown is handled
FINISHED_TURNS = 3  # the loop's turns a finished request's answer gets to go out


async def settle(protocol: FsrProtocol, seconds: float) -> None:
    """Wait, at most `seconds`, for the client's requests in flight to be answered: a hover sent
    just before `shutdown` (hovers are async and may wait on a draft) is answered first, not
    after it or never. A request is answered once it leaves pygls's futures: a handler that has
    finished still waits there for its done-callback, which sends the answer on the loop's next
    turn. The server's own requests to the client are not waited for."""
    loop = asyncio.get_running_loop()
    deadline, turns = loop.time() + seconds, 0
    while True:
        unanswered = [f for msg_id, f in list(protocol._request_futures.items()) if msg_id in protocol.client_requests]
        left = deadline - loop.time()
        if not unanswered or left <= 0 or turns > FINISHED_TURNS:
            return
        running = [asyncio.wrap_future(f) if not isinstance(f, asyncio.Future) else f
                   for f in unanswered if not f.done()]
        if running:
            await asyncio.wait(running, timeout=left)
        else:  # finished: their answers go out on the loop's next turn
            turns += 1
            await asyncio.sleep(0)


async def pump(read_some: ReadSome, server: JsonRPCServer, stop: threading.Event) -> None:
    """Read bodies and hand them on, in order, until the stream ends or the server stops; a large
    body is decoded, and a large document's change applied, off the event loop while requests
    about other documents are answered (dispatch.py). A fault of ours while handling a message
    is logged (its traceback at debug) and reported as pygls reports it."""
    from .dispatch import Dispatcher

    frames = FrameReader(read_some)
    protocol: FsrProtocol = server.protocol  # type: ignore[assignment]

    def report(error: Exception) -> None:
        log.debug("the fault's traceback", exc_info=error)
        server._report_server_error(error, JsonRpcInternalError)

    dispatcher = Dispatcher(protocol, lambda body: decode_body(body, protocol, frames), report, NOTHING,
                            slow=protocol.slow_seconds)
    try:
        while not stop.is_set():
            body = await frames.next_body()
            if body is None:
                await dispatcher.drained()  # what was read is handled before the server ends
                return
            if len(body) <= SHUTDOWN_BODY and _SHUTDOWN.search(body):
                await dispatcher.drained()
                await settle(protocol, SHUTDOWN_GRACE)  # requests before it are answered first
            try:
                await dispatcher.body(body)
            except Exception as error:  # noqa: BLE001 - the loop outlives one message's fault
                report(error)
            # The next body may be in the buffer already: let the handlers just started take their
            # first step before it, as they did while pygls's reader waited on its thread.
            await asyncio.sleep(0)
    finally:
        dispatcher.shutdown()


def serve_stdio(server: JsonRPCServer, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
    """pygls's start_io with our reader: blocking reads in the server's thread pool (as pygls
    does), a body read in one call once its length is known."""
    stream = stdin or sys.stdin.buffer
    read_any = getattr(stream, "read1", stream.read)
    server._stop_event = stop = threading.Event()
    server.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))

    async def read_some(wanted: int) -> bytes:
        loop = asyncio.get_running_loop()
        if wanted:
            return await loop.run_in_executor(server.thread_pool, stream.read, wanted)
        return await loop.run_in_executor(server.thread_pool, read_any, CHUNK)

    _run(server, pump(read_some, server, stop))


def serve_tcp(server: JsonRPCServer, host: str, port: int) -> None:
    """pygls's start_tcp with our reader: one client, and the server ends when it leaves."""
    server._stop_event = stop = threading.Event()

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        server.protocol.set_writer(writer)  # type: ignore[arg-type]
        try:
            await pump(lambda wanted: reader.read(max(wanted, CHUNK)), server, stop)
        except MessageTooLarge as error:
            end_with(str(error))
        server.shutdown()

    async def listen() -> None:
        listener = await asyncio.start_server(connection, host, port)
        server._server = listener
        log.info("serving on %s", ", ".join(str(s.getsockname()) for s in listener.sockets))
        async with listener:
            await listener.serve_forever()

    try:
        run_then_let_go(listen())
    except asyncio.CancelledError:
        pass


def _run(server: JsonRPCServer, loop_body: Coroutine[Any, Any, None]) -> None:
    async def ended_in_the_loop() -> None:
        try:
            await loop_body
        except MessageTooLarge as error:
            end_with(str(error))

    try:
        run_then_let_go(ended_in_the_loop())
    except BrokenPipeError:
        log.error("the connection to the client is lost: shutting down")
    except (KeyboardInterrupt, SystemExit):
        pass
    server.shutdown()


def run_then_let_go(main: Coroutine[Any, Any, None], grace: float = TEARDOWN_SECONDS) -> None:
    """asyncio.run, but what still runs at the end is cancelled and given `grace` seconds, no
    more. asyncio.run waits for every cancelled task to finish, and a document's check
    cancelled there waits on its nvcc's pipes, which the killed nvcc's own children still hold
    open: the server hung at its end. What is left is the process exit's (and the reaper's,
    for the children)."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        loop.run_until_complete(main)
    finally:
        tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            loop.run_until_complete(asyncio.wait(tasks, timeout=grace))


def end_with(message: str) -> None:
    """End the server now, with one line on stderr (and in the log, when that is a file), no
    traceback, and exit code 1. Children are the reaper's (processes.py)."""
    log.error("%s", message)
    if not any(getattr(h, "stream", None) is sys.stderr and not isinstance(h, logging.FileHandler)
               for h in logging.getLogger().handlers):
        print(f"fsr-lsp: {message}", file=sys.stderr)
    hard_exit(EXIT_UNREADABLE_STREAM)
