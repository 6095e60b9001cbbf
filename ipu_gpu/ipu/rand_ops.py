"""``tensorflow.python.ipu.rand_ops`` (also ``ipu.ops.rand_ops``): the Poprand dropout.

The IPU draws a 16-bit random number ``r`` per element of the mask from its hardware PRNG and
keeps the element when ``r < floor((1 - rate) * 65536)``; kept values are multiplied by
``1 / (1 - rate)`` held in ``x``'s dtype, dropped ones are zero. Here ``r`` comes from
``tf.random.stateless_uniform`` (Philox) under ``seed`` folded with ``seed_modifier``, so the
same seed gives the same mask on every run and every backend, as on the IPU, though not the
IPU's bits (those depend on the tile layout). Without a seed every execution draws a fresh
one (``tf.random.uniform``, which follows ``tf.random.set_seed``). The gradient is the output
gradient through the same mask and scale.
"""

from __future__ import annotations

import numbers

import numpy as np

from ipu_gpu.core import dtypes
from ipu_gpu.core.convert import convert_to_tensor
from ipu_gpu.core.registry import REGISTRY, recorded_call, symbolic_call
from ipu_gpu.core.spec import TensorShape
from ipu_gpu.ops import math as math_ops
from ipu_gpu.ops import random as random_ops

__all__ = ["dropout"]

_RANDOM_BITS = 16
_INT32_MIN, _INT32_MAX = -2**31, 2**31 - 1


def _check_noise_shape(x_shape, noise_shape):
    if not noise_shape:
        return None
    noise_shape = list(noise_shape)
    if len(x_shape) != len(noise_shape):
        raise ValueError("The length of noise_shape must equal the rank of x.")
    for i, j in zip(x_shape, noise_shape):
        if j != 1 and i != j:
            raise ValueError(f"Dimension mismatch, {i} != {j}.")
    return [int(d) for d in noise_shape]


def dropout(x, rate=0.5, noise_shape=None, seed=None, name=None, **kwargs):
    """Zero each element of ``x`` with probability ``rate`` and scale the kept ones by
    ``1 / (1 - rate)`` (PopLibs Poprand dropout).

    Args:
      x: the input tensor (floating point).
      rate: the probability that an element is zeroed, in [0, 1).
      noise_shape: the shape of the mask, each dimension equal to ``x``'s or 1 (the mask is
        broadcast over the 1s); None for one decision per element.
      seed: an optional pair of 32-bit integers (tensor, numpy array, list or tuple) seeding
        the mask; the same seed gives the same mask.
      name: optional op name.
      **kwargs: ``seed_modifier`` (default 1: an integer folded into the seed) and ``ref``
        (Graphcore's choice of reference tensor for the tile layout, no effect on the
        numbers); other keywords are ignored, as Graphcore's implementation does.

    Returns:
      A tensor of ``x``'s shape and dtype.

    Raises:
      ValueError: ``rate`` outside [0, 1); a ``noise_shape`` of another rank or with a
        dimension neither 1 nor ``x``'s; a ``seed`` whose shape is not [2] (Graphcore's
        messages).
      TypeError: ``x`` not floating point.
    """
    if isinstance(rate, numbers.Real) and (rate >= 1.0 or rate < 0.0):
        raise ValueError(f"The rate must be in the range [0, 1), but was {rate}")
    call_kwargs = dict(rate=rate, noise_shape=noise_shape, seed=seed, name=name, **kwargs)
    node = symbolic_call(dropout, (x,), call_kwargs)
    if node is NotImplemented:  # concrete inputs, but a TF1 graph being built: per run
        node = recorded_call(dropout, (x,), call_kwargs)
    if node is not NotImplemented:
        return node
    x = convert_to_tensor(x)
    if x.dtype.kind != "f":
        raise TypeError(f"dropout: x must be a floating-point tensor, got {x.dtype.name}")
    rate = float(rate)
    mask_shape = _check_noise_shape(list(x.shape), noise_shape) or list(x.shape)
    seed_modifier = int(kwargs.get("seed_modifier", 1))
    if seed is None:
        seed = random_ops.uniform([2], minval=_INT32_MIN, maxval=_INT32_MAX,
                                  dtype=dtypes.int32)
    else:
        seed = convert_to_tensor(seed)
        if tuple(seed.shape) != (2,):
            raise ValueError(f"Expected the seed to have a shape [2], but got "
                             f"{TensorShape(list(seed.shape))}.")
    keep_prob = 1.0 - rate
    threshold = int(np.floor(keep_prob * 2**_RANDOM_BITS))
    if threshold >= 2**_RANDOM_BITS:  # rate 0: PopLibs copies the input
        return math_ops.multiply(x, np.asarray(1, x.dtype))
    key = random_ops.fold_in(math_ops.cast(seed, dtypes.int32), np.int32(seed_modifier))
    bits = random_ops.stateless_uniform(mask_shape, key, minval=0, maxval=2**_RANDOM_BITS,
                                        dtype=dtypes.int32)
    keep = math_ops.less(bits, np.int32(threshold))
    return REGISTRY["dropout"](x, keep, scale=1.0 / keep_prob, divide=False)
