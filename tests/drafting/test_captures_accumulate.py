"""Captures accumulate (issue 44 item 1): a project has many programs, captured one after
another; each kernel takes its spec from the newest capture that launched it, the listing says
which run each came from, a capture that recorded nothing leaves nothing, and a capture every
one of whose kernels a newer capture launched again is pruned (the README's rule)."""

from __future__ import annotations

import json
from pathlib import Path

from fsr_lsp.capture import latest_capture, prune
from fsr_lsp.drafting.resolver import kernel_specs

from ..support.captures import f32, i32, ptr, scale_launch, write_capture

OFFSET = """__global__ void offset(float* out, const float* in, float b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] + b;
}
"""
SCALE = """__global__ void scale(float* out, const float* in, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * in[i];
}
"""


def offset_launch(n: int) -> dict:
    return {"id": 0, "kernel": "_Z6offsetPfPKffi", "name": "offset(float*, float const*, float, int)", "base": "offset",
            "grid": [(n + 127) // 128, 1, 1], "block": [128, 1, 1], "smem": 0,
            "params": [ptr(4 * n), ptr(4 * n), {"offset": 16, "size": 4, "hex": f32(1.0)}, {"offset": 20, "size": 4,
                                                                                         "hex": i32(n)}]}


def finished(folder: Path, code: int = 0) -> Path:
    meta = json.loads((folder / "capture.json").read_text())
    (folder / "capture.json").write_text(json.dumps({**meta, "exit_code": code}))
    return folder


def specs(root: Path) -> dict:
    return {s.kernel: s for s in kernel_specs([root / "k.cu"], capture=latest_capture(root))}


def test_two_programs_captured_one_after_the_other_keep_both_kernels_specs(tmp_path):
    (tmp_path / "k.cu").write_text(SCALE + OFFSET)
    write_capture(tmp_path, [scale_launch(5000)], name="20260101-000000", command=("./scale_app",))
    write_capture(tmp_path, [offset_launch(3000)], name="20260101-000100", command=("./offset_app",))
    found = specs(tmp_path)
    assert found["scale"].origin == "captured" and found["offset"].origin == "captured", found
    assert "n = 5000" in found["scale"].spec and "./scale_app" in found["scale"].spec
    assert "n = 3000" in found["offset"].spec and "./offset_app" in found["offset"].spec
    # the listing says which run each kernel's spec came from
    assert "20260101-000000" in found["scale"].provenance["launch"]
    assert "20260101-000100" in found["offset"].provenance["launch"]


def test_the_newest_capture_that_launched_a_kernel_wins(tmp_path):
    (tmp_path / "k.cu").write_text(SCALE)
    write_capture(tmp_path, [scale_launch(5000)], name="20260101-000000")
    write_capture(tmp_path, [scale_launch(7000)], name="20260101-000100")
    write_capture(tmp_path, [offset_launch(3000)], name="20260101-000200")  # newest, but not of scale
    assert "n = 7000" in specs(tmp_path)["scale"].spec


def test_superseded_and_empty_captures_are_pruned_and_nothing_else(tmp_path):
    (tmp_path / "k.cu").write_text(SCALE + OFFSET)
    old = finished(write_capture(tmp_path, [scale_launch(5000)], name="20260101-000000"))
    kept = finished(write_capture(tmp_path, [offset_launch(3000)], name="20260101-000100"))
    empty = finished(write_capture(tmp_path, [], name="20260101-000150"), code=1)
    running = write_capture(tmp_path, [], name="20260101-000175")  # another terminal's, still running
    newer = finished(write_capture(tmp_path, [scale_launch(6000)], name="20260101-000200"))
    gone = prune(tmp_path)
    assert gone == [old, empty]
    assert not old.exists() and not empty.exists() and kept.exists() and newer.exists() and running.exists()
    found = specs(tmp_path)
    assert "n = 6000" in found["scale"].spec and "n = 3000" in found["offset"].spec


# ---------------------------------------------------------------- one kernel name in two programs


SCALE_INPLACE = """__global__ void scale(float* data, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] = 2.0f * data[i];
}
"""


def inplace_launch(n: int) -> dict:
    return {"id": 0, "kernel": "_Z5scalePfi", "name": "scale(float*, int)", "base": "scale",
            "grid": [(n + 127) // 128, 1, 1], "block": [128, 1, 1], "smem": 0,
            "params": [ptr(4 * n), {"offset": 8, "size": 4, "hex": i32(n)}]}


def started_in(folder: Path, cwd: Path) -> Path:
    meta = json.loads((folder / "capture.json").read_text())
    (folder / "capture.json").write_text(json.dumps({**meta, "cwd": str(cwd), "exit_code": 0}))
    return folder


def workspace_specs(root: Path, file: Path) -> dict:
    """As `fsr optimize` and the editor resolve it (the workspace's launch index)."""
    from fsr_lsp.drafting.resolver import workspace_spec
    from fsr_lsp.drafting.workspace import LaunchIndex
    from fsr_lsp.kernels import discover
    from fsr_lsp.source import SourceText

    text = file.read_text()
    return {k.name: workspace_spec(LaunchIndex(root), file, text, k) for k in discover(SourceText(text)).kernels}


def test_a_kernel_takes_the_run_of_its_own_programs_folder(tmp_path):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "k.cu").write_text(SCALE)
    started_in(write_capture(tmp_path, [scale_launch(5000)], name="20260101-000000"), tmp_path / "a")
    started_in(write_capture(tmp_path, [scale_launch(7000)], name="20260101-000100"), tmp_path / "b")
    for name, n in (("a", 5000), ("b", 7000)):
        listed = {s.kernel: s for s in kernel_specs([tmp_path / name / "k.cu"], capture=latest_capture(tmp_path))}
        assert f"n = {n}" in listed["scale"].spec, (name, listed["scale"].spec)
        assert f"n = {n}" in workspace_specs(tmp_path, tmp_path / name / "k.cu")["scale"].spec
    # a program started from elsewhere, by its path, counts as its folder's too
    write_capture(tmp_path, [scale_launch(9000)], name="20260101-000200", command=(str(tmp_path / "a" / "app"),))
    assert "n = 9000" in workspace_specs(tmp_path, tmp_path / "a" / "k.cu")["scale"].spec
    assert "n = 7000" in workspace_specs(tmp_path, tmp_path / "b" / "k.cu")["scale"].spec


def test_a_kernel_of_the_same_name_with_other_parameters_does_not_hide_an_older_run(tmp_path):
    (tmp_path / "k.cu").write_text(SCALE)
    write_capture(tmp_path, [scale_launch(5000)], name="20260101-000000", command=("./scale_app",))
    write_capture(tmp_path, [inplace_launch(3000)], name="20260101-000100", command=("./other_app",))
    found = workspace_specs(tmp_path, tmp_path / "k.cu")["scale"]
    assert found.origin == "captured" and "n = 5000" in found.spec, found
    assert "./scale_app" in found.provenance["launch"]


def test_pruning_keeps_the_newest_run_of_each_program_for_a_shared_kernel_name(tmp_path):
    (tmp_path / "k.cu").write_text(SCALE)
    a_old = finished(write_capture(tmp_path, [scale_launch(5000)], name="20260101-000000", command=("./a",)))
    b = finished(write_capture(tmp_path, [inplace_launch(3000)], name="20260101-000100", command=("./b",)))
    a_new = finished(write_capture(tmp_path, [scale_launch(6000)], name="20260101-000200", command=("./a",)))
    assert prune(tmp_path) == [a_old]
    assert b.exists() and a_new.exists()


def test_a_template_of_the_same_name_in_another_program_does_not_stand_for_a_plain_kernel(tmp_path):
    """Two programs of one folder: `dot` in one, `dot<__half, 2>` in the other, both with four
    parameters. The plain kernel takes its own program's run, however the runs are ordered."""
    (tmp_path / "k.cu").write_text(SCALE)
    templated = {**scale_launch(7000), "name": "void scale<2>(float*, float const*, float, int)",
                 "kernel": "_Z5scaleILi2EEvPfPKffi"}
    write_capture(tmp_path, [scale_launch(5000)], name="20260101-000000", command=("./plain",))
    write_capture(tmp_path, [templated], name="20260101-000100", command=("./packed",))
    found = workspace_specs(tmp_path, tmp_path / "k.cu")["scale"]
    assert found.origin == "captured" and "n = 5000" in found.spec and "./plain" in found.provenance["launch"], found


def test_runs_of_two_scripts_by_one_interpreter_are_two_programs(tmp_path):
    (tmp_path / "a.py").write_text("")
    (tmp_path / "b.py").write_text("")
    old = finished(write_capture(tmp_path, [scale_launch(5000)], name="20260101-000000", command=("python3", "a.py")))
    other = finished(write_capture(tmp_path, [scale_launch(6000)], name="20260101-000100", command=("python3", "b.py")))
    again = finished(write_capture(tmp_path, [scale_launch(7000)], name="20260101-000200", command=("python3", "a.py", "9")))
    for folder in (old, other, again):
        meta = json.loads((folder / "capture.json").read_text())
        (folder / "capture.json").write_text(json.dumps({**meta, "cwd": str(tmp_path)}))
    assert prune(tmp_path) == [old]  # a.py's older run, not b.py's


SHARED_SCALE = """__global__ void scale(float* out, const float* in, float a, int n)
{
    extern __shared__ float staged[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    staged[threadIdx.x] = i < n ? in[i] : 0.f;
    __syncthreads();
    if (i < n) out[i] = a * staged[threadIdx.x];
}
"""


def test_a_run_that_gave_no_dynamic_shared_memory_to_a_kernel_that_needs_it_launched_another_programs(tmp_path):
    """Two programs of one folder, each with its own `scale` of the same parameters (a book's
    `reduction_cg` and `reduction_cg_shift`): the newer run launched the one without shared
    memory. The file's `scale` stages through `extern __shared__`, so its spec is the older
    run's, which gave it 512 bytes; the newer run's launch would fault it."""
    (tmp_path / "k.cu").write_text(SHARED_SCALE)
    staged = {**scale_launch(5000), "smem": 512}
    write_capture(tmp_path, [staged], name="20260101-000000", command=("./staged_app",))
    write_capture(tmp_path, [scale_launch(7000)], name="20260101-000100", command=("./plain_app",))
    for found in (specs(tmp_path)["scale"], workspace_specs(tmp_path, tmp_path / "k.cu")["scale"]):
        assert found.origin == "captured" and "n = 5000" in found.spec and "smem = 512" in found.spec, found
        assert "./staged_app" in found.provenance["launch"]
    (tmp_path / "k.cu").write_text(SCALE)  # the plain kernel takes the newest run, as before
    assert "n = 7000" in specs(tmp_path)["scale"].spec
    only_plain = tmp_path / "alone"
    only_plain.mkdir()
    (only_plain / "k.cu").write_text(SHARED_SCALE)
    write_capture(only_plain, [scale_launch(7000)], name="20260101-000200", command=("./plain_app",))
    refused = specs(only_plain)["scale"]
    assert refused.origin != "captured"
    assert any("uses dynamic shared memory" in p for p in refused.problems), refused.problems


def test_what_counts_as_indexing_dynamic_shared_memory():
    from fsr_lsp.kernels.callees import uses_dynamic_shared

    text = """extern __shared__ float pool[];
__global__ void own(float* o) { extern __shared__ float s[]; s[threadIdx.x] = 1.f; o[0] = s[0]; }
__global__ void fixed(float* o) { __shared__ float s[256]; s[threadIdx.x] = 1.f; o[0] = s[0]; }
__global__ void commented(float* o) { /* extern __shared__ float s[]; */ float s[2] = {1.f, 2.f}; o[0] = s[1]; }
__global__ void declared_only(float* o) { extern __shared__ float unused[]; o[0] = 1.f; }
__device__ float first() { return pool[0]; }
__global__ void via_file(float* o) { o[0] = first(); }
__global__ void other_pool(float* o) { __shared__ float pool[32]; pool[0] = 1.f; o[0] = pool[0]; }
"""
    found = {k: uses_dynamic_shared(text, k) for k in ("own", "fixed", "commented", "declared_only", "via_file",
                                                        "other_pool")}
    assert found == {"own": True, "fixed": False, "commented": False, "declared_only": False, "via_file": True,
                     "other_pool": False}, found
