"""Merge layers: ``Add``, ``Subtract``, ``Multiply``, ``Average``, ``Maximum``, ``Minimum``,
``Concatenate``, ``Dot``, and their functional forms (``add([a, b])``, ...)."""

from __future__ import annotations

import functools

from ...core.spec import TensorShape, as_shape
from ...ops import creation as _creation
from ...ops import math as _m
from ...ops import matmul as _matmul
from ...ops import nn as _nn
from ...ops import reduction as _r
from ...ops import shape as _shape
from .. import backend
from ..engine.base_layer import Layer
from ._graph_shapes import call_on_values

__all__ = ["Add", "Average", "Concatenate", "Dot", "Maximum", "Minimum", "Multiply",
           "Subtract", "add", "average", "concatenate", "dot", "maximum", "minimum",
           "multiply", "subtract"]


def _dims(shape):
    shape = as_shape(shape)
    return None if shape.rank is None else tuple(shape.as_list())


def _shape_list(input_shape):
    """A list of shape tuples, or None when ``input_shape`` is not a list of shapes."""
    if isinstance(input_shape, (list, tuple)) and input_shape and all(
            isinstance(s, TensorShape) or (isinstance(s, (list, tuple)) and all(
                d is None or isinstance(d, int) for d in s)) for s in input_shape):
        return [_dims(s) for s in input_shape]
    return None


class _Merge(Layer):
    """An elementwise merge of a list of inputs (broadcasting; lower-rank inputs get axes
    inserted after the batch axis)."""

    _shape_inference = True

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def _merge_function(self, inputs):
        raise NotImplementedError

    def _elemwise_shape(self, shape1, shape2):
        if shape1 is None or shape2 is None:
            return None
        if len(shape1) < len(shape2):
            return self._elemwise_shape(shape2, shape1)
        if not shape2:
            return shape1
        out = list(shape1[:-len(shape2)])
        for i, j in zip(shape1[-len(shape2):], shape2):
            if i is None or j is None:
                out.append(None)
            elif i == 1:
                out.append(j)
            elif j == 1 or i == j:
                out.append(i)
            else:
                raise ValueError(f"Inputs have incompatible shapes. Received shapes {shape1} "
                                 f"and {shape2}")
        return tuple(out)

    def build(self, input_shape):
        shapes = _shape_list(input_shape)
        if shapes is None:
            raise ValueError("A merge layer should be called on a list of inputs. Received: "
                             f"input_shape={input_shape} (not a list of shapes)")
        batch_sizes = {s[0] for s in shapes if s} - {None}
        if len(batch_sizes) > 1:
            raise ValueError("Cannot merge tensors with different batch sizes. Got tensors "
                             f"with shapes {shapes}")
        out = None if shapes[0] is None else shapes[0][1:]
        for shape in shapes[1:]:
            out = self._elemwise_shape(out, None if shape is None else shape[1:])
        self._reshape_required = not (None not in shapes and len(set(map(len, shapes))) == 1)
        self.built = True

    def call(self, inputs):
        if not isinstance(inputs, (list, tuple)):
            raise ValueError("A merge layer should be called on a list of inputs. Received: "
                             f"inputs={inputs} (not a list of tensors)")
        if getattr(self, "_reshape_required", False):
            max_ndim = max(x.ndim for x in inputs)
            reshaped = []
            for x in inputs:
                for _ in range(max_ndim - x.ndim):
                    x = _shape.expand_dims(x, 1)
                reshaped.append(x)
            return self._merge_function(reshaped)
        return self._merge_function(list(inputs))

    def compute_output_shape(self, input_shape):
        shapes = _shape_list(input_shape)
        out = None if shapes[0] is None else shapes[0][1:]
        for shape in shapes[1:]:
            out = self._elemwise_shape(out, None if shape is None else shape[1:])
        batch_sizes = {s[0] for s in shapes if s is not None} - {None}
        batch = next(iter(batch_sizes)) if len(batch_sizes) == 1 else None
        return TensorShape(None if out is None else [batch, *out])

    def compute_mask(self, inputs, mask=None):
        if mask is None:
            return None
        if not isinstance(mask, (tuple, list)):
            raise ValueError(f"`mask` should be a list. Received: mask={mask}")
        if not isinstance(inputs, (tuple, list)):
            raise ValueError(f"`inputs` should be a list. Received: inputs={inputs}")
        if len(mask) != len(inputs):
            raise ValueError("The lists `inputs` and `mask` should have the same length. "
                             f"Received: inputs={inputs} of length {len(inputs)}, and "
                             f"mask={mask} of length {len(mask)}")
        masks = [m for m in mask if m is not None]
        if not masks:
            return None
        return functools.reduce(_m.logical_and, masks)


