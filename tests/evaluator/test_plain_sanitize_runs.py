"""The sanitizer child's runs without torch (evaluator/sanitize/plain_runs.py), GPU-free: the
values drawn on the host for each init and element type (bits as the torch path has them),
the allocations, copies and launches against a stand-in for pycuda.driver, the verdicts, which
jobs still go through torch, and a waiting child that never imports torch."""

from __future__ import annotations

import dataclasses
import io
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fsr_lsp.evaluator.gpu.common import Failure, guarded_launch, seed_for
from fsr_lsp.evaluator.gpu.run import SPACER_BYTES
from fsr_lsp.evaluator.records import ArgPlan, EvalJob, KernelBinary, LaunchPlan, SizePlan, TexturePlan
from fsr_lsp.evaluator.sanitize import plain_runs
from fsr_lsp.evaluator.sanitize.plain_runs import (bfloat16_bits, host_values, run_plain, scalar_format, scalar_value,
                                                   why_not_plain)
from fsr_lsp.evaluator.sanitize.sanitizer import accesses_in
from fsr_lsp.evaluator.worker.serde import to_json
from fsr_lsp.specs.model import Init

ROOT = Path(__file__).parent.parent.parent
INTS = ("int32", "uint32", "int64", "uint64", "int16", "uint16", "int8", "uint8", "bool")
ALL = ("float32", "float64", "float16", "bfloat16", *INTS)


def buffer(name: str, dtype: str = "float32", length: int = 1000, direction: str = "in", init: Init | None = None,
           lanes: int = 1, offset: int = 0, source: str = "") -> ArgPlan:
    return ArgPlan(name, "buffer", dtype, lanes=lanes, length=length, direction=direction,  # type: ignore[arg-type]
                   init=init if init is not None or direction == "out" else Init("uniform", 0.0, 1.0),
                   offset=offset, source=source)


def as_float(bits: np.ndarray, dtype: str) -> np.ndarray:
    """A buffer's host contents as the numbers they are."""
    if dtype == "float16":
        return bits.view(np.float16).astype(np.float64)
    if dtype == "bfloat16":
        return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return bits.astype(np.float64)


# ------------------------------------------------------------------ values on the host


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("init", [Init("uniform", 0.5, 3.0), Init("normal", 1.0, 0.5), Init("randint", 0, 7),
                                  Init("fill", 5.0)], ids=lambda i: i.kind)
def test_each_init_gives_every_element_in_its_range_with_the_buffers_bytes(dtype, init):
    arg = buffer("x", dtype, length=257, lanes=4, init=init)
    values = host_values(arg, np.random.default_rng(1))
    assert values.dtype == plain_runs.STORAGE[dtype] and values.shape == (257 * 4,)
    assert values.nbytes == arg.nbytes == len(values.tobytes())
    floats = dtype in ("float32", "float64", "float16", "bfloat16")
    numbers = as_float(values, dtype) if floats else values.astype(np.float64)
    if init.kind == "fill":
        assert (numbers == 5.0).all()
    elif init.kind == "randint":
        assert numbers.min() >= 0 and numbers.max() <= 6 and len(set(numbers.tolist())) == 7
        assert (numbers == np.round(numbers)).all()
    elif init.kind == "uniform":
        assert numbers.min() >= (0.5 if floats else 0) and numbers.max() <= 3.0
        distinct = len(set(numbers.tolist()))
        assert distinct == 3 if not floats else distinct > 50  # integers: truncated, 0, 1 and 2
        assert abs(numbers.mean() - (1.75 if floats else 1.2)) < 0.15
    else:
        assert abs(numbers.mean() - (1.0 if floats else 0.6)) < 0.15
        if floats:
            assert abs(numbers.std() - 0.5) < 0.05


def test_the_same_seed_draws_the_same_values_and_another_seed_others():
    arg = buffer("x", init=Init("normal", 0.0, 1.0))
    a = host_values(arg, np.random.default_rng(7))
    assert (a == host_values(arg, np.random.default_rng(7))).all()
    assert not (a == host_values(arg, np.random.default_rng(8))).all()


