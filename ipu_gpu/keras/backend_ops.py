"""The rest of Keras 2's ``keras.backend`` tensor functions (``K.sin``, ``K.cumsum``,
``K.repeat_elements``, ``K.batch_dot``, ``K.switch``, ``K.pool2d``, ``K.random_normal``, ...),
each on ipu_gpu's TF-shaped API with tf-keras's arguments, defaults and messages
(``tf_keras/src/backend.py``); ``backend.py`` re-exports them.

Where tf-keras's function returns a Variable (``variable``, ``ones``/``zeros`` of a known
shape, ``eye``, the ``random_*_variable`` pair) these do too.
"""

from __future__ import annotations

import builtins

import numpy as np

import ipu_gpu as _tf

from ..core.tensor import Tensor
from . import backend as _K

__all__ = [
    "all", "any", "arange", "argmax", "argmin", "backend", "batch_dot", "batch_flatten",
    "batch_normalization", "bias_add", "binary_crossentropy", "categorical_crossentropy",
    "constant", "conv1d", "conv2d", "conv2d_transpose", "conv3d", "cos", "cumprod", "cumsum",
    "depthwise_conv2d", "dot", "dropout", "elu", "equal", "eval", "eye", "flatten", "foldl",
    "foldr", "function", "gather", "gradients", "greater", "greater_equal", "hard_sigmoid",
    "in_test_phase", "in_top_k", "in_train_phase", "is_sparse", "l2_normalize", "less",
    "less_equal", "manual_variable_initialization", "map_fn", "moving_average_update",
    "name_scope", "normalize_batch_in_training", "not_equal", "one_hot", "ones", "ones_like",
    "permute_dimensions", "placeholder", "pool2d", "pool3d", "pow", "print_tensor", "prod",
    "random_bernoulli", "random_binomial", "random_normal", "random_normal_variable",
    "random_uniform", "random_uniform_variable", "repeat", "repeat_elements", "resize_images",
    "resize_volumes", "reverse", "round", "shape", "sign", "sin", "softplus", "softsign",
    "sparse_categorical_crossentropy", "spatial_2d_padding", "spatial_3d_padding", "squeeze",
    "std", "stop_gradient", "switch", "temporal_padding", "tile", "to_dense", "truncated_normal",
    "update", "update_add", "update_sub", "var", "variable", "zeros", "zeros_like",
]

_MANUAL_INIT = [False]


def backend() -> str:
    """The name of the backend Keras runs on: ``"tensorflow"``, as tf-keras reports it (a
    program branching on it takes the TensorFlow path, which ipu_gpu provides)."""
    return "tensorflow"


def _floatx(dtype):
    return _K.floatx() if dtype is None else dtype


# ---- variables and constants -------------------------------------------------------------------
def variable(value, dtype=None, name=None, constraint=None):
    """A Variable holding ``value`` (dtype ``floatx()`` unless given); ``constraint`` is
    kept on it as ``variable.constraint`` for optimizers to apply, as TF's."""
    v = _tf.Variable(value, dtype=_floatx(dtype), name=name)
    if constraint is not None:
        v.constraint = constraint
    return v


def constant(value, dtype=None, shape=None, name=None):
    """A constant tensor (dtype ``floatx()`` unless given)."""
    return _tf.constant(value, dtype=_floatx(dtype), shape=shape, name=name)


def _filled(fn, shape, dtype, name):
    dtype = _floatx(dtype)
    v = fn(shape, dtype=dtype)
    if builtins.all(int(d) for d in v.shape):  # tf-keras: a variable unless a dimension is 0
        return variable(v, dtype=dtype, name=name)
    return v


def zeros(shape, dtype=None, name=None):
    """An all-zeros Variable of ``shape`` (a Tensor when a dimension is 0)."""
    return _filled(_tf.zeros, shape, dtype, name)


def ones(shape, dtype=None, name=None):
    """An all-ones Variable of ``shape`` (a Tensor when a dimension is 0)."""
    return _filled(_tf.ones, shape, dtype, name)


def eye(size, dtype=None, name=None):
    """A ``size`` x ``size`` identity-matrix Variable."""
    dtype = _floatx(dtype)
    return variable(_tf.eye(size, dtype=dtype), dtype, name)


def zeros_like(x, dtype=None, name=None):
    return _tf.zeros_like(x, dtype=dtype)


