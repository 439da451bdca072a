"""What issue 61's sweeps damage: every store and store folder of `.fsr/`, four ways, and a
kernel with a spec to work on (the `fsr` commands' sweep, tests/package/test_damaged_sweep.py, and the
server's, tests/lsp/test_damaged_workspace.py)."""

from __future__ import annotations

KERNEL = """/* @fsr
bench = { n = 1000 }
grid = "cdiv(n, 256)"
block = 256
[args]
n = "n"
x = "inout[n]"
*/
__global__ void k(int n, float* x) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f; }
"""
STORES = ("history.sqlite", "proofs.sqlite", "timings.sqlite", "captures", "confirms", "compile_commands.json")
DAMAGE = {
    "garbage": lambda p: p.write_text("garbage\n" * 50),
    "a folder": lambda p: (p.mkdir(), (p / "junk").write_text("x")),
    "empty": lambda p: p.write_text(""),
    "read-only garbage": lambda p: (p.write_text("garbage"), p.chmod(0o444)),
}
