"""Matrix multiplication as explicit sums over the inner axis, in float64."""

from __future__ import annotations

import numpy as np


def matmul(a, b, transpose_a=False, transpose_b=False):
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    if transpose_a:
        a = np.swapaxes(a, -1, -2)
    if transpose_b:
        b = np.swapaxes(b, -1, -2)
    # out[..., i, j] = sum_k a[..., i, k] * b[..., k, j], batch axes broadcasting
    return np.einsum("...ik,...kj->...ij", a, b)
