"""The JSON-RPC side of the server, firm with bad input: a request whose params do not fit is
answered (-32602 InvalidParams) rather than left hanging, a body that is not JSON (or not UTF-8)
gets -32700, text with lone surrogates (which JSON can carry and a client can send) has them
replaced by U+FFFD (one UTF-16 unit for one: positions stay), and no Python traceback ever
travels in an error's `data`."""

from __future__ import annotations

import json
import logging
import re
from types import SimpleNamespace
from typing import Any

from lsprotocol.types import ResponseError
from pygls.exceptions import JsonRpcException
from pygls.protocol import LanguageServerProtocol

log = logging.getLogger("fsr_lsp")
INVALID_PARAMS, PARSE_ERROR = -32602, -32700
_HANDLED = SimpleNamespace(jsonrpc="answered already")  # handle_message ignores it (with a debug line)
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # json.loads joins the pairs: what is left is alone


def without_lone_surrogates(data: dict[str, Any]) -> dict[str, Any]:
    """The dict with each string value's lone surrogates replaced (UTF-8 cannot hold them)."""
    for key, value in data.items():
        if isinstance(value, str) and not value.isascii() and _LONE_SURROGATE.search(value):
            data[key] = _LONE_SURROGATE.sub("\ufffd", value)
    return data


class FsrProtocol(LanguageServerProtocol):
    def structure_message(self, data: dict[str, Any]) -> Any:
        data = without_lone_surrogates(data)
        try:
            return super().structure_message(data)
        except JsonRpcException:
            if isinstance(data, dict) and "id" in data and "method" in data:
                log.warning("invalid params for %s (request %s)", data["method"], data["id"])
                self._send_response(data["id"], None, ResponseError(
                    code=INVALID_PARAMS, message=f"invalid params for {data['method']}: see the LSP specification"))
                return _HANDLED
            raise

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
            message = "Parse error"
        log.warning("a message that could not be read was answered -32700: %s", message)
        self._send_data({"jsonrpc": "2.0", "id": None, "error": {"code": PARSE_ERROR, "message": message}})


def flat_args(args: tuple) -> tuple:
    """A workspace command's arguments: some clients wrap them once more, in a list."""
    return tuple(args[0]) if len(args) == 1 and isinstance(args[0], list) else args


def string_args(args: tuple, command: str, *wanted: str) -> tuple[str, ...] | str:
    """A command's leading arguments when each is a non-empty string, else what is wrong (its
    answer): a client or a script can send anything, and a number is no file or kernel name."""
    flat = flat_args(args)
    for i, what in enumerate(wanted):
        if i >= len(flat) or not isinstance(flat[i], str) or not flat[i].strip():
            got = "nothing" if i >= len(flat) else repr(flat[i])[:60]
            return f"{command} takes {', '.join(wanted)} (strings); argument {i + 1} is {got}"
    return tuple(flat[:len(wanted)])
