"""``tensorflow.contrib.framework.python``: the package path of ``checkpoint_utils``."""

from . import framework  # noqa: F401

__all__ = ["framework"]
