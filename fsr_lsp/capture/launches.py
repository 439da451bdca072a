"""What a capture holds, read back from the files the injection library writes
(`launches-<pid>.jsonl`, one per process of the run) and the run's own `capture.json`.
A damaged line (the program was killed mid-write) is skipped and counted, never fatal."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

CAPTURES = Path(".fsr") / "captures"
STDOUT = "stdout.txt"  # the program's standard output, as it went to the terminal


@dataclass(frozen=True)
class Allocation:
    size: int  # bytes of the allocation the pointer points into
    offset: int  # bytes from its start to the pointer
    via: str  # cudaMalloc, cudaMallocManaged, ..., or "driver range" (allocated before the capture began)
    base: int = 0  # its start in the run (which parameters share one allocation); 0 where not recorded


@dataclass(frozen=True)
class CapturedParam:
    offset: int
    size: int  # bytes of the parameter
    raw: bytes | None  # its value, when it is no pointer into device memory
    alloc: Allocation | None
    texture: dict | None = None  # when its value is a live texture object: its resource and sampler
    words: tuple[tuple[int, Allocation], ...] = ()  # a struct passed by value: (byte offset, allocation) of each
    # aligned word pointing into one (its pointer members)

    def as_int(self, signed: bool = True) -> int | None:
        if self.raw is None or self.size not in (1, 2, 4, 8) or len(self.raw) != self.size:
            return None
        return int.from_bytes(self.raw, "little", signed=signed)


_INTERPRETER = re.compile(r"python[\d.]*|pypy[\d.]*|bash|sh|zsh|node|ruby|perl|env|time|nice")
_ADDRESS = re.compile(r"&\(([A-Za-z_][\w:]*)\([^()]*\)\)")


def function_addresses(args: str) -> str:
    """Template arguments as C++ spells them: a function's address demangles as
    `&(f(float const*, int))`, and is written `&f`."""
    return _ADDRESS.sub(r"&\1", args)


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
    gpu_ns: int = 0  # median GPU time of those launches in the run (CUPTI's records); 0 where none came
    timed: int = 0  # how many of them were timed
    snapshot: dict[int, Path] = field(default_factory=dict)  # parameter index -> its bytes before the launch
    # (parameter index, byte offset) of a by-value struct's pointer member -> the bytes it pointed to
    member_snapshot: dict[tuple[int, int], Path] = field(default_factory=dict)
    # a parameter passed by value (no pointer): its whole bytes, whose pointers the capture followed
    value_snapshot: dict[int, Path] = field(default_factory=dict)

    @property
    def template_args(self) -> str:
        """`16, float` for `void K<16, float>(...)`; '' for a kernel that is no template."""
        start = self.name.find(self.base + "<")
        if start < 0:
            return ""
        # the list ends right before the parameter list, the name's last `>(` (an argument may hold
        # parentheses: a function's address demangles as `&(f(float const*, int))`)
        end = self.name.rfind(">(") if self.name.endswith(")") else len(self.name.rstrip()) - 1
        if end <= start or self.name[end] != ">":
            return ""
        return function_addresses(self.name[start + len(self.base) + 1:end].strip())

    def memory_bytes(self) -> int:
        """The memory its pointers point into, each allocation once (two pointers into one: once)."""
        allocations = {(p.alloc.base or -i, p.alloc.size) for i, p in enumerate(self.params) if p.alloc is not None}
        return sum(size for _, size in allocations)

    def where(self) -> str:
        dims = lambda d: "(" + ", ".join(map(str, d)) + ")"  # noqa: E731
        return f"{self.base}<<<{dims(self.grid)}, {dims(self.block)}" + (f", {self.smem}" if self.smem else "") + ">>>"


@dataclass
class Capture:
    """One run's launches, or (`workspace_capture`) every kernel's launches from the newest run
    that launched it, with `runs` saying which run each kernel's came from."""

    folder: Path
    command: list[str]
    launches: list[CapturedLaunch]
    exit_code: int | None = None
    problems: list[str] = field(default_factory=list)
    runs: dict[str, "Capture"] = field(default_factory=dict)  # kernel -> the run its launches are from
    cwd: Path | None = None  # where the run was started
    every_run: list["Capture"] = field(default_factory=list)  # (merged) every run with a launch, newest first
    build: str = ""  # the build command `fsr capture --build` ran before the program; '' when none

    def output(self) -> str | None:
        """The program's standard output in this run; None where it was not kept."""
        try:
            return (self.folder / STDOUT).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    def of(self, kernel: str) -> list[CapturedLaunch]:
        """This kernel's launches, most frequent first."""
        return sorted((x for x in self.launches if x.base == kernel), key=lambda x: -x.count)

    def run_of(self, kernel: str) -> "Capture":
        """The run this kernel's launches come from (this capture, for one run's)."""
        return self.runs.get(kernel, self)

    def candidates(self, kernel: str, limit: int = 8) -> list["Capture"]:
        """The runs that launched this kernel, each alone: its chosen run first, then the newest
        run of each other program (two programs of a project may each define a kernel of that
        name, with other parameters); an older run of the chosen one's program never."""
        chosen = self.run_of(kernel)
        out, programs = [chosen], {chosen.program()}
        for run in self.every_run:
            if run.program() not in programs and any(x.base == kernel for x in run.launches):
                out.append(run)
                programs.add(run.program())
        return out[:limit]

    def preferring(self, folder: Path) -> "Capture":
        """This merged capture with each kernel taken from the newest run started in `folder`
        (where a program's own kernels live, as a build beside its sources leaves it), where
        one launched it; others as they were."""
        if not self.every_run:
            return self
        folder = folder.resolve()
        near = [run for run in self.every_run if run.started_in(folder)]
        if not near:
            return self
        return _merged([*near, *(run for run in self.every_run if run not in near)])

    def started_in(self, folder: Path) -> bool:
        """Whether the run was started in `folder` or ran a program that lies there."""
        if self.cwd is not None and self.cwd.resolve() == folder:
            return True
        return bool(self.command) and Path(self.program()).parent == folder

    def program(self) -> str:
        """The program the run started, as a path where it names one: the script, for a run
        of an interpreter (`python3 app.py`, `bash run.sh`)."""
        words = list(self.command)
        while len(words) > 1 and _INTERPRETER.fullmatch(Path(words[0]).name):
            words = [w for w in words[1:] if not w.startswith("-")] or words[1:]
        if not words:
            return ""
        program = Path(words[0])
        if not program.is_absolute() and "/" not in words[0] and not (self.cwd and (self.cwd / program).is_file()):
            return words[0]  # found on PATH: its name is all we know
        return str(((self.cwd or Path.cwd()) / program).resolve())

    def describe(self) -> str:
        return f"the capture of `{' '.join(self.command)}` ({self.folder.name})"


