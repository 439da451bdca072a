"""What hover, code actions and diagnostics read of an open document, worked out once per
(document, version), and specs drafted on a thread of their own.

Why: each request used to work everything out again: the file's kernels, the kernel's spec
(drafted from launches anywhere in the workspace), the launches of every open document. On
real files under a flood of edits that cost tens of milliseconds a request, and drafting the
spec of a kernel in a 10 MB file held the event loop for five seconds, during which no
document got an answer.

Here a document's text, its kernels and its kernels' specs are kept for the version the
client last sent; an edit makes the next request work them out for the new text. Drafting
never runs on the event loop, nor on pygls's thread pool (its stdin reader shares it): a
request that finds no spec for a kernel asks this module's drafting thread for one and waits a
moment (on a small document a draft usually takes a few milliseconds); if it is not done, the
answer says what is known and the draft is there for the next request. LSP has no way to
refresh a hover, and no diagnostic depends on a draft, so nothing is sent when one lands.

A spec depends on more than its own document: launches in other documents and in files on
disk, the workspace's latest capture, the settings. Those are summed up in a stamp (`world`);
a spec drafted for an older version or stamp is still shown (it is what is known) while it is
drafted again (for other documents' changes at most once a second: a flood of edits elsewhere
costs no draft a request). A kernel is known by its name and definition: after an edit
elsewhere in the file the hover shows its last spec, saying so, until the new one is drafted;
code actions offer only a draft of the text as it is.

On a large document the kernel under the cursor is found in a window of the file, on a thread;
whole-file work (its kernels for its diagnostics, its kernels' drafts) is done in a process of
its own (large_documents.py), where holding the GIL stalls no request."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Union

from ..source import Position, SourceText
from .large_documents import LargeDocuments, probe

if TYPE_CHECKING:
    from lsprotocol import types

    from ..drafting.origin import KernelSpec
    from ..kernels import Discovery, Kernel

log = logging.getLogger("fsr_lsp")

GRACE_SECONDS = 0.1  # how long a request on a small document waits for a kernel's first draft
AFTER_ANSWER_SECONDS = 0.01  # a draft of what is shown already starts this long after the answer
RECHECK_SECONDS = 1.0  # a spec is drafted again for other documents' changes at most this often
SpecKey = tuple[str, str]  # a kernel's name and definition text
# a draft, with everything it reads taken on the event loop: run on the drafting thread, or a
# future of one already under way elsewhere (a large document's, in its process)
DraftJob = Union[Callable[[], "KernelSpec"], Future]


@dataclass
class Drafted:
    spec: KernelSpec
    version: int | None
    world: int
    at: float  # when its draft was asked for (what it read was taken then)


@dataclass(frozen=True)
class KnownSpec:
    spec: KernelSpec
    current: bool  # drafted for this version of the document (else for an earlier one, drafted again now)


@dataclass
class Pending:
    version: int | None
    world: int
    future: Future


@dataclass(eq=False)
class Specs:
    """A document's kernels' specs, kept across its versions (each with the version and stamp
    it was drafted for), and the drafts under way."""

    drafted: dict[SpecKey, Drafted] = field(default_factory=dict)
    drafting: dict[SpecKey, Pending] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass(eq=False)
class DocumentState:
    """One version of an open document and what was worked out for it. A new version is a new
    object: a thread working on this one never sees another version's text."""

    uri: str
    version: int | None
    text: str
    specs: Specs = field(default_factory=Specs)
    large: bool = False  # over LARGE_BYTES: whole-file work is never done on the event loop
    probe: str = ""  # tests: told of each discovery (Instruments.probe)
    _src: SourceText | None = None
    _discovery: Discovery | None = None
    _found: list[Kernel] = field(default_factory=list)  # large documents: kernels found in windows
    _discovering: Future | None = None  # large documents: their kernels being worked out in their process
    spec_problems: list[types.Diagnostic] | None = None  # large documents: from the same process as their kernels
    _discovering_here: threading.Lock = field(default_factory=threading.Lock)  # one discovery, on the loop or beside it

    def __post_init__(self) -> None:
        from ..kernels.discover import LARGE_BYTES

        text = self.text
        self.large = len(text) > LARGE_BYTES or (len(text) > LARGE_BYTES // 4
                                                 and len(text.encode("utf-8", errors="replace")) > LARGE_BYTES)

    @property
    def src(self) -> SourceText:
        src = self._src
        if src is None:
            src = self._src = SourceText.of(self.text)
        return src

    @property
    def discovered(self) -> bool:
        """Whether this version's kernels are known (all of them, not a window's)."""
        return self._discovery is not None

    def discovery(self) -> Discovery:
        """Every kernel of this version (once; for a large document, never on the event loop)."""
        found = self._discovery
        if found is None:
            from ..kernels import discover

            with self._discovering_here:  # the publisher's thread and a hover: the second waits for the first
                found = self._discovery
                if found is None:
                    found = self._discovery = discover(self.src)
                    probe(self.probe, "discover", self.uri, self.version)
        return found

    def known_kernel_at(self, byte: int) -> Kernel | None | bool:
        """The kernel at `byte` if this version's kernels say so without new work; False when
        they cannot (a large document's window not read yet)."""
        kernels = self._discovery.kernels if self._discovery is not None else self._found if self.large else None
        if kernels is None:
            return False
        hit = next((k for k in kernels if k.span.start_byte <= byte <= k.span.end_byte), None)
        return hit if hit is not None or self._discovery is not None else False

    def kernel_at(self, byte: int) -> Kernel | None:
        known = self.known_kernel_at(byte)
        if known is not False:
            return known  # type: ignore[return-value]
        if not self.large:
            return next((k for k in self.discovery().kernels if k.span.start_byte <= byte <= k.span.end_byte), None)
        from ..kernels import kernel_at

        kernel = kernel_at(self.src, byte)
        if kernel is not None:
            self._found.append(kernel)
        return kernel


