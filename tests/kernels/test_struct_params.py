"""Structs passed by value whose members are scalars and pointers (`Matrix A`, a params struct):
read from the file, written in a spec member by member, laid out as the C ABI lays them out,
packed into the launch, and judged by the evaluator with kernels run on the CPU: a rewrite that
reads a member for another (a row's width for its stride, alpha for beta) is wrong."""

from __future__ import annotations

import ctypes
import os
import struct
from pathlib import Path

import pytest

from fsr_lsp.evaluator.gpu.packing import launch_dtypes, launch_values, pack, param_format, struct_dtype
from fsr_lsp.evaluator.job.plan import build_plans
from fsr_lsp.kernels import find_kernel
from fsr_lsp.kernels.c_types import layout, member_size
from fsr_lsp.kernels.struct_fields import struct_fields
from fsr_lsp.source import SourceText
from fsr_lsp.specs import StructArg, parse_spec, render_spec
from fsr_lsp.specs.blocks import spec_template

DATA = Path(__file__).parent.parent / "data" / "structs"
MATMUL = DATA / "matmul_struct.cu"
PARAMS = DATA / "saxpy_params.cu"


# ------------------------------------------------------------------ which structs qualify


def test_members_of_a_struct_of_scalars_and_pointers_are_read_as_parameters_are():
    fields = struct_fields(PARAMS.read_text())["SaxpyParams"]
    assert [(f.name, f.dtype, f.is_pointer, f.pointee_const) for f in fields] == [
        ("n", "int32", False, False), ("alpha", "float32", False, False), ("x", "float32", True, True),
        ("y", "float32", True, False), ("flag", "int8", False, False), ("beta", "float64", False, False)]
    assert [f.name for f in struct_fields(MATMUL.read_text())["Matrix"]] == ["width", "height", "stride", "elements"]


@pytest.mark.parametrize("body", [
    "float a[UNKNOWN]; float* p;",  # an array fsr cannot size
    "float* ps[2];",  # an array of pointers
    "float2 vs[2]; float* p;",  # an array of vectors
    "int bits : 3; float* p;",  # a bit field
    "struct { int a; } inner; float* p;",  # a nested struct
    "float** rows;",  # a pointer to pointers
    "Unknown u; float* p;",  # a type fsr cannot read
])
def test_a_struct_whose_layout_would_be_a_guess_is_left_out(body):
    assert "S" not in struct_fields(f"struct S {{ {body} }};")


def test_base_classes_alignas_and_templates_are_left_out():
    text = ("struct B { int n; }; struct D : B { float* p; };\n"
            "struct alignas(16) A { float* p; int n; };\n"
            "template <typename T> struct T1 { T* p; int n; };\n")
    found = struct_fields(text)
    assert set(found) == {"B"}


def test_aliases_type_members_and_a_typedef_name_serves():
    found = struct_fields("typedef float real; typedef struct { real* data; long long n; } Vec;", {"real": "float"})
    assert [(f.name, f.dtype) for f in found["Vec"]] == [("data", "float32"), ("n", "int64")]


# ------------------------------------------------------------------ the C ABI's layout


class _Host(ctypes.Structure):
    _fields_ = [("n", ctypes.c_int), ("alpha", ctypes.c_float), ("x", ctypes.c_void_p), ("y", ctypes.c_void_p),
                ("flag", ctypes.c_int8), ("beta", ctypes.c_double)]


def test_layout_is_the_host_compilers():
    fields = struct_fields(PARAMS.read_text())["SaxpyParams"]
    offsets, size, align = layout([member_size(f.dtype, f.lanes, f.is_pointer) for f in fields])
    assert offsets == [getattr(_Host, name).offset for name, _ in _Host._fields_]
    assert (size, align) == (ctypes.sizeof(_Host), ctypes.alignment(_Host))