def read_capture(folder: Path) -> Capture:
    meta: dict = {}
    try:
        meta = json.loads((folder / "capture.json").read_text())
    except (OSError, ValueError):
        pass
    capture = Capture(folder, list(meta.get("command", [])), [], meta.get("exit_code"),
                      cwd=Path(meta["cwd"]) if isinstance(meta.get("cwd"), str) else None,
                      build=meta["build"] if isinstance(meta.get("build"), str) else "")
    damaged = 0
    unseen: list[str] = []
    try:
        paths = sorted(folder.glob("launches-*.jsonl"))
    except OSError:  # the folder removed meanwhile (a capture beside this one pruned its empty folder)
        paths = []
    for path in paths:
        records: dict[int, CapturedLaunch] = {}
        counts: dict[int, int] = {}
        times: dict[int, tuple[int, int]] = {}  # launch id -> (median ns, launches timed)
        try:
            text = path.read_text(errors="replace")
        except OSError:  # pruned by a capture that ended meanwhile
            continue
        for line in text.splitlines():
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
            elif "time" in entry:
                try:
                    times[int(entry["time"])] = (int(entry["median_ns"]), int(entry["n"]))
                except (KeyError, TypeError, ValueError):
                    damaged += 1
            elif "kernel" in entry:
                try:
                    records[int(entry["id"])] = _launch(entry, folder)
                except (KeyError, TypeError, ValueError):
                    damaged += 1
        for key, launch in records.items():
            if key in counts or key in times:
                ns, timed = times.get(key, (0, 0))
                launch = CapturedLaunch(**{**launch.__dict__, "count": counts.get(key, launch.count), "gpu_ns": ns,
                                           "timed": timed})
            capture.launches.append(launch)
    if unseen:
        capture.problems.append(f"{len(unseen)} kernel(s) launched through the CUDA runtime reached no driver launch "
                                f"callback, so their launches are missing: {', '.join(sorted(set(unseen))[:5])}")
    if damaged:
        capture.problems.append(f"{damaged} damaged record(s) skipped (the program may have been killed mid-write)")
    return capture


