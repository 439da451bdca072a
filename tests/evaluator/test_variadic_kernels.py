"""Variadic kernels (`const IN*... in`, as deep-learning frameworks write their elementwise
templates): one parameter per element of the pack, `in_0`, `in_1`, as the instantiation's symbol,
the launch and the spec have them (kernels/packs.py). Before, a capture of one gave no spec: its
symbol had more parameters than fsr read in the source."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsr_lsp.capture import latest_capture
from fsr_lsp.drafting.resolver import kernel_specs
from fsr_lsp.evaluator.compile.compiler import CompileOptions, compile_kernel
from fsr_lsp.evaluator.job.plan import build_plans
from fsr_lsp.evaluator.job.prepare import kernel_ref
from fsr_lsp.kernels import find_kernel
from fsr_lsp.kernels.packs import expanded, pack_name
from fsr_lsp.source import SourceText
from fsr_lsp.specs import parse_spec

from ..support.captures import i32, ptr, write_capture

ADD_ALL = """template <typename R, typename... IN>
__global__ void add_all(int n, R* out, const IN*... in)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = (R(0) + ... + R(in[i]));
}
"""
SPEC = """/* @fsr
bench = { n = 4096 }
tests = [ { n = 1000 } ]
grid = "cdiv(n, 256)"
block = 256
template = "float, float, __half"
[args]
n = "n"
out = "out[n]"
in_0 = "in[n]"
in_1 = "in[n]"
*/
"""


def kernel(text: str = ADD_ALL):
    return find_kernel(SourceText(text), "add_all")


def test_each_pack_parameter_is_one_per_element_with_that_elements_type():
    k = kernel()
    assert pack_name(k) == "IN" and [p.name for p in k.params] == ["n", "out", "in"]
    inst = expanded(k, "float, float, __half")
    assert [p.name for p in inst.params] == ["n", "out", "in_0", "in_1"]
    in_0, in_1 = inst.params[2:]
    assert (in_0.base_type, in_0.dtype, in_0.pointee_const) == ("float", "float32", True)
    assert (in_1.base_type, in_1.dtype, in_1.text) == ("__half", "float16", "const __half * in_1")
    assert expanded(k, "float") .params[2:] == ()  # an empty pack: no parameter
    assert expanded(k, None) is k and expanded(inst, "float, float, __half") == inst  # once is enough
    plain = kernel(ADD_ALL.replace("typename... IN", "typename IN").replace("IN*... in", "IN* in"))
    assert pack_name(plain) is None and expanded(plain, "float, float") is plain


def test_a_spec_names_the_expanded_parameters_and_is_refused_naming_them_when_one_is_missing():
    src = SourceText(SPEC + ADD_ALL)
    result = parse_spec(src, find_kernel(src, "add_all"))
    assert result.spec is not None, result.problems
    assert [a.name for a in result.spec.args] == ["n", "out", "in_0", "in_1"]
    plans = build_plans(expanded(find_kernel(src, "add_all"), result.spec.template), result.spec)
    assert [(a.name, a.dtype) for a in plans[-1].args if a.kind == "buffer"] == [
        ("out", "float32"), ("in_0", "float32"), ("in_1", "float16")]
    short = SourceText(SPEC.replace('in_1 = "in[n]"\n', "") + ADD_ALL)
    problems = [p.message for p in parse_spec(short, find_kernel(short, "add_all")).problems]
    assert any("no entry for in_1" in m for m in problems), problems


@pytest.mark.nvcc
def test_the_instantiation_compiles_with_each_elements_type(tmp_path: Path):
    src = SourceText(SPEC + ADD_ALL)
    spec = parse_spec(src, find_kernel(src, "add_all")).spec
    ref = kernel_ref(expanded(find_kernel(src, "add_all"), spec.template), spec)
    assert ref.param_types == ("int", "float *", "const float *", "const __half *")
    r = compile_kernel("#include <cuda_fp16.h>\n" + SPEC + ADD_ALL, ref,
                       CompileOptions(arch="sm_90a", cache_dir=str(tmp_path), compiler="nvcc"))
    assert r.ok, r.log
    assert r.binary.entry.startswith("_Z7add_allIfJf6__halfEEviPT_DpPKT0_"), r.binary.entry


def test_a_capture_of_a_variadic_kernel_gives_a_spec_of_its_instantiation(tmp_path: Path):
    """The run launched `add_all<float, float, __half>`: its symbol has four parameters, the
    source three (before: "has 4 parameters, the kernel 3 (another kernel of the same name?)")."""
    n = 4096
    (tmp_path / "k.cu").write_text("#include <cuda_fp16.h>\n" + ADD_ALL)
    record = {"id": 0, "kernel": "_Z7add_allIfJf6__halfEEviPT_DpPKT0_",
              "name": "void add_all<float, float, __half>(int, float*, float const*, __half const*)",
              "base": "add_all", "grid": [n // 256, 1, 1], "block": [256, 1, 1], "smem": 0,
              "params": [{"offset": 0, "size": 4, "hex": i32(n)}, {**ptr(4 * n), "offset": 8},
                         {**ptr(4 * n), "offset": 16}, {**ptr(2 * n), "offset": 24}]}
    write_capture(tmp_path, [record])
    (spec,) = kernel_specs([tmp_path / "k.cu"], capture=latest_capture(tmp_path))
    assert spec.origin == "captured", spec.problems
    assert 'template = "float, float, __half"' in spec.spec, spec.spec
    for line in ('in_0 = "in[n]"', 'in_1 = "in[n]"', 'out = "out[n]"'):
        assert line in spec.spec, spec.spec


APPLY = """struct Twice { __device__ float operator()(float a, __half b) const { return 2.f * a + __half2float(b); } };

