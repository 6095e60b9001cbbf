"""Neural-network ops (``tf.nn``): activations, softmax, cross-entropies, bias_add, l2_loss."""

from __future__ import annotations

import numpy as np

from ..core import dtypes
from ..core.registry import register
from ._util import astype, check_axis, quiet, require_float, require_int, require_same_dtype


def _activation(name, fn, grad, static_check=None):
    def check(x, **static):
        require_float(name, "features", x)
        if static_check:
            static_check(**static)

    def forward(k, xp, x, **static):
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


def _relu_grad(xp, g, x, y):
    # TF's ReluGrad multiplies by the mask (NaN in g stays NaN); a multiply has no
    # data-dependent branch, unlike where(), which mispredicts on random signs.
    return g * astype(xp, x > 0, g.dtype)


_RELU = _activation("relu", lambda xp, x: xp.maximum(x, 0), _relu_grad)
_LEAKY_RELU = _activation(
    "leaky_relu", lambda xp, x, alpha: xp.where(x > 0, x, x * alpha),
    lambda xp, g, x, y, alpha: xp.where(x > 0, g, g * alpha), _check_alpha)
_ELU = _activation("elu", lambda xp, x: xp.where(x > 0, x, xp.expm1(xp.minimum(x, 0))),
                   lambda xp, g, x, y: xp.where(x > 0, g, g * (y + 1)))


def relu(features, name=None):
    """max(features, 0); the gradient at 0 is 0, as TF."""
    return _RELU(features)


def leaky_relu(features, alpha=0.2, name=None):
    """features where positive, ``alpha * features`` elsewhere."""
    number = isinstance(alpha, (int, float, np.number)) and not isinstance(alpha, bool)
    return _LEAKY_RELU(features, alpha=float(alpha) if number else alpha)  # check() names it


def elu(features, name=None):
    """features where positive, exp(features) - 1 elsewhere."""
    return _ELU(features)


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
    require_same_dtype("bias_add", ("value", "bias"), value, bias)
    if data_format not in (None, "NHWC", "NCHW", "NWC", "NCW", "NDHWC", "NCDHW", "N...C",
                           "NC..."):
        raise ValueError(f"bias_add: data_format must be 'N...C' or 'NC...' style, got "
                         f"{data_format!r}")
    if value.ndim < 2:
        raise ValueError(f"bias_add: value must have rank >= 2, got shape {list(value.shape)}")
    if bias.ndim != 1:
        raise ValueError(f"bias_add: bias must be 1-D, got shape {list(bias.shape)}")
    c = value.shape[_channel_axis(value.ndim, data_format)]
    if bias.shape[0] != c:
        raise ValueError(f"bias_add: bias must have {c} elements (the channel size of value), "
                         f"got {bias.shape[0]}")


def _bias_shape(ndim, data_format, c):
    shape = [1] * ndim
    shape[_channel_axis(ndim, data_format)] = c
    return tuple(shape)


def _bias_add_forward(k, xp, value, bias, *, data_format):
    shape = _bias_shape(value.ndim, data_format, bias.shape[0])
    with quiet(xp):  # inf + -inf is NaN without a warning, as TF
        out = value + xp.reshape(bias, shape)
    return out, (value.shape, bias.shape)


def _bias_add_backward(k, xp, res, g, *, data_format):
    vshape, bshape = res
    axis = _channel_axis(len(vshape), data_format)
    others = tuple(i for i in range(len(vshape)) if i != axis)
    return g, xp.reshape(xp.sum(g, axis=others, keepdims=True), bshape)


_BIAS_ADD = register("bias_add", args=("value", "bias"), check=_check_bias_add,
                     forward=_bias_add_forward, backward=_bias_add_backward,
                     twice_differentiable=True)


def bias_add(value, bias, data_format=None, name=None):
    """value + bias, with the 1-D ``bias`` added along the channel axis: the last one, or
    axis 1 for an 'NC...' ``data_format``."""
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


