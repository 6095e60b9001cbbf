"""``InputSpec``: the rank, dtype and shape a layer accepts, and the check that raises Keras's
messages when a call breaks them (``tf_keras/src/engine/input_spec.py``)."""

from __future__ import annotations

import numpy as np

from ...core import nest
from ...core.tensor import Tensor
from ...core.spec import TensorShape, as_shape


class InputSpec:
    """Specifies the rank, dtype and shape of every input to a layer.

    Args:
      dtype: expected dtype of the input.
      shape: expected shape tuple, batch included (None entries match anything).
      ndim, max_ndim, min_ndim: expected rank, or its bounds.
      axes: dict mapping axes to the size they must have.
      allow_last_axis_squeeze: accept rank N+1 with a last axis of 1, or rank N-1 where the
        spec's last axis is 1.
      name: key of this input when inputs come as a dict.
      optional: whether the input may be None.
    """

    def __init__(self, dtype=None, shape=None, ndim=None, max_ndim=None, min_ndim=None,
                 axes=None, allow_last_axis_squeeze=False, name=None, optional=False):
        self.dtype = np.dtype(dtype).name if dtype is not None else None
        shape = as_shape(shape) if shape is not None else TensorShape(None)
        shape = None if shape.rank is None else tuple(shape.as_list())
        if shape is not None:
            self.ndim = len(shape)
            self.shape = shape
        else:
            self.ndim = ndim
            self.shape = None
        self.max_ndim = max_ndim
        self.min_ndim = min_ndim
        self.name = name
        self.allow_last_axis_squeeze = allow_last_axis_squeeze
        self.optional = optional
        try:
            axes = axes or {}
            self.axes = {int(k): axes[k] for k in axes}
        except (ValueError, TypeError):
            raise TypeError(f"Argument `axes` must be a dict with integer keys. Received: "
                            f"axes={axes}") from None
        if self.axes and (self.ndim is not None or self.max_ndim is not None):
            max_dim = (self.ndim if self.ndim else self.max_ndim) - 1
            max_axis = max(self.axes)
            if max_axis > max_dim:
                raise ValueError(f"Axis {max_axis} is greater than the maximum allowed value: "
                                 f"{max_dim}")

    def __repr__(self) -> str:
        spec = [("dtype=" + str(self.dtype)) if self.dtype else "",
                ("shape=" + str(self.shape)) if self.shape else "",
                ("ndim=" + str(self.ndim)) if self.ndim else "",
                ("max_ndim=" + str(self.max_ndim)) if self.max_ndim else "",
                ("min_ndim=" + str(self.min_ndim)) if self.min_ndim else "",
                ("axes=" + str(self.axes)) if self.axes else ""]
        return f"InputSpec({', '.join(x for x in spec if x)})"

    def get_config(self) -> dict:
        return {"dtype": self.dtype, "shape": self.shape, "ndim": self.ndim,
                "max_ndim": self.max_ndim, "min_ndim": self.min_ndim, "axes": self.axes}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _shape_of(x) -> TensorShape:
    shape = x.shape
    return shape if isinstance(shape, TensorShape) and not isinstance(shape, tuple) else \
        TensorShape(list(shape))


def _display(shape: TensorShape) -> str:
    return str(tuple(shape.as_list()))


