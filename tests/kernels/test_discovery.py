from fsr_lsp.kernels import discover_kernels, find_kernel, kernel_at, parse_param
from fsr_lsp.source import SourceText

from ..conftest import read


def names(text):
    return [k.name for k in discover_kernels(text)]


def test_every_kernel_of_a_realistic_file():
    assert names(read("several.cu")) == ["square", "transpose", "c_linkage", "in_namespace"]


def test_declarations_strings_comments_and_macro_bodies_are_not_kernels():
    text = read("several.cu")
    assert "prototype_only" not in names(text)
    assert names(read("macros.cu")) == ["via_macro", "clustered", "bounded_by_macro"]


def test_parameters_carry_pointer_const_and_element_type():
    k = find_kernel(read("several.cu"), "c_linkage")
    got = [(p.name, p.is_pointer, p.pointee_const, p.dtype) for p in k.params]
    assert got == [("n", False, False, "uint32"), ("h", True, False, "float16"),
                   ("d", True, True, "float64"), ("idx", True, False, "int64")]
    square = find_kernel(read("several.cu"), "square")
    assert square.params[1].text == "const float* __restrict__ x"
    assert square.params[1].type_text == "const float * __restrict__"


def test_template_parameters_and_launch_bounds():
    k = find_kernel(read("several.cu"), "transpose")
    assert k.template_params == ("typename T", "int TILE = 32")
    assert k.launch_bounds == "1024"
    assert k.params[2].dtype is None and k.params[2].base_type == "T"
    assert SourceText(read("several.cu")).slice(k.span.start_byte, k.span.end_byte).startswith("template <typename T")


def test_spec_comment_is_part_of_the_range_and_positions_are_lsp():
    text = read("several.cu")
    src = SourceText(text)
    k = find_kernel(src, "square")
    assert k.spec is not None and "bench = { n = 1048576 }" in k.spec.body
    assert src.slice(k.span.start_byte, k.span.end_byte).startswith("/* @fsr")
    assert src.slice(k.span.start_byte, k.span.end_byte).rstrip().endswith("}")
    assert k.span.start.line == 8 and k.span.end.line == 22
    assert k.name_span.start.line == 18
    line = text.splitlines()[18]
    assert line[k.name_span.start.character:k.name_span.end.character] == "square"


def test_vector_types_and_namespaces():
    k = find_kernel(read("several.cu"), "in_namespace")
    assert (k.params[0].dtype, k.params[0].lanes) == ("float32", 4)


def test_a_kernel_mid_edit_does_not_hide_the_next_one():
    kernels = discover_kernels(read("midedit.cu"))
    assert [k.name for k in kernels] == ["first", "typing_now", "after_the_break"]
    typing = kernels[1]
    assert not typing.complete and [p.name for p in typing.params] == ["a", "n"]
    after = kernels[2]
    assert after.complete and after.spec is not None and [p.name for p in after.params] == ["n", "y"]


def test_macro_kernels_and_attribute_macros_use_the_fallback():
    kernels = {k.name: k for k in discover_kernels(read("macros.cu"))}
    assert kernels["via_macro"].found_by == "fallback"
    assert [p.name for p in kernels["bounded_by_macro"].params] == ["n", "z"]
    assert [p.name for p in kernels["clustered"].params] == ["n", "a", "b"]


def test_the_fallback_reads_a_template_head_whose_lists_close_together():
    """`Pair<Pair<T>>>`: each `>` closes a list, as the compiler reads it since C++11; the
    fallback read `>>` as one closer and lost the kernel's template parameters."""
    text = ("#define KERNEL __global__\ntemplate <typename T, typename V = Pair<Pair<T>>>\n"
            "KERNEL void shifted(T* x, int n) { x[0] = n >> 1; }\n")
    (k,) = discover_kernels(text)
    assert k.found_by == "fallback"
    assert k.template_params == ("typename T", "typename V = Pair<Pair<T>>")
    (tree,) = discover_kernels(text.replace("#define KERNEL __global__\n", "").replace("KERNEL", "__global__"))
    assert tree.found_by == "tree-sitter" and tree.template_params == k.template_params


