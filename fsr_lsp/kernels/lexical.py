"""Byte-level helpers shared by both discovery paths: masking, block comments, the spec blocks."""

from __future__ import annotations

import re
from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import lru_cache

from ..source import SourceText
from . import brackets
from .treesitter import YIELDING_BYTES, derived
from .kernel import SpecComment

_SPEC_OPEN = re.compile(rb"/\*\s*@fsr\b")


@dataclass(frozen=True)
class Lexed:
    """A file with comments, string/char literals and preprocessor lines blanked (offsets kept),
    and where its block comments are."""

    masked: bytes
    block_comments: tuple[tuple[int, int], ...]  # (start, end) of each `/* ... */`
    line_comments: tuple[tuple[int, int], ...]  # (start, end) of each `// ...`, without the newline


# What starts a masked region: a preprocessor line, a comment, a string or character literal.
_OPENERS = re.compile(rb"^[ \t]*#|//|/\*|[\"']", re.M)


@lru_cache(maxsize=32)  # one file is lexed by discovery, drafting and the spec parser in turn
def lex(data: bytes) -> Lexed:
    """One pass over the bytes: a scanner that looks for `__global__`, braces and parentheses
    must not see them inside a comment, a string or a `#define`. Jumps from opener to opener
    with a regex: a byte-by-byte loop in Python costs 20 ms on a 2,000-line file."""
    out = bytearray(data)
    comments: list[tuple[int, int]] = []
    lines: list[tuple[int, int]] = []
    i, n = 0, len(data)
    while True:
        m = _OPENERS.search(data, i)
        if m is None:
            break
        token, start = m.group(), m.start()
        if token.endswith(b"#"):  # to the end of the line, through backslash continuations
            start = m.end() - 1
            j = start
            while True:
                j = data.find(b"\n", j)
                if j < 0:
                    j = n
                    break
                if data[j - 1] != ord("\\"):
                    break
                j += 1
            _blank(out, start, j)
            i = j
        elif token == b"//":
            j = data.find(b"\n", start)
            j = n if j < 0 else j
            lines.append((start, j))
            _blank(out, start, j)
            i = j
        elif token == b"/*":
            j = data.find(b"*/", start + 2)
            j = n if j < 0 else j + 2
            comments.append((start, j))
            _blank(out, start, j)
            i = j
        else:
            quote = token[0]
            j = start + 1
            while j < n and data[j] != quote and data[j] != 0x0A:
                j += 2 if data[j] == ord("\\") else 1
            j = min(j + 1, n)
            _blank(out, start + 1, j - 1)
            i = j
    return Lexed(bytes(out), tuple(comments), tuple(lines))


def mask(data: bytes) -> bytes:
    """Blank comments, string/char literals and preprocessor lines, keeping offsets."""
    return lex(data).masked


def code_only(text: str) -> str:
    """The text without comments and with runs of whitespace as one space: two sources equal
    here are the same code."""
    data = text.encode()
    lexed = lex(data)
    out = bytearray()
    at = 0
    for start, end in sorted(lexed.block_comments + lexed.line_comments):
        out += data[at:start] + b" "
        at = end
    out += data[at:]
    return " ".join(out.decode(errors="replace").split())


_SPACES = bytes(0x0A if b == 0x0A else 0x20 for b in range(256))  # every byte a space, newlines kept


def _blank(buf: bytearray, start: int, end: int) -> None:
    if end > start:
        buf[start:end] = buf[start:end].translate(_SPACES)


def spec_blocks(src: SourceText, lexed: Lexed) -> list[SpecComment]:
    """Every `/* @fsr ... */` block comment of the file, in order (attached to a kernel or not)."""
    data = src.data
    blocks = []
    for start, end in lexed.block_comments:
        m = _SPEC_OPEN.match(data, start)
        if m is None or not data.endswith(b"*/", 0, end):
            continue
        body = data[m.end() : end - 2].decode("utf-8", errors="replace")
        blocks.append(SpecComment(span=src.span(start, end), body=body, body_start_byte=m.end()))
    return blocks


def macro_aliases(data: bytes, qualifiers: tuple[bytes, ...] = (b"__global__",)) -> set[bytes]:
    """Object-like macros whose body contains one of `qualifiers` (`#define KERNEL __global__`)."""
    words = b"|".join(qualifiers)
    return set(re.findall(rb"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+[^\n]*\b(?:" + words + rb")\b", data, re.M))


_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b(.*)$")
_DEFINE = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+(\w+)", re.M)


@lru_cache(maxsize=4)  # a few texts: each key holds its file's bytes (10 MB for a large one)
def defined_macros(data: bytes) -> frozenset[str]:
    """Every macro the text `#define`s (read once per text: a 10 MB file's kernels asked it again
    and again, 45 ms a time)."""
    return frozenset(m.decode() for m in _DEFINE.findall(data))


