"""Op-table rows (tests/opdb.py collects ``ROWS``) for dense_bias: Keras's Dense layer,
matmul + bias_add (+ relu) in one op. Samples: with and without the relu, a bias of one
unit, K = 0, an empty batch, a batch of one."""

from __future__ import annotations

import numpy as np
from opdb import F16, F32, F64, FLOATS, I32, ErrorInput, OpInfo, Sample, make
from reference import dense as rdense

from ipu_gpu.ops import matmul

TOL = {F16: (1e-2, 1e-2)}  # float16: sums of up to 17 products rounded to 11 bits


def dense_bias_samples(rng, dtype):
    def s(n, i, u, desc, **kw):
        return Sample((make(rng, (n, i), dtype, -1.0, 1.0), make(rng, (i, u), dtype, -1.0, 1.0),
                       make(rng, u, dtype, -1.0, 1.0)), kw, desc=desc)

    yield s(6, 17, 9, "relu", relu=True)
    yield s(5, 4, 3, "bias only")
    yield s(7, 3, 1, "one unit, relu", relu=True)
    yield s(1, 5, 4, "batch of one, relu", relu=True)
    yield s(3, 0, 2, "K=0 (the bias alone), relu", relu=True)
    yield s(0, 3, 4, "empty batch, relu", relu=True)


def dense_bias_errors():
    x, w, b = np.zeros((2, 3), F32), np.zeros((3, 4), F32), np.zeros(4, F32)
    op = "^dense_bias: "
    yield ErrorInput((x, np.zeros((2, 4), F32), b), {}, ValueError,
                     op + r"kernel must have 3 rows \(the columns of x\), got shape \[2, 4\]")
    yield ErrorInput((x, w, np.zeros(3, F32)), {}, ValueError,
                     op + r"bias must be a vector of 4 values .*got shape \[3\]")
    yield ErrorInput((x, w, np.zeros((1, 4), F32)), {}, ValueError,
                     op + "bias must be a vector of 4 values")
    yield ErrorInput((x[None], w, b), {}, ValueError,
                     op + r"x and kernel must be matrices, got shapes \[1, 2, 3\] and \[3, 4\]")
    yield ErrorInput((x, w[None], b), {}, ValueError, op + "x and kernel must be matrices")
    yield ErrorInput((x, w, b.astype(F64)), {}, TypeError,
                     op + "bias must have the dtype of x")
    yield ErrorInput((x.astype(I32), w.astype(I32), b.astype(I32)), {}, TypeError,
                     op + "x must be float16/32/64, got int32")


ROWS = [
    OpInfo("dense_bias", matmul.dense_bias, rdense.dense_bias, dense_bias_samples,
           dense_bias_errors, dtypes=FLOATS, diff_args=(0, 1, 2), tol=TOL),
]