def test_members_are_packed_at_their_offsets():
    kernel = find_kernel(PARAMS.read_text(), "saxpy_params")
    spec = parse_spec(SourceText(PARAMS.read_text()), kernel).spec
    plan = build_plans(kernel, spec)[0]
    names = [a.name for a in plan.args]
    assert names == ["p", "p.n", "p.alpha", "p.x", "p.y", "p.flag", "p.beta"]
    values = [None, 1, 1.5, 0x7000_0000_1000, 0x7000_0000_2000, 1, 0.25]
    packed = pack(plan.args[1:], values[1:])
    host = _Host(1, 1.5, 0x7000_0000_1000, 0x7000_0000_2000, 1, 0.25)
    assert packed == bytes(host)
    assert launch_values(plan.args, values) == [packed]
    assert launch_dtypes(plan.args) == [struct_dtype(40, 8)]


def test_a_struct_after_an_int_is_aligned_in_the_parameter_buffer():
    fmt = param_format(["int32", struct_dtype(24, 8), None, "float32"])
    assert fmt == "i" + "x" * 4 + "24s" + "Pf"
    assert struct.calcsize(fmt[:fmt.index("24s")]) == 8  # the struct starts at its alignment


# ------------------------------------------------------------------ the spec


def test_spec_names_each_member_and_renders_back():
    text = MATMUL.read_text()
    spec = parse_spec(SourceText(text), find_kernel(text, "MatMulKernel")).spec
    assert isinstance(spec.args[0], StructArg)
    assert spec.args[0].member("stride").value == "N + 5"
    rendered = render_spec(spec)
    assert 'A = { width = "N", height = "N", stride = "N + 5", elements = "in[N * (N + 5)] normal()" }' in rendered
    again = text.replace(text[text.index("/* @fsr"):text.index("*/") + 3], rendered.rstrip("\n"))
    assert parse_spec(SourceText(again), find_kernel(again, "MatMulKernel")).spec.args == spec.args


@pytest.mark.parametrize("change, said", [
    ('stride = "N + 5", elements', 'no entry for elements'),
    ('A = {', 'is a struct (Matrix) passed by value'),
    ('elements = "in[N * (N + 5)]"', 'length'),
])
def test_a_member_missing_or_wrong_is_an_error_on_its_parameter(change, said):
    text = MATMUL.read_text()
    if change.startswith("stride"):
        bad = text.replace('stride = "N + 5", elements = "in[N * (N + 5)]"', 'stride = "N + 5", elemnts = "in[N]"')
    elif change.startswith("A ="):
        bad = text.replace('A = { width = "N", height = "N", stride = "N + 5", elements = "in[N * (N + 5)]" }',
                           'A = "in[N]"')
    else:
        bad = text.replace(change, 'elements = "in[N * M]"')
    result = parse_spec(SourceText(bad), find_kernel(bad, "MatMulKernel"))
    assert result.spec is None
    problem = result.errors[0]
    assert said in problem.message
    line = bad.splitlines()[problem.span.start.line]
    assert line.startswith("A = ")  # placed on the parameter's own line


def test_the_template_for_a_kernel_without_a_spec_lists_the_members():
    text = MATMUL.read_text()
    bare = text[:text.index("/* @fsr")] + text[text.index("*/") + 3:]
    template = spec_template(find_kernel(bare, "MatMulKernel"))
    assert 'A = { width = 1, height = 1, stride = 1, elements = "inout[n]" }' in template


# ------------------------------------------------------------------ judged on the CPU

cuda_on_cpu = pytest.importorskip("tests.support.cuda_on_cpu")
needs_cxx = pytest.mark.skipif(cuda_on_cpu.cxx() is None and os.environ.get("FSR_REQUIRE_NVCC") != "1",
                               reason="no C++ compiler (g++) to build kernels for the CPU")