def test_unsigned_types_hold_their_bit_patterns():
    top = host_values(buffer("u", "uint32", length=3, init=Init("fill", 4294967295.0)), np.random.default_rng(0))
    assert top.tobytes() == b"\xff" * 12
    high = host_values(buffer("b", "uint8", length=500, init=Init("randint", 200, 256)), np.random.default_rng(0))
    assert high.dtype == np.uint8 and high.min() >= 200 and high.max() == 255
    negative = host_values(buffer("i", "int16", length=4, init=Init("fill", -3.0)), np.random.default_rng(0))
    assert negative.tolist() == [-3] * 4


def test_floats_become_integers_by_truncation_as_torch_converts_them():
    values = host_values(buffer("i", "int32", length=5000, init=Init("uniform", -3.0, 3.0)), np.random.default_rng(3))
    assert values.dtype == np.int32 and set(values.tolist()) == {-2, -1, 0, 1, 2}


def test_16_bit_floats_are_stored_as_their_bits():
    half = host_values(buffer("h", "float16", length=2, init=Init("fill", 0.1)), np.random.default_rng(0))
    assert half.dtype == np.uint16 and half.tolist() == [0x2E66] * 2  # half(0.1)
    bf = host_values(buffer("b", "bfloat16", length=2, init=Init("fill", 0.1)), np.random.default_rng(0))
    assert bf.dtype == np.uint16 and bf.tolist() == [0x3DCD] * 2  # 0x3DCCCCCD rounded up, not truncated to 0x3DCC
    assert host_values(buffer("b", "bfloat16", length=1, init=Init("fill", -2.0)),
                       np.random.default_rng(0)).tolist() == [0xC000]


def test_bfloat16_bits_round_to_nearest_even_with_nan_as_torch_has_it():
    f = np.array([1.0, -1.5, 0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, 3.4e38,
                  np.float32(1.0) + np.float32(2 ** -8),  # a tie, to even: stays 1.0
                  np.float32(1.0) + np.float32(3 * 2 ** -8)], dtype=np.float32)  # a tie, to even: up
    bits = bfloat16_bits(f).tolist()
    assert bits[:6] == [0x3F80, 0xBFC0, 0x0000, 0x8000, 0x7F80, 0xFF80]
    assert bits[6] == 0x7FC0 and bits[9] == 0x3F80 and bits[10] == 0x3F82


def test_captured_bytes_come_from_the_file_at_its_offset(tmp_path):
    path = tmp_path / "saved.bin"
    payload = np.arange(10, dtype=np.uint32) * np.uint32(0x01010101)
    path.write_bytes(b"HEADER" + payload.tobytes())
    arg = buffer("offsets", "uint32", length=8, init=Init("captured"), source=f"6:{path}")
    got = host_values(arg, np.random.default_rng(0))
    assert got.dtype == np.uint32 and got.tobytes() == payload[:8].tobytes()
    short = buffer("offsets", "uint32", length=20, init=Init("captured"), source=f"6:{path}")
    with pytest.raises(OSError, match="holds 40 bytes, 80 needed"):
        host_values(short, np.random.default_rng(0))


def test_a_domain_narrows_float_inputs_where_the_spec_gives_one():
    init = Init("normal", 0.0, 10.0)
    if not hasattr(init, "domain"):
        pytest.skip("this tree's Init has no domain")
    narrowed = dataclasses.replace(init, domain=(-1.0, 2.0))
    values = host_values(buffer("x", init=narrowed, length=5000), np.random.default_rng(0))
    assert values.min() == -1.0 and values.max() == 2.0


# ------------------------------------------------------------------ the same bits as the torch path


def test_deterministic_inits_give_the_torch_paths_bytes(tmp_path):
    torch = pytest.importorskip("torch")
    from fsr_lsp.evaluator.gpu.buffers import generate

    path = tmp_path / "saved.bin"
    path.write_bytes(bytes(range(256)) * 4)
    gen = torch.Generator()
    for dtype in ALL:
        for init, source in ((Init("fill", 3.0), ""), (Init("fill", 0.1), ""), (Init("fill", -1.0), ""),
                             (Init("captured"), f"16:{path}")):
            if init.lo == 0.1 and dtype not in ("float32", "float64", "float16", "bfloat16"):
                continue
            arg = buffer("x", dtype, length=24, lanes=2, init=init, source=source)
            theirs = generate(torch, "cpu", arg, gen)
            ours = host_values(arg, np.random.default_rng(0))
            assert ours.tobytes() == theirs.view(torch.uint8).numpy().tobytes(), (dtype, init)


