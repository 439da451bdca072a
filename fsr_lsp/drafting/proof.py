"""The proof that a spec fits its kernel, run with the ORIGINAL kernel before the spec is used.

A draft is a guess, whoever wrote it (the launch site, a model or a person). Before a search
trusts it, the original must, at every test size and the bench size:
- run in bounds of the drafted lengths: guard bands around every buffer, each buffer against
  unmapped pages, and compute-sanitizer memcheck on exact allocations;
- read no `out` buffer before writing it (compute-sanitizer initcheck, `out` left unwritten);
- leave every `in` buffer as it was, write every element of every `out` buffer (two runs with
  different poisons), and give the same result twice. A float result that differs only in
  rounding (atomics) gets an explicit tolerance in the spec; otherwise the kernel is flagged
  as nondeterministic, naming the buffers.
The evaluator does the work; this module asks it, reads its checks back as "which check, which
argument", and caches a settled verdict per kernel text and GPU.
"""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Literal, Protocol

from ..evaluator import EvalOptions, Evaluator, EvaluatorUnavailable, prepare
from ..evaluator.backends import Backend, LocalBackend
from ..evaluator.job.captured_buffers import saved_bytes
from ..evaluator.worker.gpu_gate import gate
from ..evaluator.records import Check, EvalJob, EvalResult
from ..evaluator.sanitize.sanitizer import sanitize_original
from ..evaluator.worker.serde import from_data, to_data
from ..specs.edit import set_key
from .placement import place_spec, proof_text
from .relax import MAX_STEPS, relax

PROOF_VERSION = "2"  # bump when what a proof checks changes: older cached verdicts no longer count
# Tolerances tried, in order, when two runs of the original differ only in rounding.
TOLERANCES = ((1e-4, 1e-6), (1e-3, 1e-5), (1e-2, 1e-4))
SANITIZER_TOOLS = ("memcheck", "initcheck")
# What each evaluator check proves, in the words a failed proof uses.
CHECK_NAMES = {
    "guard bands": "in bounds", "unmapped pages": "in bounds", "sanitizer memcheck": "in bounds (memcheck)",
    "sanitizer initcheck": "outputs not read before written (initcheck)", "inputs unchanged": "in buffers unchanged",
}

# Failures of the two-run comparison that an out-of-bounds read can also cause.
AMBIGUOUS = ("outputs not read before written", "deterministic", "every output written")

ProofStatus = Literal["proven", "failed", "unavailable"]


@dataclass
class Proof:
    kernel: str
    status: ProofStatus
    message: str  # one line: what was proven, or which check failed on which argument
    spec: str = ""  # the block proven (with the tolerance a proof added, if it did)
    check: str = ""  # the failed check
    argument: str = ""  # the argument it blames
    checks: list[Check] = field(default_factory=list)
    nondeterministic: list[str] = field(default_factory=list)  # buffers that differ between two runs
    tolerance: tuple[float, float] | None = None  # (rtol, atol) the proof had to add
    gpu: str = ""
    original_ms: float | None = None  # the original's median time at the bench size
    cached: bool = False

    @property
    def proven(self) -> bool:
        return self.status == "proven"

    @property
    def settled(self) -> bool:
        """A verdict on the spec itself (worth caching), not on this machine."""
        return self.status == "proven" or self.status == "failed" and self.check not in ("timeout", "compiles")


Stage = Callable[[str], None]


class ProofStore(Protocol):
    """Where settled proofs are kept (cache.py's ProofCache, in the workspace): named here, not imported."""

    def get(self, key: str) -> Proof | None: ...

    def put(self, key: str, proof: Proof) -> None: ...


def prove(evaluator: Evaluator, text: str, kernel: str, block: str | None = None, options: EvalOptions | None = None,
          *, cache: ProofStore | None = None, timeout: float | None = None, on_stage: Stage | None = None) -> Proof:
    """Prove `block` (or the kernel's own block when None) for `kernel` of the file `text`."""
    stage = on_stage or (lambda _: None)
    options = options or EvalOptions()
    source = place_spec(text, kernel, block).text if block is not None else text
    spec_text = block or ""
    try:
        gpu = evaluator.start()
    except EvaluatorUnavailable as e:
        return Proof(kernel, "unavailable", f"the proof needs a GPU: {e}", spec=spec_text)
    key = proof_key(source, kernel, gpu.name, options)
    if cache is not None:
        hit = cache.get(key)
        if hit is not None:
            hit.cached = True
            return hit
    proof = _prove(evaluator, source, kernel, spec_text, options, timeout, stage)
    proof.gpu = gpu.name
    if cache is not None and proof.settled:
        cache.put(key, proof)
    return proof


