"""The user's build's flags in every compile (issue 58, item 1): read from a compile database
or a watched build, kept in the drafted block, shown, and verified under: a kernel whose
result depends on a -D is verified only as the build compiles it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fsr_lsp.capture.build_watch import run_build
from fsr_lsp.capture.compile_db import WATCHED, commands_for, read_database
from fsr_lsp.drafting.build_commands import file_build
from fsr_lsp.drafting.workspace import LaunchIndex
from fsr_lsp.evaluator.compile.compiler import base_flags
from fsr_lsp.kernels import discover
from fsr_lsp.settings import Settings
from fsr_lsp.source import SourceText
from fsr_lsp.specs import parse_spec
from fsr_lsp.specs.build_flags import flag_problem, merged, read_command
from fsr_lsp.workflows.optimize import plan_spec, spec_options
from fsr_lsp.evaluator import EvalOptions

from ..support.cuda_on_cpu import cxx, evaluate_on_cpu

SCALE = """#include <cuda_runtime.h>
__global__ void scale(int n, float* x) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
#ifdef SCALE_BY_TWO
  if (i < n) x[i] = x[i] * 2.0f;
#else
  if (i < n) x[i] = x[i] * 3.0f;
#endif
}

int main() {
  int n = 1 << 12;
  float* x;
  cudaMalloc(&x, n * sizeof(float));
  scale<<<(n + 255) / 256, 256>>>(n, x);
  return 0;
}
"""
DOUBLED = """__global__ void scale(int n, float* x) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] + x[i];
}
"""
SPEC = """/* @fsr
bench = { n = 3000 }
tests = [ { n = 77 }, { n = 1024 } ]
grid = "cdiv(n, 256)"
block = 256
[args]
n = "n"
x = "inout[n]"
*/
"""


def test_a_compile_command_is_read_into_the_flags_that_change_device_code(tmp_path):
    command = ("nvcc -O3 --use_fast_math -DUSE_BF16 -D N=4 -I../inc -Xcompiler -O3,-fopenmp -arch=sm_80 "
               "-gencode arch=compute_90,code=sm_90 -o x.o -c x.cu -lineinfo -Xptxas -v -std=c++14 -maxrregcount 64 "
               "--expt-relaxed-constexpr -dc -x cu -ccbin g++ -MF x.d").split()
    read = read_command(command, tmp_path / "build")
    assert read.flags == ("-O3", "--use_fast_math", "-DUSE_BF16", "-DN=4", f"-I{tmp_path / 'inc'}", "-std=c++14",
                          "-maxrregcount=64", "--expt-relaxed-constexpr", "-rdc=true")
    assert read.arch == ("sm_80", "arch=compute_90,code=sm_90")  # apart: fsr builds for the GPU it runs on
    assert "-ccbin g++" in read.dropped and "-Xcompiler -O3,-fopenmp" in read.dropped and "-o x.o" in read.dropped
    assert read.others() == ("-O3", "--use_fast_math", "-std=c++14", "-maxrregcount=64", "--expt-relaxed-constexpr",
                             "-rdc=true")


def test_cmakes_response_files_are_read_as_the_compiler_reads_them(tmp_path):
    """CMake's Makefiles hand nvcc its include paths in `--options-file includes_CUDA.rsp`."""
    build = tmp_path / "build"
    (build / "CMakeFiles" / "t.dir").mkdir(parents=True)
    (build / "CMakeFiles" / "t.dir" / "includes_CUDA.rsp").write_text('-I/abs/inc -I"../with space" -DFROM_RSP=1\n')
    command = ["nvcc", "-forward-unknown-to-host-compiler", "--options-file", "CMakeFiles/t.dir/includes_CUDA.rsp",
               "-use_fast_math", "-optf=gone.rsp", "-x", "cu", "-c", "main.cu"]
    read = read_command(command, build)
    assert read.flags == ("-I/abs/inc", f"-I{tmp_path / 'with space'}", "-DFROM_RSP=1", "--use_fast_math")
    assert any(d.startswith("--options-file gone.rsp") for d in read.dropped)  # named, not silently lost


@pytest.mark.parametrize("flag", ["-ccbin=/tmp/evil", "-Xcompiler=-fplugin=evil.so", "-o", "--output-file=/x",
                                  "--ptxas-options=-o,/tmp/x", "-arch=sm_90", "-Irelative", "--run", 7])
