"""Shape-like arguments (a shape, multiples, begin/size, paddings, a depth) given as tensors:
TF takes a graph tensor there (``tf.reshape(x, tf.shape(y))``, ``tf.zeros(tf.stack([n,
5]))``) and a list mixing ints and scalar tensors (``[tf.shape(x)[0], -1]``), which it packs
into one tensor."""

from __future__ import annotations

import functools
import inspect

import numpy as np

from ..core import registry
from ..core.tensor import Tensor


def _symbolic(value) -> bool:
    types = registry._symbolic_types
    if isinstance(value, types):
        return True
    return isinstance(value, (list, tuple)) and any(_symbolic(v) for v in value)


def _packed(value):
    """A list holding scalar Tensors as the nested list of their ints (TF's auto-packing); a
    scalar integer Tensor as its int."""
    if isinstance(value, Tensor) and value.ndim == 0 and np.dtype(value.dtype).kind in "iu":
        return np.asarray(value).item()
    if isinstance(value, (list, tuple)) and any(isinstance(v, (Tensor, list, tuple))
                                               for v in value):
        return [_packed(v) if isinstance(v, (list, tuple))
                else np.asarray(v).item() if isinstance(v, Tensor) and v.ndim == 0 else v
                for v in value]
    return value


def shape_args(*names):
    """Decorates a public function whose arguments ``names`` are shape-like: a graph tensor
    there (or in a list there) makes the call one graph node that calls the function on the
    run's values (its output shape is inferred from what the graph fixes: constant values,
    ``tf.shape`` of tensors of known dimensions); lists holding scalar tensors are packed."""
    def decorate(fn):  # fn refuses those arguments (TypeError/ValueError) before it records
        params = list(inspect.signature(fn).parameters)
        where = [(params.index(n), n) for n in names]

        @functools.wraps(fn)
        def call(*args, **kwargs):
            try:  # the common case (ints, arrays, eager tensors) costs nothing more
                return fn(*args, **kwargs)
            except (TypeError, ValueError) as e:
                error = e
            values = [args[i] if i < len(args) else kwargs.get(n) for i, n in where]
            if registry._symbolic_types and any(_symbolic(v) for v in values):
                node = registry.symbolic_call(call, args, kwargs)
                if node is not NotImplemented:
                    return node
            packed = [_packed(v) for v in values]
            if all(p is v for p, v in zip(packed, values)):
                raise error
            args, kwargs = list(args), dict(kwargs)
            for (i, n), p in zip(where, packed):
                if i < len(args):
                    args[i] = p
                elif n in kwargs:
                    kwargs[n] = p
            return fn(*args, **kwargs)
        return call
    return decorate
