"""The JSON-RPC side of the server, firm with bad input: a request whose params do not fit is
answered (-32602 InvalidParams) rather than left hanging, a body that is not JSON gets -32700,
and no Python traceback ever travels in an error's `data`."""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace
from typing import Any

from lsprotocol.types import ResponseError
from pygls.exceptions import JsonRpcException
from pygls.protocol import LanguageServerProtocol

log = logging.getLogger("fsr_lsp")
INVALID_PARAMS, PARSE_ERROR = -32602, -32700
_HANDLED = SimpleNamespace(jsonrpc="answered already")  # handle_message ignores it (with a debug line)


class FsrProtocol(LanguageServerProtocol):
    def structure_message(self, data: dict[str, Any]) -> Any:
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

    def parse_error(self, error: json.JSONDecodeError) -> None:
        """A body that is not JSON: the answer JSON-RPC prescribes, with no id to give."""
        self._send_data({"jsonrpc": "2.0", "id": None,
                         "error": {"code": PARSE_ERROR, "message": f"Parse error: {error.msg} at {error.pos}"}})


def flat_args(args: tuple) -> tuple:
    """A workspace command's arguments: some clients wrap them once more, in a list."""
    return tuple(args[0]) if len(args) == 1 and isinstance(args[0], list) else args