def test_a_block_takes_no_flag_that_could_run_or_write_anything(flag):
    assert flag_problem(flag) is not None
    block = SPEC.replace("[args]", f"flags = [{json.dumps(flag)}]\n[args]") + DOUBLED
    (kernel,) = discover(SourceText(block)).kernels
    result = parse_spec(SourceText(block), kernel)
    assert any("flag" in p.message for p in result.problems), result.problems
    assert result.spec is None or result.spec.flags == ()


def test_a_block_keeps_the_flags_that_change_code():
    block = SPEC.replace("[args]", 'flags = ["--use_fast_math", "-maxrregcount=64", "--ftz=true"]\n[args]') + DOUBLED
    (kernel,) = discover(SourceText(block)).kernels
    assert parse_spec(SourceText(block), kernel).spec.flags == ("--use_fast_math", "-maxrregcount=64", "--ftz=true")


def test_a_candidate_adds_flags_never_replaces_the_builds():
    assert merged(("-O3", "-maxrregcount=64", "--use_fast_math"), ("-maxrregcount=128", "-O1", "-DX", "--use_fast_math")) \
        == ("-O3", "-maxrregcount=64", "--use_fast_math", "-DX")
    from fsr_lsp.evaluator.job.prepare import EvalOptions as Options

    options = Options(flags=("-maxrregcount=64",), candidate_flags=("-maxrregcount=255", "--use_fast_math"))
    assert options.compile_options("sm_90", candidate=True).flags == ("-maxrregcount=64", "--use_fast_math")
    assert options.compile_options("sm_90").flags == ("-maxrregcount=64",)


def test_the_builds_standard_and_level_replace_fsrs_own():
    assert "-std=c++17" not in base_flags(("-std=c++14",)) and "-O3" not in base_flags(("-O1",))
    assert "-std=c++17" in base_flags(("--use_fast_math",)) and "-O3" in base_flags(())


def write_database(root: Path, command: str, file: str = "scale.cu", directory: Path | None = None) -> Path:
    build = root / "build"
    build.mkdir(exist_ok=True)
    db = build / "compile_commands.json"
    db.write_text(json.dumps([{"directory": str(directory or build), "file": f"../{file}", "command": command}]))
    return db


def project(root: Path, text: str = SCALE) -> Path:
    (root / ".git").mkdir(exist_ok=True)
    file = root / "scale.cu"
    file.write_text(text)
    return file


def plan(root: Path, file: Path, settings: Settings = Settings()):
    text = file.read_text()
    (kernel,) = discover(SourceText(text)).kernels
    return plan_spec(LaunchIndex(root, first_wait=None), file, text, kernel, settings)


def test_cmakes_compile_database_gives_the_drafted_spec_its_flags(tmp_path):
    file = project(tmp_path)
    write_database(tmp_path, "/usr/local/cuda/bin/nvcc -O3 --use_fast_math -DSCALE_BY_TWO -I../include "
                             "-arch=sm_80 -o CMakeFiles/k.o -c ../scale.cu")
    p = plan(tmp_path, file)
    assert p.spec.origin == "drafted" and p.draft is not None, p.spec.problems
    assert 'flags = ["-O3", "--use_fast_math"]' in p.draft and 'defines = ["SCALE_BY_TWO"]' in p.draft, p.draft
    assert p.spec.build == ("built as your build does (build/compile_commands.json): -O3 --use_fast_math "
                            "-DSCALE_BY_TWO")
    options = spec_options(EvalOptions(flags=("-O1", "-lineinfo")), p.spec)
    assert options.flags == ("-O3", "--use_fast_math", "-DSCALE_BY_TWO", "-lineinfo")  # the build's -O stays
    assert str(tmp_path / "include") in options.include_dirs
    from fsr_lsp.server.features.drafts import hover_lines

    assert hover_lines(p.spec, None)[-1] == "- " + p.spec.build


def test_an_attached_spec_takes_the_builds_flags_too(tmp_path):
    file = project(tmp_path, SPEC + SCALE.replace("#include <cuda_runtime.h>\n", ""))
    write_database(tmp_path, "ccache nvcc --use_fast_math -DSCALE_BY_TWO -c ../scale.cu -o k.o")
    p = plan(tmp_path, file)
    assert p.spec.origin == "attached" and p.spec.flags == ("--use_fast_math", "-DSCALE_BY_TWO")
    assert "ccache" not in p.spec.build


