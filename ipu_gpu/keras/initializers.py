"""``keras.initializers``: the Keras 2 weight initializers (``tf_keras/src/initializers``).

Random initializers draw from ipu_gpu's stateless ops with the seed ``[seed, 0]``, as
tf-keras 2.x's initializers do, so a seeded initializer gives TensorFlow's own values (bit
for bit for uniform distributions, within float32 libm rounding for normal ones) and the same
values on every call. An unseeded instance picks its seed once, on its first call, from the
first of: the generator ``keras.utils.set_random_seed`` installs
(``backend._SEED_GENERATOR``), ipu_gpu's global seed (``tf.random.set_seed``: the op-seed
sequence TF gives unseeded ops), Python's ``random``. So a program that sets either seed
gets the same weights on every run; calling one unseeded instance twice gives the same
values twice and warns, as tf-keras.
"""

from __future__ import annotations

import math
import random
import warnings

import numpy as np

from .. import ops as _ops  # noqa: F401  # registers every op
from ..core import backend as _array_backend
from ..core.tensor import wrap
from ..kernels._blas import single_threaded_blas
from ..ops import array as _array
from ..ops import creation as _creation
from ..ops import random as _random
from . import backend
from .engine.serialization import (deserialize_keras_object, get_keras_object,
                                   serialize_keras_object, to_snake_case)

__all__ = [
    "Constant", "GlorotNormal", "GlorotUniform", "HeNormal", "HeUniform", "Identity",
    "Initializer", "LecunNormal", "LecunUniform", "Ones", "Orthogonal", "RandomNormal",
    "RandomUniform", "TruncatedNormal", "VarianceScaling", "Zeros", "constant", "deserialize",
    "get", "glorot_normal", "glorot_uniform", "he_normal", "he_uniform", "identity",
    "lecun_normal", "lecun_uniform", "ones", "orthogonal", "random_normal", "random_uniform",
    "serialize", "truncated_normal", "variance_scaling", "zeros",
]

_ALLOWED_KWARGS = ("partition_shape", "partition_offset", "layout")


def _dtype(dtype) -> np.dtype:
    return np.dtype(backend.floatx() if dtype is None else getattr(dtype, "name", dtype))


def _float_dtype(dtype) -> np.dtype:
    d = _dtype(dtype)
    if d.kind != "f":
        raise ValueError(f"Expected floating point type, got {d.name}.")
    return d


def _shape(shape) -> tuple:
    dims = shape.as_list() if hasattr(shape, "as_list") else list(shape)
    return tuple(int(d) for d in dims)


def _validate_kwargs(name: str, kwargs: dict, support_partition: bool = True) -> None:
    bad = [k for k in kwargs if k not in _ALLOWED_KWARGS]
    if bad:
        raise TypeError(f"Unknown keyword arguments: {bad}. Allowed keyword arguments: "
                        f"{list(_ALLOWED_KWARGS)}.")
    if not support_partition and ("partition_shape" in kwargs or "partition_offset" in kwargs):
        raise ValueError(f"{name} initializer doesn't support partition-related arguments.")


def _new_seed() -> int:
    """A seed for an unseeded initializer (see the module docstring)."""
    generator = backend._SEED_GENERATOR.generator
    if generator is not None:
        return generator.randint(1, int(1e9))
    pair = _random.get_seed(None)
    if pair[0] is not None:
        return pair[1]
    return random.randint(1, int(1e9))


def _compute_fans(shape) -> tuple:
    """(fan_in, fan_out) of a weight shape: convolution kernels are (..., in, out)."""
    if len(shape) < 1:
        fan_in = fan_out = 1
    elif len(shape) == 1:
        fan_in = fan_out = shape[0]
    elif len(shape) == 2:
        fan_in, fan_out = shape
    else:
        receptive = math.prod(shape[:-2])
        fan_in, fan_out = shape[-2] * receptive, shape[-1] * receptive
    return int(fan_in), int(fan_out)


