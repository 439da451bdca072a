"""Whatever a user types, `fsr` answers in one line at the right place, never with a traceback,
and says what the CPU can tell before it asks for a GPU."""

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from ..conftest import EXAMPLES
from ..support.fake_llm import FakeLLM, answer
from ..support.doubles import command
from ..support.doubles import fsr

ROOT = Path(__file__).resolve().parent.parent.parent
SAXPY = (EXAMPLES / "saxpy.cu").read_text()




def one_line(r):
    assert "Traceback" not in r.stderr + r.stdout, r.stderr
    return r.stderr.strip()


@pytest.mark.parametrize("command", ["eval", "optimize"])
def test_a_file_that_is_not_utf8_is_named_with_the_byte_and_line(tmp_path, command):
    bad = tmp_path / "latin1.cu"
    bad.write_bytes(SAXPY.encode().replace(b"Naive", b"Na\xefve", 1) + b"// caf\xe9\n")
    r = fsr(command, bad, "-k", "saxpy")
    assert r.returncode == 2
    assert "is not UTF-8 text: byte 0x" in one_line(r) and "on line" in r.stderr


@pytest.mark.parametrize("extra, says", [
    (["-k", "nope"], "no kernel named nope in"),
    (["-k", "saxpy", "--reps", "0"], "argument --reps: expected at least 1, got 0"),
    (["-k", "saxpy", "--seeds", "0"], "argument --seeds: expected at least 1, got 0"),
    (["-k", "saxpy", "--timeout", "-1"], "argument --timeout: expected a positive number of seconds, got '-1'"),
])
def test_eval_checks_what_the_cpu_can_before_the_gpu(tmp_path, extra, says):
    f = tmp_path / "saxpy.cu"
    f.write_text(SAXPY)
    r = fsr("eval", f, *extra)
    assert r.returncode == 2 and says in one_line(r) and "not installed" not in r.stderr


BAD_ARGUMENTS = [  # (arguments, what the one line says); FILE: a good kernel file, BAD: one that is not UTF-8
    (["optimize", "FILE", "-k", "saxpy", "--time-budget", "nan"], "--time-budget: expected a finite number, got nan"),
    (["optimize", "FILE", "-k", "saxpy", "--time-budget", "inf"], "--time-budget: expected a finite number, got inf"),
    (["optimize", "FILE", "-k", "saxpy", "--time-budget", "-5"], "--time-budget: expected at least 1"),
    (["optimize", "FILE", "-k", "saxpy", "--gpu", "-1"], '--gpu: expected GPU indices ("0,1") or "all"'),
    (["optimize", "FILE", "-k", "saxpy", "--gpu", "abc"], '--gpu: expected GPU indices ("0,1") or "all"'),
    (["optimize", "FILE", "-k", "saxpy", "--workspace", "MISSING"], "argument --workspace: MISSING: no such folder"),
    (["optimize", "FILE", "-k", "saxpy", "--workspace", "FILE"], "argument --workspace: FILE is a file, not a folder"),
    (["optimize", "DIR", "-k", "saxpy"], "cannot read DIR: Is a directory"),
    (["eval", "FILE", "-k", "saxpy", "--reps", "nan"], "argument --reps: expected a whole number, got 'nan'"),
    (["eval", "FILE", "-k", "saxpy", "--timeout", "inf"], "argument --timeout: expected a positive number of seconds"),
    (["spec", "BAD"], "BAD is not UTF-8 text: byte 0xff on line 1"),
    (["spec", "DIR"], "cannot read DIR: Is a directory"),
    (["spec", "FILE", "--workspace", "MISSING"], "argument --workspace: MISSING: no such folder"),
    (["history", "FILE", "-k", "nope"], "no kernel named nope in FILE"),
    (["history", "BAD", "-k", "saxpy"], "BAD is not UTF-8 text"),
    (["history", "FILE", "-k", "saxpy", "--workspace", "FILE"], "FILE is a file, not a folder"),
    (["history", "DIR", "-k", "saxpy"], "cannot read DIR: Is a directory"),
    (["capture", "--timeout", "-1", "--", "true"], "argument --timeout: expected a positive number of seconds"),
    (["capture", "--max-per-kernel", "0", "--", "true"], "argument --max-per-kernel: expected at least 1, got 0"),
    (["capture", "--workspace", "MISSING", "--", "true"], "argument --workspace: MISSING: no such folder"),
    (["profile", "FILE", "-k", "saxpy", "--workspace", "MISSING"], "argument --workspace: MISSING: no such folder"),
]