def test_unterminated_file_end():
    text = "__global__ void k(float* x, int n) {\n  x[0] = n;\n"
    (k,) = discover_kernels(text)
    assert k.name == "k" and not k.complete and k.span.end_byte <= len(text)


def test_kernel_at_finds_the_kernel_around_a_cursor():
    text = read("several.cu")
    src = SourceText(text)
    inside = text.index("y[i] = sq(x[i])")
    assert kernel_at(src, src.byte_of_char(inside)).name == "square"
    assert kernel_at(src, 0) is None


def test_parse_param_variants():
    p = parse_param("const float4 * __restrict__ v")
    assert (p.name, p.dtype, p.lanes, p.pointee_const) == ("v", "float32", 4, True)
    q = parse_param("float * const out")
    assert q.is_pointer and not q.pointee_const
    r = parse_param("unsigned long long int count")
    assert (r.dtype, r.is_pointer) == ("uint64", False)
    assert parse_param("float** table").dtype is None
    assert parse_param("float x[]").is_pointer
    assert parse_param("__nv_bfloat16* b").dtype == "bfloat16"


def test_element_types_named_through_the_files_own_aliases():
    text = ("typedef float real;\nusing floatX = __nv_bfloat16;\n#define DTYPE double\ntypedef real real2;\n"
            "__global__ void k(const real* a, floatX* b, DTYPE* c, real2* d, Unknown* e, int n) { }\n")
    (k,) = discover_kernels(text)
    assert [p.dtype for p in k.params] == ["float32", "bfloat16", "float64", "float32", None, "int32"]


def test_structs_of_one_element_type_are_their_lanes_and_others_stay_unknown():
    text = ("#define SIZE (1<<4)\n"
            "struct naiveStruct { float a; float b; };\n"  # AoS: two floats per element
            "struct soa { float a[SIZE]; float b[SIZE * 2]; };\n"  # SoA: one struct of arrays
            "typedef struct { float4 pos; float4 vel; } Body;\n"
            "struct withMethods { int k; __device__ int get() const { return k; } static int count; };\n"
            "struct padded { float4 a; float b; };\n"  # sizeof is 32, not 20
            "struct mixed { float a; int b; };\n"
            "struct pointers { int* r; int* g; };\n"
            "struct unknownSize { float a[N_FROM_ELSEWHERE]; };\n"
            "__global__ void k(struct naiveStruct* a, soa* b, Body* c, withMethods* d, padded* e, mixed* f,"
            " pointers* g, unknownSize* h, cufftComplex* i, curandState_t* j) { }\n")
    (k,) = discover_kernels(text)
    assert [(p.dtype, p.lanes) for p in k.params] == [
        ("float32", 2), ("float32", 48), ("float32", 8), ("int32", 1),
        (None, 1), (None, 1), (None, 1), (None, 1), ("float32", 2), ("uint8", 48)]


def test_template_structs_of_one_element_type_are_their_lanes_once_instantiated():
    """`Pack<T, N>` (vectorised loads) is `T[N]`: a kernel naming `Pack<half, 2>` gets two half
    lanes; one naming `Pack<T, pack_size>` gets its layout, typed by the spec's template
    arguments. An alignas that pads, or two fields, stay unknown."""
    from fsr_lsp.kernels.structs import substituted
    from fsr_lsp.kernels.c_types import element_type

    text = ("template<typename T, size_t pack_size>\nstruct alignas(sizeof(T) * pack_size) Pack { T elem[pack_size]; };\n"
            "template <typename T, int N> struct alignas(16) Padded { T v[N]; };\n"
            "template <typename T, int N> struct Two { T a[N]; T b[N]; };\n"
            "struct alignas(16) F4 { float a, b, c, d; };\nstruct alignas(32) F4pad { float a, b, c, d; };\n"
            "template<typename T, int pack_size>\n"
            "__global__ void k(Pack<T, pack_size>* a, Pack<half, 2>* b, Padded<float, 2>* c, Two<float, 2>* d,"
            " F4* e, F4pad* f) { }\n")
    (k,) = discover_kernels(text)
    assert [(p.dtype, p.lanes) for p in k.params] == [
        (None, 1), ("float16", 2), (None, 1), (None, 1), ("float32", 4), (None, 1)]
    assert element_type(substituted(k.params[0].base_type, {"T": "float", "pack_size": "4"})) == ("float32", 4)