def test_randint_as_floats_and_wrapped_unsigned_bits_match_torchs_conversions():
    torch = pytest.importorskip("torch")
    from fsr_lsp.evaluator.gpu.buffers import storage_dtype

    ints = np.array([0, 1, 255, 256, 65535, 65536, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 12345678, -5], dtype=np.int64)
    for dtype in ALL:
        ours = plain_runs.stored(ints, dtype)
        theirs = torch.from_numpy(ints).to(storage_dtype(torch, dtype))
        assert ours.tobytes() == theirs.view(torch.uint8).numpy().tobytes(), dtype
    floats = np.random.default_rng(0).standard_normal(4096, dtype=np.float32) * np.float32(300)
    for dtype in ("float16", "bfloat16", "float64", "int32", "int16", "int64"):
        ours = plain_runs.stored(floats, dtype)
        theirs = torch.from_numpy(floats).to(storage_dtype(torch, dtype))
        assert ours.tobytes() == theirs.view(torch.uint8).numpy().tobytes(), dtype


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "int32", "uint32", "int64",
                                   "uint64", "int16", "uint16", "int8", "uint8", "bool"])
def test_scalars_have_the_torch_sessions_bits_and_formats(dtype):
    torch = pytest.importorskip("torch")
    from fsr_lsp.evaluator.gpu.session import _scalar_bits

    values = [0.1, 1.5, -2.75, 65504.0, 1e-8, 3.0e38, 0.333333333333] if dtype.startswith(("float", "bfloat")) \
        else [0, 1, 7, 100, 127]
    for v in values:
        if dtype == "float16" and abs(v) > 65504:
            continue
        ours, theirs = scalar_value(v, dtype), _scalar_bits(torch, v, dtype)
        assert ours == theirs and type(ours) is type(theirs), (dtype, v, ours, theirs)
    assert scalar_value(0x7F0000001000, None) == 0x7F0000001000


def test_the_argument_format_is_the_torch_sessions():
    assert scalar_format([None, "int32", "float16", "bfloat16", "uint64", None, "float32"]) == "PiHHQPf"


# ------------------------------------------------------------------ a stand-in for pycuda.driver


class FakeAllocation:
    def __init__(self, driver: "FakeDriver", address: int, nbytes: int) -> None:
        self.driver, self.address, self.nbytes = driver, address, nbytes

    def __int__(self) -> int:
        return self.address

    def free(self) -> None:
        self.driver.calls.append(("free", self.address))


class FakeFunction:
    def __init__(self, driver: "FakeDriver", entry: str) -> None:
        self.driver, self.entry = driver, entry

    def prepare(self, fmt: str) -> None:
        self.driver.calls.append(("prepare", self.entry, fmt))

    def set_attribute(self, attribute: str, value: int) -> None:
        self.driver.calls.append(("set_attribute", attribute, value))

    def prepared_async_call(self, grid, block, stream, *args, shared_size=0) -> None:
        self.driver.calls.append(("launch", grid, block, stream, list(args), shared_size))


class FakeModule:
    def __init__(self, driver: "FakeDriver") -> None:
        self.driver = driver

    def get_function(self, entry: str) -> FakeFunction:
        if entry not in self.driver.entries:
            raise self.driver.LogicError("cuModuleGetFunction failed: named symbol not found")
        return FakeFunction(self.driver, entry)


class FakeLinker:
    def __init__(self, driver: "FakeDriver") -> None:
        self.driver = driver

    def add_data(self, data: bytes, kind: str, name: str) -> None:
        self.driver.calls.append(("link data", data, kind, name))

    def add_file(self, path: str, kind: str) -> None:
        self.driver.calls.append(("link file", path, kind))

    def link_module(self) -> FakeModule:
        self.driver.calls.append(("link",))
        return FakeModule(self.driver)


