"""Texture-object arguments as a spec writes them:

    tex = "texture[W, H] uchar address=clamp filter=point randint(0, 256)"
    lut = "linear[n] float4"

`texture[...]` is a CUDA array of 1 to 3 dimensions (what tex1D, tex2D and tex3D read),
`linear[N]` linear memory (what tex1Dfetch reads). Then the texel's C type (a type a CUDA array
holds: 8-, 16- and 32-bit integers, half, float, with 1, 2 or 4 channels), the sampler's
settings as `key=value` (the defaults are those of a zeroed cudaTextureDesc: clamp, point,
unnormalized coordinates, element-type reads), and an init as a buffer takes one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..kernels.c_types import element_type
from ..kernels.kernel import Param
from .model import TextureArg, init_spelling

TEXTURE_TYPES = ("cudaTextureObject_t", "CUtexObject")
# the driver's codes for what a spec says of a texture (CUarray_format, CUaddress_mode,
# CUfilter_mode, CU_TRSF_* flags): the evaluator makes textures with them, capture reads them back
ARRAY_FORMAT = {"uint8": 0x01, "uint16": 0x02, "uint32": 0x03, "int8": 0x08, "int16": 0x09, "int32": 0x0A,
                "float16": 0x10, "float32": 0x20}
ADDRESS_MODE = {"wrap": 0, "clamp": 1, "mirror": 2, "border": 3}
FILTER_MODE = {"point": 0, "linear": 1}
READ_AS_INTEGER, NORMALIZED_COORDINATES = 0x01, 0x02
TEXEL_DTYPES = tuple(ARRAY_FORMAT)
OPTIONS = {"address": ("clamp", "wrap", "mirror", "border"), "filter": ("point", "linear"),
           "coords": ("unnormalized", "normalized"), "read": ("element", "normalized")}
FORM = 'texture[W, H] TYPE [address=clamp|wrap|mirror|border] [filter=point|linear] [coords=normalized] ' \
       '[read=normalized] [init], or linear[N] TYPE [init]'
_SHAPE = re.compile(r"^\s*(texture|linear)\s*\[(?P<shape>[^\]]*)\]\s*(?P<rest>.*?)\s*$")


def is_texture(p: Param) -> bool:
    return not p.is_pointer and p.base_type in TEXTURE_TYPES


@dataclass(frozen=True)
class TextureText:
    """A texture value's parts, before its shape and init are checked against the sizes."""

    linear: bool
    shape: tuple[str, ...]
    texel: str
    dtype: str
    lanes: int
    options: dict[str, str]
    init: str


def read_texture(value: object) -> TextureText:
    """The parts of a texture value; ValueError says what is wrong."""
    m = _SHAPE.match(value) if isinstance(value, str) else None
    if m is None:
        raise ValueError(f"a texture object is given as {FORM}, got {value!r}")
    linear = m.group(1) == "linear"
    shape = tuple(s.strip() for s in m.group("shape").split(",") if s.strip())
    if not 1 <= len(shape) <= (1 if linear else 3):
        raise ValueError(f"{m.group(1)}[...] takes {'one size' if linear else '1 to 3 sizes'}, got {len(shape)}")
    words = m.group("rest").split()
    cut = next((i for i, w in enumerate(words) if "=" in w or "(" in w), len(words))
    texel = " ".join(words[:cut])
    dtype, lanes = element_type(texel) if texel else (None, 1)
    if dtype not in TEXEL_DTYPES or lanes not in (1, 2, 4):
        raise ValueError(f"texel type {texel or '(none)'!r}: a texture holds 8-, 16- or 32-bit integers, half or "
                         f"float, with 1, 2 or 4 channels (uchar, ushort4, float2, ...)")
    options: dict[str, str] = {}
    rest = words[cut:]
    while rest and "=" in rest[0] and "(" not in rest[0]:
        key, _, choice = rest.pop(0).partition("=")
        if key not in OPTIONS or choice not in OPTIONS[key]:
            raise ValueError(f"unknown texture setting {key}={choice} (settings: "
                             + "; ".join(f"{k}={'|'.join(v)}" for k, v in OPTIONS.items()) + ")")
        options[key] = choice
    if linear and any(options.get(k, OPTIONS[k][0]) != OPTIONS[k][0] for k in ("address", "filter", "coords")):
        raise ValueError("linear[...] textures are read by tex1Dfetch: integer indices, no filtering or address modes")
    if options.get("filter") == "linear" and not dtype.startswith("float") and options.get("read") != "normalized":
        raise ValueError("filter=linear interpolates floats: integer texels need read=normalized (the driver refuses "
                         "linear filtering of integers read as integers)")
    if options.get("address") in ("wrap", "mirror") and options.get("coords") != "normalized":
        raise ValueError(f"address={options['address']} needs coords=normalized (CUDA wraps and mirrors normalized "
                         f"coordinates only)")
    init = " ".join(rest)
    if init.startswith("captured"):
        raise ValueError("captured() is for buffers: a texture is filled with fresh values at every seed")
    return TextureText(linear, shape, texel, dtype, lanes, options, init)


def texture_arg(name: str, parts: TextureText, init) -> TextureArg:
    o = parts.options
    return TextureArg(name, parts.shape, parts.texel, init, parts.linear, o.get("address", "clamp"),  # type: ignore[arg-type]
                      o.get("filter", "point"), o.get("coords") == "normalized", o.get("read", "element"))  # type: ignore[arg-type]


def texture_spelling(arg: TextureArg) -> str:
    """A TextureArg as the spec writes it (defaults left out)."""
    words = [f"{'linear' if arg.linear else 'texture'}[{', '.join(arg.shape)}]", arg.texel]
    for key, value in (("address", arg.address), ("filter", arg.filter),
                       ("coords", "normalized" if arg.normalized else "unnormalized"), ("read", arg.read)):
        if value != OPTIONS[key][0]:
            words.append(f"{key}={value}")
    return " ".join(words + [init_spelling(arg.init)])
