"""A variadic kernel's parameters as one instantiation has them.

`template <int N, typename R, typename... IN> __global__ void apply(R* out, const IN*... in)`
takes one `in` per type of the pack: `apply<8, float, float, half>` has three parameters, `out`,
`in_0` (a `const float*`) and `in_1` (a `const half*`). That is what its symbol, the launch
and every spec of it name (the elementwise templates of deep-learning frameworks are written
so). Each pack parameter expands to one per pack element, named `NAME_I`, its type written with
that element in place of the pack.

A parameter passed by value as a template type parameter (`LOAD load` of OneFlow's softmax,
`LOAD = DirectLoad<float, float>`) is, in the instantiation, that type: a struct of the file is
read member by member (struct_fields.py), as one named in the signature is. Nothing else of the
kernel changes.
"""

from __future__ import annotations

import dataclasses
import re

from .c_types import element_type
from .kernel import Kernel, Param
from .lexical import split_top_level
from .struct_fields import with_struct_fields

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


def expanded(kernel: Kernel, template: str | None, text: str | None = None) -> Kernel:
    """The kernel with each pack parameter expanded for the template arguments `template`
    (the instantiation's, as a spec or a captured symbol gives them), and, given the file's
    `text`, each parameter passed by value as a template type parameter (`LOAD load` of OneFlow's
    softmax) typed by its argument (`DirectLoad<float, float>`), a struct read member by member
    where it qualifies (struct_fields.py); the kernel as it is when no arguments are given."""
    if not template or not kernel.template_params:
        return kernel
    if text is not None:
        kernel = _by_value_instances(kernel, template, text)
    pack = pack_name(kernel)
    if pack is None or not any(is_pack_param(p) for p in kernel.params):
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


def _by_value_instances(kernel: Kernel, template: str, text: str) -> Kernel:
    """By-value parameters typed by a template type parameter, typed by its argument; a struct
    of the file read member by member (a type it cannot read stays as it was)."""
    args = [a.strip() for a in split_top_level(template)]
    types = {name: a for t, name, a in zip(kernel.template_params, kernel.template_names, args)
             if re.match(r"^(?:typename|class)\s+\w", t.strip())}  # a type parameter, not a pack or a value
    params = []
    for p in kernel.params:
        arg = types.get(p.base_type) if not p.is_pointer and not p.fields and p.dtype is None else None
        if arg is None or element_type(arg)[0] is not None:  # a scalar's type: param_dtype reads it
            params.append(p)
            continue
        type_text = re.sub(rf"\b{re.escape(p.base_type)}\b", arg, p.type_text)
        params.append(dataclasses.replace(p, base_type=arg, type_text=type_text, text=f"{type_text} {p.name}"))
    if params == list(kernel.params):
        return kernel
    instance = dataclasses.replace(kernel, params=tuple(params))
    read = with_struct_fields(instance, text)
    return read if any(a.fields != b.fields for a, b in zip(read.params, instance.params)) else kernel
