"""The proof of a drafted spec on the original kernel, on the CPU stand-in for the GPU session:
each way a draft can be wrong is caught, names its check and its argument, and a proven
verdict is cached per kernel text. tests/gpu/test_proof_gpu.py runs the same on CUDA kernels
with compute-sanitizer."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from fsr_lsp.drafting import proof as proof_module  # noqa: E402
from fsr_lsp.drafting.cache import ProofCache  # noqa: E402
from fsr_lsp.drafting.placement import place_spec  # noqa: E402
from fsr_lsp.drafting.proof import prove  # noqa: E402
from fsr_lsp.evaluator import Evaluator  # noqa: E402
from fsr_lsp.evaluator.gpu.run import run_job  # noqa: E402
from fsr_lsp.evaluator.job.prepare import Prepared  # noqa: E402
from fsr_lsp.evaluator.records import EvalResult  # noqa: E402

from ..support import fake_kernels  # noqa: E402,F401
from ..support.fake_gpu import FakeSession  # noqa: E402
from ..support.cpu_jobs import job  # noqa: E402

FILE = """#include <cstdio>
__global__ void {name}(int n, float a, const float* x, float* y) {{ }}

int main() {{ return 0; }}
"""
DRAFT = """/* @fsr
# drafted by fsr from the launch at line 4 in main()
bench = {{ n = 4096 }}
tests = [ {{ n = 1 }}, {{ n = 17 }}, {{ n = 1000 }} ]
grid = "cdiv(n, 256)"
block = 256
[args]
n = "n"
a = 1.5
x = "in[n]"
y = "{y}[n]"
*/"""


def fake_prepare(source, kernel, candidate, arch, options):
    """The spec read from the file as prepare does, the kernel a Python function of that name."""
    return Prepared(job=job(source, kernel, kernel, None),
                    result=EvalResult(kernel=kernel, status="verified", message="", checks=[]))


@pytest.fixture(scope="module")
def evaluator():
    from ..support.fake_workers import cpu_session

    with Evaluator(target=cpu_session, timeout=60) as ev:
        ev.start()
        yield ev


@pytest.fixture(autouse=True)
def _prepare(monkeypatch):
    monkeypatch.setattr(proof_module, "prepare", fake_prepare)


def proved(evaluator, name, y="out", **kw):
    return prove(evaluator, FILE.format(name=name), name, DRAFT.format(y=y), **kw)


def test_a_right_draft_is_proven_with_the_sanitizers_said_to_be_skipped_without_them(evaluator):
    p = proved(evaluator, "shift")
    assert p.proven, p.message
    assert "proven on the original at n=1, n=17, n=1000, n=4096" in p.message
    assert "sanitizer memcheck skipped" in p.message and p.tolerance is None
    assert p.gpu == "CPU test double" and p.original_ms is not None


@pytest.mark.parametrize("name, y, check, argument, words", [
    ("axpy_writes_past_end", "inout", "in bounds", "y", "the spec's length for `y` is too small"),
    ("random_out", "out", "deterministic", "y", "differ between two runs"),
])
def test_each_wrong_draft_fails_naming_its_check_and_argument(evaluator, name, y, check, argument, words):
    p = proved(evaluator, name, y)
    assert p.status == "failed", p.message
    assert (p.check, p.argument) == (check, argument)
    assert p.message.startswith(f"{check} `{argument}`: ") and words in p.message


@pytest.mark.parametrize("name", ["writes_half", "reads_out"])
def test_a_draft_out_buffer_the_original_keeps_in_part_or_reads_first_becomes_inout(evaluator, name):
    """The draft guessed `out`; the original leaves part of y as it was (or reads it first): y is
    inout, and a rewrite must keep those elements too."""
    p = proved(evaluator, name)
    assert p.proven, p.message
    assert 'y = "inout[n]"' in p.spec and "checked as inout" in p.message


def test_the_users_own_block_is_never_relaxed(evaluator):
    text = DRAFT.format(y="out").replace("# drafted by fsr from the launch at line 4 in main()\n", "") + "\n" + \
        FILE.format(name="writes_half")
    p = prove(evaluator, text, "writes_half")  # no block given: the file's own
    assert p.status == "failed" and p.check == "every output written" and "relaxed" not in p.message


def test_a_kernel_written_for_whole_blocks_is_tested_at_whole_blocks_of_the_bench_launch(evaluator):
    """It assumes whole blocks: n=1, 17 and 1000 fail, so the tests move to whole blocks of the
    bench launch's 256 elements a block (and no edge size); the bench size, the launch a run made, stays."""
    p = proved(evaluator, "shift_whole_blocks")
    assert p.proven, p.message
    assert "tests = [{ n = 256 }, { n = 768 }, { n = 3328 }]" in p.spec and "edge = false" in p.spec
    assert "bench = { n = 4096 }" in p.spec
    assert "the original fails at n=1 (in bounds): it takes `n` in whole blocks of 256" in p.message
    assert "proven on the original at n=256, n=768, n=3328, n=4096" in p.message


