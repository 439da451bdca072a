"""What a model sends is hostile input: answers are bounded, prompts stay under their cap, and
a key the endpoint echoes appears nowhere we show or store."""

import logging
import subprocess
import sys
import time

from fsr_lsp.redaction import RedactingFilter, redact, register
from fsr_lsp.search import HistoryStore, LLMConfig, SearchConfig, run_search
from fsr_lsp.search.generators.base import GeneratorError
from fsr_lsp.search.generators.llm import LLMGenerator
from fsr_lsp.search.prompting import PROMPT_CAP, propose_prompt
from fsr_lsp.search.proposal import Proposal, Tried
from fsr_lsp.search.report import render

from ..support.fake_llm import KEY, FakeLLM, answer, drip, status
from ..support.scripted_bench import ScriptedBench
from ..support.search_helpers import context, example

import pytest

pytestmark = pytest.mark.usefixtures("without_structural_rewrites")  # saxpy's model rounds, not fsr's rewrite

SAXPY = example("saxpy.cu")
SECRET = "sk-hostile-0123456789abcdefXYZ"
ODD_SECRET = "my-own-credential-9f8e7d6c"  # not key-shaped: only knowing it redacts it


def kernel(verdict: str, extra: str = "") -> str:
    return ("```cuda\n__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y)\n{\n"
            f"    int i = blockIdx.x * blockDim.x + threadIdx.x;  // {extra}\n"
            f"    if (i < n) y[i] = a * x[i] + y[i];  // verdict: {verdict}\n}}\n```\nChange: {extra}")


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("FSR_HOSTILE_KEY", ODD_SECRET)
    return "FSR_HOSTILE_KEY"


def config(endpoint, key, **kw):
    return SearchConfig(llm=LLMConfig(base_url=endpoint.base_url, model="m", api_key_env=key, max_retries=0,
                                      **{"timeout": 5, **kw.pop("llm", {})}),
                        sanitize_winner=False, **kw)


def test_a_huge_answer_is_refused_unread_and_the_search_goes_on(key, tmp_path):
    huge = kernel("verified 9.0", "x" * (5 << 20))
    with FakeLLM([answer(huge), answer(kernel("verified 1.5", "small"))]) as llm:
        cfg = config(llm, key, rounds=1, candidates=2, fix_attempts=0)
        with HistoryStore(tmp_path) as store:
            outcome = run_search(SAXPY, "saxpy.cu", "saxpy", cfg, ScriptedBench(), LLMGenerator(cfg.llm, parallel=1),
                                 store)
    assert outcome.status == "improved" and outcome.best.result.speedup == 1.5
    assert all(len(t.proposal.source) < 10_000 for t in outcome.tried)
    assert (tmp_path / ".fsr" / "history.sqlite").stat().st_size < 1 << 20


def test_the_answer_cap_is_a_setting_and_says_why(key):
    with FakeLLM([answer(kernel("verified 1.5", "y" * 5000))]) as llm:
        cfg = config(llm, key, llm={"max_answer_bytes": 4096})
        with pytest.raises(GeneratorError, match=r"over the 4 KB cap \(llm.maxAnswerBytes\); refused unread"):
            LLMGenerator(cfg.llm, parallel=1).propose(context(SAXPY, "saxpy"), 1)


def test_an_answer_that_drips_is_cut_at_the_timeout(key):
    with FakeLLM([drip(0.2)]) as llm:
        cfg = config(llm, key, llm={"timeout": 2})
        started = time.monotonic()
        with pytest.raises(GeneratorError, match="no answer within 2 s"):
            LLMGenerator(cfg.llm, parallel=1).propose(context(SAXPY, "saxpy"), 1)
    assert time.monotonic() - started < 10


def test_prompts_stay_under_their_cap_whatever_the_history_holds():
    ctx = context(SAXPY, "saxpy")
    bench = ScriptedBench()
    big = "__global__ void saxpy() {\n" + "    // padding\n" * 20000 + "}\n"
    ctx.history = [Tried(Proposal(big + f"// {i}", "llm:m", note="n" * 5000),
                         bench._verdict(f"__global__ void k() {{}} // verdict: verified {1 + i / 10}")) for i in range(8)]
    prompt = propose_prompt(ctx, 0, 1)
    assert len(prompt.encode()) <= PROMPT_CAP and "is too long to show" in prompt


