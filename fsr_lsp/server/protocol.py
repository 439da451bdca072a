"""The JSON-RPC side of the server, firm with bad input: a request whose params do not fit is
answered (-32602 InvalidParams) rather than left hanging, a body that is not JSON (or not UTF-8)
gets -32700, what is no request (a batch, a bare value, an id with nothing to do, a request
after shutdown) gets -32600 as JSON-RPC and LSP ask, text with lone surrogates (which JSON can
carry and a client can send) has them replaced by U+FFFD (one UTF-16 unit for one: positions
stay), and no Python traceback ever travels in an error's `data`. A client's mistake in a
notification or an answer has no one to answer: it is a warning in the log, never a popup
(pygls shows "Error in server" for it; the user can do nothing about a client's bug)."""

from __future__ import annotations

import json
import logging
import re
from types import SimpleNamespace
from typing import Any, Generator
from urllib.parse import unquote

from lsprotocol import types
from lsprotocol.types import ResponseError
from pygls.exceptions import JsonRpcException
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import RPCRequest
from pygls.protocol.language_server import lsp_method

from .dispatch import LARGE_BODY, LARGE_TEXT, slow_step

log = logging.getLogger("fsr_lsp")
INVALID_REQUEST, INVALID_PARAMS, PARSE_ERROR = -32600, -32602, -32700
_HANDLED = SimpleNamespace(jsonrpc="answered already")  # handle_message drops it
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # json.loads joins the pairs: what is left is alone
# a surrogate reaches a decoded string only through a \uD800-\uDFFF escape (UTF-8 cannot carry
# one): a body without such an escape is not searched string by string (10 MB: 30 ms saved)
_ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")


def without_lone_surrogates(data: dict[str, Any]) -> dict[str, Any]:
    """The dict with each string value's lone surrogates replaced (UTF-8 cannot hold them)."""
    for key, value in data.items():
        if isinstance(value, str) and not value.isascii() and _LONE_SURROGATE.search(value):
            data[key] = _LONE_SURROGATE.sub("\ufffd", value)
    return data


def message_id(value: Any) -> int | str | None:
    """A JSON-RPC id to answer with: a number or a string, else null (true is no id)."""
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None


class Invalid:
    """What JSON-RPC calls an invalid request, found while decoding: answered -32600 once it is
    known to be the whole message (the decoder sees nested objects first)."""

    def __init__(self, msg_id: int | str | None, why: str) -> None:
        self.id, self.why = msg_id, why


