"""A candidate can never make the compiler read a file: every way of spelling an include (and
the operators that touch files) is judged on the preprocessor's view of the text."""

import pytest

from fsr_lsp.evaluator.job.candidate import check_candidate
from fsr_lsp.evaluator.job.preprocessing import original_includes, preprocessing_problem
from fsr_lsp.kernels import find_kernel
from fsr_lsp.kernels.pptokens import UnclearText, logical_lines
from fsr_lsp.source import SourceText
from fsr_lsp.specs import parse_spec

from ..conftest import EXAMPLES

ORIGINAL = (EXAMPLES / "saxpy.cu").read_text()
HEAD = "__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y)\n"
BODY = "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[i] = a * x[i] + y[i];\n"


def kernel(inside: str = "", before: str = "") -> str:
    """A correct saxpy rewrite with `inside` in its body and `before` above it."""
    return before + HEAD + "{\n" + inside + BODY + "}\n"


def check(text: str, original: str = ORIGINAL, include_dirs: tuple[str, ...] = ()):
    src = SourceText(original)
    k = find_kernel(src, "saxpy")
    return check_candidate(src, k, parse_spec(src, k).spec, text, include_dirs)


ATTACKS = {
    # the attacks seen: an include in the kernel body
    "body include of a local file": (kernel('#include "/etc/hostname"\n'), "is not a device header"),
    "body include of a host header": (kernel("#include <cstdlib>\n"), "is not a device header"),
    "body include of a device file": (kernel('#include "/dev/zero"\n'), "is not a device header"),
    # the same in every other place
    "helper body": ("__device__ float f() {\n#include \"/etc/hostname\"\n}\n" + kernel(), "is not a device header"),
    "top level": ('#include "/etc/hostname"\n' + kernel(), "is not a device header"),
    "macro continued onto an include line": (kernel("#define X 1 \\\n#include \"/etc/hostname\"\n"), "not a device header"),
    "inside a block comment": (kernel('/*\n#include "/etc/hostname"\n*/\n'), "is not a device header"),
    "include_next": (kernel('#include_next "/etc/hostname"\n'), "include_next"),
    "import": (kernel('#import "/etc/hostname"\n'), "import"),
    "embed": (kernel('#embed "/etc/hostname"\n'), "embed"),
    # the preprocessor's view, not the raw text's
    "line splice inside the directive name": (kernel('#inc\\\nlude "/etc/hostname"\n'), "is not a device header"),
    "line splice before the header name": (kernel('#include \\\n"/etc/hostname"\n'), "is not a device header"),
    "comment between # and include": (kernel('#/**/include "/etc/hostname"\n'), "is not a device header"),
    "comment with spaces": (kernel('  # /* x */ include "/etc/hostname"\n'), "is not a device header"),
    "comment spanning the line break": (kernel('#include /*\n*/ "/etc/hostname"\n'), "is not a device header"),
    "digraph": (kernel('%:include "/etc/hostname"\n'), "is not a device header"),
    "digraph with a comment": (kernel('%:/**/include "/etc/hostname"\n'), "is not a device header"),
    "trigraph": (kernel('??=include "/etc/hostname"\n'), "is not a device header"),
    "trigraph elsewhere": (kernel("??=define X 1\n"), "trigraph"),
    "macro expanding to a header name": (kernel('#define H "/etc/hostname"\n#include H\n'), "computed"),
    "function-like macro expanding to a header name": (
        kernel('#define S(x) #x\n#define H S(/etc/hostname)\n#include H\n'), "computed"),
    "parent folder inside an allowed folder": (kernel("#include <cuda/../../../../etc/hostname>\n"), "not a device header"),
    "quoted spelling of a device header": (kernel('#include "cuda_fp16.h"\n'), "is not a device header"),
    "library header without include paths": (kernel("#include <cutlass/cutlass.h>\n"), "is not a device header"),
    # what else reaches files or rewrites where errors point
    "has_include": (kernel('#if __has_include("/etc/hostname")\n#endif\n'), "__has_include"),
    "has_include_next": (kernel("#if __has_include_next(<x.h>)\n#endif\n"), "__has_include_next"),
    "has_include behind a macro": (kernel('#define HI __has_include\n'), "__has_include"),
    "line directive": (kernel('#line 1 "/etc/hostname"\n'), "#line"),
    "line marker": (kernel('# 1 "/etc/hostname"\n'), "line marker"),
    "pragma GCC dependency": (kernel('#pragma GCC dependency "/etc/hostname"\n'), "#pragma GCC dependency"),
    "pragma operator": (kernel('_Pragma("GCC dependency \\"/etc/hostname\\"")\n'), "#pragma GCC dependency"),
    "msvc pragma operator": (kernel('__pragma(GCC dependency "/etc/hostname")\n'), "__pragma"),
    "pragma operator from stringizing": (kernel('#define P(x) _Pragma(#x)\nP(GCC dependency "/etc/hostname")\n'),
                                         "with a string literal"),
    "pragma operator from pasting": (
        kernel('#define CAT(a, b) a##b\nCAT(_Prag, ma)("GCC dependency \\"/etc/hostname\\"")\n'), "token pasting"),
    "has_include from pasting": (kernel("#define CAT(a, b) a##b\n#if CAT(__has, _include)(<x>)\n#endif\n"),
                                 "token pasting"),
    "universal character name spelling _Pragma": (kernel('\\u005FPragma("GCC dependency \\"/etc/hostname\\"")\n'),
                                                  "backslash outside a string"),
    "prefixed string in the pragma operator": (kernel('_Pragma(u8"GCC dependency \\"/etc/hostname\\"")\n'),
                                               "with a string literal"),
    "unknown directive": (kernel("#ident \"x\"\n"), "#ident"),
    "assert directive": (kernel("#assert machine(x)\n"), "#assert"),
    # text read two ways, or that changes what follows it in the file
    "backslash and spaces before the line break": (kernel("#define X 1 \\  \n#include <cstdlib>\n"), "not a device header"),
    "ambiguous splice alone": (kernel("int z = 1; \\  \n"), "backslash followed by spaces"),
    "carriage return alone": (kernel("int z = 1;\r#define Q 2\n"), "carriage return"),
    "unclosed block comment": (kernel() + "/* the rest of the file", "never closed"),
    "splice at the end": (kernel() + "#define X \\\n", "ends with a line splice"),
    "an #if left open": (kernel() + "#if 0\n", "#if open"),
    "an #endif closing the file's #if": (kernel() + "#endif\n", "#endif without #if"),
    "raw string hiding a line": (kernel('const char* s = R"(\n#include "/etc/hostname"\n)";\n'), "not a device header"),
    "nul byte": (kernel("\x00"), "NUL"),
}


