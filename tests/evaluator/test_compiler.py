"""nvcc compilation, entry lookup, errors and the cubin cache (nvcc needs no GPU)."""

from pathlib import Path

import pytest

from fsr_lsp.evaluator.compile.compiler import CompileOptions, KernelRef, compile_kernel

from ..conftest import EXAMPLES, read

pytestmark = pytest.mark.nvcc
SAXPY = (EXAMPLES / "saxpy.cu").read_text()


def opts(cache_dir, **kw):
    return CompileOptions(arch="sm_90a", cache_dir=cache_dir, compiler="nvcc", **kw)


def test_compiles_finds_the_entry_and_reads_resources(cache_dir):
    r = compile_kernel(SAXPY, KernelRef("saxpy"), opts(cache_dir))
    assert r.ok and r.compiler == "nvcc" and not r.cached
    assert r.binary.entry == "_Z5saxpyifPKfPf" and r.binary.cubin[:4] == b"\x7fELF"
    assert r.resources is not None and 4 <= r.resources.registers <= 64 and r.resources.spill_stores == 0


def test_cache_hits_on_the_same_input_and_misses_on_any_change(cache_dir):
    first = compile_kernel(SAXPY, KernelRef("saxpy"), opts(cache_dir))
    again = compile_kernel(SAXPY, KernelRef("saxpy"), opts(cache_dir))
    assert again.cached and again.binary.cubin == first.binary.cubin and again.resources == first.resources
    flags = compile_kernel(SAXPY, KernelRef("saxpy"), opts(cache_dir, flags=("-use_fast_math",)))
    assert not flags.cached
    edited = compile_kernel(SAXPY.replace("a * x[i]", "x[i] * a"), KernelRef("saxpy"), opts(cache_dir))
    assert not edited.cached


