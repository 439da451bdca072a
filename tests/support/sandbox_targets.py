"""Functions the sandbox tests run in a limited child process (imported there by name)."""

import time


def add(a, b):
    return a + b


def grow(megabytes):
    blocks = []
    for _ in range(megabytes):
        blocks.append(bytearray(1 << 20))
    return len(blocks)


def spin(seconds):
    end = time.monotonic() + seconds
    x = 0
    while time.monotonic() < end:
        x += 1
    return x


def hang():
    time.sleep(3600)


def fail():
    raise ValueError("broken")
