#!/usr/bin/env python3
"""A compute-sanitizer stand-in for CPU tests: runs as `fake_sanitizer.py --tool T ... python -m
fsr_lsp.evaluator.sanitize.sanitize_main --wait FOLDER GPU`, waits for the job as the real child does
(says it has loaded; makes its 'context' when asked, in $FAKE_SANITIZER_CONTEXT_SECONDS, each
logged to $FAKE_SANITIZER_CONTEXT_LOG), then 'runs' for $FAKE_SANITIZER_SECONDS and prints the tool's clean summary; the start of
each run is appended to $FAKE_SANITIZER_LOG."""

import os
import sys
import time
from pathlib import Path

args = sys.argv[1:]
tool = args[args.index("--tool") + 1]
folder = Path(args[args.index("--wait") + 1])
(folder / "loaded").touch()
made = False
while not (folder / "go").exists():
    if not folder.is_dir():
        sys.exit(2)
    if not made and (folder / "context").exists():  # as sanitize_main makes its CUDA context when asked
        made = True
        if os.environ.get("FAKE_SANITIZER_CONTEXT_LOG"):
            with open(os.environ["FAKE_SANITIZER_CONTEXT_LOG"], "a") as log:
                log.write(f"{tool} {time.monotonic()}\n")
        time.sleep(float(os.environ.get("FAKE_SANITIZER_CONTEXT_SECONDS", "0")))
        (folder / "context-made").touch()
    time.sleep(0.01)
with open(os.environ["FAKE_SANITIZER_LOG"], "a") as log:
    log.write(f"{tool} {time.monotonic()}\n")
time.sleep(float(os.environ.get("FAKE_SANITIZER_SECONDS", "0.5")))
print("========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)" if tool == "racecheck"
      else "========= ERROR SUMMARY: 0 errors")
