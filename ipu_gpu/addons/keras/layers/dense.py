"""``SerialDense``: a Dense layer whose matmul is serialized
(``ipu.math_ops.serialized_matmul``)."""

from __future__ import annotations

from ipu_gpu.core import dtypes
from ipu_gpu.core.spec import as_shape
from ipu_gpu.ipu import math_ops as ipu_math_ops
from ipu_gpu.keras import activations, backend, regularizers
from ipu_gpu.keras.engine.base_layer import Layer
from ipu_gpu.keras.engine.input_spec import InputSpec
from ipu_gpu.keras.layers._weight_args import (add_kernel_and_bias, set_weight_args,
                                               weight_args_config)
from ipu_gpu.ops import math as _m
from ipu_gpu.ops import nn as _nn

__all__ = ["SerialDense"]

_DIMENSIONS = {"input_columns": "a_columns", "input_rows_kernel_columns": "a_rows_b_columns",
               "kernel_rows": "b_rows"}


class SerialDense(Layer):
    """``activation(inputs @ kernel + bias)`` as Keras's ``Dense``, the matmul split into
    ``serialization_factor`` smaller ones along ``serialization_dimension``:
    ``"input_columns"`` (the kernel's rows too), ``"input_rows_kernel_columns"`` (the
    output's columns) or ``"kernel_rows"``. Other arguments as ``Dense``.

    Raises (at call):
      ValueError: ``serialization_factor`` < 1; an unknown ``serialization_dimension``.
    """

    def __init__(self, units, serialization_factor, serialization_dimension, activation=None,
                 use_bias=True, kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        if "input_shape" not in kwargs and "input_dim" in kwargs:
            kwargs["input_shape"] = (kwargs.pop("input_dim"),)
        super().__init__(activity_regularizer=regularizers.get(activity_regularizer), **kwargs)
        self.serialization_factor = int(serialization_factor)
        self.serialization_dimension = serialization_dimension
        self.units = int(units)
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        set_weight_args(self, ("kernel", "bias"), locals())
        self.supports_masking = True
        self.input_spec = InputSpec(min_ndim=2)

    def build(self, input_shape):
        dtype = dtypes.as_dtype(self.dtype or backend.floatx())
        if dtype.kind not in "fc":
            raise TypeError("Unable to build `SerialDense` layer with non-floating point "
                            f"dtype {dtype}")
        input_shape = as_shape(input_shape)
        last_dim = input_shape.as_list()[-1]
        if last_dim is None:
            raise ValueError("The last dimension of the inputs to `SerialDense` should be "
                             "defined. Found `None`.")
        self.input_spec = InputSpec(min_ndim=2, axes={-1: last_dim})
        add_kernel_and_bias(self, last_dim)
        self.built = True

    def call(self, inputs, **kwargs):
        """The layer's output for ``inputs`` (..., input_dim)."""
        if self.serialization_factor < 1:
            raise ValueError("serialization_factor has to be at least 1, but was "
                             f"{self.serialization_factor}.")
        inputs = _m.cast(inputs, self.compute_dtype)
        dimension = _DIMENSIONS.get(self.serialization_dimension)
        if dimension is None:
            raise ValueError(f"Invalid serialization_dimension={self.serialization_dimension}"
                             ", expected one of: 'input_columns', "
                             "'input_rows_kernel_columns', 'kernel_rows'.")
        outputs = ipu_math_ops.serialized_matmul(inputs, self.kernel,
                                                 self.serialization_factor, dimension)
        if self.use_bias:
            outputs = _nn.bias_add(outputs, self.bias)
        if self.activation is not None:
            return self.activation(outputs)
        return outputs

    def compute_output_shape(self, input_shape):
        input_shape = as_shape(input_shape)
        if input_shape.as_list()[-1] is None:
            raise ValueError("The innermost dimension of input_shape must be defined, but "
                             f"saw: {input_shape}")
        return input_shape[:-1].concatenate([self.units])

    def get_config(self) -> dict:
        config = {
            "units": self.units, "serialization_factor": self.serialization_factor,
            "serialization_dimension": self.serialization_dimension,
            "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
            **weight_args_config(self, ("kernel", "bias"), activity_regularizer=True),
        }
        return {**super().get_config(), **config}
