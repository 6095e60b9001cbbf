"""Op-table rows for lgamma and digamma (issue 17; see tests/opdb.py)."""

from __future__ import annotations

import numpy as np
from opdb import F16, FLOATS, OpInfo, make, unary_errors, unary_samples
from reference import special as rspecial

from ipu_gpu.ops import special


def _off_poles(rng, shape, dtype):
    """Values in (-4, 6) at least 0.2 from 0 and the negative integers."""
    x = make(rng, shape, dtype, -4.0, 6.0)
    near = (x < 0.2) & (np.abs(x - np.round(x)) < 0.2)
    return np.asarray(np.where(near, x + 0.4, x), dtype)


def _row(name, extra):
    return OpInfo(name, getattr(special, name), getattr(rspecial, name),
                  unary_samples(_off_poles, extra),
                  unary_errors(name, "x", np.dtype("int32"), "must be a floating-point"),
                  dtypes=FLOATS, diff_args=(0,), elementwise=1, tf_name=f"math.{name}",
                  tol={F16: (5e-3, 1e-2)})


ROWS = [
    _row("lgamma", ([1.0, 2.0, 0.5, -0.5, -2.5, 1e-3, 30.0, 150.0],)),
    _row("digamma", ([1.0, 2.0, 0.5, -0.5, -2.5, 1e-3, 30.0, 1000.0],)),
]
