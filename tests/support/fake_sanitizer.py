#!/usr/bin/env python3
"""A compute-sanitizer stand-in for CPU tests: runs as `fake_sanitizer.py --tool T ... python -m
fsr_lsp.evaluator.sanitize.sanitize_main --wait FOLDER GPU`, waits for the job as the real child does,
then 'runs' for $FAKE_SANITIZER_SECONDS and prints the tool's clean summary; the start of
each run is appended to $FAKE_SANITIZER_LOG."""

import os
import sys
import time
from pathlib import Path

args = sys.argv[1:]
tool = args[args.index("--tool") + 1]
folder = Path(args[args.index("--wait") + 1])
while not (folder / "go").exists():
    if not folder.is_dir():
        sys.exit(2)
    time.sleep(0.01)
with open(os.environ["FAKE_SANITIZER_LOG"], "a") as log:
    log.write(f"{tool} {time.monotonic()}\n")
time.sleep(float(os.environ.get("FAKE_SANITIZER_SECONDS", "0.5")))
print("========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)" if tool == "racecheck"
      else "========= ERROR SUMMARY: 0 errors")