class FakeDriver:
    """Records what a run asks of pycuda.driver; allocations 256-byte aligned, apart."""

    class MemoryError(Exception):
        pass

    class LogicError(Exception):
        pass

    class LaunchError(Exception):
        pass

    class function_attribute:
        MAX_DYNAMIC_SHARED_SIZE_BYTES = "MAX_DYNAMIC_SHARED_SIZE_BYTES"

    class jit_input_type:
        CUBIN = "CUBIN"
        LIBRARY = "LIBRARY"

    def __init__(self, entries: tuple[str, ...] = ("vadd",), memory: int = 1 << 40, fail_launch: int | None = None):
        self.calls: list[tuple[Any, ...]] = []
        self.entries = entries
        self.memory = memory
        self.fail_launch = fail_launch  # the launch (0, 1, ...) whose synchronize reports an error
        self.next_address = 0x7F0000000000
        driver = self

        class Context:
            @staticmethod
            def synchronize() -> None:
                launches = sum(1 for c in driver.calls if c[0] in ("launch", "cooperative launch"))
                driver.calls.append(("synchronize",))
                if driver.fail_launch is not None and launches == driver.fail_launch + 1:
                    raise driver.LaunchError("cuCtxSynchronize failed: an illegal memory access was encountered")

            @staticmethod
            def pop() -> None:
                driver.calls.append(("pop",))

        self.Context = Context

    def init(self) -> None:
        self.calls.append(("init",))

    def Device(self, index: int) -> Any:
        driver = self

        class Primary:
            def push(self) -> None:
                driver.calls.append(("push", index))

            def detach(self) -> None:
                driver.calls.append(("detach",))

        class Device:
            def retain_primary_context(self) -> Primary:
                return Primary()

        return Device()

    def mem_alloc(self, nbytes: int) -> FakeAllocation:
        if nbytes <= 0:
            raise self.LogicError("cuMemAlloc failed: invalid argument")
        if nbytes > self.memory:
            raise self.MemoryError("cuMemAlloc failed: out of memory")
        self.memory -= nbytes
        allocation = FakeAllocation(self, self.next_address, nbytes)
        self.next_address += (nbytes + 255) // 256 * 256 + 512
        self.calls.append(("alloc", allocation.address, nbytes))
        return allocation

    def memcpy_htod(self, dest: Any, src: np.ndarray) -> None:
        self.calls.append(("htod", int(dest), np.ascontiguousarray(src).tobytes()))

    def module_from_buffer(self, cubin: bytes) -> FakeModule:
        self.calls.append(("load", cubin))
        if cubin == b"broken":
            raise self.LogicError("cuModuleLoadDataEx failed: device kernel image is invalid")
        return FakeModule(self)

    def Linker(self) -> FakeLinker:
        return FakeLinker(self)

    def named(self, kind: str) -> list[tuple[Any, ...]]:
        return [c for c in self.calls if c[0] == kind]


def vadd_job(**changes: Any) -> EvalJob:
    """vadd's job at two sizes: n, a (in), b (in, a halo of 3 before the pointer), c (out)."""
    binary = KernelBinary(cubin=b"original cubin", entry="vadd", compiler="nvcc", arch="sm_90a")
    candidate = KernelBinary(cubin=b"candidate cubin", entry="vadd", compiler="nvcc", arch="sm_90a")

    def plan(n: int) -> SizePlan:
        args = [ArgPlan("n", "scalar", "int32", value=n),
                buffer("a", length=n),
                buffer("b", length=n + 6, offset=3, init=Init("uniform", -2.0, 2.0)),
                buffer("c", length=n, direction="out"),
                ArgPlan("alpha", "scalar", "float16", value=0.5)]
        blocks = (n + 255) // 256
        return SizePlan(f"n={n}", "test", {"n": n}, args, original=LaunchPlan((blocks, 1, 1), (256, 1, 1)),
                        candidate=LaunchPlan((blocks, 1, 1), (128, 1, 1), smem=64 * 1024))

    job = EvalJob(kernel="vadd", original=binary, candidate=candidate, sizes=[plan(1), plan(1000)], mode="sanitize",
                  seeds_per_size=1, base_seed=11)
    return dataclasses.replace(job, **changes)


def run(job: EvalJob, driver: FakeDriver, **kwargs: Any) -> tuple[Any, str]:
    out = io.StringIO()
    result = run_plain(job, 0, driver=driver, out=out, **kwargs)
    return result, out.getvalue()


