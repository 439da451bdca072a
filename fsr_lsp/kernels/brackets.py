"""The one bracket matcher: the depth of every token among brackets, and what is built on it
(where a bracket closes, what stands at the top level, a text split there), in text or bytes.

Callers pass masked text (comments, strings and preprocessor lines blanked, `lexical.mask`)
whenever brackets inside those must not count. The tokens can be anything with a key: the
characters of a text, the matches of a pattern, the directives of preprocessor lines
(`#if` ... `#endif` nest the same way)."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, AnyStr, Callable, Container, Iterable, Iterator, TypeVar

T = TypeVar("T")


def nesting(tokens: Iterable[T], opens: Container, closes: Container,
            key: Callable[[T], object] | None = None) -> Iterator[tuple[T, int]]:
    """Each token with its depth among brackets: 0 at the top level; an opener and its closer at
    the depth outside them (their inside is one deeper); a closer that closes nothing takes the
    depth below 0, and what follows stays there."""
    depth = 0
    for token in tokens:
        k = token if key is None else key(token)
        if k in closes:
            depth -= 1
            yield token, depth
        elif k in opens:
            yield token, depth
            depth += 1
        else:
            yield token, depth


def balance(tokens: Iterable[T], opens: Container, closes: Container,
            key: Callable[[T], object] | None = None) -> tuple[T | None, int]:
    """The first closer that closes nothing (None when each closes one), and the depth after
    the last token (how many openers are left open, when there is no such closer)."""
    stray, after = None, 0
    for token, depth in nesting(tokens, opens, closes, key):
        k = token if key is None else key(token)
        if stray is None and depth < 0 and k in closes:
            stray = token
        after = depth + 1 if k in opens else depth
    return stray, after


@lru_cache(maxsize=32)
def _pattern(*alternatives: str | bytes) -> re.Pattern:
    bar = "|" if isinstance(alternatives[0], str) else b"|"
    return re.compile(bar.join(re.escape(a) for a in alternatives))  # type: ignore[arg-type]


def match_text(m: Any) -> Any:
    """A match's text: the key `nesting` reads a bracket found by a pattern by."""
    return m.group()


def closing(text: AnyStr, i: int, open_: AnyStr, close: AnyStr, limit: int | None = None) -> int:
    """Index of the bracket that closes the one at `i` (nested pairs skipped), or -1 when none
    does before `limit` (the end of the text by default)."""
    found = _pattern(open_, close).finditer(text, max(i, 0), len(text) if limit is None else limit)
    for m, depth in nesting(found, (open_,), (close,), match_text):
        if depth == 0 and m.group() == close:
            return m.start()
    return -1


def top_level(text: AnyStr, targets: Iterable[AnyStr], opens: AnyStr, closes: AnyStr,
              start: int = 0, end: int | None = None) -> Iterator[re.Match]:
    """The matches of `targets` (strings that are no bracket) outside every pair of `opens` and
    `closes` (characters, paired by position: any opener counts against any closer) in
    text[start:end], in order; none below a closer that closes nothing."""
    brackets = [opens[k:k + 1] for k in range(len(opens))] + [closes[k:k + 1] for k in range(len(closes))]
    wanted = tuple(targets)
    found = _pattern(*wanted, *brackets).finditer(text, start, len(text) if end is None else end)
    openers = {opens[k:k + 1] for k in range(len(opens))}
    closers = {closes[k:k + 1] for k in range(len(closes))}
    for m, depth in nesting(found, openers, closers, match_text):
        if depth == 0 and m.group() in wanted:
            yield m


def split_top_level(text: str, separator: str = ",", opens: str = "([{<", closes: str = ")]}>") -> list[str]:
    """`text` split at `separator` outside brackets, parts as written:
    `a, f(b, c), T<d, e>` -> ['a', ' f(b, c)', ' T<d, e>']."""
    parts, start = [], 0
    for m in top_level(text, (separator,), opens, closes):
        parts.append(text[start:m.start()])
        start = m.end()
    parts.append(text[start:])
    return parts
