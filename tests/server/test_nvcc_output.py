import pytest

from fsr_lsp.server.nvcc_output import parse_messages

SOURCE = ["#include <cstdio>", "__global__ void k(float* x)", "{", "    x[0] = zz + 1;", "    int unused = 2;", "}"]
OUTPUT = """k.cu(4): error: identifier "zz" is undefined
      x[0] = zz + 1;
             ^

k.cu(5): warning #177-D: variable "unused" was declared but never referenced
      int unused = 2;
          ^

Remark: The warnings can be suppressed with "-diag-suppress <warning-number>"

k.cu(4): error: identifier "zz" is undefined
      x[0] = zz + 1;
             ^

2 errors detected in the compilation of "k.cu".
k.cu:9:10: fatal error: missing.h: No such file or directory
ptxas error   : Entry function '_Z3hogPf' uses too much shared data (0x61a80 bytes, 0xc000 max)
"""


def test_messages_with_columns_deduplicated():
    msgs = parse_messages(OUTPUT, SOURCE)
    error, warning, include, ptxas = msgs
    assert (error.line, error.column, error.severity) == (3, 11, "error") and SOURCE[3][11:13] == "zz"
    assert (warning.line, warning.column, warning.code) == (4, 8, "177-D") and SOURCE[4][8:14] == "unused"
    assert (include.line, include.column, include.severity) == (8, 9, "error") and "missing.h" in include.text
    assert ptxas.kernel == "hog" and "'hog' uses too much shared data" in ptxas.text and ptxas.line == -1


def test_a_message_without_a_caret_has_no_column():
    (m,) = parse_messages('k.cu(2): error: expected a ";"\n', SOURCE)
    assert (m.line, m.column) == (1, -1)


def test_the_caret_is_found_even_when_nvcc_echoes_the_preprocessed_line():
    source = ["__global__ void k(float* y)", "{", "    /* é🚀 */ y[0] = zz;", "}"]
    out = 'enc.cu(3): error: identifier "zz" is undefined\n                   y[0] = zz;\n                          ^\n'
    (m,) = parse_messages(out, source)
    assert source[2][m.column:m.column + 2] == "zz"


@pytest.mark.parametrize("log, said", [
    ("nvcc fatal   : Unsupported gpu architecture 'compute_999'\n",
     "nvcc could not build this file: Unsupported gpu architecture 'compute_999' (check fsr.compiler.arch)"),
    ("nvcc fatal   : Unknown option '--bogus-flag'\n",
     "nvcc could not build this file: Unknown option '--bogus-flag' (check fsr.compiler.flags or the build's flags)"),
])
def test_nvcc_refusing_a_setting_is_an_error_on_the_first_line(log, said):
    """A build that fails for a reason in the settings is never silence (issue 61, item 3)."""
    (message,) = parse_messages(log, ["__global__ void k() {}"])
    assert (message.line, message.severity, message.text) == (0, "error", said)


def test_a_refused_setting_reaches_the_files_first_line_as_a_diagnostic():
    from fsr_lsp.kernels import discover
    from fsr_lsp.server.check import read_log
    from fsr_lsp.server.diagnostics import compiler_diagnostics
    from fsr_lsp.source import SourceText

    text = "#include <cuda_runtime.h>\n__global__ void k(float* x) { x[0] = 1.0f; }\n"
    src = SourceText(text)
    result = read_log("nvcc fatal   : Unknown option '--bogus-flag'\n", text)
    (d,) = compiler_diagnostics(src, "k.cu", result, discover(src).kernels)
    assert d.range.start.line == 0 and "Unknown option '--bogus-flag'" in d.message and d.severity == 1


def test_a_publish_holds_at_most_200_diagnostics_and_says_how_many_more():
    from lsprotocol import types

    from fsr_lsp.server.diagnostics import capped

    def at(line, severity):
        here = types.Position(line=line, character=0)
        return types.Diagnostic(range=types.Range(start=here, end=here), message=f"m{line}", severity=severity)

    many = [at(i, types.DiagnosticSeverity.Warning) for i in range(500)] + [at(600, types.DiagnosticSeverity.Error)]
    shown = capped(many)
    assert len(shown) == 200 and shown[-1].message == "302 more diagnostics not shown (0 errors): the first 199, the " \
                                                      "most severe first, are"
    assert any(d.message == "m600" for d in shown)  # the error is kept before warnings
    assert capped(many[:10]) == many[:10]
