"""A candidate's `@fsr` block over the original's spec: the block states only what it changes
(its launch), the sizes and arguments, written or captured, come from the original."""

from __future__ import annotations

import tomllib
from typing import Any

from .model import Spec
from .blocks import render_spec


def overlay(base: Spec, data: dict[str, Any]) -> dict[str, Any]:
    """`data` (a block's TOML tables) over the tables of `base`: each key it names replaces the
    base's, `[args]` one argument at a time."""
    body = render_spec(base).split("\n", 1)[1].rsplit("*/", 1)[0]
    merged = tomllib.loads(body)
    for key, value in data.items():
        if key == "args" and isinstance(value, dict) and isinstance(merged.get("args"), dict):
            merged["args"] = {**merged["args"], **value}
        else:
            merged[key] = value
    return merged
