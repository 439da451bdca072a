"""The compiler's messages about a candidate, cut to what the candidate may be shown.

A compiler quotes the files it reads: a diagnostic located in a header carries that header's
text (`/etc/hostname(1): error: identifier "vm" is undefined` was a file's content on its way
to a model). What leaves the evaluator keeps the diagnostics of the compiled file itself (the
original with the candidate in it), with the candidate's lines named as such, and, for a
header, only its message line when the header is one the original includes or CUDA's own;
anything else is left out, saying so. Nothing here needs a compiler.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

NVCC_LOCATION = re.compile(
    r"^(?P<file>[^\s(][^(]*)\((?P<line>\d+)\): (?P<sev>catastrophic error|error|warning|remark)(?: #(?P<code>[\w-]+))?: "
    r"(?P<msg>.*)$")
GCC_LOCATION = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?:(?P<col>\d+):)? (?P<sev>fatal error|error|warning|note): "
                          r"(?P<msg>.*)$")
_INCLUDED_FROM = re.compile(r"^(In file included from|\s+from) ")
_SUMMARY = re.compile(r"^\d+ (catastrophic )?errors? detected in the compilation of|^Compilation terminated\.")
_INSTANTIATION = re.compile(r"^\s+detected during.* at line (?P<line>\d+) of (?P<file>\S+)$")
OWN_FILE = "kernel.cu"
_LEFT_OUT = "(a diagnostic located in another file was left out)"


@dataclass(frozen=True)
class CandidateLines:
    """Where the candidate stands in the compiled file: lines first..first+count-1 (1-based)."""

    first: int
    count: int

    def own(self, line: int) -> int | None:
        """The candidate's own line number for a line of the compiled file, or None."""
        return line - self.first + 1 if self.first <= line < self.first + self.count else None


def scrub(log: str, lines: CandidateLines | None, headers: set[str] | frozenset[str] = frozenset()) -> str:
    """`log` with only what the candidate may be shown (see the module's docstring); `headers`:
    base names of headers whose message lines may stay (the original's includes, CUDA's)."""
    out: list[str] = []
    keep_following = True
    for raw in log.splitlines():
        m = NVCC_LOCATION.match(raw) or GCC_LOCATION.match(raw)
        if m is None:
            if _INCLUDED_FROM.match(raw):
                continue  # names a chain of files, never needed to fix a kernel
            if _SUMMARY.match(raw):
                out.append(raw)
            elif (during := _INSTANTIATION.match(raw)) and os.path.basename(during.group("file")) == OWN_FILE:
                out.append(_instantiated_at(raw, during, lines))  # where in the candidate a header's template broke
            elif keep_following:
                out.append(raw)
            continue
        file = m.group("file")
        if os.path.basename(file) == OWN_FILE and "/" not in file.lstrip("./"):
            out.append(_relocated(raw, m, lines))
            keep_following = True
        elif _is_known_header(file, headers):
            out.append(f"{os.path.basename(file)}: {m.group('sev')}: {m.group('msg')}")
            keep_following = False  # the echoed header line and its caret
        else:
            if not out or out[-1] != _LEFT_OUT:
                out.append(_LEFT_OUT)
            keep_following = False
    return "\n".join(out).strip()


def _relocated(raw: str, m: re.Match, lines: CandidateLines | None) -> str:
    own = lines.own(int(m.group("line"))) if lines else None
    if own is None:
        return raw
    return f"candidate({own}){raw[m.end('line') + 1:]}" if raw[m.end("line")] == ")" else \
        f"candidate:{own}{raw[m.end('line'):]}"


def _instantiated_at(raw: str, m: re.Match, lines: CandidateLines | None) -> str:
    own = lines.own(int(m.group("line"))) if lines else None
    return raw if own is None else f"{raw[:m.start('line')]}{own} of the candidate"


def _is_known_header(file: str, headers: set[str] | frozenset[str]) -> bool:
    name = os.path.basename(file)
    if name in headers:
        return True
    # CUDA's own headers, wherever the toolkit lives (their text is public).
    return bool(re.search(r"(^|/)(cuda[^/]*|nvidia)/.*include/|/targets/[^/]+/include/", file))
