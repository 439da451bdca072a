import subprocess
import sys

from fsr_lsp.search.report import render

from ..support.search_helpers import EXAMPLES


def test_report_plots_times_per_round(tmp_path):
    from fsr_lsp.search import SearchConfig, run_search
    from ..support.scripted_search import BuiltinBench
    from fsr_lsp.search.generators.tuner.generator import BuiltinGenerator

    outcome = run_search((EXAMPLES / "saxpy.cu").read_text(), "saxpy.cu", "saxpy",
                         SearchConfig(rounds=2, candidates=3, sanitize_winner=False), BuiltinBench(), BuiltinGenerator())
    page = render(outcome, "saxpy")
    assert page.count("<circle") == sum(t.verified for t in outcome.tried) and "original 2 ms" in page
    assert page.count("<tr class=") == len(outcome.tried)


def test_optimize_without_gpu_support_is_one_line():
    r = subprocess.run([sys.executable, "-m", "fsr_lsp.cli.main", "optimize", str(EXAMPLES / "saxpy.cu"), "--kernel",
                        "saxpy"], capture_output=True, text=True, timeout=60)
    try:
        import pycuda  # noqa: F401
        import torch  # noqa: F401
    except ImportError:
        assert r.returncode == 3 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    r = subprocess.run([sys.executable, "-m", "fsr_lsp.cli.main", "optimize", str(EXAMPLES / "saxpy.cu"), "--kernel",
                        "nope"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "no kernel named nope" in r.stderr


def test_report_shows_the_winners_diff_the_best_so_far_and_failures_by_reason(monkeypatch, without_structural_rewrites):
    from fsr_lsp.search import LLMConfig, SearchConfig, run_search
    from fsr_lsp.search.generators.llm import LLMGenerator
    from fsr_lsp.search.report import best_so_far

    from ..support.fake_llm import FakeLLM
    from ..support.scripted_search import SAXPY, kernel

    monkeypatch.setenv("FSR_LOOP_KEY", "sk-report")
    steps = [kernel("verified 1.2", "a"), kernel("wrong", "b"), kernel("wrong", "c"), kernel("compile_error", "d"),
             kernel("verified 2.0", "e"), kernel("wrong", "f")]
    with FakeLLM(steps) as llm:
        cfg = SearchConfig(rounds=2, candidates=3, fix_attempts=0, sanitize_winner=False,
                           llm=LLMConfig(base_url=llm.base_url, model="m", api_key_env="FSR_LOOP_KEY", max_retries=1))
        outcome = run_search(SAXPY, "saxpy.cu", "saxpy", cfg, ScriptedBenchForReport(), LLMGenerator(cfg.llm, parallel=1))
    page = render(outcome, "saxpy")
    assert "What the winner changed" in page
    assert "<span class='add'>+    int i = blockIdx.x * blockDim.x + threadIdx.x;  // e</span>" in page
    assert "<span class='del'>-    int i = blockIdx.x * blockDim.x + threadIdx.x;</span>" in page
    assert best_so_far(outcome, 2.0) == [(0, 2.0 / 1.2), (1, 1.0)]
    assert "class='best-so-far'" in page
    assert "3 × wrong: matches original" in page  # b, c and f share a reason
    assert "1 × compile error: kernel.cu(N): error: identifier &quot;q&quot; is undefined" in page


class ScriptedBenchForReport:
    def __new__(cls):
        from fsr_lsp.evaluator.records import Check

        from ..support.scripted_bench import ScriptedBench

        class Bench(ScriptedBench):
            def _verdict(self, source):
                r = super()._verdict(source)
                if r.status == "wrong":
                    r.checks.append(Check("matches original", "fail", r.mismatch.describe(), "y"))
                return r

        return Bench()
