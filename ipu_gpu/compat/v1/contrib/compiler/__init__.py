"""``tf.contrib.compiler`` (TF 1.15): ``xla``."""

from . import xla  # noqa: F401

__all__ = ["xla"]