def test_every_buffer_is_its_own_exact_allocation_between_spacers_freed_before_any_launch():
    driver = FakeDriver()
    result, printed = run(vadd_job(), driver)
    assert (result.status, result.message) == ("verified", plain_runs.MESSAGE)
    allocs = [(c[1], c[2]) for c in driver.named("alloc")]
    # per size: a spacer before each buffer (a, b, c), then one after the last buffer of all
    sizes = [n for _, n in allocs]
    assert sizes == [SPACER_BYTES, 4, SPACER_BYTES, 28, SPACER_BYTES, 4,
                     SPACER_BYTES, 4000, SPACER_BYTES, 4024, SPACER_BYTES, 4000, SPACER_BYTES]
    spacers = {a for a, n in allocs if n == SPACER_BYTES}
    buffers = [a for a, n in allocs if n != SPACER_BYTES]
    first_launch = next(i for i, c in enumerate(driver.calls) if c[0] == "launch")
    freed_before = {c[1] for c in driver.calls[:first_launch] if c[0] == "free"}
    assert freed_before == spacers  # every spacer freed, no buffer, before the first launch
    last_launch = max(i for i, c in enumerate(driver.calls) if c[0] == "launch")
    assert not any(c[0] == "free" and c[1] in buffers for c in driver.calls[:last_launch])
    assert {c[1] for c in driver.calls[last_launch:] if c[0] == "free"} == set(buffers)  # given back at the end
    assert driver.calls[-2:] == [("pop",), ("detach",)]
    # the map the parent reads, one line per buffer, as sanitizer.py parses it
    lines = [ln for ln in printed.splitlines() if ln.startswith("fsr-buffer")]
    assert lines == [f"fsr-buffer {name} {label} {address:#x} {nbytes}" for (name, label), (address, nbytes) in
                     zip([("a", "n=1"), ("b", "n=1"), ("c", "n=1"), ("a", "n=1000"), ("b", "n=1000"),
                          ("c", "n=1000")], [(a, n) for a, n in allocs if n != SPACER_BYTES])]
    past_b = buffers[4] + 4024
    placed = accesses_in(printed + "Invalid __global__ read of size 4 bytes\n"
                         f"Address {past_b:#x} is out of bounds\n")
    assert [(a.buffer, a.size, a.side, a.bytes) for a in placed] == [("b", "n=1000", "past the end", 4)]


def test_inputs_are_copied_in_from_the_seed_and_outputs_left_unwritten():
    driver = FakeDriver()
    job = vadd_job()
    run(job, driver)
    copies = {c[1]: c[2] for c in driver.named("htod")}
    buffers = [c[1] for c in driver.named("alloc") if c[2] != SPACER_BYTES]
    a1, b1, c1, a2, b2, c2 = buffers
    assert set(copies) == {a1, b1, a2, b2}  # c, an `out` buffer, is never written: initcheck sees a read of it
    for index, (a_address, b_address) in enumerate(((a1, b1), (a2, b2))):
        rng = np.random.default_rng(seed_for(job, index, 0))
        args = job.sizes[index].args
        assert copies[a_address] == host_values(args[1], rng).tobytes()  # drawn in argument order
        assert copies[b_address] == host_values(args[2], rng).tobytes()
        assert len(copies[b_address]) == args[2].nbytes


def test_launches_pass_pointers_with_offsets_and_scalars_as_the_torch_session_does():
    driver = FakeDriver()
    run(vadd_job(), driver)
    assert driver.named("prepare") == [("prepare", "vadd", "iPPPH")]
    assert driver.named("load") == [("load", b"candidate cubin")]  # the one kernel checked, nothing else
    a1, b1, c1, a2, b2, c2 = [c[1] for c in driver.named("alloc") if c[2] != SPACER_BYTES]
    launches = driver.named("launch")
    assert launches == [
        ("launch", (1, 1, 1), (128, 1, 1), None, [1, a1, b1 + 3 * 4, c1, 0x3800], 64 * 1024),
        ("launch", (4, 1, 1), (128, 1, 1), None, [1000, a2, b2 + 3 * 4, c2, 0x3800], 64 * 1024)]
    # over 48 KiB of dynamic shared memory: allowed first, before each launch
    assert driver.named("set_attribute") == [("set_attribute", "MAX_DYNAMIC_SHARED_SIZE_BYTES", 64 * 1024)] * 2
    # each launch waited for before the next
    kinds = [c[0] for c in driver.calls if c[0] in ("launch", "synchronize")]
    assert kinds[-4:] == ["launch", "synchronize", "launch", "synchronize"]


