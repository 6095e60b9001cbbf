"""``keras.models``: ``Model``, ``Sequential`` and ``clone_model``."""

from ..engine.functional import Functional
from ..engine.sequential import Sequential
from ..engine.training import Model
from .cloning import clone_model

__all__ = ["Functional", "Model", "Sequential", "clone_model"]