class Add(_Merge):
    """The sum of the inputs."""

    def _merge_function(self, inputs):
        return functools.reduce(_m.add, inputs)


class Subtract(_Merge):
    """``inputs[0] - inputs[1]`` (exactly two inputs)."""

    def build(self, input_shape):
        super().build(input_shape)
        if len(input_shape) != 2:
            raise ValueError("A `Subtract` layer should be called on exactly 2 inputs. "
                             f"Received: input_shape={input_shape}")

    def _merge_function(self, inputs):
        if len(inputs) != 2:
            raise ValueError("A `Subtract` layer should be called on exactly 2 inputs. "
                             f"Received: inputs={inputs}")
        return inputs[0] - inputs[1]


class Multiply(_Merge):
    """The elementwise product of the inputs."""

    def _merge_function(self, inputs):
        return functools.reduce(_m.multiply, inputs)


class Average(_Merge):
    """The elementwise mean of the inputs."""

    def _merge_function(self, inputs):
        total = functools.reduce(_m.add, inputs)
        return total / backend._constant_like(len(inputs), total)


class Maximum(_Merge):
    """The elementwise maximum of the inputs."""

    def _merge_function(self, inputs):
        return functools.reduce(_m.maximum, inputs)


class Minimum(_Merge):
    """The elementwise minimum of the inputs."""

    def _merge_function(self, inputs):
        return functools.reduce(_m.minimum, inputs)


class Concatenate(_Merge):
    """Concatenate the inputs along ``axis``; their other dimensions must match."""

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis
        self._reshape_required = False

    def build(self, input_shape):
        shapes = _shape_list(input_shape)
        if not shapes:
            raise ValueError("A `Concatenate` layer should be called on a list of at least 1 "
                             f"input. Received: input_shape={input_shape}")
        self.built = True
        if all(shape is None for shape in shapes):
            return
        reduced = [list(shape) for shape in shapes]
        for shape in reduced:
            del shape[self.axis]
        if len({tuple(s) for s in reduced}) != 1:
            err = ("A `Concatenate` layer requires inputs with matching shapes except for the "
                   f"concatenation axis. Received: input_shape={shapes}")
            if len({len(s) for s in reduced}) != 1:
                raise ValueError(err)
            for axis in range(len(reduced[0])):
                if len({s[axis] for s in reduced if s[axis] is not None}) > 1:
                    raise ValueError(err)

    def _merge_function(self, inputs):
        return _shape.concat(inputs, self.axis)

    def compute_output_shape(self, input_shape):
        shapes = _shape_list(input_shape)
        if shapes is None:
            raise ValueError("A `Concatenate` layer should be called on a list of inputs. "
                             f"Received: input_shape={input_shape}")
        out = list(shapes[0])
        for shape in shapes[1:]:
            if out[self.axis] is None or shape[self.axis] is None:
                out[self.axis] = None
                break
            out[self.axis] += shape[self.axis]
        return TensorShape(out)

    def compute_mask(self, inputs, mask=None):
        if mask is None:
            return None
        super().compute_mask(inputs, mask)  # the same argument checks
        if all(m is None for m in mask):
            return None
        masks = []
        for x, m in zip(inputs, mask):
            if m is None:
                masks.append(_creation.ones_like(x, dtype="bool"))
            elif m.ndim < x.ndim:
                masks.append(_shape.expand_dims(m, -1))
            else:
                masks.append(m)
        return _r.reduce_all(_shape.concat(masks, self.axis), axis=-1)

    def get_config(self) -> dict:
        config = super().get_config()
        config["axis"] = self.axis
        return config


def _batch_dot(x, y, axes):
    """Keras's ``batch_dot``: per sample, contract ``x``'s axis ``axes[0]`` with ``y``'s
    ``axes[1]``; the result keeps x's other axes, then y's (rank 1 becomes (batch, 1))."""
    ax, ay = axes
    x_rest = [d for i, d in enumerate(x.shape) if i not in (0, ax)]
    y_rest = [d for i, d in enumerate(y.shape) if i not in (0, ay)]
    batch = x.shape[0]
    xt = _shape.transpose(x, [0, *[i for i in range(1, x.ndim) if i != ax], ax])
    yt = _shape.transpose(y, [0, ay, *[i for i in range(1, y.ndim) if i != ay]])
    k = x.shape[ax]
    px = 1
    for d in x_rest:
        px *= d
    py = 1
    for d in y_rest:
        py *= d
    batch = -1 if batch is None else batch  # a graph tensor's unknown batch
    out = _matmul.matmul(_shape.reshape(xt, (batch, px, k)), _shape.reshape(yt, (batch, k, py)))
    shape = [batch, *x_rest, *y_rest]
    if len(shape) == 1:
        shape.append(1)
    return _shape.reshape(out, shape)


