"""A kernel whose results are kept in the file's `__device__`/`__managed__` variables: each is
compiled as a pointer (every use through it, line for line) that the evaluator points at a
buffer of its own, compared as any output (tests/evaluator/test_verify_cpu.py shows the comparison on the
CPU test double). Where that cannot be done safely, fsr gives no spec and refuses a spec written
for it, naming the variable and why: a rewrite that skipped the write would otherwise pass."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fsr_lsp.drafting.resolver import kernel_specs
from fsr_lsp.evaluator.compile.compiler import find_nvcc
from fsr_lsp.evaluator.job.prepare import EvalOptions, prepare
from fsr_lsp.kernels import find_kernel
from fsr_lsp.kernels.device_variables import device_variables, not_redirectable, phrase, redirected, written_variables
from fsr_lsp.source import SourceText

FILE = """#include <cooperative_groups.h>
__device__ float dResult;
__managed__ unsigned int mCount = 0;
static __device__ int hist[256][2];
__device__ float bias;
__constant__ float table[4];
__device__ const int limit = 3;
namespace inner { __device__ float total; }
__device__ float helper(float x) { return x; }

__global__ void atomic_sum(const float* x, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) atomicAdd(&dResult, x[i]); }
__global__ void counts(const int* x, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) { hist[x[i] & 255][0] += 1; mCount++; } }
__device__ void add_total(float v) { inner::total = v; }
__global__ void via_helper(const float* x, float* y) { add_total(x[0]); y[0] = x[0]; }
__global__ void reads_only(const float* x, float* y, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i] * table[0] + bias + limit; }
__global__ void compares(const float* x, float* y) { y[0] = (bias == x[0]) ? 1.f : 0.f; /* bias = 0; */ }
__global__ void reads_what_others_write(const float* x, float* y) { y[0] = dResult + x[0]; }
__device__ float4 acc4;
__global__ void member_write(const float* x) { acc4.x += x[0]; }
#define ADD(v) \\
    atomicAdd(&macro_total, v)
__device__ float macro_total;
__global__ void through_macro(const float* x) { ADD(x[0]); }
__device__ void bump(int* h, int b) { h[b] += 1; }
__device__ int bins[16];
__global__ void passed_on(const int* x) { bump(bins, x[0] & 15); }
"""


def specced(kernel: str, spec: str) -> str:
    """FILE with an `@fsr` block of `spec`'s lines right above `kernel`."""
    return FILE.replace(f"__global__ void {kernel}", f"/* @fsr\n{spec}\n*/\n__global__ void {kernel}")


def test_the_files_writable_device_variables_are_named():
    assert [(v.name, v.type_text, v.dims, v.at_file_scope) for v in device_variables(FILE)] == [
        ("dResult", "float", (), True), ("mCount", "unsigned int", (), True), ("hist", "int", ("256", "2"), True),
        ("bias", "float", (), True), ("total", "float", (), False), ("acc4", "float4", (), True),
        ("macro_total", "float", (), True), ("bins", "int", ("16",), True)]


@pytest.mark.parametrize("kernel, written", [
    ("atomic_sum", "`dResult`"),
    ("counts", "`mCount` and `hist`"),
    ("via_helper", "`total`"),
    ("reads_only", ""),
    ("compares", ""),  # `==` and a comment are no writes
    # read here, its address taken elsewhere: what this kernel reads is another's result, compared too
    ("reads_what_others_write", "`dResult`"),
    ("member_write", "`acc4`"),
    ("through_macro", "`macro_total`"),  # a macro's body, over continued lines
    ("passed_on", "`bins`"),  # an array handed to a helper that writes it
])
def test_writes_to_device_variables_are_found_in_the_kernel_and_what_it_calls(kernel, written):
    src = SourceText(FILE)
    got = written_variables(src, find_kernel(src, kernel))
    assert (phrase(got) if got else "") == written


