"""``tf.contrib`` (TF 1.15): the part Graphcore's TF1 programs use, ``contrib.layers``'
initializers and regularizers."""

from . import layers  # noqa: F401

__all__ = ["layers"]
