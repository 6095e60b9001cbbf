"""``tf.contrib`` (TF 1.15): the part Graphcore's TF1 programs use, ``contrib.layers``'
initializers and regularizers, ``contrib.compiler.xla.compile`` and ``contrib.framework``'s
checkpoint readers."""

from . import compiler, framework, layers  # noqa: F401

__all__ = ["compiler", "framework", "layers"]
