"""Capture without a GPU: the injection library's recording (driven by a harness that calls
its callback as the driver would), running a program under it, records to specs (relations
found in the numbers, the static draft checked against the capture, what cannot be captured),
and the CLI."""

from __future__ import annotations

import json
from types import SimpleNamespace
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from fsr_lsp.capture import Allocation, CaptureError, CaptureOptions, latest_capture, read_capture, run_capture
from fsr_lsp.capture.build import SOURCE, BuildError, cupti_paths, cuda_home, injection_library
from fsr_lsp.drafting.captured import CAPTURED_ONLY
from fsr_lsp.drafting.resolver import kernel_specs
from fsr_lsp.drafting.workspace import LaunchIndex
from fsr_lsp.kernels import discover_kernels
from fsr_lsp.settings import Settings
from fsr_lsp.workflows.optimize import CAPTURE_OFFER, plan_spec
from ..support.captures import f32, i32, matmul_launch, ptr, scale_launch, write_capture
from ..support.doubles import fsr

DATA = Path(__file__).parent.parent / "data"
KERNELS = """__global__ void scale(float* y, const float* x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}

template <int BS>
__global__ void rowsum(const float* m, float* out, int rows, int cols)
{
    int r = blockIdx.x * BS + threadIdx.x;
    if (r < rows) { float s = 0.f; for (int c = 0; c < cols; ++c) s += m[r * cols + c]; out[r] = s; }
}
"""


def toolkit() -> tuple[Path, Path, Path]:
    try:
        home = cuda_home()
        include, lib = cupti_paths(home)
    except BuildError as e:
        pytest.skip(str(e))
    if not shutil.which("g++"):
        pytest.skip("no g++")
    return home, include, lib


# ---------------------------------------------------------------- the library, driven as the driver would


@pytest.fixture(scope="module")
def harness(tmp_path_factory) -> Path:
    return built_harness(tmp_path_factory.mktemp("harness"), "capture_harness")


def test_the_library_records_launches_allocations_and_counts(harness: Path, tmp_path: Path):
    subprocess.run([str(harness), str(tmp_path)], check=True)
    launches = {(x.kernel, x.grid[0], x.params[1].alloc.offset if x.params[1].alloc else -1): x
                for x in read_capture(tmp_path).launches if x.kernel != "_Z3mmk6Matrix"}
    first = launches[("_Z5scalePfPKffi", 4, 0)]
    assert first.count == 3 and first.name == "scale(float*, float const*, float, int)" and first.base == "scale"
    assert first.block == (256, 1, 1) and first.params[0].alloc.size == 4000 and first.params[0].alloc.via == "cudaMalloc"
    assert first.params[3].as_int() == 1000 and struct.unpack("<f", first.params[2].raw)[0] == 2.5
    shifted = launches[("_Z5scalePfPKffi", 4, 400)]  # a pointer 400 bytes into x
    assert shifted.count == 1 and shifted.params[3].as_int() == 900
    buffered = launches[("scale", 8, 0)]  # through CU_LAUNCH_PARAM_BUFFER_POINTER, extern "C"
    assert struct.unpack("<f", buffered.params[2].raw)[0] == 0.5 and buffered.params[0].alloc.size == 4000
    (rowsum,) = [x for x in launches.values() if x.base == "rowsum"]
    assert rowsum.template_args == "64" and rowsum.params[0].alloc is None  # freed before the launch
    # a runtime launch no driver callback came for is said, not silently missing
    assert read_capture(tmp_path).problems == ["1 kernel(s) launched through the CUDA runtime reached no driver launch "
                                               "callback, so their launches are missing: scale(float*, float const*, "
                                               "float, int)"]


def test_the_library_keeps_only_the_kernels_asked_for(harness: Path, tmp_path: Path):
    subprocess.run([str(harness), str(tmp_path), "rowsum"], check=True)
    assert {x.base for x in read_capture(tmp_path).launches} == {"rowsum"}


def test_specs_from_the_librarys_records(harness: Path, tmp_path: Path):
    folder = tmp_path / ".fsr" / "captures" / "20260101-000000"
    folder.mkdir(parents=True)
    subprocess.run([str(harness), str(folder)], check=True)
    (tmp_path / "k.cu").write_text(KERNELS)
    specs = {s.kernel: s for s in kernel_specs([tmp_path / "k.cu"], capture=latest_capture(tmp_path))}
    scale = specs["scale"]
    assert scale.origin == "captured", scale.problems
    assert "bench = { n = 1000 }" in scale.spec and 'grid = "cdiv(n, 256)"' in scale.spec and "a = 2.5" in scale.spec
    assert 'y = "out[n]"' in scale.spec and 'x = "in[n]"' in scale.spec and "3 launches" in scale.spec
    assert any("launch shapes differ" in p for p in scale.problems)
    assert specs["rowsum"].origin != "captured"
    assert any("`m` points to no allocation the run made" in p for p in specs["rowsum"].problems)


def test_the_injection_library_builds_once_and_exports_its_entry_point(tmp_path: Path):
    toolkit()
    import ctypes

    library = injection_library(cache=tmp_path)
    assert library.exists() and injection_library(cache=tmp_path) == library  # cached
    try:
        handle = ctypes.CDLL(str(library))
    except OSError as e:  # libcupti needs a driver to load on some toolkits
        pytest.skip(f"cannot load here: {e}")
    assert hasattr(handle, "InitializeInjection")


# ---------------------------------------------------------------- records to specs