def ones_like(x, dtype=None, name=None):
    return _tf.ones_like(x, dtype=dtype)


def eval(x):  # noqa: A001
    """The value of a tensor or variable as a numpy array."""
    return _K.get_value(_tf.convert_to_tensor(x) if not isinstance(x, Tensor) else x)


def is_sparse(tensor) -> bool:
    """Whether ``tensor`` is a SparseTensor."""
    return isinstance(tensor, _tf.sparse.SparseTensor) or bool(getattr(tensor, "_is_sparse",
                                                                       False))


def to_dense(tensor):
    """A SparseTensor as a dense tensor; anything else unchanged."""
    return _tf.sparse.to_dense(tensor) if is_sparse(tensor) else tensor


def placeholder(shape=None, ndim=None, dtype=None, sparse=False, name=None, ragged=False):
    """A symbolic Keras input of ``shape`` (batch included; ``ndim`` Nones when no shape) and
    ``dtype`` (floatx by default), as tf-keras makes outside a TF1 graph.

    Raises:
      ValueError: both ``sparse`` and ``ragged``.
    """
    from .engine.input_layer import Input

    if sparse and ragged:
        raise ValueError("Cannot set both sparse and ragged to True when creating a "
                         "placeholder.")
    if not shape and ndim:
        shape = (None,) * ndim
    x = Input(batch_shape=tuple(shape or ()), dtype=_floatx(dtype), name=name, sparse=sparse,
              ragged=ragged)
    x._is_backend_placeholder = True
    return x


def function(inputs, outputs, updates=None, name=None, **kwargs):
    """A callable running the graph from the Keras inputs ``inputs`` to ``outputs`` (a
    functional Model) and returning numpy values (a list when ``outputs`` is a list of one).

    Raises:
      ValueError: session keyword arguments or ``updates`` (TF2 Keras's messages).
    """
    from .engine.functional import Functional

    if kwargs:
        raise ValueError("Session keyword arguments are not supported during eager "
                         f"execution. You passed: {kwargs}")
    if updates:
        raise ValueError("`updates` argument is not supported during eager execution. You "
                         f"passed: {updates}")
    model = Functional(inputs=inputs, outputs=outputs)
    wrap_outputs = isinstance(outputs, list) and len(outputs) == 1

    def func(model_inputs):
        outs = model(model_inputs)
        if wrap_outputs:
            outs = [outs]
        if isinstance(outs, (list, tuple)):
            return [o.numpy() for o in outs]
        return outs.numpy()
    return func


def gradients(loss, variables):
    """The gradients of ``loss`` with respect to ``variables`` in a TF1 graph
    (``tf.compat.v1.gradients``)."""
    from ..compat import v1

    return v1.gradients(loss, variables)


def manual_variable_initialization(value) -> None:
    """Keras's flag for TF1 sessions; recorded, and variables are initialised eagerly
    whatever it says (as tf-keras does outside TF1 graphs)."""
    _MANUAL_INIT[0] = bool(value)


def name_scope(name):
    """A name scope context (``tf.name_scope``; names do not change values here)."""
    from ..compat import v1

    return v1.name_scope(name)


def print_tensor(x, message="", summarize=3):
    """Prints ``message`` and the value of ``x`` to stdout and returns ``x``."""
    _tf.print(message, x, summarize=summarize)
    return x


# ---- updates -----------------------------------------------------------------------------------
def update(x, new_x):
    return x.assign(new_x)


def update_add(x, increment):
    return x.assign_add(increment)


def update_sub(x, decrement):
    return x.assign_sub(decrement)


def moving_average_update(x, value, momentum):
    """``x = x * momentum + value * (1 - momentum)`` (as ``x -= (x - value) * (1 -
    momentum)``, without zero-debiasing)."""
    return x.assign_sub((x - _tf.cast(value, x.dtype)) * (1 - momentum))


# ---- elementwise and reductions ----------------------------------------------------------------
def _bool(x):
    x = _tf.convert_to_tensor(x)
    return x if x.dtype == _tf.bool else _tf.cast(x, _tf.bool)


def all(x, axis=None, keepdims=False):  # noqa: A001
    """Bitwise AND reduction of ``x`` (cast to bool)."""
    return _tf.reduce_all(_bool(x), axis, keepdims)