@pytest.mark.parametrize("argv, says", BAD_ARGUMENTS, ids=[" ".join(a) for a, _ in BAD_ARGUMENTS])
def test_every_bad_argument_is_one_line_and_a_nonzero_exit_before_any_work(tmp_path, argv, says):
    good, bad = tmp_path / "saxpy.cu", tmp_path / "latin1.cu"
    good.write_text(SAXPY)
    bad.write_bytes(b"\xff\xfe not utf-8\n")
    names = {"FILE": str(good), "BAD": str(bad), "DIR": str(tmp_path), "MISSING": str(tmp_path / "missing")}
    r = fsr(*[names.get(a, a) for a in argv], cwd=tmp_path)
    expected = says
    for name, value in names.items():
        expected = expected.replace(name, value)
    line = one_line(r)
    assert r.returncode == 2 and len(line.splitlines()) == 1 and expected in line, (r.returncode, line)
    assert "not installed" not in line and not (tmp_path / "missing").exists()


@pytest.mark.parametrize("edit, says", [
    (lambda s: s.replace("grid  =", "grid  = = "), "the @fsr spec of saxpy is unusable"),
    (lambda s: s[: s.rindex("}")], "incomplete: its braces do not balance"),
])
def test_eval_reports_a_broken_file_before_the_gpu(tmp_path, edit, says):
    f = tmp_path / "saxpy.cu"
    f.write_text(edit(SAXPY))
    r = fsr("eval", f, "-k", "saxpy")
    assert r.returncode == 2 and says in one_line(r), r.stderr


def test_history_of_a_missing_file_says_so_and_creates_nothing(tmp_path):
    r = fsr("history", tmp_path / "missing.cu", "-k", "k", "--workspace", tmp_path)
    assert r.returncode == 2 and "cannot read" in one_line(r) and not (tmp_path / ".fsr").exists()
    f = tmp_path / "saxpy.cu"
    f.write_text(SAXPY)
    r = fsr("history", f, "-k", "saxpy", "--workspace", tmp_path)
    assert r.returncode == 0 and "no history in" in r.stdout and not (tmp_path / ".fsr").exists()


def test_spec_problems_print_as_written_whatever_brackets_they_hold(tmp_path):
    f = tmp_path / "k.cu"
    f.write_text(SAXPY.replace('n = "n"', 'n = "n"\nzz = "in[n]"').replace('y = "inout[n] normal()"',
                                                                        'y = "inout[n] normal()" # [/x] [bold]'))
    r = fsr("spec", f)
    assert r.returncode == 0 and "Traceback" not in r.stderr
    assert "problem: [args] names 'zz', which is not a parameter of saxpy" in r.stdout, r.stdout


STAND_INS = {"FSR_LSP_BENCH": "tests.support.scripted_bench:BrokenBench", "PYTHONPATH": str(ROOT)}


def test_a_failure_inside_the_search_is_one_line(tmp_path):
    f = tmp_path / "saxpy.cu"
    f.write_text(SAXPY)
    r = fsr("optimize", f, "-k", "saxpy", "--workspace", tmp_path, env=STAND_INS)
    assert r.returncode == 1 and one_line(r).splitlines()[-1] == "fsr: the search failed: database is locked"
    assert len([line for line in r.stderr.splitlines() if line.startswith("fsr:")]) == 1
    assert "Traceback" not in r.stderr


def test_a_failure_inside_the_search_leaves_its_traceback_in_fsrs_own_log(tmp_path):
    """One line for the user; the traceback where FSR_LOG_FILE says, for whoever reports the bug."""
    f = tmp_path / "saxpy.cu"
    f.write_text(SAXPY)
    log = tmp_path / "debug.log"
    r = fsr("optimize", f, "-k", "saxpy", "--workspace", tmp_path, env={**STAND_INS, "FSR_LOG_FILE": str(log)})
    assert r.returncode == 1 and "Traceback" not in r.stderr
    text = log.read_text()
    assert "the search of saxpy failed" in text and "Traceback (most recent call last)" in text, text[-2000:]


