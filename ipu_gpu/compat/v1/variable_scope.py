"""TF1's ``variable_scope`` / ``get_variable``, the ``*_initializer`` factories and the
``tf.layers`` functions built on them (``dense``, ``flatten``, ``dropout``).

``get_variable(name)`` finds or makes the variable ``<scope>/<name>`` of the default graph
(``tf.compat.v1.Variable``: a graph variable in graph mode). Reuse follows TF: making a
variable that exists raises ValueError unless the scope reuses (``reuse=True`` or
``AUTO_REUSE``), and ``reuse=True`` for one that does not exist raises ValueError. Without an
initializer a float variable starts from ``glorot_uniform_initializer()``, an integer one
from zeros, as in TF. The initial value is drawn when the variable is made (TF draws it when
the initializer runs: the same distribution, another draw).
"""

from __future__ import annotations

import contextlib
import threading

import numpy as np

from ...core import dtypes

__all__ = ["AUTO_REUSE", "constant_initializer", "dense", "dropout", "flatten",
           "get_variable", "get_variable_scope", "glorot_normal_initializer",
           "glorot_uniform_initializer", "ones_initializer", "random_normal_initializer",
           "random_uniform_initializer", "truncated_normal_initializer",
           "variable_scope", "variance_scaling_initializer", "zeros_initializer"]


class _AutoReuse:
    def __repr__(self) -> str:
        return "AUTO_REUSE"


AUTO_REUSE = _AutoReuse()

_local = threading.local()


class VariableScope:
    """One level of variable scope: its full name, reuse and default initializer."""

    def __init__(self, name: str, reuse=None, initializer=None, dtype=None):
        self.name = name
        self.reuse = reuse
        self.initializer = initializer
        self.dtype = dtype

    @property
    def original_name_scope(self) -> str:
        return self.name + "/" if self.name else ""

    def reuse_variables(self) -> None:
        self.reuse = True


def _stack() -> list:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = [VariableScope("")]
    return stack


def get_variable_scope() -> VariableScope:
    """The current variable scope."""
    return _stack()[-1]


@contextlib.contextmanager
def variable_scope(name_or_scope=None, default_name=None, values=None, initializer=None,
                   regularizer=None, caching_device=None, partitioner=None,
                   custom_getter=None, reuse=None, dtype=None, use_resource=None,
                   constraint=None, auxiliary_name_scope=True):
    """A scope for ``get_variable`` names (``outer/inner/var``), reuse and default
    initializer; reuse is inherited (once True, inner scopes reuse too).

    Raises:
      ValueError: neither ``name_or_scope`` nor ``default_name``.
      NotImplementedError: ``custom_getter`` or ``partitioner`` (not emulated)."""
    if custom_getter is not None or partitioner is not None:
        raise NotImplementedError("variable_scope: custom_getter and partitioner are not "
                                  "emulated")
    outer = get_variable_scope()
    if isinstance(name_or_scope, VariableScope):
        full = name_or_scope.name
    else:
        if name_or_scope is None and default_name is None:
            raise ValueError("If default_name is None then scope (name_or_scope) must be "
                             "specified.")
        local = name_or_scope if name_or_scope is not None else _unique(outer, default_name)
        full = f"{outer.name}/{local}" if outer.name else local
    inherited = outer.reuse if outer.reuse in (True, AUTO_REUSE) else None
    scope = VariableScope(full, reuse if reuse is not None else inherited,
                          initializer if initializer is not None else outer.initializer,
                          dtype if dtype is not None else outer.dtype)
    _stack().append(scope)
    try:
        yield scope
    finally:
        _stack().pop()


def _unique(outer: VariableScope, base: str) -> str:
    counts = getattr(_local, "defaults", None)
    if counts is None:
        counts = _local.defaults = {}
    key = (outer.name, base)
    n = counts.get(key, 0)
    counts[key] = n + 1
    return base if n == 0 else f"{base}_{n}"


def _store() -> dict:
    from ... import graph

    g = graph.get_default_graph()
    store = getattr(g, "_named_variables", None)
    if store is None:
        store = g._named_variables = {}
    return store