def test_relations_in_the_numbers_give_scaling_tests(tmp_path: Path):
    write_capture(tmp_path, [scale_launch(5000)])
    (tmp_path / "k.cu").write_text(KERNELS)
    (spec,) = [s for s in kernel_specs([tmp_path / "k.cu"], capture=latest_capture(tmp_path)) if s.kernel == "scale"]
    assert spec.origin == "captured" and not spec.problems
    assert "tests = [ { n = 1 }, { n = 17 }, { n = 1000 } ]" in spec.spec
    assert spec.provenance["y"] == "5000 elements to the end of its allocation"


def test_numbers_that_follow_no_argument_check_the_captured_size_only(tmp_path: Path):
    write_capture(tmp_path, [scale_launch(5000, grid=64, extent=8192)])  # a fixed grid over a larger buffer
    (tmp_path / "k.cu").write_text(KERNELS)
    (spec,) = [s for s in kernel_specs([tmp_path / "k.cu"], capture=latest_capture(tmp_path)) if s.kernel == "scale"]
    assert spec.origin == "captured" and "tests" not in spec.spec
    assert 'y = "out[8192]"' in spec.spec and "grid = 64" in spec.spec
    assert any(p.startswith(CAPTURED_ONLY) and "`y` (8192 elements)" in p for p in spec.problems)


MAIN = """#include "k.cu"
int main() {
    int n = 4096;
    float *x, *y;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    scale<<<(n + 255) / 256, 256>>>(y, x, 2.0f, n);
}
"""


def test_a_draft_that_reproduces_the_capture_keeps_its_relations_with_the_captured_sizes(tmp_path: Path):
    write_capture(tmp_path, [scale_launch(70000)])
    (tmp_path / "k.cu").write_text(KERNELS)
    (tmp_path / "main.cu").write_text(MAIN)
    (spec,) = [s for s in kernel_specs([tmp_path / "k.cu", tmp_path / "main.cu"], capture=latest_capture(tmp_path))
               if s.kernel == "scale" and s.file.endswith("k.cu")]
    assert spec.origin == "captured" and "bench = { n = 70000 }" in spec.spec
    assert spec.provenance["capture"].startswith("the draft from the launch site reproduces")
    assert "n" in spec.provenance and "cudaMalloc" in spec.provenance["y"]  # the draft's own provenance


def test_a_draft_the_capture_contradicts_loses_and_says_why(tmp_path: Path):
    write_capture(tmp_path, [scale_launch(4096, block=128)])  # the run used 128 threads, the source says 256
    (tmp_path / "k.cu").write_text(KERNELS)
    (tmp_path / "main.cu").write_text(MAIN)
    (spec,) = [s for s in kernel_specs([tmp_path / "k.cu", tmp_path / "main.cu"], capture=latest_capture(tmp_path))
               if s.kernel == "scale" and s.file.endswith("k.cu")]
    assert spec.origin == "captured" and "block = 128" in spec.spec
    assert any("the capture wins over the draft" in p and "grid" in p for p in spec.problems)


@pytest.mark.parametrize("params, why", [
    ([ptr(400), {"offset": 8, "size": 8, "hex": "10" * 8}, {"offset": 16, "size": 4, "hex": f32(1)},
      {"offset": 20, "size": 4, "hex": i32(100)}], "`x` points to no allocation the run made"),
    ([ptr(400), ptr(400), {"offset": 16, "size": 4, "hex": f32(1)}], "has 3 parameters, the kernel 4"),
    ([], "no parameter layout"),
])
def test_what_cannot_be_captured_is_said_and_drafting_goes_on(tmp_path: Path, params, why):
    record = {**scale_launch(100), "params": params}
    write_capture(tmp_path, [record])
    (tmp_path / "k.cu").write_text(KERNELS)
    (spec,) = [s for s in kernel_specs([tmp_path / "k.cu"], capture=latest_capture(tmp_path)) if s.kernel == "scale"]
    assert spec.origin == "inferred" and any(why in p for p in spec.problems), spec.problems


def test_a_launched_kernel_that_takes_no_pointers_gets_no_spec_and_says_why(tmp_path: Path):
    """It was launched (a stream demo's busy loop): a spec with no buffer would check nothing."""
    record = {"id": 0, "kernel": "_Z4spinv", "name": "spin()", "base": "spin", "grid": [4, 1, 1], "block": [32, 1, 1],
              "smem": 0, "params": []}
    write_capture(tmp_path, [record])
    (tmp_path / "k.cu").write_text("__global__ void spin()\n{\n    double s = 0;\n"
                                   "    for (int i = 0; i < 100; ++i) s += i;\n}\n")
    (spec,) = kernel_specs([tmp_path / "k.cu"], capture=latest_capture(tmp_path))
    assert spec.spec is None and any("takes no pointers, so there is nothing to compare" in p for p in spec.problems)


def test_damaged_records_and_counts(tmp_path: Path):
    folder = write_capture(tmp_path, [scale_launch(100)])
    with (folder / "launches-7.jsonl").open("a") as f:
        f.write('{"count": 0, "n": 12}\n{"id": 1, "kernel": "trunc')
    capture = read_capture(folder)
    assert capture.launches[0].count == 12 and "1 damaged record(s) skipped" in capture.problems[0]


def test_the_latest_capture_with_launches_is_used_and_the_index_sees_a_new_one(tmp_path: Path):
    index = LaunchIndex(tmp_path)
    assert index.capture() is None
    write_capture(tmp_path, [scale_launch(100)], "20260101-000000")
    assert index.capture().launches[0].params[3].as_int() == 100
    write_capture(tmp_path, [], "20260301-000000")  # a run that launched nothing is passed over
    write_capture(tmp_path, [scale_launch(300)], "20260201-000000")
    assert index.capture().launches[0].params[3].as_int() == 300