def captures(workspace: Path) -> list[Capture]:
    """Every capture under the workspace's .fsr/captures that holds a launch, newest first."""
    root = workspace / CAPTURES
    if not root.is_dir():
        return []
    try:
        folders = sorted((p for p in root.iterdir() if p.is_dir()), reverse=True)
    except OSError:
        return []
    found = (read_capture(folder) for folder in folders)
    return [c for c in found if c.launches]


def latest_capture(workspace: Path) -> Capture | None:
    """What the workspace's captures say, kernel by kernel: each kernel's launches from the
    newest capture that launched it, so that capturing one program after another keeps every
    kernel's (a project has many programs and tests). None when no capture holds a launch."""
    runs = captures(workspace)
    return _merged(runs) if runs else None


def _merged(runs: list[Capture]) -> Capture:
    """Each kernel's launches from the first of `runs` that launched it."""
    newest = runs[0]
    merged = Capture(newest.folder, newest.command, [], newest.exit_code, list(newest.problems), cwd=newest.cwd,
                     every_run=list(runs))
    for run in runs:
        for kernel in sorted({x.base for x in run.launches} - set(merged.runs)):
            merged.runs[kernel] = run
            merged.launches += [x for x in run.launches if x.base == kernel]
    return merged


def superseded(workspace: Path) -> list[Path]:
    """Finished captures no kernel takes its launches from any more: every kernel they launched
    was launched again by a newer capture of the same program, or they recorded nothing (a
    kernel of one name in two programs keeps the newest run of each)."""
    root = workspace / CAPTURES
    if not root.is_dir():
        return []
    seen: set[tuple[str, str]] = set()
    used = set()
    for run in captures(workspace):  # newest first
        keys = {(x.base, run.program()) for x in run.launches}
        if keys - seen:
            used.add(run.folder)
        seen |= keys
    return sorted(p for p in root.iterdir() if p.is_dir() and p not in used and _finished(p))


def _finished(folder: Path) -> bool:
    """Whether the run that writes here has ended (a capture in progress in another terminal
    has no exit code yet, and no launches read back: it is not superseded)."""
    try:
        return "exit_code" in json.loads((folder / "capture.json").read_text())
    except (OSError, ValueError):
        return False


def _launch(entry: dict, folder: Path) -> CapturedLaunch:
    params = []
    for p in entry["params"]:
        alloc = p.get("alloc")
        raw = bytes.fromhex(p["hex"]) if isinstance(p.get("hex"), str) and re.fullmatch(r"[0-9a-f]*", p["hex"]) else None
        words = tuple((int(w["at"]), Allocation(int(w["size"]), int(w["offset"]), str(w.get("via", ""))))
                      for w in p.get("words") or ())
        params.append(CapturedParam(int(p["offset"]), int(p["size"]), raw,
                                    Allocation(int(alloc["size"]), int(alloc["offset"]), str(alloc.get("via", "")),
                                               int(alloc.get("base") or 0))
                                    if alloc else None, p["texture"] if isinstance(p.get("texture"), dict) else None,
                                    words))
    saved = {str(k): folder / Path(v).name for k, v in (entry.get("snapshot") or {}).items()}
    snapshot = {int(k): v for k, v in saved.items() if k.isdigit()}
    members = {(int(k.split(".")[0]), int(k.split(".")[1])): v for k, v in saved.items()
               if re.fullmatch(r"\d+\.\d+", k)}
    values = {int(k[1:]): v for k, v in saved.items() if re.fullmatch(r"p\d+", k)}
    return CapturedLaunch(str(entry["kernel"]), str(entry["name"]), str(entry["base"]),
                          _dims(entry["grid"]), _dims(entry["block"]), int(entry["smem"]), tuple(params),
                          snapshot=snapshot, member_snapshot=members, value_snapshot=values)


def _dims(values: list) -> tuple[int, int, int]:
    out = [int(v) for v in values][:3]
    return (*out, *[1] * (3 - len(out)))  # type: ignore[return-value]
