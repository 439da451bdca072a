"""Changing one top-level key of an `@fsr` block in place, keeping the user's layout and
comments: the launch of an applied rewrite, the tolerance a proof settles on."""

from __future__ import annotations

import re


def set_key(comment: str, key: str, value: str, insert: bool = True) -> str:
    """Replace `key = ...` (keeping any trailing comment) or, when `insert`, add it before [args]."""
    pattern = re.compile(rf"^([ \t*]*){key}([ \t]*)=[ \t]*(\"[^\"]*\"|\[[^\]]*\]|[^#\n]*?)([ \t]*(#.*)?)$", re.M)
    m = pattern.search(comment)
    if m:
        return comment[: m.start()] + f"{m.group(1)}{key}{m.group(2)}= {value}{m.group(4)}" + comment[m.end():]
    if not insert:
        return comment
    at = re.search(r"^[ \t*]*\[", comment, re.M)
    line = f"{key} = {value}\n"
    if at is None:
        close = comment.rfind("*/")
        return comment[:close] + line + comment[close:]
    return comment[: at.start()] + line + comment[at.start():]


def toml_value(value: object) -> str:
    def one(v: object) -> str:
        return f'"{v}"' if isinstance(v, str) else str(v)

    if isinstance(value, tuple):
        return one(value[0]) if len(value) == 1 else "[" + ", ".join(one(v) for v in value) + "]"
    return one(value)
