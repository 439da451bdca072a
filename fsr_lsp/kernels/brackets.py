"""The one bracket matcher: where the bracket opened at `i` closes, in text or bytes.

Callers pass masked text (comments, strings and preprocessor lines blanked, `lexical.mask`)
whenever brackets inside those must not count."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import AnyStr


@lru_cache(maxsize=16)
def _pattern(open_: str | bytes, close: str | bytes) -> re.Pattern:
    bar = "|" if isinstance(open_, str) else b"|"
    return re.compile(re.escape(open_) + bar + re.escape(close))  # type: ignore[operator]


def closing(text: AnyStr, i: int, open_: AnyStr, close: AnyStr, limit: int | None = None) -> int:
    """Index of the bracket that closes the one at `i` (nested pairs skipped), or -1 when none
    does before `limit` (the end of the text by default)."""
    depth = 0
    for m in _pattern(open_, close).finditer(text, max(i, 0), len(text) if limit is None else limit):
        if m.group() == open_:
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return m.start()
    return -1