def assert_input_compatibility(input_spec, inputs, layer_name: str) -> None:
    """Check ``inputs`` against ``input_spec`` (an InputSpec or a nested structure of them).

    Raises:
      ValueError: a wrong number of inputs, rank, dtype, axis size or shape (Keras's words).
      TypeError: an input that is not a tensor.
    """
    if not input_spec:
        return
    if isinstance(input_spec, InputSpec) and isinstance(inputs, Tensor):
        _check_tensor(input_spec, inputs, layer_name)  # the common case, without the packing
        return
    specs = nest.flatten(input_spec)
    if isinstance(inputs, dict):
        names = [spec.name for spec in specs]
        if all(names):
            for name in names:
                if name not in inputs:
                    raise ValueError(f'Missing data for input "{name}". You passed a data '
                                     f"dictionary with keys {list(inputs.keys())}. Expected "
                                     f"the following keys: {names}")
            inputs = [inputs[name] for name in names]
    flat = nest.flatten(inputs)
    for x, spec in zip(flat, specs):
        if spec is None or (x is None and spec.optional):
            continue
        if not hasattr(x, "shape"):
            raise TypeError(f"Inputs to a layer should be tensors. Got '{x}' (of type "
                            f"{type(x)}) as input for layer '{layer_name}'.")
    if len(flat) != len(specs):
        raise ValueError(f'Layer "{layer_name}" expects {len(specs)} input(s), but it received '
                         f"{len(flat)} input tensors. Inputs received: {flat}")
    for index, (x, spec) in enumerate(zip(flat, specs)):
        if spec is None or (x is None and spec.optional):
            continue
        shape = _shape_of(x)
        if shape.rank is None:
            return
        head = f'Input {index} of layer "{layer_name}" is incompatible with the layer: '
        ndim = shape.rank
        if spec.ndim is not None and not spec.allow_last_axis_squeeze and ndim != spec.ndim:
            raise ValueError(f"{head}expected ndim={spec.ndim}, found ndim={ndim}. Full shape "
                             f"received: {tuple(shape.as_list())}")
        if spec.max_ndim is not None and ndim > spec.max_ndim:
            raise ValueError(f"{head}expected max_ndim={spec.max_ndim}, found ndim={ndim}")
        if spec.min_ndim is not None and ndim < spec.min_ndim:
            raise ValueError(f"{head}expected min_ndim={spec.min_ndim}, found ndim={ndim}. Full "
                             f"shape received: {tuple(shape.as_list())}")
        if spec.dtype is not None and np.dtype(x.dtype).name != spec.dtype:
            raise ValueError(f"{head}expected dtype={spec.dtype}, found "
                             f"dtype={np.dtype(x.dtype).name}")
        dims = shape.as_list()
        for axis, value in spec.axes.items():
            value = getattr(value, "value", value)
            if value is not None and dims[int(axis)] not in {value, None}:
                raise ValueError(f'Input {index} of layer "{layer_name}" is incompatible with '
                                 f"the layer: expected axis {axis} of input shape to have value "
                                 f"{value}, but received input with shape {_display(shape)}")
        if spec.shape is not None:
            spec_shape = spec.shape
            if spec.allow_last_axis_squeeze:
                if dims and dims[-1] == 1:
                    dims = dims[:-1]
                if spec_shape and spec_shape[-1] == 1:
                    spec_shape = spec_shape[:-1]
            for spec_dim, dim in zip(spec_shape, dims):
                if spec_dim is not None and dim is not None and spec_dim != dim:
                    raise ValueError(f'Input {index} of layer "{layer_name}" is incompatible '
                                     f"with the layer: expected shape={spec.shape}, found "
                                     f"shape={_display(shape)}")


def _check_tensor(spec: InputSpec, x: Tensor, layer_name: str) -> None:
    """``assert_input_compatibility`` for one spec and one eager tensor: the common checks on
    the shape tuple, the full check (and its messages) when one fails."""
    dims = x._value.shape
    ndim = len(dims)
    if ((spec.ndim is None or spec.allow_last_axis_squeeze or ndim == spec.ndim)
            and (spec.max_ndim is None or ndim <= spec.max_ndim)
            and (spec.min_ndim is None or ndim >= spec.min_ndim)
            and (spec.dtype is None or x.dtype.name == spec.dtype)
            and spec.shape is None
            and all(value is None or dims[int(axis)] == getattr(value, "value", value)
                    for axis, value in spec.axes.items())):
        return
    assert_input_compatibility([spec], [x], layer_name)