def any(x, axis=None, keepdims=False):  # noqa: A001
    """Bitwise OR reduction of ``x`` (cast to bool)."""
    return _tf.reduce_any(_bool(x), axis, keepdims)


def argmax(x, axis=-1):
    return _tf.argmax(x, axis)


def argmin(x, axis=-1):
    return _tf.argmin(x, axis)


def prod(x, axis=None, keepdims=False):
    return _tf.reduce_prod(x, axis, keepdims)


def cumsum(x, axis=0):
    return _tf.math.cumsum(x, axis=axis)


def cumprod(x, axis=0):
    return _tf.math.cumprod(x, axis=axis)


def _float_bool(x):
    x = _tf.convert_to_tensor(x)
    return _tf.cast(x, _K.floatx()) if x.dtype == _tf.bool else x


def var(x, axis=None, keepdims=False):
    """The variance of ``x`` (bools as floatx)."""
    return _tf.math.reduce_variance(_float_bool(x), axis=axis, keepdims=keepdims)


def std(x, axis=None, keepdims=False):
    """The standard deviation of ``x`` (bools as floatx)."""
    return _tf.math.reduce_std(_float_bool(x), axis=axis, keepdims=keepdims)


def sin(x):
    return _tf.sin(x)


def cos(x):
    return _tf.cos(x)


def sign(x):
    return _tf.sign(x)


def round(x):  # noqa: A001
    """Round half to even, as ``tf.round``."""
    return _tf.round(x)


def pow(x, a):  # noqa: A001
    return _tf.pow(x, a)


def softplus(x):
    return _tf.math.softplus(x)


def softsign(x):
    """``x / (1 + |x|)``."""
    x = _tf.convert_to_tensor(x)
    return x / (1 + _tf.abs(x))


def elu(x, alpha=1.0):
    """``x`` where positive, else ``alpha * (exp(x) - 1)``."""
    res = _tf.nn.elu(x)
    if alpha == 1:
        return res
    return _tf.where(x > 0, res, alpha * res)


def hard_sigmoid(x):
    """``clip(0.2 * x + 0.5, 0, 1)``."""
    x = _tf.convert_to_tensor(x)
    return _tf.clip_by_value(x * _tf.cast(0.2, x.dtype) + _tf.cast(0.5, x.dtype), 0.0, 1.0)


def equal(x, y):
    return _tf.equal(x, y)


def not_equal(x, y):
    return _tf.not_equal(x, y)


def greater(x, y):
    return _tf.greater(x, y)


def greater_equal(x, y):
    return _tf.greater_equal(x, y)


def less(x, y):
    return _tf.less(x, y)


def less_equal(x, y):
    return _tf.less_equal(x, y)


def l2_normalize(x, axis=None):
    return _tf.nn.l2_normalize(x, axis=axis)


def stop_gradient(variables):
    """``tf.stop_gradient`` of a tensor, or of each of a list of them."""
    if isinstance(variables, (list, tuple)):
        return list(map(_tf.stop_gradient, variables))
    return _tf.stop_gradient(variables)


# ---- shapes --------------------------------------------------------------------------------------
def arange(start, stop=None, step=1, dtype="int32"):
    """``tf.range`` with Keras's defaults: one negative argument gives an empty range."""
    if stop is None and start < 0:
        start = 0
    result = _tf.range(start, limit=stop, delta=step)
    return result if dtype == "int32" else _tf.cast(result, dtype)


def shape(x):
    """The dynamic shape of ``x`` as an int32 tensor."""
    return _tf.shape(x)


def flatten(x):
    return _tf.reshape(x, [-1])


def batch_flatten(x):
    """``(batch, ...)`` to ``(batch, prod(...))``."""
    return _tf.reshape(x, [-1, int(np.prod(_K.int_shape(x)[1:], dtype=np.int64))])


def squeeze(x, axis):
    return _tf.squeeze(x, [axis])


def permute_dimensions(x, pattern):
    return _tf.transpose(x, perm=list(pattern))


def reverse(x, axes):
    if isinstance(axes, int):
        axes = [axes]
    return _tf.reverse(x, axes)


def tile(x, n):
    if isinstance(n, int):
        n = [n]
    return _tf.tile(x, n)


def repeat(x, n):
    """``(batch, dim)`` to ``(batch, n, dim)``.

    Raises:
      AssertionError: ``x`` is not 2-D (as tf-keras's ``assert``).
    """
    assert _K.ndim(x) == 2
    return _tf.tile(_tf.expand_dims(x, 1), [1, n, 1])


