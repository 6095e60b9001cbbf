"""TF 1.15's signatures of functions TF 2 renamed arguments of: the reductions
(``reduction_indices``, ``keep_dims``), ``squeeze`` (``squeeze_dims``), ``expand_dims``
(``dim``), ``norm`` (``keep_dims``), ``nn.softmax``/``log_softmax`` (``dim``),
``nn.conv2d`` (``filter``), ``nn.max_pool``/``avg_pool`` (``value``), ``nn.moments``
(``keep_dims``), ``nn.conv2d_transpose`` (``value``, ``filter``), and two TF 1 semantics:
``where`` selects rows with a vector condition (TF 1's Select) and
``nn.softmax_cross_entropy_with_logits`` sends no gradient into the labels. Each old name
and its new one together raise TF's ValueError."""

from __future__ import annotations

import ipu_gpu as _core

__all__ = ["boolean_mask", "cond", "expand_dims", "gather", "norm", "ones_like", "pad",
           "reduce_all", "reduce_any", "reduce_logsumexp", "reduce_max", "reduce_mean",
           "reduce_min", "reduce_prod", "reduce_sum", "shape", "size", "squeeze", "where",
           "zeros_like"]
NN_NAMES = ["avg_pool", "conv2d", "conv2d_transpose", "log_softmax", "max_pool", "moments",
            "softmax", "softmax_cross_entropy_with_logits"]


def _lookup(new_name, new_value, old_name, old_value):
    """TF's ``deprecated_argument_lookup``: the value given under either name."""
    if old_value is not None:
        if new_value is not None:
            raise ValueError(f"Cannot specify both '{old_name}' and '{new_name}'.")
        return old_value
    return new_value


def _reduction(name):
    core_fn = getattr(_core, name, None) or getattr(_core.math, name)

    def reduce(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
               keep_dims=None):
        axis = _lookup("axis", axis, "reduction_indices", reduction_indices)
        keepdims = _lookup("keepdims", keepdims, "keep_dims", keep_dims)
        return core_fn(input_tensor, axis=axis, keepdims=bool(keepdims))
    reduce.__name__ = reduce.__qualname__ = name
    reduce.__doc__ = (f"TF 1's ``{name}`` (``reduction_indices``/``keep_dims`` are the old "
                      "names of ``axis``/``keepdims``).")
    return reduce


reduce_sum, reduce_mean, reduce_max, reduce_min = (_reduction(n) for n in (
    "reduce_sum", "reduce_mean", "reduce_max", "reduce_min"))
reduce_prod, reduce_all, reduce_any, reduce_logsumexp = (_reduction(n) for n in (
    "reduce_prod", "reduce_all", "reduce_any", "reduce_logsumexp"))


def squeeze(input, axis=None, name=None, squeeze_dims=None):  # noqa: A002 - TF's name
    """TF 1's ``squeeze`` (``squeeze_dims`` is the old name of ``axis``)."""
    return _core.squeeze(input, _lookup("axis", axis, "squeeze_dims", squeeze_dims))


def expand_dims(input, axis=None, name=None, dim=None):  # noqa: A002 - TF's name
    """TF 1's ``expand_dims`` (``dim`` is the old name of ``axis``).

    Raises:
      ValueError: no axis (TF's message)."""
    axis = _lookup("axis", axis, "dim", dim)
    if axis is None:
        raise ValueError("Must specify an axis argument to tf.expand_dims()")
    return _core.expand_dims(input, axis)


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None,  # noqa: A002
         keep_dims=None):
    """TF 1's ``norm`` (``keep_dims`` is the old name of ``keepdims``)."""
    keepdims = _lookup("keepdims", keepdims, "keep_dims", keep_dims)
    return _core.norm(tensor, ord=ord, axis=axis, keepdims=keepdims)


def _shape(t):
    shape = getattr(t, "shape", None)
    if shape is None:
        import numpy as np

        return list(np.shape(t))
    return shape.as_list() if hasattr(shape, "as_list") and shape.rank is not None else (
        None if hasattr(shape, "rank") and shape.rank is None else list(shape))


def where(condition, x=None, y=None, name=None):
    """TF 1's ``where``: with ``x`` and ``y`` (one shape) the elements of ``x`` where
    ``condition`` (their shape, or a vector choosing whole rows along the first axis) is
    true, else of ``y``, without broadcasting (TF 1's Select); without them the coordinates
    of the true elements.

    Raises:
      ValueError: only one of ``x``/``y``; shapes Select refuses (static shapes)."""
    if x is None and y is None:
        return _core.where(condition)
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    cs, xs, ys = _shape(condition), _shape(x), _shape(y)
    if xs is not None and ys is not None:
        if len(xs) != len(ys):
            raise ValueError(f"Shapes must be equal rank, but are {len(xs)} and {len(ys)} "
                             "for Select")
        _same_dims(xs, ys)
    if cs is not None and xs is not None and len(cs) == 1 and len(xs) > 1:
        _same_dims(cs, xs[:1])
        condition = _core.reshape(condition, [-1] + [1] * (len(xs) - 1))
    elif cs is not None and xs is not None:
        if len(cs) != len(xs):
            raise ValueError(f"Shapes must be equal rank, but are {len(cs)} and {len(xs)} "
                             "for Select")
        _same_dims(cs, xs)
    return _core.where(condition, x, y)


def _same_dims(a, b):
    for i, (d, e) in enumerate(zip(a, b)):
        if d is not None and e is not None and d != e:
            raise ValueError(f"Dimension {i} in both shapes must be equal, but are {d} and "
                             f"{e}. Shapes are {a} and {b}. for Select")


