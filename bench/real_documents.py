"""The server under load on real public CUDA documents (issue 46), no GPU needed: the
`--corpus DIR` mode of `server_load.py`.

The synthetic documents of `server_load.py` are small and alike; real ones have templates,
macros, many kernels, launches in other files and headers. Every `.cu`/`.cuh` under DIR is the
corpus (fetch a few public projects and point DIR at them; the corpus is not kept in the
repository). The workspace is a copy of DIR, headers included.

1. Edit flood: DOCS documents open (those with launches and includes first), a thread sending
   `didChange`s at RATE a second to random ones for SECONDS, while hovers and code actions on
   the kernels of every open document (each kernel's name, in turn) are timed one at a time
   from sending to reply, 50 ms apart; the same before the flood (quiet), once the first
   hover's spec is drafted. Also the server's CPU over the flood. Goal: p95 < 50 ms, max <
   200 ms.
2. A 10 MB document: the corpus concatenated to MB megabytes, opened beside a few small
   documents; the first hover on a kernel without a spec (from sending it), how long until the
   hover shows its drafted spec, and hovers on the other documents meanwhile, sent back to back
   on a thread of their own (all of them, and those sent 0.1 s or more after the large file,
   once its message is read). Goal: the first hover < 0.5 s, the others never > 50 ms.
3. Typing in the 10 MB document: once it is open and its kernels known, an incremental change
   in its middle RATE a second for SECONDS, while the other documents are hovered back to back.
   Goal: the others never > 50 ms.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import threading
import time
from pathlib import Path

from _common import ROOT  # noqa: F401  (puts the repository on sys.path)
from hover_latency import Session

from fsr_lsp.kernels import discover_kernels
from fsr_lsp.source import SourceText

SPACING = 0.05  # seconds between two timed requests
PENDING = "drafting the spec"  # what a hover says while the spec is worked out off the event loop


def stats(xs: list[float]) -> dict:
    xs = sorted(xs) or [0.0]
    return {"p50": statistics.median(xs), "p95": xs[max(0, int(0.95 * len(xs)) - 1)], "max": xs[-1], "n": len(xs)}


class Client(Session):
    """A stdio session whose requests may overlap: each waits for the reply with its own id."""

    def __init__(self, root: Path) -> None:
        self.done: dict[int, dict] = {}
        self.arrived = threading.Condition()
        self.lock = threading.Lock()
        super().__init__(root)

    def deliver(self, message: dict) -> None:
        with self.arrived:
            self.done[message["id"]] = message
            self.arrived.notify_all()

    def send(self, **kw) -> None:
        with self.lock:
            super().send(**kw)

    def request(self, method: str, params: dict) -> tuple[float, dict]:
        with self.lock:
            self.next_id += 1
            msg_id = self.next_id
        started = time.perf_counter()
        self.send(id=msg_id, method=method, params=params)
        with self.arrived:
            if not self.arrived.wait_for(lambda: msg_id in self.done, timeout=120):
                raise TimeoutError(f"no reply to {method} in 120 s")
            reply = self.done.pop(msg_id)
        return (time.perf_counter() - started) * 1e3, reply

    def open(self, path: Path, text: str) -> None:
        self.send(method="textDocument/didOpen",
                  params={"textDocument": {"uri": path.as_uri(), "languageId": "cuda", "version": 1, "text": text}})

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start(root: Path) -> Client:
    (root / ".git").mkdir(exist_ok=True)
    client = Client(root)
    client.request("initialize", {"processId": None, "rootUri": root.as_uri(), "capabilities": {},
                                  "initializationOptions": {"fsr": {}}})
    client.send(method="initialized", params={})
    return client


def corpus_files(corpus: Path) -> list[Path]:
    return sorted(p for p in corpus.rglob("*") if p.suffix in (".cu", ".cuh") and p.is_file())


def chosen(files: list[Path], count: int) -> list[Path]:
    """Those with launches and includes first, then those with kernels, then the rest."""
    def rank(p: Path) -> int:
        data = p.read_bytes()
        return 0 if b"<<<" in data and b"#include" in data else 1 if b"__global__" in data else 2

    return sorted(files, key=lambda p: (rank(p), str(p)))[:count]


def workspace(corpus: Path, tmp: Path) -> Path:
    root = tmp / "workspace"
    shutil.copytree(corpus, root, ignore=shutil.ignore_patterns(".git"))
    return root


def names(text: str) -> list[dict]:
    """A position on the name of each kernel of a text (inside the name: what a user hovers)."""
    return [{"line": k.name_span.start.line, "character": k.name_span.start.character + 1}
            for k in discover_kernels(SourceText(text))]


def hover(uri: str, at: dict) -> dict:
    return {"textDocument": {"uri": uri}, "position": at}


def action(uri: str, at: dict) -> dict:
    return {**hover(uri, at), "range": {"start": at, "end": at}, "context": {"diagnostics": []}}


def pending(reply: dict) -> bool:
    return PENDING in json.dumps(reply.get("result") or {})


def end_of(text: str) -> dict:
    last = text.rsplit("\n", 1)[-1]
    return {"line": text.count("\n"), "character": len(last.encode("utf-16-le")) // 2}


def flood(corpus: Path, tmp: Path, docs: int, rate: float, seconds: float, quiet: int) -> dict:
    root = workspace(corpus, tmp)
    paths = chosen(corpus_files(root), docs)
    client = start(root)
    texts = {p.as_uri(): p.read_text(encoding="utf-8", errors="replace") for p in paths}
    for p in paths:
        client.open(p, texts[p.as_uri()])
    targets = [(uri, at) for i in range(3) for uri, text in texts.items() for at in names(text)[i:i + 1]]
    opened = time.perf_counter()
    first, reply = client.request("textDocument/hover", hover(*targets[0]))
    while pending(reply) and time.perf_counter() - opened < 30:  # settled: the first spec drafted
        time.sleep(0.05)
        reply = client.request("textDocument/hover", hover(*targets[0]))[1]
    settled = time.perf_counter() - opened

    def timed(until: float | None, count: int) -> dict:
        hovers, actions, waiting, i = [], [], 0, 0
        while (until is None and i < count) or (until is not None and time.perf_counter() < until):
            uri, at = targets[i % len(targets)]
            ms, reply = client.request("textDocument/hover", hover(uri, at))
            hovers.append(ms)
            waiting += pending(reply)
            time.sleep(SPACING)
            actions.append(client.request("textDocument/codeAction", action(uri, at))[0])
            time.sleep(SPACING)
            i += 1
        return {"hover": stats(hovers), "action": stats(actions), "drafting_answers": waiting}

    calm = timed(None, quiet)
    stop = threading.Event()
    versions = {u: 1 for u in texts}
    sent = [0]

    def typist() -> None:
        rng = random.Random(1)
        while not stop.is_set():
            uri = rng.choice(list(texts))
            versions[uri] += 1
            end = end_of(texts[uri])
            line = f"\n// edit {sent[0]}"
            texts[uri] += line
            client.send(method="textDocument/didChange", params={
                "textDocument": {"uri": uri, "version": versions[uri]},
                "contentChanges": [{"range": {"start": end, "end": end}, "text": line}]})
            sent[0] += 1
            time.sleep(1 / rate)

    thread = threading.Thread(target=typist, daemon=True)
    cpu0, wall0 = client.cpu_seconds(), time.perf_counter()
    thread.start()
    flooded = timed(time.perf_counter() + seconds, 0)
    stop.set()
    thread.join()
    cpu = (client.cpu_seconds() - cpu0) / (time.perf_counter() - wall0)
    client.close()
    return {"docs": len(paths), "kernels_hovered": len(targets), "rate": rate, "seconds": seconds, "changes": sent[0],
            "first_hover_ms": first, "first_spec_s": settled, "quiet": calm, "flood": flooded, "server_cpu_core_fraction": cpu}


def big_text(corpus: Path, mb: float) -> str:
    """The corpus concatenated (again from the start if need be) to `mb` megabytes."""
    parts, size, files = [], 0, corpus_files(corpus)
    while size < mb * 1e6:
        for p in files:
            text = p.read_text(encoding="utf-8", errors="replace") + "\n"
            parts.append(text)
            size += len(text.encode())
            if size >= mb * 1e6:
                break
    return "".join(parts)


def spec_less_target(text: str) -> tuple[str, dict, int]:
    """A kernel without an @fsr block, launched in the text, nearest its middle; and how many
    kernels the text has."""
    src = SourceText(text)
    every = discover_kernels(src)
    kernels = [k for k in every if k.spec is None and k.complete]
    launched = [k for k in kernels if f"{k.name}<<<" in text or f"{k.name} <<<" in text]
    middle = len(src.data) // 2
    k = min(launched or kernels, key=lambda k: abs(k.name_span.start_byte - middle))
    return k.name, {"line": k.name_span.start.line, "character": k.name_span.start.character + 1}, len(every)


def _with_small_documents(corpus: Path, tmp: Path, mb: float, others: int):
    """A workspace of the corpus with its concatenation written as one large file, a server
    started on it, `others` small documents open and each one's first kernels hovered (their
    specs known before the large one comes): (root, the large text, its path, the client,
    the small documents' hover targets)."""
    root = workspace(corpus, tmp)
    small = chosen(corpus_files(root), others)
    text = big_text(root, mb)
    path = root / "big_concatenated.cu"
    path.write_text(text)
    client = start(root)
    small_targets = []
    for p in small:
        t = p.read_text(encoding="utf-8", errors="replace")
        client.open(p, t)
        small_targets += [(p.as_uri(), a) for a in names(t)[:2]]
    for uri, a in small_targets:
        client.request("textDocument/hover", hover(uri, a))
    return root, text, path, client, small_targets


def big(corpus: Path, tmp: Path, mb: float, others: int = 5, after: float = 2.0, limit: float = 90.0) -> dict:
    root, text, path, client, small_targets = _with_small_documents(corpus, tmp, mb, others)
    kernel, at, count = spec_less_target(text)
    time.sleep(1.0)
    for uri, a in small_targets:
        client.request("textDocument/hover", hover(uri, a))
    waits: list[tuple[float, float]] = []  # (sent, seconds after the large document was sent; ms it took)
    stop = threading.Event()

    def other_documents() -> None:
        i = 0
        while not stop.is_set():
            sent = time.perf_counter() - opened
            waits.append((sent, client.request("textDocument/hover", hover(*small_targets[i % len(small_targets)]))[0]))
            i += 1
            time.sleep(0.01)

    thread = threading.Thread(target=other_documents, daemon=True)
    opened = time.perf_counter()
    client.open(path, text)
    thread.start()
    first, reply = client.request("textDocument/hover", hover(path.as_uri(), at))
    first_pending = pending(reply)
    ready = None
    while time.perf_counter() - opened < limit:
        _, reply = client.request("textDocument/hover", hover(path.as_uri(), at))
        if not pending(reply) and reply.get("result"):
            ready = time.perf_counter() - opened
            break
        time.sleep(0.2)
    def publications() -> int:
        return sum(1 for _, uri, _ in client.published if uri == path.as_uri())

    # its diagnostics: first from its kernels as declared, then all once its types are read (one
    # publication only where its discovery ended first)
    while time.perf_counter() - opened < limit and publications() < 2:
        time.sleep(0.1)
    time.sleep(after)
    stop.set()
    thread.join()
    answer = (reply.get("result") or {}).get("contents", {}).get("value", "")
    planned_ms, said = optimize_answer(client, path.as_uri(), kernel)
    client.close()
    mine = [(at - opened, n) for at, uri, n in client.published if uri == path.as_uri() and at >= opened]
    return {"mb": len(text.encode()) / 1e6, "kernels": count, "kernel": kernel,
            # each publication of the large document's diagnostics: seconds after opening, how many
            "diagnostics": mine,
            "first_hover_ms": first, "first_hover_pending": first_pending, "spec_shown_after_s": ready,
            # the click on Optimize for that kernel, once the document is worked out: its answer comes once
            # the kernel's spec is planned (and the search started)
            "optimize_answer_ms": planned_ms, "optimize_said": said,
            "answer": answer[:400], "others": stats([ms for _, ms in waits]),
            # the hovers sent once the large document's message had arrived (its transfer and JSON
            # decode, about 0.1 s, come before anything sent behind it)
            "others_after_100ms": stats([ms for sent, ms in waits if sent >= 0.1])}


def optimize_answer(client: "Client", uri: str, kernel: str) -> tuple[float, str]:
    """`fsr.optimize` on the kernel, as the code action's click sends it: ms to its answer (the
    spec planned, the search started), and the answer; the search is cancelled at once."""
    ms, reply = client.request("workspace/executeCommand", {"command": "fsr.optimize", "arguments": [uri, kernel]})
    client.request("workspace/executeCommand", {"command": "fsr.cancel", "arguments": [uri, kernel]})
    return ms, str(reply.get("result", reply.get("error", "")))[:200]


def typing(corpus: Path, tmp: Path, mb: float, seconds: float = 10.0, rate: float = 5.0, others: int = 5,
           settle: float = 8.0) -> dict:
    """Hovers on other documents while the large one is edited (each change a character typed in
    its middle line), from the first change to the last."""
    root, text, path, client, small_targets = _with_small_documents(corpus, tmp, mb, others)
    client.open(path, text)
    time.sleep(settle)  # opened, its kernels and diagnostics worked out
    middle = {"line": text.count("\n") // 2, "character": 0}
    stop = threading.Event()
    waits: list[float] = []
    sent = [0]

    def typist() -> None:
        while not stop.is_set():
            sent[0] += 1
            client.send(method="textDocument/didChange", params={
                "textDocument": {"uri": path.as_uri(), "version": 1 + sent[0]},
                "contentChanges": [{"range": {"start": middle, "end": middle}, "text": "x"}]})
            time.sleep(1 / rate)

    def other_documents() -> None:
        i = 0
        while not stop.is_set():
            waits.append(client.request("textDocument/hover", hover(*small_targets[i % len(small_targets)]))[0])
            i += 1
            time.sleep(0.01)

    threads = [threading.Thread(target=typist, daemon=True), threading.Thread(target=other_documents, daemon=True)]
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    _, reply = client.request("textDocument/hover", hover(path.as_uri(), middle))  # answered, after every change
    client.close()
    return {"mb": len(text.encode()) / 1e6, "changes": sent[0], "rate": rate, "seconds": seconds,
            "others": stats(waits), "answered_after": "result" in reply}
