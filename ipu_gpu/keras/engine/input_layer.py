"""``InputLayer`` and ``keras.Input``: the entry points of a functional graph
(``tf_keras/src/engine/input_layer.py``)."""

from __future__ import annotations

import numpy as np

from ...core.spec import TensorShape
from .. import backend
from .base_layer import Layer
from .keras_tensor import KerasTensor, keras_tensor_from_tensor
from .node import Node


class InputLayer(Layer):
    """The layer behind ``keras.Input``: it holds one KerasTensor, the output of its only
    node (``is_input``), and passes values through unchanged when called.

    Args:
      input_shape: the shape without the batch dimension (an int is a 1-D shape).
      batch_size: the batch size (None: unknown).
      dtype: the input dtype (default floatx()).
      input_tensor: an existing tensor whose shape and dtype to use.
      sparse, ragged: not supported (NotImplementedError when true).
      name: the layer's name (default ``input_<n>``).
      type_spec: a ``TensorSpec`` of the whole batch.
      optional: whether the input may be None.
    """

    def __init__(self, input_shape=None, batch_size=None, dtype=None, input_tensor=None,
                 sparse=None, name=None, ragged=None, type_spec=None, optional=False,
                 **kwargs):
        if "batch_input_shape" in kwargs:
            batch_input_shape = kwargs.pop("batch_input_shape")
            if input_shape and batch_input_shape:
                raise ValueError("Only provide the input_shape OR batch_input_shape argument "
                                 "to InputLayer, not both at the same time.")
            if batch_input_shape:
                batch_size = batch_input_shape[0]
                input_shape = batch_input_shape[1:]
        if kwargs:
            raise ValueError(f"Unrecognized keyword arguments: {list(kwargs.keys())}")
        if sparse and ragged:
            raise ValueError("Cannot set both sparse and ragged to True in a Keras input.")
        if sparse or ragged:
            raise NotImplementedError("InputLayer: sparse and ragged inputs are not emulated")
        if not name:
            name = f"input_{backend.get_uid('input')}"
        if type_spec is not None:
            for arg, value in (("(input_)shape", input_shape), ("batch_size", batch_size),
                               ("dtype", dtype), ("input_tensor", input_tensor)):
                if value is not None:
                    raise ValueError(f"When `type_spec` is not None, all other args except "
                                     f"`name` must be None, but {arg} is not None.")
            input_tensor = KerasTensor.from_spec(type_spec)
        if not dtype:
            dtype = backend.floatx() if input_tensor is None else np.dtype(
                input_tensor.dtype).name
        elif input_tensor is not None and np.dtype(input_tensor.dtype) != np.dtype(
                getattr(dtype, "name", dtype)):
            raise ValueError(f"`input_tensor.dtype` differs from `dtype`. Received: "
                             f"input_tensor.dtype={np.dtype(input_tensor.dtype).name} but "
                             f"expected dtype={dtype}")
        super().__init__(dtype=dtype, name=name)
        self.built = True
        self.sparse = False
        self.ragged = False
        self.batch_size = batch_size
        self.supports_masking = True
        self.optional = optional
        if isinstance(input_shape, TensorShape):
            input_shape = tuple(input_shape.as_list())
        elif isinstance(input_shape, int):
            input_shape = (input_shape,)
        if input_tensor is None:
            batch_input_shape = (None if input_shape is None
                                 else (batch_size,) + tuple(input_shape))
            input_tensor = KerasTensor(None if batch_input_shape is None
                                       else list(batch_input_shape), self.dtype, self.name)
            self.is_placeholder = True
            self._batch_input_shape = batch_input_shape
        else:
            if not isinstance(input_tensor, KerasTensor):
                input_tensor = keras_tensor_from_tensor(input_tensor, self.name)
            self.is_placeholder = False
            rank = input_tensor.shape.rank
            self._batch_input_shape = (None if rank is None
                                       else tuple(input_tensor.shape.as_list()))
        input_tensor._keras_mask = None
        Node(self, outputs=input_tensor)
        self._type_spec = input_tensor.type_spec

    def get_config(self) -> dict:
        return {"batch_input_shape": self._batch_input_shape, "dtype": self.dtype,
                "sparse": self.sparse, "ragged": self.ragged, "name": self.name,
                "optional": self.optional}


def Input(shape=None, batch_size=None, name=None, dtype=None, sparse=None, tensor=None,  # noqa: N802
          ragged=None, type_spec=None, optional=False, **kwargs):
    """A symbolic input of a functional model (``keras.Input``): a KerasTensor of shape
    ``(batch_size,) + shape``.

    Args:
      shape: the shape without the batch dimension (None entries: unknown sizes).
      batch_size: the batch size (None: unknown).
      name: the input layer's name.
      dtype: the dtype (default floatx()).
      sparse, ragged: not supported.
      tensor: an existing tensor whose shape and dtype to use.
      type_spec: a ``TensorSpec`` of the whole batch.
      optional: whether the input may be None.
      **kwargs: ``batch_input_shape`` or ``batch_shape`` (the shape with the batch).

    Raises:
      ValueError: both ``shape`` and a batch shape; none of shape, tensor and type_spec;
        unknown keyword arguments.
    """
    if sparse and ragged:
        raise ValueError("Cannot set both `sparse` and `ragged` to `True` in a Keras `Input`.")
    has_spec_name = name is None and type_spec is not None and getattr(type_spec, "name", None)
    if has_spec_name:
        name = type_spec.name
    config = {"name": name, "dtype": dtype, "sparse": sparse, "ragged": ragged,
              "input_tensor": tensor, "type_spec": type_spec, "optional": optional}
    batch_input_shape = kwargs.pop("batch_input_shape", kwargs.pop("batch_shape", None))
    if shape is not None and batch_input_shape is not None:
        raise ValueError("Only provide the `shape` OR `batch_input_shape` argument to Input, "
                         "not both at the same time.")
    if batch_input_shape is None and shape is None and tensor is None and type_spec is None:
        raise ValueError("Please provide to Input a `shape` or a `tensor` or a `type_spec` "
                         "argument. Note that `shape` does not include the batch dimension.")
    if kwargs:
        raise ValueError(f"Unrecognized keyword arguments: {list(kwargs.keys())}")
    if batch_input_shape:
        config["batch_input_shape"] = batch_input_shape
    else:
        config.update(batch_size=batch_size, input_shape=shape)
    layer = InputLayer(**config)
    outputs = layer._inbound_nodes[0].outputs
    return outputs[0] if isinstance(outputs, list) and len(outputs) == 1 else outputs