def active_text(text: str, defined: AbstractSet[str]) -> str:
    """`text` with the lines of preprocessor branches that are off, and the directives, blanked:
    each byte a space, so that lines and byte offsets stay where they were (a large text's tree
    is then the text's own tree reparsed where lines were blanked: treesitter.derived).

    Only what a file decides by itself is decided: `#if 0`/`#if 1`, `#ifdef`/`#ifndef` and
    `defined(X)` against the file's own `#define`s. Anything else takes its first branch, as a
    best guess of the parameters a kernel has (nvcc, with the real flags, has the last word).
    Read once per text and macros: a file's type aliases and its structs' fields both ask.
    """
    return _active_text(text, frozenset(defined))


@lru_cache(maxsize=8)  # as the type aliases' and struct fields' caches it serves
def _active_text(text: str, macros: frozenset[str]) -> str:
    active = _branches_taken(text, macros)
    if len(text) > YIELDING_BYTES and active != text:
        derived(text.encode(), active.encode())
    return active


def _spaces(line: str) -> str:
    return " " * len(line.encode()) if line.strip() else line


def _branches_taken(text: str, macros: frozenset[str]) -> str:
    """The text with its off branches and its conditional directives blanked, line by line as
    `_spaces` blanks a line. Only the preprocessor's lines are looked at one by one: the text
    between two of them is kept or blanked whole (a 10 MB text's 280,000 lines, one Python step
    each, took a second)."""
    out: list[str] = []
    stack: list[tuple[bool, bool]] = []  # (this branch is on, some branch of this #if was taken)
    defined = set(macros) - _guards(text)  # an include guard is defined where it is, not before
    on, done = True, 0
    for line in _PREPROCESSOR_LINE.finditer(text):
        m = _DIRECTIVE.match(line.group())
        if m is None:
            if on and (d := _DEFINE_LINE.match(line.group())):
                defined.add(d.group(1))
            continue
        between = text[done:line.start()]
        out += [between if on else _OFF_LINE.sub(_blank_line, between), _spaces(line.group())]
        done = line.end()
        kind, rest = m.group(1), m.group(2).strip()
        if kind in ("if", "ifdef", "ifndef"):
            value = _condition(kind, rest, defined)
            stack.append((value, value))
        elif kind == "elif" and stack:
            taken = stack[-1][1]
            value = not taken and _condition("if", rest, defined)
            stack[-1] = (value, taken or value)
        elif kind == "else" and stack:
            stack[-1] = (not stack[-1][1], True)
        elif kind == "endif" and stack:
            stack.pop()
        on = all(s[0] for s in stack)
    rest_of_text = text[done:]
    out.append(rest_of_text if on else _OFF_LINE.sub(_blank_line, rest_of_text))
    return "".join(out)


_PREPROCESSOR_LINE = re.compile(r"^[ \t]*#[^\n]*", re.M)
_OFF_LINE = re.compile(r"[^\n]+")


def _blank_line(m: re.Match[str]) -> str:
    return _spaces(m.group())


_DEFINE_LINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)")
_GUARD = re.compile(r"^[ \t]*#[ \t]*(?:ifndef[ \t]+(\w+)|if[ \t]+![ \t]*defined[ \t]*\(?[ \t]*(\w+)[ \t]*\)?)[^\n]*\n"
                    r"(?:[ \t]*(?://[^\n]*)?\n)*[ \t]*#[ \t]*define[ \t]+(\w+)", re.M)


def _guards(text: str) -> set[str]:
    """Macros defined right after `#ifndef` of themselves: include guards (every header of a
    concatenation has its own)."""
    return {m.group(3) for m in _GUARD.finditer(text) if m.group(3) in (m.group(1), m.group(2))}


def _condition(kind: str, rest: str, defined: set[str]) -> bool:
    name = re.match(r"\(?\s*(\w+)", rest)
    if kind == "ifdef":
        return name is not None and name.group(1) in defined
    if kind == "ifndef":
        return not (name is not None and name.group(1) in defined)
    text = re.sub(r"//.*|/\*.*?\*/", "", rest).strip()
    if re.fullmatch(r"\d+", text):
        return int(text) != 0
    m = re.fullmatch(r"(!\s*)?defined\s*\(?\s*(\w+)\s*\)?", text)
    if m:
        return (m.group(2) in defined) != bool(m.group(1))
    return True


def split_top_level(text: str, angles: bool = True) -> list[str]:
    """`text` split at commas outside brackets (and outside `<...>` when `angles`: template
    arguments), parts as written: `a, f(b, c), T<d, e>` -> ['a', ' f(b, c)', ' T<d, e>']."""
    opens, closes = ("([{<", ")]}>") if angles else ("([{", ")]}")
    return brackets.split_top_level(text, ",", opens, closes)


def word_places(text: str, name: str) -> Iterator[int]:
    """Each offset where `name` stands in `text` as a whole word, found with `str.find`: a
    `\\bname\\b` regex reads every position of the text (43 ms for 50 documents, 0.5 ms so)."""
    at = text.find(name)
    while at >= 0:
        end = at + len(name)
        if (at == 0 or not (text[at - 1].isalnum() or text[at - 1] == "_")) and \
                (end == len(text) or not (text[end].isalnum() or text[end] == "_")):
            yield at
        at = text.find(name, end)
