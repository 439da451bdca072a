"""`fsr-lsp`: the language server over stdio (default) or TCP (for debugging)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading

from .. import processes, scratch
from ..cli.arguments import OneLineParser, file_to_write, host_port
from ..cli.version import VersionAction
from ..redaction import register_environment
from ..instruments import GPU, Instruments
from .logs import LEVELS, configure


_reaper = None  # the process that ends this server's children when it is gone
SWITCH_INTERVAL = 0.001  # seconds a thread holds the GIL while another waits for it


def build(instruments: Instruments = GPU):
    """A server with every feature registered (in this order: it is the order of each document's
    diagnostics and of what a save does); `instruments`: stand-ins for the GPU work (tests)."""
    from .features import (capture, code_actions, commands, documents, drafts, hover, lifecycle, perf_on_save,
                           profiling, searches)
    from .server import FsrServer

    ls = FsrServer(instruments)
    for feature in (lifecycle, documents, hover, code_actions, commands, drafts, searches, capture, profiling,
                    perf_on_save):
        feature.register(ls)
    return ls


def parser() -> argparse.ArgumentParser:
    """What `fsr-lsp` takes, each argument checked as `fsr`'s are (cli/arguments.py): a bad one is
    one line and exit 2 before the server starts, where an editor shows it to the user."""
    p = OneLineParser(prog="fsr-lsp", description="CUDA kernel language server with verified FSR search")
    p.add_argument("--version", action=VersionAction)
    p.add_argument("--tcp", metavar="HOST:PORT", type=host_port, help="listen on TCP instead of stdio (debugging)")
    p.add_argument("--log-file", type=file_to_write(), help="write the server's log here (default: stderr)")
    p.add_argument("--log-level", default="info", choices=LEVELS, type=str.lower,
                   help="info (default) logs fsr's own messages; debug adds every JSON-RPC payload, "
                        "document text included")
    return p


def main(argv: list[str] | None = None, instruments: Instruments = GPU) -> int:
    arguments = parser()
    args = arguments.parse_args(argv)
    # Before any child: every process started from here on carries the mark, and the reaper
    # ends them all when the server ends, however it ends.
    global _reaper
    _reaper = processes.start_reaper(processes.mark_tree())
    processes.exit_on_signals()
    register_environment()  # keys the environment holds are redacted from the first log line on
    # What a killed fsr left behind, swept beside the start-up: a /tmp of thousands of entries
    # takes tens of milliseconds to read, and no editor should wait for that.
    threading.Thread(target=scratch.sweep, name="fsr-sweep", daemon=True).start()
    configure(args.log_level, args.log_file and str(args.log_file))
    # Drafts and large files are worked on by threads beside the event loop: a thread waiting
    # for the GIL gets it after 1 ms rather than 5 (a hover waits for it several times).
    sys.setswitchinterval(SWITCH_INTERVAL)
    server = build(instruments)

    if args.tcp:
        host, port = args.tcp
        try:
            server.start_tcp(host, port)
        except OSError as e:  # a port in use, a host that does not resolve: the argument, said in one line
            arguments.error(f"argument --tcp: cannot listen on {host}:{port}: {e.strerror or e}")
    else:
        server.start_io()
    # The client closed the stream (an editor that quit without `exit`): end now. Compiles in
    # flight are the reaper's; a torn-down asyncio loop would print tracebacks about them.
    logging.shutdown()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
