"""The on-save nvcc check builds a kernel as its @fsr block's `defines` say: a bf16 kernel's
diagnostics and resource use are those of its bf16 build, not of a plain one."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from fsr_lsp.server import check
from fsr_lsp.settings import Settings

SOURCE = """#include <cuda_bf16.h>
#if defined(ENABLE_BF16)
typedef __nv_bfloat16 floatX;
#else
typedef float floatX;
#endif

/* @fsr
bench = { n = 4096 }
grid = "cdiv(n, 128)"
block = 128
defines = ["ENABLE_BF16"]
[args]
x = "inout[n]"
n = "n"
*/
__global__ void twice(floatX* x, int n)
{
#ifndef ENABLE_BF16
    static_assert(sizeof(floatX) == 2, "built without ENABLE_BF16");
#endif
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] + x[i];
}

__global__ void plain(float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] *= 2.0f;
}
"""


def test_kernels_are_grouped_by_their_blocks_defines():
    assert check.define_sets(SOURCE) == {("-DENABLE_BF16",): None}  # one set: the whole file built with it
    assert check.define_sets(SOURCE.replace('defines = ["ENABLE_BF16"]\n', "")) == {(): None}
    two = SOURCE.replace("__global__ void plain", '/* @fsr\ndefines = ["OTHER"]\n*/\n__global__ void plain')
    groups = check.define_sets(two)
    assert {k: set(v) for k, v in groups.items()} == {("-DENABLE_BF16",): {"twice"}, ("-DOTHER",): {"plain"}}


@pytest.mark.skipif(shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(),
                    reason="no nvcc here")
def test_the_check_builds_each_kernel_with_its_defines(tmp_path):
    result = asyncio.run(check.check_source(SOURCE, tmp_path / "k.cu", Settings()))
    assert result.problem == "" and not [m for m in result.messages if m.severity == "error"], result.messages
    assert set(result.resources) >= {"twice", "plain"}
    without = SOURCE.replace('defines = ["ENABLE_BF16"]\n', "")
    plain = asyncio.run(check.check_source(without, tmp_path / "k.cu", Settings()))
    assert any("built without ENABLE_BF16" in m.text for m in plain.messages if m.severity == "error")


@pytest.mark.skipif(shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(),
                    reason="no nvcc here")
def test_kernels_of_two_sets_each_take_their_own_builds_messages_and_resources(tmp_path):
    two = SOURCE.replace("__global__ void plain", '/* @fsr\ndefines = ["OTHER"]\n*/\n__global__ void plain')
    result = asyncio.run(check.check_source(two, tmp_path / "k.cu", Settings()))
    # the OTHER build fails in `twice` (no ENABLE_BF16): that is not twice's build, so not said
    assert not [m for m in result.messages if m.severity == "error"], result.messages
    assert "twice" in result.resources
    broken = two.replace("y[i] *= 2.0f;", "y[i] *= undefined_name;")
    said = asyncio.run(check.check_source(broken, tmp_path / "k.cu", Settings()))
    assert [m.text for m in said.messages if m.severity == "error"] == ['identifier "undefined_name" is undefined']


def test_a_header_line_or_a_template_kernels_ptxas_line_is_placed_by_its_own_build():
    from fsr_lsp.server.check import CheckResult, merged
    from fsr_lsp.server.nvcc_output import Message

    spans = {"twice": (10, 20)}, {"plain": (30, 40)}
    in_header = Message("common.h", 12, 0, "error", "header trouble")  # line 12 of a header, not of twice
    ptxas = Message("", -1, -1, "warning", "spills", kernel="void plain<float>(float*)")
    a = CheckResult(messages=[in_header], resources={})
    b = CheckResult(messages=[in_header, ptxas], resources={})
    out = merged([(("-DA",), spans[0], a), (("-DB",), spans[1], b)], "k.cu")
    assert [m.text for m in out.messages] == ["header trouble", "spills"]  # every build's, and plain's own
    only_a = merged([(("-DA",), spans[0], CheckResult(messages=[ptxas])), (("-DB",), spans[1], CheckResult())], "k.cu")
    assert only_a.messages == []  # plain's ptxas line from another build than plain's: not said


def test_the_on_save_check_compiles_as_the_users_build(tmp_path):
    """A file a compile database names is checked with its flags (its -std instead of fsr's)."""
    from fsr_lsp.server.check import nvcc_command, with_build
    from fsr_lsp.settings import Settings

    settings = with_build(Settings(compiler_flags=("-lineinfo",)), ("-std=c++14", "--use_fast_math", "-DX=1",
                                                                  f"-I{tmp_path}"))
    assert settings.compiler_flags == ("-std=c++14", "--use_fast_math", "-DX=1", "-lineinfo")
    assert str(tmp_path) in settings.include_paths
    command = nvcc_command("nvcc", tmp_path / "k.cu", "sm_90", settings.compiler_flags, [], tmp_path / "o")
    assert "-std=c++17" not in command and "-std=c++14" in command
