"""The server under load (issue 38), no GPU needed: how long hovers and code actions take while
documents change under them, and on large files.

1. Edit flood: N documents open (default settings: each compiled on open), a thread sending
   `didChange`s at RATE a second to ten of them, while hovers and code actions on another
   document are timed one at a time from sending to reply. Also the first hover after the
   documents are opened. Goal: p95 < 50 ms, max < 200 ms.
2. Large files: a file of SIZE MB (a constant table and one kernel, or many small kernels)
   opened, the first hover on its kernel timed, and hovers on a small document timed while the
   large one is worked on. Goal: a 10 MB file's first hover <= 1 s, the others unaffected.

  python bench/server_load.py [--docs 50] [--rate 20] [--requests 100] [--sizes 1 3 10]

3. Real documents (`--corpus DIR`: every .cu/.cuh under DIR; see real_documents.py): the edit
   flood over DOCS of them for SECONDS, the corpus concatenated into one MB-megabyte file, and
   typing in that file.

  python bench/server_load.py --corpus DIR [--docs 50] [--rate 20] [--seconds 30] [--mb 10]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from _common import console, save, table
from hover_latency import opened


SPACING = 0.05  # seconds between two timed requests


def stats(xs: list[float]) -> dict:
    xs = sorted(xs)
    return {"p50": statistics.median(xs), "p95": xs[max(0, int(0.95 * len(xs)) - 1)], "max": xs[-1], "n": len(xs)}


def hover_at(uri: str, line: int = 1, character: int = 20) -> dict:
    return {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}


def action_at(uri: str) -> dict:
    where = hover_at(uri)
    return {**where, "range": {"start": where["position"], "end": where["position"]}, "context": {"diagnostics": []}}


def flood(docs: int, rate: float, requests: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        session, uris = opened(Path(tmp), docs)
        first, _ = session.request("textDocument/hover", hover_at(uris[-1]))
        stop = threading.Event()
        versions = {u: 1 for u in uris}
        sent = [0]

        def typist() -> None:
            rng = random.Random(1)
            while not stop.is_set():
                uri = rng.choice(uris[:10])
                versions[uri] += 1
                session.send(method="textDocument/didChange", params={
                    "textDocument": {"uri": uri, "version": versions[uri]},
                    "contentChanges": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                                        "text": "// x\n"}]})
                sent[0] += 1
                time.sleep(1 / rate)

        thread = threading.Thread(target=typist, daemon=True)
        thread.start()
        time.sleep(1.0)  # the flood under way
        target = uris[-1]
        hovers, actions = [], []
        for _ in range(requests):  # spaced as a person's requests are: the flood goes on meanwhile
            hovers.append(session.request("textDocument/hover", hover_at(target))[0])
            time.sleep(SPACING)
            actions.append(session.request("textDocument/codeAction", action_at(target))[0])
            time.sleep(SPACING)
        stop.set()
        thread.join()
        session.close()
    return {"docs": docs, "rate": rate, "changes": sent[0], "first_hover_ms": first, "hover": stats(hovers),
            "action": stats(actions)}


def big_file(mb: float, shape: str) -> str:
    """A file of about `mb` MB: a constant table and one kernel, or many small kernels."""
    if shape == "table":
        row = ", ".join(f"{(i * 0.618) % 1:.6f}f" for i in range(16)) + ",\n"
        rows = int(mb * 1e6 / len(row))
        return ("__constant__ float table[] = {\n" + row * rows + "};\n"
                "__global__ void lookup(float* y, const int* idx, int n)\n{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                "    if (i < n) y[i] = table[idx[i] % 1024];\n}\n")
    one = ("__global__ void k{i}(float* y, const float* x, int n)\n{{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
           "    if (i < n) y[i] = {i}.0f * x[i];\n}}\n\n")
    out, i = [], 0
    size = 0
    while size < mb * 1e6:
        out.append(one.format(i=i))
        size += len(out[-1])
        i += 1
    return "".join(out)


def large(mb: float, shape: str, requests: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        session, uris = opened(root, 1)
        session.request("textDocument/hover", hover_at(uris[0]))
        text = big_file(mb, shape)
        path = root / f"big_{shape}.cu"
        path.write_text(text)
        lines = text.count("\n")
        line = lines - 4 if shape == "table" else 0
        t0 = time.perf_counter()
        session.send(method="textDocument/didOpen",
                     params={"textDocument": {"uri": path.as_uri(), "languageId": "cuda", "version": 1, "text": text}})
        _, reply = session.request("textDocument/hover", hover_at(path.as_uri(), line, 18))
        first = (time.perf_counter() - t0) * 1e3  # from opening it
        answered = bool(reply.get("result"))
        again, _ = session.request("textDocument/hover", hover_at(path.as_uri(), line, 18))
        copy = root / f"big_{shape}_2.cu"  # a second one opening: the small document's hovers meanwhile
        session.send(method="textDocument/didOpen",
                     params={"textDocument": {"uri": copy.as_uri(), "languageId": "cuda", "version": 1, "text": text}})
        others = [session.request("textDocument/hover", hover_at(uris[0]))[0] for _ in range(requests)]
        session.close()
    return {"mb": mb, "shape": shape, "lines": lines, "first_hover_ms": first, "answered": answered,
            "second_hover_ms": again, "others_while_open": stats(others)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=50)
    parser.add_argument("--rate", type=float, default=20.0)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--sizes", type=float, nargs="*", default=[1, 3, 10])
    parser.add_argument("--corpus", type=Path, help="real documents: every .cu/.cuh under this folder")
    parser.add_argument("--seconds", type=float, default=30.0, help="with --corpus: how long the flood lasts")
    parser.add_argument("--quiet", type=int, default=40, help="with --corpus: timed pairs before the flood")
    parser.add_argument("--mb", type=float, default=10.0, help="with --corpus: the concatenated file's size")
    parser.add_argument("--large-only", action="store_true", help="with --corpus: only the large document's opening")
    args = parser.parse_args()
    if args.corpus is not None:
        return real(args)
    f = flood(args.docs, args.rate, args.requests)
    table(f"{args.docs} documents open, {args.rate:g} changes a second to ten of them (ms)",
          ["request", "p50", "p95", "max", "n"],
          [[name, f"{f[name]['p50']:.1f}", f"{f[name]['p95']:.1f}", f"{f[name]['max']:.1f}", f[name]["n"]]
           for name in ("hover", "action")])
    console.print(f"first hover after opening {args.docs} documents: {f['first_hover_ms']:.0f} ms; "
                  f"{f['changes']} changes sent")
    rows = [large(mb, shape, 20) for mb in args.sizes for shape in ("table", "kernels")]
    table("large files (ms)", ["MB", "shape", "lines", "first hover", "answered", "second hover",
                               "other document p95 / max while it opens"],
          [[r["mb"], r["shape"], r["lines"], f"{r['first_hover_ms']:.0f}", r["answered"], f"{r['second_hover_ms']:.0f}",
            f"{r['others_while_open']['p95']:.1f} / {r['others_while_open']['max']:.1f}"] for r in rows])
    save("server_load", {"flood": f, "large": rows})
    return 0


def large_only(args: argparse.Namespace) -> int:
    """The large document's opening alone: its first hover, its spec shown, its diagnostics."""
    from real_documents import big

    with tempfile.TemporaryDirectory() as tmp:
        b = big(args.corpus, Path(tmp), args.mb)
    published = ", ".join(f"{n} at {at:.2f} s" for at, n in b["diagnostics"]) or "none"
    table(f"one {b['mb']:.1f} MB document of {b['kernels']} kernels (the corpus concatenated)",
          ["first hover on a spec-less kernel", "it said 'drafting'", "spec shown after",
           "its diagnostics published (as declared, then all)",
           "Optimize on it answered in"],
          [[f"{b['first_hover_ms']:.0f} ms ({b['kernel']})", b["first_hover_pending"],
            f"{b['spec_shown_after_s']:.2f} s" if b["spec_shown_after_s"] is not None else "never", published,
            f"{b['optimize_answer_ms']:.0f} ms ({b['optimize_said']})"]])
    save("server_load_large", {"corpus": str(args.corpus), "large": b})
    return 0


