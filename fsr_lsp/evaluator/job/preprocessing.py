"""What a candidate may ask of the preprocessor: nothing that reads a file.

A candidate is text from a model, and a model's text is hostile input: an `#include` anywhere
in it (a kernel body, a helper, a macro body) makes the compiler read that file and quote it
in its errors, which go back to the model. So every include-like directive of a candidate must
name a header the original file itself includes (same spelling) or one of the CUDA headers in
`DEVICE_HEADERS`; computed includes (`#include MACRO`), `#line`, GNU line markers, unknown
directives, `__has_include` and pragmas outside a short list are refused. Judged on the
preprocessor's view of the text (`kernels.pptokens`): splices, comments between `#` and
`include`, digraphs and macros that expand to a header name all meet the same rule.
"""

from __future__ import annotations

import re

from ...kernels.brackets import balance
from ...kernels.pptokens import LogicalLine, Token, UnclearText, header_name, logical_lines, string_value

# CUDA's own device headers (the toolkit's, public and read-only): what a rewrite may need
# beyond what the file includes. Half precision and bfloat16 types, cooperative groups, the
# asynchronous copy pipeline and barriers, warp matrix functions, CUB's block and warp
# primitives. Angle brackets only, so a file of that name beside the source never stands in.
DEVICE_HEADERS = re.compile(
    r"<(cuda_fp16\.h|cuda_bf16\.h|cuda_fp8\.h|cuda_runtime\.h|cuda_runtime_api\.h|device_launch_parameters\.h|"
    r"cooperative_groups\.h|cooperative_groups/(reduce|scan|memcpy_async)\.h|mma\.h|cuda_pipeline\.h|"
    r"cuda_awbarrier\.h|cuda/(pipeline|barrier|atomic|annotated_ptr|std/[a-z_]+)|"
    r"cub/(cub\.cuh|(block|warp|thread)/[a-z_]+\.cuh)|"
    r"math\.h|cmath|float\.h|cfloat|limits\.h|climits|stdint\.h|cstdint)>")
# CuTe and CUTLASS come from the user's include paths (`includePaths`, `-I`): allowed only then.
LIBRARY_HEADERS = re.compile(r"<(cute|cutlass)/[A-Za-z0-9_/]+\.(h|hpp|cuh)>")
INCLUDE_LIKE = {"include", "include_next", "import", "embed"}
ALLOWED_DIRECTIVES = {"define", "undef", "if", "ifdef", "ifndef", "elif", "elifdef", "elifndef", "else", "endif",
                      "pragma", "error", "warning", ""} | INCLUDE_LIKE
CONDITIONAL_OPEN = {"if", "ifdef", "ifndef"}
# Pragmas a kernel rewrite uses; none of them touches a file. (`GCC dependency` stats one,
# `GCC system_header` hides diagnostics, `message` prints text: none of that belongs in a kernel.)
ALLOWED_PRAGMAS = {"unroll", "nounroll", "nv_diag_suppress", "nv_diag_default", "nv_diag_warning", "nv_diag_error",
                   "nv_diagnostic", "diag_suppress", "diag_default", "diag_warning", "diag_error", "push_macro",
                   "pop_macro", "pack", "nv_exec_check_disable", "hd_warning_disable", "nv_abi"}
FILE_OPERATORS = ("__has_include", "__has_include_next", "__has_embed")
PRAGMA_OPERATORS = ("_Pragma", "__pragma")
_FORBIDDEN_WORDS = FILE_OPERATORS + PRAGMA_OPERATORS
_NOT_A_DEVICE_HEADER = ("is not a device header: a candidate may include only headers the original file includes "
                        "and CUDA's device headers")
_INCLUDE_TEXT = re.compile(r"^[ \t]*(?:#|%:|\?\?=)[ \t]*(include|include_next|import|embed)\b[ \t]*([<\"][^>\"\n]*[>\"])?",
                           re.M)


def original_includes(original: str) -> set[str]:
    """Header names the original file includes, as spelled there (`<cuda_fp16.h>`, `"util.cuh"`)."""
    try:
        lines = logical_lines(original)
    except UnclearText:
        return set(m.group(2) for m in _INCLUDE_TEXT.finditer(original) if m.group(2))
    return {name for line in lines if line.is_directive and line.directive in INCLUDE_LIKE
            for name in [header_name(line)] if name}


def _computed_include_macros(original: str) -> set[str]:
    """Macros the original's computed includes (`#include CONFIG_H`) expand: a candidate that
    redefines one would choose what the original's include reads."""
    try:
        lines = logical_lines(original)
    except UnclearText:
        return set()
    return {t.text for line in lines if line.is_directive and line.directive in INCLUDE_LIKE and header_name(line) is None
            for t in line.tokens[2:] if t.kind == "identifier"}


