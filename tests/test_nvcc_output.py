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