def optimize_slowly(tmp_path, llm):
    f = tmp_path / "saxpy.cu"
    f.write_text(SAXPY)
    env = {**os.environ, "FSR_LSP_BENCH": "tests.support.scripted_bench:SlowBench", "PYTHONPATH": str(ROOT), "FSR_SLOW_KEY": "k"}
    return subprocess.Popen([*command("fsr"), "optimize", str(f), "-k", "saxpy", "--workspace",
                             str(tmp_path), "--rounds", "20", "--candidates", "1", "--no-sanitize", "--llm-base-url",
                             llm.base_url, "--llm-model", "m", "--llm-key-env", "FSR_SLOW_KEY", "--fix-attempts", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)


WIN = answer("```cuda\n__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y)\n{\n"
             "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[i] = a * x[i] + y[i];"
             "  // verdict: verified 1.5\n}\n```")


def test_piped_progress_arrives_as_the_search_moves(tmp_path):
    with FakeLLM(default=WIN) as llm:
        proc = optimize_slowly(tmp_path, llm)
        first = proc.stderr.readline()  # before the search ends
        alive = proc.poll() is None
        proc.kill()
        proc.communicate()
    assert alive and first.startswith("round ")


def test_ctrl_c_keeps_what_was_found_and_ends_without_a_traceback(tmp_path):
    with FakeLLM(default=WIN) as llm:
        proc = optimize_slowly(tmp_path, llm)
        time.sleep(6)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert "Traceback" not in out + err and "KeyError" not in out + err
    assert proc.returncode in (0, 130), err
    assert "saxpy:" in out  # the status line, with the table before it


@pytest.mark.nvcc
def test_eval_without_a_gpu_still_reports_a_candidate_that_does_not_compile(tmp_path):
    pytest.importorskip("fsr_lsp")
    try:
        import pycuda  # noqa: F401
        pytest.skip("a GPU machine: the GPU path reports it")
    except ImportError:
        pass
    f = tmp_path / "saxpy.cu"
    f.write_text(SAXPY)
    bad = tmp_path / "bad.cu"
    bad.write_text(SAXPY[SAXPY.index("__global__"):].replace("a * x[i]", "a * x[i] +* ;"))
    r = fsr("eval", f, "-k", "saxpy", "-c", bad)
    assert r.returncode == 1 and "compile_error" in r.stdout and "candidate(" in r.stdout, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    good = tmp_path / "good.cu"
    good.write_text(SAXPY[SAXPY.index("__global__"):].replace("float* y", "float* __restrict__ y"))
    r = fsr("eval", f, "-k", "saxpy", "-c", good)
    assert r.returncode == 3 and "it compiles for sm_90a: the rest needs the GPU" in one_line(r)


def test_fsr_spec_k_resolves_only_the_kernel_named(tmp_path, monkeypatch):
    """`fsr spec FILE -k K` drafts K alone (a 10 MB file's other 1,600 kernels were all drafted
    for it), and still tells a name that is not there from a file with no kernel."""
    from fsr_lsp.cli import main as cli
    from fsr_lsp.drafting import resolver

    resolved: list[str] = []
    real = resolver._in_workspace

    def counting(index, path, text, kernels, *rest):
        resolved.extend(k.name for k in kernels)
        return real(index, path, text, kernels, *rest)

    monkeypatch.setattr(resolver, "_in_workspace", counting)
    (tmp_path / ".git").mkdir()
    src = tmp_path / "two.cu"
    src.write_text("__global__ void a(float* x) { x[threadIdx.x] = 1.f; }\n"
                   "__global__ void b(float* y) { y[threadIdx.x] = 2.f; }\n")
    assert cli.main(["spec", str(src), "-k", "b"]) == 0
    assert resolved == ["b"]
    assert cli.main(["spec", str(src), "-k", "c"]) == 2
    empty = tmp_path / "none.cu"
    empty.write_text("int main() { return 0; }\n")
    assert cli.main(["spec", str(empty), "-k", "c"]) == 2
