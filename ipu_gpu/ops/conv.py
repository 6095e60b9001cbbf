"""2-D convolutions (``tf.nn.conv2d``, ``depthwise_conv2d``, ``conv2d_transpose``, ``conv1d``)
with TF's argument rules and gradients for the input and the filters.

The kernels work in NHWC; NCHW inputs are transposed to NHWC (a copy) on the way in and the
results back on the way out. float16 inputs are computed in float32 and rounded once at the
end (the IPU's default float partials), float32 in float32 and float64 in float64.

Convolutions made inside ``ipu.nn_ops.multi_conv`` record that multi_conv's options with
their gradient record, and their gradient convolutions run with those options current again
(``ops/multi_conv.py``); the options never change a result.
"""

from __future__ import annotations

import numpy as np

from ..core import dtypes
from ..core.registry import register, symbolic_call
from .multi_conv import current_options, options_scope
from .shape import reshape

_FLOATS = (dtypes.float16, dtypes.float32, dtypes.float64)
_LAYOUTS_2D = ("NHWC", "NCHW")


# ---- static arguments ------------------------------------------------------------------------
def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _int_list(op, arg, value):
    """``value`` (an int, or a list/tuple/array of ints) as a tuple of ints."""
    if hasattr(value, "_value") or isinstance(value, np.ndarray):
        value = np.asarray(value).tolist()
    if _is_int(value):
        return (int(value),)
    if not isinstance(value, (list, tuple)) or not all(_is_int(v) for v in value):
        raise TypeError(f"{op}: {arg} must be an int or a list of ints, got {value!r}")
    return tuple(int(v) for v in value)


def _spatial(op, arg, value, data_format, lengths=(1, 2, 4), nspatial=2):
    """(h, w) (or (w,) for 1-D) from an int or a list of 1, nspatial or nspatial + 2 ints (the
    long form in ``data_format`` order, 1 at the batch and channel positions)."""
    if value is None:
        return (1,) * nspatial
    items = _int_list(op, arg, value)
    if len(items) not in lengths:
        if len(lengths) == 1:
            forms = f"a list of {lengths[0]} ints"
        else:
            forms = ("an int or a list of " + ", ".join(str(n) for n in lengths[:-1])
                     + f" or {lengths[-1]} ints")
        raise ValueError(f"{op}: {arg} must be {forms}, got {list(items)}")
    if len(items) == 1:
        items = items * nspatial
    elif len(items) == nspatial + 2:
        first = data_format.index("C") == 1
        outer = (items[0], items[1] if first else items[-1])
        if outer != (1, 1):
            raise ValueError(f"{op}: {arg} must be 1 in the batch and channel dimensions, got "
                             f"{list(items)}")
        items = items[2:] if first else items[1:-1]
    if any(v < 1 for v in items):
        raise ValueError(f"{op}: {arg} must be positive, got {list(items)}")
    return tuple(items)


