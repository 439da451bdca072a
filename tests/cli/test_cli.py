"""The `fsr` command line where there is no GPU: clear one-line failures, never a traceback."""


from ..conftest import EXAMPLES
from ..support.doubles import fsr




def test_eval_without_gpu_support_is_one_line_and_non_zero():
    r = fsr("eval", str(EXAMPLES / "saxpy.cu"), "--kernel", "saxpy")
    try:
        import pycuda  # noqa: F401
        import torch  # noqa: F401
    except ImportError:
        assert r.returncode == 3
        assert r.stdout == ""
        assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("fsr: ")
        assert "Traceback" not in r.stderr
    else:
        assert r.returncode in (0, 3)
        assert "Traceback" not in r.stderr


def test_unreadable_file():
    r = fsr("eval", "/nonexistent/x.cu", "--kernel", "k")
    assert r.returncode == 2 and "cannot read /nonexistent/x.cu" in r.stderr and "Traceback" not in r.stderr


def test_help_lists_eval():
    r = fsr("--help")
    assert r.returncode == 0 and "eval" in r.stdout
    r = fsr("eval", "--help")
    assert "--candidate" in r.stdout and "--json" in r.stdout
