"""TF 2's own initializers at the top level: ``tf.constant_initializer``,
``tf.zeros_initializer``, ``tf.ones_initializer``, ``tf.random_normal_initializer`` and
``tf.random_uniform_initializer`` (``init_ops_v2``). Unlike Keras's, a constant initializer
called without a dtype takes the value's dtype, and the others default to float32."""

from __future__ import annotations

import numpy as np

__all__ = ["constant_initializer", "ones_initializer", "random_normal_initializer",
           "random_uniform_initializer", "zeros_initializer"]

_PARTITION_KWARGS = ("partition_shape", "partition_offset")


class Initializer:
    """The base of TF 2's initializers (each is called as ``initializer(shape, dtype)``);
    ``get_config``/``from_config`` round-trip the arguments."""

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config):
        config.pop("dtype", None)
        return cls(**config)


def _check_kwargs(kwargs) -> None:
    for k in kwargs:
        if k not in _PARTITION_KWARGS:
            raise TypeError(f"Keyword argument should be one of {list(_PARTITION_KWARGS)}. "
                            f"Received: {k}")


def _shape(shape, kwargs) -> list:
    shape = kwargs.get("partition_shape", shape)
    return [int(n) for n in shape]


class constant_initializer(Initializer):  # noqa: N801 - TF's name
    """``tf.constant_initializer(value=0)``: a scalar fills the shape; a list or array with as
    many elements as the shape is reshaped to it. Without ``dtype`` the tensor takes the
    value's dtype (Python ints int32, floats float32).

    Raises:
      TypeError: ``value`` is not a scalar, list, tuple or ndarray (at construction), or has
        neither one element nor as many as the shape (at the call); TF's messages.
      ValueError: a call with ``partition_shape``/``partition_offset``."""

    def __init__(self, value=0):
        if not (np.isscalar(value) or isinstance(value, (list, tuple, np.ndarray))):
            raise TypeError(f"Invalid type for initial value: {type(value).__name__}. Expected "
                            "Python scalar, list or tuple of values, or numpy.ndarray.")
        self.value = value

    def __call__(self, shape, dtype=None, **kwargs):
        from .core.convert import constant

        _check_kwargs(kwargs)
        if kwargs:
            raise ValueError("Constant initializer doesn't support partition-related arguments")
        dims = _shape(shape, kwargs)
        size = int(np.size(self.value))
        if size != 1 and size != int(np.prod(dims, dtype=np.int64)):
            raise TypeError(f"Eager execution of tf.constant with unsupported shape. Tensor "
                            f"{np.asarray(self.value)} (converted from {self.value}) has {size} "
                            f"elements, but got `shape` {tuple(dims)} with "
                            f"{int(np.prod(dims, dtype=np.int64))} elements).")
        return constant(self.value, dtype=dtype, shape=dims)

    def get_config(self) -> dict:
        return {"value": self.value}


class _Fill(Initializer):
    _fill = 0

    def __call__(self, shape, dtype=np.float32, **kwargs):
        from .core.dtypes import as_dtype
        from .ops.creation import fill

        _check_kwargs(kwargs)
        d = as_dtype(dtype)
        if d.kind not in "biuf":
            raise ValueError(f"Expected numeric or boolean dtype, got {d}.")
        return fill(_shape(shape, kwargs), np.asarray(self._fill, dtype=d))


class zeros_initializer(_Fill):  # noqa: N801
    """``tf.zeros_initializer()``: zeros, float32 unless ``dtype`` is given.

    Raises:
      ValueError: a dtype that is neither numeric nor boolean."""

    _fill = 0


class ones_initializer(_Fill):  # noqa: N801
    """``tf.ones_initializer()``: ones, float32 unless ``dtype`` is given.

    Raises:
      ValueError: a dtype that is neither numeric nor boolean."""

    _fill = 1


class _Random(Initializer):
    """A seeded random initializer draws with the stateless op at seed ``[seed, 0]`` (each
    call the same values); an unseeded one draws from the stateful generator (tf.random)."""

    def _draw(self, stateless, stateful, shape, **kwargs):
        if self.seed is not None:
            return stateless(shape, seed=[int(self.seed), 0], **kwargs)
        return stateful(shape, **kwargs)


class random_normal_initializer(_Random):  # noqa: N801
    """``tf.random_normal_initializer(mean=0.0, stddev=0.05, seed=None)``: a normal draw,
    float32 unless ``dtype`` is given.

    Raises:
      ValueError: a dtype that is not floating point."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape, dtype=np.float32, **kwargs):
        from . import random
        from .core.dtypes import as_dtype

        _check_kwargs(kwargs)
        d = as_dtype(dtype)
        if d.kind != "f":
            raise ValueError(f"Argument `dtype` is expected to be floating point. Received: "
                             f"{d}.")
        return self._draw(random.stateless_normal, random.normal, _shape(shape, kwargs),
                          mean=self.mean, stddev=self.stddev, dtype=d)

    def get_config(self) -> dict:
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class random_uniform_initializer(_Random):  # noqa: N801
    """``tf.random_uniform_initializer(minval=-0.05, maxval=0.05, seed=None)``: uniform in
    [minval, maxval), float32 unless ``dtype`` is given (integer dtypes too).

    Raises:
      ValueError: a dtype that is neither floating point nor integer."""

    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        self.minval, self.maxval, self.seed = minval, maxval, seed

    def __call__(self, shape, dtype=np.float32, **kwargs):
        from . import random
        from .core.dtypes import as_dtype

        _check_kwargs(kwargs)
        d = as_dtype(dtype)
        if d.kind not in "fiu":
            raise ValueError(f"Argument `dtype` expected to be numeric or boolean. Received "
                             f"{d}.")
        return self._draw(random.stateless_uniform, random.uniform, _shape(shape, kwargs),
                          minval=self.minval, maxval=self.maxval, dtype=d)

    def get_config(self) -> dict:
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}
