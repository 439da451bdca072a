"""The built-in generator, a tuner: a space of launch and code configurations (space.py), their
rendering as candidates (render.py, transforms.py), the strategy that explores it (strategy.py)
and the generator the search calls (generator.py)."""

from .generator import BuiltinGenerator
from .render import render
from .space import Config, Space, space_of
from .strategy import Annealer

__all__ = ["Annealer", "BuiltinGenerator", "Config", "Space", "render", "space_of"]