@needs_cxx
def test_a_faithful_rewrite_of_a_struct_kernel_is_verified_and_width_for_stride_is_wrong():
    pytest.importorskip("torch")
    source = MATMUL.read_text()
    good = cuda_on_cpu.evaluate_on_cpu(source, "MatMulKernel", (DATA / "matmul_struct_good.cu").read_text())
    assert good.status == "verified", good.message
    accuracy = next(c for c in good.checks if c.name == "accuracy")
    assert "double precision" in accuracy.detail and "C.elements" in accuracy.detail  # the double build's own layout
    bad = cuda_on_cpu.evaluate_on_cpu(source, "MatMulKernel",
                                      (DATA / "matmul_struct_width_for_stride.cu").read_text())
    assert bad.status == "wrong" and "C.elements" in bad.message, bad.message


SAXPY_BETA_AS_ALPHA = """__global__ void saxpy_params(SaxpyParams p)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n)
        p.y[i] = p.alpha * p.x[i] + p.alpha * p.y[i] + (p.flag ? 1.0f : 0.0f);
}
"""
SAXPY_FMA = """__global__ void saxpy_params(SaxpyParams p)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= p.n) return;
    float y = p.y[i];
    p.y[i] = fmaf(p.alpha, __ldg(p.x + i), (float)p.beta * y) + (p.flag ? 1.0f : 0.0f);
}
"""


@needs_cxx
def test_scalar_members_of_mixed_sizes_reach_the_kernel_at_their_offsets():
    pytest.importorskip("torch")
    source = PARAMS.read_text()
    assert cuda_on_cpu.evaluate_on_cpu(source, "saxpy_params", SAXPY_FMA).status == "verified"
    bad = cuda_on_cpu.evaluate_on_cpu(source, "saxpy_params", SAXPY_BETA_AS_ALPHA)
    assert bad.status == "wrong" and "p.y" in bad.message, bad.message


@needs_cxx
def test_scalars_around_a_struct_reach_the_kernel_where_it_reads_them():
    pytest.importorskip("torch")
    from ..gpu.test_struct_params_gpu import SHIFTED_BETA_AS_ALPHA, SHIFTED_GOOD

    source = (DATA / "after_int.cu").read_text()
    # the literals equal what the original read: right on the spec's values (the launch packed
    # each where the kernel reads it), wrong only once the scalars move (input_sets.py)
    good = cuda_on_cpu.evaluate_on_cpu(source, "shifted_saxpy", SHIFTED_GOOD, ranges=False)
    assert good.status == "verified", good.message
    folded = cuda_on_cpu.evaluate_on_cpu(source, "shifted_saxpy", SHIFTED_GOOD)
    assert folded.status == "wrong" and "other values of its float arguments" in folded.message, folded.message
    bad = cuda_on_cpu.evaluate_on_cpu(source, "shifted_saxpy", SHIFTED_BETA_AS_ALPHA)
    assert bad.status == "wrong" and "p.y" in bad.message, bad.message


# ------------------------------------------------------------------ vector types and one-type structs by value


def test_a_vector_by_value_is_its_lanes_aligned_as_cuda_aligns_them():
    from fsr_lsp.kernels.c_types import by_value_alignment

    assert by_value_alignment("float4", "float32", 4) == 16 and by_value_alignment("half2", "float16", 2) == 4
    assert by_value_alignment("float3", "float32", 3) == 4
    assert by_value_alignment("Box", "float32", 6) == 4  # a struct of six floats: one lane's
    text = (DATA / "vector_by_value.cu").read_text()
    kernel = find_kernel(text, "dot4")
    plan = build_plans(kernel, parse_spec(SourceText(text), kernel).spec)[0]
    c = plan.args[1]
    assert (c.kind, c.lanes, c.value, c.align) == ("scalar", 4, (1.5, -2.0, 0.25, 4.0), 16)
    assert launch_dtypes(plan.args)[1] == struct_dtype(16, 16)
    assert launch_values(plan.args, [1, c.value, 0, 0])[1] == struct.pack("<4f", 1.5, -2.0, 0.25, 4.0)
    assert param_format(launch_dtypes(plan.args)) == "i" + "x" * 12 + "16s" + "PP"