def test_optimize_takes_the_captured_spec_or_offers_a_capture(tmp_path: Path):
    (tmp_path / "k.cu").write_text(KERNELS)
    kernel = next(k for k in discover_kernels(KERNELS) if k.name == "rowsum")
    plan = plan_spec(LaunchIndex(tmp_path), tmp_path / "k.cu", KERNELS, kernel, Settings())
    assert plan.draft is None and CAPTURE_OFFER in plan.message
    write_capture(tmp_path, [{"id": 0, "kernel": "_Z6rowsumILi32EEvPKfPfii", "base": "rowsum",
                              "name": "void rowsum<32>(float const*, float*, int, int)", "grid": [16, 1, 1],
                              "block": [32, 1, 1], "smem": 0,
                              "params": [ptr(500 * 300 * 4), ptr(500 * 4), {"offset": 16, "size": 4, "hex": i32(500)},
                                         {"offset": 20, "size": 4, "hex": i32(300)}]}])
    plan = plan_spec(LaunchIndex(tmp_path), tmp_path / "k.cu", KERNELS, kernel, Settings())
    assert plan.spec.origin == "captured" and "took one from the launch captured in a run" in plan.message
    assert 'template = "32"' in plan.draft and 'm = "in[rows * cols]"' in plan.draft and "cdiv(rows, 32)" in plan.draft


# ---------------------------------------------------------------- running a program, and the CLI


@pytest.fixture
def fake_library(tmp_path: Path, monkeypatch) -> Path:
    library = tmp_path / "libfake.so"
    library.write_text("")
    monkeypatch.setenv("FSR_CAPTURE_LIBRARY", str(library))
    monkeypatch.delenv("CUDA_INJECTION64_PATH", raising=False)
    return library


def test_a_run_keeps_its_exit_status_and_what_it_launched(tmp_path: Path, fake_library: Path):
    lines: list[str] = []
    capture = run_capture([sys.executable, str(DATA / "fake_capture_app.py"), "777", "4"], tmp_path,
                          on_output=lines.append)
    assert capture.exit_code == 4 and lines == ["ran scale on 777 elements"]
    assert capture.launches[0].params[3].as_int() == 777 and capture.command[-2:] == ["777", "4"]


def test_a_program_stopped_by_the_timeout_keeps_its_launches(tmp_path: Path, fake_library: Path):
    capture = run_capture([sys.executable, str(DATA / "fake_capture_app.py"), "10", "-1"], tmp_path,
                          CaptureOptions(timeout=3))
    assert capture.launches and any("stopped after 3 s" in p for p in capture.problems)


def test_captures_started_together_each_get_a_folder_of_their_own(tmp_path: Path, fake_library: Path):
    from concurrent.futures import ThreadPoolExecutor
    sizes = [str(100 + i) for i in range(6)]
    with ThreadPoolExecutor(6) as pool:  # all within the same second: the folder names collide
        captures = list(pool.map(lambda n: run_capture([sys.executable, str(DATA / "fake_capture_app.py"), n, "0"],
                                                       tmp_path, on_output=lambda _: None), sizes))
    assert len({c.folder for c in captures}) == 6
    assert sorted(str(c.launches[0].params[3].as_int()) for c in captures) == sizes


def test_a_run_that_cannot_start_says_why(tmp_path: Path, fake_library: Path, monkeypatch):
    with pytest.raises(CaptureError, match="no command"):
        run_capture([], tmp_path)
    with pytest.raises(CaptureError, match="cannot run"):
        run_capture([str(tmp_path / "missing-app")], tmp_path)
    monkeypatch.setenv("CUDA_INJECTION64_PATH", "/opt/nsight/libinject.so")
    with pytest.raises(CaptureError, match="another profiler"):
        run_capture(["true"], tmp_path)




