"""``tf.contrib`` (TF 1.15): the part Graphcore's TF1 programs use, ``contrib.layers``'
initializers and regularizers, and ``contrib.compiler.xla.compile``."""

from . import compiler, layers  # noqa: F401

__all__ = ["compiler", "layers"]
