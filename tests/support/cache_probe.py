"""The document cache's probe for the LSP tests (FSR_LSP_CACHE_PROBE): each kernel discovery and
each spec draft is a line in the file FSR_TEST_PROBE_LOG, where it ran (the server's threads or
the large documents' process); a draft of a kernel whose name starts with `slow` first sleeps
FSR_TEST_SLOW_DRAFT seconds, as a draft of a huge file takes seconds; a large document's
discovery in its process ("whole") sleeps FSR_TEST_SLOW_WHOLE seconds (none by default)."""

from __future__ import annotations

import json
import os
import threading
import time


def probe(event: str, uri: str, version: int | None, detail: str) -> None:
    with open(os.environ["FSR_TEST_PROBE_LOG"], "a") as log:
        log.write(json.dumps({"event": event, "uri": uri, "version": version, "kernel": detail, "pid": os.getpid(),
                              "thread": threading.current_thread().name}) + "\n")
    if event == "draft" and detail.startswith("slow"):
        time.sleep(float(os.environ.get("FSR_TEST_SLOW_DRAFT", "3")))
    if event == "whole":
        time.sleep(float(os.environ.get("FSR_TEST_SLOW_WHOLE", "0")))


def events(path: str, uri: str) -> list[dict]:
    """What the probe saw of one document."""
    try:
        lines = open(path).read().splitlines()
    except FileNotFoundError:
        return []
    return [e for e in map(json.loads, lines) if e["uri"] == uri]