def test_cli_capture_then_spec(tmp_path: Path, fake_library: Path):
    (tmp_path / "k.cu").write_text(KERNELS)
    r = fsr("capture", "--", sys.executable, str(DATA / "fake_capture_app.py"), "2048", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "scale" in r.stdout and "scale<<<(8, 1, 1), (256, 1, 1)>>>" in r.stdout
    r = fsr("spec", "k.cu", "--kernel", "scale", "--json", cwd=tmp_path)
    (data,) = json.loads(r.stdout)
    assert data["origin"] == "captured" and "bench = { n = 2048 }" in data["spec"]
    r = fsr("spec", "k.cu", "--kernel", "scale", "--json", "--no-capture", cwd=tmp_path)
    assert json.loads(r.stdout)[0]["origin"] == "inferred"


def test_cli_capture_of_a_program_that_launches_nothing(tmp_path: Path, fake_library: Path):
    r = fsr("capture", "--", sys.executable, "-c", "print('no gpu here')", cwd=tmp_path)
    assert r.returncode == 1 and "no kernel launch was recorded" in r.stderr and "Traceback" not in r.stderr
    r = fsr("capture", cwd=tmp_path)
    assert r.returncode == 2 and "no command to capture" in r.stderr


def test_saved_inputs_reach_the_spec_and_the_evaluators_options(tmp_path: Path):
    from fsr_lsp.workflows.optimize import KernelJob

    record = scale_launch(3000)
    record["params"][1]["alloc"]["offset"] = 64
    record["params"][1]["alloc"]["size"] += 64
    record["snapshot"] = {"1": "inputs-7-0-1.bin"}
    folder = write_capture(tmp_path, [record])
    (tmp_path / "k.cu").write_text(KERNELS)
    kernel = next(k for k in discover_kernels(KERNELS) if k.name == "scale")
    plan = plan_spec(LaunchIndex(tmp_path), tmp_path / "k.cu", KERNELS, kernel, Settings())
    assert plan.spec.inputs == {"x": f"64:{folder / 'inputs-7-0-1.bin'}"}
    assert "inputs of its first launch were saved" in plan.spec.provenance["capture"]
    run = KernelJob(KERNELS, tmp_path / "k.cu", "scale", tmp_path, Settings(), plan)
    assert run.eval_options().real_inputs == (("x", f"64:{folder / 'inputs-7-0-1.bin'}"),)
    assert KernelJob(KERNELS, tmp_path / "k.cu", "scale", tmp_path, Settings()).eval_options().real_inputs == ()


def test_a_grid_is_read_as_covering_a_buffer_before_a_coincidence(tmp_path: Path):
    source = """__global__ void tile(float* y, const float* x, int n, int m)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i] * m; }
"""
    write_capture(tmp_path, [{"id": 0, "kernel": "_Z4tilePfPKfii", "name": "tile(float*, float const*, int, int)",
                              "base": "tile", "grid": [40, 1, 1], "block": [128, 1, 1], "smem": 0,
                              "params": [ptr(4 * 5120), ptr(4 * 5120), {"offset": 16, "size": 4, "hex": i32(5120)},
                                         {"offset": 20, "size": 4, "hex": i32(40)}]}])
    (tmp_path / "k.cu").write_text(source)
    (spec,) = kernel_specs([tmp_path / "k.cu"], capture=latest_capture(tmp_path))
    assert 'grid = "cdiv(n, 128)"' in spec.spec, spec.spec  # 40 blocks of 128 over n; that m is 40 too is chance


AOS = """struct pair { float a; float b; };
__global__ void split(const float* x, struct pair* res, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { res[i].a = x[i]; res[i].b = -x[i]; }
}
"""


def test_an_array_of_structs_is_counted_in_structs_not_bytes(tmp_path: Path):
    n = 3000
    record = {"id": 0, "kernel": "_Z5splitPKfP4pairi", "name": "split(float const*, pair*, int)", "base": "split",
              "grid": [(n + 255) // 256, 1, 1], "block": [256, 1, 1], "smem": 0,
              "params": [ptr(4 * n), {**ptr(8 * n), "offset": 8}, {"offset": 16, "size": 4, "hex": i32(n)}]}
    write_capture(tmp_path, [record])
    (tmp_path / "k.cu").write_text(AOS)
    (spec,) = kernel_specs([tmp_path / "k.cu"], capture=latest_capture(tmp_path))
    assert spec.origin == "captured" and f"bench = {{ n = {n} }}" in spec.spec, spec.problems
    assert 'res = "out[n]"' in spec.spec and 'x = "in[n]"' in spec.spec


def test_an_element_type_the_build_chose_otherwise_is_refused_and_said(tmp_path: Path):
    """`floatX` is chosen by a -D flag: the run's build made it bf16 (its symbol says so) where the
    file alone reads float. A spec from the capture would size and fill `y` as float: refused,
    naming both types; the demangled symbol agreeing with the file is no problem."""
    (tmp_path / "k.cu").write_text("#ifdef USE_BF16\n#include <cuda_bf16.h>\ntypedef __nv_bfloat16 floatX;\n#else\n"
                                   "typedef float floatX;\n#endif\n" + KERNELS.replace("float* y", "floatX* y"))
    record = {**scale_launch(100), "name": "scale(__nv_bfloat16*, float const*, float, int)"}
    write_capture(tmp_path, [record])
    (spec,) = [s for s in kernel_specs([tmp_path / "k.cu"], capture=latest_capture(tmp_path)) if s.kernel == "scale"]
    assert spec.origin != "captured"
    assert any("`y` is `floatX`, which the run's build compiled as `__nv_bfloat16`" in p and "float32" in p
               for p in spec.problems), spec.problems
    (tmp_path / ".fsr").rename(tmp_path / "old")
    write_capture(tmp_path, [{**scale_launch(100), "name": "void scale(float*, float const*, float, int)"}])
    (spec,) = [s for s in kernel_specs([tmp_path / "k.cu"], capture=latest_capture(tmp_path)) if s.kernel == "scale"]
    assert spec.origin == "captured", spec.problems


def test_untyped_memory_is_a_buffer_of_bytes(tmp_path: Path):
    """`const void* x` (a bandwidth test, a memcpy): its length is its allocation in bytes."""
    (tmp_path / "k.cu").write_text("__global__ void copy_bytes(const void* x, void* y, int n)\n{\n"
                                   "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                   "    if (i < n / 16) ((float4*)y)[i] = ((const float4*)x)[i];\n}\n")
    record = {"id": 0, "kernel": "_Z10copy_bytesPKvPvi", "name": "copy_bytes(void const*, void*, int)",
              "base": "copy_bytes", "grid": [4, 1, 1], "block": [256, 1, 1], "smem": 0,
              "params": [ptr(16384), ptr(16384), {"offset": 16, "size": 4, "hex": i32(16384)}]}
    write_capture(tmp_path, [record])
    (spec,) = kernel_specs([tmp_path / "k.cu"], capture=latest_capture(tmp_path))
    assert spec.origin == "captured", spec.problems
    assert 'x = "in[n]"' in spec.spec and 'y = "out[n]"' in spec.spec and "bench = { n = 16384 }" in spec.spec


PACKED = """template<typename T, size_t pack_size>
struct alignas(sizeof(T) * pack_size) Pack { T elem[pack_size]; };

template<typename T, int32_t pack_size>
__global__ void scale_packs(const Pack<T, pack_size>* a, Pack<T, pack_size>* b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n / pack_size) {
        for (int j = 0; j < pack_size; j++) b[i].elem[j] = a[i].elem[j] * (T)2;
    }
}
"""


def test_a_template_struct_is_sized_and_typed_by_the_captured_instantiation(tmp_path: Path):
    """`Pack<T, pack_size>*` launched as `scale_packs<__half, 2>`: an element is a pack of two
    halves (4 bytes), so an allocation of 2n bytes holds n/2 of them, not n halves or 2n bytes."""
    n = 4096
    record = {"id": 0, "kernel": "_Z11scale_packsI6__halfLi2EEvPK4PackIT_XT0_EEPS3_i",
              "name": "void scale_packs<__half, 2>(Pack<__half, 2ul> const*, Pack<__half, 2ul>*, int)",
              "base": "scale_packs", "grid": [(n // 2 + 255) // 256, 1, 1], "block": [256, 1, 1], "smem": 0,
              "params": [ptr(2 * n), {**ptr(2 * n), "offset": 8}, {"offset": 16, "size": 4, "hex": i32(n)}]}
    write_capture(tmp_path, [record])
    (tmp_path / "k.cu").write_text(PACKED)
    (spec,) = kernel_specs([tmp_path / "k.cu"], capture=latest_capture(tmp_path))
    assert spec.origin == "captured", spec.problems
    assert 'template = "__half, 2"' in spec.spec
    assert f'a = "in[{n // 2}]"' in spec.spec and f'b = "out[{n // 2}]"' in spec.spec, spec.spec


def test_a_pointer_the_run_passed_as_null_is_null_in_the_captured_spec(tmp_path: Path):
    """A bandwidth test's `read_kernel(x, nullptr, n)`: the capture saw eight zero bytes and no
    allocation. The spec passes null, as the run did (was: no spec, "points to a null pointer")."""
    n = 2048
    (tmp_path / "k.cu").write_text(
        "__global__ void scaled(const float* x, float* unused, float* y, int n)\n"
        "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) { y[i] = 2.f * x[i]; if (unused) unused[i] = 0.f; } }\n")
    record = {"id": 0, "kernel": "_Z6scaledPKfPfS1_i", "name": "scaled(float const*, float*, float*, int)",
              "base": "scaled", "grid": [n // 256, 1, 1], "block": [256, 1, 1], "smem": 0,
              "params": [ptr(4 * n), {"offset": 8, "size": 8, "hex": "00" * 8}, {**ptr(4 * n), "offset": 16},
                         {"offset": 24, "size": 4, "hex": i32(n)}]}
    write_capture(tmp_path, [record])
    (spec,) = kernel_specs([tmp_path / "k.cu"], capture=latest_capture(tmp_path))
    assert spec.origin == "captured", spec.problems
    assert 'unused = "null"' in spec.spec and 'y = "out[n]"' in spec.spec, spec.spec


def test_a_pointer_one_past_the_end_of_its_allocation_is_null_in_the_captured_spec(tmp_path: Path):
    """An elementwise launcher's tail: `apply(n_pack, r, n_tail, r + n_pack * 8)` where the
    packs covered everything: the tail pointer is the allocation's end, a pointer to no byte the
    kernel may touch. The spec passes null (was: no spec, "points to no allocation the run made")."""
    n = 2048
    (tmp_path / "k.cu").write_text(
        "__global__ void packed(const float4* x, float4* y, int n, int n_tail, float* tail)\n"
        "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i]; if (i < n_tail) tail[i] = 0.f; }\n")
    record = {"id": 0, "kernel": "_Z6packedPK6float4PS_iiPf", "name": "packed(float4 const*, float4*, int, int, float*)",
              "base": "packed", "grid": [n // 256, 1, 1], "block": [256, 1, 1], "smem": 0,
              "params": [ptr(16 * n), {**ptr(16 * n), "offset": 8}, {"offset": 16, "size": 4, "hex": i32(n)},
                         {"offset": 20, "size": 4, "hex": i32(0)}, {**ptr(16 * n, 16 * n, base=9 << 20), "offset": 24}]}
    write_capture(tmp_path, [record])
    (spec,) = kernel_specs([tmp_path / "k.cu"], capture=latest_capture(tmp_path))
    assert spec.origin == "captured", spec.problems
    assert 'tail = "null"' in spec.spec and 'y = "out[n]"' in spec.spec, spec.spec


def test_a_pointer_one_past_the_end_of_another_parameters_allocation_is_its_end(tmp_path: Path):
    """`copy_range(begin, end, out)` with `end = begin + n`: `end` means something only beside
    `begin`. As null the kernel's loop would run no step, and a rewrite doing nothing would pass:
    the spec passes `begin`'s end (was: no spec at all)."""
    n = 2048
    (tmp_path / "k.cu").write_text(
        "__global__ void copy_range(const float* begin, const float* end, float* out)\n"
        "{ const float* p = begin + blockIdx.x * blockDim.x + threadIdx.x; if (p < end) out[p - begin] = *p; }\n")
    record = {"id": 0, "kernel": "_Z10copy_rangePKfS0_Pf", "name": "copy_range(float const*, float const*, float*)",
              "base": "copy_range", "grid": [n // 256, 1, 1], "block": [256, 1, 1], "smem": 0,
              "params": [ptr(4 * n, base=3 << 40), {**ptr(4 * n, 4 * n, base=3 << 40), "offset": 8},
                         {**ptr(4 * n, base=5 << 20), "offset": 16}]}
    write_capture(tmp_path, [record])
    (spec,) = kernel_specs([tmp_path / "k.cu"], capture=latest_capture(tmp_path))
    assert spec.origin == "captured", spec.problems
    assert 'end = "end(begin)"' in spec.spec and 'begin = "in[' in spec.spec, spec.spec


def test_one_pointer_passed_twice_is_one_buffer_written_through_either(tmp_path: Path):
    """`twice<<<...>>>(a, a, n)`, in place: `y` is `same(x)`, and `x`, const in the signature, is
    inout (the kernel writes it through `y`). Two buffers apart would verify rewrites for a call
    the program never makes."""
    n = 2048
    (tmp_path / "k.cu").write_text(
        "__global__ void twice(const float* x, float* y, int n)\n"
        "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.f * x[i]; }\n")
    record = {"id": 0, "kernel": "_Z5twicePKfPfi", "name": "twice(float const*, float*, int)", "base": "twice",
              "grid": [n // 256, 1, 1], "block": [256, 1, 1], "smem": 0,
              "params": [ptr(4 * n, base=7 << 40), {**ptr(4 * n, base=7 << 40), "offset": 8},
                         {"offset": 16, "size": 4, "hex": i32(n)}]}
    write_capture(tmp_path, [record])
    (spec,) = kernel_specs([tmp_path / "k.cu"], capture=latest_capture(tmp_path))
    assert spec.origin == "captured", spec.problems
    assert 'y = "same(x)"' in spec.spec and 'x = "inout[n]' in spec.spec, spec.spec


def test_an_end_past_a_partial_element_of_another_parameter_gives_no_spec(tmp_path: Path):
    """`end` one past an allocation of 4n + 2 bytes that `begin` (float4*) points into: the
    spec's buffer of whole float4s would end 2 bytes short of where the run's `end` was."""
    n = 2048
    (tmp_path / "k.cu").write_text(
        "__global__ void copy_range(const float4* begin, const char* end, float4* out)\n"
        "{ const float4* p = begin + blockIdx.x * blockDim.x + threadIdx.x; if ((const char*)p < end) out[p - begin] = *p; }\n")
    size = 16 * n + 2
    record = {"id": 0, "kernel": "_Z10copy_rangePK6float4PKcPS_", "name": "copy_range(float4 const*, char const*, float4*)",
              "base": "copy_range", "grid": [n // 256, 1, 1], "block": [256, 1, 1], "smem": 0,
              "params": [ptr(size, base=3 << 40), {**ptr(size, size, base=3 << 40), "offset": 8},
                         {**ptr(16 * n, base=5 << 20), "offset": 16}]}
    write_capture(tmp_path, [record])
    (spec,) = kernel_specs([tmp_path / "k.cu"], capture=latest_capture(tmp_path))
    assert spec.spec is None or spec.origin != "captured", spec.spec
    assert any("not a whole number of `begin`'s elements" in p for p in spec.problems), spec.problems


def test_a_pointer_into_its_allocation_keeps_the_elements_before_it(tmp_path: Path):
    """`stencil<<<...>>>(d_in + RADIUS, d_out + RADIUS)`: the capture saw each pointer 3 ints
    into its allocation. The kernel reads in[i - 3], which is the program's own halo: the spec
    gives the buffer from 3 before the pointer (was: "reads 12 bytes before the start of `in`")."""
    n, r = 4096, 3
    (tmp_path / "k.cu").write_text(
        "__global__ void stencil(int* in, int* out)\n"
        "{ int i = blockIdx.x * blockDim.x + threadIdx.x; out[i] = in[i - 3] + in[i] + in[i + 3]; }\n")
    record = {"id": 0, "kernel": "_Z7stencilPiS_", "name": "stencil(int*, int*)", "base": "stencil",
              "grid": [n // 256, 1, 1], "block": [256, 1, 1], "smem": 0,
              "params": [ptr(4 * (n + 2 * r), 4 * r), {**ptr(4 * (n + 2 * r), 4 * r), "offset": 8}]}
    write_capture(tmp_path, [record])
    (spec,) = kernel_specs([tmp_path / "k.cu"], capture=latest_capture(tmp_path))
    assert spec.origin == "captured", spec.problems
    assert f'in = "in[-3 : {n + r}]' in spec.spec and f'out = "out[-3 : {n + r}]"' in spec.spec, spec.spec


def built_harness(folder: Path, name: str) -> Path:
    """tests/data/NAME.cpp (the library driven as the driver would drive it) built into `folder`."""
    home, include, lib = toolkit()
    exe = folder / name
    built = subprocess.run(["g++", "-std=c++17", "-O1", f"-I{include}", f"-I{home / 'include'}", f"-I{SOURCE.parent}",
                            str(DATA / f"{name}.cpp"), f"-L{lib}", "-lcupti", f"-Wl,-rpath,{lib}", "-ldl",
                            "-o", str(exe)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    return exe


@pytest.mark.parametrize("cap, saved", [(1 << 20, {0, 1, 2}), (5000, {0, 2}), (300, {2}), (100, set())])
def test_the_library_saves_the_smallest_buffers_first_when_all_do_not_fit(tmp_path: Path, cap: int, saved: set):
    """A kernel whose buffers are too big to save whole keeps its small ones (token ids, offsets:
    the indices a random fill would send out of range), never more than the cap in all."""
    subprocess.run([str(built_harness(tmp_path, "snapshot_harness")), str(tmp_path), str(cap)], check=True)
    (launch,) = read_capture(tmp_path).launches
    assert set(launch.snapshot) == saved
    for index, path in launch.snapshot.items():
        data = path.read_bytes()
        which = {0: 3, 1: 1, 2: 2}[index]  # the fake driver fills each allocation with its own mark
        assert len(data) == launch.params[index].alloc.size and set(data) == {which}


def test_a_struct_passed_by_value_is_recorded_with_its_pointer_members_allocations(harness: Path, tmp_path: Path):
    subprocess.run([str(harness), str(tmp_path)], check=True)
    (launch,) = [x for x in read_capture(tmp_path).launches if x.kernel == "_Z3mmk6Matrix"]
    (param,) = launch.params
    assert param.size == 24 and struct.unpack("<iii", param.raw[:12]) == (64, 60, 70)
    assert param.alloc is None and param.words == ((16, Allocation(4 * 61 * 70, 280, "cudaMalloc")),)


def test_a_struct_passed_by_value_is_drafted_member_by_member_from_its_capture(tmp_path: Path):
    source = (DATA / "structs" / "matmul_struct.cu").read_text()
    bare = source[:source.index("/* @fsr")] + source[source.index("*/") + 3:]
    (tmp_path / "mm.cu").write_text(bare)
    write_capture(tmp_path, [matmul_launch(512, 512)])
    (spec,) = [s for s in kernel_specs([tmp_path / "mm.cu"], capture=latest_capture(tmp_path))]
    assert spec.origin == "captured", spec.problems
    # nine sizes of one value in the run: which one a length follows, the run cannot tell
    widest = "max(A_width, A_height, A_stride, B_width, B_height, B_stride, C_width, max(C_height, C_stride))"
    assert f'A = {{ width = "A_width", height = "A_height", stride = "A_stride", elements = "in[{widest} * {widest}]" }}' \
        in spec.spec, spec.spec
    assert "tests = [ { A_width = 1, A_height = 1, A_stride = 1, B_width = 1," in spec.spec  # the members scale
    assert "{ A_width = 37, A_height = 53, A_stride = 71, B_width = 89," in spec.spec  # and apart
    assert "{ A_width = 197, A_height = 173, A_stride = 151," in spec.spec  # the other way round
    assert f'elements = "out[{widest} * {widest}]"' in spec.spec  # C: written, never read
    assert spec.provenance["C.elements"] == "262144 elements to the end of its allocation"
    from fsr_lsp.kernels import find_kernel
    from fsr_lsp.source import SourceText
    from fsr_lsp.specs import parse_spec

    placed = bare.replace("__global__ void MatMulKernel", spec.spec + "__global__ void MatMulKernel")
    assert parse_spec(SourceText(placed), find_kernel(placed, "MatMulKernel")).errors == ()


def test_a_vector_passed_by_value_is_captured_lane_by_lane(tmp_path: Path):
    source = (DATA / "structs" / "vector_by_value.cu").read_text()
    (tmp_path / "v.cu").write_text(source[source.index("*/") + 3:])
    record = {"id": 0, "kernel": "_Z4dot4i6float4PKS_Pf", "name": "dot4(int, float4, float4 const*, float*)",
              "base": "dot4", "grid": [8, 1, 1], "block": [128, 1, 1], "smem": 0,
              "params": [{"offset": 0, "size": 4, "hex": i32(1000)},
                         {"offset": 16, "size": 16, "hex": struct.pack("<4f", 1.5, -2.0, 0.25, 4.0).hex()},
                         {**ptr(16000), "offset": 32}, {**ptr(4000), "offset": 40}]}
    write_capture(tmp_path, [record])
    (spec,) = kernel_specs([tmp_path / "v.cu"], capture=latest_capture(tmp_path))
    assert spec.origin == "captured", spec.problems
    assert "c = [1.5, -2.0, 0.25, 4.0]" in spec.spec and 'x = "in[n]"' in spec.spec, spec.spec


SPMV = """struct Csr { const int* rowptr; const int* col; const float* val; int rows; };
__global__ void spmv(Csr a, const float* x, float* y)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= a.rows) return;
    float s = 0.f;
    for (int k = a.rowptr[r]; k < a.rowptr[r + 1]; ++k) s += a.val[k] * x[a.col[k]];
    y[r] = s;
}
"""


def test_a_structs_pointer_members_saved_by_the_capture_are_drawn_in_the_runs_range(tmp_path: Path):
    """`--snapshot-bytes` saves what a by-value struct's pointer members point to (keys "0.8": the
    word at byte 8 of parameter 0): the draft draws each in the range the run's values had, and a
    proof that needs the run's own bytes gives them to the member (`captured()`)."""
    import numpy as np

    from fsr_lsp.drafting.relax import _structure_from_capture

    rows, nnz = 64, 256
    rowptr = np.arange(0, nnz + 1, 4, dtype=np.int32)
    col = (np.arange(nnz, dtype=np.int32) * 7) % 100
    folder = tmp_path / ".fsr" / "captures" / "20260101-000000"
    folder.mkdir(parents=True)
    (folder / "rp.bin").write_bytes(rowptr.tobytes())
    (folder / "col.bin").write_bytes(col.tobytes())
    raw = struct.pack("<QQQi4x", 1 << 20, 2 << 20, 3 << 20, rows)
    words = [{"at": 0, "size": rowptr.nbytes, "offset": 0, "via": "cudaMalloc"},
             {"at": 8, "size": col.nbytes, "offset": 0, "via": "cudaMalloc"},
             {"at": 16, "size": 4 * nnz, "offset": 0, "via": "cudaMalloc"}]
    record = {"id": 0, "kernel": "_Z4spmv3CsrPKfPf", "name": "spmv(Csr, float const*, float*)", "base": "spmv",
              "grid": [1, 1, 1], "block": [64, 1, 1], "smem": 0,
              "params": [{"offset": 0, "size": 32, "hex": raw.hex(), "words": words}, {**ptr(400), "offset": 32},
                         {**ptr(4 * rows), "offset": 40}],
              "snapshot": {"0.0": "rp.bin", "0.8": "col.bin"}}
    (folder / "capture.json").write_text(json.dumps({"command": ["./app"]}))
    (folder / "launches-7.jsonl").write_text(json.dumps(record) + "\n")
    (launch,) = read_capture(folder).launches
    assert launch.snapshot == {} and launch.member_snapshot == {(0, 0): folder / "rp.bin", (0, 8): folder / "col.bin"}
    (tmp_path / "k.cu").write_text(SPMV)
    (spec,) = kernel_specs([tmp_path / "k.cu"], capture=latest_capture(tmp_path))
    assert spec.origin == "captured", spec.problems
    assert set(spec.inputs) == {"a.rowptr", "a.col"} and spec.inputs["a.col"].endswith("col.bin")
    assert 'col = "in[' in spec.spec and "randint(0, 100)" in spec.spec, spec.spec  # the run's column range
    relaxed = _structure_from_capture(spec.spec, SimpleNamespace(real_inputs=dict(spec.inputs)))
    assert relaxed is not None and "captured()" in relaxed[0]
    line = next(x for x in relaxed[0].splitlines() if x.startswith("a = {"))
    assert 'rowptr = "in[' in line and line.count("captured()") == 2, line


def test_an_eight_byte_structs_saved_pointer_is_its_member(tmp_path: Path):
    """A `{ float* p; }` struct is recorded as the pointer it is: its saved bytes are the member's."""
    import numpy as np

    folder = tmp_path / ".fsr" / "captures" / "20260101-000000"
    folder.mkdir(parents=True)
    (folder / "p.bin").write_bytes(np.arange(128, dtype=np.int32).tobytes())
    record = {"id": 0, "kernel": "_Z1k2Ini", "name": "k(In, int)", "base": "k", "grid": [1, 1, 1],
              "block": [128, 1, 1], "smem": 0, "params": [ptr(512), {"offset": 8, "size": 4, "hex": i32(128)}],
              "snapshot": {"0": "p.bin"}}
    (folder / "capture.json").write_text(json.dumps({"command": ["./app"]}))
    (folder / "launches-7.jsonl").write_text(json.dumps(record) + "\n")
    (tmp_path / "k.cu").write_text("struct In { int* p; };\n__global__ void k(In a, int n) "
                                   "{ int i = threadIdx.x; if (i < n) a.p[i] += 1; }\n")
    (spec,) = kernel_specs([tmp_path / "k.cu"], capture=latest_capture(tmp_path))
    assert spec.origin == "captured", spec.problems
    assert set(spec.inputs) == {"a.p"}, spec.inputs


def links_of(path: Path) -> list[tuple[int, str, int]]:
    links = Path(f"{path}.links")
    if not links.exists():
        return []
    return [(int(at), target, int(offset)) for at, target, offset in (ln.split() for ln in links.read_text().splitlines())]


@pytest.mark.parametrize("cap, followed", [(1 << 20, 3), (16 + 2 * 16, 2), (16, 0)])
def test_the_library_follows_pointers_in_saved_memory_and_saves_what_they_point_to(tmp_path: Path, cap: int,
                                                                                     followed: int):
    """A list of four nodes in their own allocations, and a struct whose `char* name` points into
    another: each saved allocation's words that point into a tracked allocation are links
    (`FILE.links`), and what they point to is saved too, while the cap allows."""
    folder = tmp_path / "capture"
    folder.mkdir()
    subprocess.run([str(built_harness(tmp_path, "links_harness")), str(folder), str(cap)], check=True)
    listed, element, view, tail = read_capture(folder).launches
    path, keys = listed.snapshot[0], []
    while links_of(path) and links_of(path)[0][1] != "-":  # the list, node by node
        ((at, target, offset),) = links_of(path)
        assert at == 8 and offset == 0 and target.endswith(f"-h{len(keys)}.bin")
        path = folder / target
        keys.append(int.from_bytes(path.read_bytes()[:4], "little"))
    assert keys == [11, 12, 13][:followed]
    if followed < 3:  # the next node was over the cap: a link to nothing saved, null in the evaluator
        assert links_of(path) == [(8, "-", 0)]
    if followed == 3:
        assert links_of(path) == []  # the last node's next is null: no link
        ((at, target, offset),) = links_of(element.snapshot[0])
        assert at == 0 and offset == 0 and (folder / target).read_bytes() == b"hello\0"
    # a value that is no pointer, however small (an empty functor of one byte is one): its bytes
    # ("p1"), for a type fsr cannot read; a pointer parameter is saved as what it points to only
    assert listed.value_snapshot[1].read_bytes() == (3).to_bytes(4, "little") and 0 not in listed.value_snapshot
    # a pointer one past the end of an allocation: recorded at its end (nothing to save), and the
    # one-byte functor beside it saved as a value
    assert tail.params[0].alloc is not None and tail.params[0].alloc.offset == tail.params[0].alloc.size == 64
    assert 0 not in tail.snapshot and 0 not in tail.value_snapshot and tail.value_snapshot[1].read_bytes() == b"\0"
    # a struct by value: its own bytes saved ("p0"), its pointer a link into the allocation saved for it
    assert view.value_snapshot[0].read_bytes()[8:12] == (14).to_bytes(4, "little")
    if cap >= 64:
        ((at, target, offset),) = links_of(view.value_snapshot[0])
        assert at == 0 and offset == 8 and (folder / target).read_bytes() == bytes([7]) * 64


def test_the_library_times_each_recorded_launch_from_cuptis_kernel_records(tmp_path: Path):
    """GPU times joined to launches by correlation id: the median of a signature's launches, the
    count timed; a record of a kernel the capture did not keep changes nothing."""
    subprocess.run([str(built_harness(tmp_path, "timing_harness")), str(tmp_path)], check=True)
    launches = {x.grid[0]: x for x in read_capture(tmp_path).launches}
    assert (launches[8].count, launches[8].gpu_ns, launches[8].timed) == (3, 2000, 3)
    assert (launches[4].count, launches[4].gpu_ns, launches[4].timed) == (1, 500, 1)
