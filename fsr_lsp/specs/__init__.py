"""The `@fsr` spec: sizes, launch configuration and arguments of a kernel."""

from .expr import ExprError, evaluate, evaluate_int
from .infer import infer_spec, render_spec, spec_template
from .model import BufferArg, Init, Problem, ScalarArg, Spec, SpecResult, default_init, tolerance
from .parse import parse_spec

__all__ = [
    "BufferArg",
    "ExprError",
    "Init",
    "Problem",
    "ScalarArg",
    "Spec",
    "SpecResult",
    "default_init",
    "evaluate",
    "evaluate_int",
    "infer_spec",
    "parse_spec",
    "render_spec",
    "spec_template",
    "tolerance",
]
