"""What a capture holds, read back from the files the injection library writes
(`launches-<pid>.jsonl`, one per process of the run) and the run's own `capture.json`.
A damaged line (the program was killed mid-write) is skipped and counted, never fatal."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

CAPTURES = Path(".fsr") / "captures"


@dataclass(frozen=True)
class Allocation:
    size: int  # bytes of the allocation the pointer points into
    offset: int  # bytes from its start to the pointer
    via: str  # cudaMalloc, cudaMallocManaged, ..., or "driver range" (allocated before the capture began)


@dataclass(frozen=True)
class CapturedParam:
    offset: int
    size: int  # bytes of the parameter
    raw: bytes | None  # its value, when it is no pointer into device memory
    alloc: Allocation | None
    texture: dict | None = None  # when its value is a live texture object: its resource and sampler

    def as_int(self, signed: bool = True) -> int | None:
        if self.raw is None or self.size not in (1, 2, 4, 8) or len(self.raw) != self.size:
            return None
        return int.from_bytes(self.raw, "little", signed=signed)


@dataclass(frozen=True)
class CapturedLaunch:
    kernel: str  # the mangled symbol
    name: str  # demangled: `void K<16>(float*, int)`
    base: str  # the kernel's name as the source spells it: `K`
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    smem: int
    params: tuple[CapturedParam, ...]
    count: int = 1  # launches with these very values
    snapshot: dict[int, Path] = field(default_factory=dict)  # parameter index -> its bytes before the launch

    @property
    def template_args(self) -> str:
        """`16, float` for `void K<16, float>(...)`; '' for a kernel that is no template."""
        head = (self.name.split("(", 1)[0] if "(" in self.name else self.name).rstrip()
        start = head.find(self.base + "<")
        if start < 0 or not head.endswith(">"):  # the list ends the name (unless cut at a `(` inside it)
            return ""
        return head[start + len(self.base) + 1:-1].strip()

    def where(self) -> str:
        dims = lambda d: "(" + ", ".join(map(str, d)) + ")"  # noqa: E731
        return f"{self.base}<<<{dims(self.grid)}, {dims(self.block)}" + (f", {self.smem}" if self.smem else "") + ">>>"


@dataclass
class Capture:
    folder: Path
    command: list[str]
    launches: list[CapturedLaunch]
    exit_code: int | None = None
    problems: list[str] = field(default_factory=list)

    def of(self, kernel: str) -> list[CapturedLaunch]:
        """This kernel's launches, most frequent first."""
        return sorted((x for x in self.launches if x.base == kernel), key=lambda x: -x.count)

    def describe(self) -> str:
        return f"the capture of `{' '.join(self.command)}` ({self.folder.name})"


def read_capture(folder: Path) -> Capture:
    meta: dict = {}
    try:
        meta = json.loads((folder / "capture.json").read_text())
    except (OSError, ValueError):
        pass
    capture = Capture(folder, list(meta.get("command", [])), [], meta.get("exit_code"))
    damaged = 0
    unseen: list[str] = []
    for path in sorted(folder.glob("launches-*.jsonl")):
        records: dict[int, CapturedLaunch] = {}
        counts: dict[int, int] = {}
        for line in path.read_text(errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                damaged += 1
                continue
            if "error" in entry:
                capture.problems.append(str(entry["error"]))
            elif "unseen" in entry:
                unseen.append(str(entry["unseen"]))
            elif "count" in entry:
                counts[int(entry["count"])] = int(entry["n"])
            elif "kernel" in entry:
                try:
                    records[int(entry["id"])] = _launch(entry, folder)
                except (KeyError, TypeError, ValueError):
                    damaged += 1
        for key, launch in records.items():
            if key in counts:
                launch = CapturedLaunch(**{**launch.__dict__, "count": counts[key]})
            capture.launches.append(launch)
    if unseen:
        capture.problems.append(f"{len(unseen)} kernel(s) launched through the CUDA runtime reached no driver launch "
                                f"callback, so their launches are missing: {', '.join(sorted(set(unseen))[:5])}")
    if damaged:
        capture.problems.append(f"{damaged} damaged record(s) skipped (the program may have been killed mid-write)")
    return capture


def latest_capture(workspace: Path) -> Capture | None:
    """The newest capture under the workspace's .fsr/captures, if any holds a launch."""
    root = workspace / CAPTURES
    if not root.is_dir():
        return None
    for folder in sorted((p for p in root.iterdir() if p.is_dir()), reverse=True):
        capture = read_capture(folder)
        if capture.launches:
            return capture
    return None


def _launch(entry: dict, folder: Path) -> CapturedLaunch:
    params = []
    for p in entry["params"]:
        alloc = p.get("alloc")
        raw = bytes.fromhex(p["hex"]) if isinstance(p.get("hex"), str) and re.fullmatch(r"[0-9a-f]*", p["hex"]) else None
        params.append(CapturedParam(int(p["offset"]), int(p["size"]), raw,
                                    Allocation(int(alloc["size"]), int(alloc["offset"]), str(alloc.get("via", "")))
                                    if alloc else None, p["texture"] if isinstance(p.get("texture"), dict) else None))
    snapshot = {int(k): folder / Path(v).name for k, v in (entry.get("snapshot") or {}).items()}
    return CapturedLaunch(str(entry["kernel"]), str(entry["name"]), str(entry["base"]),
                          _dims(entry["grid"]), _dims(entry["block"]), int(entry["smem"]), tuple(params),
                          snapshot=snapshot)


def _dims(values: list) -> tuple[int, int, int]:
    out = [int(v) for v in values][:3]
    return (*out, *[1] * (3 - len(out)))  # type: ignore[return-value]