def test_a_header_takes_the_flags_every_cu_file_agrees_on(tmp_path):
    project(tmp_path)
    header = tmp_path / "kern.cuh"
    header.write_text(DOUBLED)
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "compile_commands.json").write_text(json.dumps([
        {"directory": str(tmp_path), "file": "a.cu", "arguments": ["nvcc", "--use_fast_math", "-c", "a.cu"]},
        {"directory": str(tmp_path), "file": "b.cu", "arguments": ["nvcc", "--use_fast_math", "-c", "b.cu"]}]))
    assert file_build(tmp_path, header).flags.flags == ("--use_fast_math",)
    (tmp_path / "build" / "compile_commands.json").write_text(json.dumps([
        {"directory": str(tmp_path), "file": "a.cu", "arguments": ["nvcc", "--use_fast_math", "-c", "a.cu"]},
        {"directory": str(tmp_path), "file": "b.cu", "arguments": ["nvcc", "-c", "b.cu"]}]))
    assert file_build(tmp_path, header) is None  # they disagree: no guess
    (tmp_path / "b.cu").write_text('#include "kern.cuh"\n')  # b.cu includes it: b's flags are its
    (tmp_path / "a.cu").write_text("int main() {}\n")
    assert file_build(tmp_path, header).flags.flags == () and "include kern.cuh" in file_build(tmp_path, header).where
    (tmp_path / "a.cu").write_text('#include "sub/kern.cuh"\n')  # both include it, and disagree
    assert file_build(tmp_path, header) is None


def test_a_compiler_fsr_does_not_read_and_a_damaged_database_say_so(tmp_path):
    file = project(tmp_path)
    write_database(tmp_path, "clang++ -x cuda --cuda-gpu-arch=sm_90 -ffast-math -c ../scale.cu")
    build = file_build(tmp_path, file)
    assert build.flags.flags == () and any("clang++" in p and "does not read" in p for p in build.problems)
    p = plan(tmp_path, file)
    assert any("clang++" in problem for problem in p.spec.problems)
    (tmp_path / "build" / "compile_commands.json").write_text("{ not json")
    db = read_database(tmp_path / "build" / "compile_commands.json")
    assert db.commands == [] and "not a compile database" in db.problems[0]
    p = plan(tmp_path, file)  # the draft goes on, without the flags
    assert p.spec.origin == "drafted" and any("not a compile database" in x for x in p.spec.problems)
    assert "flags =" not in p.draft


@pytest.fixture
def fake_nvcc(tmp_path, monkeypatch):
    """An `nvcc` on PATH that writes the object it is asked for and remembers being run."""
    bin_dir = tmp_path / "toolkit" / "bin"
    bin_dir.mkdir(parents=True)
    nvcc = bin_dir / "nvcc"
    nvcc.write_text("#!/bin/sh\necho \"$@\" >> \"$(dirname \"$0\")/ran\"\n"
                    "while [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then touch \"$2\"; fi; shift; done\n")
    nvcc.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return bin_dir


def test_a_watched_build_records_how_it_compiles_each_file(tmp_path, fake_nvcc):
    file = project(tmp_path)
    (tmp_path / "Makefile").write_text("app: scale.cu\n\tnvcc -O3 --use_fast_math -DSCALE_BY_TWO -o scale.o -c scale.cu"
                                       "\n\tnvcc -o app scale.o\n")
    built = run_build("make", tmp_path)
    assert built.exit_code == 0 and built.problems == [] and built.files() == ["scale.cu"]
    assert (fake_nvcc / "ran").read_text().count("\n") == 2  # the real nvcc ran each time, arguments unchanged
    assert (tmp_path / "app").exists()
    (entry,) = commands_for(tmp_path, file)[0]
    assert entry.database == tmp_path / WATCHED and entry.arguments[0] == str(fake_nvcc / "nvcc")
    assert file_build(tmp_path, file).flags.flags == ("-O3", "--use_fast_math", "-DSCALE_BY_TWO")
    again = run_build("make", tmp_path)  # nothing to rebuild
    assert again.exit_code == 0 and "compiled nothing fsr could see" in again.problems[0]
    failed = run_build("exit 3", tmp_path)
    assert failed.exit_code == 3 and "the build failed (exit status 3)" in failed.problems[0]
    assert file_build(tmp_path, file).flags.flags == ("-O3", "--use_fast_math", "-DSCALE_BY_TWO")  # nothing lost


