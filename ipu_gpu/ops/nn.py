"""Neural-network ops (``tf.nn``): activations, softmax, cross-entropies, bias_add, l2_loss."""

from __future__ import annotations

import numpy as np

from ..core import dtypes
from ..core import tape as _tape
from ..core.registry import register
from ..core.tensor import Tensor, _Deferred
from ..errors import InvalidArgumentError
from . import bias_relu_fusion as _fusion
from . import creation as _creation
from . import indexing as _indexing
from . import math as _math
from . import matmul as _matmul
from . import pooling as _pooling
from . import reduction as _reduction
from . import shape as _shape_ops
from ._util import elementwise_cpu as _elementwise_cpu
from ._util import (astype, broadcast_shape, check_axis, normalize_axis, quiet, require_float,
                    require_int, require_numeric, require_same_dtype, unbroadcast)
from .math import _erfc, _sigmoid  # the array functions behind tf.math.erfc and sigmoid


def _activation(name, fn, grad, static_check=None, warns=True):
    """Register an activation; ``warns=False``: ``fn`` raises no floating-point warnings, so it
    runs without numpy's errstate context (a few microseconds an op)."""
    def check(x, **static):
        require_float(name, "features", x)
        if static_check:
            static_check(**static)

    def forward(k, xp, x, **static):
        if not warns:
            y = fn(xp, x, **static)
            return y, (x, y)
        with quiet(xp):
            y = fn(xp, x, **static)
        return y, (x, y)

    def backward(k, xp, res, g, **static):
        x, y = res
        return (grad(xp, g, x, y, **static),)

    return register(name, args=("features",), check=check, forward=forward, backward=backward,
                    twice_differentiable=True)


def _check_alpha(alpha):
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.floating, np.integer)):
        raise TypeError(f"leaky_relu: alpha must be a number, got {alpha!r}")


def _relu(xp, x):
    k = _elementwise_cpu(xp, x)
    return k.relu(x) if k is not None else xp.maximum(x, 0)


def _relu_grad(xp, g, y):
    # TF's ReluGrad multiplies by the mask of the output (y > 0 where x > 0; NaN in g stays
    # NaN); a multiply has no data-dependent branch, unlike where(), which mispredicts on
    # random signs.
    k = _elementwise_cpu(xp, g, y)
    if k is not None and g.shape == y.shape:
        return k.relu_grad(g, y)
    return g * astype(xp, y > 0, g.dtype)


def _check_relu(x):
    # TF's Relu takes every real number type (its kernels: float, double, half, bfloat16,
    # int8/16/32/64, uint8/16/32/64); a bool or a string features raises.
    require_numeric("relu", "features", x)


def _relu_forward(k, xp, x):
    # Only the output is kept for the gradient (TF's ReluGrad takes it), so the input, most
    # often a bias_add output of the same size, is freed as soon as the caller drops it.
    y = _relu(xp, x)
    return y, (y,)


def _relu_backward(k, xp, res, g):
    return (_relu_grad(xp, g, res[0]),)


def _relu_backward_owned(k, xp, res, g):
    # the tape holds the only reference to g: the gradient is written into it
    y = res[0]
    k = _elementwise_cpu(xp, g, y)
    if k is not None and g.shape == y.shape:
        return (k.relu_grad_into(g, y),)
    return (_relu_grad(xp, g, y),)


_RELU = register("relu", args=("features",), check=_check_relu, forward=_relu_forward,
                 backward=_relu_backward, twice_differentiable=True)
_tape.set_owned_backward(_RELU, _relu_backward_owned)
_LEAKY_RELU = _activation(
    "leaky_relu", lambda xp, x, alpha: xp.where(x > 0, x, x * alpha),
    lambda xp, g, x, y, alpha: xp.where(x > 0, g, g * alpha), _check_alpha)
_ELU = _activation("elu", lambda xp, x: xp.where(x > 0, x, xp.expm1(xp.minimum(x, 0))),
                   lambda xp, g, x, y: xp.where(x > 0, g, g * (y + 1)))
_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772, 1.0507009873554805
# TF's Selu kernels: negative features take the exponential branch, and zero the linear one
_SELU = _activation(
    "selu", lambda xp, x: xp.where(x < 0, (_SELU_SCALE * _SELU_ALPHA) * xp.expm1(
        xp.minimum(x, 0)), _SELU_SCALE * x),
    lambda xp, g, x, y: xp.where(y < 0, g * (y + _SELU_SCALE * _SELU_ALPHA), g * _SELU_SCALE))


