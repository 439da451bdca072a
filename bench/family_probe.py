"""Issue 57's design probe: the structural families' configurations timed directly, beside the
yardsticks a performance engineer would name (cuBLAS for a matrix product, a device copy for
data movement), so that the search's space and its first guesses are chosen on measurements.

Each configuration is compiled by fsr's own compiler path, run on the same inputs as the naive
original (its output compared), and timed with CUDA events, the L2 flushed before each run,
warm-up first, median of many. No verification here: the search verifies what it proposes.

    python bench/family_probe.py [matmul] [transpose] [stencil] [--top N]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import re
import time

from _common import ROOT, console, event_median_ms, save, table

from fsr_lsp.evaluator.compile.compiler import CompileOptions, compile_kernel
from fsr_lsp.evaluator.gpu.session import GpuSession
from fsr_lsp.evaluator.job.candidate import check_candidate
from fsr_lsp.evaluator.job.plan import build_plans
from fsr_lsp.evaluator.job.prepare import kernel_ref
from fsr_lsp.kernels import find_kernel, kernel_source
from fsr_lsp.search.generators.structural.matmul.product import read_product
from fsr_lsp.search.generators.structural.matmul.tile_text import describe, launch, render
from fsr_lsp.search.generators.structural.matmul.tile_space import TileConfig, ranked
from fsr_lsp.search.generators.structural.stencil_tile import stencil_rows, stencil_tile
from fsr_lsp.search.generators.structural.transpose_tile import transpose_tile
from fsr_lsp.source import SourceText
from fsr_lsp.specs import parse_spec

FORMS = ROOT / "bench" / "matmul_forms"
NAIVE = ROOT / "bench" / "naive_kernels"


class Probe:
    def __init__(self) -> None:
        self.session = GpuSession(0)
        self.torch = self.session.torch
        self.arch = self.session.info.arch

    # ------------------------------------------------------------------ timing

    def time(self, run, reps: int = 30, budget_s: float = 2.0) -> float:
        return event_median_ms(self.torch, run, lambda: self.session.flush_l2(2), reps, budget_s)

    def copy_gbps(self, nbytes: int) -> float:
        """The yardstick for data movement: a device-to-device copy, bytes read plus written a second."""
        torch = self.torch
        src = torch.randn(nbytes // 4, device="cuda")
        dst = torch.empty_like(src)
        ms = self.time(lambda: dst.copy_(src))
        return 2 * nbytes / ms / 1e6

    # ------------------------------------------------------------------ kernels of a file

    def kernel_runs(self, source: str, name: str, candidates: list[tuple[str, str]]) -> list[dict]:
        """The original and each candidate (label, text with its @fsr block) on the bench size's
        inputs: ms, and the largest difference from the original's output."""
        torch = self.torch
        src = SourceText(source)
        kernel = find_kernel(src, name)
        spec = parse_spec(src, kernel).spec
        plan = build_plans(kernel, spec)[-1]
        options = CompileOptions(arch=self.arch, compiler="nvcc")
        unit = kernel_source(src, kernel).unit

        def build(text: str):
            checked = check_candidate(src, kernel, spec, text) if text else None
            cand_spec = checked.spec if checked is not None and checked.ok else spec
            full = source.replace(unit, text) if text else source
            compiled = compile_kernel(full, kernel_ref(kernel, spec), options)
            return compiled, build_plans(kernel, spec, cand_spec)[-1].candidate

        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            built = list(pool.map(build, [""] + [t for _, t in candidates]))
        dtypes = [None if a.kind == "buffer" else a.dtype for a in plan.args]
        gen = torch.Generator(device="cuda").manual_seed(1)
        pristine = {a.name: torch.randn(a.numel, generator=gen, device="cuda", dtype=getattr(torch, a.dtype))
                    for a in plan.args if a.kind == "buffer"}
        rows = []
        reference = None
        for (label, _), (compiled, grid) in zip([("original", "")] + candidates, built):
            if not compiled.ok:
                rows.append({"label": label, "ms": None, "error": compiled.log.strip().splitlines()[-1][:120]})
                continue
            loaded = self.session.load(compiled.binary, dtypes)
            bufs = {k: v.clone() for k, v in pristine.items()}
            args = [bufs[a.name].data_ptr() if a.kind == "buffer" else a.value for a in plan.args]

            def run() -> None:
                for a in plan.args:
                    if a.kind == "buffer" and a.direction == "inout":
                        bufs[a.name].copy_(pristine[a.name])
                loaded.launch(args, grid)

            for a in plan.args:
                if a.direction == "out":
                    bufs[a.name].fill_(float("nan"))
            run()
            torch.cuda.synchronize()
            outs = {a.name: bufs[a.name].double().clone() for a in plan.args if a.direction != "in"}
            if reference is None:
                reference = outs
                error = 0.0
            else:
                error = max(float(((outs[k] - reference[k]).abs().max() / reference[k].abs().max().clamp(min=1e-30))
                                  .nan_to_num(float("inf"))) for k in outs)
            ms = self.time(run, reps=30 if label == "original" else 40)
            rows.append({"label": label, "ms": ms, "error": error, "resources": str(loaded.resources())})
            console.print(f"  {label}: {ms:.4g} ms, error {error:.2g}", markup=False)
        return rows


