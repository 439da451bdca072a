"""`fsr`'s entry point, kept apart from the commands so that a Ctrl-C while they are still being
imported ends as quietly as one during the work: "fsr: interrupted", exit 130, no traceback.
SIGTERM is taken as Ctrl-C (a search stops and keeps what it found)."""

from __future__ import annotations

import signal
import sys


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        from .main import main as run

        return run(argv)
    except KeyboardInterrupt:
        print("fsr: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        from .console import closed_pipe

        return closed_pipe()


if __name__ == "__main__":
    sys.exit(main())
