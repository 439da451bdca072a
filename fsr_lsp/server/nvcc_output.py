"""nvcc's, gcc's and ptxas's messages -> located records, for diagnostics.

Formats (see the field notes): `file.cu(6): error: ...` followed by the echoed source line and
a `^` caret line that gives the column; `file.cu(5): warning #177-D: ...`; gcc's
`file.cu:1:10: fatal error: ...` for includes; ptxas's `ptxas error : Entry function '_Z..'
...` with no file or line, attached to the kernel it names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NVCC = re.compile(r"^(?P<file>[^\s(][^(]*)\((?P<line>\d+)\): (?P<sev>error|warning|remark)(?: #(?P<code>[\w-]+))?: (?P<msg>.*)$")
_GCC = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?P<col>\d+): (?P<sev>fatal error|error|warning): (?P<msg>.*)$")
_PTXAS = re.compile(r"^ptxas (?P<sev>error|fatal|warning)\s*: (?P<msg>.*)$")
_ENTRY = re.compile(r"'(_Z\w+|\w+)'")


@dataclass(frozen=True)
class Message:
    file: str  # as the compiler printed it ("" for ptxas)
    line: int  # 0-based; -1 when the compiler gave none
    column: int  # 0-based, in characters of the line; -1 when unknown
    severity: str  # "error", "warning"
    text: str
    code: str = ""
    kernel: str = ""  # for ptxas messages: the kernel they name (demangled)


def parse_messages(output: str, source_lines: list[str]) -> list[Message]:
    lines = output.splitlines()
    out: list[Message] = []
    seen: set[tuple] = set()
    for i, raw in enumerate(lines):
        msg = _parse_line(raw, lines[i + 1 : i + 3], source_lines)
        if msg is None:
            continue
        key = (msg.file, msg.line, msg.column, msg.severity, msg.text)
        if key not in seen:  # `-c` and template instantiations repeat messages
            seen.add(key)
            out.append(msg)
    return out


_FATAL = re.compile(r"^nvcc (?:fatal|error)\s*:\s*(?P<msg>.+)$")
_BLAMED = (("gpu architecture", "fsr.compiler.arch"), ("Unknown option", "fsr.compiler.flags or the build's flags"),
           ("option", "fsr.compiler.flags or the build's flags"))


def _parse_line(raw: str, following: list[str], source_lines: list[str]) -> Message | None:
    if m := _FATAL.match(raw.strip()):  # nvcc refused to start: a setting or a flag, never a line of the file
        text = m.group("msg").strip()
        blamed = next((setting for words, setting in _BLAMED if words.lower() in text.lower()), "")
        return Message("", 0, -1, "error", f"nvcc could not build this file: {text}"
                       + (f" (check {blamed})" if blamed else ""))
    if m := _NVCC.match(raw):
        if m.group("sev") == "remark":
            return None
        line = int(m.group("line")) - 1
        return Message(m.group("file"), line, _caret_column(following, source_lines, line), m.group("sev"),
                       m.group("msg").strip(), m.group("code") or "")
    if m := _GCC.match(raw):
        sev = "error" if "error" in m.group("sev") else "warning"
        return Message(m.group("file"), int(m.group("line")) - 1, int(m.group("col")) - 1, sev, m.group("msg").strip())
    if m := _PTXAS.match(raw.strip()):
        entry = _ENTRY.search(m.group("msg"))
        kernel = ""
        if entry:
            from ..evaluator.compile.entries import mangled_name

            kernel = mangled_name(entry.group(1)) or entry.group(1)
        text = m.group("msg").strip()
        if entry and kernel:
            text = text.replace(entry.group(0), f"'{kernel}'")
        return Message("", -1, -1, "warning" if m.group("sev") == "warning" else "error", f"ptxas: {text}", kernel=kernel)
    return None


def _caret_column(following: list[str], source_lines: list[str], line: int) -> int:
    """nvcc echoes the *preprocessed* source line (comments and macros may be gone) and puts a
    caret under the spot; find the same spot in the real line by what stands at the caret."""
    if len(following) < 2 or "^" not in following[1] or not (0 <= line < len(source_lines)):
        return -1
    echoed, caret = following[0], following[1].index("^")
    original = source_lines[line]
    rest = echoed[caret:].rstrip()
    if rest and original.count(rest) == 1:
        return original.index(rest)
    token = re.match(r"\w+|\S", echoed[caret:])
    if token:
        found = list(re.finditer(rf"(?<!\w){re.escape(token.group())}(?!\w)", original))
        if len(found) == 1:
            return found[0].start()
    return -1