# ---- TF 1's argument order (``name`` before the arguments TF 2 added) --------------------------
def cond(pred, true_fn=None, false_fn=None, strict=False, name=None, fn1=None, fn2=None):
    """TF 1's ``cond`` (``fn1``/``fn2`` are the old names of ``true_fn``/``false_fn``)."""
    from ...graph import program

    true_fn = _lookup("true_fn", true_fn, "fn1", fn1)
    false_fn = _lookup("false_fn", false_fn, "fn2", fn2)
    return program.cond(pred, true_fn, false_fn, strict=strict)


def gather(params, indices, validate_indices=None, name=None, axis=None, batch_dims=0):
    """TF 1's ``gather`` (``name`` fourth)."""
    return _core.gather(params, indices, axis=axis, batch_dims=batch_dims)


def pad(tensor, paddings, mode="CONSTANT", name=None, constant_values=0):
    """TF 1's ``pad`` (``name`` fourth)."""
    return _core.pad(tensor, paddings, mode=mode, constant_values=constant_values)


def shape(input, name=None, out_type=None):  # noqa: A002 - TF's name
    """TF 1's ``shape`` (``name`` second)."""
    return _core.shape(input, out_type=out_type)


def size(input, name=None, out_type=None):  # noqa: A002 - TF's name
    """TF 1's ``size`` (``name`` second)."""
    return _core.size(input, out_type=out_type)


def zeros_like(tensor, dtype=None, name=None, optimize=True):
    """TF 1's ``zeros_like`` (its first argument is ``tensor``)."""
    return _core.zeros_like(tensor, dtype=dtype)


def ones_like(tensor, dtype=None, name=None, optimize=True):
    """TF 1's ``ones_like`` (its first argument is ``tensor``)."""
    return _core.ones_like(tensor, dtype=dtype)


def boolean_mask(tensor, mask, name="boolean_mask", axis=None):
    """TF 1's ``boolean_mask`` (``name`` third)."""
    return _core.boolean_mask(tensor, mask, axis=axis)


# ---- tf.compat.v1.nn -------------------------------------------------------------------------
def softmax(logits, axis=None, name=None, dim=None):
    """TF 1's ``nn.softmax`` (``dim`` is the old name of ``axis``)."""
    axis = _lookup("axis", axis, "dim", dim)
    return _core.nn.softmax(logits, axis=-1 if axis is None else axis)


def log_softmax(logits, axis=None, name=None, dim=None):
    """TF 1's ``nn.log_softmax`` (``dim`` is the old name of ``axis``)."""
    axis = _lookup("axis", axis, "dim", dim)
    return _core.nn.log_softmax(logits, axis=-1 if axis is None else axis)


def conv2d(input, filter=None, strides=None, padding=None,  # noqa: A002 - TF's names
           use_cudnn_on_gpu=True, data_format="NHWC", dilations=(1, 1, 1, 1), name=None,
           filters=None):
    """TF 1's ``nn.conv2d`` (``filter``, the old name of ``filters``, second)."""
    filters = _lookup("filters", filters, "filter", filter)
    return _core.nn.conv2d(input, filters, strides, padding, data_format=data_format,
                           dilations=list(dilations) if dilations is not None else None)


def _pool(core_fn):
    def pool(value, ksize, strides, padding, data_format="NHWC", name=None, input=None):  # noqa: A002
        value = _lookup("input", input, "value", value)
        return core_fn(value, ksize, strides, padding, data_format=data_format)
    return pool


max_pool = _pool(_core.nn.max_pool)
max_pool.__name__ = max_pool.__qualname__ = "max_pool"
max_pool.__doc__ = "TF 1's ``nn.max_pool`` (first argument ``value``)."
avg_pool = _pool(_core.nn.avg_pool)
avg_pool.__name__ = avg_pool.__qualname__ = "avg_pool"
avg_pool.__doc__ = "TF 1's ``nn.avg_pool`` (first argument ``value``)."


def moments(x, axes, shift=None, name=None, keep_dims=None, keepdims=None):
    """TF 1's ``nn.moments`` (``name`` fourth; ``keep_dims`` the old name of ``keepdims``)."""
    keepdims = _lookup("keepdims", keepdims, "keep_dims", keep_dims)
    return _core.nn.moments(x, axes, keepdims=bool(keepdims))


def softmax_cross_entropy_with_logits(labels=None, logits=None, dim=-1, name=None,
                                      axis=None):
    """TF 1's ``nn.softmax_cross_entropy_with_logits``: no gradient into the labels
    (``..._v2`` sends one); ``dim`` is the old name of ``axis`` (its default -1 counts as
    given, as in TF).

    Raises:
      ValueError: no labels or logits; both ``dim`` and ``axis`` (TF's messages)."""
    if labels is None or logits is None:
        raise ValueError(f"Both `labels` and `logits` must be provided for "
                         f"softmax_cross_entropy_with_logitsReceived: labels={labels} and "
                         f"logits={logits}")
    axis = _lookup("axis", axis, "dim", dim)
    return _core.nn.softmax_cross_entropy_with_logits(
        labels=_core.stop_gradient(labels), logits=logits, axis=axis)


def conv2d_transpose(value=None, filter=None, output_shape=None, strides=None,  # noqa: A002
                     padding="SAME", data_format="NHWC", name=None, input=None, filters=None,
                     dilations=None):
    """TF 1's ``nn.conv2d_transpose`` (``value``/``filter``, the old names of
    ``input``/``filters``, first)."""
    value = _lookup("input", input, "value", value)
    filters = _lookup("filters", filters, "filter", filter)
    return _core.nn.conv2d_transpose(value, filters, output_shape, strides, padding=padding,
                                     data_format=data_format, dilations=dilations)
