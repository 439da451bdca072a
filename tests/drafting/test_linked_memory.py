"""Memory that holds pointers, from a capture (evaluator/job/linked_memory.py, gpu/relocation.py):
a list whose nodes are allocations of their own and a struct whose `char* name` points into
another are drafted as the run's bytes, rebuilt at the evaluator's addresses at every launch,
and compared as they were saved; a rewrite that walks the list wrong, or writes the wrong byte
of the memory reached through a pointer, is wrong."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest

from fsr_lsp.evaluator.job.linked_memory import link_writes, with_linked_memory
from fsr_lsp.evaluator.records import ArgPlan, LaunchPlan, SizePlan
from fsr_lsp.specs.model import Init

from ..support import cuda_on_cpu
from ..support.captures import i32, ptr

needs_cxx = pytest.mark.skipif(cuda_on_cpu.cxx() is None and os.environ.get("FSR_REQUIRE_NVCC") != "1",
                               reason="no C++ compiler (g++) to build kernels for the CPU")

SOURCE = """
struct Node { int key; Node* next; };

__global__ void walk(const Node* list, int steps, int* out)
{
    const Node* n = list;
    int sum = 0;
    for (int i = 0; i < steps && n; ++i) { sum += n->key; n = n->next; }
    out[0] = sum;
}

struct Elem { char* name; int value; };

