"""Core layers: ``Dense``, ``Activation``, ``Lambda``, ``Masking``, ``Identity``,
``Rescaling``."""

from __future__ import annotations

import binascii
import codecs
import inspect
import marshal
import sys
import types
import warnings

import numpy as np

from ...core.spec import TensorShape, as_shape
from ...ops import math as _m
from ...ops import matmul as _matmul
from ...ops import reduction as _r
from ...ops import nn as _nn
from ...ops import shape as _shape
from .. import activations, backend
from ..engine.call_context import set_mask
from ..engine.base_layer import Layer
from ..engine.input_spec import InputSpec
from ._graph_shapes import call_on_values, reshape_dims
from ._weight_args import add_kernel_and_bias, set_weight_args, weight_args_config


def _dtype_name(x):
    dtype = getattr(x, "dtype", None)
    return getattr(dtype, "name", str(dtype))


class Dense(Layer):
    """``activation(inputs @ kernel + bias)``, along the last axis of inputs of any rank >= 2.

    Args:
      units: the output size.
      activation, use_bias, kernel/bias initializer, regularizer, constraint: as Keras.
    """

    _shape_inference = True

    def __init__(self, units, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.units = int(units) if not isinstance(units, int) else units
        if self.units < 0:
            raise ValueError("Received an invalid value for `units`, expected a positive "
                             f"integer. Received: units={units}")
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        set_weight_args(self, ("kernel", "bias"), locals())
        self.input_spec = InputSpec(min_ndim=2)
        self.supports_masking = True

    def build(self, input_shape):
        if np.dtype(self.dtype).kind != "f":
            raise TypeError("A Dense layer can only be built with a floating-point dtype. "
                            f"Received: dtype={self.dtype}")
        input_shape = as_shape(input_shape)
        last_dim = input_shape[-1]
        if last_dim is None:
            raise ValueError("The last dimension of the inputs to a Dense layer should be "
                             f"defined. Found None. Full input shape received: {input_shape}")
        self.input_spec = InputSpec(min_ndim=2, axes={-1: last_dim})
        add_kernel_and_bias(self, last_dim)
        self.built = True

    def call(self, inputs):
        if inputs.ndim != 2 and tuple(inputs.shape[:-1]).count(None) > 1:
            return call_on_values(self.call, inputs, reads=self.weights)  # a graph tensor's
        flat = inputs
        if inputs.ndim != 2:  # tensordot over the last axis
            flat = _shape.reshape(inputs, (-1, inputs.shape[-1]))
        relu = self.activation is activations.relu
        if self._fuses_bias(flat):  # matmul, bias and relu in one op (the same arithmetic)
            outputs = _matmul.dense_bias(flat, self.kernel, self.bias, relu=relu)
        else:
            relu = False
            outputs = _matmul.matmul(flat, self.kernel)
            if self.use_bias:
                outputs = _nn.bias_add(outputs, self.bias)
        if inputs.ndim != 2:
            outputs = _shape.reshape(outputs, reshape_dims(tuple(inputs.shape[:-1])
                                                           + (self.units,)))
        if self.activation is not None and not relu:
            outputs = self.activation(outputs)
        return outputs

    def _fuses_bias(self, inputs) -> bool:
        dtype = _dtype_name(inputs)
        return (self.use_bias and dtype in ("float32", "float64")
                and _dtype_name(self.kernel) == dtype == _dtype_name(self.bias))

    def compute_output_shape(self, input_shape):
        input_shape = as_shape(input_shape).with_rank_at_least(2)
        if input_shape[-1] is None:
            raise ValueError("The last dimension of the input shape of a Dense layer should be "
                             f"defined. Found None. Received: input_shape={input_shape}")
        return input_shape[:-1].concatenate([self.units])

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({
            "units": self.units,
            "activation": activations.serialize(self.activation),
            "use_bias": self.use_bias,
        })
        config.update(weight_args_config(self, ("kernel", "bias"), activity_regularizer=True))
        return config


class Activation(Layer):
    """Applies an activation function (a name or a callable) to its input."""

    _shape_inference = True

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.activation = activations.get(activation)

    def call(self, inputs):
        return self.activation(inputs)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self) -> dict:
        config = super().get_config()
        config["activation"] = activations.serialize(self.activation)
        return config


