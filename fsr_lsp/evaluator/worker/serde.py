"""Dataclasses <-> plain JSON data, so jobs and results cross processes and machines.

Bytes travel as base64; nested dataclasses, lists, tuples, dicts and Optionals are rebuilt
from type hints. Unknown keys are ignored so that an older reader accepts a newer record.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import types
import typing
from functools import lru_cache
from typing import Any, TypeVar

T = TypeVar("T")


def to_data(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_data(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (bytes, bytearray)):
        return {"__b64__": base64.b64encode(bytes(obj)).decode("ascii")}
    if isinstance(obj, (list, tuple)):
        return [to_data(x) for x in obj]
    if isinstance(obj, dict):
        return {str(k): to_data(v) for k, v in obj.items()}
    if isinstance(obj, float) and obj != obj:
        return None  # NaN is not JSON
    return obj


def from_data(cls: type[T], data: Any) -> T:
    return _build(cls, data)


def to_json(obj: Any, **kwargs: Any) -> str:
    return json.dumps(to_data(obj), **kwargs)


def from_json(cls: type[T], text: str) -> T:
    return from_data(cls, json.loads(text))


@lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _build(tp: Any, data: Any) -> Any:
    if data is None:
        return None
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(tp) if a is not type(None)]
        for option in options:
            if dataclasses.is_dataclass(option) and isinstance(data, dict):
                return _build(option, data)
        for option in options:
            if _matches(option, data):
                return _build(option, data)
        return data
    if dataclasses.is_dataclass(tp):
        hints = _hints(tp)
        kwargs = {f.name: _build(hints[f.name], data[f.name]) for f in dataclasses.fields(tp)
                  if f.name in data and f.init}
        return tp(**kwargs)
    if tp is bytes:
        return base64.b64decode(data["__b64__"]) if isinstance(data, dict) else bytes(data)
    if origin in (list, tuple):
        args = typing.get_args(tp)
        if origin is tuple and args and args[-1] is not Ellipsis:
            return tuple(_build(a, x) for a, x in zip(args, data))
        item = args[0] if args else Any
        built = [_build(item, x) for x in data]
        return tuple(built) if origin is tuple else built
    if origin is dict:
        _, value_type = typing.get_args(tp) or (Any, Any)
        return {k: _build(value_type, v) for k, v in data.items()}
    if origin is typing.Literal:
        return data
    if tp is float and isinstance(data, int):
        return float(data)
    return data


def _matches(tp: Any, data: Any) -> bool:
    origin = typing.get_origin(tp) or tp
    if origin in (list, tuple):
        return isinstance(data, list | tuple)
    if origin is dict:
        return isinstance(data, dict)
    if tp is bytes:
        return isinstance(data, dict) and "__b64__" in data
    if tp is float:
        return isinstance(data, (int, float)) and not isinstance(data, bool)
    if isinstance(tp, type):
        return isinstance(data, tp)
    return True