def test_redirected_variables_are_pointers_used_through_line_for_line():
    text = redirected(FILE, ("dResult", "mCount", "hist"))
    assert text.count("\n") == FILE.count("\n")
    assert "__device__ float (*__fsr_dv_dResult);" in text
    assert "__managed__ unsigned int (*__fsr_dv_mCount);" in text  # its initializer dropped: set per launch
    assert "__device__ int (*__fsr_dv_hist)[256][2];" in text and "static" not in text
    assert "atomicAdd(&(*__fsr_dv_dResult), x[i])" in text and "(*__fsr_dv_hist)[x[i] & 255][0] += 1" in text
    assert "(*__fsr_dv_mCount)++" in text
    assert "namespace inner { __device__ float total; }" in text  # not asked for
    candidate = text.replace("atomicAdd(&(*__fsr_dv_dResult), x[i])", "atomicAdd(&dResult, 2 * x[i])")
    assert "atomicAdd(&(*__fsr_dv_dResult), 2 * x[i])" in redirected(candidate, ("dResult",))  # a rewrite's own uses


def test_a_rewrite_that_repeats_the_declaration_keeps_one_variable():
    """A candidate pasted with its own `__device__ float dResult;` (as the file has it) is one
    variable, not two definitions; one of another type is left for the compiler to refuse."""
    again = FILE + "__device__ float dResult;\n__global__ void more(const float* x) { atomicAdd(&dResult, x[0]); }\n"
    text = redirected(again, ("dResult",))
    assert text.count("(*__fsr_dv_dResult);") == 1 and text.count("\n") == again.count("\n")
    other = redirected(FILE + "__device__ double dResult;\n", ("dResult",))
    assert other.count("(*__fsr_dv_dResult);") == 2


@pytest.mark.parametrize("text, why", [
    (FILE, "`total` is declared in a namespace"),
    ("__device__ float acc;\n__global__ void k(float* y) { float acc = 0; acc += y[0]; y[0] = acc; }\n",
     "another declaration in the file is named `acc` too"),
    ("struct P { float v; };\n__device__ P best;\n__global__ void k(float* y) { best.v = y[0]; }\n",
     "`best` is a `P`, not a type fsr can fill"),
    ("__device__ int count, flag;\n__global__ void k(int* y) { count += y[0]; }\n",
     "`count` is declared together with others in one declaration"),
    ("__device__ float acc;\n__global__ void k(float* y) { ::acc += y[0]; }\n", "`acc` is named as `::acc`"),
    ("__device__ float acc;\n__global__ void k(float* y) { decltype(acc) t = y[0]; acc += t; }\n",
     "`acc` is named as `::acc` or in `decltype`"),
    ("__device__ float acc;\n#define PUT(acc, v) acc += v\n__global__ void k(float* y) { acc += y[0]; }\n",
     "as a macro's parameter"),
])
def test_what_cannot_be_made_a_buffer_is_said(text, why):
    variables = device_variables(text)
    assert why in not_redirectable(text, variables)