def preprocessing_problem(candidate: str, original: str, include_dirs: tuple[str, ...] = ()) -> str:
    """Why the candidate may not go to the compiler ('' when it may)."""
    allowed = original_includes(original)
    for m in _INCLUDE_TEXT.finditer(candidate):  # even in a comment or a string: never guess the lexer right
        name = m.group(2) or ""
        if not _header_allowed(name, allowed, include_dirs):
            return f"#{m.group(1)} {name or '(computed)'} {_NOT_A_DEVICE_HEADER} (line {_line(candidate, m.start())})"
    try:
        lines = logical_lines(candidate)
    except UnclearText as e:
        return f"the candidate is unclear to the preprocessor: {e}"
    computed = _computed_include_macros(original)
    pasting = any(t.text in ("##", "%:%:") for line in lines for t in line.tokens)
    stray, left_open = balance(lines, CONDITIONAL_OPEN, ("endif",), _directive)
    for line in lines:
        if line.is_directive:
            problem = _directive_problem(line, allowed, include_dirs, computed)
            if problem:
                return f"{problem} (line {line.line})"
            if line is stray:
                return f"#endif without #if in the candidate (line {line.line})"
        problem = _operator_problem(line.tokens, pasting)
        if problem:
            return problem
    if left_open:
        return "the candidate leaves an #if open (every #if needs its #endif inside the candidate)"
    return ""


def _directive(line: LogicalLine) -> str:
    return line.directive if line.is_directive else ""


def _header_allowed(name: str, allowed: set[str], include_dirs: tuple[str, ...]) -> bool:
    if not name or ".." in name:
        return False
    return name in allowed or bool(DEVICE_HEADERS.fullmatch(name)) or \
        (bool(include_dirs) and bool(LIBRARY_HEADERS.fullmatch(name)))


def _directive_problem(line: LogicalLine, allowed: set[str], include_dirs: tuple[str, ...], computed: set[str]) -> str:
    name = line.directive
    if line.tokens[1:] and line.tokens[1].kind == "number":
        return "a line marker (# NUMBER) is not allowed in a candidate"
    if name not in ALLOWED_DIRECTIVES:
        return f"#{name} is not allowed in a candidate"
    if name in INCLUDE_LIKE:
        header = header_name(line)
        if header is None:
            return f"#{name} with a computed header name is not allowed in a candidate"
        if not _header_allowed(header, allowed, include_dirs):
            return f"#{name} {header} {_NOT_A_DEVICE_HEADER}"
    if name == "pragma":
        return _pragma_problem([t.text for t in line.tokens[2:]])
    if name in ("define", "undef") and len(line.tokens) > 2 and line.tokens[2].text in computed:
        return f"#{name} {line.tokens[2].text} would change what an #include of the original file reads"
    return ""


def _pragma_problem(words: list[str]) -> str:
    if not words:
        return ""
    first = words[0]
    if first in ALLOWED_PRAGMAS:
        return ""
    if first in ("GCC", "clang") and words[1:2] == ["diagnostic"]:
        return ""
    return f"#pragma {' '.join(words[:2])} is not allowed in a candidate (allowed: {', '.join(sorted(ALLOWED_PRAGMAS))})"


def _operator_problem(tokens: list[Token], pasting: bool) -> str:
    for i, t in enumerate(tokens):
        if t.kind == "other" and t.text == "\\":
            return f"a backslash outside a string (a universal character name spelling a name?) (line {t.line})"
        if t.kind != "identifier":
            continue
        if t.text in FILE_OPERATORS:
            return f"{t.text} is not allowed in a candidate (line {t.line})"
        if t.text in PRAGMA_OPERATORS:
            literal = _pragma_literal(tokens, i)
            if literal is None:
                return f"{t.text} is allowed in a candidate only as {t.text}(\"...\") with a string literal (line {t.line})"
            problem = _pragma_problem(literal.split())
            if problem:
                return f"{problem} (line {t.line})"
        elif pasting and _pastes_into_operator(t.text):
            return (f"token pasting with {t.text!r} could form {_operator_prefixed(t.text)}, which is not allowed "
                    f"in a candidate (line {t.line})")
    return ""


def _pragma_literal(tokens: list[Token], i: int) -> str | None:
    rest = tokens[i + 1: i + 4]
    if len(rest) == 3 and rest[0].text == "(" and rest[2].text == ")":
        return string_value(rest[1])
    return None


def _pastes_into_operator(word: str) -> bool:
    """A proper prefix of `_Pragma` or `__has_include` (`_Prag`, `__has`): with `##` it could
    become one (`CAT(_Prag, ma)`), past any check of the words as written."""
    return any(w.startswith(word) and w != word for w in _FORBIDDEN_WORDS)


def _operator_prefixed(word: str) -> str:
    return next(w for w in _FORBIDDEN_WORDS if w.startswith(word))


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1
