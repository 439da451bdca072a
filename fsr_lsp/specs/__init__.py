"""The `@fsr` spec: sizes, launch configuration and arguments of a kernel. Its model
(model.py), safe size expressions (expr.py), parsing with locations (parse.py, locate.py),
inference from a signature (infer.py), rendering and templates (blocks.py), key edits (edit.py)."""

from .expr import ExprError, evaluate, evaluate_int
from .infer import infer_spec
from .model import BufferArg, CapturedValueArg, AtArg, Init, NullArg, Problem, ScalarArg, Spec, SpecResult, StructArg, default_init, tolerance
from .parse import parse_spec
from .blocks import render_spec, spec_template

__all__ = [
    "BufferArg",
    "NullArg",
    "AtArg",
    "CapturedValueArg",
    "ExprError",
    "Init",
    "Problem",
    "ScalarArg",
    "Spec",
    "SpecResult",
    "StructArg",
    "default_init",
    "evaluate",
    "evaluate_int",
    "infer_spec",
    "parse_spec",
    "render_spec",
    "spec_template",
    "tolerance",
]