def real(args: argparse.Namespace) -> int:
    from real_documents import big, flood, typing

    if args.large_only:
        return large_only(args)
    with tempfile.TemporaryDirectory() as tmp:
        f = flood(args.corpus, Path(tmp) / "flood", args.docs, args.rate, args.seconds, args.quiet)
    rows = []
    for phase in ("quiet", "flood"):
        for name in ("hover", "action"):
            s = f[phase][name]
            rows.append([phase, name, f"{s['p50']:.1f}", f"{s['p95']:.1f}", f"{s['max']:.1f}", s["n"],
                         f[phase]["drafting_answers"] if name == "hover" else ""])
    table(f"{f['docs']} real documents open ({f['kernels_hovered']} kernels hovered in turn), "
          f"{args.rate:g} changes a second for {args.seconds:g} s (ms)",
          ["phase", "request", "p50", "p95", "max", "n", "said 'drafting' (before its draft for this version)"], rows)
    console.print(f"first hover after opening: {f['first_hover_ms']:.0f} ms (its spec shown {f['first_spec_s']:.2f} s "
                  f"after opening); {f['changes']} changes sent; "
                  f"server CPU during the flood: {100 * f['server_cpu_core_fraction']:.0f}% of a core")
    with tempfile.TemporaryDirectory() as tmp:
        b = big(args.corpus, Path(tmp), args.mb)
    o, later = b["others"], b["others_after_100ms"]
    table(f"one {b['mb']:.1f} MB document of {b['kernels']} kernels (the corpus concatenated)",
          ["first hover on a spec-less kernel", "it said 'drafting'", "spec shown after",
           "other documents' hovers meanwhile p50 / p95 / max (n)", "max, sent 0.1 s after it or later"],
          [[f"{b['first_hover_ms']:.0f} ms ({b['kernel']})", b["first_hover_pending"],
            f"{b['spec_shown_after_s']:.2f} s" if b["spec_shown_after_s"] is not None else "never",
            f"{o['p50']:.1f} / {o['p95']:.1f} / {o['max']:.1f} ms ({o['n']})", f"{later['max']:.1f} ms"]])
    with tempfile.TemporaryDirectory() as tmp:
        t = typing(args.corpus, Path(tmp), args.mb)
    o = t["others"]
    table(f"typing in the {t['mb']:.1f} MB document ({t['changes']} incremental changes, {t['rate']:g} a second)",
          ["other documents' hovers meanwhile p50 / p95 / max (n)"],
          [[f"{o['p50']:.1f} / {o['p95']:.1f} / {o['max']:.1f} ms ({o['n']})"]])
    save("server_load_real", {"corpus": str(args.corpus), "flood": f, "large": b, "typing": t})
    return 0


if __name__ == "__main__":
    sys.exit(main())
