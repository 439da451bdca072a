"""The LLM generator against a real local HTTP endpoint: good answers, garbage, and faults."""

import pytest

from fsr_lsp.search.config import LLMConfig
from fsr_lsp.search.generators.base import GeneratorError
from fsr_lsp.search.generators.llm import LLMGenerator, extract_code
from fsr_lsp.search.proposal import Proposal, Tried

from ..support.fake_llm import FakeLLM, Step, answer, stall, status
from ..support.scripted_bench import ScriptedBench
from ..support.search_helpers import context, example

pytestmark = pytest.mark.usefixtures("without_structural_rewrites")  # saxpy's model rounds, not fsr's rewrite

GOOD = """Here is a faster version.

```cuda
__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];  // verdict: verified 1.5
}
```

I added __restrict__ so loads use the read-only path."""
SECRET = "sk-test-0123456789abcdef"


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("FSR_TEST_KEY", SECRET)
    return "FSR_TEST_KEY"


def generator(llm, key, sleeps=None, **kw):
    config = LLMConfig(base_url=llm.base_url, model="test-model", api_key_env=key, timeout=kw.pop("timeout", 5),
                       max_retries=kw.pop("max_retries", 3))
    return LLMGenerator(config, sleep=(sleeps.append if sleeps is not None else lambda s: None), **kw)


def ctx(**kw):
    return context(example("saxpy.cu"), "saxpy", **kw)


def test_a_good_answer_becomes_a_proposal_and_the_key_goes_only_in_the_header(key):
    with FakeLLM([answer(GOOD)]) as llm:
        (p,) = generator(llm, key).propose(ctx(), 1)
    assert p.source.startswith("__global__ void saxpy") and "__restrict__" in p.source
    assert p.note == "__restrict__" and p.generator == "llm:test-model"  # no `Change:` line: read off the code
    request = llm.requests[0]
    assert request["headers"]["authorization"] == f"Bearer {SECRET}"
    assert request["body"]["model"] == "test-model"
    assert SECRET not in p.prompt and SECRET not in p.response and SECRET not in str(request["body"])


def test_the_prompt_carries_kernel_gpu_measurements_and_history(key):
    c = ctx()
    faster = Tried(Proposal("__global__ void saxpy() { /* fast */ }", "llm:m", note="vectorized"),
                   ScriptedBench()._verdict("__global__ void saxpy() {} // verdict: verified 1.9"))
    slower = Tried(Proposal("__global__ void saxpy() { /* slow */ }", "llm:m", note="tiny blocks"),
                   ScriptedBench()._verdict("__global__ void saxpy() {} // verdict: verified 0.6"))
    broken = Tried(Proposal("__global__ void saxpy() { q; }", "llm:m", note="typo"),
                   ScriptedBench()._verdict("__global__ void saxpy() {} // verdict: compile_error"))
    c.history = [faster, slower, broken]
    with FakeLLM([answer(GOOD)]) as llm:
        generator(llm, key).propose(c, 1)
    (prompt,) = llm.prompts()
    system = llm.requests[0]["body"]["messages"][0]["content"]
    assert "Keep the kernel's name and its parameter list" in system
    assert "__global__ void saxpy(int n, float a, const float* x, float* y)" in prompt
    assert "bench = { n = 16777216 }" in prompt  # the spec
    assert "Scripted GPU" in prompt and "132 SMs" in prompt and "4300 GB/s" in prompt and "L2 60 MiB" in prompt
    assert "The original runs in 1 ms" in prompt
    assert "vectorized: verified, 1.90x" in prompt and "tiny blocks: verified, 0.60x" in prompt
    assert "/* fast */" in prompt and "/* slow */" in prompt  # side by side
    assert "typo: compile error" in prompt


def test_the_fix_prompt_carries_the_trimmed_compiler_error_and_the_mismatch(key):
    bench = ScriptedBench()
    failed = Tried(Proposal("__global__ void saxpy() { q; }", "llm:m"), bench._verdict("__global__ void k() {} // verdict: compile_error"))
    wrong = Tried(Proposal("__global__ void saxpy() { }", "llm:m"), bench._verdict("__global__ void k() {} // verdict: wrong"))
    with FakeLLM([answer(GOOD), answer(GOOD)]) as llm:
        g = generator(llm, key)
        fixed = g.fix(ctx(), failed)
        g.fix(ctx(), wrong)
    compile_prompt, wrong_prompt = llm.prompts()
    assert 'identifier "q" is undefined' in compile_prompt and "y[i] = q;" in compile_prompt
    assert "1 error detected" not in compile_prompt  # trimmed to what matters
    assert "size n=1000" in wrong_prompt and "output y has 12 of 1000" in wrong_prompt and "12 never written" in wrong_prompt
    assert "got nan, expected 1.5" in wrong_prompt
    assert fixed.parent == failed.proposal.key


def test_garbage_without_a_kernel_is_a_proposal_the_checker_rejects(key):
    with FakeLLM([answer("I cannot help with that.")]) as llm:
        (p,) = generator(llm, key).propose(ctx(), 1)
    assert "__global__" not in p.source and p.note == "the answer held no CUDA kernel"


def test_429_with_retry_after_is_honoured(key):
    sleeps = []
    with FakeLLM([status(429, retry_after="7"), answer(GOOD)]) as llm:
        (p,) = generator(llm, key, sleeps).propose(ctx(), 1)
    assert sleeps == [7.0] and "__restrict__" in p.source and len(llm.requests) == 2


def test_5xx_empty_and_malformed_answers_are_retried_with_backoff(key):
    sleeps = []
    steps = [status(500), status(503), Step("empty"), Step("garbage"), answer(GOOD)]
    with FakeLLM(steps) as llm:
        (p,) = generator(llm, key, sleeps, max_retries=5).propose(ctx(), 1)
    assert "__restrict__" in p.source
    assert sleeps == [1.0, 2.0, 4.0, 8.0]


def test_timeouts_then_giving_up_is_a_generator_error(key):
    with FakeLLM([stall(3), stall(3)]) as llm:
        g = generator(llm, key, timeout=0.5, max_retries=1)
        with pytest.raises(GeneratorError, match="no answer within 0 s|no answer within 1 s|gave up after 2 attempts"):
            g.propose(ctx(), 1)


def test_connection_refused_is_a_generator_error(key):
    llm = FakeLLM()
    url = llm.base_url
    llm.server.server_close()  # nothing listens there now
    g = LLMGenerator(LLMConfig(base_url=url, model="m", api_key_env=key, max_retries=1), sleep=lambda s: None)
    with pytest.raises(GeneratorError, match="cannot connect"):
        g.propose(ctx(), 1)


def test_client_errors_are_not_retried(key):
    with FakeLLM([status(401)]) as llm:
        with pytest.raises(GeneratorError, match="HTTP 401"):
            generator(llm, key).propose(ctx(), 1)
    assert len(llm.requests) == 1


def test_partial_failures_keep_the_answers_that_came(key):
    with FakeLLM([answer(GOOD), status(400)], default=status(400)) as llm:
        proposals = generator(llm, key, parallel=1).propose(ctx(), 2)
    assert len(proposals) == 1


def test_extract_code_prefers_the_block_with_the_kernel():
    text = "```python\nprint(1)\n```\n```cuda\n__global__ void k() {}\n```"
    assert extract_code(text) == "__global__ void k() {}\n"
    assert extract_code("__global__ void k() {}") == "__global__ void k() {}\n"
    assert extract_code("nothing here") == ""
