"""A capture's records as the capture library writes them (`.fsr/captures/NAME/launches-PID.jsonl`),
built by hand: the tests of drafting and proving from captures start from these."""

from __future__ import annotations

import itertools
import json
import struct
from pathlib import Path


def i32(v: int) -> str:
    return struct.pack("<i", v).hex()


def f32(v: float) -> str:
    return struct.pack("<f", v).hex()


_BASES = itertools.count(1 << 20, 1 << 32)  # every allocation apart unless a test says they are one


def ptr(size: int, offset: int = 0, base: int | None = None) -> dict:
    return {"offset": 0, "size": 8,
            "alloc": {"size": size, "offset": offset, "base": base or next(_BASES), "via": "cudaMalloc"}}


def write_capture(root: Path, records: list[dict], name: str = "20260101-000000", command=("./app",)) -> Path:
    folder = root / ".fsr" / "captures" / name
    folder.mkdir(parents=True)
    (folder / "capture.json").write_text(json.dumps({"command": list(command)}))
    (folder / "launches-7.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


def scale_launch(n: int, block: int = 256, grid: int | None = None, extent: int | None = None, count: int = 0) -> dict:
    return {"id": count, "kernel": "_Z5scalePfPKffi", "name": "scale(float*, float const*, float, int)", "base": "scale",
            "grid": [grid or (n + block - 1) // block, 1, 1], "block": [block, 1, 1], "smem": 0,
            "params": [ptr(4 * (extent or n)), ptr(4 * (extent or n)), {"offset": 16, "size": 4, "hex": f32(2.0)},
                       {"offset": 20, "size": 4, "hex": i32(n)}]}


def matmul_launch(n: int, stride: int) -> dict:
    def matrix(base: int, rows: int) -> dict:
        raw = struct.pack("<iii4xQ", n, rows, stride, base)
        return {"offset": 0, "size": 24, "hex": raw.hex(),
                "words": [{"at": 16, "size": 4 * rows * stride, "offset": 0, "via": "cudaMalloc"}]}
    return {"id": 0, "kernel": "_Z12MatMulKernel6MatrixS_S_", "name": "MatMulKernel(Matrix, Matrix, Matrix)",
            "base": "MatMulKernel", "grid": [(n + 15) // 16, (n + 15) // 16, 1], "block": [16, 16, 1], "smem": 0,
            "params": [{**matrix(1 << 20, n), "offset": 0}, {**matrix(2 << 20, n), "offset": 24},
                       {**matrix(3 << 20, n), "offset": 48}]}
