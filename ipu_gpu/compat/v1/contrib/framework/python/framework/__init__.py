"""``tensorflow.contrib.framework.python.framework``: ``checkpoint_utils``."""

from . import checkpoint_utils  # noqa: F401

__all__ = ["checkpoint_utils"]
