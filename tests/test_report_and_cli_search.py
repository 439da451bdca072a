import subprocess
import sys

from fsr_lsp.search.report import render

from .search_helpers import EXAMPLES


def test_report_plots_times_per_round(tmp_path):
    from fsr_lsp.search import SearchConfig, run_search
    from .test_search_loop import BuiltinBench
    from fsr_lsp.search.generators.builtin import BuiltinGenerator

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