def test_a_vector_by_value_takes_one_value_or_one_per_lane():
    text = (DATA / "vector_by_value.cu").read_text()
    one = text.replace("c = [1.5, -2.0, 0.25, 4.0]", "c = 2.0")
    kernel = find_kernel(one, "dot4")
    assert build_plans(kernel, parse_spec(SourceText(one), kernel).spec)[0].args[1].value == (2.0,) * 4
    three = text.replace("c = [1.5, -2.0, 0.25, 4.0]", "c = [1.0, 2.0, 3.0]")
    result = parse_spec(SourceText(three), find_kernel(three, "dot4"))
    assert result.spec is None and "has 4 lanes" in result.errors[0].message


VECTOR_LITERALS = """__global__ void dot4(int n, float4 c, const float4* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float4 v = x[i]; y[i] = 1.5f * v.x + -2.0f * v.y + 0.25f * v.z + 4.0f * v.w; }
}
"""


@needs_cxx
def test_each_lane_of_a_vector_by_value_reaches_the_kernel():
    pytest.importorskip("torch")
    source = (DATA / "vector_by_value.cu").read_text()
    good = cuda_on_cpu.evaluate_on_cpu(source, "dot4", VECTOR_LITERALS)
    assert good.status == "verified", good.message  # the literals equal the lanes the original read
    bad = cuda_on_cpu.evaluate_on_cpu(source, "dot4", VECTOR_LITERALS.replace("4.0f * v.w", "4.0f * v.x"))
    assert bad.status == "wrong", bad.message


def test_a_struct_of_the_file_typed_by_a_header_is_read(tmp_path):
    from fsr_lsp.kernels.aliases import with_included_aliases

    (tmp_path / "common.h").write_text("#pragma once\ntypedef float real;\n")
    text = ('#include "common.h"\nstruct LJ { real cutoff2; real e24s6; int n; real* out; };\n'
            "__global__ void force(LJ lj, real* f) { f[0] = lj.cutoff2 * lj.e24s6 * lj.n; lj.out[0] = 1; }\n")
    kernel = with_included_aliases(find_kernel(text, "force"), text, [tmp_path])
    assert [(f.name, f.dtype) for f in kernel.params[0].fields] == [
        ("cutoff2", "float32"), ("e24s6", "float32"), ("n", "int32"), ("out", "float32")]


# ------------------------------------------------------------------ template params structs


def test_a_template_struct_is_its_members_with_the_arguments_substituted():
    from fsr_lsp.kernels.struct_fields import resolved, struct_declarations

    text = (DATA / "template_params.cu").read_text()
    decl = struct_declarations(text)["ScaleParams"]
    assert decl.template == ("T",)
    fields = resolved(decl, ["double"], {})
    assert [(f.name, f.dtype, f.is_pointer) for f in fields] == [
        ("out", "float64", True), ("in", "float64", True), ("n", "int32", False), ("scale", "float64", False)]
    kernel = find_kernel(text, "scale_kernel")  # ScaleParams<T>: T is the kernel's, known from the spec
    assert [(f.name, f.dtype) for f in kernel.params[0].fields] == [
        ("out", None), ("in", None), ("n", "int32"), ("scale", None)]
    assert "ScaleParams" not in struct_fields(text)  # a template is read only where it is instantiated


@needs_cxx
def test_a_template_struct_kernel_is_judged_with_its_spec_template():
    pytest.importorskip("torch")
    source = (DATA / "template_params.cu").read_text()
    kernel = find_kernel(source, "scale_kernel")
    plan = build_plans(kernel, parse_spec(SourceText(source), kernel).spec)[0]
    assert [(a.name, a.dtype) for a in plan.args[1:]] == [
        ("p.out", "float32"), ("p.in", "float32"), ("p.n", "int32"), ("p.scale", "float32")]
    good = source[source.index("template <typename T>\n__global__"):].replace("p.scale * p.in[i]", "p.in[i] * p.scale")
    assert cuda_on_cpu.evaluate_on_cpu(source, "scale_kernel", good).status == "verified"
    bad = good.replace("p.in[i] * p.scale", "p.in[i] * (T)0.75f + (T)(p.n == 1000)")
    result = cuda_on_cpu.evaluate_on_cpu(source, "scale_kernel", bad)
    assert result.status == "wrong" and "p.out" in result.message, result.message


