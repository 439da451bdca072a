"""The text as the C/C++ preprocessor sees it: translation phases 1 to 3.

Line splices joined, comments gone, string, character and raw string literals whole, the
rest in preprocessing tokens, grouped in logical lines; a line whose first token is `#` (or
its digraph `%:`) is a directive. Rules about what untrusted code may ask of the preprocessor
(`#include`, `_Pragma`) are judged on this view, never by patterns over the raw text, where
`#/**/include`, `#\\<newline>include` or a digraph would slip by.

Written here rather than taken from a library: a preprocessor library (pcpp) lexes C99, not
C++ (raw strings, digit separators), and a compiler's own preprocessor would execute the very
includes it is asked about. Where compilers could read a text two ways (a trigraph, a
backslash followed by spaces before the newline, a carriage return alone, a splice at the end
of the text), the text is refused rather than guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

PUNCTUATORS = sorted("""%:%: ... <=> ->* <<= >>= ## -> ++ -- << >> <= >= == != && || *= /= %= += -= &= ^= |= :: .*
<: :> <% %> %: # { } [ ] ( ) ; : ? . + - * / % ^ & | ~ ! = < > ,""".split(), key=len, reverse=True)
_PUNCT = re.compile("|".join(re.escape(p) for p in PUNCTUATORS))
_IDENT = re.compile(r"[A-Za-z_$\x80-\U0010ffff][\w$\x80-\U0010ffff]*")
_NUMBER = re.compile(r"\.?[0-9](?:[eEpP][+-]|'[0-9A-Za-z_]|[\w.$])*")  # C++14 pp-number, digit separators included
_STRING_PREFIXES = ("u8", "u", "U", "L")
_RAW_PREFIXES = ("u8R", "uR", "UR", "LR", "R")
_RAW_OPEN = re.compile(r'"([^()\\\s]{0,16})\(')
_TRIGRAPH = re.compile(r"\?\?[=/'()!<>\-]")
_AMBIGUOUS_SPLICE = re.compile(r"\\[ \t\f\v]+\n")


class UnclearText(ValueError):
    """A text compilers could read in more than one way, or not at all; `line` is 1-based."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(f"{message} (line {line})")
        self.line = line


@dataclass(frozen=True)
class Token:
    kind: str  # identifier, number, string, char, punct, other
    text: str
    line: int  # 1-based physical line where the token starts
    offset: int  # in the spliced text


@dataclass
class LogicalLine:
    tokens: list[Token] = field(default_factory=list)
    line: int = 1  # physical line where it starts
    text: str = ""  # the spliced line with comments as spaces (for header names)

    @property
    def is_directive(self) -> bool:
        return bool(self.tokens) and self.tokens[0].kind == "punct" and self.tokens[0].text in ("#", "%:")

    @property
    def directive(self) -> str:
        """The directive's name ('' for the null directive; a number for a GNU line marker)."""
        return self.tokens[1].text if self.is_directive and len(self.tokens) > 1 else ""


def logical_lines(text: str) -> list[LogicalLine]:
    """The text's logical lines of preprocessing tokens; raises UnclearText."""
    _refuse_unclear(text)
    spliced, line_of = _splice(text)
    return _tokenize(spliced, line_of)


def _refuse_unclear(text: str) -> None:
    for pattern, what in ((re.compile("\x00"), "a NUL character"),
                          (_TRIGRAPH, "a trigraph (??= reads as # to some preprocessors)"),
                          (re.compile(r"\r(?!\n)"), "a carriage return that is not part of a line break"),
                          (_AMBIGUOUS_SPLICE, "a backslash followed by spaces at the end of a line "
                                              "(a line splice to some compilers, not to others)")):
        m = pattern.search(text)
        if m:
            raise UnclearText(f"the text holds {what}", text.count("\n", 0, m.start()) + 1)
    body = text.replace("\r\n", "\n")
    if body.endswith("\\") or body.endswith("\\\n"):
        raise UnclearText("the text ends with a line splice (a backslash before the last line break)",
                          body.count("\n") + 1)


def _splice(text: str) -> tuple[str, list[int]]:
    """Phase 2: backslash-newline removed; `line_of[i]` is the physical line of spliced char i."""
    text = text.replace("\r\n", "\n")
    out: list[str] = []
    line_of: list[int] = []
    line = 1
    i, n = 0, len(text)
    while i < n:
        if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
            i += 2
            line += 1
            continue
        out.append(text[i])
        line_of.append(line)
        if text[i] == "\n":
            line += 1
        i += 1
    line_of.append(line)
    return "".join(out), line_of