def get_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                 trainable=None, collections=None, caching_device=None, partitioner=None,
                 validate_shape=True, use_resource=None, custom_getter=None, constraint=None,
                 synchronization=None, aggregation=None):
    """The variable ``<scope>/<name>``, made (with ``initializer``, a Tensor/array value or an
    initializer object) or reused as the scope allows.

    Raises:
      ValueError: the variable exists and the scope does not reuse; ``reuse=True`` and it
        does not exist; no shape for an initializer that needs one; an initial value with
        a ``shape`` given."""
    from . import Variable

    scope = get_variable_scope()
    full = f"{scope.name}/{name}" if scope.name else name
    store = _store()
    existing = store.get(full)
    if existing is not None:
        if scope.reuse in (True, AUTO_REUSE):
            return existing
        raise ValueError(f"Variable {full} already exists, disallowed. Did you mean to set "
                         "reuse=True or reuse=tf.AUTO_REUSE in VarScope?")
    if scope.reuse is True:
        raise ValueError(f"Variable {full} does not exist, or was not created with "
                         "tf.get_variable(). Did you mean to set reuse=tf.AUTO_REUSE in "
                         "VarScope?")
    d = dtypes.as_dtype(dtype if dtype is not None else (scope.dtype or np.float32),
                        "get_variable: dtype")
    init = initializer if initializer is not None else scope.initializer
    value = _initial_value(full, init, shape, d)
    var = Variable(value, trainable=True if trainable is None else trainable, name=full,
                   dtype=d)
    store[full] = var
    return var


def _initial_value(name, init, shape, dtype):
    if init is not None and not callable(init):
        if shape is not None:
            raise ValueError("If initializer is a constant, do not specify shape.")
        return np.asarray(init, dtype=dtype)
    if shape is None:
        raise ValueError(f"Shape of a new variable ({name}) must be fully defined, but "
                         "instead was <unknown>.")
    shape = [int(s) for s in shape]
    if init is None:
        init = glorot_uniform_initializer() if dtype.kind == "f" else zeros_initializer()
    return init(shape, dtype=dtype)


# ---- TF1's initializer factories (the Keras 2 initializers TF aliases them to) ------------
def _keras(name, **kwargs):
    from ...keras import initializers

    return getattr(initializers, name)(**kwargs)


def zeros_initializer(dtype=np.float32):
    return _keras("Zeros")


def ones_initializer(dtype=np.float32):
    return _keras("Ones")


def constant_initializer(value=0, dtype=np.float32, verify_shape=False):
    return _keras("Constant", value=value)


def random_normal_initializer(mean=0.0, stddev=1.0, seed=None, dtype=np.float32):
    return _keras("RandomNormal", mean=mean, stddev=stddev, seed=seed)


def random_uniform_initializer(minval=0.0, maxval=None, seed=None, dtype=np.float32):
    return _keras("RandomUniform", minval=minval, maxval=1.0 if maxval is None else maxval,
                  seed=seed)


def truncated_normal_initializer(mean=0.0, stddev=1.0, seed=None, dtype=np.float32):
    return _keras("TruncatedNormal", mean=mean, stddev=stddev, seed=seed)


def glorot_uniform_initializer(seed=None, dtype=np.float32):
    return _keras("GlorotUniform", seed=seed)


def glorot_normal_initializer(seed=None, dtype=np.float32):
    return _keras("GlorotNormal", seed=seed)


def variance_scaling_initializer(scale=1.0, mode="fan_in", distribution="truncated_normal",
                                 seed=None, dtype=np.float32):
    return _keras("VarianceScaling", scale=scale, mode=mode, distribution=distribution,
                  seed=seed)


# ---- tf.layers ----------------------------------------------------------------------------
def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None,
          bias_initializer=None, kernel_regularizer=None, bias_regularizer=None,
          activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
          trainable=True, name=None, reuse=None):
    """``tf.layers.dense``: ``activation(inputs @ kernel + bias)`` with the variables
    ``<name>/kernel`` and ``<name>/bias`` (name default ``dense``, made unique)."""
    import ipu_gpu as core

    in_dim = int(inputs.shape[-1])
    with variable_scope(name, default_name="dense", reuse=reuse):
        kernel = get_variable("kernel", [in_dim, units], initializer=kernel_initializer,
                              trainable=trainable)
        out = core.matmul(inputs, kernel) if len(inputs.shape) == 2 else core.tensordot(
            inputs, kernel, [[len(inputs.shape) - 1], [0]])
        if use_bias:
            bias = get_variable("bias", [units], trainable=trainable,
                                initializer=bias_initializer or zeros_initializer())
            out = core.nn.bias_add(out, bias)
    return activation(out) if activation is not None else out


def flatten(inputs, name=None, data_format="channels_last"):
    """``tf.layers.flatten``: [batch, ...] -> [batch, prod(...)]."""
    import ipu_gpu as core

    dims = [int(d) for d in inputs.shape[1:]]
    return core.reshape(inputs, [-1, int(np.prod(dims))])


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    """``tf.layers.dropout``: dropout at ``rate`` when ``training``, else the inputs."""
    import ipu_gpu as core

    if not training:
        return inputs
    return core.nn.dropout(inputs, rate=rate, noise_shape=noise_shape, seed=seed)
