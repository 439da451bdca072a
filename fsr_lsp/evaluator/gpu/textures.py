"""Texture objects for kernels that take a `cudaTextureObject_t`, through the driver API
itself (pycuda has texture references only, gone since CUDA 12): a CUDA array (or linear
memory) of the spec's shape and texel type, a texture object over it with the spec's sampler
settings, refilled with fresh inputs at every seed. Made once per shape and settings in a
session; the kernel gets the object's 64-bit handle."""

from __future__ import annotations

import ctypes
from collections import OrderedDict
from typing import Any

from ...kernels.c_types import ITEMSIZE
from ...specs.texture import ADDRESS_MODE, ARRAY_FORMAT, FILTER_MODE, NORMALIZED_COORDINATES, READ_AS_INTEGER
from ..records import TexturePlan
from .driver_api import check, libcuda

_RESOURCE_ARRAY, _RESOURCE_LINEAR = 0, 2
_MEMORY_DEVICE, _MEMORY_ARRAY = 2, 3
KEPT = 16  # textures kept per session (each holds its array); more than a kernel takes
size_t = ctypes.c_size_t


class _Array3DDescriptor(ctypes.Structure):
    _fields_ = [("Width", size_t), ("Height", size_t), ("Depth", size_t), ("Format", ctypes.c_uint),
                ("NumChannels", ctypes.c_uint), ("Flags", ctypes.c_uint)]


class _Linear(ctypes.Structure):
    _fields_ = [("devPtr", ctypes.c_uint64), ("format", ctypes.c_uint), ("numChannels", ctypes.c_uint),
                ("sizeInBytes", size_t)]


class _Resource(ctypes.Union):
    _fields_ = [("array", ctypes.c_void_p), ("linear", _Linear), ("reserved", ctypes.c_int * 32)]


class _ResourceDesc(ctypes.Structure):
    _fields_ = [("resType", ctypes.c_uint), ("res", _Resource), ("flags", ctypes.c_uint)]


class _TextureDesc(ctypes.Structure):
    _fields_ = [("addressMode", ctypes.c_uint * 3), ("filterMode", ctypes.c_uint), ("flags", ctypes.c_uint),
                ("maxAnisotropy", ctypes.c_uint), ("mipmapFilterMode", ctypes.c_uint),
                ("mipmapLevelBias", ctypes.c_float), ("minMipmapLevelClamp", ctypes.c_float),
                ("maxMipmapLevelClamp", ctypes.c_float), ("borderColor", ctypes.c_float * 4),
                ("reserved", ctypes.c_int * 12)]


def _side(prefix: str) -> list[tuple[str, Any]]:
    return [(f"{prefix}XInBytes", size_t), (f"{prefix}Y", size_t), (f"{prefix}Z", size_t), (f"{prefix}LOD", size_t),
            (f"{prefix}MemoryType", ctypes.c_uint), (f"{prefix}Host", ctypes.c_void_p),
            (f"{prefix}Device", ctypes.c_uint64), (f"{prefix}Array", ctypes.c_void_p),
            (f"reserved_{prefix}", ctypes.c_void_p), (f"{prefix}Pitch", size_t), (f"{prefix}Height", size_t)]


class _Memcpy3D(ctypes.Structure):
    _fields_ = _side("src") + _side("dst") + [("WidthInBytes", size_t), ("Height", size_t), ("Depth", size_t)]


class TextureError(RuntimeError):
    """The driver refused to make or fill a texture."""


def _check(code: int, what: str) -> None:
    check(code, what, TextureError)


class Texture:
    """One texture object and the memory it reads."""

    def __init__(self, torch: Any, plan: TexturePlan) -> None:
        self.plan = plan
        lib = libcuda()
        self.row_bytes = plan.dims[0] * plan.channels * ITEMSIZE[plan.texel]
        self.array = ctypes.c_void_p()
        self.memory: Any = None
        res = _ResourceDesc()
        if plan.linear:
            self.memory = torch.empty(plan.texels * plan.channels * ITEMSIZE[plan.texel], dtype=torch.uint8, device="cuda")
            res.resType = _RESOURCE_LINEAR
            res.res.linear = _Linear(self.memory.data_ptr(), ARRAY_FORMAT[plan.texel], plan.channels, self.memory.numel())
        else:
            dims = (*plan.dims, 0, 0)[:3]
            desc = _Array3DDescriptor(dims[0], dims[1], dims[2], ARRAY_FORMAT[plan.texel], plan.channels, 0)
            _check(lib.cuArray3DCreate_v2(ctypes.byref(self.array), ctypes.byref(desc)), "cuArray3DCreate")
            res.resType = _RESOURCE_ARRAY
            res.res.array = self.array
        tex = _TextureDesc()
        for i in range(3):
            tex.addressMode[i] = ADDRESS_MODE[plan.address]
        tex.filterMode = FILTER_MODE[plan.filter]
        integer = not plan.texel.startswith("float")
        tex.flags = (READ_AS_INTEGER if integer and plan.read == "element" else 0) | \
            (NORMALIZED_COORDINATES if plan.normalized else 0)
        self.handle = ctypes.c_uint64()
        try:
            _check(lib.cuTexObjectCreate(ctypes.byref(self.handle), ctypes.byref(res), ctypes.byref(tex), None),
                   "cuTexObjectCreate")
        except TextureError:
            if self.array:
                lib.cuArrayDestroy(self.array)
            raise

    def fill(self, values: Any) -> None:
        """New contents from a device tensor of texels (all channels, row by row)."""
        if self.memory is not None:
            self.memory.copy_(values.contiguous().view(-1).view(self.memory.dtype))
            return
        dims = (*self.plan.dims, 1, 1)[:3]
        copy = _Memcpy3D()
        copy.srcMemoryType, copy.srcDevice = _MEMORY_DEVICE, values.contiguous().data_ptr()
        copy.srcPitch, copy.srcHeight = self.row_bytes, dims[1]
        copy.dstMemoryType, copy.dstArray = _MEMORY_ARRAY, self.array
        copy.WidthInBytes, copy.Height, copy.Depth = self.row_bytes, dims[1], dims[2]
        _check(libcuda().cuMemcpy3D_v2(ctypes.byref(copy)), "cuMemcpy3D")

    def close(self) -> None:
        libcuda().cuTexObjectDestroy(self.handle)
        if self.array:
            libcuda().cuArrayDestroy(self.array)


class Textures:
    """A session's textures, one per shape and settings, the oldest let go past KEPT."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self._kept: OrderedDict[tuple[str, TexturePlan], Texture] = OrderedDict()

    def filled(self, name: str, plan: TexturePlan, values: Any) -> int:
        """The handle of the texture of argument `name` with `plan`, holding `values`."""
        key = (name, plan)
        texture = self._kept.pop(key, None) or Texture(self.torch, plan)
        self._kept[key] = texture
        while len(self._kept) > KEPT:
            self._kept.popitem(last=False)[1].close()
        texture.fill(values)
        return int(texture.handle.value)
