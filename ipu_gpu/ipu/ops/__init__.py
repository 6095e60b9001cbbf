"""``tensorflow.python.ipu.ops``: the op modules, re-exported."""

from . import nn_ops

__all__ = ["nn_ops"]