def repeat_elements(x, rep, axis):
    """Each slice of ``x`` along ``axis`` repeated ``rep`` times in place (``np.repeat``)."""
    return _tf.repeat(x, rep, axis=axis)


def gather(reference, indices):
    return _tf.gather(reference, indices)


def one_hot(indices, num_classes):
    """One-hot vectors of length ``num_classes`` on a new last axis (float32)."""
    return _tf.one_hot(indices, depth=num_classes, axis=-1)


def temporal_padding(x, padding=(1, 1)):
    """Zeros before and after the middle axis of a 3-D tensor."""
    assert len(padding) == 2
    return _tf.pad(x, [[0, 0], [padding[0], padding[1]], [0, 0]])


def _data_format(data_format):
    if data_format is None:
        data_format = _K.image_data_format()
    if data_format not in {"channels_first", "channels_last"}:
        raise ValueError("Unknown data_format: " + str(data_format))
    return data_format


def spatial_2d_padding(x, padding=((1, 1), (1, 1)), data_format=None):
    """Zeros around the rows and columns of a 4-D tensor."""
    assert len(padding) == 2 and len(padding[0]) == 2 and len(padding[1]) == 2
    spatial = [list(padding[0]), list(padding[1])]
    if _data_format(data_format) == "channels_first":
        return _tf.pad(x, [[0, 0], [0, 0], *spatial])
    return _tf.pad(x, [[0, 0], *spatial, [0, 0]])


def spatial_3d_padding(x, padding=((1, 1), (1, 1), (1, 1)), data_format=None):
    """Zeros around the three spatial axes of a 5-D tensor."""
    assert len(padding) == 3 and builtins.all(len(p) == 2 for p in padding)
    spatial = [list(p) for p in padding]
    if _data_format(data_format) == "channels_first":
        return _tf.pad(x, [[0, 0], [0, 0], *spatial])
    return _tf.pad(x, [[0, 0], *spatial, [0, 0]])


def resize_images(x, height_factor, width_factor, data_format, interpolation="nearest"):
    """Upsample the rows and columns of a 4-D tensor by integer factors with
    ``tf.image.resize``.

    Raises:
      ValueError: an unknown ``data_format`` or ``interpolation`` (tf-keras's messages).
    """
    methods = ("area", "bicubic", "bilinear", "gaussian", "lanczos3", "lanczos5",
               "mitchellcubic", "nearest")
    if data_format == "channels_first":
        rows, cols = 2, 3
    elif data_format == "channels_last":
        rows, cols = 1, 2
    else:
        raise ValueError(f"Invalid `data_format` argument: {data_format}")
    if interpolation not in methods:
        names = '"' + '", "'.join(methods) + '"'
        raise ValueError(f'`interpolation` argument should be one of: {names}. Received: '
                         f'"{interpolation}".')
    size = [int(x.shape[rows]) * height_factor, int(x.shape[cols]) * width_factor]
    if data_format == "channels_first":
        x = _tf.transpose(x, [0, 2, 3, 1])
    x = _tf.image.resize(x, size, method="nearest" if interpolation == "nearest"
                         else interpolation)
    if data_format == "channels_first":
        x = _tf.transpose(x, [0, 3, 1, 2])
    return x


def resize_volumes(x, depth_factor, height_factor, width_factor, data_format):
    """Repeat the voxels of a 5-D tensor along its three spatial axes.

    Raises:
      ValueError: an unknown ``data_format``.
    """
    if data_format == "channels_first":
        axes = (2, 3, 4)
    elif data_format == "channels_last":
        axes = (1, 2, 3)
    else:
        raise ValueError("Invalid data_format: " + str(data_format))
    for axis, factor in zip(axes, (depth_factor, height_factor, width_factor)):
        x = repeat_elements(x, factor, axis)
    return x


