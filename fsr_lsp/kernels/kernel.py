"""What discovery knows about a kernel: plain, immutable records."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..source import Span


@dataclass(frozen=True)
class Param:
    name: str
    text: str  # the whole declaration, whitespace-normalised
    type_text: str  # the declaration without its name
    base_type: str  # element type as written, qualifiers removed (`float`, `T`, `float4`)
    is_pointer: bool
    pointee_const: bool
    dtype: str | None  # numpy-style element type (`float32`), None when unknown (templates)
    lanes: int = 1  # 4 for `float4`
    fields: tuple["Param", ...] = ()  # a struct passed by value: its data members (kernels/struct_fields.py)
    align: int = 0  # by value, a CUDA vector type named through an alias (`typedef float4 vec4`): its alignment

    @property
    def pointee(self) -> str:
        """The type a pointer parameter points to, as written: `float*` for `float** rows`."""
        return self.base_type + "*" * max(0, self.type_text.count("*") - 1)


@dataclass(frozen=True)
class SpecComment:
    """The `/* @fsr ... */` block above a kernel."""

    span: Span  # the whole comment
    body: str  # the TOML between `@fsr` and `*/`
    body_start_byte: int  # where `body` starts in the file


@dataclass(frozen=True)
class Kernel:
    name: str
    params: tuple[Param, ...]
    template_params: tuple[str, ...]  # e.g. ("typename T", "int BLOCK")
    launch_bounds: str | None  # the text inside __launch_bounds__(...)
    span: Span  # the whole definition, with its spec comment and template line
    definition_span: Span  # from `template`/`extern`/`__global__` to the closing brace
    name_span: Span
    spec: SpecComment | None
    complete: bool  # False when the body is unterminated (mid-edit)
    found_by: str  # "tree-sitter" or "fallback"

    @property
    def is_template(self) -> bool:
        return bool(self.template_params)

    @property
    def template_names(self) -> tuple[str, ...]:
        """Each template parameter's name, in order (`T` of `typename T = float`, `IN` of
        `typename... IN`): what a spec's or a launch's template arguments are zipped with."""
        return tuple((t.split("=")[0].split() or [""])[-1] for t in self.template_params)

    def typed_as(self, original: "Kernel") -> "Kernel":
        """This kernel (a rewrite of `original`, same parameter list) with the original's element
        types where its own are unknown: a type named through the file's typedef or a header
        (`real`, `floatX`) is known in the file, not in a rewrite that only uses it."""
        params = tuple(p if p.dtype is not None else dataclasses.replace(p, dtype=o.dtype, lanes=o.lanes)
                       for p, o in zip(self.params, original.params))
        return dataclasses.replace(self, params=params)

    @property
    def takes_pointers(self) -> bool:
        """Whether it gets any memory to work on: a pointer parameter, or a by-value struct's
        pointer member (with none, what it does is invisible to a comparison)."""
        return any(p.is_pointer or any(f.is_pointer for f in p.fields) for p in self.params)
