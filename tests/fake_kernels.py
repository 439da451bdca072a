"""Python "kernels" for the CPU stand-in of the GPU session (tests/fake_gpu.py): correct ones
and deliberately broken ones, each registered under the name a job's KernelBinary gives."""

from __future__ import annotations

from .fake_gpu import kernel, view


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