def prove_with(backend: Backend, text: str, kernel: str, block: str | None = None, options: EvalOptions | None = None,
               *, cache: ProofStore | None = None, timeout: float | None = None,
               on_stage: Stage | None = None) -> Proof:
    """`prove` on the backend the searches use: this machine's GPU (stage by stage), or one GPU
    of a cluster, where the proof runs whole (the registered call "prove") and comes back as
    plain data."""
    if isinstance(backend, LocalBackend):
        return prove(backend.evaluator, text, kernel, block, options, cache=cache, timeout=timeout, on_stage=on_stage)
    options = options or EvalOptions()
    source = place_spec(text, kernel, block).text if block is not None else text
    try:
        gpu = backend.start()
    except EvaluatorUnavailable as e:
        return Proof(kernel, "unavailable", f"the proof needs a GPU: {e}", spec=block or "")
    key = proof_key(source, kernel, gpu.name, options)
    hit = cache.get(key) if cache is not None else None
    if hit is not None:
        hit.cached = True
        return hit
    if on_stage:
        on_stage(f"proving the spec on the cluster ({gpu.name} on {gpu.host or 'a worker'})")
    payload = {"text": text, "kernel": kernel, "block": block, "options": to_data(options), "timeout": timeout}
    try:
        proof = from_data(Proof, backend.call("prove", payload))
    except EvaluatorUnavailable as e:
        return Proof(kernel, "unavailable", f"the proof needs a GPU: {e}", spec=block or "")
    if cache is not None and proof.settled:
        cache.put(key, proof)
    return proof


def prove_request(backend: LocalBackend, payload: dict) -> dict:
    """The remote half of `prove_with` (registered as "prove"): runs on the GPU's own backend."""
    evaluator = backend.evaluator
    options = from_data(EvalOptions, payload["options"])
    return to_data(prove(evaluator, payload["text"], payload["kernel"], payload["block"], options,
                         timeout=payload.get("timeout")))


def proof_key(source: str, kernel: str, gpu: str, options: EvalOptions) -> str:
    h = hashlib.sha256()
    for part in (PROOF_VERSION, gpu, kernel, " ".join(options.flags), proof_text(source, kernel), _saved(options)):
        h.update(part.encode() + b"\0")
    return h.hexdigest()


def _saved(options: EvalOptions) -> str:
    """The saved inputs a proof ran with (a proof with them differs from one without, and
    from one with another capture's), by file, offset and size."""
    return " ".join(f"{name}={where}:{saved_bytes(where)}" for name, where in sorted(options.real_inputs))


def _prove(evaluator: Evaluator, source: str, kernel: str, block: str, options: EvalOptions, timeout: float | None,
           stage: Stage) -> Proof:
    """The proof of a block; a draft that fails gives up its guesses one at a time (relax.py)."""
    given_up: list[str] = []
    first: Proof | None = None
    for _ in range(MAX_STEPS + 1):
        proof, job = _prove_once(evaluator, source, kernel, block, options, timeout, stage)
        first = first or proof
        step = None if proof.proven else relax(block, job, proof.check, proof.argument, proof.message)
        if step is None:
            break
        block, why = step
        given_up.append(why)
        stage(f"the draft gives up a guess: {why}")
        source = place_spec(source, kernel, block).text
    if given_up and not proof.proven:
        # giving up guesses did not help: the draft's first failure is the one that names the cause
        first.message += (f"; giving up {len(given_up)} of the draft's guesses did not help "
                          f"(then: {proof.message.split(';')[0][:160]})")
        return first
    if given_up:
        proof.message += "; the draft was relaxed: " + "; ".join(given_up)
    return proof


