"""One resolver for every kernel's spec: the kernel typed once (typed.py), then the stages
(stages.py) tried in their fixed order until one answers, each one's word kept in the spec's
`trail`. The CLI (`fsr spec`, `fsr optimize`), the editor and the benches call only this.

    kernel ──typed_kernel──> TypedKernel ──> complete ─> attached ─> checkable ─> captured
           ─> drafted ─> inferred ─> model ─> (none: why, from each stage)   then: the proof (proof.py)
"""

from __future__ import annotations

import logging
from pathlib import Path

from ..capture import Capture
from ..kernels import Kernel, discover
from ..kernels.aliases import flag_defines, included_texts, includer_texts
from ..kernels.kernel_view import kernel_view
from ..source import SourceText
from ..specs.build_flags import block_flags, flags_value, merged
from ..specs.defines import defines_value
from ..specs.edit import set_key
from .build_commands import FileBuild
from .host import find_launches
from .origin import Drafter, KernelSpec
from .stages import STAGES, WHY_ORDER, SpecRequest
from .typed import typed_kernel
from .workspace import SOURCES, LaunchIndex, resolved

log = logging.getLogger(__name__)


def resolve(req: SpecRequest) -> KernelSpec:
    """The first stage's answer, with what each stage before it said; none answering, a spec
    of origin "none" with why. A kernel fsr cannot read is a line with its reason: the file's
    other kernels, and the listing, go on."""
    try:
        return _through_stages(req)
    except Exception as e:  # noqa: BLE001  (one kernel's problem never ends the listing)
        log.warning("no spec for %s in %s", req.kernel.name, req.file, exc_info=True)
        return req.answer("none", None,
                          [f"fsr could not work out a spec for it: {str(e) or 'an internal error'} (please report it)"])


def _through_stages(req: SpecRequest) -> KernelSpec:
    misses: dict[str, tuple[str, ...]] = {}
    trail: list[tuple[str, str]] = []
    for name, stage in STAGES:
        said = stage(req, misses)
        if said.spec is not None:
            said.spec.trail = [*trail, (name, "answered" if said.spec.origin != "none" else "no spec can check it")]
            return said.spec
        misses[name] = said.why
        trail.append((name, "; ".join(said.why) if said.why else "not applicable"))
    why = [p for name in WHY_ORDER for p in misses.get(name, ())]
    return req.answer("none", None, why + req.orphans, trail=trail)


def orphans_of(src: SourceText) -> list[str]:
    """The file's @fsr blocks that attach to no kernel, said on each of its kernels."""
    return [f"the @fsr block at line {o.comment.span.start.line + 1} attaches to no kernel: {o.reason}"
            for o in discover(src).orphan_specs]


def kernel_specs(files: list[Path], drafter: Drafter | None = None,
                 include_dirs: tuple[Path, ...] = (), capture: Capture | None = None) -> list[KernelSpec]:
    """Every kernel of every file, with launches looked up across all the files given (a kernel
    in a .cu file is often launched from a .cpp next to it); element types a file leaves
    unknown are looked up in the headers it includes (its folder, then `include_dirs`)."""
    texts = {f: SourceText(f.read_text(encoding="utf-8", errors="replace")) for f in files}
    # each file's headers, read once: their macros serve its launches, their typedefs its kernels
    headers = {f: (*included_texts(src.text, (f.parent, *include_dirs)), *includer_texts(f, include_dirs))
               for f, src in texts.items()}
    launches = [launch for path, src in texts.items() for launch in find_launches(src, str(path), headers[path])]
    out = []
    for path, src in texts.items():
        near = capture.preferring(path.parent) if capture is not None else None
        kernels = discover(src).kernels
        out += [resolve(SpecRequest(str(path), src, typed_kernel(k, src.text, headers[path], frozenset()), launches,
                                    near, drafter, orphans_of(src))) for k in kernels]
    return out


