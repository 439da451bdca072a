"""A texture object's spec value from what the capture read of it at the launch (its array's
or linear memory's format, channels and extent, and its sampler): the texture fsr makes for
verification is the one the program made, filled with fresh values at every seed."""

from __future__ import annotations

from ..kernels.c_types import ITEMSIZE
from ..specs.texture import ADDRESS_MODE, ARRAY_FORMAT, FILTER_MODE, NORMALIZED_COORDINATES, READ_AS_INTEGER

_FORMATS = {code: dtype for dtype, code in ARRAY_FORMAT.items()}
_ADDRESS = {code: mode for mode, code in ADDRESS_MODE.items()}
_ONE = {"uint8": "unsigned char", "int8": "char", "uint16": "unsigned short", "int16": "short",
        "uint32": "unsigned int", "int32": "int", "float16": "half", "float32": "float"}
_VECTOR = {"uint8": "uchar", "int8": "char", "uint16": "ushort", "int16": "short", "uint32": "uint", "int32": "int",
           "float16": "half", "float32": "float"}
_LAYERED, _CUBEMAP = 0x01, 0x04  # CUDA_ARRAY3D flags


class NotATexture(ValueError):
    """Why the captured texture cannot be written as a spec."""


def texture_value(info: dict, named: dict[int, str]) -> tuple[str, list[str]]:
    """(the spec's value, its extents as expressions) for a captured texture; extents equal to
    an integer argument (or a product of two) are written as that argument."""
    dtype = _FORMATS.get(int(info.get("format", 0)))
    channels = int(info.get("channels", 1))
    if dtype is None or channels not in (1, 2, 4) or (dtype == "float16" and channels == 4):
        raise NotATexture(f"its texels (format {info.get('format')}, {channels} channels) are not ones fsr can fill")
    kind = info.get("kind")
    if int(info.get("flags3d", 0)) & (_LAYERED | _CUBEMAP):
        raise NotATexture("it is a layered or cubemap array, which fsr does not make")
    dims = [int(d) for d in info.get("dims", [])][:3]
    if kind == "linear":
        dims = [dims[0] // (ITEMSIZE[dtype] * channels)] if dims else []
    else:
        while len(dims) > 1 and dims[-1] == 0:  # a 2D array has depth 0, a 1D one height 0 too
            dims.pop()
    if not dims or any(d < 1 for d in dims):
        raise NotATexture(f"its extent {info.get('dims')} is empty")
    extents = [named.get(d, str(d)) for d in dims]
    texel = _ONE[dtype] if channels == 1 else f"{_VECTOR[dtype]}{channels}"
    words = [f"{'linear' if kind == 'linear' else 'texture'}[{', '.join(extents)}]", texel]
    flags = int(info.get("flags", 0))
    if kind != "linear":
        address = _ADDRESS.get(int((info.get("address") or [1])[0]), "clamp")
        if address in ("wrap", "mirror") and not flags & NORMALIZED_COORDINATES:
            address = "clamp"  # what CUDA does with unnormalized coordinates
        words += [f"address={address}"] if address != "clamp" else []
        words += ["filter=linear"] if int(info.get("filter", 0)) == FILTER_MODE["linear"] else []
        words += ["coords=normalized"] if flags & NORMALIZED_COORDINATES else []
    if not dtype.startswith("float") and not flags & READ_AS_INTEGER:
        words.append("read=normalized")
    return " ".join(words), extents