def matmul(probe: Probe, top: int) -> list[dict]:
    torch = probe.torch
    forms = [("sgemm_xrows.cu", "gemm_naive", "{ M = 4096, N = 4096, K = 4096 }"),
             ("sgemm_colmajor_b.cu", "matmul_bt", "{ M = 1000, N = 3000, K = 777 }"),
             ("sgemm_batched.cu", "bmm", "{ batch = 16, M = 512, N = 512, K = 256 }"),
             ("dgemm_colmajor.cu", "dgemm_cm", "{ M = 2048, N = 2048, K = 2048 }")]
    torch.backends.cuda.matmul.allow_tf32 = False
    results = []
    for file, name, bench in forms:
        source = re.sub(r"bench = \{[^}]*\}", f"bench = {bench}", (FORMS / file).read_text(), count=1)
        sizes = {k: int(v) for k, v in re.findall(r"(\w+) = (\d+)", bench)}
        m, n, k, b = sizes["M"], sizes["N"], sizes["K"], sizes.get("batch", 1)
        flops = 2.0 * m * n * k * b
        src = SourceText(source)
        kern = find_kernel(src, name)
        spec = parse_spec(src, kern).spec
        definition = kernel_source(src, kern).definition
        product = read_product(kern, spec, definition)
        element = 8 if product.acc_type == "double" else 4
        configs = ranked(m, n, b, probe.session.info.sm_count, element)[:top]
        classics = [TileConfig(128, 128, 8, 8, 8), TileConfig(128, 128, 16, 8, 8), TileConfig(128, 64, 8, 8, 4),
                    TileConfig(64, 64, 8, 4, 4), TileConfig(128, 128, 8, 8, 8, 1), TileConfig(128, 128, 8, 8, 8, 2, False),
                    TileConfig(128, 128, 8, 8, 8, 2, True, 0), TileConfig(64, 128, 8, 8, 8), TileConfig(128, 256, 8, 8, 8),
                    TileConfig(256, 128, 8, 8, 8), TileConfig(64, 64, 16, 4, 4), TileConfig(32, 32, 16, 2, 2, 1, False, 0),
                    TileConfig(128, 128, 8, 8, 8, min_blocks=2), TileConfig(128, 128, 16, 8, 8, min_blocks=2),
                    TileConfig(128, 64, 16, 8, 4, min_blocks=2), TileConfig(64, 128, 16, 4, 8, min_blocks=2),
                    TileConfig(128, 128, 32, 8, 8, min_blocks=0, buffers=1)]
        if element == 8:
            classics = [TileConfig(c.bm, c.bn, c.bk, c.tm, c.tn, c.buffers, c.vector, c.pad // 2, c.min_blocks) for c in classics]
        configs = list(dict.fromkeys(configs + classics))
        console.print(f"[matmul] {file} {bench}: {len(configs)} configurations", markup=False)
        candidates = [(describe(c), launch(product, c) + render(product, c)) for c in configs]
        rows = probe.kernel_runs(source, name, candidates)
        dt = torch.float64 if element == 8 else torch.float32
        A = torch.randn(b, m, k, device="cuda", dtype=dt)
        B = torch.randn(b, k, n, device="cuda", dtype=dt)
        C = torch.empty(b, m, n, device="cuda", dtype=dt)
        cublas = probe.time(lambda: torch.bmm(A, B, out=C))
        for r in rows:
            r["tflops"] = flops / r["ms"] / 1e9 if r.get("ms") else None
            r["of_cublas"] = cublas / r["ms"] if r.get("ms") else None
        results.append({"form": file, "bench": bench, "cublas_ms": cublas, "cublas_tflops": flops / cublas / 1e9,
                        "rows": rows})
        best = sorted((r for r in rows[1:] if r.get("ms") and r["error"] < 1e-3), key=lambda r: r["ms"])
        table(f"{file} {bench}: cuBLAS {cublas:.4g} ms ({flops / cublas / 1e9:.1f} TFLOPS); naive {rows[0]['ms']:.4g} ms",
              ["configuration", "ms", "TFLOPS", "of cuBLAS", "error"],
              [[r["label"][len("tiled matrix product: "):], r["ms"], r["tflops"], f"{r['of_cublas']:.0%}", f"{r['error']:.1e}"]
               for r in best[:12]])
    return results


def data_movement(probe: Probe, which: str) -> dict:
    if which == "transpose":
        file, name, bench = NAIVE / "transpose.cu", "transpose_naive", "{ rows = 8192, cols = 8192 }"
        nbytes = 8192 * 8192 * 4
        make = transpose_tile
    else:
        file, name, bench = NAIVE / "stencil3x3.cu", "blur3x3", "{ h = 8192, w = 8192 }"
        nbytes = 8192 * 8192 * 4
        make = None
    source = re.sub(r"bench = \{[^}]*\}", f"bench = {bench}", file.read_text(), count=1)
    src = SourceText(source)
    kern = find_kernel(src, name)
    spec = parse_spec(src, kern).spec
    definition = kernel_source(src, kern).definition
    if make is not None:
        candidates = [(t.note, t.launch + t.definition) for t in make(kern, spec, definition)]
    else:
        tiled = stencil_tile(kern, spec, definition)
        candidates = [(tiled.note, tiled.definition)] if tiled else []
        candidates += [(r.note, r.launch + r.definition) for r in stencil_rows(kern, spec, definition)]
        for bx, by in ((32, 8), (32, 4), (64, 4), (128, 2), (32, 16)):
            candidates.append((f"block {bx}x{by}", f'/* @fsr\ngrid = ["cdiv(w, {bx})", "cdiv(h, {by})"]\nblock = [{bx}, {by}]\n*/\n'
                               + definition))
    rows = probe.kernel_runs(source, name, candidates)
    copy = probe.copy_gbps(nbytes)
    for r in rows:
        r["gbps"] = 2 * nbytes / r["ms"] / 1e6 if r.get("ms") else None
        r["of_copy"] = r["gbps"] / copy if r.get("gbps") else None
    table(f"{which} {bench}: a copy of the same bytes moves {copy:.0f} GB/s",
          ["kernel", "ms", "GB/s", "of a copy", "error"],
          [[r["label"][:90], r["ms"], r.get("gbps"), f"{r['of_copy']:.0%}" if r.get("of_copy") else "-",
            f"{r.get('error', 0):.1e}"] for r in rows])
    return {"kernel": which, "bench": bench, "copy_gbps": copy, "rows": rows}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("what", nargs="*", default=["matmul", "transpose", "stencil"])
    parser.add_argument("--top", type=int, default=16)
    args = parser.parse_args()
    probe = Probe()
    console.print(f"GPU: {probe.session.info.name}", markup=False)
    out: dict = {"date": time.strftime("%Y-%m-%d"), "gpu": probe.session.info.name}
    for what in ["transpose", "stencil"]:
        if what in args.what:
            out[what] = data_movement(probe, what)
            save("family_probe", out)
    if "matmul" in args.what:
        out["matmul"] = matmul(probe, args.top)
        save("family_probe", out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
