"""The on-save compile check: nvcc as an asyncio subprocess, so the server keeps answering.

Without a local nvcc and with the ray backend, the check compiles on one of the cluster's GPU
workers instead: the file goes with the quoted headers it includes from its folder and the
include paths, and the compiler's log comes back to be read as a local one."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .nvcc_output import Message, parse_messages
from .. import scratch
from ..settings import Settings

if TYPE_CHECKING:
    from ..evaluator.records import Resources

TIMEOUT = 120.0
HEADER_DEPTH = 4  # levels of quoted includes shipped with a remote check
HEADER_BYTES = 4 << 20  # at most this much header text goes to the cluster
_QUOTED = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)
# Compile checks at once: fifty documents opened together must not take every core from the
# server (its requests are answered on one of them). The rest wait their turn, niced.
CHECKS_AT_ONCE = max(1, (os.cpu_count() or 2) // 2)
_NICE = shutil.which("nice")
_slots: asyncio.Semaphore | None = None


def _slot() -> asyncio.Semaphore:
    global _slots
    if _slots is None:
        _slots = asyncio.Semaphore(CHECKS_AT_ONCE)
    return _slots


@dataclass
class CheckResult:
    messages: list[Message] = field(default_factory=list)  # file "" or the document's own name: this file
    resources: dict[str, Resources] = field(default_factory=dict)  # by kernel name
    problem: str = ""  # the check itself could not run (no nvcc, timeout)


def no_nvcc(settings: Settings) -> str:
    if settings.evaluator_backend == "ray":
        return ("on-save diagnostics are off: nvcc is not on this machine, and without Ray here they cannot "
                "compile on the cluster (pip install 'fsr-lsp[ray]', or set fsr.compiler.nvcc)")
    return "nvcc not found: set fsr.compiler.nvcc, CUDA_HOME, or put nvcc on PATH"


async def check_source(text: str, path: Path, settings: Settings, remote: Any = None) -> CheckResult:
    """`remote`: a backend with `call` (the Ray cluster) for when nvcc is not on this machine."""
    from ..evaluator.compile.compiler import find_nvcc

    nvcc = find_nvcc(settings.compiler_nvcc or None)
    builds = await asyncio.to_thread(define_sets, text)
    results = []
    for defines, kernels in builds.items():  # one build per set of its kernels' `defines` (almost always one)
        flagged = dataclasses.replace(settings, compiler_flags=(*settings.compiler_flags, *defines))
        if nvcc is None:
            if remote is None:
                return CheckResult(problem=no_nvcc(settings))
            result = await asyncio.to_thread(remote_check, remote, text, path, flagged)
        else:
            async with _slot():  # cancelled while waiting (a newer version came): nothing was started
                result = await _nvcc_check(nvcc, text, path, flagged)
        results.append((defines, kernels, result))
    return merged(results, path.name)


def define_sets(text: str) -> dict[tuple[str, ...], dict[str, tuple[int, int]] | None]:
    """The builds a file's check needs: its kernels (name -> first and last line of the
    definition) grouped by the `defines` of their @fsr blocks (a bf16 kernel's block says
    ENABLE_BF16, and its diagnostics and resource use are that build's). One build of every
    kernel (`None`) where the blocks name one set or none; kernels whose blocks name none are
    built with the first set, as the file's own build would take them."""
    if "defines" not in text:
        return {(): None}
    from ..kernels import discover_kernels
    from ..specs.defines import block_defines

    groups: dict[tuple[str, ...], dict[str, tuple[int, int]]] = {}
    plain: dict[str, tuple[int, int]] = {}  # kernels whose blocks say nothing: built as the file is
    for kernel in discover_kernels(text):
        span = kernel.definition_span
        defines = block_defines(kernel)
        (groups.setdefault(defines, {}) if defines else plain)[kernel.name] = (span.start.line, span.end.line)
    if len(groups) <= 1:  # one set for the file (a capture's build defined it for all): one build
        return {next(iter(groups), ()): None}
    next(iter(groups.values())).update(plain)  # the file's other kernels with its first set
    return groups


def merged(results: list[tuple[tuple[str, ...], dict[str, tuple[int, int]] | None, CheckResult]],
           name: str = "") -> CheckResult:
    """One check from a build per set of defines. A kernel's resources, and the messages on its
    lines or naming it, come from its own build; a message elsewhere (host code, a header) is
    said where every build gives it (one that only some give depends on the macros)."""
    if len(results) == 1:
        return results[0][2]
    out = CheckResult()
    spans = {k: span for _, kernels, _ in results for k, span in (kernels or {}).items()}

    def owner(m: Message) -> str | None:
        if m.kernel:  # ptxas names it: `k`, `k(float*, int)`, `void k<float>(float*)`
            return next((k for k in spans if re.match(rf"(?:\w[\w\s]*\s)?{re.escape(k)}\b", m.kernel)), None)
        if m.file not in ("", name):
            return None  # a header's line: not the document's kernel's
        return next((k for k, (a, b) in spans.items() if a <= m.line <= b), None)

    common = set.intersection(*({(m.file, m.line, m.text) for m in r.messages if owner(m) is None}
                                for _, _, r in results))
    said: set[tuple] = set()
    for _, kernels, result in results:
        out.problem = out.problem or result.problem
        mine = set(kernels or ())
        out.resources.update({k: r for k, r in result.resources.items() if k in mine})
        for m in result.messages:
            key = (m.file, m.line, m.text)
            whose = owner(m)
            if (whose in mine if whose is not None else key in common) and key not in said:
                said.add(key)
                out.messages.append(m)
    return out


async def _nvcc_check(nvcc: str, text: str, path: Path, settings: Settings) -> CheckResult:
    # The file written, the log read and the folder removed on threads: for a 10 MB document
    # each is tens of milliseconds (its text encoded, its lines split, its copy deleted), time
    # in which the event loop would answer no other document.
    scratch_dir = scratch.make("check")
    try:
        tmp = str(scratch_dir)
        src = Path(tmp) / path.name
        await asyncio.to_thread(_write, src, text)
        cmd = nvcc_command(nvcc, src, settings.compiler_arch, settings.compiler_flags,
                           [path.parent, *map(Path, settings.include_paths)], Path(tmp) / "out.cubin")
        if _NICE:  # below the server and the editor: a check can wait, a keystroke cannot
            cmd = [_NICE, "-n", "10", *cmd]
        proc = await asyncio.create_subprocess_exec(*cmd, stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.PIPE, cwd=tmp)
        try:
            out, err = await asyncio.wait_for(proc.communicate(), TIMEOUT)
        except asyncio.TimeoutError:
            proc.kill()
            return CheckResult(problem=f"nvcc did not finish within {TIMEOUT:.0f} s")
        except asyncio.CancelledError:
            proc.kill()
            raise
        log = (out + err).decode(errors="replace").replace(str(src), path.name).replace(tmp + "/", "")
    finally:
        asyncio.get_running_loop().run_in_executor(None, partial(shutil.rmtree, scratch_dir, ignore_errors=True))
    return await asyncio.to_thread(read_log, log, text)


def nvcc_command(nvcc: str, src: Path, arch: str, flags: tuple[str, ...], include_dirs: list[Path],
                 out: Path) -> list[str]:
    std = [] if any(f.startswith(("-std", "--std")) for f in flags) else ["-std=c++17"]  # nvcc takes one
    return [nvcc, "-cubin", f"-arch={arch}", *std, "-Xptxas", "-v", "-x", "cu",
            *(f"-I{d}" for d in include_dirs), *flags, "-o", str(out), str(src)]


def with_build(settings: Settings, build_flags: tuple[str, ...]) -> Settings:
    """The settings for a file the user's build compiles with `build_flags` (its compile
    database): its flags first, the settings' added; its include folders searched too."""
    from ..specs.build_flags import merged

    flags = merged(tuple(f for f in build_flags if not f.startswith("-I")), settings.compiler_flags)
    dirs = tuple(f[2:] for f in build_flags if f.startswith("-I") and f[2:] not in settings.include_paths)
    return dataclasses.replace(settings, compiler_flags=flags, include_paths=(*settings.include_paths, *dirs))


PIECE = 1 << 20  # characters of a text encoded, or split into lines, at a time


def _write(path: Path, text: str) -> None:
    """The text written a piece at a time: encoding 10 MB at once holds the GIL for 10 ms."""
    with open(path, "w", encoding="utf-8") as out:
        for start in range(0, len(text), PIECE):
            out.write(text[start:start + PIECE])


def lines_of(text: str) -> list[str]:
    """`text.splitlines()`, a piece at a time, each cut just after a '\\n' (never inside a
    '\\r\\n'): the same lines, without holding the GIL for 45 ms over 10 MB."""
    lines: list[str] = []
    pos = 0
    while pos < len(text):
        cut = text.find("\n", pos + PIECE)
        end = len(text) if cut < 0 else cut + 1
        lines += text[pos:end].splitlines()
        pos = end
    return lines


def read_log(log: str, text: str) -> CheckResult:
    from ..evaluator.compile.entries import mangled_name
    from ..evaluator.compile.ptxas import parse_resources

    messages = parse_messages(log, lines_of(text))
    resources = {(mangled_name(name) or name): res for name, res in parse_resources(log).items()}
    return CheckResult(messages=messages, resources=resources)


# ------------------------------------------------------------ on a cluster GPU worker


def remote_check(backend: Any, text: str, path: Path, settings: Settings) -> CheckResult:
    """The check on the cluster (blocking: the server runs it in a thread)."""
    from ..evaluator.worker.worker_client import EvaluatorUnavailable

    headers = local_headers(text, [path.parent, *map(Path, settings.include_paths)])
    payload = {"text": text, "name": path.name, "headers": headers, "arch": settings.compiler_arch,
               "flags": list(settings.compiler_flags)}
    try:
        answer = backend.call("compile", payload, timeout=TIMEOUT + 30)
    except EvaluatorUnavailable as e:
        return CheckResult(problem=f"on-save diagnostics could not compile on the cluster: {e}")
    if answer.get("problem"):
        return CheckResult(problem=f"on-save diagnostics on the cluster: {answer['problem']}")
    return read_log(answer["log"], text)


def local_headers(text: str, dirs: list[Path], depth: int = HEADER_DEPTH) -> dict[str, str]:
    """Quoted includes found in `dirs` (and theirs, a few levels), by the name the code uses."""
    found: dict[str, str] = {}
    todo = [(text, 0)]
    total = 0
    while todo:
        source, level = todo.pop()
        if level >= depth:
            continue
        for name in _QUOTED.findall(source):
            if name in found or ".." in Path(name).parts or Path(name).is_absolute():
                continue
            for d in dirs:
                candidate = d / name
                if candidate.is_file() and total + candidate.stat().st_size <= HEADER_BYTES:
                    found[name] = candidate.read_text(encoding="utf-8", errors="replace")
                    total += len(found[name])
                    todo.append((found[name], level + 1))
                    break
    return found


def compile_here(backend: Any, payload: dict) -> dict:
    """On the worker: the file and its headers in a scratch folder, nvcc as on the laptop."""
    from ..evaluator.compile.compiler import find_nvcc

    nvcc = find_nvcc(None)
    if nvcc is None:
        return {"problem": "nvcc is not on the GPU worker either"}
    with scratch.folder("check") as scratch_dir:
        tmp = str(scratch_dir)
        inc = Path(tmp) / "inc"
        for name, content in payload["headers"].items():
            target = inc / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
        src = Path(tmp) / payload["name"]
        src.write_text(payload["text"], encoding="utf-8")
        cmd = nvcc_command(nvcc, src, payload["arch"], tuple(payload["flags"]), [inc], Path(tmp) / "out.cubin")
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, cwd=tmp)
        except subprocess.TimeoutExpired:
            return {"problem": f"nvcc did not finish within {TIMEOUT:.0f} s"}
        log = (proc.stdout + proc.stderr).replace(str(src), payload["name"]).replace(str(inc) + "/", "")
        return {"log": log.replace(tmp + "/", "")}
