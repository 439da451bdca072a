"""The `fsr` command line: eval (one verified, timed comparison), optimize (the editor's
Optimize), spec (each kernel's spec and its proof), history (stored candidates); the flags of
settings come from the one settings table (fsr_lsp/settings.py)."""

import time

STARTED = time.monotonic()  # a time budget counts from the command's start, its imports included
