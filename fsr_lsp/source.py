"""Source text with conversions between byte offsets and LSP positions.

tree-sitter speaks UTF-8 byte offsets; LSP speaks (line, UTF-16 code unit). Every range we
report goes through here so that a kernel after a line with non-ASCII text is still found at
the right column in the editor.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate


@dataclass(frozen=True)
class Position:
    """An LSP position: zero-based line and UTF-16 code-unit column."""

    line: int
    character: int


@dataclass(frozen=True)
class Span:
    """A region of a file, both as UTF-8 byte offsets and as LSP positions."""

    start_byte: int
    end_byte: int
    start: Position
    end: Position


class SourceText:
    """Immutable text of one file with fast offset/position lookups."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.data = text.encode("utf-8")
        # where each line starts, from the lengths of the lines (C speed: a 10 MB file in ms)
        self._line_starts = [0, *accumulate(len(line) + 1 for line in self.data.split(b"\n")[:-1])]

    @classmethod
    def of(cls, text: str) -> "SourceText":
        """The SourceText of `text`, shared: a server asks about the same document in turn (its
        hover, its code actions, its diagnostics), and a large one should be indexed once."""
        return _shared(text)

    def line_of(self, byte: int) -> int:
        return bisect.bisect_right(self._line_starts, byte) - 1

    def line_start(self, line: int) -> int:
        return self._line_starts[min(line, len(self._line_starts) - 1)]

    def position(self, byte: int, encoding: str = "utf-16") -> Position:
        """The LSP position of a byte offset, in the negotiated position encoding."""
        byte = max(0, min(byte, len(self.data)))
        line = self.line_of(byte)
        prefix = self.data[self._line_starts[line] : byte].decode("utf-8", errors="replace")
        return Position(line, units(prefix, encoding))

    def span(self, start_byte: int, end_byte: int) -> Span:
        """A span with UTF-16 positions (the LSP default); servers re-derive others from bytes."""
        return Span(start_byte, end_byte, self.position(start_byte), self.position(end_byte))

    def slice(self, start_byte: int, end_byte: int) -> str:
        return self.data[start_byte:end_byte].decode("utf-8", errors="replace")

    def byte_of_char(self, char_index: int) -> int:
        """Byte offset of a Python str index (used when regexes run on `text`)."""
        return len(self.text[:char_index].encode("utf-8"))

    def byte_at(self, position: Position, encoding: str = "utf-16") -> int:
        """Byte offset of an LSP position (clamped to the line)."""
        line = max(0, min(position.line, len(self._line_starts) - 1))
        start = self._line_starts[line]
        end = self._line_starts[line + 1] - 1 if line + 1 < len(self._line_starts) else len(self.data)
        counted = 0
        offset = start
        for ch in self.data[start:end].decode("utf-8", errors="replace"):
            if counted >= position.character:
                break
            counted += units(ch, encoding)
            offset += len(ch.encode("utf-8"))
        return offset


def units(s: str, encoding: str = "utf-16") -> int:
    """Length of `s` in LSP position units: UTF-16 code units (the default), bytes, or code points."""
    if encoding == "utf-8":
        return len(s.encode("utf-8"))
    if encoding == "utf-32":
        return len(s)
    return len(s.encode("utf-16-le")) // 2


@lru_cache(maxsize=16)
def _shared(text: str) -> SourceText:
    return SourceText(text)
