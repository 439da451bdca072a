"""The built-in tuner: a space of launch and code configurations (space.py), their rendering
as candidates (render.py, transforms.py), and the strategy that explores it (strategy.py)."""

from .render import render
from .space import Config, Space, space_of
from .strategy import Annealer

__all__ = ["Annealer", "Config", "Space", "render", "space_of"]