def relu(features, name=None):
    """max(features, 0) for any real number dtype (floats, signed and unsigned ints); the
    gradient at 0 is 0, as TF."""
    if type(features) is _Deferred:  # a bias_add's sum: relu(v + b) in one pass
        out = _fusion.relu_of_deferred(_RELU, features)
        if out is not None:
            return out
    return _RELU(features)


def leaky_relu(features, alpha=0.2, name=None):
    """features where positive, ``alpha * features`` elsewhere."""
    number = isinstance(alpha, (int, float, np.number)) and not isinstance(alpha, bool)
    return _LEAKY_RELU(features, alpha=float(alpha) if number else alpha)  # check() names it


def elu(features, name=None):
    """features where positive, exp(features) - 1 elsewhere."""
    return _ELU(features)


def selu(features, name=None):
    """Scaled ELU: ``scale * features`` where features >= 0, ``scale * alpha *
    (exp(features) - 1)`` below, with Klambauer et al.'s alpha = 1.6733 and scale = 1.0507."""
    return _SELU(features)


# ---- softmax, log_softmax ------------------------------------------------------------------
def _check_softmax(name):
    def check(x, *, axis):
        require_float(name, "logits", x)
        if x.ndim == 0:
            raise ValueError(f"{name}: logits must have rank >= 1, got a scalar")
        check_axis(name, axis, x.ndim)
    return check


def _softmax_forward(k, xp, x, *, axis):
    e = xp.exp(x - xp.max(x, axis=axis, keepdims=True))
    y = e / xp.sum(e, axis=axis, keepdims=True)
    return y, (y,)


def _softmax_backward(k, xp, res, g, *, axis):
    (y,) = res
    return (y * (g - xp.sum(g * y, axis=axis, keepdims=True)),)


def _log_softmax_forward(k, xp, x, *, axis):
    shifted = x - xp.max(x, axis=axis, keepdims=True)
    y = shifted - xp.log(xp.sum(xp.exp(shifted), axis=axis, keepdims=True))
    return y, (y,)


def _log_softmax_backward(k, xp, res, g, *, axis):
    (y,) = res
    return (g - xp.exp(y) * xp.sum(g, axis=axis, keepdims=True),)


_SOFTMAX = register("softmax", args=("logits",), check=_check_softmax("softmax"),
                    forward=_softmax_forward, backward=_softmax_backward,
                    twice_differentiable=True)
_LOG_SOFTMAX = register("log_softmax", args=("logits",), check=_check_softmax("log_softmax"),
                        forward=_log_softmax_forward, backward=_log_softmax_backward,
                        twice_differentiable=True)


def softmax(logits, axis=None, name=None):
    """exp(logits) / sum(exp(logits)) along ``axis`` (default -1), computed stably."""
    return _SOFTMAX(logits, axis=-1 if axis is None else axis)


def log_softmax(logits, axis=None, name=None):
    """logits - log(sum(exp(logits))) along ``axis`` (default -1), computed stably."""
    return _LOG_SOFTMAX(logits, axis=-1 if axis is None else axis)


# ---- cross-entropies -----------------------------------------------------------------------
def _check_sigmoid_xent(labels, logits):
    require_float("sigmoid_cross_entropy_with_logits", "logits", logits)
    require_same_dtype("sigmoid_cross_entropy_with_logits", ("logits", "labels"), logits, labels)
    if tuple(labels.shape) != tuple(logits.shape):
        raise ValueError(f"sigmoid_cross_entropy_with_logits: labels must have the shape of "
                         f"logits {list(logits.shape)}, got {list(labels.shape)}")


def _sigmoid_xent_forward(k, xp, z, x):
    with quiet(xp):
        loss = xp.maximum(x, 0) - x * z + xp.log1p(xp.exp(-xp.abs(x)))
    return loss, (z, x)


def _sigmoid_xent_backward(k, xp, res, g):
    z, x = res
    with quiet(xp):
        e = xp.exp(-xp.abs(x))
        sig = xp.where(x >= 0, 1 / (1 + e), e / (1 + e))
    return -g * x, g * (sig - z)


_SIGMOID_XENT = register("sigmoid_cross_entropy_with_logits", args=("labels", "logits"),
                         check=_check_sigmoid_xent, forward=_sigmoid_xent_forward,
                         backward=_sigmoid_xent_backward, twice_differentiable=True,
                         scalars_follow=False)


def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """Elementwise logistic loss max(x, 0) - x*z + log(1 + exp(-|x|)) for logits x and
    labels z of one shape and dtype."""
    if labels is None or logits is None:
        raise ValueError("sigmoid_cross_entropy_with_logits: both labels and logits must be given")
    return _SIGMOID_XENT(labels, logits)


