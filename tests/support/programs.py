"""Programs built, captured and proven through the `fsr` commands, as the GPU tests drive them:
a workspace holding a program nvcc built, its capture and the proof of its spec, a candidate
evaluated against it."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from .doubles import fsr


def built(folder: Path, name: str, source: str) -> None:
    """`source` written to NAME.cu in `folder` and built by nvcc into NAME: a program to capture."""
    (folder / f"{name}.cu").write_text(source)
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    r = subprocess.run([nvcc, "-o", name, f"{name}.cu"], cwd=folder, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def workspace_with(factory, name: str, source: str) -> Path:
    """A fresh workspace (a `.git` of its own, so fsr takes it for the project root) holding the
    program NAME built from `source`."""
    out = factory.mktemp(name)
    (out / ".git").mkdir()
    built(out, name, source)
    return out


def captured_and_proven(folder: Path, name: str, kernel: str, *capture: str) -> dict:
    """`fsr capture [CAPTURE...] -- ./NAME`, then `fsr spec NAME.cu --kernel KERNEL --check`: the
    spec is the capture's and proven; what `fsr spec --json` says of it."""
    r = fsr("capture", *capture, "--", f"./{name}", cwd=folder)
    assert r.returncode == 0 and kernel in r.stdout, r.stdout + r.stderr
    r = fsr("spec", f"{name}.cu", "--kernel", kernel, "--json", "--check", cwd=folder)
    print(r.stdout[-3000:], r.stderr[-1500:])
    assert r.returncode == 0, r.stdout + r.stderr
    (data,) = json.loads(r.stdout)
    assert data["origin"] == "captured" and data["proof"]["status"] == "proven", data
    return data


def evaluated(folder: Path, source: str, kernel: str, candidate: str) -> subprocess.CompletedProcess:
    (folder / "candidate.cu").write_text(candidate)
    r = fsr("eval", source, "-k", kernel, "--candidate", "candidate.cu", cwd=folder)
    print(r.stdout[-2500:], r.stderr[-1500:])
    assert "Traceback" not in r.stderr
    return r


def spec_of(folder: Path, kernel: str, file: str = "kernels.cu") -> dict:
    r = fsr("spec", file, "--kernel", kernel, "--json", "--check", cwd=folder)
    assert r.returncode == 0, r.stdout + r.stderr
    (data,) = json.loads(r.stdout)
    return data