def _padding(op, padding, data_format, nspatial=2, explicit=True):
    """'SAME', 'VALID', or the explicit ((before, after), ...) of the spatial dimensions from
    TF's list of [before, after] pairs, one per dimension in ``data_format`` order."""
    if isinstance(padding, str):
        if padding not in ("SAME", "VALID"):
            raise ValueError(f"{op}: padding must be 'SAME', 'VALID'"
                             f"{' or a list of [before, after] pairs' if explicit else ''}, got "
                             f"{padding!r}")
        return padding
    if not explicit:
        raise ValueError(f"{op}: padding must be 'SAME' or 'VALID', got {padding!r}")
    if hasattr(padding, "_value") or isinstance(padding, np.ndarray):
        padding = np.asarray(padding).tolist()
    rank = nspatial + 2
    if not isinstance(padding, (list, tuple)):
        raise TypeError(f"{op}: padding must be 'SAME', 'VALID' or a list of {rank} [before, "
                        f"after] pairs, got {padding!r}")
    if len(padding) != rank:
        raise ValueError(f"{op}: padding must be a list of {rank} [before, after] pairs (one "
                         f"per dimension of {data_format}), got {padding!r}")
    pairs = []
    for p in padding:
        if not isinstance(p, (list, tuple)) or len(p) != 2:
            raise ValueError(f"{op}: padding must be a list of {rank} [before, after] pairs, "
                             f"got {padding!r}")
        if not all(_is_int(v) for v in p):
            raise TypeError(f"{op}: padding must hold ints, got {padding!r}")
        if min(p) < 0:
            raise ValueError(f"{op}: padding must be non-negative, got {padding!r}")
        pairs.append((int(p[0]), int(p[1])))
    c_axis = data_format.index("C")
    if pairs[0] != (0, 0) or pairs[c_axis] != (0, 0):
        raise ValueError(f"{op}: padding must be [0, 0] in the batch and channel dimensions, "
                         f"got {padding!r}")
    return tuple(p for i, p in enumerate(pairs) if i not in (0, c_axis))


def _data_format(op, data_format, allowed=_LAYOUTS_2D):
    if data_format not in allowed:
        raise ValueError(f"{op}: data_format must be {' or '.join(repr(a) for a in allowed)}, "
                         f"got {data_format!r}")
    return data_format


