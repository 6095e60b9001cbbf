"""``tf.nn.pool``: N-D max or average pooling (N = len(window_shape), 1 to 3) with strides
or a dilation rate, as TensorFlow's ``nn_ops.pool``.

Without dilation it is ``max_pool``/``avg_pool`` of the input's rank (``ops/nn.py``), with
their tie, padding and gradient rules. With a dilation rate (VALID padding only, strides 1,
as TF) TF pools the space-to-batch rearrangement of the input: the positions one rate apart
form a batch entry of their own, pooled with the plain window, and the outputs are put back
in place. Here the same rearrangement is a reshape and a transpose, so the numbers, ties and
gradients are the plain pooling op's. On a TF1 graph tensor of unknown spatial size the
dilated pooling is one node on the run's values.
"""

from __future__ import annotations

import numpy as np

from ..core.registry import symbolic_call
from . import array as _array
from . import shape as _shape

__all__ = ["pool", "pool_v1"]

_FORMATS = {1: ("NWC", "NCW"), 2: ("NHWC", "NCHW"), 3: ("NDHWC", "NCDHW")}


def _ints(name, value, n):
    if value is None:
        return np.ones(n, np.int32)
    items = list(value) if isinstance(value, (list, tuple, np.ndarray)) else [value]
    if len(items) != n:
        raise ValueError(f"`len({name})` should be {n}. Received: {name}={value} of length "
                         f"{len(items)}")
    out = np.array([int(v) for v in items], np.int32)
    if np.any(out < 1):
        raise ValueError(f"all values of `{name}` must be positive. Received: {name}={out}")
    return out


def pool(input, window_shape, pooling_type, strides=None, padding="VALID",  # noqa: A002
         data_format=None, dilations=None, name=None):
    """Max or average pooling over the N spatial dimensions of a rank N + 2 ``input``
    (``tf.nn.pool``): windows of ``window_shape`` every ``strides``, their entries
    ``dilations`` apart.

    Raises:
      ValueError: ``window_shape`` not of length 1 to 3, ``strides``/``dilations`` of
        another length or not positive, strides > 1 with dilations > 1, strides larger
        than the window, SAME padding with dilations > 1, another ``pooling_type`` or
        ``data_format``, an input of another rank (TF's messages)."""
    window = list(window_shape)
    n = len(window)
    if n < 1 or n > 3:
        raise ValueError("`len(window_shape)` must be 1, 2, or 3. Received: "
                         f"window_shape={window_shape} of length {n}")
    rank = len(getattr(input, "shape", np.shape(input)))
    if rank != n + 2:
        raise ValueError(f"Shape {list(getattr(input, 'shape', np.shape(input)))} must have "
                         f"rank {n + 2}")
    strides = _ints("strides", strides, n)
    rates = _ints("dilation_rate", dilations, n)
    if np.any(strides > 1) and np.any(rates > 1):
        raise ValueError("`strides > 1` not supported in conjunction with `dilation_rate > 1`. "
                         f"Received: strides={strides} and dilation_rate={rates}")
    if padding == "SAME" and np.any(rates > 1):
        raise ValueError("pooling with 'SAME' padding is not implemented for `dilation_rate` "
                         f"> 1. Received: padding={padding} and dilation_rate={rates}")
    if np.any(strides > np.array(window)):
        raise ValueError("`strides` > `window_shape` not supported due to inconsistency "
                         f"between CPU and GPU implementations. Received: strides={strides} "
                         f"and window_shape={window_shape}")
    if pooling_type not in ("MAX", "AVG"):
        raise ValueError(f"{n}-D {pooling_type} pooling is not supported.")
    if n == 1 and data_format not in (None, "NWC", "NCW"):
        raise ValueError("data_format must be either 'NWC' or 'NCW'. Received: "
                         f"data_format={data_format}")
    if data_format is not None and data_format not in _FORMATS[n]:
        raise ValueError(f"pool: data_format must be one of {list(_FORMATS[n])} for {n} "
                         f"spatial dimensions, got {data_format!r}")
    first = data_format is not None and data_format.startswith("NC")
    fmt = _FORMATS[n][1 if first else 0]
    if not np.any(rates > 1):
        return _pooled(input, pooling_type, window, [int(s) for s in strides], padding, fmt,
                       first)
    rates = [int(r) for r in rates]
    shape = tuple(getattr(input, "shape", np.shape(input)))
    spatial = shape[2:] if first else shape[1:-1]
    if None in spatial:  # a graph tensor: rearranged by the run's sizes
        node = symbolic_call(_dilated, (input, pooling_type, window, rates, fmt, first), {})
        if node is not NotImplemented:
            return node
    return _dilated(input, pooling_type, window, rates, fmt, first)


