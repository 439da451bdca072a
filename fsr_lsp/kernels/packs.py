"""A variadic kernel's parameters as one instantiation has them.

`template <int N, typename R, typename... IN> __global__ void apply(R* out, const IN*... in)`
takes one `in` per type of the pack: `apply<8, float, float, half>` has three parameters, `out`,
`in_0` (a `const float*`) and `in_1` (a `const half*`). That is what its symbol, the launch
and every spec of it name (the elementwise templates of deep-learning frameworks are written
so). Each pack parameter expands to one per pack element, named `NAME_I`, its type written with
that element in place of the pack; nothing else of the kernel changes.
"""

from __future__ import annotations

import dataclasses
import re

from .c_types import element_type
from .kernel import Kernel, Param
from .lexical import split_top_level

_PACK = re.compile(r"^(?:typename|class)\s*\.\.\.\s*(\w+)$")


def pack_name(kernel: Kernel) -> str | None:
    """The kernel's type parameter pack (`IN` of `typename... IN`), when it is the last
    template parameter (as an instantiation's arguments can then say what it holds)."""
    if not kernel.template_params:
        return None
    m = _PACK.match(" ".join(kernel.template_params[-1].split()))
    return m.group(1) if m else None


def is_pack_param(p: Param) -> bool:
    """`const IN*... in`: a parameter that is a pack of parameters."""
    return bool(re.search(rf"\.\.\.\s*{re.escape(p.name)}$", p.text))


def expanded(kernel: Kernel, template: str | None) -> Kernel:
    """The kernel with each pack parameter expanded for the template arguments `template`
    (the instantiation's, as a spec or a captured symbol gives them); the kernel as it is when
    it has no pack, or no arguments are given."""
    pack = pack_name(kernel)
    if pack is None or not template or not any(is_pack_param(p) for p in kernel.params):
        return kernel
    args = [a.strip() for a in split_top_level(template)]
    elements = args[len(kernel.template_params) - 1:]
    params: list[Param] = []
    for p in kernel.params:
        if not is_pack_param(p):
            params.append(p)
            continue
        params += [_element(p, pack, element, f"{p.name}_{i}") for i, element in enumerate(elements)]
    return dataclasses.replace(kernel, params=tuple(params))


def _element(p: Param, pack: str, element: str, name: str) -> Param:
    """One parameter of a pack: `const IN*... in` for `half` is `const half* in_1`."""

    def put(text: str) -> str:
        return re.sub(rf"\b{re.escape(pack)}\b", element, text)

    base = put(p.base_type)
    dtype, lanes = (p.dtype, p.lanes) if p.dtype else element_type(base)
    type_text = put(p.type_text)
    return dataclasses.replace(p, name=name, text=f"{type_text} {name}", type_text=type_text, base_type=base,
                               dtype=dtype, lanes=lanes or 1)