def test_a_key_the_endpoint_echoes_is_in_nothing_shown_or_stored(key, tmp_path, caplog):
    steps = [answer(kernel("verified 1.7", f"uses {KEY} and {SECRET}")),
             status(401, f"Incorrect API key provided: {KEY}")]
    with FakeLLM(steps) as llm:
        cfg = config(llm, key, rounds=2, candidates=1, fix_attempts=0)
        with caplog.at_level(logging.DEBUG), HistoryStore(tmp_path) as store:
            outcome = run_search(SAXPY, "saxpy.cu", "saxpy", cfg, ScriptedBench(), LLMGenerator(cfg.llm), store)
            logging.getLogger("fsr_lsp").warning("the answer was %s", outcome.best.proposal.response)
    assert llm.requests[0]["headers"]["authorization"] == f"Bearer {ODD_SECRET}"  # it was really sent, and echoed
    assert outcome.status == "improved" and "[redacted]" in outcome.best.proposal.source
    assert "Incorrect API key provided: [redacted]" in outcome.problem
    shown = [outcome.message, outcome.problem, outcome.best.proposal.source, outcome.best.proposal.note,
             outcome.best.proposal.response, render(outcome, "saxpy")]
    stored = (tmp_path / ".fsr" / "history.sqlite").read_bytes() + b"".join(
        p.read_bytes() for p in (tmp_path / ".fsr").glob("history.sqlite-*"))
    for text in shown + [stored.decode(errors="replace")]:
        assert ODD_SECRET not in text and SECRET not in text


def test_logs_are_redacted_at_every_level_arguments_and_tracebacks_included():
    register("abcdef-unusual-secret-42")
    record = logging.LogRecord("fsr_lsp", logging.DEBUG, __file__, 1, "sent %s with %s",
                               ("abcdef-unusual-secret-42", "Bearer qwertyuiop1234"), None)
    try:
        raise ValueError("key=abcdef-unusual-secret-42")
    except ValueError:
        record.exc_info = sys.exc_info()
    RedactingFilter().filter(record)
    text = record.getMessage() + record.exc_text
    assert "abcdef-unusual-secret-42" not in text and "qwertyuiop1234" not in text and text.count("[redacted]") >= 3


def test_key_shaped_strings_are_redacted_and_code_is_not():
    for leaked in ("sk-proj-" + "A" * 30, "ghp_" + "b" * 36, "AKIA" + "C" * 16, "hf_" + "d" * 34,
                   "Authorization: Bearer abc.def.ghi.jkl", '"api_key": "zzzzzzzzzz"', "x-api-key: 1234567890"):
        assert redact(f"before {leaked} after").count("[redacted]") == 1, leaked
    code = "__global__ void k(float* task_mask) { int sk = 3; float basic = 1.f; /* mask-0123456789abcdefghij */ }"
    assert redact(code) == code


def test_the_cli_never_prints_the_key_an_endpoint_echoes(tmp_path):
    cu = tmp_path / "k.cu"
    cu.write_text("__global__ void scale(float* x, float* y, int n, int m) { int i = threadIdx.x; if (i < n) y[i] = x[i]; }\n")
    with FakeLLM([status(401, f"bad key {KEY}")], default=status(401, f"bad key {KEY}")) as llm:
        env = {"FSR_CLI_KEY": ODD_SECRET, "PATH": "/usr/bin:/bin"}
        r = subprocess.run([sys.executable, "-m", "fsr_lsp.cli.main", "spec", str(cu), "--llm-base-url", llm.base_url,
                            "--llm-model", "m", "--llm-key-env", "FSR_CLI_KEY"],
                           capture_output=True, text=True, timeout=120, env=env)
    assert llm.requests, r.stderr  # the model was asked, and answered with the key
    assert ODD_SECRET not in r.stdout + r.stderr and "bad key [redacted]" in r.stdout + r.stderr