class Dot(_Merge):
    """The per-sample dot product of two inputs along ``axes`` (an int or one per input);
    ``normalize`` L2-normalises both first (cosine similarity)."""

    def __init__(self, axes, normalize=False, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(axes, int):
            if not isinstance(axes, (list, tuple)):
                raise TypeError("Invalid type for argument `axes`: it should be a list or an "
                                f"int. Received: axes={axes}")
            if len(axes) != 2:
                raise ValueError("Invalid format for argument `axes`: it should contain two "
                                 f"elements. Received: axes={axes}")
            if not isinstance(axes[0], int) or not isinstance(axes[1], int):
                raise ValueError("Invalid format for argument `axes`: list elements should be "
                                 f"integers. Received: axes={axes}")
        self.axes = axes
        self.normalize = normalize
        self._reshape_required = False

    def _resolved_axes(self, rank1, rank2):
        if isinstance(self.axes, int):
            return ([self.axes % rank1, self.axes % rank2] if self.axes < 0
                    else [self.axes] * 2)
        return [a % r if a < 0 else a for a, r in zip(self.axes, (rank1, rank2))]

    def build(self, input_shape):
        shapes = _shape_list(input_shape)
        if shapes is None or len(shapes) != 2:
            raise ValueError("A `Dot` layer should be called on a list of 2 inputs. Received: "
                             f"input_shape={input_shape}")
        shape1, shape2 = shapes
        self.built = True
        if shape1 is None or shape2 is None:
            return
        axes = self._resolved_axes(len(shape1), len(shape2))
        if shape1[axes[0]] != shape2[axes[1]]:
            raise ValueError(f"Incompatible input shapes: axis values {shape1[axes[0]]} (at "
                             f"axis {axes[0]}) != {shape2[axes[1]]} (at axis {axes[1]}). Full "
                             f"input shapes: {shape1}, {shape2}")

    def _merge_function(self, inputs):
        if len(inputs) != 2:
            raise ValueError("A `Dot` layer should be called on exactly 2 inputs. Received: "
                             f"inputs={inputs}")
        x1, x2 = inputs
        axes = self._resolved_axes(x1.ndim, x2.ndim)
        if self.normalize:
            x1 = _nn.l2_normalize(x1, axis=axes[0])
            x2 = _nn.l2_normalize(x2, axis=axes[1])
        if None in (*tuple(x1.shape)[1:], *tuple(x2.shape)[1:]):  # a graph tensor's sizes
            return call_on_values(lambda a, b: _batch_dot(a, b, axes), x1, x2)
        return _batch_dot(x1, x2, axes)

    def compute_output_shape(self, input_shape):
        shapes = _shape_list(input_shape)
        if shapes is None or len(shapes) != 2:
            raise ValueError("A `Dot` layer should be called on a list of 2 inputs. Received: "
                             f"input_shape={input_shape}")
        shape1, shape2 = list(shapes[0]), list(shapes[1])
        axes = self._resolved_axes(len(shape1), len(shape2))
        shape1.pop(axes[0])
        shape2.pop(axes[1])
        shape2.pop(0)
        out = shape1 + shape2
        if len(out) == 1:
            out += [1]
        return TensorShape(out)

    def compute_mask(self, inputs, mask=None):
        return None

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(axes=self.axes, normalize=self.normalize)
        return config


def _functional(cls):
    def merge(inputs, **kwargs):
        return cls(**kwargs)(inputs)
    merge.__name__ = cls.__name__.lower()
    merge.__doc__ = f"``{cls.__name__}(**kwargs)(inputs)``."
    return merge


add, subtract, multiply, average = (_functional(c) for c in (Add, Subtract, Multiply, Average))
maximum, minimum = _functional(Maximum), _functional(Minimum)


def concatenate(inputs, axis=-1, **kwargs):
    """``Concatenate(axis, **kwargs)(inputs)``."""
    return Concatenate(axis=axis, **kwargs)(inputs)


def dot(inputs, axes, normalize=False, **kwargs):
    """``Dot(axes, normalize, **kwargs)(inputs)``."""
    return Dot(axes=axes, normalize=normalize, **kwargs)(inputs)