def _rows(xp, a, axis):
    """``a`` with ``axis`` moved last, as a C-contiguous 2-D [rows, classes] array."""
    moved = xp.moveaxis(a, axis, -1) if axis not in (-1, a.ndim - 1) else a
    return xp.ascontiguousarray(moved).reshape(-1, a.shape[axis])


def _compute_dtype(d):
    return dtypes.float32 if d == dtypes.float16 else d


def _check_softmax_xent(labels, logits, *, axis):
    name = "softmax_cross_entropy_with_logits"
    require_float(name, "logits", logits)
    require_same_dtype(name, ("logits", "labels"), logits, labels)
    if logits.ndim == 0:
        raise ValueError(f"{name}: logits must have rank >= 1, got a scalar")
    if tuple(labels.shape) != tuple(logits.shape):
        raise ValueError(f"{name}: labels must have the shape of logits {list(logits.shape)}, "
                         f"got {list(labels.shape)}")
    a = check_axis(name, axis, logits.ndim)
    if logits.shape[a] == 0:
        raise ValueError(f"{name}: logits must have at least one class, got shape "
                         f"{list(logits.shape)}")


def _softmax_xent_forward(k, xp, labels, logits, *, axis):
    cd = _compute_dtype(logits.dtype)
    x2 = _rows(xp, logits, axis).astype(cd, copy=False)
    z2 = _rows(xp, labels, axis).astype(cd, copy=False)
    loss = xp.empty(x2.shape[0], cd)
    dlogits = xp.empty(x2.shape, cd)
    k.softmax_xent_fwd(x2, z2, loss, dlogits)
    out_shape = tuple(s for i, s in enumerate(logits.shape) if i != axis % logits.ndim)
    return loss.reshape(out_shape).astype(logits.dtype, copy=False), (dlogits, x2, logits.shape)


def _unrows(xp, a2, shape, axis, dtype):
    moved = tuple(s for i, s in enumerate(shape) if i != axis % len(shape)) + (shape[axis],)
    out = a2.reshape(moved).astype(dtype, copy=False)
    return xp.moveaxis(out, -1, axis) if axis not in (-1, len(shape) - 1) else out


def _softmax_xent_backward(k, xp, res, g, *, axis):
    dlogits, x2, shape = res
    g2 = g.reshape(-1, 1).astype(dlogits.dtype, copy=False)
    glogits = _unrows(xp, dlogits * g2, shape, axis, g.dtype)
    # d loss / d labels = -log_softmax(logits)
    m = x2.max(axis=1, keepdims=True)
    log_sm = x2 - m - xp.log(xp.sum(xp.exp(x2 - m), axis=1, keepdims=True))
    glabels = _unrows(xp, -log_sm * g2, shape, axis, g.dtype)
    return glabels, glogits


_SOFTMAX_XENT = register("softmax_cross_entropy_with_logits", args=("labels", "logits"),
                         check=_check_softmax_xent, forward=_softmax_xent_forward,
                         backward=_softmax_xent_backward, family="softmax")


def softmax_cross_entropy_with_logits(labels, logits, axis=-1, name=None):
    """-sum(labels * log_softmax(logits), axis): the loss per example, shape of logits without
    ``axis``. labels are probability vectors (gradients flow to both)."""
    return _SOFTMAX_XENT(labels, logits, axis=axis)


def _check_sparse_xent(labels, logits):
    name = "sparse_softmax_cross_entropy_with_logits"
    require_float(name, "logits", logits)
    require_int(name, "labels", labels)
    if logits.ndim < 1:
        raise ValueError(f"{name}: logits must have rank >= 1, got a scalar")
    if tuple(labels.shape) != tuple(logits.shape[:-1]):
        raise ValueError(f"{name}: labels must have shape {list(logits.shape[:-1])} (logits "
                         f"without its last axis), got {list(labels.shape)}")
    if logits.shape[-1] == 0:
        raise ValueError(f"{name}: logits must have at least one class, got shape "
                         f"{list(logits.shape)}")