class FsrProtocol(LanguageServerProtocol):
    _surrogates = True  # whether the body being decoded may hold lone surrogates

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.client_requests: set[Any] = set()  # ids of the client's requests (not the server's own)

    @property
    def slow_seconds(self) -> float:
        """Tests (Instruments.large_seconds): seconds each large message's work is made to take."""
        instruments = getattr(self._server, "instruments", None)
        return instruments.large_seconds if instruments is not None else 0.0

    def decode(self, body: bytes) -> Any:
        """A body to a message; ValueError for one that is not JSON, not UTF-8, or nested past
        what the decoder can hold (JSON-RPC's -32700, all three)."""
        if len(body) > LARGE_BODY:  # decoded here, on the event loop, only when dispatch.py could not
            slow_step(self.slow_seconds)
        self._surrogates = _ESCAPED_SURROGATE.search(body) is not None
        try:
            return json.loads(body, object_hook=self.structure_message)
        except RecursionError:
            raise ValueError("the JSON is nested too deeply") from None
        finally:
            self._surrogates = True

    def structure_tree(self, tree: Any, names: dict[str, int], strings: list[str], surrogates: bool) -> Any:
        """A message from a large body decoded in parts (dispatch.py): `tree` is its JSON with
        each long string a placeholder (`names`: placeholder -> its index in `strings`, decoded
        already, lone surrogates replaced); structured as `decode` does, innermost object first.
        `surrogates`: the tree's own strings may hold lone surrogates."""
        def build(value: Any) -> Any:
            if isinstance(value, dict):
                return self.structure_message({build(k) if k in names else k: build(v) for k, v in value.items()})
            if isinstance(value, list):
                return [build(v) for v in value]
            if isinstance(value, str):
                index = names.get(value)
                if index is not None:
                    return strings[index]
                return _LONE_SURROGATE.sub("\ufffd", value) if surrogates and not value.isascii() else value
            return value

        self._surrogates = False  # the long strings were cleaned piece by piece, the others here
        try:
            return build(tree)
        except RecursionError:
            raise ValueError("the JSON is nested too deeply") from None
        finally:
            self._surrogates = True

    def open_document(self, uri: str) -> Any:
        """pygls's open document, or None (also before `initialize`)."""
        if self._workspace is None:
            return None
        return self._workspace.text_documents.get(unquote(uri))

    def structure_message(self, data: dict[str, Any]) -> Any:
        if self._surrogates:
            data = without_lone_surrogates(data)
        if "method" in data and isinstance(data.get("id"), (int, str)):  # a client's request (framing.settle)
            self.client_requests.add(data["id"])
            if len(self.client_requests) > 4096:  # those answered are forgotten
                self.client_requests &= set(self._request_futures)
        if "jsonrpc" in data and "id" in data:
            if data["id"] is not None and message_id(data["id"]) is None:
                return Invalid(None, "an id that is neither a number nor a string")
            if not {"method", "result", "error"} & data.keys():
                return Invalid(message_id(data["id"]), "an id with no method, result or error")
        try:
            return super().structure_message(data)
        except JsonRpcException:
            if not isinstance(data, dict) or "jsonrpc" not in data:
                raise
            if "id" in data and "method" in data:
                log.warning("invalid params for %s (request %s)", data["method"], data["id"])
                self._send_response(data["id"], None, ResponseError(
                    code=INVALID_PARAMS, message=f"invalid params for {data['method']}: see the LSP specification"))
            elif "method" in data:
                log.warning("the client's %s notification does not fit the LSP specification: ignored",
                            str(data["method"])[:80])
            else:
                self.unfit_answer(data["id"])
            return _HANDLED

    def unfit_answer(self, msg_id: Any) -> None:
        """The client's answer to one of our requests does not fit its result's type: whoever
        waits for it gets an error rather than waiting for ever."""
        log.warning("the client's answer to request %s does not fit the LSP specification", msg_id)
        future = self._request_futures.pop(msg_id, None)
        if future is not None and not future.done():
            future.set_exception(JsonRpcException(f"the client's answer to request {msg_id} does not fit"))

    def handle_message(self, message: Any) -> None:
        """pygls's dispatch, after what JSON-RPC and LSP call invalid: a message that is no
        JSON-RPC 2.0 object, and a request after shutdown (a notification then is dropped, as
        pygls does, and `exit` still ends the server)."""
        if message is _HANDLED:
            return
        if isinstance(message, Invalid):
            return self.invalid_request(message.id, message.why)
        if getattr(message, "jsonrpc", None) != self.VERSION:
            if isinstance(message, list):
                why = "a batch (a JSON array): LSP has none"
            elif isinstance(message, dict) or hasattr(message, "jsonrpc"):
                why = 'no "jsonrpc": "2.0"'
            else:
                why = "not a JSON object"
            msg_id = message.get("id") if isinstance(message, dict) else getattr(message, "id", None)
            return self.invalid_request(message_id(msg_id), why)
        if self._shutdown and isinstance(message, RPCRequest) and message.method != types.EXIT:
            return self.invalid_request(message.id, f"{message.method} after shutdown")
        super().handle_message(message)

    def invalid_request(self, msg_id: int | str | None, why: str) -> None:
        log.warning("an invalid request (%s) was answered -32600", why)
        self._send_data({"jsonrpc": "2.0", "id": msg_id,
                         "error": {"code": INVALID_REQUEST, "message": f"Invalid request: {why}"}})

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams) -> Generator[Any, Any, None]:
        """pygls's, for a document the client opened; a change to any other is the client's
        mistake (pygls raises KeyError, shown to the user as "Error in server")."""
        uri = params.text_document.uri
        if self._workspace is None or unquote(uri) not in self._workspace.text_documents:
            log.warning("the client's textDocument/didChange of %s, which it never opened: ignored", uri[:200])
            return
        if len(self._workspace.text_documents[unquote(uri)].source) > LARGE_TEXT and any(
                isinstance(c, types.TextDocumentContentChangePartial) for c in params.content_changes):
            slow_step(self.slow_seconds)  # pygls applies it here, on the event loop (dispatch.py: off it)
        yield from super().lsp_text_document__did_change(params)

    def _send_response(self, msg_id: Any, result: Any | None = None, error: ResponseError | None = None) -> None:
        if error is not None and error.data is not None:  # a traceback is ours to log, not the client's to read
            error = ResponseError(code=error.code, message=error.message)
        super()._send_response(msg_id, result, error)

    def parse_error(self, error: ValueError) -> None:
        """A body that is not JSON, or not UTF-8: the answer JSON-RPC prescribes, with no id to give."""
        if isinstance(error, json.JSONDecodeError):
            message = f"Parse error: {error.msg} at {error.pos}"
        elif isinstance(error, UnicodeDecodeError):
            message = f"Parse error: the body is not UTF-8 (byte {error.object[error.start]:#04x} at {error.start})"
        else:
            message = f"Parse error: {error}" if str(error) else "Parse error"
        log.warning("a message that could not be read was answered -32700: %s", message)
        self._send_data({"jsonrpc": "2.0", "id": None, "error": {"code": PARSE_ERROR, "message": message}})


def flat_args(args: tuple) -> tuple:
    """A workspace command's arguments: some clients wrap them once more, in a list."""
    return tuple(args[0]) if len(args) == 1 and isinstance(args[0], list) else args


def string_args(args: tuple, command: str, *wanted: str) -> tuple[str, ...] | str:
    """A command's leading arguments when each is a non-empty string, else what is wrong (its
    answer): a client or a script can send anything, and a number is no file or kernel name."""
    flat = flat_args(args)
    for i in range(len(wanted)):
        if i >= len(flat) or not isinstance(flat[i], str) or not flat[i].strip():
            got = "nothing" if i >= len(flat) else repr(flat[i])[:60]
            return f"{command} takes {', '.join(wanted)} (strings); argument {i + 1} is {got}"
    return tuple(flat[:len(wanted)])