def _tokenize(s: str, line_of: list[int]) -> list[LogicalLine]:
    lines: list[LogicalLine] = []
    current = LogicalLine(line=1)
    text: list[str] = []
    i, n = 0, len(s)

    def add(kind: str, start: int, end: int) -> None:
        current.tokens.append(Token(kind, s[start:end], line_of[start], start))
        text.append(s[start:end])

    while i < n:
        c = s[i]
        if c == "\n":
            current.text = "".join(text)
            lines.append(current)
            current, text = LogicalLine(line=line_of[i + 1] if i + 1 < len(line_of) else line_of[i]), []
            i += 1
            continue
        if c in " \t\f\v\r":
            text.append(c)
            i += 1
            continue
        if s.startswith("//", i):
            j = s.find("\n", i)
            i = n if j < 0 else j
            text.append(" ")
            continue
        if s.startswith("/*", i):
            j = s.find("*/", i + 2)
            if j < 0:
                raise UnclearText("a block comment is never closed", line_of[i])
            # A comment is one space; lines it spans still end the logical line after it.
            text.append(" ")
            i = j + 2
            continue
        m = _IDENT.match(s, i)
        if m:
            word = m.group()
            end = m.end()
            if end < n and s[end] == '"' and word in _RAW_PREFIXES:
                i = _raw_string(s, i, end, line_of, add)
                continue
            if end < n and s[end] in "\"'" and word in _STRING_PREFIXES:
                i = _quoted(s, i, end, line_of, add)
                continue
            add("identifier", i, end)
            i = end
            continue
        m = _NUMBER.match(s, i)
        if m:
            add("number", i, m.end())
            i = m.end()
            continue
        if c in "\"'":
            i = _quoted(s, i, i, line_of, add)
            continue
        m = _PUNCT.match(s, i)
        if m:
            add("punct", i, m.end())
            i = m.end()
            continue
        add("other", i, i + 1)
        i += 1
    current.text = "".join(text)
    lines.append(current)
    return lines


def _quoted(s: str, start: int, quote_at: int, line_of: list[int], add) -> int:
    """A string or character literal from `start` (its prefix) to its closing quote; one that
    is not closed on its line ends there (as compilers do, with an error of their own)."""
    quote = s[quote_at]
    j = quote_at + 1
    n = len(s)
    while j < n and s[j] != quote and s[j] != "\n":
        j += 2 if s[j] == "\\" and j + 1 < n and s[j + 1] != "\n" else 1
    end = j + 1 if j < n and s[j] == quote else j
    add("string" if quote == '"' else "char", start, end)
    return end


def _raw_string(s: str, start: int, quote_at: int, line_of: list[int], add) -> int:
    m = _RAW_OPEN.match(s, quote_at)
    if m is None:
        raise UnclearText("a raw string literal with an invalid delimiter", line_of[start])
    close = ")" + m.group(1) + '"'
    j = s.find(close, m.end())
    if j < 0:
        raise UnclearText("a raw string literal is never closed", line_of[start])
    add("string", start, j + len(close))
    return j + len(close)


def string_value(token: Token) -> str | None:
    """The characters of a plain narrow string literal (escapes `\\"` and `\\\\` undone, as
    `_Pragma` destringizes), or None for any other token."""
    if token.kind != "string" or not token.text.startswith('"') or not token.text.endswith('"') or len(token.text) < 2:
        return None
    return re.sub(r'\\(["\\])', r"\1", token.text[1:-1])


def header_name(line: LogicalLine) -> str | None:
    """The operand of an include-like directive as written (`<x.h>` or `"x.h"`), or None when it
    is not one header name alone (a macro, several tokens, nothing)."""
    if len(line.tokens) < 3:
        return None
    rest = line.text[_column(line, 2):].strip()
    if re.fullmatch(r'<[^>\n"]+>|"[^"\n]+"', rest):
        return rest
    return None


def _column(line: LogicalLine, index: int) -> int:
    """Where token `index` starts within `line.text` (comments there are single spaces)."""
    pos = 0
    for k, tok in enumerate(line.tokens):
        pos = line.text.find(tok.text, pos)
        if k == index:
            return pos
        pos += len(tok.text)
    return len(line.text)