def workspace_spec(index: LaunchIndex, path: Path, text: str, kernel: Kernel, open_documents: dict[Path, str] | None = None,
                   drafter: Drafter | None = None, include_dirs: tuple[str, ...] = (),
                   flags: tuple[str, ...] = ()) -> KernelSpec:
    """The kernel's spec and its origin, with launches from every file of the workspace (open
    documents as the editor holds them), element types as the build compiles them: from the
    headers the file includes, read with the file's own `#define`s and the `-D` of `flags`, and,
    where a captured launch's symbol says the run's build compiled another type, with the macro
    that build must have defined (the spec then carries that `-D`: `KernelSpec.flags`)."""
    return _in_workspace(index, path, text, [kernel], open_documents, drafter, include_dirs, flags)[0]


def file_specs(index: LaunchIndex, path: Path, text: str, open_documents: dict[Path, str] | None = None,
               drafter: Drafter | None = None, include_dirs: tuple[str, ...] = (),
               flags: tuple[str, ...] = (), only: str | None = None) -> list[KernelSpec]:
    """Every kernel of one file (or those named `only`), resolved as `workspace_spec` resolves
    one (`fsr spec`'s listing)."""
    src = SourceText.of(text)
    kernels = [k for k in discover(src).kernels if only in (None, k.name)]
    specs = _in_workspace(index, path, text, kernels, open_documents, drafter, include_dirs, flags)
    orphans = orphans_of(src)
    for s in specs:
        s.problems += orphans
    return specs


def _in_workspace(index: LaunchIndex, path: Path, text: str, kernels: list[Kernel],
                  open_documents: dict[Path, str] | None, drafter: Drafter | None, include_dirs: tuple[str, ...],
                  flags: tuple[str, ...]) -> list[KernelSpec]:
    if len(kernels) == 1:  # a large text is read as this kernel's draft needs it (kernels/kernel_view.py)
        view = kernel_view(text, kernels[0])
        text, kernels = view.text, [view.kernel]
    docs = {resolved(p): t for p, t in (open_documents or {}).items() if p.suffix.lower() in SOURCES}
    docs[resolved(path)] = text
    build = index.build(path)
    if build is not None:  # as the user's build compiles the file: its -D, -I and the flags that change code
        flags = merged(build.flags.flags, flags)
        include_dirs = (*include_dirs, *(d for d in build.flags.include_dirs() if d not in include_dirs))
    headers = tuple(included_texts(text, (path.parent, *map(Path, include_dirs)))) if "#include" in text else ()
    defined = frozenset(flag_defines(flags))
    capture = index.capture()
    capture = capture.preferring(path.parent) if capture is not None else None
    launches = index.launches(docs, resolved(path), kernels[0].name if len(kernels) == 1 else None)
    src = SourceText.of(text)
    out = []
    for kernel in kernels:
        launched = capture.of(kernel.name) if capture is not None else []
        typed = typed_kernel(kernel, text, headers, defined, launched[0].name if launched else "")
        spec = resolve(SpecRequest(index.relative(path), src, typed, launches, capture, drafter))
        if typed.block_flags:
            spec.flags = typed.block_flags
        elif typed.capture_defines:
            spec.flags = tuple(f"-D{name}" for name in sorted(typed.capture_defines))
            if spec.spec and spec.origin != "attached":  # a placed draft keeps them: typed and compiled so without the capture
                spec.spec = set_key(spec.spec, "defines", defines_value(spec.flags))
            spec.problems.append(f"compiled with {' '.join(spec.flags)}: {typed.defines_said} (the block's `defines` "
                                 "keeps it)")
        if build is not None:
            _with_build(spec, build, typed.kernel)
        out.append(spec)
    return out


def _with_build(spec: KernelSpec, build: FileBuild, kernel: Kernel) -> None:
    """The spec compiles as the build does: its flags join the spec's, and a draft's block
    carries them (`defines`, `flags`), so the placed block keeps them without the database."""
    spec.problems += [p for p in build.problems if p not in spec.problems]
    if not build.where:
        return
    spec.flags = merged(build.flags.flags, spec.flags, block_flags(kernel))
    spec.build = f"built as your build does ({build.where}): {build.said()}"
    if spec.spec and spec.origin != "attached":
        defines = merged(build.flags.defines(), tuple(f for f in spec.flags if f.startswith("-D")))
        if defines:
            spec.spec = set_key(spec.spec, "defines", defines_value(defines))
        if build.flags.others():
            spec.spec = set_key(spec.spec, "flags", flags_value(build.flags.others()))
        spec.provenance["flags"] = build.where

