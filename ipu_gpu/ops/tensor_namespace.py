"""A numpy-named namespace over Tensors, so backward rules written against ``xp`` also run on
Tensors (and are recorded) when nested tapes ask for second derivatives."""

from __future__ import annotations

import builtins

from . import creation, indexing, math, matmul, reduction, shape, special, trig


def sum(a, axis=None, keepdims=False):  # noqa: A001
    return reduction.reduce_sum(a, axis=axis, keepdims=keepdims)


def max(a, axis=None, keepdims=False):  # noqa: A001
    return reduction.reduce_max(a, axis=axis, keepdims=keepdims)


def reshape(a, shape_):
    return shape.reshape(a, shape_)


def transpose(a, axes=None):
    return shape.transpose(a, axes)


def swapaxes(a, i, j):
    n = len(a.shape)
    perm = list(builtins.range(n))
    perm[i], perm[j] = perm[j], perm[i]
    return shape.transpose(a, perm)


def broadcast_to(a, shape_):
    shape_ = tuple(shape_)
    if tuple(a.shape) == shape_:
        return a
    return math.add(a, creation.zeros(shape_, a.dtype))


def where(c, x, y):
    return indexing.where(c, x, y)


def zeros_like(a):
    return creation.zeros_like(a)


def ones_like(a):
    return creation.ones_like(a)


def astype(a, dtype):
    return math.cast(a, dtype)


def concatenate(arrays, axis=0):
    return shape.concat(list(arrays), axis)


def split(a, bounds, axis=0):
    n = a.shape[axis]
    edges = [0] + list(bounds) + [n]
    return shape.split(a, [edges[i + 1] - edges[i] for i in builtins.range(len(edges) - 1)], axis)


add = math.add
subtract = math.subtract
multiply = math.multiply
divide = math.divide
negative = math.negative
power = math.pow
maximum = math.maximum
minimum = math.minimum
floor_divide = math.floordiv
exp = math.exp
log = math.log
sqrt = math.sqrt
tanh = math.tanh
sign = math.sign
abs = math.abs  # noqa: A001
sin = trig.sin
cos = trig.cos
sinh = trig.sinh
cosh = trig.cosh
digamma = special.digamma
matmul = matmul.matmul