def pool_v1(input, window_shape, pooling_type, padding, dilation_rate=None,  # noqa: A002
            strides=None, name=None, data_format=None, dilations=None):
    """``tf.compat.v1.nn.pool``: ``pool`` with TF1's argument order (``dilations`` is the
    newer name of ``dilation_rate``)."""
    if dilation_rate is not None and dilations is not None:
        raise ValueError("Cannot specify both 'dilations' and 'dilation_rate'")
    return pool(input, window_shape, pooling_type, strides=strides, padding=padding,
                data_format=data_format,
                dilations=dilations if dilations is not None else dilation_rate, name=name)


def _pooled(x, pooling_type, window, strides, padding, fmt, first):
    from . import nn as _nn

    fn = _nn.max_pool if pooling_type == "MAX" else _nn.avg_pool
    if first:
        ksize, stride = [1, 1] + window, [1, 1] + strides
    else:
        ksize, stride = [1] + window + [1], [1] + strides + [1]
    return fn(x, ksize, stride, padding, data_format=fmt)


def _dilated(x, pooling_type, window, rates, fmt, first):
    """VALID pooling with entries ``rates`` apart: TF's space-to-batch, pool, batch-to-space
    (the end padding that makes each size a multiple of its rate is cropped again)."""
    n = len(window)
    if first:  # rearranged channels-last, transposed back at the end
        x = _shape.transpose(x, [0, *range(2, n + 2), 1])
    dims = list(x.shape)
    batch, sizes, channels = dims[0], dims[1:-1], dims[-1]
    final = [s - (w - 1) * r for s, w, r in zip(sizes, window, rates)]
    if any(f < 1 for f in final):
        raise ValueError(f"pool: a window of {window} dilated by {rates} does not fit the "
                         f"input's spatial size {sizes} (VALID padding)")
    padded = [-(-s // r) * r for s, r in zip(sizes, rates)]
    if padded != sizes:
        x = _array.pad(x, [[0, 0], *[[0, p - s] for p, s in zip(padded, sizes)], [0, 0]])
    blocks = [p // r for p, r in zip(padded, rates)]
    split = [batch]
    for q, r in zip(blocks, rates):
        split += [q, r]
    x = _shape.reshape(x, split + [channels])
    # [B, Q1, r1, ..., QN, rN, C] -> [r1..rN, B, Q1..QN, C] -> [r1*..*rN*B, Q1..QN, C]
    order = [2 + 2 * i for i in range(n)] + [0] + [1 + 2 * i for i in range(n)] + [2 * n + 1]
    x = _shape.transpose(x, order)
    phases = int(np.prod(rates))
    x = _shape.reshape(x, [phases * batch, *blocks, channels])
    y = _pooled(x, pooling_type, window, [1] * n, "VALID", _FORMATS[n][0], False)
    outs = [q - w + 1 for q, w in zip(blocks, window)]
    y = _shape.reshape(y, [*rates, batch, *outs, channels])
    # [r1..rN, B, O1..ON, C] -> [B, O1, r1, ..., ON, rN, C] -> [B, O1*r1, ..., C]
    order = [n]
    for i in range(n):
        order += [n + 1 + i, i]
    y = _shape.transpose(y, order + [2 * n + 1])
    y = _shape.reshape(y, [batch, *[o * r for o, r in zip(outs, rates)], channels])
    y = _array.slice(y, [0] * (n + 2), [batch, *final, channels])
    if first:
        y = _shape.transpose(y, [0, n + 1, *range(1, n + 1)])
    return y