def test_the_original_runs_with_its_own_launch_when_asked_for():
    driver = FakeDriver()
    run(vadd_job(sanitize_original=True), driver)
    assert driver.named("load") == [("load", b"original cubin")]
    assert [(c[1], c[2], c[5]) for c in driver.named("launch")] == [((1, 1, 1), (256, 1, 1), 0),
                                                                     ((4, 1, 1), (256, 1, 1), 0)]
    assert not driver.named("set_attribute")  # 0 bytes of dynamic shared memory: nothing to allow


def test_lanes_multiply_the_length_and_an_empty_buffer_is_null():
    driver = FakeDriver()
    job = vadd_job()
    plan = job.sizes[0]
    plan.args[1] = buffer("a", length=5, lanes=4)  # a float4 buffer of 5: 80 bytes
    plan.args[3] = buffer("c", length=0, direction="out")
    _, printed = run(job, driver)
    assert ("fsr-buffer a n=1 " in printed) and printed.splitlines()[0].endswith(" 80")
    assert "fsr-buffer c n=1 0x0 0" in printed
    assert driver.named("launch")[0][4][3] == 0


def test_relocatable_code_is_linked_with_the_device_runtime(monkeypatch, tmp_path):
    runtime = tmp_path / "libcudadevrt.a"
    monkeypatch.setattr(plain_runs, "device_runtime", lambda nvcc: runtime)
    driver = FakeDriver()
    job = vadd_job()
    job.candidate = dataclasses.replace(job.candidate, flags=("-rdc=true",))
    result, _ = run(job, driver)
    assert result.status == "verified"
    assert [c for c in driver.calls if c[0].startswith("link")] == [
        ("link data", b"candidate cubin", "CUBIN", "kernel.cubin"), ("link file", str(runtime), "LIBRARY"), ("link",)]
    assert not driver.named("load")


def test_a_cooperative_kernel_is_launched_through_its_own_loader():
    made = []

    class Cooperative:
        def __init__(self, cubin: bytes, entry: str) -> None:
            made.append((cubin, entry))

        def launch(self, grid, block, smem, values, dtypes) -> None:
            driver.calls.append(("cooperative launch", grid, block, smem, values, dtypes))

    driver = FakeDriver()
    job = vadd_job()
    job.candidate = dataclasses.replace(job.candidate, cooperative=True)
    result, _ = run(job, driver, cooperative=Cooperative)
    assert result.status == "verified" and made == [(b"candidate cubin", "vadd")]
    assert not driver.named("load") and not driver.named("launch")
    (first, second) = driver.named("cooperative launch")
    assert first[1:4] == ((1, 1, 1), (128, 1, 1), 64 * 1024) and first[5] == ["int32", None, None, None, "float16"]
    assert first[4][0] == 1 and first[4][4] == 0x3800 and second[4][0] == 1000


@pytest.mark.parametrize("who, status", [("candidate", "crashed"), ("original", "spec_error")])
def test_a_cuda_error_is_the_torch_paths_verdict(who, status):
    driver = FakeDriver(fail_launch=1)
    result, _ = run(vadd_job(sanitize_original=who == "original"), driver)
    assert result.status == status
    assert result.message == f"the {who} kernel failed at n=1000: cuCtxSynchronize failed: an illegal memory access " \
                             "was encountered"
    torch = pytest.importorskip("torch")

    class Session:  # what guarded_launch asks of the worker's session
        def __init__(self) -> None:
            self.torch = torch

        def synchronize(self) -> None:
            raise driver.LaunchError("cuCtxSynchronize failed: an illegal memory access was encountered")

    with pytest.raises(Failure) as caught:
        guarded_launch(Session(), who, "n=1000", lambda: None)  # the torch path, same error
    assert (caught.value.status, caught.value.message) == (result.status, result.message)


def test_a_kernel_the_driver_will_not_load_and_memory_that_runs_out_are_verdicts():
    driver = FakeDriver()
    job = vadd_job()
    job.candidate = dataclasses.replace(job.candidate, cubin=b"broken")
    result, _ = run(job, driver)
    assert result.status == "crashed" and result.message.startswith("the candidate kernel does not load: cuModuleLoad")
    assert driver.calls[-2:] == [("pop",), ("detach",)]
    short, _ = run(vadd_job(), FakeDriver(memory=100_000))
    assert short.status == "oom" and short.message == "out of GPU memory: cuMemAlloc failed: out of memory"