def test_a_size_that_fails_in_whole_blocks_is_left_out_alone():
    from fsr_lsp.drafting.placement import place_spec
    from fsr_lsp.drafting.relax import relax

    tiled = DRAFT.format(y="out").replace("tests = [ { n = 1 }, { n = 17 }, { n = 1000 } ]",
                                          "tests = [ { n = 256 }, { n = 768 } ]")
    sized = job(place_spec(FILE.format(name="shift"), "shift", tiled).text, "shift", "shift", None)
    step = relax(tiled, sized, "in bounds", "y", "writes past the end of `y` at n=256")
    assert step is not None and "that size is left out" in step[1] and "tests = [{ n = 768 }]" in step[0]


def test_an_edge_size_the_original_cannot_take_turns_the_edge_off_and_the_bench_size_never_goes():
    from fsr_lsp.drafting.placement import place_spec
    from fsr_lsp.drafting.relax import relax
    from fsr_lsp.specs.edit import set_key

    block = set_key(DRAFT.format(y="out"), "tests", "[]")
    sized = job(place_spec(FILE.format(name="shift"), "shift", block).text, "shift", "shift", None)
    assert [(p.label, p.role) for p in sized.sizes] == [("n=4097", "edge"), ("n=4096", "bench")]
    edge = relax(block, sized, "in bounds (memcheck)", "y", "reads up to 4 bytes past the end of `y` at n=4097")
    assert edge is not None and "edge = false" in edge[0] and "no block multiple" in edge[1]
    assert relax(block, sized, "in bounds", "y", "writes past the end of `y` at n=4096") is None
    assert relax("", sized, "every output written", "y", "at n=4097") is None  # the user's own block


def test_a_kernel_whose_results_differ_only_in_rounding_gets_an_explicit_tolerance(evaluator):
    p = proved(evaluator, "rounding_noise")
    assert p.proven, p.message
    assert p.tolerance == (1e-4, 1e-6)
    assert "rtol = 0.0001" in p.spec and "atol = 1e-06" in p.spec and "rtol = 0.0001" in p.message


def test_a_kernel_nondeterministic_beyond_rounding_is_flagged_with_its_buffers(evaluator):
    p = proved(evaluator, "random_out")
    assert p.status == "failed" and p.nondeterministic == ["y"]


def test_a_settled_verdict_is_cached_per_kernel_text_and_not_proven_twice(evaluator, tmp_path, monkeypatch):
    with ProofCache(tmp_path) as cache:
        first = proved(evaluator, "shift", cache=cache)
        assert first.proven and not first.cached
        calls = []
        monkeypatch.setattr(proof_module, "_prove", lambda *a: calls.append(a))
        again = proved(evaluator, "shift", cache=cache)
        assert again.proven and again.cached and calls == []
        # host code after the kernel does not change the kernel: still cached
        text = FILE.format(name="shift").replace("return 0;", "return 1;")
        assert prove(evaluator, text, "shift", DRAFT.format(y="out"), cache=cache).cached
    with ProofCache(tmp_path) as cache:  # and across processes, through the workspace file
        assert proved(evaluator, "shift", cache=cache).cached


def test_a_changed_draft_or_kernel_is_proven_again(evaluator, tmp_path):
    with ProofCache(tmp_path) as cache:
        assert not proved(evaluator, "shift", cache=cache).cached
        assert not proved(evaluator, "shift", y="inout", cache=cache).cached
        changed = FILE.format(name="shift").replace("{ }", "{ /* edited */ }")
        assert not prove(evaluator, changed, "shift", DRAFT.format(y="out"), cache=cache).cached


def test_no_gpu_is_a_clear_unavailable_verdict_that_is_not_cached(tmp_path):
    from ..support.fake_workers import unavailable

    with Evaluator(target=unavailable, timeout=10) as ev, ProofCache(tmp_path) as cache:
        p = prove(ev, FILE.format(name="shift"), "shift", DRAFT.format(y="out"), cache=cache)
    assert p.status == "unavailable" and "needs a GPU" in p.message and not p.settled


def test_oracle_failures_carry_check_and_argument_in_the_result_record():
    r = run_job(FakeSession(), job(DRAFT.format(y="out") + "\n__global__ void writes_half(int n, float a, const float* x, float* y) { }\n",
                                   "writes_half", "writes_half", None))
    assert r.status == "spec_error"
    failed = next(c for c in r.checks if c.status == "fail")
    assert (failed.name, failed.argument) == ("every output written", "y")


