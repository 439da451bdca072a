"""Element types as the build compiled them (issue 44 item 2): a parameter typed through a
typedef whose `#if` a `-D` flag chooses is filled, compared and searched as that type, whether
the flag is the user's (fsr.compiler.flags) or only the run's build had it (the captured
kernel's symbol says `__nv_bfloat16`): the spec then carries the `-D` its build needed, into
the proof, the search and `fsr spec --check` alike. Knowing the compiled type and refusing it
is never the answer."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from fsr_lsp.drafting.workspace import LaunchIndex
from fsr_lsp.evaluator.job.prepare import with_included_aliases
from fsr_lsp.kernels import discover
from fsr_lsp.settings import Settings
from fsr_lsp.source import SourceText
from fsr_lsp.workflows.optimize import KernelJob, plan_spec

from ..support.captures import i32, ptr, write_capture
from ..support.doubles import command

ROOT = Path(__file__).resolve().parent.parent.parent
COMMON = """#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#if defined(ENABLE_BF16)
typedef __nv_bfloat16 floatX;
#elif defined(ENABLE_FP16)
typedef half floatX;
#else
typedef float floatX;
#endif
"""
GELU = """#include "common.h"

__global__ void gelu_forward(floatX* out, const floatX* inp, int N)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        float x = (float)inp[i];
        out[i] = (floatX)(0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x))));
    }
}
"""
MAIN = """#include "gelu.cu"
int main() {
    int N = 8192;
    floatX *out, *inp;
    cudaMalloc(&out, N * sizeof(floatX));
    cudaMalloc(&inp, N * sizeof(floatX));
    gelu_forward<<<(N + 127) / 128, 128>>>(out, inp, N);
}
"""


def project(root: Path) -> Path:
    (root / ".git").mkdir()
    (root / "common.h").write_text(COMMON)
    (root / "gelu.cu").write_text(GELU)
    return root / "gelu.cu"


def gelu_launch(n: int, element: str, size: int) -> dict:
    return {"id": 0, "kernel": "_Z12gelu_forwardP13__nv_bfloat16PKS_i",
            "name": f"gelu_forward({element}*, {element} const*, int)", "base": "gelu_forward",
            "grid": [(n + 127) // 128, 1, 1], "block": [128, 1, 1], "smem": 0,
            "params": [ptr(size * n), ptr(size * n), {"offset": 16, "size": 4, "hex": i32(n)}]}


def plan(root: Path, file: Path, settings: Settings = Settings()):
    text = file.read_text()
    (kernel,) = discover(SourceText(text)).kernels
    return plan_spec(LaunchIndex(root, first_wait=None), file, text, kernel, settings)


def test_a_capture_whose_symbol_says_bf16_gives_a_bf16_spec_with_the_flag_its_build_had(tmp_path):
    file = project(tmp_path)
    write_capture(tmp_path, [gelu_launch(4096, "__nv_bfloat16", 2)])
    p = plan(tmp_path, file)
    assert p.spec.origin == "captured" and p.draft is not None, p.spec.problems
    assert p.spec.flags == ("-DENABLE_BF16",)
    assert any("compiled with -DENABLE_BF16" in why and "`out` as bfloat16" in why for why in p.spec.problems)
    assert "N = 4096" in p.draft and 'out = "out[N]"' in p.draft  # 8192 bytes of bf16: 4096 elements, not 2048 floats
    options = KernelJob(file.read_text(), file, "gelu_forward", tmp_path, Settings(), p).eval_options()
    assert "-DENABLE_BF16" in options.flags
    # the evaluator types the kernel as that build compiles it
    (kernel,) = discover(SourceText(GELU)).kernels
    typed = with_included_aliases(kernel, GELU, options.include_dirs, options.flags)
    assert [p.dtype for p in typed.params] == ["bfloat16", "bfloat16", "int32"]


def test_a_half_symbol_finds_the_other_branch(tmp_path):
    file = project(tmp_path)
    write_capture(tmp_path, [gelu_launch(4096, "__half", 2)])
    p = plan(tmp_path, file)
    assert p.spec.origin == "captured" and p.spec.flags == ("-DENABLE_FP16",), p.spec.problems


def test_a_float_symbol_needs_no_flag_and_says_none(tmp_path):
    file = project(tmp_path)
    write_capture(tmp_path, [gelu_launch(4096, "float", 4)])
    p = plan(tmp_path, file)
    assert p.spec.origin == "captured" and p.spec.flags == ()
    assert not any("compiled with" in why for why in p.spec.problems)


def test_the_users_own_flag_types_the_static_draft(tmp_path):
    file = project(tmp_path)
    (tmp_path / "main.cu").write_text(MAIN)
    p = plan(tmp_path, file, Settings(compiler_flags=("-DENABLE_FP16",)))
    assert p.spec.origin == "drafted" and p.spec.flags == ()  # the flag is the user's: options carry it already
    (kernel,) = discover(SourceText(GELU)).kernels
    typed = with_included_aliases(kernel, GELU, (str(tmp_path),), ("-O3", "-DENABLE_FP16"))
    assert [p.dtype for p in typed.params] == ["float16", "float16", "int32"]
    assert [p.dtype for p in with_included_aliases(kernel, GELU, (str(tmp_path),))
            .params] == ["float32", "float32", "int32"]


def test_fsr_spec_and_fsr_optimize_carry_the_flag(tmp_path):
    file = project(tmp_path)
    write_capture(tmp_path, [gelu_launch(4096, "__nv_bfloat16", 2)])
    env = {**os.environ, "FSR_LSP_BENCH": "tests.support.scripted_bench:ScriptedBench",
           "FSR_LSP_PROVER": "tests.support.scripted_prover:prove", "PYTHONPATH": str(ROOT)}
    listed = subprocess.run([*command("fsr"), "spec", str(file), "--json"],
                            capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert listed.returncode == 0, listed.stderr
    assert '"flags": [\n      "-DENABLE_BF16"\n    ]' in listed.stdout
    r = subprocess.run([*command("fsr"), "optimize", str(file), "-k", "gelu_forward",
                        "--rounds", "1", "--candidates", "1", "--no-sanitize", "--workspace", str(tmp_path)],
                       capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "took one from the launch captured in a run" in out, out
    assert "not from the capture" not in out and "cannot be searched" not in out


def test_the_editors_drafts_resolve_with_the_settings_flags_as_optimize_does(tmp_path):
    """The hover and the quick fix show what Optimize will search: with the user's own -D in
    fsr.compiler.flags the captured bf16 kernel needs no flag of the spec's (and says none)."""
    from fsr_lsp.server.features.drafts import Drafts

    file = project(tmp_path)
    write_capture(tmp_path, [gelu_launch(4096, "__nv_bfloat16", 2)])
    (kernel,) = discover(SourceText(GELU)).kernels
    own = Drafts().spec(tmp_path, file, GELU, kernel, {}, flags=("-DENABLE_BF16",))
    assert own.origin == "captured" and own.flags == () and not any("compiled with" in p for p in own.problems)
    optimized = plan(tmp_path, file, Settings(compiler_flags=("-DENABLE_BF16",)))
    assert optimized.spec.flags == own.flags and optimized.draft == own.spec
    bare = Drafts().spec(tmp_path, file, GELU, kernel, {})
    assert bare.flags == ("-DENABLE_BF16",) and bare.spec.replace('defines = ["ENABLE_BF16"]\n', "") == own.spec
    assert 'defines = ["ENABLE_BF16"]' in bare.spec  # the block keeps what only the run's build had