def test_the_same_compile_asked_twice_at_once_runs_the_compiler_once(cache_dir, monkeypatch):
    """A search compiles its first candidates ahead while the original is measured; the real
    request for one of them may come mid-compile: it waits for that compile and loads its cubin."""
    import threading

    from fsr_lsp.evaluator.compile import compiler

    runs = []
    real = compiler._compile_nvcc
    monkeypatch.setattr(compiler, "_compile_nvcc", lambda *a: runs.append(1) or real(*a))
    results = []
    threads = [threading.Thread(target=lambda: results.append(compile_kernel(SAXPY, KernelRef("saxpy"), opts(cache_dir))))
               for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(runs) == 1 and len(results) == 3 and all(r.ok for r in results)
    assert sorted(r.cached for r in results) == [False, True, True]


def test_a_changed_header_misses_the_cache(cache_dir, tmp_path):
    header = tmp_path / "scale.cuh"
    header.write_text("#define SCALE 2.0f\n")
    src = '#include "scale.cuh"\n__global__ void k(float* x) { x[threadIdx.x] *= SCALE; }\n'
    o = opts(cache_dir, include_dirs=(str(tmp_path),))
    assert compile_kernel(src, KernelRef("k"), o).ok
    assert compile_kernel(src, KernelRef("k"), o).cached
    header.write_text("#define SCALE 3.0f\n")
    assert not compile_kernel(src, KernelRef("k"), o).cached


def test_errors_come_back_with_the_compilers_text(cache_dir):
    r = compile_kernel(SAXPY.replace("y[i] =", "y[i] = zz +"), KernelRef("saxpy"), opts(cache_dir))
    assert not r.ok and r.binary is None
    assert 'kernel.cu(18): error: identifier "zz" is undefined' in r.log
    assert "/tmp" not in r.log


def test_templates_are_instantiated_from_the_spec_arguments(cache_dir):
    text = read("several.cu")
    ref = KernelRef("transpose", "float, 32", ("int", "int", "const float *", "float *"))
    r = compile_kernel(text, ref, opts(cache_dir))
    assert r.ok, r.log
    assert r.binary.entry.startswith("_Z9transposeIfLi32EE")
    assert r.resources.shared_bytes == 32 * 33 * 4


RUNTIME_CHOSEN = """
template <unsigned int BS>
__global__ void reduce(int* in, int* out, unsigned int n) { if (threadIdx.x < BS && threadIdx.x < n) out[0] = in[0]; }

void launch(int* in, int* out, unsigned int n, int bs) {
    if (bs == 1024) reduce<1024><<<1, 1024>>>(in, out, n);
    else if (bs == 512) reduce<512><<<1, 512>>>(in, out, n);
    else reduce<128><<<1, 128>>>(in, out, n);
}
"""


def test_a_template_the_host_code_instantiates_several_times_is_found_by_its_arguments(cache_dir):
    ref = KernelRef("reduce", "128", ("int *", "int *", "unsigned int"))
    r = compile_kernel(RUNTIME_CHOSEN, ref, opts(cache_dir))
    assert r.ok, r.log
    assert r.binary.entry.startswith("_Z6reduceILj128EE")
    other = compile_kernel(RUNTIME_CHOSEN, KernelRef("reduce", "256", ref.param_types), opts(cache_dir))
    assert other.ok and other.binary.entry.startswith("_Z6reduceILj256EE")  # added by the explicit instantiation


def test_extern_c_and_missing_kernels(cache_dir):
    text = read("several.cu")
    assert compile_kernel(text, KernelRef("c_linkage"), opts(cache_dir)).binary.entry == "c_linkage"
    missing = compile_kernel(text, KernelRef("nope"), opts(cache_dir))
    assert not missing.ok and "kernel nope not found" in missing.log


def test_auto_falls_back_to_nvcc_without_nvrtc(cache_dir, monkeypatch):
    monkeypatch.setenv("FSR_NO_NVRTC", "1")
    r = compile_kernel(SAXPY, KernelRef("saxpy"), CompileOptions(arch="sm_90a", cache_dir=cache_dir))
    assert r.ok and r.compiler == "nvcc"


def test_a_file_whose_kernels_launch_kernels_compiles_as_relocatable_device_code(cache_dir):
    """Every kernel of it, not only the one that launches: the file does not compile without."""
    text = (Path(__file__).parent.parent / "gpu" / "kernels" / "launches_kernels.cu").read_text()
    for name in ("recursive_scale", "plain_scale"):
        r = compile_kernel(text, KernelRef(name), opts(cache_dir))
        assert r.ok, r.log
        assert "-rdc=true" in r.binary.flags and r.compiler == "nvcc"
    plain = compile_kernel(SAXPY, KernelRef("saxpy"), opts(cache_dir))
    assert "-rdc=true" not in plain.binary.flags


FUNCTION_ARGUMENT = """
__device__ float times4(const float* a, int i) { return a[i] * 4.0f; }
__device__ float times2(const float* a, int i) { return a[i] * 2.0f; }
typedef float (*Op)(const float*, int);
template <Op op>
__global__ void apply(float* out, const float* a, int n) { int i = threadIdx.x; if (i < n) out[i] = op(a, i); }

void launch(float* out, const float* a, int n, bool two) {
    if (two) apply<times2><<<1, 32>>>(out, a, n);
    else apply<times4><<<1, 32>>>(out, a, n);
}
"""


def test_a_template_over_a_functions_address_is_found_from_the_captured_symbol(cache_dir):
    """A captured symbol demangles a function's address as `&(times4(float const*, int))`:
    that is the instantiation, among the ones the host code makes, that is compiled and found."""
    from fsr_lsp.capture import CapturedLaunch

    launch = CapturedLaunch("_Z5applyIXadL_Z6times4PKfiEEEvPfS1_i",
                            "void apply<&(times4(float const*, int))>(float*, float const*, int)", "apply",
                            (1, 1, 1), (32, 1, 1), 0, ())
    assert launch.template_args == "&times4"
    r = compile_kernel(FUNCTION_ARGUMENT, KernelRef("apply", launch.template_args, ("float *", "const float *", "int")),
                       opts(cache_dir))
    assert r.ok, r.log
    assert r.binary.entry == "_Z5applyIXadL_Z6times4PKfiEEEvPfS1_i"
