"""The proof stand-in for editor tests (FSR_LSP_PROVER): a kernel whose name says `bad` fails
its proof on `x`, every other draft is proven; the block comes back as the prover got it."""

from __future__ import annotations

from fsr_lsp.drafting.proof import Proof

PROVEN: list[tuple[str, str]] = []


def prove(text: str, kernel: str, block: str) -> Proof:
    if "bad" in kernel:
        return Proof(kernel, "failed", "in bounds (memcheck) `x`: reads up to 4 bytes past the end of `x` at n=17",
                     spec=block, check="in bounds (memcheck)", argument="x", gpu="Scripted GPU")
    return Proof(kernel, "proven", "proven on the original at n=1, n=17, n=1000 (scripted)", spec=block,
                 gpu="Scripted GPU")