DISCOVER_AFTER = 0.3  # seconds of no edits to a document (a pause in typing) before its new version's kernels are found


class DocumentCache:
    def __init__(self, probe: str = "") -> None:
        """`probe`: tests' "module:function" told of each discovery and draft (Instruments.probe)."""
        self.probe = probe
        self._states: dict[str, DocumentState] = {}
        self._drafts = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fsr-draft")
        self._lookups = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fsr-lookup")
        self._discoveries = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fsr-discover")
        self._timers: dict[str, asyncio.TimerHandle] = {}  # uri -> its discovery once its edits pause
        self._world = 0
        self._seen: dict[str, tuple[int | None, bool]] = {}  # uri -> (version, has launches) when last looked
        self._capture_stamp: int | None = None
        self.large = LargeDocuments(probe)
        self.closed = False  # shut down: drafts cut short are not errors

    # ------------------------------------------------------------ documents

    def state(self, uri: str, doc: Any) -> DocumentState:
        """The document's state for the version the client sent last (`doc`: pygls's document)."""
        state = self._states.get(uri)
        if state is None or state.version != doc.version or state.text is not doc.source:
            state = self._states[uri] = DocumentState(uri, doc.version, doc.source,
                                                      state.specs if state is not None else Specs(), probe=self.probe)
        return state

    def discover_soon(self, uri: str, current: Callable[[], Any]) -> None:
        """A small document's kernels for its latest version (`current()`: pygls's document, None
        once closed), found on a thread of their own once its edits pause for DISCOVER_AFTER:
        the hover that follows finds them, where a discovery on the loop held it up to 12 ms
        (bench/real_documents.py's flood)."""
        self._cancel_timer(uri)

        def due() -> None:
            self._timers.pop(uri, None)
            doc = current()
            if doc is None or self.closed:
                return
            state = self.state(uri, doc)
            if not state.large and not state.discovered:
                self._discoveries.submit(_discovered, state)

        self._timers[uri] = asyncio.get_running_loop().call_later(DISCOVER_AFTER, due)

    def _cancel_timer(self, uri: str) -> None:
        timer = self._timers.pop(uri, None)
        if timer is not None:
            timer.cancel()

    def forget(self, uri: str) -> None:
        """The document was closed."""
        self._cancel_timer(uri)
        state = self._states.pop(uri, None)
        if state is not None:
            for pending in state.specs.drafting.values():
                pending.future.cancel()

    def current(self, state: DocumentState) -> bool:
        return self._states.get(state.uri) is state

    def bump(self, path: Path | None = None) -> None:
        """Something every spec may depend on changed: a file on disk (`path`), the settings."""
        self._world += 1
        if path is not None:
            self.large.file_changed(path)

    def world(self, documents: Mapping[str, Any], root: Path | None) -> int:
        """The stamp of what specs depend on beyond their own document: open documents with
        launches (as their versions go), the latest capture, what `bump` was told."""
        changed = False
        for uri, doc in documents.items():
            seen = self._seen.get(uri)
            if seen is None or seen[0] != doc.version:
                launches = "<<<" in doc.source
                changed |= launches or (seen is not None and seen[1])
                self._seen[uri] = (doc.version, launches)
        for uri in [u for u in self._seen if u not in documents]:
            changed |= self._seen.pop(uri)[1]
        if root is not None:
            from ..capture.launches import CAPTURES

            try:
                stamp: int | None = (root / CAPTURES).stat().st_mtime_ns
            except OSError:
                stamp = None
            changed |= stamp != self._capture_stamp
            self._capture_stamp = stamp
        if changed:
            self._world += 1
        return self._world

    # ------------------------------------------------------------ kernels

    async def kernel_at(self, state: DocumentState, position: types.Position, encoding: str) -> Kernel | None:
        """The kernel at an LSP position; a large document's is looked for on a thread."""
        if not state.large:
            return state.kernel_at(state.src.byte_at(Position(position.line, position.character), encoding))
        if state._src is not None:
            known = state.known_kernel_at(state.src.byte_at(Position(position.line, position.character), encoding))
            if known is not False:
                return known  # type: ignore[return-value]
        at = Position(position.line, position.character)
        return await asyncio.get_running_loop().run_in_executor(
            self._lookups, lambda: state.kernel_at(state.src.byte_at(at, encoding)))

    async def first_look(self, state: DocumentState, encoding: str) -> tuple[Discovery, list[types.Diagnostic]] | None:
        """A large document's kernels as declared and the spec diagnostics of those settled
        (large_documents.py), asked before its discovery: what its diagnostics can show while
        its types are read. None where the discovery is asked already (it comes as soon)."""
        if not state.large or state._discovery is not None or state._discovering is not None:
            return None
        return await asyncio.wrap_future(self.large.first_look(state.uri, state.text, encoding))

    async def discovery(self, state: DocumentState, encoding: str) -> Discovery:
        """Every kernel of the document's version: a small document's found on the discovery
        thread (the loop answers other requests meanwhile), a large document's (and their spec
        diagnostics, `spec_problems`) worked out in its own process."""
        if state._discovery is not None:
            return state._discovery
        if not state.large:
            return await asyncio.wrap_future(self._discoveries.submit(state.discovery))
        if state._discovering is None:  # one at a time: a plan asking meanwhile waits for the diagnostics' own
            state._discovering = self.large.discovery(state.uri, state.text, encoding)
        try:
            # shielded: one waiter's cancel (a hover given up) is not the others'
            found, problems = await asyncio.shield(asyncio.wrap_future(state._discovering))
        except Exception:  # not a waiter's cancel: the work itself failed
            state._discovering = None  # the next request asks again (a child that died is replaced)
            raise
        if state._discovery is None:
            state._discovery, state.spec_problems = found, problems
            probe(self.probe, "discover", state.uri, state.version)
        return state._discovery

    # ------------------------------------------------------------ specs

    async def spec(self, state: DocumentState, kernel: Kernel, world: int, job: Callable[[], DraftJob],
                   wait: float | None = None, earlier: bool = True) -> KnownSpec | None:
        """The kernel's spec as far as it is known: drafted for this version (and stamp, or
        within RECHECK_SECONDS of it); else, with `earlier`, the one drafted for an earlier
        version while it is drafted again; else, after waiting up to `wait` (by default a moment
        on a small document, none on a large one) for the draft, what there is or None. `job`
        makes the draft on the event loop; it runs on the drafting thread (or is a future)."""
        key = (kernel.name, state.src.slice(kernel.definition_span.start_byte, kernel.definition_span.end_byte))
        known = state.specs.drafted.get(key)
        this_version = known is not None and known.version == state.version
        if known is not None and this_version:
            if known.world == world:
                return KnownSpec(known.spec, True)
            under_way = state.specs.drafting.get(key)
            if time.monotonic() - known.at < RECHECK_SECONDS or (
                    under_way is not None and under_way.version == state.version and not under_way.future.done()):
                return KnownSpec(known.spec, True)  # only other documents changed, a moment ago
        if known is not None and earlier:  # drafted again once this answer is out (the draft competes for the GIL)
            asyncio.get_running_loop().call_later(AFTER_ANSWER_SECONDS, self._draft, state, key, world, job)
            return KnownSpec(known.spec, this_version)
        pending = self._draft(state, key, world, job)
        wait = (0.0 if state.large else GRACE_SECONDS) if wait is None else wait
        if wait > 0 and not pending.done():
            await asyncio.wait([asyncio.wrap_future(pending)], timeout=wait)
        if pending.done() and not pending.cancelled() and pending.exception() is None and pending.result() is not None:
            return KnownSpec(pending.result(), True)
        return KnownSpec(known.spec, True) if known is not None and this_version else None

    def _draft(self, state: DocumentState, key: SpecKey, world: int, job: Callable[[], DraftJob]) -> Future:
        specs = state.specs
        pending = specs.drafting.get(key)
        if pending is not None and pending.version == state.version and pending.world == world:
            return pending.future
        if pending is not None:
            pending.future.cancel()  # drafted for an older version or stamp: not started, not needed
        draft, asked = job(), time.monotonic()

        def keep(spec: KernelSpec) -> None:
            with specs.lock:  # this kernel's older definitions go
                specs.drafted = {k: d for k, d in specs.drafted.items() if k[0] != key[0]}
                specs.drafted[key] = Drafted(spec, state.version, world, asked)

        def run() -> KernelSpec | None:
            if not self.current(state):  # the document moved on (or closed) before its turn came
                return None
            probe(self.probe, "draft", state.uri, state.version, key[0])
            try:
                spec = draft()  # type: ignore[operator]
            except Exception as e:  # noqa: BLE001  (a bug of ours: said in the hover, not lost)
                spec = _failed(state, key, e)
            keep(spec)
            return spec

        if isinstance(draft, Future):  # under way in the large documents' process
            future: Future = Future()

            def landed(done: Future) -> None:
                if done.cancelled() or (self.closed and done.exception() is not None):  # ended by shutdown
                    future.cancel()
                    return
                error = done.exception()
                spec = _failed(state, key, error) if error is not None else done.result()
                keep(spec)
                if not future.done():
                    future.set_result(spec)

            draft.add_done_callback(landed)
        else:
            future = self._drafts.submit(run)
        specs.drafting[key] = Pending(state.version, world, future)
        return future

    def shutdown(self) -> None:
        self.closed = True
        for timer in self._timers.values():
            timer.cancel()
        for executor in (self._drafts, self._lookups, self._discoveries):
            executor.shutdown(wait=False, cancel_futures=True)
        self.large.shutdown()


def _discovered(state: DocumentState) -> None:
    """The state's discovery ahead of its requests; a fault is theirs to meet and report."""
    try:
        state.discovery()
    except Exception:  # noqa: BLE001 - the request that asks next raises it where it is reported
        log.debug("discovery ahead of %s failed", state.uri, exc_info=True)


def _failed(state: DocumentState, key: SpecKey, error: BaseException) -> KernelSpec:
    """A draft that raised (a bug of ours): said in the hover, not lost."""
    from ..drafting.origin import KernelSpec

    log.warning("no spec for %s in %s", key[0], state.uri, exc_info=error)
    return KernelSpec(state.uri, key[0], 0, "none", None,
                      [f"fsr could not work out a spec for it: {str(error) or type(error).__name__} (please report it)"])