def _prove_once(evaluator: Evaluator, source: str, kernel: str, block: str, options: EvalOptions,
                timeout: float | None, stage: Stage) -> tuple[Proof, EvalJob | None]:
    stage("proving the spec: the original kernel at every test size")
    result, job = _run_original(evaluator, source, kernel, options, timeout, stage)
    failed = _failed(result)
    tolerance = None
    if failed is not None and failed.name == "deterministic" and block and _float(job, failed.argument):
        for rtol, atol in TOLERANCES:
            stage(f"two runs differ in `{failed.argument}`: trying rtol = {rtol:g}, atol = {atol:g}")
            relaxed = set_key(set_key(block, "rtol", f"{rtol:g}"), "atol", f"{atol:g}")
            again, again_job = _run_original(evaluator, place_spec(source, kernel, relaxed).text, kernel, options,
                                             timeout, stage)
            if _failed(again) is None and again.verified:
                result, job, block, failed, tolerance = again, again_job, relaxed, None, (rtol, atol)
                break
    if failed is not None and failed.name in AMBIGUOUS and job is not None:
        # runs that differ may be reading an unwritten output or past a buffer's end (whose
        # guard bands hold a different poison each run): memcheck and initcheck say which
        stage("two runs differ: compute-sanitizer memcheck and initcheck say why")
        with gate(evaluator.device_index).shared():
            sharper = next((c for c in sanitize_original(job, evaluator.device_index, SANITIZER_TOOLS)
                            if c.status == "fail"), None)
        if sharper is not None:
            return _failure(kernel, block, result, sharper, result.checks + [sharper]), job
    if failed is not None or not result.verified:
        return _failure(kernel, block, result, failed), job
    assert job is not None
    stage("proving the spec: compute-sanitizer memcheck and initcheck at every test size")
    with gate(evaluator.device_index).shared():
        sanitized = sanitize_original(job, evaluator.device_index, SANITIZER_TOOLS)
    checks = result.checks + sanitized
    bad = next((c for c in sanitized if c.status == "fail"), None)
    if bad is not None:
        return _failure(kernel, block, result, bad, checks), job
    skipped = [c for c in sanitized if c.status == "skip"]
    ran = ", ".join(result.sizes_checked)
    extra = f"; rtol = {tolerance[0]:g}, atol = {tolerance[1]:g} added: two runs differ in rounding" if tolerance else ""
    note = f"; {'; '.join(f'{c.name} skipped: {c.detail}' for c in skipped)}" if skipped else ""
    t = result.original_time
    return Proof(kernel, "proven", f"proven on the original at {ran}: in bounds, outputs written, in buffers unchanged, "
                                   f"{_repeatable(result)}{', memcheck and initcheck clean' if not skipped else ''}"
                                   f"{extra}{note}",
                 spec=block, checks=checks, tolerance=tolerance, original_ms=t.median_ms if t else None), job


def _repeatable(result: EvalResult) -> str:
    """'deterministic', or how two runs differed when the evaluator let them (float atomics,
    judged against the original's double-precision run)."""
    if any(w.startswith("rounding:") for w in result.warnings):
        return "repeatable to its own rounding (two runs differ as float atomics do; candidates held to its error)"
    return "deterministic"


def _run_original(evaluator: Evaluator, source: str, kernel: str, options: EvalOptions, timeout: float | None,
                  stage: Stage):
    assert evaluator.gpu is not None
    prepared = prepare(source, kernel, None, evaluator.gpu.arch, options)
    if prepared.job is None:
        assert prepared.result is not None
        return prepared.result, None
    result = evaluator.run(prepared.job, timeout=timeout, on_stage=stage)
    if result.status == "oom":
        result = _alone_after_oom(evaluator, prepared.job, timeout, stage)
    assert prepared.result is not None
    result.checks = prepared.result.checks + result.checks
    return result, prepared.job


OOM_WAIT_SECONDS = 10.0  # for other work on the GPU to let go of its memory
_ALONE = threading.Lock()  # the retries of this process's proofs, one at a time


def _alone_after_oom(evaluator: Evaluator, job: EvalJob, timeout: float | None, stage: Stage) -> EvalResult:
    """A proof that ran out of GPU memory beside other work (another proof, the user's program)
    is tried once more after a wait, the only retry of this process on the GPU; a second
    failure says what it needs."""
    gib = sum(p.buffer_bytes for p in job.sizes[-1:]) / (1 << 30)
    stage(f"out of GPU memory beside other work: waiting {OOM_WAIT_SECONDS:g} s, then trying again alone")
    with _ALONE:
        time.sleep(OOM_WAIT_SECONDS)
        result = evaluator.run(job, timeout=timeout, on_stage=stage)
    if result.status == "oom":
        result.message = (f"out of GPU memory twice, the second time after waiting {OOM_WAIT_SECONDS:g} s with no "
                          f"other proof of fsr running: the bench size's buffers take {gib:.2f} GiB, and what else "
                          f"uses the GPU left too little ({result.message})")
    return result


def _failed(result: EvalResult) -> Check | None:
    return next((c for c in result.checks if c.status == "fail"), None)


def _float(job, argument: str) -> bool:
    if job is None:
        return False
    arg = next((a for a in job.sizes[0].args if a.name == argument), None)
    return arg is not None and (arg.dtype or "").startswith(("float", "bfloat"))


def _failure(kernel: str, block: str, result: EvalResult, failed: Check | None, checks: list[Check] | None = None) -> Proof:
    checks = checks if checks is not None else result.checks
    if failed is None:  # no check names it: the spec does not parse, the original does not compile, a timeout
        check = {"compile_error": "compiles", "timeout": "timeout"}.get(result.status, "spec")
        return Proof(kernel, "failed", f"{check}: {result.message}", spec=block, check=check, checks=checks)
    name = CHECK_NAMES.get(failed.name, failed.name)
    who = f" `{failed.argument}`" if failed.argument else ""
    detail = failed.detail if failed.detail and failed.detail not in result.message else result.message
    nondeterministic = [failed.argument] if failed.name == "deterministic" and failed.argument else []
    return Proof(kernel, "failed", f"{name}{who}: {detail}", spec=block, check=name, argument=failed.argument,
                 checks=checks, nondeterministic=nondeterministic)