template <typename F, typename R, typename... IN>
__global__ void apply(F f, int n, R* out, const IN*... in)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = f(in[i]...);
}
"""


def test_a_functor_passed_by_value_is_passed_as_the_run_passed_it(tmp_path: Path):
    """The elementwise templates take their functor by value (an empty struct, one byte): a
    type fsr cannot fill, so the run's own byte, saved by the capture ("p0"), is what it gets."""
    n = 4096
    (tmp_path / "k.cu").write_text("#include <cuda_fp16.h>\n" + APPLY)
    folder = write_capture(tmp_path, [{
        "id": 0, "kernel": "_Z5applyI5TwicefJf6__halfEEvT_iPT0_DpPKT1_",
        "name": "void apply<Twice, float, float, __half>(Twice, int, float*, float const*, __half const*)",
        "base": "apply", "grid": [n // 256, 1, 1], "block": [256, 1, 1], "smem": 0,
        "params": [{"offset": 0, "size": 1, "hex": "00"}, {"offset": 4, "size": 4, "hex": i32(n)},
                   {**ptr(4 * n), "offset": 8}, {**ptr(4 * n), "offset": 16}, {**ptr(2 * n), "offset": 24}],
        "snapshot": {"p0": "inputs-7-0-p0.bin", "p1": "inputs-7-0-p1.bin"}}])
    (folder / "inputs-7-0-p0.bin").write_bytes(b"\0")
    (folder / "inputs-7-0-p1.bin").write_bytes(int(n).to_bytes(4, "little"))
    (spec,) = kernel_specs([tmp_path / "k.cu"], capture=latest_capture(tmp_path))
    assert spec.origin == "captured", spec.problems
    assert 'f = "captured()"' in spec.spec and 'in_1 = "in[n] normal()"' in spec.spec, spec.spec
    assert set(spec.inputs) == {"f"}, spec.inputs  # `n`, an int it can read, is no saved input


def test_template_arguments_with_commas_inside_are_one_argument_each():
    """OneFlow's softmax is launched as `SoftmaxWarpImpl<DirectLoad<float, float>, DirectStore<float,
    float>, float, 4, ...>`: its LOAD is `DirectLoad<float, float>`, not `DirectLoad<float`."""
    from fsr_lsp.specs.param_types import template_substitution

    k = find_kernel(SourceText("template <typename LOAD, typename STORE, int N>\n"
                               "__global__ void softmax(LOAD load, STORE store, int rows) { }\n"), "softmax")
    assert template_substitution(k, "DirectLoad<float, float>, DirectStore<float, float>, 4") == {
        "LOAD": "DirectLoad<float, float>", "STORE": "DirectStore<float, float>", "N": "4"}


SOFTMAX_LIKE = """template <typename SRC, typename DST>
struct DirectLoad {
  DirectLoad(const SRC* src, int64_t row_size) : src(src), row_size(row_size) {}
  template <int N>
  __device__ void load(DST* dst, int64_t row, int64_t col) const { dst[0] = static_cast<DST>(src[row * row_size + col]); }
  const SRC* src;
  int64_t row_size;
};

template <typename LOAD, int pack_size>
__global__ void scale_rows(LOAD load, float* out, int rows)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) load.template load<pack_size>(out + r, r, 0);
}
"""


def test_a_struct_passed_as_a_template_type_parameter_is_read_member_by_member(tmp_path: Path):
    """OneFlow's softmax takes `LOAD load` with LOAD = `DirectLoad<float, float>` (a pointer and a
    row size): read member by member once instantiated, its buffer sized by the run, as a struct
    of the file's own type is. (As a value fsr cannot read, the run's bytes, its pointer reached
    memory too large to save, and the launch got null.)"""
    rows, cols = 4096, 64
    (tmp_path / "k.cu").write_text("#include <cstdint>\n" + SOFTMAX_LIKE)
    raw = (1 << 20).to_bytes(8, "little") + cols.to_bytes(8, "little")
    folder = write_capture(tmp_path, [{
        "id": 0, "kernel": "_Z10scale_rowsI10DirectLoadIffELi1EEvT_Pfi",
        "name": "void scale_rows<DirectLoad<float, float>, 1>(DirectLoad<float, float>, float*, int)",
        "base": "scale_rows", "grid": [rows // 256, 1, 1], "block": [256, 1, 1], "smem": 0,
        "params": [{"offset": 0, "size": 16, "hex": raw.hex(),
                    "words": [{"at": 0, "size": 4 * rows * cols, "offset": 0, "via": "cudaMalloc"}]},
                   {**ptr(4 * rows), "offset": 16}, {"offset": 24, "size": 4, "hex": i32(rows)}],
        "snapshot": {"p0": "inputs-7-0-p0.bin"}}])
    (folder / "inputs-7-0-p0.bin").write_bytes(raw)
    (spec,) = kernel_specs([tmp_path / "k.cu"], capture=latest_capture(tmp_path))
    assert spec.origin == "captured", spec.problems
    assert 'template = "DirectLoad<float, float>, 1"' in spec.spec, spec.spec
    assert "load = { src = " in spec.spec and "captured()" not in spec.spec, spec.spec
    src = SourceText(spec.spec + "#include <cstdint>\n" + SOFTMAX_LIKE)
    parsed = parse_spec(src, find_kernel(src, "scale_rows"))
    assert parsed.spec is not None, parsed.problems


def test_a_candidates_own_launch_block_is_read_against_the_originals_structs():
    """A rewrite of a kernel taking `LOAD load` that sets its own launch (`block = 128`): its
    block is read with the original's file, which defines `DirectLoad` (the candidate's text
    alone does not), so the merged spec still reads `load` member by member."""
    from fsr_lsp.evaluator.job.candidate import check_candidate

    spec = """/* @fsr
bench = { rows = 4096 }
grid = "cdiv(rows, 256)"
block = 256
template = "DirectLoad<float, float>, 1"
[args]
load = { src = "in[rows * 64]", row_size = 64 }
out = "inout[rows]"
rows = "rows"
*/
"""
    original = SourceText("#include <cstdint>\n" + SOFTMAX_LIKE.replace("template <typename LOAD", spec + "template <typename LOAD"))
    k = find_kernel(original, "scale_rows")
    parsed = parse_spec(original, k)
    assert parsed.spec is not None, parsed.problems
    body = SOFTMAX_LIKE[SOFTMAX_LIKE.index("template <typename LOAD"):]
    candidate = '/* @fsr\nblock = 128\ngrid = "cdiv(rows, 128)"\n*/\n' + body
    vetted = check_candidate(original, k, parsed.spec, candidate)
    assert vetted.ok, vetted.reason
    assert vetted.launch_changed and vetted.spec.block == (128,)


def test_plans_of_a_spec_for_another_parameter_list_are_refused_not_cut_short():
    """Plans built from the variadic kernel as written (three parameters) and its instantiation's
    spec (four arguments) would silently leave `in_1` out: refused, naming what to do."""
    src = SourceText(SPEC + ADD_ALL)
    spec = parse_spec(src, find_kernel(src, "add_all")).spec
    with pytest.raises(ValueError, match="expand a variadic kernel"):
        build_plans(find_kernel(src, "add_all"), spec)


def test_template_names_read_past_defaults_and_packs():
    """One reading of a kernel's template parameter names for every place that zips arguments
    with them: `T` of `typename T = float`, `IN` of `typename... IN`, `N` of `int N`."""
    k = find_kernel(SourceText("template <typename T = float, int N, typename... IN>\n"
                               "__global__ void f(T* out, const IN*... in) { }\n"), "f")
    assert k.template_names == ("T", "N", "IN")
    inst = expanded(k, "DirectLoad<float, float>, 4, float", SOFTMAX_LIKE)
    assert [p.name for p in inst.params] == ["out", "in_0"] and inst.params[1].base_type == "float"
