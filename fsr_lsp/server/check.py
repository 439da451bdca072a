"""The on-save compile check: nvcc as an asyncio subprocess, so the server keeps answering."""

from __future__ import annotations

import asyncio
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..evaluator.compiler import find_nvcc
from ..evaluator.ptxas import mangled_name, parse_resources
from ..evaluator.records import Resources
from .nvcc_output import Message, parse_messages
from .settings import Settings

TIMEOUT = 120.0


@dataclass
class CheckResult:
    messages: list[Message] = field(default_factory=list)  # file "" or the document's own name: this file
    resources: dict[str, Resources] = field(default_factory=dict)  # by kernel name
    problem: str = ""  # the check itself could not run (no nvcc, timeout)


def no_nvcc(settings: Settings) -> str:
    if settings.evaluator_backend == "ray":
        return ("on-save diagnostics are off: nvcc is not on this machine, and the ray backend compiles only "
                "searches on the cluster; set fsr.compiler.nvcc to a local nvcc to have them")
    return "nvcc not found: set fsr.compiler.nvcc, CUDA_HOME, or put nvcc on PATH"


async def check_source(text: str, path: Path, settings: Settings) -> CheckResult:
    nvcc = find_nvcc(settings.compiler_nvcc or None)
    if nvcc is None:
        return CheckResult(problem=no_nvcc(settings))
    with tempfile.TemporaryDirectory(prefix="fsr-check-") as tmp:
        src = Path(tmp) / path.name
        src.write_text(text, encoding="utf-8")
        cmd = [nvcc, "-cubin", f"-arch={settings.compiler_arch}", "-std=c++17", "-Xptxas", "-v", "-x", "cu",
               f"-I{path.parent}", *(f"-I{d}" for d in settings.include_paths), *settings.compiler_flags,
               "-o", str(Path(tmp) / "out.cubin"), str(src)]
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
    messages = parse_messages(log, text.splitlines())
    resources = {(mangled_name(name) or name): res for name, res in parse_resources(log).items()}
    return CheckResult(messages=messages, resources=resources)