# ---- products ----------------------------------------------------------------------------------
def dot(x, y):
    """Keras's dot: a matrix product, or for N-D operands the sum over the last axis of
    ``x`` and the second-to-last axis of ``y`` (shape ``x[:-1] + y[:-2] + y[-1:]``)."""
    x, y = _tf.convert_to_tensor(x), _tf.convert_to_tensor(y)
    if x.ndim > 2 or y.ndim > 2:
        xs, ys = list(x.shape), list(y.shape)
        perm = list(range(y.ndim))
        perm = [perm.pop(-2)] + perm
        xt = _tf.reshape(x, [-1, xs[-1]])
        yt = _tf.reshape(_tf.transpose(y, perm), [ys[-2], -1])
        return _tf.reshape(_tf.matmul(xt, yt), xs[:-1] + ys[:-2] + ys[-1:])
    return _tf.matmul(x, y)


def batch_dot(x, y, axes=None):
    """The per-sample dot product of two batches over ``axes`` (an int, a pair, or None:
    the last axis of ``x`` with the last (2-D ``y``) or second-to-last axis of ``y``).

    Raises:
      ValueError: rank < 2, different batch sizes, several axes, axis 0, or mismatched
        dimensions (tf-keras's messages).
    """
    x, y = _tf.convert_to_tensor(x), _tf.convert_to_tensor(y)
    x_shape, y_shape = tuple(x.shape), tuple(y.shape)
    x_ndim, y_ndim = len(x_shape), len(y_shape)
    if x_ndim < 2 or y_ndim < 2:
        raise ValueError(f"Cannot do batch_dot on inputs with rank < 2. Received inputs with "
                         f"shapes {x_shape} and {y_shape}.")
    if x_shape[0] != y_shape[0]:
        raise ValueError(f"Cannot do batch_dot on inputs with different batch sizes. Received "
                         f"inputs with shapes {x_shape} and {y_shape}.")
    if isinstance(axes, int):
        axes = [axes, axes]
    if axes is None:
        axes = [x_ndim - 1, y_ndim - 1] if y_ndim == 2 else [x_ndim - 1, y_ndim - 2]
    if builtins.any(isinstance(a, (list, tuple)) for a in axes):
        raise ValueError("Multiple target dimensions are not supported. Expected: None, int, "
                         f"(int, int), Provided: {axes}")
    axes = list(axes)
    if axes[0] < 0:
        axes[0] += x_ndim
    if axes[1] < 0:
        axes[1] += y_ndim
    if 0 in axes:
        raise ValueError("Cannot perform batch_dot over axis 0. If your inputs are not "
                         "batched, add a dummy batch dimension to your inputs using "
                         "K.expand_dims(x, 0)")
    a0, a1 = axes
    if x_shape[a0] != y_shape[a1]:
        raise ValueError(f"Cannot do batch_dot on inputs with shapes {x_shape} and {y_shape} "
                         f"with axes={axes}. x.shape[{a0}] != y.shape[{a1}] "
                         f"({x_shape[a0]} != {y_shape[a1]}).")
    # contract x's a0 with y's a1 per sample: x's other axes, then y's, in order
    xs = "z" + "abcdefghij"[:x_ndim - 1]
    ys = "z" + "mnopqrstuv"[:y_ndim - 1]
    ys = ys[:a1] + xs[a0] + ys[a1 + 1:]
    out = ("z" + "".join(c for i, c in enumerate(xs) if i not in (0, a0))
           + "".join(c for i, c in enumerate(ys) if i not in (0, a1)))
    result = _tf.einsum(f"{xs},{ys}->{out}", x, y)
    if x_ndim == 2 and y_ndim == 2:  # tf-keras keeps a (batch, 1) result
        result = _tf.expand_dims(result, 1)
    return result


# ---- control -----------------------------------------------------------------------------------
def switch(condition, then_expression, else_expression):
    """``then_expression`` where ``condition`` holds, else ``else_expression``: a scalar
    condition picks one (callables are called), a tensor condition selects elementwise
    (broadcast over trailing axes).

    Raises:
      ValueError: a condition of higher rank than the expressions.
    """
    condition = _bool(condition)
    if condition.ndim == 0:
        chosen = then_expression if bool(condition.numpy()) else else_expression
        return _tf.convert_to_tensor(chosen() if callable(chosen) else chosen)
    if callable(then_expression):
        then_expression = then_expression()
    if callable(else_expression):
        else_expression = else_expression()
    then_expression = _tf.convert_to_tensor(then_expression)
    cond_ndim, expr_ndim = condition.ndim, then_expression.ndim
    if cond_ndim > expr_ndim:
        raise ValueError("Rank of `condition` should be less than or equal to rank of "
                         f"`then_expression` and `else_expression`. ndim(condition)="
                         f"{cond_ndim}, ndim(then_expression)={expr_ndim}")
    if cond_ndim > 1:
        condition = _tf.reshape(condition, list(condition.shape)
                                + [1] * (expr_ndim - cond_ndim))
        reps = [e if e > c else 1 for e, c in zip(then_expression.shape, condition.shape)]
        condition = _tf.tile(condition, reps)
    return _tf.where(condition, then_expression, else_expression)