def test_a_placed_block_keeps_its_defines_when_the_capture_is_gone(tmp_path):
    """The captured draft, placed in the file, types and compiles the kernel as bf16 with no capture
    left and no flag in the settings: the block's `defines` are the build's -D."""
    from unittest import mock

    from fsr_lsp.evaluator.job import prepare as preparing

    file = project(tmp_path)
    write_capture(tmp_path, [gelu_launch(4096, "__nv_bfloat16", 2)])
    drafted = plan(tmp_path, file).spec
    assert 'defines = ["ENABLE_BF16"]' in drafted.spec
    placed = drafted.spec + "\n" + GELU
    file.write_text(placed)
    shutil.rmtree(tmp_path / ".fsr")
    again = plan(tmp_path, file).spec
    assert again.origin == "attached" and again.flags == ("-DENABLE_BF16",), again.problems
    seen = []

    def compile_kernel(source, ref, options):
        seen.append(options.flags)
        raise preparing.CompilerMissing("stop here: the flags are what is checked")

    with mock.patch.object(preparing, "compile_kernel", compile_kernel):
        preparing.prepare(placed, "gelu_forward", None, "sm_90", preparing.EvalOptions(include_dirs=(str(tmp_path),)))
    assert seen and "-DENABLE_BF16" in seen[0]
    (kernel,) = discover(SourceText(placed)).kernels
    from fsr_lsp.specs.defines import with_defines

    typed = with_included_aliases(kernel, placed, (str(tmp_path),), with_defines((), kernel))
    assert [p.dtype for p in typed.params][:2] == ["bfloat16", "bfloat16"]


def test_defines_in_a_block_are_macro_names_only():
    from fsr_lsp.specs import parse_spec

    block = """/* @fsr
bench = { n = 16 }
grid = "cdiv(n, 64)"
block = 64
defines = ["ENABLE_BF16", "-Xcompiler=-fplugin=evil.so"]
[args]
n = "n"
x = "inout[n]"
*/
__global__ void k(int n, float* x) { }
"""
    src = SourceText(block)
    (kernel,) = discover(src).kernels
    result = parse_spec(src, kernel)
    assert result.spec is None and any("defines must be a list of macros" in p.message for p in result.problems)
    from fsr_lsp.specs.defines import block_defines

    assert block_defines(kernel) == ()