class Lambda(Layer):
    """Wraps an arbitrary function of the inputs as a layer.

    Args:
      function: called as ``function(inputs, **arguments)``, with ``mask`` and ``training``
        too when it takes them.
      output_shape: the output shape without the batch dimension, or a function of the input
        shape; default: inferred by running the function.
      mask: a function ``(inputs, mask) -> mask``, or a fixed mask.
      arguments: extra keyword arguments for ``function``.
    """

    def __init__(self, function, output_shape=None, mask=None, arguments=None, **kwargs):
        super().__init__(**kwargs)
        self.function = function
        self.arguments = arguments or {}
        self.mask = mask
        self._output_shape = output_shape
        try:
            params = inspect.signature(function).parameters
        except (TypeError, ValueError):
            params = {}
        self._fn_expects_training_arg = "training" in params
        self._fn_expects_mask_arg = "mask" in params

    def call(self, inputs, mask=None, training=None):
        kwargs = dict(self.arguments)
        if self._fn_expects_mask_arg:
            kwargs["mask"] = mask
        if self._fn_expects_training_arg:
            kwargs["training"] = training
        return self.function(inputs, **kwargs)

    def compute_mask(self, inputs, mask=None):
        if callable(self.mask):
            return self.mask(inputs, mask)
        return self.mask

    def compute_output_shape(self, input_shape):
        if self._output_shape is None:
            return super().compute_output_shape(input_shape)
        if callable(self._output_shape):
            return as_shape(self._output_shape(input_shape))
        batch = as_shape(input_shape)[0] if not isinstance(input_shape, list) else \
            as_shape(input_shape[0])[0]
        return TensorShape([batch, *as_shape(self._output_shape).as_list()])

    def get_config(self) -> dict:
        """Keras 2's config: every Python function (a lambda or a named one) as its marshalled
        bytecode (``function_type`` 'lambda'), another callable by name ('function'), a shape
        as is ('raw'); ``mask`` likewise where there is one.

        Raises:
          ValueError: ``function`` or ``mask`` is not callable (Keras's message).
        """
        function, function_type, module = _serialize_function(self.function)
        shape, shape_type, shape_module = _serialize_function(self._output_shape,
                                                              allow_raw=True)
        config = {"function": function, "function_type": function_type, "module": module,
                  "output_shape": shape, "output_shape_type": shape_type,
                  "output_shape_module": shape_module}
        if self.mask is not None:
            mask, mask_type, mask_module = _serialize_function(self.mask)
            config.update(mask=mask, mask_type=mask_type, mask_module=mask_module)
        config["arguments"] = self.arguments
        return {**super().get_config(), **config}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """The layer of ``get_config``'s dict (Keras 2's or an older one that names only
        ``function``): bytecode runs with its module's globals (and ``custom_objects``), a
        'function' is looked up in ``custom_objects``.

        Raises:
          ValueError: an unknown function name; TypeError: an unknown function type.
        """
        config = dict(config)
        config["function"] = _function_from_config(config, custom_objects, "function",
                                                   "module", "function_type")
        if "output_shape_type" in config:
            config["output_shape"] = _function_from_config(
                config, custom_objects, "output_shape", "output_shape_module",
                "output_shape_type")
        config["mask"] = (_function_from_config(config, custom_objects, "mask", "mask_module",
                                                "mask_type") if "mask" in config else None)
        return cls(**config)


def func_dump(func) -> tuple:
    """``(code, defaults, closure)`` of a Python function: its marshalled bytecode in base64
    (Keras's ``generic_utils.func_dump``)."""
    code = codecs.encode(marshal.dumps(func.__code__), "base64").decode("ascii")
    closure = tuple(c.cell_contents for c in func.__closure__) if func.__closure__ else None
    return code, func.__defaults__, closure


