"""The start that Optimize and Profile share in the editor: the request refused where the
workspace is not trusted, the file is not on disk or the GPU work cannot run here; the document
as it is now; the kernel found and its spec planned on a thread (a 10 MB file's launches take
seconds to read, and no other request waits for them). A large document's plan starts from what
its own process worked out for hovers (its kernels, the kernel's draft for this version): the
server never reads such a file whole, and a click after a hover plans at once."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from lsprotocol import types

from ..large_documents import probe
from ..server import FsrServer, not_on_disk

if TYPE_CHECKING:
    from ...drafting.origin import Drafter
    from ...drafting.workspace import LaunchIndex
    from ...kernels import Kernel
    from ...settings import Settings
    from ...workflows.optimize import SpecPlan
    from ..document_cache import DocumentState, DraftJob, KnownSpec

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
    uri: str
    version: int | None


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
    return Opened(doc.source, path, ls.workspace_root(path), ls.settings, uri, doc.version)


async def planned(ls: FsrServer, doc: Opened, kernel_name: str, ask: KernelAsk,
                  model_drafter: Callable[[], Drafter] | None = None) -> tuple[Kernel, SpecPlan] | str:
    """The kernel and its planned spec (planned_spec), on a thread; a large document's from its
    own process's work (`large_planned`)."""
    state = _large_state(ls, doc)
    if state is not None:
        return await large_planned(ls, state, doc, kernel_name, ask, model_drafter)
    index, documents, target = ls.drafts.index_for(doc.root), open_documents(ls), ls.instruments.probe

    def plan() -> tuple[Kernel, SpecPlan] | str:
        probe(target, "draft", doc.uri, doc.version, kernel_name)  # tests: where drafts run
        return planned_spec(index, doc.path, doc.text, kernel_name, doc.settings, documents, model_drafter, ask.then)

    return await asyncio.to_thread(slowed(ls.instruments.plan_seconds, plan))


def _large_state(ls: FsrServer, doc: Opened) -> DocumentState | None:
    """The document cache's state of `doc` where it is large and still the version planned."""
    opened = ls.document(doc.uri)
    if opened is None or opened.source is not doc.text:
        return None
    state = ls.cache.state(doc.uri, opened)
    return state if state.large else None


async def large_planned(ls: FsrServer, state: DocumentState, doc: Opened, kernel_name: str, ask: KernelAsk,
                        model_drafter: Callable[[], Drafter] | None = None) -> tuple[Kernel, SpecPlan] | str:
    """A large document's plan: its kernels and the kernel's spec as its process works them out
    for hovers (one draft a version, shared: Optimize after a hover waits for nothing), the
    plan made from that spec."""
    from ...workflows.optimize import plan_for

    found = await ls.cache.discovery(state, ls.encoding)
    kernel = next((k for k in found.kernels if k.name == kernel_name), None)
    if kernel is None:
        return f"no kernel named {kernel_name}"
    known = await known_spec(ls, state, kernel, earlier=False, wait=LARGE_PLAN_SECONDS)
    if known is None:
        return f"{kernel_name}: its spec could not be worked out within {LARGE_PLAN_SECONDS:.0f} s; try again"
    index = ls.drafts.index_for(doc.root)
    return kernel, await asyncio.to_thread(slowed(ls.instruments.plan_seconds, plan_for), known.spec, index, doc.text,
                                           kernel, doc.settings, open_documents(ls), model_drafter, ask.then)


LARGE_PLAN_SECONDS = 600.0  # how long a large document's plan waits for its draft


async def known_spec(ls: FsrServer, state: DocumentState, kernel: Kernel, earlier: bool = True,
                     wait: float | None = None) -> KnownSpec | None:
    """The kernel's spec and where it comes from (its block, a launch anywhere in the workspace,
    its signature), for code actions, hover and a large document's plan, as far as it is known
    now: drafted once per document version on the document cache's thread (a large document's
    in its own process), never on the event loop; None while the first draft is under way
    (after `wait` seconds, by default the cache's); with `earlier`, the one drafted for an
    earlier version while this one's is (document_cache.py)."""
    path = Path(ls.workspace.get_text_document(state.uri).path)
    root = ls.workspace_root(path)
    world = ls.cache.world(ls.workspace.text_documents, root)

    def job() -> DraftJob:  # what the draft reads, taken now
        text, documents = state.text, open_documents(ls)
        include_dirs, flags = ls.settings.include_paths, ls.settings.compiler_flags
        if state.large:  # in the large documents' process (large_documents.py)
            return ls.cache.large.spec((state.uri, state.version), root, path, text, kernel, documents,
                                       include_dirs, flags)
        return lambda: ls.drafts.spec(root, path, text, kernel, documents, include_dirs=include_dirs, flags=flags)

    return await ls.cache.spec(state, kernel, world, job, wait=wait, earlier=earlier)


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
