"""float64 reference for dense_bias (Keras's Dense: matmul + bias_add (+ relu) in one op),
written from the definition."""

from __future__ import annotations

import numpy as np


def dense_bias(x, kernel, bias, relu=False):
    """``x @ kernel + bias`` in float64, then max(., 0) with ``relu``."""
    y = np.asarray(x, np.float64) @ np.asarray(kernel, np.float64) + np.asarray(bias, np.float64)
    return np.maximum(y, 0) if relu else y
