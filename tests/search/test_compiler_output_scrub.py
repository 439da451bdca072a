"""What the compiler says about a candidate reaches a model, the history and the screen only
as the candidate may see it: no text of files outside it, the original and their headers."""

import pytest

from fsr_lsp.evaluator.compile.compiler_output import CandidateLines, scrub
from fsr_lsp.evaluator.job.prepare import EvalOptions, prepare
from fsr_lsp.search.prompting import fix_prompt
from fsr_lsp.search.proposal import Proposal, Tried

from ..conftest import EXAMPLES

SAXPY = (EXAMPLES / "saxpy.cu").read_text()
LEAK = """/etc/hostname(1): error: identifier "vm" is undefined
  vm-secret-host
  ^

kernel.cu(12): error: identifier "zz" is undefined
      y[i] = zz;
             ^

kernel.cu(3): warning #177-D: variable "q" was declared but never referenced
/usr/local/cuda/bin/../targets/x86_64-linux/include/cuda_fp16.hpp(200): error: no suitable conversion
  __half private_line_of_the_header;
  ^
In file included from /home/user/secret/dir.h:3,
/home/user/notes.txt:4:1: error: expected unqualified-id before 'my' token
 my bank PIN is 1234
2 errors detected in the compilation of "kernel.cu".
"""


def test_foreign_files_are_left_out_and_the_candidates_lines_named():
    out = scrub(LEAK, CandidateLines(first=10, count=5), headers={"cuda_fp16.h"})
    assert "vm-secret-host" not in out and "/etc/hostname" not in out and '"vm"' not in out
    assert "bank PIN" not in out and "notes.txt" not in out and "secret/dir.h" not in out
    assert "(a diagnostic located in another file was left out)" in out
    assert 'candidate(3): error: identifier "zz" is undefined' in out and "y[i] = zz;" in out
    assert 'kernel.cu(3): warning #177-D' in out  # a line of the original, outside the candidate
    assert "cuda_fp16.hpp: error: no suitable conversion" in out and "private_line_of_the_header" not in out
    assert '2 errors detected in the compilation of "kernel.cu".' in out


def test_gcc_style_locations_in_the_candidate_are_renamed():
    assert scrub("kernel.cu:11:5: error: 'x' was not declared", CandidateLines(10, 3)) == \
        "candidate:2:5: error: 'x' was not declared"


@pytest.mark.nvcc
def test_a_header_of_the_original_shows_its_message_never_its_text(tmp_path, cache_dir):
    (tmp_path / "util.cuh").write_text("template <class T> __device__ T twice(T v) {\n"
                                       "    return v.PRIVATE_MARKER_FIELD;\n}\n")
    original = '#include "util.cuh"\n' + SAXPY
    candidate = SAXPY[SAXPY.index("__global__"):].replace("a * x[i]", "twice(a) * x[i]")
    options = EvalOptions(compiler="nvcc", cache_dir=cache_dir, include_dirs=(str(tmp_path),))
    result = prepare(original, "saxpy", candidate, "sm_90a", options).result
    assert result.status == "compile_error"
    assert "util.cuh: error:" in result.message and "PRIVATE_MARKER_FIELD" not in result.message
    assert "PRIVATE_MARKER_FIELD" not in result.compile["candidate"].log
    prompt = fix_prompt(Tried(Proposal(candidate, "llm:test"), result))
    assert "PRIVATE_MARKER_FIELD" not in prompt and "util.cuh: error:" in prompt
    assert "of the candidate" in prompt  # where in the candidate the template was instantiated


@pytest.mark.nvcc
def test_an_include_in_a_kernel_body_never_reaches_the_compiler(tmp_path, cache_dir):
    secret = tmp_path / "secret.txt"
    secret.write_text("vm_secret_content\n")
    candidate = SAXPY[SAXPY.index("__global__"):].replace("{\n", '{\n#include "%s"\n' % secret, 1)
    result = prepare(SAXPY, "saxpy", candidate, "sm_90a", EvalOptions(compiler="nvcc", cache_dir=cache_dir)).result
    assert result.status == "rejected" and "is not a device header" in result.message
    assert "vm_secret_content" not in result.message and "candidate" not in result.compile
    prompt = fix_prompt(Tried(Proposal(candidate, "llm:test"), result))
    assert "vm_secret_content" not in prompt