def _sparse_xent_forward(k, xp, labels, logits):
    cd = _compute_dtype(logits.dtype)
    if (logits.ndim == 2 and cd is logits.dtype and logits.flags.c_contiguous
            and labels.flags.c_contiguous):  # a classifier head: the arrays as they are
        loss = xp.empty(logits.shape[0], cd)
        dlogits = xp.empty(logits.shape, cd)
        k.sparse_softmax_xent_fwd(logits, labels, loss, dlogits)
        return loss, (dlogits, logits.shape)
    x2 = xp.ascontiguousarray(logits.reshape(-1, logits.shape[-1])).astype(cd, copy=False)
    ids = xp.ascontiguousarray(labels.reshape(-1))
    loss = xp.empty(x2.shape[0], cd)
    dlogits = xp.empty(x2.shape, cd)
    k.sparse_softmax_xent_fwd(x2, ids, loss, dlogits)
    return loss.reshape(labels.shape).astype(logits.dtype, copy=False), (dlogits, logits.shape)


def _sparse_xent_backward(k, xp, res, g):
    dlogits, shape = res
    grad = dlogits * g.reshape(-1, 1).astype(dlogits.dtype, copy=False)
    return None, grad.reshape(shape).astype(g.dtype, copy=False)


_SPARSE_XENT = register("sparse_softmax_cross_entropy_with_logits", args=("labels", "logits"),
                        check=_check_sparse_xent, forward=_sparse_xent_forward,
                        backward=_sparse_xent_backward, family="softmax")


def _mean_of_sparse_xent_backward(xp, producer, consumer, g, owned, needed):
    # reduce_mean over every loss: reduce_mean's rule spreads g / n to every example, then
    # the cross-entropy's multiplies its kept softmax gradient by it; here one multiply by
    # the scalar (the same products, no spread array)
    x = consumer.residuals[0]
    if g.size != 1 or x.size != _reduction._count(x.shape, consumer.residuals[2]):
        return None
    dlogits, shape = producer.residuals
    s = g.reshape(1, 1) / max(x.size, 1)
    if s.dtype != dlogits.dtype:
        s = s.astype(dlogits.dtype)
    grad = dlogits * s
    if grad.shape != shape:  # logits of rank other than 2 (the kernel's rows)
        grad = grad.reshape(shape)
    return None, grad if grad.dtype == g.dtype else grad.astype(g.dtype)


_tape.set_pair_backward(_reduction._REDUCE_MEAN, _SPARSE_XENT, _mean_of_sparse_xent_backward)


def sparse_softmax_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """The softmax cross-entropy of ``logits`` [..., C] against class ids ``labels`` [...]
    (int32/int64). Ids outside [0, C) raise ValueError on the CPU (TF's CPU kernel raises
    too) and give NaN on the GPU (as TF's GPU kernel)."""
    if labels is None or logits is None:
        raise ValueError("sparse_softmax_cross_entropy_with_logits: both labels and logits must "
                         "be given")
    return _SPARSE_XENT(labels, logits)


# ---- bias_add, l2_loss ---------------------------------------------------------------------
def _channel_axis(ndim, data_format):
    return 1 if data_format is not None and data_format.startswith("NC") else ndim - 1


def _check_bias_add(value, bias, *, data_format):
    if value.dtype != bias.dtype:
        require_same_dtype("bias_add", ("value", "bias"), value, bias)
    if data_format is not None and data_format not in (
            "NHWC", "NCHW", "NWC", "NCW", "NDHWC", "NCDHW", "N...C", "NC..."):
        raise ValueError(f"bias_add: data_format must be 'N...C' or 'NC...' style, got "
                         f"{data_format!r}")
    if value.ndim < 2:
        raise ValueError(f"bias_add: value must have rank >= 2, got shape {list(value.shape)}")
    if bias.ndim != 1:
        raise ValueError(f"bias_add: bias must be 1-D, got shape {list(bias.shape)}")
    c = value.shape[-1 if data_format is None else _channel_axis(value.ndim, data_format)]
    if bias.shape[0] != c:
        raise ValueError(f"bias_add: bias must have {c} elements (the channel size of value), "
                         f"got {bias.shape[0]}")


def _bias_shape(ndim, data_format, c):
    shape = [1] * ndim
    shape[_channel_axis(ndim, data_format)] = c
    return tuple(shape)


def _bias_add_forward(k, xp, value, bias, *, data_format):
    axis = _channel_axis(value.ndim, data_format)
    k = _elementwise_cpu(xp, value, bias) if axis == value.ndim - 1 else None
    if k is not None:
        return k.bias_add_last(value, bias), (value.shape, bias.shape)
    shape = _bias_shape(value.ndim, data_format, bias.shape[0])
    with quiet(xp):  # inf + -inf is NaN without a warning, as TF
        out = value + xp.reshape(bias, shape)
    return out, (value.shape, bias.shape)