def in_train_phase(x, alt, training=None):
    """``x`` in the training phase, else ``alt`` (callables are called); ``training``
    defaults to the layer call's, then to the learning phase."""
    if training is None:
        from .engine import call_context

        training = call_context.context().training
    if training is None:
        training = _K.learning_phase()
    if not isinstance(training, Tensor):
        if training == 1 or training is True:
            return x() if callable(x) else x
        if training == 0 or training is False:
            return alt() if callable(alt) else alt
    return switch(training, x, alt)


def in_test_phase(x, alt, training=None):
    """``x`` in the test phase, else ``alt``."""
    return in_train_phase(alt, x, training=training)


def map_fn(fn, elems, name=None, dtype=None):
    return _tf.map_fn(fn, elems, dtype=dtype)


def foldl(fn, elems, initializer=None, name=None):
    return _tf.foldl(fn, elems, initializer=initializer)


def foldr(fn, elems, initializer=None, name=None):
    return _tf.foldr(fn, elems, initializer=initializer)


# ---- neural-network helpers --------------------------------------------------------------------
def bias_add(x, bias, data_format=None):
    """``x + bias`` along the channel axis of ``data_format`` (``bias`` of rank 1 or
    ``ndim(x) - 1``).

    Raises:
      ValueError: an unknown data format or a bias of another rank.
    """
    data_format = _data_format(data_format)
    bias_shape = _K.int_shape(bias)
    if len(bias_shape) not in (1, _K.ndim(x) - 1):
        raise ValueError(f"Unexpected bias dimensions {len(bias_shape)}, expect to be 1 or "
                         f"{_K.ndim(x) - 1} dimensions")
    if len(bias_shape) == 1:
        return _tf.nn.bias_add(x, bias, data_format="NCHW" if data_format == "channels_first"
                               else "NHWC")
    if _K.ndim(x) in (3, 4, 5):
        if data_format == "channels_first":
            return x + _tf.reshape(bias, (1, bias_shape[-1]) + bias_shape[:-1])
        return x + _tf.reshape(bias, (1,) + bias_shape)
    return _tf.nn.bias_add(x, bias)


def dropout(x, level, noise_shape=None, seed=None):
    """Inverted dropout at rate ``level`` (seeded from numpy's global generator when
    ``seed`` is None, as tf-keras)."""
    if seed is None:
        seed = np.random.randint(10e6)
    return _tf.nn.dropout(x, rate=level, noise_shape=noise_shape, seed=seed)


def batch_normalization(x, mean, var, beta, gamma, axis=-1, epsilon=1e-3):
    """``(x - mean) / sqrt(var + epsilon) * gamma + beta`` (``beta``/``gamma`` None: 0/1)."""
    inv = _tf.math.rsqrt(var + epsilon)
    if gamma is not None:
        inv = inv * gamma
    out = x * _tf.cast(inv, x.dtype)
    offset = -mean * inv if beta is None else beta - mean * inv
    return out + _tf.cast(offset, x.dtype)


def normalize_batch_in_training(x, gamma, beta, reduction_axes, epsilon=1e-3):
    """Batch-normalise ``x`` over ``reduction_axes``: (normalised, mean, variance)."""
    mean, variance = _tf.nn.moments(x, list(reduction_axes))
    keep = [1 if i in reduction_axes else int(d) for i, d in enumerate(x.shape)]
    if sorted(reduction_axes) == list(range(_K.ndim(x)))[:-1]:
        normed = batch_normalization(x, mean, variance, beta, gamma, epsilon=epsilon)
    else:
        rs = [_tf.reshape(t, keep) if t is not None else None
              for t in (mean, variance, beta, gamma)]
        normed = batch_normalization(x, *rs, epsilon=epsilon)
    return normed, mean, variance


