"""Spec drafts by a model where the launch site says too little, through a real HTTP endpoint
(tests/support/fake_llm.py): the prompt carries the kernel, its launches with host code and why; the
answer is read back by the spec parser and never taken as it is."""

from __future__ import annotations

import json
import subprocess
import sys

from fsr_lsp.drafting.by_llm import model_draft
from fsr_lsp.drafting.resolver import kernel_specs
from fsr_lsp.kernels import find_kernel
from fsr_lsp.llmclient import ChatClient, LLMConfig
from fsr_lsp.source import SourceText
from fsr_lsp.specs import parse_spec

from ..support.fake_llm import FakeLLM, answer, status

FILE = """#include <cstdio>
__global__ void blend(float* out, const float* a, const float* b, int rows, int cols, float t)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * cols) out[i] = a[i] * (1 - t) + b[i] * t;
}

int main(int argc, char** argv) {
    int rows = atoi(argv[1]), cols = atoi(argv[2]);
    float *out, *a, *b;
    size_t bytes = load_inputs(argv[3], &a, &b);
    cudaMalloc(&out, bytes);
    blend<<<(rows * cols + 127) / 128, 128>>>(out, a, b, rows, cols, 0.25f);
}
"""
GOOD = """Here is the spec.
/* @fsr
bench = { R = 2048, C = 2048 }
tests = [ { R = 1, C = 1 }, { R = 17, C = 33 } ]
grid = "cdiv(R * C, 128)"
block = 128
[args]
out = "out[R * C]"
a = "in[R * C]"
b = "in[R * C]"
rows = "R"
cols = "C"
t = 0.25
*/"""


def chat(llm: FakeLLM) -> ChatClient:
    return ChatClient(LLMConfig(base_url=llm.base_url, model="drafter-1", max_retries=1), sleep=lambda s: None)


def test_the_model_drafts_what_the_launch_site_cannot_and_the_draft_says_so(tmp_path):
    cu = tmp_path / "blend.cu"
    cu.write_text(FILE)
    with FakeLLM([answer(GOOD)]) as llm:
        client = chat(llm)
        specs = kernel_specs([cu], lambda src, k, launches, why: model_draft(client, src, k, launches, why))
        prompt = llm.prompts()[0]
    (s,) = specs
    assert s.origin == "drafted" and s.spec.splitlines()[1].startswith("# drafted by the model drafter-1")
    assert "no value at the launch site" in prompt or "rows" in prompt  # why the launch site failed is said
    assert "blend<<<(rows * cols + 127) / 128, 128>>>" in prompt and "__global__ void blend" in prompt
    assert "atoi(argv[1])" in prompt  # the host code around the launch
    src = SourceText(FILE.replace("__global__ void blend", s.spec + "__global__ void blend", 1))
    spec = parse_spec(src, find_kernel(src, "blend")).spec
    assert spec is not None and spec.bench == {"R": 2048, "C": 2048}


def test_a_model_answer_that_does_not_parse_is_refused_with_the_parser_s_reason(tmp_path):
    cu = tmp_path / "blend.cu"
    cu.write_text(FILE)
    bad = GOOD.replace('t = 0.25\n', '')  # a parameter left out
    with FakeLLM([answer(bad)]) as llm:
        client = chat(llm)
        (s,) = kernel_specs([cu], lambda src, k, launches, why: model_draft(client, src, k, launches, why))
    assert s.origin == "none" and s.spec is None
    assert any("the model's draft does not parse" in p and "t" in p for p in s.problems)


def test_garbage_two_blocks_and_a_dead_endpoint_each_say_why(tmp_path):
    src = SourceText(FILE)
    k = find_kernel(src, "blend")
    with FakeLLM([answer("I cannot help with that."), answer(GOOD + "\n" + GOOD), status(500), status(500)]) as llm:
        client = chat(llm)
        none = model_draft(client, src, k, [], "no launch found")
        two = model_draft(client, src, k, [], "no launch found")
        dead = model_draft(client, src, k, [], "no launch found")
    assert none.text is None and "held 0 @fsr blocks" in none.problems[0]
    assert two.text is None and "held 2 @fsr blocks" in two.problems[0]
    assert dead.text is None and "could not draft" in dead.problems[0] and "HTTP 500" in dead.problems[0]


def test_the_cli_asks_the_model_only_when_configured_and_the_key_stays_out(tmp_path):
    cu = tmp_path / "blend.cu"
    cu.write_text(FILE)
    secret = "sk-test-SECRET-123"
    with FakeLLM([answer(GOOD)]) as llm:
        r = subprocess.run([sys.executable, "-m", "fsr_lsp.cli.main", "spec", str(cu), "--json",
                            "--llm-base-url", llm.base_url, "--llm-model", "drafter-1"],
                           capture_output=True, text=True, timeout=60, env={**_env(), "OPENAI_API_KEY": secret})
        assert llm.requests[0]["headers"]["authorization"] == f"Bearer {secret}"
    assert r.returncode == 0, r.stderr
    (d,) = json.loads(r.stdout)
    assert d["origin"] == "drafted" and secret not in r.stdout + r.stderr
    plain = subprocess.run([sys.executable, "-m", "fsr_lsp.cli.main", "spec", str(cu), "--json"],
                           capture_output=True, text=True, timeout=60, env={**_env(), "FSR_LLM_BASE_URL": ""})
    assert json.loads(plain.stdout)[0]["origin"] == "none"


def _env() -> dict:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("FSR_LLM")}
