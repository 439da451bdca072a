"""What verification and timing share: the job's context, verdicts, seeds, inputs, launches."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..job.captured_buffers import read_saved
from ..job.linked_memory import has_links, late_values
from ..records import ArgPlan, EvalJob, EvalResult, Mismatch, SizePlan
from .accuracy import Accuracy
from .buffers import generate, storage_dtype
from .packing import launch_values
from .printed import Printed
from .relocation import relocate
from .session import GpuSession, LoadedKernel
from .textures import TextureError

Report = Callable[[str], None]


class Failure(Exception):
    """Ends a job early with a verdict."""

    def __init__(self, status: str, message: str, check: str | None = None, mismatch: Mismatch | None = None,
                 restart: bool = False, argument: str = "") -> None:
        super().__init__(message)
        self.status, self.message, self.check, self.mismatch, self.restart = status, message, check, mismatch, restart
        self.argument = argument


@dataclass
class JobContext:
    session: GpuSession
    job: EvalJob
    original: LoadedKernel
    candidate: LoadedKernel | None
    result: EvalResult
    report: Report
    wide: LoadedKernel | None = None  # the original in double precision (gpu/accuracy.py)
    accuracy: Accuracy = field(default_factory=Accuracy)
    # per size label and float output: the most NaN or inf the original gave on the spec's own
    # inputs (a mask's -inf, say); a range set where it gives more is outside its domain
    nonfinite: dict[str, dict[str, int]] = field(default_factory=dict)
    # what each launch of the last launch_runs printed (device printf; gpu/printed.py)
    printed: list[Printed] = field(default_factory=list)
    printed_compared: int = 0  # runs whose printed lines were compared with the original's

    @property
    def torch(self) -> Any:
        return self.session.torch

    def kernel(self, who: str) -> LoadedKernel:
        kernel = self.original if who == "original" else self.candidate
        assert kernel is not None
        return kernel


def seed_for(job: EvalJob, size_index: int, j: int) -> int:
    """The seed of input set `j` at size `size_index`; indices past the sizes are the timing's.
    The bench size and the timing draw from the job's bench seed where it has one."""
    base = job.base_seed
    if job.bench_seed is not None and (size_index >= len(job.sizes) or job.sizes[size_index].role == "bench"):
        base = job.bench_seed
    return (base + 7919 * size_index + j) % (1 << 62)


def make_inputs(session: GpuSession, plan: SizePlan, seed: int) -> dict[str, Any]:
    """Pristine input buffers (in and inout) for one seed; textures are filled for it in place
    (their handles, the arguments, stay)."""
    gen = session.torch.Generator(device=session.device)
    gen.manual_seed(seed)
    for a in plan.args:
        if a.kind == "texture" and a.texture is not None:
            texels = ArgPlan(a.name, "buffer", a.texture.texel, a.texture.channels, a.texture.texels, init=a.init)
            try:
                a.value = session.textures.filled(a.name, a.texture, generate(session.torch, session.device, texels, gen))
            except TextureError as e:  # the spec asks for a texture this GPU cannot make
                raise Failure("spec_error", f"the texture `{a.name}` at {plan.label} cannot be made: {e}",
                              check="original runs", argument=a.name) from None
    return {a.name: generate(session.torch, session.device, a, gen)
            for a in plan.args if a.kind == "buffer" and a.direction != "out"}


def captured_inputs(session: GpuSession, plan: SizePlan, real: dict[str, str], seed: int) -> tuple[dict[str, Any], str]:
    """The input set a run of the user's program had (`fsr capture --snapshot-bytes`): each
    captured buffer's bytes from its file, the others random. ({}, why) when a file is missing
    or holds fewer bytes than the buffer at this size."""
    torch = session.torch
    inputs = make_inputs(session, plan, seed)
    for arg in plan.args:
        if arg.name not in real or arg.name not in inputs:
            continue
        try:
            data = read_saved(real[arg.name], arg.nbytes)
        except (OSError, ValueError) as e:
            return {}, f"the captured inputs of `{arg.name}` cannot be read ({e}): not checked"
        if len(data) != arg.nbytes:
            return {}, (f"the captured inputs of `{arg.name}` hold {len(data)} bytes, {plan.label} needs {arg.nbytes}: "
                        "not checked")
        values = torch.frombuffer(bytearray(data), dtype=storage_dtype(torch, arg.dtype))
        inputs[arg.name] = values.to(inputs[arg.name].device).reshape(inputs[arg.name].shape)
    return inputs, ""


def outputs(plan: SizePlan) -> list[ArgPlan]:
    return [a for a in plan.args if a.kind == "buffer" and a.direction != "in"]


def inputs_only(plan: SizePlan) -> list[ArgPlan]:
    return [a for a in plan.args if a.kind == "buffer" and a.direction == "in"]


def buffers_of(plan: SizePlan) -> list[ArgPlan]:
    return [a for a in plan.args if a.kind == "buffer"]


def pointer(arg: ArgPlan, address: int, element_bytes: int) -> int:
    """What the kernel gets for a buffer at `address`: the buffer's start, or `offset` elements
    into it (a spec's `in[-3 : n + 3]`); `element_bytes` of one lane as the buffer holds it."""
    return address + arg.offset * arg.lanes * element_bytes


def launch_args(plan_args: list[ArgPlan], tensors: dict[str, Any], placed: dict[str, int] | None = None) -> list[Any]:
    """The kernel's arguments: each buffer's pointer (tensors by name; `placed` gives another
    address for some), scalars and texture handles by value, a struct's members packed into its
    bytes (gpu/packing.py)."""
    placed = placed or {}
    addresses = {a.name: placed.get(a.name, tensors[a.name].data_ptr()) for a in plan_args if a.kind == "buffer"}
    if has_links(plan_args):  # memory holding pointers: the run's structure at these buffers' addresses
        relocate(torch_of(tensors), plan_args, tensors, addresses)
    values = [pointer(a, addresses[a.name], tensors[a.name].element_size()) if a.kind == "buffer" else a.value
              for a in plan_args]
    values = late_values(plan_args, values, addresses)
    return launch_values(plan_args, values)


def torch_of(tensors: dict[str, Any]) -> Any:
    import torch  # the worker's; tensors are torch's

    return torch


def guarded_launch(session: GpuSession, who: str, where: str, launch: Callable[[], None], what: str | None = None,
                   status: str | None = None, check: str | None = None, argument: str = "") -> None:
    """Run a launch and wait for it; a CUDA error becomes a verdict on whoever launched (the
    original's errors are the spec's problem). The context is gone after one: restart."""
    try:
        launch()
        session.synchronize()
    except Exception as e:
        if isinstance(e, session.torch.cuda.OutOfMemoryError):
            raise
        text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        message = what or f"the {who} kernel failed at {where}"
        raise Failure(status or ("crashed" if who == "candidate" else "spec_error"), f"{message}: {text}",
                      check=check or f"{who} runs", restart=True, argument=argument) from None