def test_without_pycuda_the_run_says_unavailable(monkeypatch):
    monkeypatch.setitem(sys.modules, "pycuda", None)
    monkeypatch.setitem(sys.modules, "pycuda.driver", None)
    result = run_plain(vadd_job(), 0, out=io.StringIO())
    assert result.status == "unavailable" and "pycuda is not installed" in result.message


# ------------------------------------------------------------------ which jobs go through torch


def texture_job() -> EvalJob:
    job = vadd_job()
    texture = ArgPlan("tex", "texture", "uint64", init=Init("uniform", 0.0, 1.0),
                      texture=TexturePlan((16, 16), "float32"))
    job.sizes[1].args.append(texture)
    return job


def test_a_texture_argument_sends_the_job_through_torch_and_nothing_else_here_does():
    assert why_not_plain(vadd_job()) == ""
    assert why_not_plain(texture_job()) == "`tex` is a texture"
    assert why_not_plain(vadd_job(mode="full")) == "a full-mode job"
    big = vadd_job()
    big.sizes[1].args[1] = buffer("a", length=(plain_runs.HOST_MAX_BYTES >> 2) + 1)
    assert "inputs: drawn faster on the GPU" in why_not_plain(big)
    huge_output = vadd_job()
    huge_output.sizes[1].args[3] = buffer("c", length=plain_runs.HOST_MAX_BYTES, direction="out")
    assert why_not_plain(huge_output) == ""  # outputs are never drawn
    assert why_not_plain(vadd_job(), through_torch=True) == "the child was asked to run every job through torch"


def _imported(stderr: str) -> set[str]:
    """Top-level modules named by `python -X importtime`."""
    return {line.rsplit("|", 1)[1].strip().split(".")[0] for line in stderr.splitlines()
            if line.startswith("import time:") and "|" in line}


def _waiting_child(tmp_path: Path, job: EvalJob, *flags: str) -> tuple[int, str, set[str]]:
    """The child as Prewarm starts it (--wait), then handed `job`; its exit, its stdout and the
    modules it imported."""
    folder = tmp_path / "child"
    folder.mkdir()
    proc = subprocess.Popen([sys.executable, "-X", "importtime", "-m", "fsr_lsp.evaluator.sanitize.sanitize_main",
                             "--wait", str(folder), "0", *flags], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)
    (folder / "job.json").write_text(to_json(job))
    (folder / "go").touch()
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, _imported(err)


def test_a_waiting_child_never_imports_torch_for_a_job_without_textures(tmp_path):
    code, out, modules = _waiting_child(tmp_path, vadd_job())
    assert "torch" not in modules, sorted(modules)
    assert "numpy" in modules
    verdict = out.strip().splitlines()[-1]
    # no GPU here: pycuda missing, or no driver, or a cubin that is no cubin; never a clean run
    assert verdict.startswith("fsr sanitize run: ") and code == 1, out
    assert "through torch" not in out


def test_a_child_asked_to_runs_every_job_through_torch(tmp_path):
    """`Prewarm(through_torch=True)`, for comparing the two paths: the flag reaches the child on
    its command line and the job goes through torch."""
    pytest.importorskip("torch")
    from fsr_lsp.evaluator.sanitize.sanitize_main import waiting_child_command

    flag = waiting_child_command(tmp_path, 0, through_torch=True)[-1]
    code, out, modules = _waiting_child(tmp_path, vadd_job(), flag)
    assert "fsr sanitize run through torch: the child was asked to run every job through torch" in out
    assert "torch" in modules and code != 0


def test_a_texture_job_imports_torch_when_it_comes(tmp_path):
    pytest.importorskip("torch")
    code, out, modules = _waiting_child(tmp_path, texture_job())
    assert "fsr sanitize run through torch: `tex` is a texture" in out
    assert "torch" in modules and code != 0


def test_preload_loads_the_runner_and_not_torch():
    script = ("import sys; from fsr_lsp.evaluator.sanitize.sanitize_main import preload; preload(); "
              "import json; print(json.dumps(['torch' in sys.modules, "
              "'fsr_lsp.evaluator.sanitize.plain_runs' in sys.modules, 'numpy' in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [False, True, True], done.stderr