def _out_size(op, n_in, k, s, d, padding):
    """(before, after) padding and output size of one spatial dimension, as TF computes them
    (``GetWindowedOutputSize``)."""
    eff = (k - 1) * d + 1
    if padding == "SAME":
        out = -(-n_in // s)
        total = max((out - 1) * s + eff - n_in, 0) if out else 0
        return (total // 2, total - total // 2), out
    before, after = (0, 0) if padding == "VALID" else padding
    span = n_in + before + after - eff + s
    if span < 0:
        raise ValueError(f"{op}: Computed output size would be negative: {int(span / s)} "
                         f"[input_size: {n_in}, effective_filter_size: {eff}, stride: {s}]")
    return (before, after), span // s


def _geometry(op, hw, khw, strides, dilations, padding):
    """((top, bottom), (left, right)) and (Ho, Wo)."""
    pads, outs = [], []
    for i in range(2):
        pad = padding if isinstance(padding, str) else padding[i]
        p, o = _out_size(op, hw[i], khw[i], strides[i], dilations[i], pad)
        pads.append(p)
        outs.append(o)
    return tuple(pads), tuple(outs)


# ---- layouts and dtypes ------------------------------------------------------------------------
def _nhwc_shape(shape, data_format):
    n, a, b, c = shape
    return (n, b, c, a) if data_format == "NCHW" else (n, a, b, c)


def _compute_dtype(dtype):
    return dtypes.float64 if dtype == dtypes.float64 else dtypes.float32


def _to_nhwc(xp, x, data_format, dtype):
    if data_format == "NCHW":
        x = xp.transpose(x, (0, 2, 3, 1))
    return xp.ascontiguousarray(x, dtype=dtype)


def _from_nhwc(xp, y, data_format, dtype):
    if data_format == "NCHW":
        y = xp.transpose(y, (0, 3, 1, 2))
    return xp.ascontiguousarray(y, dtype=dtype)


def _check_floats(op, names, x, w):
    if x.dtype not in _FLOATS:
        raise TypeError(f"{op}: {names[0]} must be float16, float32 or float64, got {x.dtype}")
    if w.dtype != x.dtype:
        raise TypeError(f"{op}: {names[1]} must have the dtype of {names[0]} ({x.dtype.name}), "
                        f"got {w.dtype.name}")


def _check_rank4(op, names, x, w, data_format, filter_layout):
    if x.ndim != 4:
        raise ValueError(f"{op}: {names[0]} must have rank 4 ({data_format}), got shape "
                         f"{list(x.shape)}")
    if w.ndim != 4:
        raise ValueError(f"{op}: {names[1]} must have rank 4 ({filter_layout}), got shape "
                         f"{list(w.shape)}")
    if w.size == 0:
        raise ValueError(f"{op}: {names[1]} must not have zero elements, got shape "
                         f"{list(w.shape)}")


# ---- conv2d ------------------------------------------------------------------------------------
def _conv2d_groups(op, c, w_shape):
    cg, k = w_shape[2], w_shape[3]
    if c < cg or c % cg:
        raise ValueError(f"{op}: filters must have an input depth that divides the input depth "
                         f"{c}, got {cg} (filters shape {list(w_shape)})")
    groups = c // cg
    if k % groups:
        raise ValueError(f"{op}: filters must have a number of output channels divisible by the "
                         f"number of groups {groups} (input depth {c} / filter depth {cg}), got "
                         f"{k}")
    return groups


def _check_conv2d(x, w, *, strides, dilations, padding, data_format):
    names = ("input", "filters")
    _check_floats("conv2d", names, x, w)
    _check_rank4("conv2d", names, x, w, data_format, "[height, width, in_channels, "
                 "out_channels]")
    n, h, wd, c = _nhwc_shape(x.shape, data_format)
    _conv2d_groups("conv2d", c, w.shape)
    _geometry("conv2d", (h, wd), w.shape[:2], strides, dilations, padding)


def _conv2d_forward(k, xp, x, w, *, strides, dilations, padding, data_format):
    cdt = _compute_dtype(x.dtype)
    xn = _to_nhwc(xp, x, data_format, cdt)
    wc = xp.ascontiguousarray(w, dtype=cdt)
    n, h, wd, c = xn.shape
    groups = c // w.shape[2]
    pads, (ho, wo) = _geometry("conv2d", (h, wd), w.shape[:2], strides, dilations, padding)
    out = xp.empty((n, ho, wo, w.shape[3]), cdt)
    keep = {}
    k.conv2d_fwd(xn, wc, strides, dilations, pads, groups, out, keep)
    y = _from_nhwc(xp, out, data_format, x.dtype)
    return y, (xn, wc, keep, pads, groups, x.dtype, current_options())


def _conv2d_backward(k, xp, res, g, *, strides, dilations, padding, data_format,
                     needed=(True, True)):
    xn, wc, keep, pads, groups, dtype, options = res
    gy = _to_nhwc(xp, g, data_format, wc.dtype)
    dx = xp.empty(xn.shape, wc.dtype) if needed[0] else None
    dw = xp.empty(wc.shape, wc.dtype) if needed[1] else None
    with options_scope(options):
        k.conv2d_bwd(xn, wc, gy, strides, dilations, pads, groups, dx, dw, keep)
    return (None if dx is None else _from_nhwc(xp, dx, data_format, dtype),
            None if dw is None else dw.astype(dtype, copy=False))


_CONV2D = register("conv2d", args=("input", "filters"), check=_check_conv2d,
                   forward=_conv2d_forward, backward=_conv2d_backward, family="conv",
                   partial_backward=True)


def conv2d(input, filters, strides, padding, data_format="NHWC", dilations=None,  # noqa: A002
           name=None):
    """Computes a 2-D convolution given ``input`` and 4-D ``filters`` tensors.

    ``output[b, i, j, k] = sum_{di, dj, q} input[b, strides[1] * i + dilations[1] * di,
    strides[2] * j + dilations[2] * dj, q] * filters[di, dj, q, k]`` (NHWC, after padding).

    Args:
      input: A 4-D float16/float32/float64 tensor, ``[batch, in_height, in_width,
        in_channels]`` (NHWC) or ``[batch, in_channels, in_height, in_width]`` (NCHW).
      filters: A tensor of the same dtype, ``[filter_height, filter_width, in_channels /
        groups, out_channels]``. When ``in_channels`` is a multiple of the filter's input
        depth the convolution is grouped (``groups = in_channels / filters.shape[2]``), as TF.
      strides: An int or a list of 1, 2 or 4 ints: the stride of the sliding window for each
        dimension of ``input`` (4: in ``data_format`` order, 1 for batch and channels).
      padding: ``"SAME"``, ``"VALID"``, or a list of 4 ``[before, after]`` pairs in
        ``data_format`` order (``[[0, 0], [top, bottom], [left, right], [0, 0]]`` for NHWC).
      data_format: ``"NHWC"`` (default) or ``"NCHW"``.
      dilations: An int or a list of 1, 2 or 4 ints (default 1): the dilation factor of each
        dimension, as for ``strides``.
      name: Ignored (no graph).

    Returns:
      A tensor of ``input``'s dtype and layout.

    Raises:
      ValueError: bad ranks, a padding that is not 'SAME'/'VALID'/4 non-negative pairs with
        [0, 0] for batch and channels, strides or dilations that are not positive or not 1 in
        the batch/channel dimensions, channel counts that do not match, a filter with no
        elements, or an output size that would be negative.
      TypeError: a dtype other than float16/32/64, or filters of another dtype than input.
    """
    data_format = _data_format("conv2d", data_format)
    return _CONV2D(input, filters, strides=_spatial("conv2d", "strides", strides, data_format),
                   dilations=_spatial("conv2d", "dilations", dilations, data_format),
                   padding=_padding("conv2d", padding, data_format), data_format=data_format)


# ---- conv2d + bias (+ relu): Keras's Conv2D in one op -----------------------------------------
def _check_conv2d_bias(x, w, b, *, strides, dilations, padding, relu):
    _check_conv2d(x, w, strides=strides, dilations=dilations, padding=padding,
                  data_format="NHWC")
    if x.dtype not in (dtypes.float32, dtypes.float64):
        raise TypeError(f"conv2d_bias: input must be float32 or float64, got {x.dtype}")
    if b.dtype != x.dtype:
        raise TypeError(f"conv2d_bias: bias must have the dtype of input ({x.dtype.name}), got "
                        f"{b.dtype.name}")
    if b.ndim != 1 or b.shape[0] != w.shape[3]:
        raise ValueError(f"conv2d_bias: bias must be a vector of {w.shape[3]} values (the "
                         f"filters' output channels), got shape {list(b.shape)}")


def _conv2d_bias_forward(k, xp, x, w, b, *, strides, dilations, padding, relu):
    n, h, wd, c = x.shape
    xn, wc = xp.ascontiguousarray(x), xp.ascontiguousarray(w)
    pads, (ho, wo) = _geometry("conv2d", (h, wd), w.shape[:2], strides, dilations, padding)
    out = xp.empty((n, ho, wo, w.shape[3]), x.dtype)
    keep = {}
    groups = c // w.shape[2]
    if xp is np:  # bias and relu applied by the kernels, a block of rows at a time
        k.conv2d_fwd(xn, wc, strides, dilations, pads, groups, out, keep, bias=b, relu=relu)
    else:
        k.conv2d_fwd(xn, wc, strides, dilations, pads, groups, out, keep)
        out += b
        if relu:
            out = xp.where(out <= 0, xp.zeros((), out.dtype), out)  # NaN stays NaN
    return out, (xn, wc, keep, pads, groups, out if relu else None, current_options())


def _conv2d_bias_backward(k, xp, res, g, *, strides, dilations, padding, relu,
                          needed=(True, True, True)):
    xn, wc, keep, pads, groups, y, options = res
    g = xp.ascontiguousarray(g, dtype=wc.dtype)
    if xp is np:
        gpre, db = k.bias_relu_grad(g, y, relu)
    else:
        gpre = g * (y > 0).astype(g.dtype) if relu else g
        db = xp.sum(gpre.reshape(-1, gpre.shape[-1]), axis=0)
    dx = xp.empty(xn.shape, wc.dtype) if needed[0] else None
    dw = xp.empty(wc.shape, wc.dtype) if needed[1] else None
    with options_scope(options):
        k.conv2d_bwd(xn, wc, gpre, strides, dilations, pads, groups, dx, dw, keep)
    return dx, dw, db if needed[2] else None


_CONV2D_BIAS = register("conv2d_bias", args=("input", "filters", "bias"),
                        check=_check_conv2d_bias, forward=_conv2d_bias_forward,
                        backward=_conv2d_bias_backward, family="conv", partial_backward=True)


def conv2d_bias(input, filters, bias, strides, padding, dilations=None,  # noqa: A002
                relu=False):
    """``relu(bias_add(conv2d(input, filters, ...), bias))`` (the relu only with ``relu``) in
    one op, for NHWC float32/float64 ``input``: the bias and the relu are applied to the
    convolution's output while it is in cache, and their gradients taken in one pass, with
    the same arithmetic as the three ops (the bias gradient sums in another order). What a
    Keras ``Conv2D`` layer computes; ``strides``, ``padding`` and ``dilations`` as
    ``conv2d``'s."""
    return _CONV2D_BIAS(input, filters, bias,
                        strides=_spatial("conv2d", "strides", strides, "NHWC"),
                        dilations=_spatial("conv2d", "dilations", dilations, "NHWC"),
                        padding=_padding("conv2d", padding, "NHWC"), relu=bool(relu))


# ---- conv2d_transpose ---------------------------------------------------------------------------
def _check_conv2d_transpose(x, w, *, output_shape, strides, dilations, padding, data_format):
    op, names = "conv2d_transpose", ("input", "filters")
    _check_floats(op, names, x, w)
    _check_rank4(op, names, x, w, data_format, "[height, width, output_channels, "
                 "in_channels]")
    n, h, wd, c = _nhwc_shape(x.shape, data_format)
    if c != w.shape[3]:
        raise ValueError(f"{op}: filters must have {c} input channels (the depth of input) in "
                         f"dimension 3, got shape {list(w.shape)}")
    on, oh, ow, oc = _nhwc_shape(output_shape, data_format)
    if on != n or oc != w.shape[2]:
        raise ValueError(f"{op}: output_shape must have batch {n} and {w.shape[2]} channels "
                         f"(filters dimension 2), got {list(output_shape)}")
    if min(output_shape) < 0:
        raise ValueError(f"{op}: output_shape must be non-negative, got {list(output_shape)}")
    _, (ho, wo) = _geometry(op, (oh, ow), w.shape[:2], strides, dilations, padding)
    if (ho, wo) != (h, wd):
        raise ValueError(f"{op}: output_shape {list(output_shape)} must be a size whose "
                         f"convolution with these strides, dilations and padding has input's "
                         f"spatial size {[h, wd]}, got one giving {[ho, wo]}")


def _conv2d_transpose_forward(k, xp, x, w, *, output_shape, strides, dilations, padding,
                              data_format):
    cdt = _compute_dtype(x.dtype)
    dy = _to_nhwc(xp, x, data_format, cdt)
    wc = xp.ascontiguousarray(w, dtype=cdt)
    out_shape = _nhwc_shape(output_shape, data_format)
    pads, _ = _geometry("conv2d_transpose", out_shape[1:3], w.shape[:2], strides, dilations,
                        padding)
    out = xp.empty(out_shape, cdt)
    k.conv2d_bwd(None, wc, dy, strides, dilations, pads, 1, out, None)
    return (_from_nhwc(xp, out, data_format, x.dtype),
            (dy, wc, pads, x.dtype, current_options()))


def _conv2d_transpose_backward(k, xp, res, g, *, output_shape, strides, dilations, padding,
                               data_format, needed=(True, True)):
    dy, wc, pads, dtype, options = res
    gn = _to_nhwc(xp, g, data_format, wc.dtype)
    dx = xp.empty(dy.shape, wc.dtype) if needed[0] else None
    dw = xp.empty(wc.shape, wc.dtype) if needed[1] else None
    with options_scope(options):
        if dx is not None:  # the adjoint of the input gradient is the convolution itself
            k.conv2d_fwd(gn, wc, strides, dilations, pads, 1, dx)
        if dw is not None:
            k.conv2d_bwd(gn, None, dy, strides, dilations, pads, 1, None, dw)
    return (None if dx is None else _from_nhwc(xp, dx, data_format, dtype),
            None if dw is None else dw.astype(dtype, copy=False))


_CONV2D_TRANSPOSE = register("conv2d_transpose", args=("input", "filters"),
                             check=_check_conv2d_transpose, forward=_conv2d_transpose_forward,
                             backward=_conv2d_transpose_backward, family="conv",
                             partial_backward=True)


def _output_shape(output_shape, input_shape, filters_shape, data_format):
    op = "conv2d_transpose"
    items = _int_list(op, "output_shape", output_shape)
    if len(items) == 2:  # spatial sizes only, as TF accepts
        n = input_shape[0] if input_shape else 0
        c = filters_shape[2] if len(filters_shape) == 4 else 0
        items = (n, c) + items if data_format == "NCHW" else (n,) + items + (c,)
    if len(items) != 4:
        raise ValueError(f"{op}: output_shape must have 4 entries (or the 2 spatial ones), got "
                         f"{list(items)}")
    return items


def conv2d_transpose(input, filters, output_shape, strides, padding="SAME",  # noqa: A002
                     data_format="NHWC", dilations=None, name=None):
    """The transpose of ``conv2d`` (sometimes called deconvolution): the gradient of
    ``conv2d`` with respect to its input.

    Args:
      input: A 4-D float16/float32/float64 tensor, ``[batch, height, width, in_channels]``
        (NHWC) or ``[batch, in_channels, height, width]`` (NCHW).
      filters: A tensor of the same dtype, ``[height, width, output_channels,
        in_channels]``; ``in_channels`` must match ``input``.
      output_shape: The output shape: 4 ints in ``data_format`` order (batch and channels
        must match ``input`` and ``filters``), or the 2 spatial sizes. It must be a size whose
        ``conv2d`` with the same arguments has ``input``'s spatial size.
      strides: An int or a list of 1, 2 or 4 ints, as for ``conv2d``.
      padding: ``"SAME"``, ``"VALID"`` or explicit pairs, as for ``conv2d``.
      data_format: ``"NHWC"`` (default) or ``"NCHW"``.
      dilations: An int or a list of 1, 2 or 4 ints (default 1).
      name: Ignored.

    Returns:
      A tensor of ``input``'s dtype with shape ``output_shape``.

    Raises:
      ValueError, TypeError: as ``conv2d``; ValueError also for an ``output_shape`` that does
        not fit ``input``.
    """
    data_format = _data_format("conv2d_transpose", data_format)
    shape = _output_shape(output_shape, tuple(getattr(input, "shape", np.shape(input))),
                          tuple(getattr(filters, "shape", np.shape(filters))), data_format)
    op = "conv2d_transpose"
    return _CONV2D_TRANSPOSE(input, filters, output_shape=shape,
                             strides=_spatial(op, "strides", strides, data_format),
                             dilations=_spatial(op, "dilations", dilations, data_format),
                             padding=_padding(op, padding, data_format), data_format=data_format)


# ---- depthwise_conv2d ---------------------------------------------------------------------------
def _check_depthwise(x, f, *, strides, dilations, padding, data_format):
    op, names = "depthwise_conv2d", ("input", "filter")
    _check_floats(op, names, x, f)
    _check_rank4(op, names, x, f, data_format, "[filter_height, filter_width, in_channels, "
                 "channel_multiplier]")
    n, h, wd, c = _nhwc_shape(x.shape, data_format)
    if f.shape[2] != c:
        raise ValueError(f"{op}: filter must have {c} input channels (the depth of input) in "
                         f"dimension 2, got shape {list(f.shape)}")
    _geometry(op, (h, wd), f.shape[:2], strides, dilations, padding)


def _depthwise_forward(k, xp, x, f, *, strides, dilations, padding, data_format):
    cdt = _compute_dtype(x.dtype)
    xn = _to_nhwc(xp, x, data_format, cdt)
    fc = xp.ascontiguousarray(f, dtype=cdt)
    n, h, wd, c = xn.shape
    pads, (ho, wo) = _geometry("depthwise_conv2d", (h, wd), f.shape[:2], strides, dilations,
                               padding)
    out = xp.empty((n, ho, wo, c * f.shape[3]), cdt)
    k.depthwise_conv2d_fwd(xn, fc, strides, dilations, pads, out)
    return (_from_nhwc(xp, out, data_format, x.dtype),
            (xn, fc, pads, x.dtype, current_options()))


def _depthwise_backward(k, xp, res, g, *, strides, dilations, padding, data_format,
                        needed=(True, True)):
    xn, fc, pads, dtype, options = res
    gy = _to_nhwc(xp, g, data_format, fc.dtype)
    dx = xp.empty(xn.shape, fc.dtype) if needed[0] else None
    df = xp.empty(fc.shape, fc.dtype) if needed[1] else None
    with options_scope(options):
        k.depthwise_conv2d_bwd(xn, fc, gy, strides, dilations, pads, dx, df)
    return (None if dx is None else _from_nhwc(xp, dx, data_format, dtype),
            None if df is None else df.astype(dtype, copy=False))


_DEPTHWISE = register("depthwise_conv2d", args=("input", "filter"), check=_check_depthwise,
                      forward=_depthwise_forward, backward=_depthwise_backward, family="conv",
                      partial_backward=True)


def depthwise_conv2d(input, filter, strides, padding, data_format=None,  # noqa: A002
                     dilations=None, name=None):
    """Depthwise 2-D convolution: each input channel is convolved with its own
    ``channel_multiplier`` filters, giving ``in_channels * channel_multiplier`` outputs.

    ``output[b, i, j, k * channel_multiplier + q] = sum_{di, dj} input[b, strides[1] * i +
    dilations[0] * di, strides[2] * j + dilations[1] * dj, k] * filter[di, dj, k, q]``.

    Args:
      input: 4-D float16/float32/float64, in ``data_format`` (NHWC by default).
      filter: ``[filter_height, filter_width, in_channels, channel_multiplier]``, same dtype.
      strides: A list of 4 ints in ``data_format`` order, 1 for batch and channels.
      padding: ``"SAME"``, ``"VALID"`` or explicit pairs, as for ``conv2d``.
      data_format: ``"NHWC"`` (None, the default) or ``"NCHW"``.
      dilations: An int or a list of 2 ints (the atrous rate in height and width, default 1).
        If any is greater than 1, all strides must be 1.
      name: Ignored.

    Returns:
      A tensor of ``input``'s dtype and layout with ``in_channels * channel_multiplier``
      channels.

    Raises:
      TypeError: ``strides`` is not a list (TF's rule), or dtypes as ``conv2d``.
      ValueError: as ``conv2d``, a filter whose ``in_channels`` differs from the input's, or
        dilations greater than 1 together with strides greater than 1.
    """
    op = "depthwise_conv2d"
    data_format = _data_format(op, "NHWC" if data_format is None else data_format)
    if not isinstance(strides, (list, tuple, np.ndarray)) and not hasattr(strides, "_value"):
        raise TypeError(f"{op}: strides must be a list of 4 ints, got {strides!r}")
    s = _spatial(op, "strides", strides, data_format, lengths=(4,))
    d = _spatial(op, "dilations", dilations, data_format, lengths=(1, 2))
    if max(d) > 1 and max(s) > 1:
        raise ValueError(f"{op}: strides must all be 1 when dilations are greater than 1, got "
                         f"strides {list(s)} and dilations {list(d)}")
    return _DEPTHWISE(input, filter, strides=s, dilations=d,
                      padding=_padding(op, padding, data_format), data_format=data_format)


# ---- conv1d ----------------------------------------------------------------------------------
def conv1d(input, filters, stride, padding, data_format="NWC", dilations=None,  # noqa: A002
           name=None):
    """Computes a 1-D convolution of ``input`` with 3-D ``filters``, as ``conv2d`` on a height
    of 1 (inputs ``[batch, 1, in_width, in_channels]``, filters ``[1, filter_width,
    in_channels, out_channels]``).

    Args:
      input: A float16/float32/float64 tensor of rank at least 3: ``batch_shape + [in_width,
        in_channels]`` (NWC) or ``batch_shape + [in_channels, in_width]`` (NCW).
      filters: ``[filter_width, in_channels, out_channels]``, same dtype.
      stride: An int or a list of 1 or 3 ints.
      padding: ``"SAME"`` or ``"VALID"`` (explicit padding is not accepted, as in TF).
      data_format: ``"NWC"`` (default) or ``"NCW"``.
      dilations: An int or a list of 1 or 3 ints (default 1).
      name: Ignored.

    Returns:
      A tensor of ``input``'s dtype: ``batch_shape + [out_width, out_channels]`` (NWC).

    Raises:
      ValueError, TypeError: as ``conv2d``.
    """
    op = "conv1d"
    data_format = _data_format(op, data_format, ("NWC", "NCW"))
    (s,) = _spatial(op, "stride", stride, data_format, lengths=(1, 3), nspatial=1)
    (d,) = _spatial(op, "dilations", dilations, data_format, lengths=(1, 3), nspatial=1)
    pad = _padding(op, padding, data_format, nspatial=1, explicit=False)
    x_shape = tuple(getattr(input, "shape", np.shape(input)))
    f_shape = tuple(getattr(filters, "shape", np.shape(filters)))
    if len(x_shape) < 3:
        tail = "[in_width, in_channels]" if data_format == "NWC" else "[in_channels, in_width]"
        raise ValueError(f"{op}: input must have rank at least 3 (batch_shape + {tail}), got "
                         f"shape {list(x_shape)}")
    if len(f_shape) != 3:
        raise ValueError(f"{op}: filters must have rank 3 [filter_width, in_channels, "
                         f"out_channels], got shape {list(f_shape)}")
    c = x_shape[-1] if data_format == "NWC" else x_shape[-2]
    if c < f_shape[1] or c % f_shape[1]:
        raise ValueError(f"{op}: filters must have an input depth that divides the input depth "
                         f"{c}, got {f_shape[1]} (filters shape {list(f_shape)})")
    if None in x_shape:  # a TF1 graph tensor of unknown size: one node reshaping in the run
        node = symbolic_call(conv1d, (input, filters, stride, padding),
                             dict(data_format=data_format, dilations=dilations))
        if node is not NotImplemented:
            return node
    batch = x_shape[:-2]
    nb = int(np.prod(batch, dtype=np.int64))
    if data_format == "NWC":
        x4 = reshape(input, (nb, 1) + x_shape[-2:])
        fmt2 = "NHWC"
    else:
        x4 = reshape(input, (nb, x_shape[-2], 1, x_shape[-1]))
        fmt2 = "NCHW"
    y = conv2d(x4, reshape(filters, (1,) + f_shape), [1, s], pad, data_format=fmt2,
               dilations=[1, d])
    ys = tuple(y.shape)
    tail = ys[2:] if data_format == "NWC" else (ys[1], ys[3])
    return reshape(y, batch + tail)