@pytest.mark.nvcc
def test_the_redirected_file_compiles(tmp_path: Path):
    """The host's own uses too (`cudaMemcpyToSymbol(dResult, ...)`, `mCount = 0`): the whole file builds."""
    (tmp_path / "k.cu").write_text(redirected(FILE.replace("namespace inner { __device__ float total; }\n", "")
                                              .replace("inner::total = v;", "(void)v;") + HOST,
                                              ("dResult", "mCount", "hist")))
    r = subprocess.run([find_nvcc(), "-c", "-arch=sm_90", "-o", str(tmp_path / "k.o"), str(tmp_path / "k.cu")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


HOST = """
int main() { float zero = 0; cudaMemcpyToSymbol(dResult, &zero, sizeof(float)); mCount = 0; return 0; }
"""


def test_a_kernel_that_can_be_redirected_gets_a_spec_and_one_that_cannot_says_why(tmp_path: Path):
    (tmp_path / "k.cu").write_text(FILE)
    specs = {s.kernel: s for s in kernel_specs([tmp_path / "k.cu"])}
    assert specs["atomic_sum"].spec is not None, specs["atomic_sum"].problems
    assert specs["via_helper"].spec is None
    assert any("keeps results in the file's `total`" in p and "declared in a namespace" in p
               for p in specs["via_helper"].problems), specs["via_helper"].problems


def test_the_evaluator_verifies_nothing_of_what_it_cannot_redirect():
    """A spec written by hand does not get past preparation: no compile, no run."""
    text = specced("via_helper", 'bench = { n = 4096 }\ngrid = 1\nblock = 1\n[args]\nx = "in[n]"\ny = "out[n]"')
    prepared = prepare(text, "via_helper", "__global__ void via_helper(const float* x, float* y) { y[0] = x[0]; }",
                       "sm_90", EvalOptions())
    assert prepared.job is None and prepared.result is not None
    assert prepared.result.status == "spec_error"
    assert "via_helper cannot be verified" in prepared.result.message and "`total`" in prepared.result.message


SPECCED_SUM = specced("atomic_sum", 'bench = { n = 4096 }\ngrid = "cdiv(n, 256)"\nblock = 256\n[args]\nx = "in[n]"\nn = "n"')


@pytest.mark.nvcc
def test_prepare_compiles_the_pointers_and_adds_a_buffer_for_each_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("FSR_CACHE_DIR", str(tmp_path))
    text = SPECCED_SUM
    prepared = prepare(text, "atomic_sum", None, "sm_90", EvalOptions(compiler="nvcc"))
    assert prepared.job is not None, prepared.result
    hidden = [a for a in prepared.job.sizes[-1].args if a.hidden]
    assert [(a.name, a.dtype, a.length, a.direction, a.symbol) for a in hidden] == [
        ("dResult", "float32", 1, "inout", "__fsr_dv_dResult")]


@pytest.mark.nvcc
def test_a_rewrite_declaring_the_variables_name_again_is_rejected_with_why(tmp_path, monkeypatch):
    """Made a pointer, its own local `dResult` would be a null pointer: the rewrite is told to
    rename it, not run."""
    monkeypatch.setenv("FSR_CACHE_DIR", str(tmp_path))
    text = SPECCED_SUM
    candidate = ("__global__ void atomic_sum(const float* x, int n)\n"
                 "{ float dResult = 0; int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) dResult = x[i]; "
                 "if (i < n) atomicAdd(&::dResult, dResult); }\n")
    prepared = prepare(text, "atomic_sum", candidate, "sm_90", EvalOptions(compiler="nvcc"))
    assert prepared.job is None and prepared.result.status == "rejected", prepared.result
    assert "declares its own `dResult`" in prepared.result.message


def test_a_variables_buffer_starts_from_values_drawn_afresh():
    """Not zero: a rewrite that skipped an `atomicMin` onto a variable left at 0 would match."""
    from fsr_lsp.evaluator.job.plan import variable_plans
    from fsr_lsp.kernels.device_variables import DeviceVariable
    from fsr_lsp.specs import parse_spec

    text = specced("reads_only", 'bench = { n = 64 }\ngrid = 1\nblock = 64\n[args]\nx = "in[n]"\ny = "out[n]"\nn = "n"')
    src = SourceText(text)
    spec = parse_spec(src, find_kernel(src, "reads_only")).spec
    (f, u) = variable_plans([DeviceVariable("f", "float", (), True), DeviceVariable("u", "unsigned int", ("8",), True)], spec)
    assert (f.init.kind, f.length, f.dtype) == ("normal", 1, "float32")
    assert (u.init.kind, u.length, u.dtype) == ("randint", 8, "uint32") and u.init.hi > 1


def test_one_modules_pointer_is_set_again_when_another_kernel_of_it_moved_it():
    """Two LoadedKernels of one cubin share one module (a rewrite that changes only the launch):
    where one pointed the variable elsewhere, the other sets it back before its launch."""
    from types import SimpleNamespace

    from fsr_lsp.evaluator.gpu.packing import LaunchValues
    from fsr_lsp.evaluator.gpu.session import LoadedKernel

    writes = []
    module = SimpleNamespace(get_global=lambda name: (0x1000, 8))
    session = SimpleNamespace(pointed={}, cuda=SimpleNamespace(memcpy_htod=lambda at, data: writes.append(data)))
    original, candidate = (LoadedKernel(session, None, [], digest="same cubin", module=module) for _ in range(2))

    def args(address):
        values = LaunchValues()
        values.symbols = {"__fsr_dv_dResult": address}
        return values

    original.point(args(0xA0))
    original.point(args(0xA0))  # unchanged: no copy (timed runs point before the clock)
    candidate.point(args(0xB0))
    original.point(args(0xA0))
    assert [int.from_bytes(w, "little") for w in writes] == [0xA0, 0xB0, 0xA0]


# A write fsr's reading of the source does not see: the variable handed on by reference.
BY_REFERENCE = """/* @fsr
bench = { n = 1000 }
tests = [ { n = 1 }, { n = 100 } ]
grid = "cdiv(n, 128)"
block = 128
[args]
x = "in[n]"
y = "out[n]"
n = "n"
*/
__device__ unsigned int seen;
__device__ void bump(unsigned int& counter) { atomicAdd(&counter, 1u); }
__global__ void doubles(const float* x, float* y, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) { y[i] = 2.f * x[i]; bump(seen); } }
"""


def test_an_original_changing_a_variable_fsr_does_not_compare_cannot_be_the_oracle():
    """`seen` is not among the variables fsr compares (handed on by reference, the reading of the
    source misses the write): without the module's variables checked, the rewrite that drops the
    count is verified. The original's change to `seen` refuses the spec, by name."""
    from ..support.cuda_on_cpu import cxx, evaluate_on_cpu

    if cxx() is None:
        pytest.skip("no C++ compiler")
    src = SourceText(BY_REFERENCE)
    assert written_variables(src, find_kernel(src, "doubles")) == []  # the reading misses it
    skips_count = BY_REFERENCE[BY_REFERENCE.index("__global__"):].replace(" bump(seen);", "")
    verdict = evaluate_on_cpu(BY_REFERENCE, "doubles", skips_count)
    assert verdict.status == "spec_error", verdict.message
    assert "changes `seen`, a global variable of its module that fsr does not compare" in verdict.message
    # what the check stands between: without it, the rewrite that drops the count is verified
    from unittest import mock

    from fsr_lsp.evaluator.gpu import verify

    with mock.patch.object(verify, "check_module_variables", lambda ctx, plan: None):
        assert evaluate_on_cpu(BY_REFERENCE, "doubles", skips_count).status == "verified"


@pytest.mark.nvcc
def test_the_module_names_every_writable_variable_its_headers_included(tmp_path: Path):
    """The symbol table, not the file's text: a header's counter and a namespace's total are
    there; `__constant__` data, a `const` table's reads and the pointers fsr made are told apart."""
    from fsr_lsp.evaluator.compile.module_variables import module_variables
    from fsr_lsp.evaluator.gpu.module_state import uncompared

    (tmp_path / "counts.h").write_text("__device__ int counter;\nnamespace ns { __device__ float total[4] = {1, 2, 3, 4}; }\n")
    (tmp_path / "k.cu").write_text(
        '#include "counts.h"\n__constant__ float coef[4];\n__device__ float (*__fsr_dv_x);\n'
        "__global__ void k(float* out, int n) { int i = threadIdx.x; if (i < n) { out[i] = coef[0];"
        " atomicAdd(&counter, 1); ns::total[0] += 1.f; *__fsr_dv_x = 1.f; } }\n")
    for relocatable in ([], ["-rdc=true"]):  # a file that launches kernels is built relocatable: typed otherwise there
        subprocess.run([find_nvcc(), "-cubin", "-arch=sm_90", *relocatable, "-o", "k.cubin", "k.cu"], cwd=tmp_path,
                       check=True)
        found = module_variables((tmp_path / "k.cubin").read_bytes())
        assert set(found) == {"counter", "_ZN2ns5totalE", "__fsr_dv_x"}, (relocatable, found)
        assert set(uncompared(found)) == {"counter", "_ZN2ns5totalE"}
    assert module_variables(b'{"library": "k.so"}') == ()


def test_the_modules_variables_are_put_back_and_a_change_is_named():
    """What the evaluator does around each run of the original (gpu/module_state.py), on host
    tensors standing for the device's; a symbol the driver has no address for goes unchecked
    instead of failing the load of every kernel of its module."""
    torch = pytest.importorskip("torch")
    from fsr_lsp.evaluator.gpu.module_state import ModuleState

    count, table = torch.zeros(4, dtype=torch.uint8), torch.arange(8, dtype=torch.uint8)
    state = ModuleState({"count": count, "table": table}, {"count": count.clone(), "table": table.clone()})
    assert state.changed() == []
    count[0] = 1
    assert state.changed() == ["count"]
    state.restore()
    assert state.changed() == [] and int(count[0]) == 0 and table.tolist() == list(range(8))

    def address(name: str) -> tuple[int, int]:
        raise RuntimeError(f"cuModuleGetGlobal failed: named symbol not found ({name})")

    assert ModuleState.of(torch, "cpu", ("hidden",), address).views == {}