def _bias_add_backward(k, xp, res, g, *, data_format):
    vshape, bshape = res
    axis = _channel_axis(len(vshape), data_format)
    if axis == len(vshape) - 1 and bshape[0] > 1:  # channels last: one pass over the rows
        k = _elementwise_cpu(xp, g)
        if k is not None:
            return g, k.column_sums(g, bshape[0])
    if len(vshape) == 2 and axis == 1:  # a dense layer's bias: the same sum, less set-up
        return g, xp.sum(g, axis=0)
    others = tuple(i for i in range(len(vshape)) if i != axis)
    return g, xp.reshape(xp.sum(g, axis=others, keepdims=True), bshape)


_BIAS_ADD = register("bias_add", args=("value", "bias"), check=_check_bias_add,
                     forward=_bias_add_forward, backward=_bias_add_backward,
                     twice_differentiable=True)


def _relu_of_bias_add_backward(xp, producer, consumer, g, owned, needed):
    # relu(bias_add(v, b)): relu's mask and the bias's column sums in one pass over g (the
    # bits of relu's then bias_add's rule), written into g when the tape alone holds it
    vshape, bshape = producer.residuals
    c = bshape[0]
    y = consumer.residuals[0]
    data_format = producer.static["data_format"]
    if (c < 2 or (data_format is not None
                  and _channel_axis(len(vshape), data_format) != len(vshape) - 1)
            or g.shape != y.shape or not g.size):
        return None
    k = _elementwise_cpu(xp, g, y)
    if k is None:
        return None
    if g.ndim == 2:  # a dense layer's: the rows as they are
        dv, db = k.relu_grad_column_sums_into(g, y) if owned else k.relu_grad_column_sums(g, y)
        return dv, db if needed[1] else None
    g2, y2 = k.rows(g, c), k.rows(y, c)
    dv, db = k.relu_grad_column_sums_into(g2, y2) if owned else k.relu_grad_column_sums(g2, y2)
    return dv.reshape(vshape), db if needed[1] else None


_tape.set_pair_backward(_RELU, _BIAS_ADD, _relu_of_bias_add_backward)


def bias_add(value, bias, data_format=None, name=None):
    """value + bias, with the 1-D ``bias`` added along the channel axis: the last one, or
    axis 1 for an 'NC...' ``data_format``."""
    if type(value) is Tensor:  # the sum left for a relu to take in its pass, where it may
        out = _fusion.deferred_bias_add(_BIAS_ADD, value, bias, data_format)
        if out is not None:
            return out
    return _BIAS_ADD(value, bias, data_format=data_format)


def _check_l2(t):
    require_float("l2_loss", "t", t)


def _l2_forward(k, xp, t):
    return (xp.sum(t * t) / 2).astype(t.dtype), (t,)


_L2 = register("l2_loss", args=("t",), check=_check_l2, forward=_l2_forward,
               backward=lambda k, xp, res, g: (res[0] * g,), twice_differentiable=True)


def l2_loss(t, name=None):
    """sum(t ** 2) / 2, a scalar of t's dtype."""
    return _L2(t)




# ---- gelu, swish/silu, l2_normalize, xw_plus_b (issue 14) -----------------------------------
_SQRT_2_OVER_PI = 0.7978845608028654
_GELU_CUBIC = 0.044715


def _check_gelu(x, *, approximate):
    if x.dtype.kind != "f":  # TF's own check raises ValueError here
        raise ValueError(f"gelu: features must be a floating-point tensor, got {x.dtype}")


def _gelu_forward(k, xp, x, *, approximate):
    a = x.astype(_compute_dtype(x.dtype), copy=False)
    with quiet(xp):
        if approximate:
            y = 0.5 * a * (1 + xp.tanh(_SQRT_2_OVER_PI * (a + _GELU_CUBIC * a * a * a)))
        else:  # x * P(X <= x) with erfc, as TF: accurate far into the negative tail
            y = 0.5 * a * _erfc(xp, a * -_SQRT_HALF)
    return y.astype(x.dtype, copy=False), (x,)


def _gelu_backward(k, xp, res, g, *, approximate):
    (x,) = res
    a = x.astype(_compute_dtype(x.dtype), copy=False)
    with quiet(xp):
        if approximate:
            t = xp.tanh(_SQRT_2_OVER_PI * (a + _GELU_CUBIC * a * a * a))
            d = 0.5 * (1 + t) + 0.5 * a * (1 - t * t) * _SQRT_2_OVER_PI * (
                1 + 3 * _GELU_CUBIC * a * a)
        else:
            d = 0.5 * _erfc(xp, a * -_SQRT_HALF) + a * xp.exp(-0.5 * a * a) * _INV_SQRT_2PI
    return (g * d.astype(g.dtype, copy=False),)