__global__ void touch(Elem* e)
{
    e->name[0] = 'd';
    e->value++;
}
"""

WALK_SKIPS_THE_HEAD = """__global__ void walk(const Node* list, int steps, int* out)
{
    const Node* n = list->next;
    int sum = 0;
    for (int i = 0; i < steps && n; ++i) { sum += n->key; n = n->next; }
    out[0] = sum;
}
"""

WALK_UNROLLED = """__global__ void walk(const Node* list, int steps, int* out)
{
    const Node* n = list;
    int sum = 0;
    int i = 0;
    for (; i + 1 < steps && n && n->next; i += 2) { sum += n->key + n->next->key; n = n->next->next; }
    if (i < steps && n) sum += n->key;
    out[0] = sum;
}
"""

TOUCH_SWAPPED = """__global__ void touch(Elem* e)
{
    int v = e->value;
    e->name[0] = 'd';
    e->value = v + 1;
}
"""

TOUCH_WRONG_BYTE = TOUCH_SWAPPED.replace("e->name[0]", "e->name[1]")


def node(key: int, next_at: int) -> bytes:
    return struct.pack("<i4xQ", key, next_at)


def write_linked_capture(root: Path) -> None:
    """A run's capture as the injection library leaves it: four list nodes, each its own
    allocation, and an `Elem` whose name points at "hello"; the links beside the saved files."""
    folder = root / ".fsr" / "captures" / "20260101-000000"
    folder.mkdir(parents=True)
    (folder / "capture.json").write_text(json.dumps({"command": ["./app"]}))
    bases = [0x100000, 0x200000, 0x300000, 0x400000]
    files = ["inputs-7-0-0.bin", "inputs-7-0-h0.bin", "inputs-7-0-h1.bin", "inputs-7-0-h2.bin"]
    for i, name in enumerate(files):
        (folder / name).write_bytes(node(10 + i, bases[i + 1] if i < 3 else 0))
        if i < 3:
            (folder / f"{name}.links").write_text(f"8 {files[i + 1]} 0\n")
    (folder / "inputs-7-1-0.bin").write_bytes(struct.pack("<Qi4x", 0x500000, 10))
    (folder / "inputs-7-1-0.bin.links").write_text("0 inputs-7-1-h0.bin 0\n")
    (folder / "inputs-7-1-h0.bin").write_bytes(b"hello\0")
    walk = {"id": 0, "kernel": "_Z4walkPK4NodeiPi", "name": "walk(Node const*, int, int*)", "base": "walk",
            "grid": [1, 1, 1], "block": [1, 1, 1], "smem": 0, "snapshot": {"0": files[0]},
            "params": [{**ptr(16), "alloc": {"size": 16, "offset": 0, "base": bases[0], "via": "cudaMallocManaged"}},
                       {"offset": 8, "size": 4, "hex": i32(3)}, {**ptr(4), "offset": 16}]}
    touch = {"id": 1, "kernel": "_Z5touchP4Elem", "name": "touch(Elem*)", "base": "touch",
             "grid": [1, 1, 1], "block": [1, 1, 1], "smem": 0, "snapshot": {"0": "inputs-7-1-0.bin"},
             "params": [{**ptr(16), "alloc": {"size": 16, "offset": 0, "base": 0x600000, "via": "cudaMalloc"}}]}
    (folder / "launches-7.jsonl").write_text(json.dumps(walk) + "\n" + json.dumps(touch) + "\n")


def test_a_plan_gets_the_memory_its_captured_bytes_point_to(tmp_path: Path):
    (tmp_path / "a.bin").write_bytes(node(1, 0x200008))
    (tmp_path / "a.bin.links").write_text("8 b.bin 8\n")
    (tmp_path / "b.bin").write_bytes(node(2, 0x100000) + node(3, 0))
    (tmp_path / "b.bin.links").write_text("8 a.bin 0\n")  # a cycle back to the argument's own memory
    head = ArgPlan("list", "buffer", "uint8", length=16, init=Init("captured"), source=f"0:{tmp_path / 'a.bin'}")
    plan = SizePlan("n=1", "bench", {"n": 1}, [head, ArgPlan("n", "scalar", "int32", value=1)],
                    LaunchPlan((1, 1, 1), (1, 1, 1)), LaunchPlan((1, 1, 1), (1, 1, 1)))
    linked = with_linked_memory(plan)
    (reached,) = [a for a in linked.args if a.hidden]
    assert reached.name == "list->1" and reached.length == 32 and reached.direction == "inout"
    assert linked.args[0].links == ((8, "list->1", 8),) and reached.links == ((8, "list", 0),)
    assert link_writes(linked.args, {"list": 1000, "list->1": 5000}) == [(1008, 5008), (5008, 1000)]
    assert with_linked_memory(linked).args == linked.args  # the graph once, however often asked


def test_a_struct_holding_pointers_is_drafted_as_the_runs_bytes(tmp_path: Path):
    from fsr_lsp.capture import latest_capture
    from fsr_lsp.drafting.resolver import kernel_specs

    (tmp_path / "k.cu").write_text(SOURCE)
    write_linked_capture(tmp_path)
    specs = {s.kernel: s for s in kernel_specs([tmp_path / "k.cu"], capture=latest_capture(tmp_path))}
    assert specs["walk"].origin == "captured", specs["walk"].problems
    assert 'list = "in[16 bytes] captured()"' in specs["walk"].spec, specs["walk"].spec
    assert 'e = "inout[16 bytes] captured()"' in specs["touch"].spec, specs["touch"].spec


def test_a_pointer_to_pointers_is_no_buffer_of_floats():
    from fsr_lsp.kernels import find_kernel
    from fsr_lsp.source import SourceText
    from fsr_lsp.specs import parse_spec

    text = ('/* @fsr\nbench = { n = 64 }\ntests = [ { n = 5 } ]\ngrid = 1\nblock = 64\n[args]\nt = "in[n]"\n'
            'out = "out[n]"\nn = "n"\n*/\n__global__ void k(float** t, float* out, int n) '
            '{ int i = threadIdx.x; if (i < n) out[i] = t[i][0]; }\n')
    result = parse_spec(SourceText(text), find_kernel(text, "k"))
    assert result.spec is None
    assert any("element type 'float*'" in p.message and "bytes] captured()" in p.message for p in result.problems)
    assert parse_spec(SourceText(text.replace('"in[n]"', '"in[8 * n bytes]"')), find_kernel(text, "k")).spec is None


@needs_cxx
def test_memory_reached_through_pointers_is_rebuilt_compared_and_judged(tmp_path: Path):
    pytest.importorskip("torch")
    from fsr_lsp.capture import latest_capture
    from fsr_lsp.drafting.resolver import kernel_specs
    from fsr_lsp.drafting.placement import place_spec
    from fsr_lsp.drafting.proof import prove

    (tmp_path / "k.cu").write_text(SOURCE)
    write_linked_capture(tmp_path)
    capture = latest_capture(tmp_path)
    specs = {s.kernel: s for s in kernel_specs([tmp_path / "k.cu"], capture=capture)}
    with cuda_on_cpu.cpu_evaluator() as evaluator:
        for kernel in ("walk", "touch"):
            options = _options(specs[kernel].inputs)
            proof = prove(evaluator, SOURCE, kernel, specs[kernel].spec, options)
            assert proof.proven, proof.message
    for kernel, good, bad in (("walk", WALK_UNROLLED, WALK_SKIPS_THE_HEAD), ("touch", TOUCH_SWAPPED, TOUCH_WRONG_BYTE)):
        placed = place_spec(SOURCE, kernel, specs[kernel].spec).text
        inputs = dict(specs[kernel].inputs)
        verdict = cuda_on_cpu.evaluate_on_cpu(placed, kernel, good, real_inputs=inputs)
        assert verdict.status == "verified", verdict.message
        wrong = cuda_on_cpu.evaluate_on_cpu(placed, kernel, bad, real_inputs=inputs)
        assert wrong.status == "wrong", wrong.message
        if kernel == "touch":
            assert "e->1" in wrong.message  # the memory `e` points to: "hello" became "hdllo"


def _options(inputs: dict[str, str]):
    from fsr_lsp.evaluator.job.prepare import EvalOptions

    return EvalOptions(real_inputs=tuple(sorted(inputs.items())))


NESTED = """
struct View { float* data; int n; };
struct Pair { View in; View out; float scale; };