@pytest.mark.parametrize("name", list(ATTACKS))
def test_every_way_to_reach_a_file_is_refused(name):
    text, reason = ATTACKS[name]
    c = check(text)
    assert not c.ok, f"{name}: accepted"
    assert reason in c.reason, f"{name}: {c.reason}"


ALLOWED = {
    "pragma unroll before an unbraced loop": kernel("    float s = 0;\n#pragma unroll 4\n    for (int k = 0; k < 4; ++k) s += k;\n"),
    "pragma operator with a literal": kernel('    _Pragma("unroll")\n    for (int k = 0; k < 4; ++k) {}\n'),
    "pragma operator in a macro": "#define UNROLL _Pragma(\"unroll\")\n" + kernel("    UNROLL for (int k = 0; k < 4; ++k) {}\n"),
    "nv_diag_suppress": kernel("#pragma nv_diag_suppress 177\n"),
    "device headers": kernel(before="#include <cuda_fp16.h>\n#include <cooperative_groups.h>\n"
                                    "#include <cooperative_groups/reduce.h>\n#include <cuda/pipeline>\n"
                                    "#include <cub/block/block_reduce.cuh>\n"),
    "the original's own include": kernel(before="#include <cuda_runtime.h>\n"),
    "pasting ordinary names": "#define CAT(a, b) a##b\n" + kernel("    int CAT(tmp, 1) = 0; (void)tmp1;\n"),
    "stringizing": "#define STR(x) #x\n" + kernel('    const char* s = STR(hello); (void)s;\n'),
    "include text in a string": kernel('    const char* s = "#include <x.h>"; (void)s;\n'),
    "include text in a line comment": kernel("    // #include <cstdio> was here\n"),
    "digit separators": kernel("    int big = 1'000'000; (void)big;\n"),
    "inline PTX in a raw string": kernel('    unsigned r;\n    asm volatile(R"(mov.u32 %0, %%laneid;)" : "=r"(r));\n'),
    "conditional code": kernel("#if __CUDA_ARCH__ >= 800\n    float q = 1;\n#else\n    float q = 2;\n#endif\n    (void)q;\n"),
    "multi-line macro": "#define BODY(i) \\\n  do { (void)(i); } while (0)\n" + kernel("    BODY(0);\n"),
    "error directive in a dead branch": kernel("#if 0\n#error never\n#endif\n"),
}


@pytest.mark.parametrize("name", list(ALLOWED))
def test_what_rewrites_really_use_is_allowed(name):
    c = check(ALLOWED[name])
    assert c.ok, f"{name}: {c.reason}"


def test_a_header_the_original_includes_by_its_spelling_is_allowed_and_no_other_spelling():
    original = '#include "util.cuh"\n' + ORIGINAL
    assert check(kernel(before='#include "util.cuh"\n'), original).ok
    assert not check(kernel(before="#include <util.cuh>\n"), original).ok
    assert not check(kernel(before='#include "./util.cuh"\n'), original).ok


def test_cute_and_cutlass_only_through_the_users_include_paths():
    text = kernel(before="#include <cute/tensor.hpp>\n")
    assert not check(text).ok
    assert check(text, include_dirs=("/opt/cutlass/include",)).ok


def test_a_candidate_cannot_redefine_what_a_computed_include_of_the_original_reads():
    original = "#define CONFIG <cuda_fp16.h>\n" + ORIGINAL + "#include CONFIG\n"
    c = check("#undef CONFIG\n#define CONFIG \"/etc/hostname\"\n" + kernel(), original)
    assert not c.ok and "would change what an #include of the original file reads" in c.reason


def test_the_preprocessors_view_joins_splices_and_drops_comments():
    lines = logical_lines('# /* a */ in\\\nclude /* b\n */ "x.h" // c\nint y;\n')
    assert lines[0].is_directive and lines[0].directive == "include"
    assert [t.text for t in lines[0].tokens] == ["#", "include", '"x.h"']
    assert [t.text for t in lines[1].tokens] == ["int", "y", ";"] and lines[1].line == 4
    with pytest.raises(UnclearText):
        logical_lines("/* open")


def test_original_includes_are_read_as_spelled():
    assert original_includes('#include <a.h>\n# include "b.h"\n#include MACRO\n') == {"<a.h>", '"b.h"'}


def test_problems_name_their_line():
    assert "(line 3)" in preprocessing_problem('int a;\nint b;\n#include "/etc/hostname"\n', ORIGINAL)