_SQRT_HALF = 0.7071067811865476
_INV_SQRT_2PI = 0.3989422804014327
_GELU = register("gelu", args=("features",), check=_check_gelu, forward=_gelu_forward,
                 backward=_gelu_backward)


def gelu(features, approximate=False, name=None):
    """The Gaussian error linear unit ``x * P(X <= x)``, X ~ N(0, 1) (Hendrycks and Gimpel
    2016): ``0.5 * x * erfc(-x / sqrt(2))``, or with ``approximate`` the tanh form
    ``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))``, as TF.

    Raises:
      ValueError: a non-float ``features`` (TF's own check raises ValueError, not TypeError).
    """
    return _GELU(features, approximate=bool(approximate))


_FB = ("features", "beta")


def _check_swish(x, beta):
    require_float("silu", "features", x)
    require_same_dtype("silu", _FB, x, beta)
    if broadcast_shape("silu", _FB, x.shape, beta.shape) != tuple(x.shape):
        raise ValueError(f"silu: beta must broadcast to the shape of features {list(x.shape)}, "
                         f"got {list(beta.shape)}")


def _swish_forward(k, xp, x, beta):
    with quiet(xp):
        s = _sigmoid(xp, beta * x)
        return x * s, (x, beta, s)


def _swish_backward(k, xp, res, g):
    x, beta, s = res
    with quiet(xp):  # TF's custom gradient, for features and beta
        gx = g * s * (1 + beta * x * (1 - s))
        gbeta = g * x * x * s * (1 - s)
    return gx, unbroadcast(xp, gbeta, beta.shape)


_SWISH = register("silu", args=_FB, check=_check_swish, forward=_swish_forward,
                  backward=_swish_backward, scalars_follow=True)


def silu(features, beta=1.0):
    """SiLU, also called swish: ``features * sigmoid(beta * features)`` (Elfwing et al. 2017,
    Ramachandran et al. 2017). ``beta`` (default 1.0) is a number or a tensor broadcasting to
    ``features``, cast to its dtype as TF does; both get gradients (TF's custom gradient)."""
    if isinstance(features, np.generic):
        features = np.asarray(features)  # an array, so that a Python beta takes its dtype
    dtype = getattr(features, "dtype", None)
    if dtype is not None:
        if np.dtype(dtype).kind != "f":
            raise TypeError(f"silu: features must be a floating-point tensor (float16/32/64), "
                            f"got {dtype}")
        if hasattr(beta, "dtype") and beta.dtype != dtype:
            beta = _math.cast(beta, dtype)
    return _SWISH(features, beta)


swish = silu


def _check_l2_normalize(x, *, axis, epsilon):
    require_float("l2_normalize", "x", x)
    normalize_axis("l2_normalize", axis, x.ndim)


def _l2_normalize_forward(k, xp, x, *, axis, epsilon):
    axes = normalize_axis("l2_normalize", axis, x.ndim)
    a = x.astype(_compute_dtype(x.dtype), copy=False)
    eps = a.dtype.type(x.dtype.type(epsilon))  # in x's dtype, as TF: 1e-12 is 0 in float16
    with quiet(xp):  # a zero vector in float16 gives 0 * inf = NaN, as TF
        s = xp.sum(a * a, axis=axes, keepdims=True)
        inv = 1 / xp.sqrt(xp.maximum(s, eps))
        y = a * inv
    return y.astype(x.dtype, copy=False), (a, s, inv, eps)


def _l2_normalize_backward(k, xp, res, g, *, axis, epsilon):
    a, s, inv, eps = res
    axes = normalize_axis("l2_normalize", axis, a.ndim)
    ga = g.astype(a.dtype, copy=False)
    with quiet(xp):
        # d(x / max(s, eps)**0.5): the norm's share flows only where s >= eps (TF's maximum)
        dot = xp.sum(ga * a, axis=axes, keepdims=True)
        grad = ga * inv - a * (inv * inv * inv) * dot * (s >= eps).astype(a.dtype)
    return (grad.astype(g.dtype, copy=False),)


_L2_NORMALIZE = register("l2_normalize", args=("x",), check=_check_l2_normalize,
                         forward=_l2_normalize_forward, backward=_l2_normalize_backward)


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """``x / sqrt(max(sum(x**2, axis), epsilon))`` (``tf.math.l2_normalize``,
    ``tf.nn.l2_normalize``); ``axis`` an int, a list, or None for all axes (``dim`` is its
    deprecated name). ``epsilon`` is taken in x's dtype, as TF (so in float16 it is 0 and a
    zero vector gives NaN); float16 sums in float32."""
    if dim is not None:
        if axis is not None:
            raise ValueError("l2_normalize: give axis or dim (deprecated), not both")
        axis = dim
    return _L2_NORMALIZE(x, axis=axis, epsilon=float(epsilon))


