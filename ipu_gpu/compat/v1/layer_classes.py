"""``tf.layers``' classes (TF 1.15's legacy layers): ``Dense``, ``Conv2D``, ``MaxPooling2D``,
``AveragePooling2D``, ``BatchNormalization``, ``Dropout``, ``Flatten``.

A layer object is its functional form made reusable, as TF's: its first call opens the
variable scope ``name`` (default the class name in snake case, made unique: ``dense``,
``dense_1``), whose variables (``dense/kernel``, ...) ``get_variable`` makes; later calls
re-enter that scope reusing them and re-enter its name scope (``dense/MatMul_1``). An
unnamed layer's ``name`` is Keras's object name (``dense_1`` for the first, per graph). It keeps
what its calls made: ``variables``/``weights`` (trainable first), ``trainable_variables``,
``non_trainable_variables``, ``updates`` (batch normalization's moving-average updates, also
in UPDATE_OPS) and ``losses`` (regularization losses), and the named weights as attributes
(``kernel``, ``bias``, ``gamma``, ``beta``, ``moving_mean``, ``moving_variance``).
"""

from __future__ import annotations

import re

import sys

from . import tf_layers
from .variable_scope import dense as _dense  # noqa: F401 - loads the module

vs = sys.modules[f"{__package__}.variable_scope"]  # the package's name is the function

__all__ = ["AveragePooling2D", "BatchNormalization", "Conv2D", "Dense", "Dropout", "Flatten",
           "MaxPooling2D"]


def _snake(name: str) -> str:
    s = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", s).lower()


def _unique_object_name(base: str) -> str:
    """``base_<n>``, n counting from 1 per graph (Keras's ``unique_object_name``, which
    names TF's unnamed layers: ``dense_1``, ``dense_2`` in every scope)."""
    counts = vs._store("_layer_object_names")
    counts[base] = counts.get(base, 0) + 1
    return f"{base}_{counts[base]}"


class _LegacyLayer:
    """What the ``tf.layers`` classes share: scope, reuse and bookkeeping of their calls;
    each class computes in ``_call(inputs, scope, ...)``."""

    _weight_names: tuple = ()

    def __init__(self, trainable=True, name=None, dtype=None, **kwargs):
        self.trainable = bool(trainable)
        self.dtype = dtype
        self._base_name = name or _snake(type(self).__name__)
        self.name = name or _unique_object_name(self._base_name)
        self._reuse = kwargs.pop("_reuse", None)
        self._scope = None
        self._op_scope = None
        self.built = False
        self._variables: list = []
        self.updates: list = []
        self.losses: list = []

    # ---- calling --------------------------------------------------------------------------
    def __call__(self, inputs, *args, **kwargs):
        with vs.owned_store(self):  # eagerly, the layer's variables are its store's
            return self._call_in_scope(inputs, args, kwargs)

    def _call_in_scope(self, inputs, args, kwargs):
        from ... import graph

        g = graph.get_default_graph()
        if self._scope is None:
            if self._reuse:
                opened = vs.variable_scope(self._base_name, reuse=self._reuse)
            else:
                opened = vs.variable_scope(None, default_name=self._base_name)
            with opened as scope:
                self._scope = scope
                self._op_scope = "/".join(g._scope) + "/" if g._scope else ""
        store = vs._store()
        known = set(store)
        losses = len(g.get_collection("regularization_losses"))
        updates = len(g.get_collection(tf_layers.UPDATE_OPS))
        reuse = True if self.built else self._reuse
        with vs.variable_scope(self._scope, reuse=reuse), g.name_scope(self._op_scope or None):
            out = self._call(inputs, self._scope, *args, **kwargs)
        if not self.built:
            self._variables = [v for k, v in store.items() if k not in known]
            for v in self._variables:
                short = v.name.split(":")[0].rsplit("/", 1)[-1]
                if short in self._weight_names:
                    setattr(self, short, v)
        self.losses += g.get_collection("regularization_losses")[losses:]
        self.updates += g.get_collection(tf_layers.UPDATE_OPS)[updates:]
        self.built = True
        return out

    def apply(self, inputs, *args, **kwargs):
        """The layer called on ``inputs`` (TF1's name for ``__call__``)."""
        return self(inputs, *args, **kwargs)

    # ---- weights --------------------------------------------------------------------------
    @property
    def trainable_variables(self) -> list:
        return [v for v in self._variables if getattr(v, "trainable", True)] \
            if self.trainable else []

    @property
    def non_trainable_variables(self) -> list:
        if not self.trainable:
            return list(self._variables)
        return [v for v in self._variables if not getattr(v, "trainable", True)]

    @property
    def variables(self) -> list:
        return self.trainable_variables + self.non_trainable_variables

    trainable_weights = trainable_variables
    non_trainable_weights = non_trainable_variables
    weights = variables

    @property
    def scope_name(self) -> str:
        """The layer's variable scope name (after its first call)."""
        if self._scope is None:
            raise ValueError("No name available for layer scope because the layer \""
                             f"{self.name}\" has not been used yet. The scope name  is "
                             "determined the first time the layer instance is called. You "
                             "must therefore call the layer before querying `scope_name`.")
        return self._scope.name