def test_runs_that_differ_ask_the_sanitizers_which_buffer_is_to_blame(evaluator, monkeypatch):
    """An over-read past `x` also makes two runs differ (the guard bands hold a different poison
    each run): memcheck's verdict names the buffer instead of blaming `y`."""
    from fsr_lsp.evaluator.records import Check

    seen = []

    def memcheck(job, device_index, tools):
        seen.append(tools)
        return [Check("sanitizer memcheck", "fail", "reads up to 4 bytes past the end of `x` at n=17", "x"),
                Check("sanitizer initcheck", "pass", "")]

    monkeypatch.setattr(proof_module, "sanitize_original", memcheck)
    p = proved(evaluator, "reads_out")
    assert seen and (p.check, p.argument) == ("in bounds (memcheck)", "x"), p.message
    assert p.message.startswith("in bounds (memcheck) `x`: reads up to 4 bytes past the end of `x` at n=17")


def test_when_giving_up_guesses_does_not_help_the_first_failure_is_the_one_reported(evaluator):
    """It writes past y at every size: dropping the test sizes one by one cannot save the draft,
    and the bench size fails the same way; the first failure names the cause, said once."""
    p = proved(evaluator, "axpy_writes_past_end", "inout")
    assert p.status == "failed" and (p.check, p.argument) == ("in bounds", "y")
    assert "at n=1:" in p.message and "that size is left out" not in p.message
    assert "giving up 4 of the draft's guesses did not help (then: in bounds `y`" in p.message


def test_a_drafted_in_buffer_the_original_writes_becomes_inout_and_the_users_own_block_fails(evaluator):
    writable = FILE.replace("const float* x", "float* x")  # an in-place kernel does not take x as const
    p = prove(evaluator, writable.format(name="scales_input"), "scales_input", DRAFT.format(y="out"))
    assert p.proven and 'x = "inout[n]"' in p.spec and "the original writes `x`: checked as inout" in p.message, \
        p.message
    text = DRAFT.format(y="out").replace("# drafted by fsr from the launch at line 4 in main()\n", "") + "\n" + \
        writable.format(name="scales_input")
    own = prove(evaluator, text, "scales_input")
    assert (own.status, own.check, own.argument) == ("failed", "in buffers unchanged", "x")
    assert "modifies x, which the spec declares in" in own.message


def test_a_kernel_indexing_by_its_captured_data_is_checked_at_the_captured_size_only():
    """Its inputs came from a run (real inputs saved): out of bounds at a smaller size means the
    data's indices fit the captured size alone; every smaller size goes in one step, not one by one."""
    import dataclasses

    from fsr_lsp.drafting.relax import relax

    sized = job(place_spec(FILE.format(name="shift"), "shift", DRAFT.format(y="out")).text, "shift", "shift", None)
    assert [p.role for p in sized.sizes].count("test") >= 2
    message = "writes up to 648 bytes past the end of `y` at n=17"
    one = relax(DRAFT.format(y="out"), sized, "in bounds (memcheck)", "y", message)
    assert one is not None and "n = 17" not in one[0].split("tests", 1)[1].splitlines()[0]
    assert "n = 256" in one[0] and "whole blocks of 256" in one[1]  # without a capture: whole blocks instead
    captured = dataclasses.replace(sized, real_inputs={"x": "0:/tmp/inputs.bin"})
    step = relax(DRAFT.format(y="out"), captured, "in bounds (memcheck)", "y", message)
    assert step is not None and "tests = []" in step[0] and "edge = false" in step[0]
    assert "verified at the captured size only" in step[1]
    assert relax(DRAFT.format(y="out"), captured, "deterministic", "y", message) is not None  # other checks as before
    assert "tests = []" not in relax(DRAFT.format(y="out"), captured, "deterministic", "y", message)[0]


def test_whole_number_inputs_from_a_capture_take_the_runs_own_bytes_when_their_range_is_not_enough():
    """A scan's offsets drawn at random in their range collide; at the captured size the draft's
    whole-number inputs that a run saved become captured(), the float data stays random."""
    import dataclasses

    from fsr_lsp.drafting.relax import relax

    block = DRAFT.format(y="out").replace('x = "in[n]"', 'x = "in[n] randint(1, 4097)"')
    assert block != DRAFT.format(y="out")
    sized = job(place_spec(FILE.format(name="shift"), "shift", block).text, "shift", "shift", None)
    at_bench = "two runs differ in `y` at n=4096"
    assert relax(block, sized, "deterministic", "y", at_bench) is None  # no capture: nothing to give up
    captured = dataclasses.replace(sized, real_inputs={"x": "0:/tmp/x.bin", "y": "0:/tmp/y.bin"})
    step = relax(block, captured, "deterministic", "y", at_bench)
    assert step is not None and 'x = "in[n] captured()"' in step[0] and "tests = []" in step[0]
    assert "edge = false" in step[0] and "`x` takes the captured run's own bytes" in step[1]
    assert relax(step[0], captured, "deterministic", "y", at_bench) is None  # nothing more to give up
    assert relax(block, captured, "compiles", "", "the original does not compile") is None