# ------------------------------------------------------------------ enums, and types fsr cannot pass

ENUM_KERNEL = """enum Act { RELU = 0, GELU = 1 };
enum class Mode : unsigned char { A, B };
/* @fsr
bench = { n = 4096 }
tests = [ { n = 1 }, { n = 1000 } ]
grid = "cdiv(n, 128)"
block = 128
[args]
x = "in[n]"
y = "out[n]"
n = "n"
act = 1
mode = 1
*/
__global__ void act_kernel(const float* x, float* y, int n, Act act, Mode mode)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = (act == RELU ? fmaxf(x[i], 0.f) : x[i] * 0.5f) + (mode == Mode::B ? 1.f : 0.f);
}
"""


def test_an_enum_is_an_integer_of_its_type():
    kernel = find_kernel(ENUM_KERNEL, "act_kernel")
    assert [(p.name, p.dtype) for p in kernel.params[3:]] == [("act", "int32"), ("mode", "uint8")]


def test_a_type_fsr_cannot_pass_is_an_error_on_its_line_not_a_crash():
    text = ENUM_KERNEL.replace("enum Act { RELU = 0, GELU = 1 };", "").replace("act == RELU", "true")
    result = parse_spec(SourceText(text), find_kernel(text, "act_kernel"))
    assert result.spec is None
    assert "fsr cannot pass a value of type 'Act'" in result.errors[0].message
    assert text.splitlines()[result.errors[0].span.start.line].startswith("act = ")


@needs_cxx
def test_a_kernel_taking_enums_is_judged():
    pytest.importorskip("torch")
    assert cuda_on_cpu.evaluate_on_cpu(ENUM_KERNEL, "act_kernel", None).status == "verified"
    wrong = ENUM_KERNEL[ENUM_KERNEL.index("__global__"):].replace("mode == Mode::B ? 1.f", "mode == Mode::A ? 1.f")
    assert cuda_on_cpu.evaluate_on_cpu(ENUM_KERNEL, "act_kernel", wrong).status == "wrong"