class Dense(_LegacyLayer):
    """``tf.layers.Dense``: ``activation(inputs @ kernel + bias)``."""

    _weight_names = ("kernel", "bias")

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer=None,
                 bias_initializer=None, kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 trainable=True, name=None, **kwargs):
        super().__init__(trainable=trainable, name=name, **kwargs)
        self.units = int(units)
        self.activation, self.use_bias = activation, use_bias
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.activity_regularizer = activity_regularizer

    def _call(self, inputs, scope):
        return vs.dense(inputs, self.units, activation=self.activation, use_bias=self.use_bias,
                        kernel_initializer=self.kernel_initializer,
                        bias_initializer=self.bias_initializer,
                        kernel_regularizer=self.kernel_regularizer,
                        bias_regularizer=self.bias_regularizer,
                        activity_regularizer=self.activity_regularizer,
                        trainable=self.trainable, name=scope)


class Conv2D(_LegacyLayer):
    """``tf.layers.Conv2D``: a 2-D convolution (``kernel`` [kh, kw, in, filters], ``bias``)."""

    _weight_names = ("kernel", "bias")

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format="channels_last", dilation_rate=(1, 1), activation=None,
                 use_bias=True, kernel_initializer=None, bias_initializer=None,
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
                 **kwargs):
        super().__init__(trainable=trainable, name=name, **kwargs)
        tf_layers._pair(kernel_size, "kernel_size")
        tf_layers._pair(strides, "strides")
        tf_layers._padding(padding)
        self.filters, self.kernel_size, self.strides = int(filters), kernel_size, strides
        self.padding, self.data_format, self.dilation_rate = padding, data_format, dilation_rate
        self.activation, self.use_bias = activation, use_bias
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer

    def _call(self, inputs, scope):
        return tf_layers.conv2d(inputs, self.filters, self.kernel_size, strides=self.strides,
                                padding=self.padding, data_format=self.data_format,
                                dilation_rate=self.dilation_rate, activation=self.activation,
                                use_bias=self.use_bias,
                                kernel_initializer=self.kernel_initializer,
                                bias_initializer=self.bias_initializer,
                                kernel_regularizer=self.kernel_regularizer,
                                bias_regularizer=self.bias_regularizer,
                                trainable=self.trainable, name=scope)


class _Pooling2D(_LegacyLayer):
    _pool = None

    def __init__(self, pool_size, strides, padding="valid", data_format="channels_last",
                 name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        tf_layers._pair(pool_size, "pool_size")
        tf_layers._pair(strides, "strides")
        tf_layers._padding(padding)
        self.pool_size, self.strides, self.padding = pool_size, strides, padding
        self.data_format = data_format

    def _call(self, inputs, scope):
        return type(self)._pool(inputs, self.pool_size, self.strides, padding=self.padding,
                                data_format=self.data_format, name=scope)


class MaxPooling2D(_Pooling2D):
    """``tf.layers.MaxPooling2D``: the maximum of each window."""

    _pool = staticmethod(tf_layers.max_pooling2d)


class AveragePooling2D(_Pooling2D):
    """``tf.layers.AveragePooling2D``: the mean of each window."""

    _pool = staticmethod(tf_layers.average_pooling2d)


class BatchNormalization(_LegacyLayer):
    """``tf.layers.BatchNormalization``: ``tf.layers.batch_normalization`` as a layer; called
    with ``training`` (a bool or a boolean tensor, default False)."""

    _weight_names = ("gamma", "beta", "moving_mean", "moving_variance")

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer=None, gamma_initializer=None, moving_mean_initializer=None,
                 moving_variance_initializer=None, beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                 renorm=False, renorm_clipping=None, renorm_momentum=0.99, fused=None,
                 trainable=True, virtual_batch_size=None, adjustment=None, name=None,
                 **kwargs):
        super().__init__(trainable=trainable, name=name, **kwargs)
        if renorm or virtual_batch_size is not None or adjustment is not None:
            raise ValueError("batch_normalization: renorm, virtual_batch_size and adjustment "
                             "are not provided by ipu_gpu")
        self.axis, self.momentum, self.epsilon = axis, momentum, epsilon
        self.center, self.scale, self.fused = center, scale, fused
        self._initializers = dict(beta_initializer=beta_initializer,
                                  gamma_initializer=gamma_initializer,
                                  moving_mean_initializer=moving_mean_initializer,
                                  moving_variance_initializer=moving_variance_initializer,
                                  beta_regularizer=beta_regularizer,
                                  gamma_regularizer=gamma_regularizer)

    def _call(self, inputs, scope, training=False):
        return tf_layers.batch_normalization(
            inputs, axis=self.axis, momentum=self.momentum, epsilon=self.epsilon,
            center=self.center, scale=self.scale, training=training, trainable=self.trainable,
            fused=self.fused, name=scope, **self._initializers)


class Dropout(_LegacyLayer):
    """``tf.layers.Dropout``: dropout at ``rate`` when called with ``training`` true."""

    def __init__(self, rate=0.5, noise_shape=None, seed=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.rate, self.noise_shape, self.seed = rate, noise_shape, seed

    def _call(self, inputs, scope, training=False):
        return vs.dropout(inputs, rate=self.rate, noise_shape=self.noise_shape,
                          seed=self.seed, training=training, name=scope)


class Flatten(_LegacyLayer):
    """``tf.layers.Flatten``: [batch, ...] -> [batch, prod(...)]."""

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = data_format

    def _call(self, inputs, scope):
        return vs.flatten(inputs, name=scope, data_format=self.data_format)
