"""Device printf: kept out of the worker's stdout (the LSP channel, the user's terminal), and
compared: a rewrite that drops a check's printf does less than the original (gpu/printed.py).
On the CPU test double (tests/support/fake_gpu.py); the GPU counterpart is in tests/gpu/test_printf_gpu.py."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from fsr_lsp.evaluator.gpu.printed import Printed, printed_difference

torch = pytest.importorskip("torch")

from ..support.fake_gpu import device_printf, kernel, view  # noqa: E402
from ..support.cpu_jobs import AXPY, failed, run, states  # noqa: E402

_runs = {"count": 0}


def _axpy(n, a, x, y):
    view(y, n)[:] = a * view(x, n) + view(y, n)


def _errors(n, x) -> list[str]:
    return [f"ERROR at index = {i}, value {v:.3f}\n" for i, v in enumerate(view(x, n)) if v > 1.5]


@kernel("checks_axpy")
def checks_axpy(n, a, x, y):
    _axpy(n, a, x, y)
    device_printf("".join(_errors(n, x)))


@kernel("checks_axpy_silent")
def checks_axpy_silent(n, a, x, y):
    _axpy(n, a, x, y)


@kernel("checks_axpy_other_order")
def checks_axpy_other_order(n, a, x, y):
    _axpy(n, a, x, y)
    device_printf("".join(reversed(_errors(n, x))))


@kernel("checks_axpy_one_more")
def checks_axpy_one_more(n, a, x, y):
    _axpy(n, a, x, y)
    device_printf("".join(_errors(n, x)) + "done\n")


@kernel("prints_a_counter")
def prints_a_counter(n, a, x, y):
    """Prints something different every run (as a pointer's address or the clock would)."""
    _axpy(n, a, x, y)
    _runs["count"] += 1
    device_printf(f"run {_runs['count']}\n" * 3)


def test_a_rewrite_that_drops_the_originals_printf_is_wrong():
    result = run(AXPY, "axpy", "checks_axpy", "checks_axpy_silent")
    assert result.status == "wrong", result.message
    assert failed(result).name == "prints as the original"
    assert "does not print" in result.message and "ERROR at index" in result.message


def test_the_same_lines_in_another_order_are_the_same_printing():
    result = run(AXPY, "axpy", "checks_axpy", "checks_axpy_other_order")
    assert result.status == "verified", result.message
    assert states(result)["prints as the original"] == "pass"


def test_a_line_the_original_does_not_print_is_wrong():
    result = run(AXPY, "axpy", "checks_axpy", "checks_axpy_one_more")
    assert result.status == "wrong", result.message
    assert "prints 1 line(s) the original does not" in result.message and "'done'" in result.message


def test_kernels_that_print_nothing_have_no_printing_check():
    result = run(AXPY, "axpy", "axpy", "axpy_fast")
    assert result.status == "verified", result.message
    assert "prints as the original" not in states(result)


def test_where_the_originals_own_runs_print_differently_only_the_amount_is_judged():
    assert run(AXPY, "axpy", "prints_a_counter", "prints_a_counter").status == "verified"
    result = run(AXPY, "axpy", "prints_a_counter", "checks_axpy_silent")
    assert result.status == "wrong", result.message
    assert "only the amount is compared" in result.message


def test_printed_difference_counts_lines_not_their_order():
    a = Printed.of("x\ny\ny\n")
    assert printed_difference(Printed.of("y\nx\ny\n"), a, a) is None
    assert "does not print 1" in printed_difference(Printed.of("y\nx\n"), a, a)
    assert printed_difference(Printed.of(""), Printed.of(""), Printed.of("")) is None


WORKER_STDOUT = textwrap.dedent("""
    import multiprocessing, os, sys
    from fsr_lsp.evaluator.worker.worker import worker_main
    parent, child = multiprocessing.Pipe()
    worker_main(child, 0)  # no GPU here: the session is unavailable, after stdout was taken
    print(parent.recv()[0], file=sys.stderr)
    os.write(1, b"a kernel printed this\\n")
    print("so did Python")
""")


def test_the_worker_keeps_what_kernels_print_out_of_its_parents_stdout():
    """The worker's fd 1 is the server's LSP channel: printing there would corrupt it."""
    done = subprocess.run([sys.executable, "-c", WORKER_STDOUT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "unavailable" in done.stderr
    assert done.stdout == ""


TAKE = textwrap.dedent("""
    import ctypes, json, os, sys
    from fsr_lsp.evaluator.gpu.printed import PrintedOutput
    printed = PrintedOutput.redirect_stdout()
    ctypes.CDLL(None).printf(b"through C's buffered stdout %d\\n", 7)
    os.write(1, b"straight to fd 1\\n")
    first = printed.take()
    ctypes.CDLL(None).printf(b"after emptying\\n")
    second = printed.take()
    print(json.dumps([first, second, printed.take()]), file=sys.stderr)
""")


def test_take_reads_what_c_and_fd_1_printed_then_starts_again_empty():
    done = subprocess.run([sys.executable, "-c", TAKE], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    first, second, third = json.loads(done.stderr.strip().splitlines()[-1])
    assert "through C's buffered stdout 7" in first and "straight to fd 1" in first
    assert second == "after emptying\n" and third == ""


def test_the_view_helper_is_what_the_kernels_here_read():  # guards the fixtures above, not fsr
    x = np.arange(4, dtype=np.float32)
    assert len(_errors(4, x.ctypes.data)) == 2



_written: dict[int, float] = {}


@kernel("checks_axpy_first_launch_only")
def checks_axpy_first_launch_only(n, a, x, y):
    """Prints as the original, except on a buffer it wrote last launch (a chained launch)."""
    again = _written.get(y) == float(view(y, n)[-1])
    _axpy(n, a, x, y)
    _written[y] = float(view(y, n)[-1])
    if not again:
        device_printf("".join(_errors(n, x)))


def test_printing_is_compared_on_every_chained_launch():
    result = run(AXPY, "axpy", "checks_axpy", "checks_axpy_first_launch_only")
    assert result.status == "wrong", result.message
    assert failed(result).name == "prints as the original"
