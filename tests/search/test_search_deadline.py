"""A search ends at its deadline, whatever is in flight (GPU work, a sanitizer run, a model
request), with the fastest fully verified candidate so far, and says so when a faster one had
not finished its verification. GPU-free: a scripted bench whose work only an interrupt ends."""

import threading
import time

from fsr_lsp.search import LLMConfig, SearchConfig, SearchControl, run_search
from fsr_lsp.search.generators.llm import LLMGenerator

from ..support.fake_llm import FakeLLM, answer, stall
from ..support.scripted_bench import ScriptedBench
from ..support.search_helpers import GPU, example

SAXPY = example("saxpy.cu")


def kernel(verdict: str, tag: str) -> str:
    return answer(f"""```cuda
__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y)
{{
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // {tag}
    if (i < n) y[i] = a * x[i] + y[i];  // verdict: {verdict}
}}
```""")


class SlowBench(ScriptedBench):
    """Confirmations of candidates marked `slow` (and evaluations marked `hang`) run until the
    search interrupts them, as a sanitizer run or a hung kernel would."""

    def __init__(self):
        super().__init__()
        self.stop = threading.Event()
        self.interrupts = 0
        self.gpu_after_stop = 0

    @property
    def gpu(self):  # asking for the GPU after the deadline would start the worker it stopped
        if self.stop.is_set():
            self.gpu_after_stop += 1
        return GPU

    def interrupt(self):
        self.interrupts += 1
        self.stop.set()

    def evaluate(self, proposals, on_result=None):
        if any("hang" in p.source for p in proposals):
            self.stop.wait()
            return [self._cancelled() for _ in proposals]
        return super().evaluate(proposals, on_result)

    def confirm(self, proposal):
        if "slow" in proposal.source:
            self.stop.wait()
            return self._cancelled()
        return super().confirm(proposal)

    def _cancelled(self):
        from fsr_lsp.evaluator.records import EvalResult

        return EvalResult(kernel="k", status="cancelled", message="search cancelled")


def search(llm, bench, budget, **config):
    cfg = SearchConfig(llm=LLMConfig(base_url=llm.base_url, model="m", api_key_env="FSR_DEADLINE_KEY", max_retries=0,
                                     timeout=60), time_budget=budget, fix_attempts=0, **config)
    started = time.monotonic()
    outcome = run_search(SAXPY, "saxpy.cu", "saxpy", cfg, bench, LLMGenerator(cfg.llm, parallel=2))
    return outcome, time.monotonic() - started


def test_the_deadline_stops_gpu_work_in_flight(monkeypatch):
    monkeypatch.setenv("FSR_DEADLINE_KEY", "k")
    bench = SlowBench()
    with FakeLLM(default=kernel("verified 1.5 hang", "h")) as llm:
        outcome, seconds = search(llm, bench, budget=2.0, rounds=3, candidates=1)
    assert seconds < 2.0 * 1.05 + 0.5, seconds
    assert outcome.stopped == "time" and bench.interrupts == 1 and outcome.best is None


def test_at_the_deadline_only_a_fully_verified_candidate_is_the_result(monkeypatch, without_structural_rewrites):
    monkeypatch.setenv("FSR_DEADLINE_KEY", "k")
    bench = SlowBench()
    steps = [kernel("verified 1.4", "steady"), kernel("verified 1.9 slow", "fast")]
    with FakeLLM(steps, default=kernel("wrong", "later")) as llm:
        outcome, seconds = search(llm, bench, budget=3.0, rounds=2, candidates=1, sanitize_winner=True)
    assert seconds < 3.0 * 1.05 + 0.5, seconds
    assert outcome.stopped == "time" and outcome.status == "improved" and bench.gpu_after_stop == 0
    assert outcome.best.result.speedup == 1.4 and outcome.best.result.confirmed
    assert "1.90x passed the checks but its sanitizers had not finished at the deadline, so it is not a result" \
        in outcome.message
    assert outcome.best.confirmed_at is not None and outcome.best.confirmed_at < seconds


def test_a_model_request_in_flight_ends_at_the_deadline(monkeypatch):
    monkeypatch.setenv("FSR_DEADLINE_KEY", "k")
    with FakeLLM(default=stall(30)) as llm:
        outcome, seconds = search(llm, ScriptedBench(), budget=2.0, rounds=2, candidates=2)
    assert seconds < 2.0 * 1.05 + 0.5, seconds
    assert outcome.stopped in ("time", "generator") and outcome.best is None


def test_cancel_during_a_hanging_model_request_ends_the_search_at_once(monkeypatch):
    monkeypatch.setenv("FSR_DEADLINE_KEY", "k")
    cancel = threading.Event()
    with FakeLLM(default=stall(60)) as llm:
        cfg = SearchConfig(llm=LLMConfig(base_url=llm.base_url, model="m", api_key_env="FSR_DEADLINE_KEY",
                                         max_retries=0, timeout=120), time_budget=300, fix_attempts=0)
        threading.Timer(1.0, cancel.set).start()
        started = time.monotonic()
        outcome = run_search(SAXPY, "saxpy.cu", "saxpy", cfg, ScriptedBench(), LLMGenerator(cfg.llm),
                             control=SearchControl(cancel=cancel))
        seconds = time.monotonic() - started
    assert seconds < 3.0, seconds
    assert outcome.stopped in ("cancelled", "generator") and outcome.best is None
