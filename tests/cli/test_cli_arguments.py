"""Every bad argument of `fsr` and `fsr-lsp` is one line on stderr and exit 2, never a traceback
(issue 46 item 3): ports, paths that cannot be written, numbers out of range; `--version` on both
commands; `fsr spec` on files without a kernel says so. Each command runs as the user runs it, in
a process of its own."""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from fsr_lsp.cli import arguments, version
from fsr_lsp.evaluator.support import gpu_support_missing

from ..support.doubles import STAND_INS
from ..support.doubles import fsr

ROOT = Path(__file__).parent.parent.parent
EXAMPLE = ROOT / "examples" / "saxpy.cu"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}




def fsr_lsp(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fsr_lsp.server.main", *args], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, env=ENV, stdin=subprocess.DEVNULL)


def refused(r: subprocess.CompletedProcess, *said: str) -> None:
    """Exit 2, nothing on stdout, one line on stderr saying `said`, no traceback."""
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stdout == "", r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    for words in said:
        assert words in lines[0], lines[0]


@pytest.mark.parametrize("args, said", [
    (["--tcp", "foo"], "expected HOST:PORT"),
    (["--tcp", "127.0.0.1:99999"], "port 99999 is out of range"),
    (["--tcp", "127.0.0.1:0"], "port 0 is out of range"),
    (["--tcp", "127.0.0.1:"], "expected HOST:PORT"),
    (["--log-file", "/nonexistent/dir/x.log"], "cannot write /nonexistent/dir/x.log"),
    (["--log-file", "/tmp"], "got the folder"),
    (["--log-level", "loud"], "invalid choice"),
    (["--stdio-please"], "unrecognized arguments"),
])
def test_fsr_lsp_refuses_a_bad_argument_in_one_line(args, said):
    refused(fsr_lsp(*args), "fsr-lsp: ", said)


def test_fsr_lsp_on_a_port_in_use_is_one_line():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        refused(fsr_lsp("--tcp", f"127.0.0.1:{port}"), f"cannot listen on 127.0.0.1:{port}")


def test_the_tcp_argument_takes_a_port_alone_and_ipv6_in_brackets():
    assert arguments.host_port("2087") == ("127.0.0.1", 2087)
    assert arguments.host_port(":2087") == ("127.0.0.1", 2087)
    assert arguments.host_port("0.0.0.0:65535") == ("0.0.0.0", 65535)
    assert arguments.host_port("[::1]:2087") == ("::1", 2087)
    with pytest.raises(argparse.ArgumentTypeError):
        arguments.host_port("127.0.0.1:²")  # a digit to str.isdigit, no port


@pytest.mark.parametrize("args, said", [
    (["capture", "--workspace", "/proc", "--", "/bin/true"], "cannot write in /proc"),
    (["capture", "--workspace", "/nonexistent/ws", "--", "/bin/true"], "no such folder"),
    (["capture", "--max-per-kernel", "99999999999", "--", "/bin/true"], "expected at most 1000000"),
    (["capture", "--timeout", "1e300", "--", "/bin/true"], "at most 604800 seconds"),
    (["eval", str(EXAMPLE), "-k", "saxpy", "--gpu", "all"], "expected one GPU's index"),
    (["eval", str(EXAMPLE), "-k", "saxpy", "--gpu", "0,1"], "expected one GPU's index"),
    (["eval", str(EXAMPLE), "-k", "saxpy", "--timeout", "nan"], "positive number of seconds"),
    (["eval", str(EXAMPLE), "-k", "saxpy", "--timeout", "1e300"], "at most 604800 seconds"),
    (["eval", str(EXAMPLE), "-k", "saxpy", "--reps", "0"], "expected at least 1"),
    (["optimize", str(EXAMPLE), "-k", "saxpy", "--workspace", "/proc"], "cannot write in /proc"),
    (["optimize", str(EXAMPLE), "-k", "saxpy", "--report", "/proc/fsr-report.html"], "cannot write /proc/"),
    (["optimize", str(EXAMPLE), "-k", "saxpy", "--time-budget", "1e300"], "--time-budget: expected at most"),
    (["optimize", str(EXAMPLE), "-k", "saxpy", "--llm-timeout", "1e10"], "--llm-timeout: expected at most"),
    (["optimize", str(EXAMPLE), "-k", "saxpy", "--llm-timeout", "soon"], "--llm-timeout: expected a number"),
    (["profile", str(EXAMPLE), "-k", "saxpy", "--workspace", "/proc"], "cannot write in /proc"),
    (["history", str(EXAMPLE), "-k", "saxpy", "--workspace", "/nonexistent/ws"], "no such folder"),
    (["spec", str(EXAMPLE), "--llm-timeout", "1e300"], "--llm-timeout: expected at most"),
    (["spec", str(EXAMPLE), "--workspace", str(EXAMPLE)], "is a file, not a folder"),
])
def test_fsr_refuses_a_bad_argument_in_one_line(args, said):
    refused(fsr(*args), f"fsr {args[0]}: ", said)


def test_capture_checks_the_folder_it_runs_in_when_no_workspace_is_given():
    refused(fsr("capture", "--", "/bin/true", cwd="/proc"), "argument --workspace", "cannot write in /proc")


def test_spec_check_refuses_a_workspace_it_cannot_write_in_one_line():
    refused(fsr("spec", str(EXAMPLE), "--check", "--workspace", "/proc"), "fsr: cannot write in /proc")


def test_a_writable_place_is_tried_and_left_as_it_was(tmp_path: Path):
    assert arguments.unwritable(tmp_path) == "" and list(tmp_path.iterdir()) == []
    (tmp_path / ".fsr").mkdir()
    assert arguments.unwritable(tmp_path) == "" and list((tmp_path / ".fsr").iterdir()) == []
    assert "/proc" in arguments.unwritable(Path("/proc"))
    other = tmp_path / "other"
    other.mkdir()
    (other / ".fsr").write_text("")
    assert "is a file" in arguments.unwritable(other)
    log = arguments.file_to_write()(str(tmp_path / "x.log"))
    assert log == tmp_path / "x.log" and not log.exists()
    report = arguments.file_to_write(make_folders=True)(str(tmp_path / "reports" / "r.html"))
    assert not report.parent.exists() and not report.exists()  # checked, made only when the report is written
    with pytest.raises(argparse.ArgumentTypeError, match="cannot take the folders"):
        arguments.file_to_write(make_folders=True)("/proc/new/r.html")
    with pytest.raises(argparse.ArgumentTypeError, match="No such file"):
        arguments.file_to_write()(str(tmp_path / "missing" / "x.log"))


@pytest.mark.parametrize("run, prog", [(fsr, "fsr"), (fsr_lsp, "fsr-lsp")])
def test_version_is_the_packages(run, prog):
    r = run("--version")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    stated = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert r.stdout.strip() == f"{prog} {metadata.version('fsr-lsp')}"
    assert metadata.version("fsr-lsp") == stated, "the installed package is not this checkout's: pip install -e ."


def test_version_from_a_checkout_that_was_never_installed(monkeypatch, tmp_path: Path):
    def not_installed(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(version.metadata, "version", not_installed)
    stated = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert version.package_version() == stated
    assert version.checkout_version(tmp_path / "pyproject.toml").startswith("unknown")


@pytest.mark.parametrize("name, text", [("empty.cu", ""), ("host.cu", "int main() { return 0; }\n"),
                                        ("pyproject.toml", (ROOT / "pyproject.toml").read_text())])
def test_spec_on_a_file_without_a_kernel_says_so(tmp_path: Path, name: str, text: str):
    (tmp_path / name).write_text(text)
    for json in ([], ["--json"]):
        refused(fsr("spec", str(tmp_path / name), *json, "--no-capture"), "fsr: no kernel (__global__ function) in",
                name)


def test_spec_with_a_kernel_in_one_of_its_files_is_no_error(tmp_path: Path):
    (tmp_path / "empty.cu").write_text("")
    r = fsr("spec", str(EXAMPLE), str(tmp_path / "empty.cu"), "--no-capture")
    assert r.returncode == 0 and "saxpy" in r.stdout, r.stderr


@pytest.mark.skipif(not gpu_support_missing("x"), reason="this machine can profile")
def test_profile_without_gpu_support_says_what_a_profile_needs():
    r = subprocess.run([sys.executable, "-m", "fsr_lsp.cli.main", "profile", str(EXAMPLE), "-k", "saxpy"],
                       capture_output=True, text=True, timeout=120, cwd=ROOT,
                       env={k: v for k, v in ENV.items() if k not in STAND_INS})
    assert r.returncode == 3 and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "fsr profile needs" in r.stderr, r.stderr
    assert "searches" not in r.stderr


def test_a_report_folder_is_checked_not_made_and_a_bad_ray_address_refused_first(tmp_path):
    """`--report new/dir/r.html` leaves no folder behind a check; `--ray nonsense` and
    `--ray ray://` are one line before anything starts (issue 61, item 4)."""
    import subprocess
    import sys

    (tmp_path / "k.cu").write_text("__global__ void k(float* x, int n) { }\n")
    report = tmp_path / "new" / "dir" / "r.html"
    run = subprocess.run([sys.executable, "-m", "fsr_lsp.cli.main", "optimize", str(tmp_path / "k.cu"), "-k", "k",
                          "--report", str(report), "--llm-base-url", "notaurl", "--llm-model", "m"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "expected an http(s) URL" in run.stderr, run.stderr
    assert not (tmp_path / "new").exists()
    for address in ("nonsense", "ray://"):
        bad = subprocess.run([sys.executable, "-m", "fsr_lsp.cli.main", "optimize", str(tmp_path / "k.cu"), "-k", "k",
                              "--ray", address], capture_output=True, text=True, timeout=60)
        assert bad.returncode == 2 and "expected auto, local, or a Ray address" in bad.stderr, bad.stderr
        assert "Traceback" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_help_texts_speak_of_the_command_they_are_in():
    """A command that runs no search's rounds does not describe its flags by rounds (issue 61), and
    no default is said twice."""
    import subprocess
    import sys

    for command in ("spec", "eval", "profile"):
        text = subprocess.run([sys.executable, "-m", "fsr_lsp.cli.main", command, "--help"], capture_output=True,
                              text=True, env={"COLUMNS": "200", **__import__("os").environ}).stdout
        assert "round" not in text, (command, text)
        assert "off: off:" not in text
        for line in text.splitlines():
            assert line.count("(default") <= 1, (command, line)