def in_top_k(predictions, targets, k):
    """Whether each target is among the ``k`` largest predictions of its row (ties at the
    boundary count as in, a non-finite prediction row as out), as ``tf.math.in_top_k``."""
    predictions = _tf.convert_to_tensor(predictions)
    rows, classes = (int(d) for d in predictions.shape)
    flat = _tf.range(rows) * classes + _tf.cast(targets, _tf.int32)
    target_pred = _tf.gather(_tf.reshape(predictions, [-1]), flat)
    larger = _tf.reduce_sum(_tf.cast(predictions > target_pred[:, None], _tf.int32), axis=1)
    finite = _tf.reduce_all(_tf.math.is_finite(predictions), axis=1)
    return _tf.logical_and(larger < k, finite)


def binary_crossentropy(target, output, from_logits=False):
    """Elementwise binary cross-entropy: from logits, or from probabilities clipped to
    ``[epsilon, 1 - epsilon]`` (Keras's formula)."""
    target, output = _tf.convert_to_tensor(target), _tf.convert_to_tensor(output)
    if from_logits:
        return _tf.nn.sigmoid_cross_entropy_with_logits(labels=target, logits=output)
    eps = _tf.cast(_K.epsilon(), output.dtype)
    output = _tf.clip_by_value(output, eps, 1.0 - eps)
    bce = target * _tf.math.log(output + eps) + (1 - target) * _tf.math.log(1 - output + eps)
    return -bce


def categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """Cross-entropy between a target distribution and ``output`` (logits, or probabilities
    rescaled to sum to 1 and clipped to ``[epsilon, 1 - epsilon]``) along ``axis``."""
    from .losses import categorical_crossentropy as _cce

    return _cce(target, output, from_logits=from_logits, axis=axis)


def sparse_categorical_crossentropy(target, output, from_logits=False, axis=-1,
                                    ignore_class=None):
    """Cross-entropy between integer targets and ``output`` along ``axis``."""
    from .losses import sparse_categorical_crossentropy as _scce

    return _scce(target, output, from_logits=from_logits, axis=axis, ignore_class=ignore_class)


def _channels_last(x, data_format, ndim):
    if data_format == "channels_first":
        return _tf.transpose(x, [0, *range(2, ndim), 1])
    return x


def _channels_back(x, data_format, ndim):
    if data_format == "channels_first":
        return _tf.transpose(x, [0, ndim - 1, *range(1, ndim - 1)])
    return x


def _padding(padding):
    if padding not in ("same", "valid"):
        raise ValueError("Invalid padding: " + str(padding))
    return padding.upper()