def tiled_launch(n: int) -> dict:
    def mat(base: int, offset: int) -> dict:
        return {"offset": offset, "size": 24, "hex": struct.pack("<iii4xQ", n, n, n, base).hex(),
                "words": [{"at": 16, "size": 4 * n * n, "offset": 0, "via": "cudaMalloc"}]}
    return {"id": 0, "kernel": "_Z12tiled_matmul3MatS_S_", "name": "tiled_matmul(Mat, Mat, Mat)",
            "base": "tiled_matmul", "grid": [n // 16, n // 16, 1], "block": [16, 16, 1], "smem": 0,
            "params": [mat(1 << 20, 0), mat(2 << 20, 24), mat(3 << 20, 48)]}


@needs_cxx
def test_a_captured_struct_kernel_for_whole_tiles_is_proven_at_whole_tiles_with_its_helper_stores(tmp_path):
    """The capture's draft tests sizes 1, 17, 33 and reads `C.elements` as input (its stores are in
    a helper): the proof moves the tests to whole tiles (every size of the struct moves together)
    and widens `C.elements` to inout, member of a struct as it is."""
    pytest.importorskip("torch")
    from fsr_lsp.capture import latest_capture
    from fsr_lsp.drafting.resolver import kernel_specs
    from fsr_lsp.drafting.proof import prove

    from ..support.captures import write_capture

    source = (DATA / "tiled_struct_matmul.cu").read_text()
    (tmp_path / "mm.cu").write_text(source)
    write_capture(tmp_path, [tiled_launch(64)])
    (drafted,) = kernel_specs([tmp_path / "mm.cu"], capture=latest_capture(tmp_path))
    widest = "max(A_cols, A_rows, A_pitch, B_cols, B_rows, B_pitch, C_cols, max(C_rows, C_pitch))"
    assert 'elements' not in drafted.spec and f'data = "in[{widest} * {widest}]"' in drafted.spec, drafted.spec
    with cuda_on_cpu.cpu_evaluator() as evaluator:
        proof = prove(evaluator, source, "tiled_matmul", drafted.spec)
    assert proof.proven, proof.message
    assert f'C = {{ cols = "C_cols", rows = "C_rows", pitch = "C_pitch", data = "inout[{widest} * {widest}]" }}' \
        in proof.spec, proof.spec
    assert "tests = [{ A_cols = 16, A_rows = 16," in proof.spec and "edge = false" in proof.spec
    # the nine sizes, one value in the run, are tested apart too, in whole tiles
    assert "{ A_cols = 16, A_rows = 32, A_pitch = 48, B_cols = 16, B_rows = 32, B_pitch = 48," in proof.spec
    assert "{ A_cols = 32, A_rows = 16, A_pitch = 48, B_cols = 32, B_rows = 16, B_pitch = 48," in proof.spec
    assert "in whole blocks of 16" in proof.message and "apart in whole blocks" in proof.message


# ------------------------------------------------------------------ arrays and vectors inside a struct

GATHER_LITERALS = """__global__ void gather2d(Strided p)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int n = p.sizes[0] * p.sizes[1];
    if (i >= n) return;
    int r = i / p.sizes[1], c = i % p.sizes[1];
    float v = p.x[r * p.strides[0] + c];
    p.y[i] = 0.5f * v + -1.0f * v * v + 2.0f + 0.25f * 2.0f;
}
"""


def test_array_and_vector_members_are_their_lanes_at_their_alignment():
    text = (DATA / "strided_params.cu").read_text()
    kernel = find_kernel(text, "gather2d")
    assert [(f.name, f.lanes) for f in kernel.params[0].fields] == [
        ("x", 1), ("y", 1), ("ndim", 1), ("sizes", 4), ("strides", 4), ("w", 4)]
    plan = build_plans(kernel, parse_spec(SourceText(text), kernel).spec)[0]  # R=3, C=5
    members = plan.args[1:]
    assert [a.value for a in members[2:]] == [2, (3, 5, 1, 1), (12, 1, 0, 0), (0.5, -1.0, 2.0, 0.25)]

    class Host(ctypes.Structure):
        _fields_ = [("x", ctypes.c_void_p), ("y", ctypes.c_void_p), ("ndim", ctypes.c_int),
                    ("sizes", ctypes.c_int * 4), ("strides", ctypes.c_int * 4), ("pad", ctypes.c_byte * 12),
                    ("w", ctypes.c_float * 4)]  # float4 is 16-aligned: 12 bytes of padding before it

    packed = pack(members, [0x1000, 0x2000, 2, (3, 5, 1, 1), (12, 1, 0, 0), (0.5, -1.0, 2.0, 0.25)])
    host = Host(0x1000, 0x2000, 2, (ctypes.c_int * 4)(3, 5, 1, 1), (ctypes.c_int * 4)(12, 1, 0, 0),
                (ctypes.c_byte * 12)(), (ctypes.c_float * 4)(0.5, -1.0, 2.0, 0.25))
    assert len(packed) == 80 and packed == bytes(host)


@needs_cxx
def test_each_array_element_inside_a_struct_reaches_the_kernel():
    pytest.importorskip("torch")
    source = (DATA / "strided_params.cu").read_text()
    good = cuda_on_cpu.evaluate_on_cpu(source, "gather2d", GATHER_LITERALS)
    assert good.status == "verified", good.message  # the literals equal what the original read
    bad = cuda_on_cpu.evaluate_on_cpu(source, "gather2d", GATHER_LITERALS.replace("c];", "c * 2];"))
    assert bad.status == "wrong", bad.message


@pytest.mark.parametrize("file, kernel", [("vector_by_value.cu", "dot4"), ("strided_params.cu", "gather2d"),
                                          ("saxpy_params.cu", "saxpy_params")])
def test_plans_with_lanes_and_members_cross_to_the_worker_unchanged(file, kernel):
    """The worker gets its job as JSON: a lane tuple must come back a tuple (a list broke the
    range sets' cache key in the GPU worker), a member keep its struct."""
    from fsr_lsp.evaluator.records import SizePlan
    from fsr_lsp.evaluator.worker.serde import from_json, to_json

    text = (DATA / file).read_text()
    k = find_kernel(text, kernel)
    for plan in build_plans(k, parse_spec(SourceText(text), k).spec):
        again = from_json(SizePlan, to_json(plan))
        assert again == plan
        hash(tuple(a.value for a in again.args if a.kind == "scalar"))


# ------------------------------------------------------------------ layouts fsr must not get wrong silently


def test_a_vector_named_through_a_typedef_aligns_as_the_vector():
    text = (DATA / "vector_by_value.cu").read_text().replace("float4 c,", "vec4 c,")
    text = "typedef float4 vec4;\n" + text
    kernel = find_kernel(text, "dot4")
    assert kernel.params[1].align == 16
    plan = build_plans(kernel, parse_spec(SourceText(text), kernel).spec)[0]
    assert plan.args[1].align == 16 and param_format(launch_dtypes(plan.args)) == "i" + "x" * 12 + "16s" + "PP"


def test_double4_aligns_to_16_as_cuda_has_it():
    assert member_size("float64", 4, False) == (32, 16) and member_size("float32", 4, False) == (16, 16)


def test_the_double_build_aligns_vectors_and_arrays_as_doubles():
    from fsr_lsp.evaluator.job.widening import wide_args

    text = (DATA / "strided_params.cu").read_text()
    kernel = find_kernel(text, "gather2d")
    plan = build_plans(kernel, parse_spec(SourceText(text), kernel).spec)[0]
    w = {a.name: a for a in wide_args(plan)}
    assert (w["p.w"].dtype, w["p.w"].align) == ("float64", 16)  # double4
    vector = (DATA / "vector_by_value.cu").read_text().replace("float4 c", "float3 c").replace(
        "c = [1.5, -2.0, 0.25, 4.0]", "c = [1.5, -2.0, 0.25]")
    k = find_kernel(vector, "dot4")
    c = wide_args(build_plans(k, parse_spec(SourceText(vector), k).spec)[0])[1]
    assert (c.dtype, c.align) == ("float64", 8)  # a double3 aligns to one double


def test_a_struct_chosen_by_if_or_retyped_by_a_define_is_read_as_that_build_reads_it():
    from fsr_lsp.kernels.aliases import with_included_aliases

    text = ("#ifdef ENABLE_BF16\ntypedef __nv_bfloat16 floatX;\n#else\ntypedef float floatX;\n#endif\n"
            "struct P { floatX* out; floatX scale; int n; };\n#define USE_FLOAT\n#ifdef USE_FLOAT\n"
            "struct Q { float* x; float s; };\n#else\nstruct Q { double* x; double s; };\n#endif\n"
            "__global__ void k(P p, Q q) {}\n")
    kernel = find_kernel(text, "k")
    assert [f.dtype for f in kernel.params[1].fields] == ["float32", "float32"]  # the #ifdef branch taken
    built = with_included_aliases(kernel, text, [], ["-DENABLE_BF16"])
    assert [f.dtype for f in built.params[0].fields] == ["bfloat16", "bfloat16", "int32"]


def test_a_name_two_namespaces_declare_and_packed_structs_are_not_read():
    two = ("namespace a { struct P { float* x; int n; }; }\nnamespace b { struct P { int n; float* x; }; }\n"
           "__global__ void k(a::P p) {}\n")
    assert find_kernel(two, "k").params[0].fields == ()
    packed = "#pragma pack(push, 1)\nstruct P { char c; float* x; };\n#pragma pack(pop)\n__global__ void k(P p) {}\n"
    assert find_kernel(packed, "k").params[0].fields == ()
    private = "class P { float* x; int n; public: int m; };\n__global__ void k(P p) {}\n"
    assert find_kernel(private, "k").params[0].fields == ()


ALIGNAS_VECTOR = """struct alignas(16) V4 { float a, b, c, d; };
/* @fsr
bench = { n = 256 }
grid = "cdiv(n, 128)"
block = 128
[args]
n = "n"
v = [1.0, 2.0, 3.0, 4.0]
y = "out[n]"
*/
__global__ void k(int n, V4 v, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = v.a + v.b * v.c - v.d;
}
"""


@needs_cxx
def test_a_layout_fsr_would_pack_otherwise_than_the_compiler_fails_the_build_and_says_so():
    """An alignas(16) struct of four floats passed by value: fsr reads it as four float lanes
    (alignment 4, where the compiler says 16). The build's layout check refuses it, naming the
    parameter, instead of packing the values where the kernel does not read them."""
    pytest.importorskip("torch")
    result = cuda_on_cpu.evaluate_on_cpu(ALIGNAS_VECTOR, "k", None)
    assert result.status == "spec_error" and "fsr lays out `v` (V4) otherwise than this build" in result.message


def test_a_bool_member_takes_true():
    text = "struct F { bool on; float* y; };\n/* @fsr\nbench = { n = 4 }\ngrid = 1\nblock = 4\n[args]\n" \
           'f = { on = true, y = "out[n]" }\n*/\n__global__ void k(F f) { f.y[threadIdx.x] = f.on; }\n'
    spec = parse_spec(SourceText(text), find_kernel(text, "k")).spec
    assert spec is not None and spec.args[0].member("on").value == 1


def test_an_eight_byte_struct_is_drafted_from_its_capture(tmp_path):
    from fsr_lsp.capture import latest_capture
    from fsr_lsp.drafting.resolver import kernel_specs

    from ..support.captures import ptr, write_capture

    (tmp_path / "k.cu").write_text("struct Out { float* p; };\n__global__ void k(Out o, int n) "
                                   "{ int i = threadIdx.x; if (i < n) o.p[i] = 1.0f; }\n")
    record = {"id": 0, "kernel": "_Z1k3Outi", "name": "k(Out, int)", "base": "k", "grid": [1, 1, 1],
              "block": [128, 1, 1], "smem": 0, "params": [ptr(512), {"offset": 8, "size": 4, "hex": "80000000"}]}
    write_capture(tmp_path, [record])
    (spec,) = kernel_specs([tmp_path / "k.cu"], capture=latest_capture(tmp_path))
    assert spec.origin == "captured" and 'o = { p = "out[n]" }' in spec.spec, (spec.problems, spec.spec)


def test_a_model_is_shown_the_structs_the_kernel_takes_by_value():
    """The prompt's declarations (search/prompting.py) hold the struct's definition as the file
    writes it: a rewrite uses its members, and must not define it again."""
    from fsr_lsp.kernels.discover import kernel_source

    text = MATMUL.read_text()
    shown = kernel_source(SourceText(text), find_kernel(text, "MatMulKernel")).declarations
    assert shown.startswith("typedef struct {") and "float* elements;" in shown and shown.endswith("} Matrix;")
    plain = "/* @fsr\nbench = { n = 4 }\n*/\n__device__ float twice(float v) { return 2 * v; }\n" \
            "__global__ void k(float* y) { y[0] = twice(y[0]); }\n"
    assert kernel_source(SourceText(plain), find_kernel(plain, "k")).declarations == \
        "__device__ float twice(float v) { return 2 * v; }"