__global__ void scale_pair(Pair p)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.in.n) p.out.data[i] = p.scale * p.in.data[i];
}
"""

NESTED_REORDERED = """__global__ void scale_pair(Pair p)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= p.in.n) return;
    float x = p.in.data[i];
    p.out.data[i] = p.scale * x;
}
"""

NESTED_FOLDED = NESTED_REORDERED.replace("p.scale * x", "2.5f * x")
NESTED_OUT_OF_PLACE = NESTED_REORDERED.replace("p.out.data[i] =", "p.in.data[i] =")


def write_nested_capture(root: Path) -> None:
    """A struct holding structs that hold pointers, passed by value: its bytes ("p0") with their
    two pointers followed, as the injection library saves them."""
    folder = root / ".fsr" / "captures" / "20260101-000000"
    folder.mkdir(parents=True)
    (folder / "capture.json").write_text(json.dumps({"command": ["./app"]}))
    raw = struct.pack("<Qi4xQi4xf4x", 0x100000, 64, 0x200000, 64, 2.5)
    (folder / "inputs-7-0-p0.bin").write_bytes(raw)
    (folder / "inputs-7-0-p0.bin.links").write_text("0 inputs-7-0-0.0.bin 0\n16 inputs-7-0-0.16.bin 0\n")
    (folder / "inputs-7-0-0.0.bin").write_bytes(struct.pack("<64f", *[0.25 * i - 3 for i in range(64)]))
    (folder / "inputs-7-0-0.16.bin").write_bytes(bytes(256))
    record = {"id": 0, "kernel": "_Z10scale_pair4Pair", "name": "scale_pair(Pair)", "base": "scale_pair",
              "grid": [1, 1, 1], "block": [64, 1, 1], "smem": 0,
              "snapshot": {"0.0": "inputs-7-0-0.0.bin", "0.16": "inputs-7-0-0.16.bin", "p0": "inputs-7-0-p0.bin"},
              "params": [{"offset": 0, "size": len(raw), "hex": raw.hex(),
                          "words": [{"at": 0, "size": 256, "offset": 0, "via": "cudaMalloc"},
                                    {"at": 16, "size": 256, "offset": 0, "via": "cudaMalloc"}]}]}
    (folder / "launches-7.jsonl").write_text(json.dumps(record) + "\n")


@needs_cxx
def test_a_value_fsr_cannot_read_is_passed_as_the_run_passed_it(tmp_path: Path):
    """A struct of structs holding pointers, by value: drafted `p = "captured()"`, launched as the
    run's bytes with its pointers written for this run's buffers, the memory they reach compared."""
    pytest.importorskip("torch")
    from fsr_lsp.capture import latest_capture
    from fsr_lsp.drafting.resolver import kernel_specs
    from fsr_lsp.drafting.placement import place_spec
    from fsr_lsp.drafting.proof import prove

    (tmp_path / "k.cu").write_text(NESTED)
    write_nested_capture(tmp_path)
    (drafted,) = kernel_specs([tmp_path / "k.cu"], capture=latest_capture(tmp_path))
    assert drafted.origin == "captured" and 'p = "captured()"' in drafted.spec, (drafted.problems, drafted.spec)
    assert drafted.inputs["p"].startswith("0:")
    with cuda_on_cpu.cpu_evaluator() as evaluator:
        proof = prove(evaluator, NESTED, "scale_pair", drafted.spec, _options(drafted.inputs))
    assert proof.proven, proof.message
    placed = place_spec(NESTED, "scale_pair", drafted.spec).text
    good = cuda_on_cpu.evaluate_on_cpu(placed, "scale_pair", NESTED_REORDERED, real_inputs=drafted.inputs)
    assert good.status == "verified", good.message
    for bad, where in ((NESTED_OUT_OF_PLACE, "p->1"), ):
        wrong = cuda_on_cpu.evaluate_on_cpu(placed, "scale_pair", bad, real_inputs=drafted.inputs)
        assert wrong.status == "wrong" and where in wrong.message, wrong.message
    # the scale is the run's (2.5) inside the bytes: folding it is right on the run's data alone
    assert cuda_on_cpu.evaluate_on_cpu(placed, "scale_pair", NESTED_FOLDED, real_inputs=drafted.inputs).status \
        == "verified"


def _plan(*args: ArgPlan) -> SizePlan:
    return SizePlan("n=1", "bench", {"n": 1}, list(args), LaunchPlan((1, 1, 1), (1, 1, 1)),
                    LaunchPlan((1, 1, 1), (1, 1, 1)))


def test_two_buffers_of_one_saved_file_each_get_their_own_links(tmp_path: Path):
    """Two pointers into one allocation (one saved file): each buffer holds its own part of the
    file, and its links at their places in it; a link to memory the capture did not save gets null."""
    (tmp_path / "f.bin").write_bytes(bytes(128))
    (tmp_path / "f.bin.links").write_text("8 g.bin 0\n72 g.bin 4\n80 - 0\n")
    (tmp_path / "g.bin").write_bytes(bytes(16))
    head = ArgPlan("head", "buffer", "uint8", length=128, init=Init("captured"), source=f"0:{tmp_path / 'f.bin'}")
    cur = ArgPlan("cur", "buffer", "uint8", length=64, init=Init("captured"), source=f"64:{tmp_path / 'f.bin'}")
    linked = with_linked_memory(_plan(head, cur))
    got = {a.name: a.links for a in linked.args}
    assert got["head"] == ((8, "head->1", 0), (72, "head->1", 4), (80, "", 0))
    assert got["cur"] == ((8, "head->1", 4), (16, "", 0))  # its own bytes from 64 on
    writes = link_writes(linked.args, {"head": 1000, "cur": 2000, "head->1": 5000})
    assert (1080, 0) in writes and (2016, 0) in writes and (2008, 5004) in writes  # null, never the run's address


def test_typed_memory_is_not_followed(tmp_path: Path):
    (tmp_path / "x.bin").write_bytes(bytes(64))
    (tmp_path / "x.bin.links").write_text("8 y.bin 0\n")  # floats that happen to look like an address
    (tmp_path / "y.bin").write_bytes(bytes(16))
    x = ArgPlan("x", "buffer", "float32", length=16, init=Init("captured"), source=f"0:{tmp_path / 'x.bin'}")
    assert with_linked_memory(_plan(x)).args == [x]


ROWS = """/* @fsr
bench = { n = 64 }
tests = [ { n = 17 } ]
grid = 1
block = 64
[args]
base = "in[n * 4]"
out = "out[8 * n bytes]"
n = "n"
*/
__global__ void rows(const float* base, const float** out, int n)
{
    int i = threadIdx.x;
    if (i < n) out[i] = base + 4 * i;
}
"""

ROWS_BY_INDEX = """__global__ void rows(const float* base, const float** out, int n)
{
    int i = threadIdx.x;
    if (i < n) out[i] = &base[i * 4];
}
"""

ROWS_OFF_BY_ONE = ROWS_BY_INDEX.replace("&base[i * 4]", "&base[i * 4 + 1]")


@needs_cxx
def test_a_table_of_pointers_a_kernel_fills_is_compared_as_buffer_and_byte():
    """A kernel filling a `const float**` table with pointers into its input: the pointers differ
    from run to run with the buffers' addresses, so they are compared as (buffer, byte); a
    rewrite pointing one float further is wrong, one spelling the same pointers otherwise verified."""
    pytest.importorskip("torch")
    assert cuda_on_cpu.evaluate_on_cpu(ROWS, "rows", None).status == "verified"  # deterministic, as compared
    assert cuda_on_cpu.evaluate_on_cpu(ROWS, "rows", ROWS_BY_INDEX).status == "verified"
    wrong = cuda_on_cpu.evaluate_on_cpu(ROWS, "rows", ROWS_OFF_BY_ONE)
    assert wrong.status == "wrong" and "out" in wrong.message, wrong.message


def test_a_model_is_told_what_the_memory_reached_through_pointers_is(tmp_path: Path):
    from fsr_lsp.evaluator.job.captured_buffers import with_captured_sources
    from fsr_lsp.search.prompting import describe_buffers

    folder = tmp_path / ".fsr" / "captures" / "20260101-000000"
    write_linked_capture(tmp_path)
    head = ArgPlan("e", "buffer", "uint8", length=16, direction="inout", init=Init("captured"), pointers=True)
    (plan,), why = with_captured_sources([_plan(head)], {"e": f"0:{folder / 'inputs-7-1-0.bin'}"})
    assert not why
    text = describe_buffers(plan)
    assert "e: inout bytes holding pointers[16]" in text
    assert "e->1: memory reached through e's pointers, 6 bytes, compared after the run" in text


@needs_cxx
def test_a_captured_value_of_another_size_than_this_builds_is_refused(tmp_path: Path):
    """The run's bytes of `p` are 40; a build where `Pair` is another size (a -D, another branch of
    an #if) would read them at other offsets: the layout check stops the build, naming `p`."""
    pytest.importorskip("torch")
    write_nested_capture(tmp_path)
    folder = tmp_path / ".fsr" / "captures" / "20260101-000000"
    (folder / "inputs-7-0-p0.bin").write_bytes((folder / "inputs-7-0-p0.bin").read_bytes() + bytes(8))
    spec = ('/* @fsr\nbench = { captured = 1 }\ngrid = 1\nblock = 64\n[args]\np = "captured()"\n*/\n')
    source = NESTED.replace("__global__", spec + "__global__", 1)
    inputs = {"p": f"0:{folder / 'inputs-7-0-p0.bin'}"}
    result = cuda_on_cpu.evaluate_on_cpu(source, "scale_pair", None, real_inputs=inputs)
    assert result.status == "spec_error" and "fsr lays out `p`" in result.message, result.message
