"""`fsr-lsp`: the language server over stdio (default) or TCP (for debugging)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading

from .. import processes, scratch
from ..redaction import register_environment
from .logs import LEVELS, configure


_reaper = None  # the process that ends this server's children when it is gone


def build():
    """A server with every feature registered (in this order: it is the order of each document's
    diagnostics and of what a save does)."""
    from .features import (capture, code_actions, commands, documents, drafts, hover, lifecycle, perf_on_save,
                           profiling, searches)
    from .server import FsrServer

    ls = FsrServer()
    for feature in (lifecycle, documents, hover, code_actions, commands, drafts, searches, capture, profiling,
                    perf_on_save):
        feature.register(ls)
    return ls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fsr-lsp", description="CUDA kernel language server with verified FSR search")
    parser.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio (debugging)")
    parser.add_argument("--log-file", help="write the server's log here (default: stderr)")
    parser.add_argument("--log-level", default="info", choices=LEVELS, type=str.lower,
                        help="info (default) logs fsr's own messages; debug adds every JSON-RPC payload, "
                             "document text included")
    args = parser.parse_args(argv)
    # Before any child: every process started from here on carries the mark, and the reaper
    # ends them all when the server ends, however it ends.
    global _reaper
    _reaper = processes.start_reaper(processes.mark_tree())
    processes.exit_on_signals()
    register_environment()  # keys the environment holds are redacted from the first log line on
    # What a killed fsr left behind, swept beside the start-up: a /tmp of thousands of entries
    # takes tens of milliseconds to read, and no editor should wait for that.
    threading.Thread(target=scratch.sweep, name="fsr-sweep", daemon=True).start()
    configure(args.log_level, args.log_file)
    server = build()

    if args.tcp:
        host, _, port = args.tcp.rpartition(":")
        server.start_tcp(host or "127.0.0.1", int(port))
    else:
        server.start_io()
    # The client closed the stream (an editor that quit without `exit`): end now. Compiles in
    # flight are the reaper's; a torn-down asyncio loop would print tracebacks about them.
    logging.shutdown()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
