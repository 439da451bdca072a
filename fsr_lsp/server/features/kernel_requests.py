"""The start that Optimize and Profile share in the editor: the request refused where the
workspace is not trusted, the file is not on disk or the GPU work cannot run here; the document
as it is now; the kernel found and its spec planned on a thread (a 10 MB file's launches take
seconds to read, and no other request waits for them)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from lsprotocol import types

from ..server import FsrServer, not_on_disk

if TYPE_CHECKING:
    from ...drafting.origin import Drafter
    from ...drafting.workspace import LaunchIndex
    from ...kernels import Kernel
    from ...settings import Settings
    from ...workflows.optimize import SpecPlan

T = TypeVar("T")


@dataclass(frozen=True)
class KernelAsk:
    """A request on one kernel: the action's name (the trust prompt, messages), what its GPU work
    is called where it cannot run, the word for what follows the spec's planning, and whether a
    test double stands in for that work."""

    action: str  # "Optimize", "Profile"
    needs: str  # "searches need", "profiling needs"
    then: str  # "searching", "profiling"
    stand_in: bool = False


@dataclass(frozen=True)
class Opened:
    """The document as it was when the request came: its text, path, workspace and the settings."""

    text: str
    path: Path
    root: Path
    settings: Settings


def refused(ls: FsrServer, uri: str, ask: KernelAsk) -> str:
    """Why the request cannot start, said to the user; '' where it can."""
    why = ls.trust.refusal(ask.action)  # the request runs the workspace's kernel
    if why:
        ls.show(why, types.MessageType.Warning)
        return why
    why = not_on_disk(uri)
    if why:
        ls.show(why)
        return why
    why = "" if ask.stand_in else ls.gpu.unavailable(ls.settings, ask.needs)
    if why:
        ls.show_once(why)
    return why


def opened(ls: FsrServer, uri: str) -> Opened | str:
    """The document as it is now, or why there is none."""
    doc = ls.document(uri)
    if doc is None:
        return f"{uri} is not open in the editor"
    path = Path(doc.path)
    return Opened(doc.source, path, ls.workspace_root(path), ls.settings)


async def planned(ls: FsrServer, doc: Opened, kernel_name: str, ask: KernelAsk,
                  model_drafter: Callable[[], Drafter] | None = None) -> tuple[Kernel, SpecPlan] | str:
    """The kernel and its planned spec (planned_spec), on a thread."""
    return await asyncio.to_thread(slowed(ls.instruments.plan_seconds, planned_spec), ls.drafts.index_for(doc.root),
                                   doc.path, doc.text, kernel_name, doc.settings, open_documents(ls), model_drafter,
                                   ask.then)


def open_documents(ls: FsrServer) -> dict[Path, str]:
    return {Path(d.path): d.source for d in ls.workspace.text_documents.values()}


def slowed(seconds: float, work: Callable[..., T]) -> Callable[..., T]:
    """`work`, made to take `seconds` more where it runs (tests: Instruments.plan_seconds)."""
    if not seconds:
        return work

    def slow(*args: Any, **kwargs: Any) -> T:
        time.sleep(seconds)
        return work(*args, **kwargs)
    return slow


def planned_spec(index: LaunchIndex, path: Path, text: str, kernel_name: str, settings: Settings,
                 documents: dict[Path, str], model_drafter: Callable[[], Drafter] | None = None,
                 then: str = "searching") -> tuple[Kernel, SpecPlan] | str:
    """The kernel named in `text` and the spec Optimize or Profile will use for it
    (`plan_spec`), or why there is none: blocking, for a thread (a 10 MB file's kernels and
    launches take seconds)."""
    from ...kernels import find_kernel
    from ...workflows.optimize import plan_spec

    kernel = find_kernel(text, kernel_name)
    if kernel is None:
        return f"no kernel named {kernel_name}"
    return kernel, plan_spec(index, path, text, kernel, settings, documents, model_drafter=model_drafter, then=then)