def _shape(value) -> tuple:
    shape = getattr(value, "shape", None)
    return tuple(shape) if shape is not None else np.shape(value)


def xw_plus_b(x, weights, biases, name=None):
    """``matmul(x, weights) + biases`` (``tf.compat.v1.nn.xw_plus_b``): ``x`` [batch..., in],
    ``weights`` [in, out], ``biases`` [out]; built from matmul and bias_add, which give the
    gradients."""
    for arg, value, ok, want in (("x", x, lambda r: r >= 2, ">= 2"),
                                 ("weights", weights, lambda r: r == 2, "2"),
                                 ("biases", biases, lambda r: r == 1, "1")):
        if not ok(len(_shape(value))):
            raise ValueError(f"xw_plus_b: {arg} must have rank {want}, got shape "
                             f"{list(_shape(value))}")
    return bias_add(_matmul.matmul(x, weights), biases)


# ---- max_pool, avg_pool (rank-generic), max_pool1d, avg_pool1d --------------------------------
def _window_1d(op, arg, value, data_format):
    """TF's _get_sequence for one spatial dimension, as the 2-D ops' 4-element form (their
    checks then apply to the batch and channel entries)."""
    items = _pooling._ints(op, arg, value, "an int or a list of 1 or 3 ints")
    if len(items) == 1:
        return [1, 1, items[0], 1] if data_format == "NWC" else [1, 1, 1, items[0]]
    if len(items) != 3:
        raise ValueError(f"{op}: {arg} must have length 1 or 3, got {items} of length "
                         f"{len(items)}")
    batch, a, b = items
    return [batch, 1, a, b] if data_format == "NWC" else [batch, a, 1, b]


def _pool1d(op, pool2d, input, ksize, strides, padding, data_format):  # noqa: A002
    dtype = getattr(input, "dtype", None)
    if dtype is not None and np.dtype(dtype).kind != "f":
        raise TypeError(f"{op}: input must be float16, float32 or float64, got {dtype}")
    if data_format not in ("NWC", "NCW"):
        raise ValueError(f"{op}: data_format must be 'NWC' or 'NCW', got {data_format!r}")
    if len(_shape(input)) != 3:
        layout = "[batch, width, channels]" if data_format == "NWC" else \
            "[batch, channels, width]"
        raise ValueError(f"{op}: input must be 3-dimensional {layout}, got shape "
                         f"{list(_shape(input))}")
    ksize = _window_1d(op, "ksize", ksize, data_format)
    strides = _window_1d(op, "strides", strides, data_format)
    axis = 1 if data_format == "NWC" else 2  # the height axis added for the 2-D op
    if not isinstance(padding, str) and isinstance(padding, (list, tuple)) and len(padding) == 3:
        padding = list(padding)
        padding.insert(axis, [0, 0])
    x = _shape_ops.expand_dims(input, axis)
    y = pool2d(x, ksize, strides, padding, "NHWC" if data_format == "NWC" else "NCHW")
    return _shape_ops.squeeze(y, [axis])


def max_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    """Max pooling over the width of [batch, width, channels] (or NCW) tensors
    (``tf.nn.max_pool1d``): the 2-D max pooling of a height-1 image, with its rules (ties,
    NaN, gradients). ``ksize``/``strides``: an int or 3 values (1 for batch and channels);
    ``padding``: 'SAME', 'VALID' or 3 [before, after] pairs."""
    return _pool1d("max_pool1d", _pooling.max_pool2d, input, ksize, strides, padding,
                   data_format)


def avg_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    """Average pooling over the width of [batch, width, channels] (or NCW) tensors
    (``tf.nn.avg_pool1d``), as 2-D average pooling of a height-1 image ('SAME' windows
    average their in-bounds entries)."""
    return _pool1d("avg_pool1d", _pooling.avg_pool2d, input, ksize, strides, padding,
                   data_format)


def _pool_nd(op, pool1d, pool2d, input, ksize, strides, padding, data_format):  # noqa: A002
    rank = len(_shape(input))
    if rank == 3:
        return pool1d(input, ksize, strides, padding, data_format or "NWC")
    if rank == 4:
        return pool2d(input, ksize, strides, padding, data_format or "NHWC")
    if rank == 5:
        from . import conv3d  # issue 16

        pool3d = conv3d.max_pool3d if op == "max_pool" else conv3d.avg_pool3d
        return pool3d(input, ksize, strides, padding, data_format or "NDHWC")
    raise ValueError(f"{op}: input must have rank 3, 4 or 5, got shape {list(_shape(input))}")


