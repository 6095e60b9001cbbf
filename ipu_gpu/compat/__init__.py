"""``tf.compat``: ``v1`` holds the TF1 names; ``v2`` is the TF2 core (``ipu_gpu`` itself)."""

import ipu_gpu as v2

from . import v1

__all__ = ["v1", "v2"]
