"""Python "kernels" for the CPU stand-in of the GPU session (tests/support/fake_gpu.py): correct ones
and deliberately broken ones, each registered under the name a job's KernelBinary gives."""

from __future__ import annotations

import numpy as np

from .fake_gpu import GLOBALS, kernel, view


@kernel("axpy")
def axpy(n, a, x, y):
    view(y, n)[:] = a * view(x, n) + view(y, n)


@kernel("axpy_fast")
def axpy_fast(n, a, x, y):
    yv = view(y, n)
    yv *= 1.0
    yv += a * view(x, n)


_done: dict[int, float] = {}


@kernel("axpy_skips_when_done")
def axpy_skips_when_done(n, a, x, y):
    """Returns without work when its inout buffer already holds what it wrote last time."""
    yv = view(y, n)
    if _done.get(y) == float(yv[-1]):
        return
    yv[:] = a * view(x, n) + yv
    _done[y] = float(yv[-1])


@kernel("axpy_writes_past_end")
def axpy_writes_past_end(n, a, x, y):
    yv = view(y, n + 3)
    yv[:n] = a * view(x, n) + yv[:n]
    yv[n:] = 0.0


@kernel("axpy_writes_before_start")
def axpy_writes_before_start(n, a, x, y):
    axpy(n, a, x, y)
    view(y - 8, 1)[0] = 1.0


@kernel("shift")
def shift(n, a, x, y):
    view(y, n)[:] = view(x, n) * a


@kernel("shift_reads_past_end")
def shift_reads_past_end(n, a, x, y):
    """y[i] = a * x[i], computed as the sum of two halves of a window that runs one past the end."""
    xs = view(x, n + 1)
    view(y, n)[:] = a * xs[:n] + 0.0 * xs[1:]


# ------------------------------------------------------------------ originals under a wrong draft


@kernel("writes_half")
def writes_half(n, a, x, y):
    """Writes only the first half of y: a draft that calls y `out` is wrong (it is inout)."""
    view(y, n)[: n // 2] = a * view(x, n)[: n // 2]


_rng = np.random.default_rng(0)


@kernel("rounding_noise")
def rounding_noise(n, a, x, y):
    """a * x with a relative wobble of up to 3e-5 from run to run, as float atomics give."""
    xs = view(x, n)
    view(y, n)[:] = a * xs * (1.0 + _rng.uniform(-3e-5, 3e-5, n).astype(np.float32))


@kernel("random_out")
def random_out(n, a, x, y):
    view(y, n)[:] = _rng.standard_normal(n).astype(np.float32)


@kernel("scales_input")
def scales_input(n, a, x, y):
    xs = view(x, n)
    xs *= a
    view(y, n)[:] = xs


@kernel("reads_out")
def reads_out(n, a, x, y):
    """y = y / 2 + a * x: reads y, so a draft that calls y `out` is wrong."""
    yv = view(y, n)
    yv *= 0.5
    yv += a * view(x, n)


@kernel("axpy_clamps_large_inputs")
def axpy_clamps_large_inputs(n, a, x, y):
    """Right on the normal(0, 1) noise verification draws; wrong where a real input exceeds 100."""
    xv = np.minimum(view(x, n), 100.0)
    view(y, n)[:] = a * xv + view(y, n)


@kernel("shift_whole_blocks")
def shift_whole_blocks(n, a, x, y):
    """Assumes whole blocks of 256 (a reduction's habit): writes past the end of y whenever n is not
    a multiple (3 elements here, within the guard band the CPU double watches)."""
    over = 3 if n % 256 else 0
    view(y, n + over)[:] = a * np.resize(view(x, n), n + over)


@kernel("copy_range")
def copy_range(begin, end, out):
    """out[i] = begin[i] for every element before `end` (a range given by its two ends)."""
    n = (end - begin) // 4
    view(out, n)[:] = view(begin, n)


@kernel("copy_range_fast")
def copy_range_fast(begin, end, out):
    n = (end - begin) // 4
    np.copyto(view(out, n), view(begin, n))


@kernel("copy_range_end_as_null")
def copy_range_end_as_null(begin, end, out):
    """Takes `end` for null, as a spec passing null would have it: copies nothing."""
    if end == 0:
        view(out, 1)[0] = view(begin, 1)[0]


@kernel("copy_range_one_more")
def copy_range_one_more(begin, end, out):
    """Copies one element past `end`: a read past the buffer."""
    n = (end - begin) // 4
    view(out, n)[:] = view(begin, n + 1)[:n] + 0.0 * view(begin, n + 1)[1:]


@kernel("sum_into_device_variable")
def sum_into_device_variable(n, a, x, y):
    """Reads its inputs and adds their sum to the file's `__device__ float total`, which the
    evaluator made a pointer (`__fsr_dv_total`) and set before the launch."""
    total = view(int.from_bytes(GLOBALS["sum_into_device_variable", "__fsr_dv_total"], "little"), 1)
    total[0] += float(view(x, n).sum() + view(y, n).sum())


@kernel("sum_into_device_variable_fast")
def sum_into_device_variable_fast(n, a, x, y):
    total = view(int.from_bytes(GLOBALS["sum_into_device_variable_fast", "__fsr_dv_total"], "little"), 1)
    total[0] += float(np.add.reduce(np.concatenate([view(x, n), view(y, n)])))


@kernel("sum_overwrites_device_variable")
def sum_overwrites_device_variable(n, a, x, y):
    """Stores its sum instead of adding it: the same on a zeroed total, not on chained launches."""
    total = view(int.from_bytes(GLOBALS["sum_overwrites_device_variable", "__fsr_dv_total"], "little"), 1)
    total[0] = float(view(x, n).sum() + view(y, n).sum())


@kernel("does_nothing")
def does_nothing(n, a, x, y):
    pass


@kernel("sum_kept_where_no_check_looks")
def sum_kept_where_no_check_looks(n, a, x, y):
    """Reads its inputs and keeps their sum where fsr sees nothing (a variable of a header)."""
    _elsewhere["total"] = float(view(x, n).sum() + view(y, n).sum())


_elsewhere: dict[str, float] = {}


@kernel("twice")
def twice(x, y, n):
    """y[i] = 2 x[i]; called in place (y the same pointer as x) by its program."""
    view(y, n)[:] = 2.0 * view(x, n)


@kernel("twice_clears_first")
def twice_clears_first(x, y, n):
    """Right for two buffers apart, wrong in place: it clears y before reading x."""
    yv = view(y, n)
    yv[:] = 0.0
    yv += 2.0 * view(x, n)