def test_a_proof_with_saved_inputs_is_cached_apart_from_one_without(tmp_path):
    """A captured() spec proven with a capture's bytes says nothing of a run without them."""
    from fsr_lsp.drafting.proof import proof_key
    from fsr_lsp.evaluator import EvalOptions

    saved = tmp_path / "inputs.bin"
    saved.write_bytes(b"\0" * 64)
    text = FILE.format(name="shift")
    plain = proof_key(text, "shift", "GPU", EvalOptions())
    with_bytes = proof_key(text, "shift", "GPU", EvalOptions(real_inputs=(("x", f"0:{saved}"),)))
    assert plain != with_bytes
    saved.write_bytes(b"\0" * 128)  # another capture's bytes under the same name
    assert proof_key(text, "shift", "GPU", EvalOptions(real_inputs=(("x", f"0:{saved}"),))) != with_bytes


class _OutOfMemoryFirst:
    """An evaluator that runs out of GPU memory `failures` times, then runs the job for real."""

    def __init__(self, real, failures: int) -> None:
        self.real, self.failures, self.runs = real, failures, 0
        self.gpu, self.device_index = real.gpu, real.device_index

    def start(self, *args):
        return self.real.start(*args)

    def run(self, job, **kwargs):
        self.runs += 1
        if self.runs <= self.failures:
            return EvalResult(kernel=job.kernel, status="oom", message="out of GPU memory: CUDA out of memory")
        return self.real.run(job, **kwargs)


def test_a_proof_out_of_gpu_memory_waits_and_tries_again_alone_and_says_so(evaluator, monkeypatch):
    monkeypatch.setattr(proof_module, "OOM_WAIT_SECONDS", 0.0)
    stages: list[str] = []
    once = _OutOfMemoryFirst(evaluator, 1)
    p = prove(once, FILE.format(name="shift"), "shift", DRAFT.format(y="out"), on_stage=stages.append)
    assert p.proven, p.message
    assert any("out of GPU memory beside other work" in s and "trying again alone" in s for s in stages)
    always = _OutOfMemoryFirst(evaluator, 99)
    p = prove(always, FILE.format(name="shift"), "shift", DRAFT.format(y="out"))
    assert p.status == "failed" and "out of GPU memory twice" in p.message and "GiB" in p.message
    assert always.runs == 2  # one retry, not a loop


def test_when_no_whole_number_input_is_left_every_saved_input_takes_the_runs_own_bytes():
    """A neighbour list sized for the run's lattice overflows on random positions in the same
    range: at the captured size, the saved float inputs take the run's bytes too, and it says why."""
    import dataclasses

    from fsr_lsp.drafting.relax import relax

    block = DRAFT.format(y="out").replace('x = "in[n]"', 'x = "in[n] uniform(0, 10)"')
    sized = job(place_spec(FILE.format(name="shift"), "shift", block).text, "shift", "shift", None)
    captured = dataclasses.replace(sized, real_inputs={"x": "0:/tmp/x.bin", "y": "0:/tmp/y.bin"})
    overflow = "writes up to 110044 bytes past the end of `y` at n=4096"
    step = relax(block, captured, "in bounds", "y", overflow)
    assert step is not None and 'x = "in[n] captured()"' in step[0] and "uniform" not in step[0]
    assert "tests = []" in step[0] and "depends on the data's structure" in step[1]
    assert relax(step[0], captured, "in bounds", "y", overflow) is None


def test_whole_blocks_need_a_tile_of_whole_threads():
    """cdiv(n, 256) at n=1000 is 4 blocks of 250: no tile a 256-thread block was written for."""
    from fsr_lsp.drafting.placement import place_spec
    from fsr_lsp.drafting.relax import relax

    draft = DRAFT.format(y="out").replace("bench = {{ n = 4096 }}".format(), "bench = { n = 1000 }") \
        .replace("tests = [ { n = 1 }, { n = 17 }, { n = 1000 } ]", "tests = [ { n = 1 }, { n = 17 } ]")
    sized = job(place_spec(FILE.format(name="shift"), "shift", draft).text, "shift", "shift", None)
    step = relax(draft, sized, "in bounds", "y", "writes past the end of `y` at n=1")
    assert step is not None and "whole blocks" not in step[1] and "that size is left out" in step[1]