def test_a_build_naming_nvcc_by_its_full_path_is_seen_too(tmp_path, fake_nvcc):
    """A Makefile's `$(CUDA_HOME)/bin/nvcc` never looks on PATH: the watcher sees it started."""
    file = project(tmp_path)
    (tmp_path / "Makefile").write_text(f"CXX = {fake_nvcc}/nvcc\nscale.o: scale.cu\n\t$(CXX) --use_fast_math -DLDIM=32 "
                                       "-c scale.cu -o scale.o\n")
    built = run_build("make", tmp_path)
    assert built.exit_code == 0 and built.files() == ["scale.cu"], built.problems
    assert file_build(tmp_path, file).flags.flags == ("--use_fast_math", "-DLDIM=32")
    (tmp_path / "build.sh").write_text(f"#!/bin/sh\ncd sub && exec {fake_nvcc}/nvcc -O2 -c ../scale.cu -o s.o\n")
    (tmp_path / "sub").mkdir()
    assert run_build("sh build.sh", tmp_path).entries[0]["directory"] == str(tmp_path / "sub")


def test_without_a_c_compiler_a_wrapper_on_path_watches_plain_nvcc(tmp_path, fake_nvcc, monkeypatch):
    from fsr_lsp.capture import build_watch

    monkeypatch.setattr(build_watch, "watch_library", lambda cache=None: None)
    file = project(tmp_path)
    built = run_build("nvcc -O1 -DX=2 -c scale.cu -o scale.o", tmp_path)
    assert built.exit_code == 0 and built.files() == ["scale.cu"]
    assert file_build(tmp_path, file).flags.flags == ("-O1", "-DX=2")
    assert (fake_nvcc / "ran").read_text().strip() == "-O1 -DX=2 -c scale.cu -o scale.o"


def test_fsr_capture_build_runs_the_build_and_says_what_it_recorded(tmp_path, fake_nvcc):
    project(tmp_path)
    env = {**os.environ, "PATH": os.environ["PATH"]}
    run = subprocess.run([sys.executable, "-m", "fsr_lsp.cli.main", "capture", "--workspace", str(tmp_path),
                          "--build", "nvcc --use_fast_math -c scale.cu -o scale.o"], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=120)
    assert run.returncode == 0 and "recorded how the build compiles scale.cu" in run.stderr, run.stderr
    failing = subprocess.run([sys.executable, "-m", "fsr_lsp.cli.main", "capture", "--workspace", str(tmp_path),
                              "--build", "false", "--", "./app"], capture_output=True, text=True, env=env,
                             cwd=tmp_path, timeout=120)
    assert failing.returncode == 1 and "the build did not succeed (exit status 1)" in failing.stderr
    assert "Traceback" not in failing.stderr and not (tmp_path / ".fsr" / "captures").exists()


@pytest.mark.skipif(cxx() is None, reason="needs g++ to run kernels on the CPU")
def test_a_kernel_whose_result_depends_on_a_define_is_verified_only_under_it(tmp_path):
    """The build defines SCALE_BY_TWO: the doubling rewrite is right for the shipped kernel and
    wrong for the one fsr would build without the build's flags."""
    source = SPEC + SCALE.replace("#include <cuda_runtime.h>\n", "").split("int main")[0]
    under = evaluate_on_cpu(source, "scale", DOUBLED, flags=("-DSCALE_BY_TWO",))
    assert under.status == "verified", under.message
    bare = evaluate_on_cpu(source, "scale", DOUBLED)
    assert bare.status == "wrong", bare.message
    # the same through the workspace: the compile database's -D reaches the evaluator's options
    file = project(tmp_path, source)
    write_database(tmp_path, "nvcc -DSCALE_BY_TWO -c ../scale.cu -o s.o")
    options = spec_options(EvalOptions(), plan(tmp_path, file).spec)
    assert evaluate_on_cpu(source, "scale", DOUBLED, flags=options.flags).status == "verified"