def max_pool(input, ksize, strides, padding, data_format=None, name=None):  # noqa: A002
    """Max pooling for any spatial rank (``tf.nn.max_pool``): a rank-3 input goes to
    ``max_pool1d`` (data_format 'NWC'/'NCW'), rank 4 to ``max_pool2d`` ('NHWC'/'NCHW'), rank 5
    to ``max_pool3d`` ('NDHWC'/'NCDHW').

    Raises:
      ValueError: another rank, or what the 1-D/2-D/3-D op raises."""
    return _pool_nd("max_pool", max_pool1d, _pooling.max_pool2d, input, ksize, strides,
                    padding, data_format)


def avg_pool(input, ksize, strides, padding, data_format=None, name=None):  # noqa: A002
    """Average pooling for any spatial rank (``tf.nn.avg_pool``), dispatching as
    ``max_pool`` does to ``avg_pool1d``, ``avg_pool2d`` or ``avg_pool3d``."""
    return _pool_nd("avg_pool", avg_pool1d, _pooling.avg_pool2d, input, ksize, strides,
                    padding, data_format)


# ---- embedding_lookup (tf.nn) ------------------------------------------------------------------
def _clip_rows(t, max_norm, first_axis):
    """TF's clip_by_norm of each slice over the axes from ``first_axis`` on: ``t * max_norm /
    max(norm, max_norm)``, composed of ops so that the gradient is TF's."""
    axes = list(range(first_axis, len(t.shape)))
    l2sum = _reduction.reduce_sum(_math.multiply(t, t), axes, keepdims=True)
    positive = _math.greater(l2sum, 0)
    safe = _indexing.where(positive, l2sum, _creation.ones_like(l2sum))
    l2norm = _indexing.where(positive, _math.sqrt(safe), l2sum)
    return _math.divide(_math.multiply(t, max_norm), _math.maximum(l2norm, max_norm))


def embedding_lookup(params, ids, max_norm=None, name=None):
    """Rows of ``params`` at ``ids`` (``tf.nn.embedding_lookup``): the output has shape
    ``ids.shape + params.shape[1:]``.

    Args:
      params: A tensor, or a list of tensors partitioned as TF's 'div' strategy (TF 2's only
        one) splits N rows over P tensors: the first N % P hold N // P + 1 rows, the rest
        N // P, in id order. Other splits raise ValueError (TF looks most of their ids up in
        the wrong tensor and fails).
      ids: An int32/int64 tensor of row ids. Ids outside [0, N) raise on the CPU and give
        zero rows on the GPU (``gather``'s rule).
      max_norm: If not None, each looked-up row whose l2 norm exceeds it is scaled down to
        it (TF's clip_by_norm over the row's axes).
      name: Ignored.

    The gradient scatter-adds into ``params`` (each partition), duplicate ids accumulating."""
    if isinstance(params, (list, tuple)):
        if not params:
            raise ValueError("embedding_lookup: params must be a tensor or a non-empty list of "
                             "tensors, got []")
        if len(params) == 1:
            params = params[0]
        else:
            sizes = [_shape(p)[0] if _shape(p) else None for p in params]
            if None in sizes:
                raise ValueError("embedding_lookup: each tensor of params must have rank >= 1")
            total, count = sum(sizes), len(sizes)
            q, extra = divmod(total, count)
            want = [q + 1] * extra + [q] * (count - extra)
            if sizes != want:
                raise ValueError(f"embedding_lookup: params must be split as TF's 'div' "
                                 f"strategy splits {total} rows over {count} tensors "
                                 f"({want} rows), got {sizes}")
            params = _shape_ops.concat(list(params), 0)
    dtype = getattr(ids, "dtype", None)
    if dtype is not None and np.dtype(dtype).kind not in "iu":
        raise TypeError(f"embedding_lookup: ids must be an integer tensor, got {dtype}")
    try:
        out = _indexing.gather(params, ids)
    except ValueError as e:  # gather's CPU range check, in this op's words
        prefix = "gather: indices"
        if not str(e).startswith(prefix):
            raise
        raise InvalidArgumentError("embedding_lookup: ids" + str(e)[len(prefix):]) from None
    if max_norm is None:
        return out
    return _clip_rows(out, max_norm, len(_shape(ids)))