class Initializer:
    """Base class: ``initializer(shape, dtype=None)`` returns a Tensor of that shape."""

    def __call__(self, shape, dtype=None, **kwargs):
        raise NotImplementedError("Initializer subclasses must implement the `__call__()` "
                                  "method.")

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config.pop("dtype", None)
        return cls(**config)

    def _warn_reuse(self) -> None:
        if getattr(self, "_used", False):
            if getattr(self, "seed", None) is None:
                warnings.warn(f"The initializer {type(self).__name__} is unseeded and being "
                              "called multiple times, which will return identical values "
                              "each time (even if the initializer is unseeded). Please update "
                              "your code to provide a seed to the initializer, or avoid using "
                              "the same initializer instance more than once.", stacklevel=3)
        else:
            self._used = True


class _RandomInitializer(Initializer):
    """An initializer drawing from the stateless ops under ``[seed, 0]``."""

    def _stateless_seed(self) -> list:
        if getattr(self, "_seed", None) is None:
            self._seed = self.seed if self.seed is not None else _new_seed()
        return [self._seed, 0]


class Zeros(Initializer):
    """All zeros (any numeric or bool dtype)."""

    def __call__(self, shape, dtype=None, **kwargs):
        _validate_kwargs(type(self).__name__, kwargs)
        return _creation.zeros(_shape(kwargs.get("partition_shape", shape)), _dtype(dtype))


class Ones(Initializer):
    """All ones (any numeric or bool dtype)."""

    def __call__(self, shape, dtype=None, **kwargs):
        _validate_kwargs(type(self).__name__, kwargs)
        return _creation.ones(_shape(kwargs.get("partition_shape", shape)), _dtype(dtype))


class Constant(Initializer):
    """A constant ``value``: a scalar fills the shape; an array with as many elements is
    reshaped to it."""

    def __init__(self, value=0):
        if not np.isscalar(value) and not isinstance(value, (list, tuple, np.ndarray)):
            raise TypeError(f"Invalid type for initial value: {type(value).__name__} "
                            "(expected Python scalar, list or tuple of values, or numpy.ndarray).")
        self.value = value

    def __call__(self, shape, dtype=None, **kwargs):
        _validate_kwargs(type(self).__name__, kwargs)
        dims = _shape(kwargs.get("partition_shape", shape))
        value = np.asarray(self.value, dtype=_dtype(dtype))
        if value.size == 1:
            value = np.full(dims, value.reshape(()), dtype=value.dtype)
        elif value.size == math.prod(dims):
            value = value.reshape(dims)
        else:
            raise TypeError(f"Eager execution of tf.constant with unsupported shape. Tensor "
                            f"{self.value} (converted from {self.value}) has {value.size} "
                            f"elements, but got `shape` {dims} with {math.prod(dims)} "
                            "elements).")
        return wrap(_array_backend.default_xp().asarray(value))

    def get_config(self) -> dict:
        value = self.value
        return {"value": value.tolist() if isinstance(value, np.ndarray) else value}


class RandomUniform(_RandomInitializer):
    """Uniform in [minval, maxval) (floats or ints)."""

    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        self.minval, self.maxval, self.seed = minval, maxval, seed

    def __call__(self, shape, dtype=None, **kwargs):
        _validate_kwargs(type(self).__name__, kwargs)
        d = _dtype(dtype)
        if d.kind not in "fiu":
            raise ValueError(f"Expected float or integer dtype, got {d.name}.")
        if "partition_offset" not in kwargs:
            self._warn_reuse()
        return _random.stateless_uniform(_shape(kwargs.get("partition_shape", shape)),
                                         self._stateless_seed(), self.minval, self.maxval, d)

    def get_config(self) -> dict:
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}


