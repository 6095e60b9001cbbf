"""Op-table rows for 2-D pooling (tf.nn.max_pool2d, tf.nn.avg_pool2d); see opdb.py."""

from __future__ import annotations

import numpy as np
from opdb import F32, I32, ErrorInput, OpInfo, Sample, make
from reference import pooling as rpooling

from ipu_gpu.errors import UnimplementedError
from ipu_gpu.ops import pooling

NHWC_EXPLICIT = [[0, 0], [1, 0], [2, 1], [0, 0]]
NCHW_EXPLICIT = [[0, 0], [0, 0], [1, 0], [2, 1]]


def _nchw(x):
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2))


def pool_samples(explicit):
    def gen(rng, dtype):
        def x(*shape):
            return make(rng, shape, dtype)

        def s(arr, ksize, strides, padding, data_format="NHWC", desc="", vjp=True):
            return Sample((arr, ksize, strides, padding), {"data_format": data_format},
                          vjp=vjp, desc=desc)

        yield s(x(2, 5, 6, 3), 2, 2, "VALID", desc="2x2 s2 VALID")
        yield s(x(2, 7, 6, 4), [3, 2], [2, 1], "SAME", desc="overlapping, SAME asymmetric")
        yield s(x(2, 4, 5, 17), 3, 2, "SAME", desc="wide channels (not folded)")
        yield s(_nchw(x(2, 5, 6, 3)), [1, 1, 3, 3], [1, 1, 2, 2], "SAME", "NCHW",
                desc="NCHW, 4-element ksize/strides")
        yield s(x(1, 3, 4, 2), 1, 1, "VALID", desc="1x1 window")
        yield s(x(2, 5, 7, 2), 2, 3, "SAME", desc="stride larger than the window")
        yield s(x(1, 3, 2, 2), 5, 1, "SAME", desc="window larger than the input")
        yield s(x(1, 4, 4, 2), [1, 4, 4, 1], 1, "VALID", desc="one window (global pooling)")
        yield s(x(0, 4, 4, 3), 2, 2, "SAME", desc="empty batch")
        yield s(x(1, 4, 4, 2), [5, 2], 2, "VALID", desc="empty output (window exceeds input)")
        ties = np.asarray(rng.integers(-2, 3, (2, 5, 5, 3)), dtype)
        yield s(ties, 3, 1, "SAME", desc="ties", vjp=False)
        if explicit:
            yield s(x(2, 6, 5, 3), 3, [2, 1], NHWC_EXPLICIT, desc="explicit padding")
            yield s(_nchw(x(2, 6, 5, 3)), [2, 3], 2, NCHW_EXPLICIT, "NCHW",
                    desc="explicit padding, NCHW")
    return gen


def pool_errors(name):
    def gen():
        x = np.zeros((1, 4, 4, 2), F32)

        def e(exc, match, arr=x, ksize=2, strides=1, padding="VALID", **kw):
            return ErrorInput((arr, ksize, strides, padding), kw, exc, rf"^{name}: {match}")

        yield e(TypeError, "input must be float16, float32 or float64", arr=x.astype(I32))
        yield e(ValueError, "input must be 4-dimensional", arr=x[0])
        yield e(ValueError, "ksize must have length 1, 2 or 4", ksize=[2, 2, 2])
        yield e(ValueError, "ksize must be positive", ksize=0)
        yield e(ValueError, "strides must be positive", strides=[1, -1])
        yield e(TypeError, "ksize must be an int", ksize=2.0)
        yield e(TypeError, "strides must be an int", strides=True)
        yield e(ValueError, "ksize must be 1 in the batch dimension", ksize=[2, 2, 2, 1])
        yield e(ValueError, "strides must be 1 in the batch dimension", strides=[2, 1, 1, 1])
        yield e(UnimplementedError, "Depthwise max pooling requires the depth window to "
                "evenly divide", ksize=[1, 1, 1, 3], strides=[1, 1, 1, 3])
        yield e(UnimplementedError, "MaxPooling supports exactly one of pooling across depth",
                ksize=[1, 2, 1, 2], strides=[1, 1, 1, 2])
        if name == "max_pool2d":
            yield e(UnimplementedError, "Depthwise max pooling requires the depth window to "
                    "equal the depth stride", ksize=[1, 1, 1, 2])
        else:
            yield e(UnimplementedError, "Non-spatial pooling is not yet supported",
                    ksize=[1, 1, 1, 2], strides=[1, 1, 1, 2])
        yield e(ValueError, "padding must be 'SAME'", padding="same")
        yield e(ValueError, "padding must be 'SAME'", padding="EXPLICIT")
        yield e(ValueError, "data_format must be 'NHWC' or 'NCHW'", data_format="NCHW_VECT_C")
        yield e(ValueError, "ksize must fit in the padded input", ksize=6)
        if name == "avg_pool2d":
            yield e(TypeError, "padding must be 'SAME' or 'VALID'", padding=NHWC_EXPLICIT)
            return
        yield e(TypeError, "padding must be 'SAME', 'VALID' or a list", padding=1)
        yield e(ValueError, "padding must be .* got 3 pairs", padding=[[0, 0], [1, 1], [0, 0]])
        yield e(ValueError, "padding must be", padding=[0, [1, 1], [0, 0], [0, 0]])
        yield e(ValueError, "padding must be", padding=[[0, 0, 0], [1, 1], [0, 0], [0, 0]])
        yield e(TypeError, r"padding must be a list of \[before, after\] int pairs",
                padding=[[0, 0], [0.5, 1], [0, 0], [0, 0]])
        yield e(ValueError, "padding must be non-negative",
                padding=[[0, 0], [-1, 1], [0, 0], [0, 0]])
        yield e(ValueError, "padding must be 0 in the batch and channel dimensions",
                padding=[[1, 0], [1, 1], [0, 0], [0, 0]])
        yield e(ValueError, "padding must be 0 in the batch and channel dimensions",
                padding=[[0, 0], [1, 1], [0, 0], [0, 1]])
        yield e(ValueError, "padding must be smaller than the window size, got top padding 2",
                padding=[[0, 0], [2, 0], [0, 0], [0, 0]])
        yield e(ValueError, "padding must be smaller than the window size, got right padding 3",
                ksize=[2, 3], padding=[[0, 0], [0, 0], [0, 3], [0, 0]])
    return gen


ROWS = [
    OpInfo("max_pool2d", pooling.max_pool2d, rpooling.max_pool2d, pool_samples(True),
           pool_errors("max_pool2d"), diff_args=(0,)),
    OpInfo("avg_pool2d", pooling.avg_pool2d, rpooling.avg_pool2d, pool_samples(False),
           pool_errors("avg_pool2d"), diff_args=(0,)),
]