def conv1d(x, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
    """1-D convolution (``padding`` 'causal' pads on the left).

    Raises:
      ValueError: an unknown data format or padding.
    """
    data_format = _data_format(data_format)
    if padding == "causal":
        left = dilation_rate * (int(kernel.shape[0]) - 1)
        x = temporal_padding(_channels_last(x, data_format, 3), (left, 0))
        x = _channels_back(x, data_format, 3)
        padding = "valid"
    x = _channels_last(x, data_format, 3)
    y = _tf.nn.conv1d(x, kernel, strides, _padding(padding), dilations=dilation_rate)
    return _channels_back(y, data_format, 3)


def conv2d(x, kernel, strides=(1, 1), padding="valid", data_format=None, dilation_rate=(1, 1)):
    """2-D convolution.

    Raises:
      ValueError: an unknown data format or padding.
    """
    data_format = _data_format(data_format)
    y = _tf.nn.conv2d(_channels_last(x, data_format, 4), kernel, list(strides),
                      _padding(padding), dilations=list(dilation_rate))
    return _channels_back(y, data_format, 4)


def conv2d_transpose(x, kernel, output_shape, strides=(1, 1), padding="valid",
                     data_format=None, dilation_rate=(1, 1)):
    """Transposed 2-D convolution to ``output_shape`` (in ``data_format``).

    Raises:
      ValueError: an unknown data format or padding.
    """
    data_format = _data_format(data_format)
    output_shape = list(output_shape)
    if data_format == "channels_first":
        output_shape = [output_shape[0], output_shape[2], output_shape[3], output_shape[1]]
    if output_shape[0] is None:
        output_shape[0] = int(x.shape[0])
    y = _tf.nn.conv2d_transpose(_channels_last(x, data_format, 4), kernel, output_shape,
                                [1, *strides, 1], _padding(padding),
                                dilations=list(dilation_rate))
    return _channels_back(y, data_format, 4)


def depthwise_conv2d(x, depthwise_kernel, strides=(1, 1), padding="valid", data_format=None,
                     dilation_rate=(1, 1)):
    """Depthwise 2-D convolution.

    Raises:
      ValueError: an unknown data format or padding.
    """
    data_format = _data_format(data_format)
    y = _tf.nn.depthwise_conv2d(_channels_last(x, data_format, 4), depthwise_kernel,
                                [1, *strides, 1], _padding(padding),
                                dilations=list(dilation_rate))
    return _channels_back(y, data_format, 4)


def conv3d(x, kernel, strides=(1, 1, 1), padding="valid", data_format=None,
           dilation_rate=(1, 1, 1)):
    """3-D convolution.

    Raises:
      ValueError: an unknown data format or padding.
    """
    data_format = _data_format(data_format)
    y = _tf.nn.conv3d(_channels_last(x, data_format, 5), kernel, [1, *strides, 1],
                      _padding(padding), dilations=[1, *dilation_rate, 1])
    return _channels_back(y, data_format, 5)


def _pool(x, pool_size, strides, padding, data_format, pool_mode, rank):
    data_format = _data_format(data_format)
    if len(pool_size) != rank:
        raise ValueError(f"`pool_size` must be a tuple of {rank} integers.")
    if len(strides) != rank:
        raise ValueError(f"`strides` must be a tuple of {rank} integers.")
    padding = _padding(padding)
    if pool_mode not in ("max", "avg"):
        raise ValueError("Invalid pooling mode: " + str(pool_mode))
    x = _channels_last(x, data_format, rank + 2)
    if rank == 2:
        fn = _tf.nn.max_pool2d if pool_mode == "max" else _tf.nn.avg_pool2d
    else:
        fn = _tf.nn.max_pool3d if pool_mode == "max" else _tf.nn.avg_pool3d
    y = fn(x, list(pool_size), list(strides), padding)
    return _channels_back(y, data_format, rank + 2)


def pool2d(x, pool_size, strides=(1, 1), padding="valid", data_format=None, pool_mode="max"):
    """2-D max or average pooling.

    Raises:
      ValueError: windows that are not 2 ints, an unknown padding, data format or mode.
    """
    return _pool(x, pool_size, strides, padding, data_format, pool_mode, 2)


def pool3d(x, pool_size, strides=(1, 1, 1), padding="valid", data_format=None,
           pool_mode="max"):
    """3-D max or average pooling.

    Raises:
      ValueError: windows that are not 3 ints, an unknown padding, data format or mode.
    """
    return _pool(x, pool_size, strides, padding, data_format, pool_mode, 3)


# ---- random ------------------------------------------------------------------------------------
def _seed(seed):
    return np.random.randint(10e6) if seed is None else seed


def random_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Normal samples (seeded from numpy's global generator when ``seed`` is None)."""
    return _tf.random.normal(shape, mean=mean, stddev=stddev, dtype=_floatx(dtype),
                             seed=_seed(seed))


def random_uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    """Uniform samples in ``[minval, maxval)``."""
    return _tf.random.uniform(shape, minval=minval, maxval=maxval, dtype=_floatx(dtype),
                              seed=_seed(seed))


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Normal samples redrawn beyond two standard deviations."""
    return _tf.random.truncated_normal(shape, mean, stddev, dtype=_floatx(dtype),
                                       seed=_seed(seed))


def random_bernoulli(shape, p=0.0, dtype=None, seed=None):
    """1 with probability ``p``, else 0 (``uniform <= p``)."""
    dtype = _floatx(dtype)
    u = _tf.random.uniform(shape, dtype=dtype, seed=_seed(seed))
    return _tf.where(u <= p, _tf.ones(shape, dtype=dtype), _tf.zeros(shape, dtype=dtype))


random_binomial = random_bernoulli


def random_normal_variable(shape, mean, scale, dtype=None, name=None, seed=None):
    """A Variable of normal samples (seed drawn from numpy when None)."""
    return variable(random_normal(shape, mean, scale, dtype=dtype, seed=seed), dtype=dtype,
                    name=name)


def random_uniform_variable(shape, low, high, dtype=None, name=None, seed=None):
    """A Variable of uniform samples in ``[low, high)``."""
    return variable(random_uniform(shape, low, high, dtype=dtype, seed=seed), dtype=dtype,
                    name=name)