class _NormalInitializer(_RandomInitializer):
    """A normal draw with ``mean`` and ``stddev``; subclasses give the stateless op
    (``_sample``)."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape, dtype=None, **kwargs):
        _validate_kwargs(type(self).__name__, kwargs)
        d = _float_dtype(dtype)
        if "partition_offset" not in kwargs:
            self._warn_reuse()
        return self._sample(_shape(kwargs.get("partition_shape", shape)),
                            self._stateless_seed(), d)

    def _sample(self, shape, seed, dtype):
        raise NotImplementedError

    def get_config(self) -> dict:
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class RandomNormal(_NormalInitializer):
    """Normal with ``mean`` and ``stddev``."""

    def _sample(self, shape, seed, dtype):
        return _random.stateless_normal(shape, seed, self.mean, self.stddev, dtype)


class TruncatedNormal(_NormalInitializer):
    """Normal with ``mean`` and ``stddev``, values beyond two stddevs redrawn."""

    def _sample(self, shape, seed, dtype):
        return _random.stateless_truncated_normal(shape, seed, self.mean, self.stddev, dtype)


class VarianceScaling(_RandomInitializer):
    """Samples scaled to the weight's fans: stddev ``sqrt(scale / n)`` (truncated normal:
    of the distribution after truncation) or a uniform within ``sqrt(3 * scale / n)``, where
    ``n`` is fan_in, fan_out or their mean (``mode``)."""

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None):
        if scale <= 0.0:
            raise ValueError(f"`scale` must be positive float. Received: scale={scale}.")
        allowed_modes = {"fan_in", "fan_out", "fan_avg"}
        if mode not in allowed_modes:
            raise ValueError(f"Invalid `mode` argument: {mode}. Please use one of the "
                             f"{allowed_modes}.")
        distribution = distribution.lower()
        if distribution == "normal":  # Keras 3's name
            distribution = "truncated_normal"
        allowed = {"uniform", "truncated_normal", "untruncated_normal"}
        if distribution not in allowed:
            raise ValueError(f"Invalid `distribution` argument: {distribution}.Allowed "
                             f"distributions: {allowed}.")
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed

    def __call__(self, shape, dtype=None, **kwargs):
        _validate_kwargs(type(self).__name__, kwargs)
        d = _float_dtype(dtype)
        dims = _shape(kwargs.get("partition_shape", shape))
        if "partition_offset" not in kwargs:
            self._warn_reuse()
        scale = self.scale
        fan_in, fan_out = _compute_fans(dims)
        if self.mode == "fan_in":
            scale /= max(1.0, fan_in)
        elif self.mode == "fan_out":
            scale /= max(1.0, fan_out)
        else:
            scale /= max(1.0, (fan_in + fan_out) / 2.0)
        seed = self._stateless_seed()
        if self.distribution == "truncated_normal":
            # scipy.stats.truncnorm.std(a=-2, b=2): the stddev truncation leaves
            stddev = math.sqrt(scale) / 0.87962566103423978
            return _random.stateless_truncated_normal(dims, seed, 0.0, stddev, d)
        if self.distribution == "untruncated_normal":
            return _random.stateless_normal(dims, seed, 0.0, math.sqrt(scale), d)
        limit = math.sqrt(3.0 * scale)
        return _random.stateless_uniform(dims, seed, -limit, limit, d)

    def get_config(self) -> dict:
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "seed": self.seed}


def _scaling_class(name: str, scale: float, mode: str, distribution: str, doc: str):
    def __init__(self, seed=None):
        VarianceScaling.__init__(self, scale=scale, mode=mode, distribution=distribution,
                                 seed=seed)

    def get_config(self) -> dict:
        return {"seed": self.seed}

    return type(name, (VarianceScaling,), {"__init__": __init__, "get_config": get_config,
                                           "__doc__": doc, "__module__": __name__})


GlorotUniform = _scaling_class("GlorotUniform", 1.0, "fan_avg", "uniform",
                               "Uniform within sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio "
                               "2010): the Keras default for kernels.")
GlorotNormal = _scaling_class("GlorotNormal", 1.0, "fan_avg", "truncated_normal",
                              "Truncated normal, stddev sqrt(2 / (fan_in + fan_out)).")
HeUniform = _scaling_class("HeUniform", 2.0, "fan_in", "uniform",
                           "Uniform within sqrt(6 / fan_in) (He et al. 2015).")
HeNormal = _scaling_class("HeNormal", 2.0, "fan_in", "truncated_normal",
                          "Truncated normal, stddev sqrt(2 / fan_in) (He et al. 2015).")
LecunUniform = _scaling_class("LecunUniform", 1.0, "fan_in", "uniform",
                              "Uniform within sqrt(3 / fan_in) (LeCun et al. 1998).")
LecunNormal = _scaling_class("LecunNormal", 1.0, "fan_in", "truncated_normal",
                             "Truncated normal, stddev sqrt(1 / fan_in) (LeCun et al. 1998).")


class Orthogonal(_RandomInitializer):
    """An orthogonal matrix (Saxe et al. 2014): Q of the QR factorisation of a normal
    matrix, signs fixed by R's diagonal, times ``gain``; shapes of rank > 2 are treated as
    (prod(shape[:-1]), shape[-1]). The factorisation runs in numpy on the host (ipu_gpu has
    no ``linalg.qr`` yet), on one OpenBLAS thread: LAPACK's blocked QR updates through
    threaded GEMMs, and its float64 bits changed with the thread count (512 x 512 and up)."""

    def __init__(self, gain=1.0, seed=None):
        self.gain, self.seed = gain, seed

    def __call__(self, shape, dtype=None, **kwargs):
        _validate_kwargs(type(self).__name__, kwargs, support_partition=False)
        d = _float_dtype(dtype)
        dims = _shape(shape)
        if len(dims) < 2:
            raise ValueError("The tensor to initialize must be at least two-dimensional. "
                             f"Received: shape={tuple(dims)} of rank {len(dims)}.")
        self._warn_reuse()
        rows, cols = math.prod(dims[:-1]), dims[-1]
        flat = (max(cols, rows), min(cols, rows))
        a = _random.stateless_normal(flat, self._stateless_seed(), dtype=d).numpy()
        # numpy's QR has no float16 (TF's has): factorise in float32, cast at the end
        with single_threaded_blas():  # syncs device
            q, r = np.linalg.qr(a.astype(np.float32) if a.dtype == np.float16 else a)
        q = q * np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        value = (self.gain * q.reshape(dims)).astype(d)
        return wrap(_array_backend.default_xp().asarray(value))

    def get_config(self) -> dict:
        return {"gain": self.gain, "seed": self.seed}


class Identity(Initializer):
    """``gain`` times the identity matrix (2-D shapes only)."""

    def __init__(self, gain=1.0):
        self.gain = gain

    def __call__(self, shape, dtype=None, **kwargs):
        _validate_kwargs(type(self).__name__, kwargs, support_partition=False)
        d = _float_dtype(dtype)
        dims = _shape(shape)
        if len(dims) != 2:
            raise ValueError("Identity matrix initializer can only be used for 2D matrices. "
                             f"Received: shape={tuple(dims)} of rank {len(dims)}.")
        eye = _array.eye(dims[0], dims[1], dtype=d)
        return eye * backend._constant_like(self.gain, eye)

    def get_config(self) -> dict:
        return {"gain": self.gain}


_CLASSES = (Zeros, Ones, Constant, RandomUniform, RandomNormal, TruncatedNormal,
            VarianceScaling, GlorotUniform, GlorotNormal, HeUniform, HeNormal, LecunUniform,
            LecunNormal, Orthogonal, Identity)
_OBJECTS = {}
for _cls in _CLASSES:
    _OBJECTS[_cls.__name__] = _OBJECTS[to_snake_case(_cls.__name__)] = _cls
_OBJECTS.update(normal=RandomNormal, uniform=RandomUniform, one=Ones, zero=Zeros)

zeros, ones, constant = Zeros, Ones, Constant
random_uniform, random_normal, truncated_normal = RandomUniform, RandomNormal, TruncatedNormal
variance_scaling, orthogonal, identity = VarianceScaling, Orthogonal, Identity
glorot_uniform, glorot_normal = GlorotUniform, GlorotNormal
he_uniform, he_normal, lecun_uniform, lecun_normal = HeUniform, HeNormal, LecunUniform, LecunNormal


def serialize(initializer):
    """The config dict of ``initializer`` (None for None)."""
    return serialize_keras_object(initializer, "keras.initializers")


def deserialize(config, custom_objects=None):
    """An initializer from a config dict or a name."""
    return deserialize_keras_object(config, _OBJECTS, custom_objects, "initializer")


def get(identifier):
    """An initializer from None (None), a name (``"glorot_uniform"``), a config dict, a class
    (instantiated) or a callable (returned as is).

    Raises:
      ValueError: anything else, or an unknown name.
    """
    return get_keras_object(identifier, deserialize, "initializer", instantiate_classes=True)