def func_load(code, defaults=None, closure=None, globs=None):
    """The function ``func_dump`` serialized (Keras's ``generic_utils.func_load``; it runs
    the stored bytecode, so load only files you trust)."""
    if isinstance(code, (tuple, list)):
        code, defaults, closure = code
        if isinstance(defaults, list):
            defaults = tuple(defaults)

    def cell(value):
        return (lambda: value).__closure__[0]

    if closure is not None:
        closure = tuple(c if isinstance(c, types.CellType) else cell(c) for c in closure)
    try:
        raw = codecs.decode(code.encode("ascii"), "base64")
    except (UnicodeEncodeError, binascii.Error):
        raw = code.encode("raw_unicode_escape")
    code = marshal.loads(raw)
    return types.FunctionType(code, globals() if globs is None else globs, name=code.co_name,
                              argdefs=defaults, closure=closure)


def _serialize_function(fn, allow_raw=False) -> tuple:
    if isinstance(fn, types.LambdaType):  # every Python function, as in Keras 2
        return func_dump(fn), "lambda", fn.__module__
    if callable(fn):
        return fn.__name__, "function", fn.__module__
    if allow_raw:
        return fn, "raw", None
    raise ValueError(f"Invalid input for serialization, type: {type(fn)} ")


def _function_from_config(config, custom_objects, name, module_key, type_key):
    from ..engine.serialization import deserialize_keras_object

    module = config.pop(module_key, None)
    kind = config.pop(type_key, "function")
    globs = dict(globals())
    if module in sys.modules:
        globs.update(sys.modules[module].__dict__)
    elif module is not None:
        warnings.warn(f"{module} is not loaded, but a Lambda layer uses it. It may cause "
                      "errors.", UserWarning, stacklevel=3)
    globs.update(custom_objects or {})
    if kind == "function":
        return deserialize_keras_object(config[name], {}, custom_objects,
                                        "function in Lambda layer")
    if kind == "lambda":
        return func_load(config[name], globs=globs)
    if kind == "raw":
        return config[name]
    raise TypeError(f"Unsupported value for `function_type` argument. Received: "
                    f"function_type={kind}. Expected one of ['function', 'lambda', 'raw']")


class Masking(Layer):
    """Masks timesteps whose features all equal ``mask_value``: they are zeroed and the
    output's mask (``any(inputs != mask_value, axis=-1)``) skips them downstream."""

    _shape_inference = True

    def __init__(self, mask_value=0.0, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.mask_value = mask_value
        self._compute_output_and_mask_jointly = True

    def compute_mask(self, inputs, mask=None):
        return _r.reduce_any(_m.not_equal(inputs, backend._constant_like(self.mask_value,
                                                                         inputs)), axis=-1)

    def call(self, inputs):
        keep = _r.reduce_any(_m.not_equal(inputs, backend._constant_like(self.mask_value,
                                                                          inputs)),
                             axis=-1, keepdims=True)
        outputs = inputs * _m.cast(keep, inputs.dtype)
        set_mask(outputs, _shape.squeeze(keep, [-1]))
        return outputs

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self) -> dict:
        config = super().get_config()
        config["mask_value"] = self.mask_value
        return config


class Identity(Layer):
    """Returns its input unchanged."""

    _shape_inference = True

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, inputs):
        return inputs

    def compute_output_shape(self, input_shape):
        return input_shape


class Rescaling(Layer):
    """``inputs * scale + offset`` in the compute dtype (integer images become floats)."""

    _shape_inference = True
    _float_output = True

    def __init__(self, scale, offset=0.0, **kwargs):
        self.scale = scale
        self.offset = offset
        super().__init__(**kwargs)

    def call(self, inputs):
        dtype = self.compute_dtype
        x = inputs if inputs.dtype == np.dtype(dtype) else _m.cast(inputs, dtype)
        return x * backend._constant_like(self.scale, x) + backend._constant_like(self.offset,
                                                                                 x)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(scale=self.scale, offset=self.offset)
        return config
