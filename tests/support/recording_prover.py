"""A proof stand-in (FSR_LSP_PROVER) that writes each block it is given to the file
FSR_TEST_PROOF_LOG names, so that a test can see what two callers proved; a kernel whose name
says `bad` fails, every other block is proven."""

from __future__ import annotations

import json
import os

from fsr_lsp.drafting.proof import Proof


def prove(text: str, kernel: str, block: str) -> Proof:
    with open(os.environ["FSR_TEST_PROOF_LOG"], "a") as log:
        log.write(json.dumps({"kernel": kernel, "block": block}) + "\n")
    if "bad" in kernel:
        return Proof(kernel, "failed", "in bounds (memcheck) `out`: writes past its end (recorded)", spec=block,
                     check="in bounds (memcheck)", argument="out", gpu="Recorded GPU")
    return Proof(kernel, "proven", "proven on the original (recorded)", spec=block, gpu="Recorded GPU")