def test_an_element_type_chosen_by_the_preprocessor_is_the_branch_a_plain_build_takes():
    """Training code picks its element type in a header (llm.c-style `floatX`): the last typedef
    in the text is not the one a build without -D flags gets."""
    from fsr_lsp.kernels.aliases import type_aliases

    header = ("#if defined(ENABLE_FP32)\ntypedef float floatX;\n#elif defined(ENABLE_FP16)\ntypedef half floatX;\n"
              "#else\ntypedef __nv_bfloat16 floatX;\n#endif\n")
    assert type_aliases(header)["floatX"] == "__nv_bfloat16"
    other = "#ifdef USE_BF16\ntypedef __nv_bfloat16 real;\n#else\ntypedef float real;\n#endif\n"
    assert type_aliases(other)["real"] == "float"
    assert type_aliases("#define USE_BF16\n" + other)["real"] == "__nv_bfloat16"


def test_in_a_large_file_the_kernel_at_a_position_is_found_in_a_window_where_it_is():
    """Above LARGE_BYTES only a window around the position is read; the kernel it gives is the
    one full discovery gives (spans, lines, its @fsr block), at the start, middle and end."""
    from fsr_lsp.kernels.discover import LARGE_BYTES, kernel_at

    one = ("/* @fsr\nbench = {{ n = 64 }}\n[args]\ny = \"out[n]\"\nx = \"in[n]\"\nn = \"n\"\n*/\n"
           "__global__ void k{i}(float* y, const float* x, int n)\n{{\n    int i = threadIdx.x;\n"
           "    if (i < n) y[i] = {i}.0f * x[i];  // é\n}}\n\n")
    text = "".join(one.format(i=i) for i in range(LARGE_BYTES // len(one) * 3))
    src = SourceText(text)
    assert len(src.data) > LARGE_BYTES
    every = {k.name: k for k in discover_kernels(src)}
    for name in ("k0", f"k{len(every) // 2}", f"k{len(every) - 1}"):
        full = every[name]
        middle = (full.definition_span.start_byte + full.definition_span.end_byte) // 2
        assert kernel_at(src, middle) == full
        assert kernel_at(src, full.spec.span.start_byte + 2) == full  # on its @fsr block


def test_a_kernel_longer_than_the_first_window_is_read_whole_from_the_wider_one():
    """The first window is small (most kernels end in it); a kernel whose body runs past it is
    not taken cut short there, but read from the wide window: the same kernel full discovery
    gives, hovered at its name, its middle and its end, and its neighbours unchanged."""
    from fsr_lsp.kernels.discover import FIRST_WINDOW_BYTES, LARGE_BYTES, kernel_at

    small = ("__global__ void k{i}(float* y, const float* x, int n)\n{{\n"
             "    int i = threadIdx.x;\n    if (i < n) y[i] = {i}.0f * x[i];\n}}\n\n")
    lines = "".join(f"    if (i == {j}) y[i] += x[{j % 7}] * {j}.0f;\n" for j in range(2 * FIRST_WINDOW_BYTES // 40))
    long = f"__global__ void longest(float* y, const float* x, int n)\n{{\n    int i = threadIdx.x;\n{lines}}}\n\n"
    half = "".join(small.format(i=i) for i in range(LARGE_BYTES // len(small)))
    src = SourceText(half + long + half.replace("void k", "void m"))
    every = {k.name: k for k in discover_kernels(src)}
    full = every["longest"]
    assert full.definition_span.end_byte - full.definition_span.start_byte > 2 * FIRST_WINDOW_BYTES
    for at in (full.name_span.start_byte, (full.span.start_byte + full.span.end_byte) // 2, full.span.end_byte - 2):
        assert kernel_at(src, at) == full
    for name in ("k0", "m0", f"m{len(every) // 2 - 2}"):
        k = every[name]
        assert kernel_at(src, k.name_span.start_byte) == k
