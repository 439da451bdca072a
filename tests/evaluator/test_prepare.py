"""The CPU half of an evaluation, end to end with nvcc."""

import pytest

from fsr_lsp.evaluator import EvalOptions, prepare

from ..conftest import EXAMPLES

pytestmark = pytest.mark.nvcc
SAXPY = (EXAMPLES / "saxpy.cu").read_text()
GOOD = """__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


def options(cache_dir):
    return EvalOptions(cache_dir=cache_dir, compiler="nvcc", base_seed=5)


def test_a_job_is_built_for_a_good_candidate(cache_dir):
    p = prepare(SAXPY, "saxpy", GOOD, "sm_90a", options(cache_dir))
    assert p.job is not None and p.job.candidate is not None
    assert p.job.base_seed == 5 and [s.label for s in p.job.sizes] == ["n=1", "n=1000", "n=65537", "n=16777216"]
    assert [c.name for c in p.result.checks] == ["compile original", "candidate rules", "compile candidate"]


def test_fresh_seeds_by_default(cache_dir):
    o = EvalOptions(cache_dir=cache_dir, compiler="nvcc")
    seeds = {prepare(SAXPY, "saxpy", None, "sm_90a", o).job.base_seed for _ in range(4)}
    assert len(seeds) > 1


def test_verdicts_that_need_no_gpu(cache_dir):
    o = options(cache_dir)
    missing = prepare(SAXPY, "nope", None, "sm_90a", o).result
    assert missing.status == "spec_error" and "kernels in the file: saxpy" in missing.message
    broken = prepare(SAXPY, "saxpy", GOOD.replace("a * x[i]", "a * q[i]"), "sm_90a", o).result
    assert broken.status == "compile_error" and 'identifier "q" is undefined' in broken.message
    assert broken.checks[-1].name == "compile candidate" and broken.checks[-1].status == "fail"
    renamed = prepare(SAXPY, "saxpy", GOOD.replace("saxpy", "fast_saxpy"), "sm_90a", o).result
    assert renamed.status == "rejected"
    bad_spec = prepare(SAXPY.replace("block = 256", "block = 4096"), "saxpy", None, "sm_90a", o).result
    assert bad_spec.status == "spec_error" and "line 8" in bad_spec.message and "at most 1024" in bad_spec.message
    bad_original = prepare(SAXPY.replace("y[i] =", "y[i] = w +"), "saxpy", None, "sm_90a", o).result
    assert bad_original.status == "spec_error" and "does not compile" in bad_original.message


def test_a_block_that_attaches_to_no_kernel_is_said(cache_dir):
    spec = SAXPY[SAXPY.index("/* @fsr"):SAXPY.index("*/") + 2]
    separated = SAXPY.replace(spec, spec + "\nfloat host_scale = 2.0f;\n")
    r = prepare(separated, "saxpy", None, "sm_90a", options(cache_dir))
    # saxpy's signature is unambiguous, so a spec is inferred; the user hears why theirs was not used
    assert r.job is not None
    assert any("attaches to no kernel" in w and "host code `float host_scale = 2.0f;`" in w for w in r.result.warnings)
    no_inference = separated.replace("int n,", "int n, int m,").replace('n = "n"', 'n = "n"\nm = "n"')
    r = prepare(no_inference, "saxpy", None, "sm_90a", options(cache_dir))
    assert r.result.status == "spec_error" and "attaches to no kernel" in r.result.message


def test_the_originals_own_code_is_unchanged_and_not_timed(cache_dir):
    definition = SAXPY[SAXPY.index("__global__"):]
    same = "// a comment the model added\n" + definition.replace("    int i", "  int   i").replace(";\n", "; /* ok */\n", 1)
    r = prepare(SAXPY, "saxpy", same, "sm_90a", options(cache_dir))
    assert r.job is None and r.result.status == "unchanged" and "not timed" in r.result.message
    other = definition.replace("a * x[i] + y[i]", "y[i] + a * x[i]")
    assert prepare(SAXPY, "saxpy", other, "sm_90a", options(cache_dir)).job is not None
    spec = SAXPY[SAXPY.index("/* @fsr"):SAXPY.index("*/") + 2]
    relaunched = spec.replace("block = 256", "block = 128").replace("cdiv(n, 256)", "cdiv(n, 128)") + "\n" + definition
    assert prepare(SAXPY, "saxpy", relaunched, "sm_90a", options(cache_dir)).job is not None
    from dataclasses import replace
    timed_anyway = replace(options(cache_dir), skip_unchanged=False)
    assert prepare(SAXPY, "saxpy", same, "sm_90a", timed_anyway).job is not None
