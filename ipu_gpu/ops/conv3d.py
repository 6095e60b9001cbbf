"""3-D convolution and pooling (``tf.nn.conv3d``, ``conv3d_transpose``, ``max_pool3d``,
``avg_pool3d``) with TF's signatures, argument checks and gradients.

The kernels are vectorised array code (numpy on the host, cupy on a GPU): one loop over the
window's offsets, each step a strided view of the padded input, a GEMM for the convolutions
and an elementwise max or sum for the pools. They work in NDHWC; NCDHW tensors are
transposed on the way in and back on the way out. float16 is computed in float32 and rounded
once (the IPU's float partials), float32 in float32, float64 in float64.

Output sizes and SAME padding are TF's (``GetWindowedOutputSize``: ``ceil(in / stride)``
with the padding split ``before = total // 2``). Where TF's CPU kernels refuse a case its GPU
kernels take (dilations above 1, NCDHW pooling), these ops compute it as the GPU kernels do.
"""

from __future__ import annotations

import itertools

import numpy as np

from ..core import dtypes
from ..core.registry import register
from ..errors import InvalidArgumentError, UnimplementedError
from .matmul import cpu_matmul

_FLOATS = (dtypes.float16, dtypes.float32, dtypes.float64)
_FORMATS = ("NDHWC", "NCDHW")
_TIE = 1e-5  # TF's CPU MaxPool3DGrad: elements this close to the maximum take its gradient


# ---- static arguments ------------------------------------------------------------------------
def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _as_list(value):
    if hasattr(value, "numpy") and not isinstance(value, np.ndarray):
        value = value.numpy()
    if isinstance(value, np.ndarray):
        value = value.tolist()
    return value


def _data_format(op, data_format):
    if data_format is None:
        return "NDHWC"
    if data_format not in _FORMATS:
        raise InvalidArgumentError(f"{op}: data_format must be 'NDHWC' or 'NCDHW', got "
                                   f"{data_format!r}")
    return data_format


def _padding(op, padding):
    if not isinstance(padding, str):
        raise TypeError(f"{op}: padding must be 'SAME' or 'VALID', got {padding!r}")
    if padding not in ("SAME", "VALID"):
        raise InvalidArgumentError(f"{op}: padding must be 'SAME' or 'VALID', got {padding!r}")
    return padding


def _spatial(items, data_format):
    return tuple(items[1:4]) if data_format == "NDHWC" else tuple(items[2:5])


def _outer(items, data_format):
    return (items[0], items[4] if data_format == "NDHWC" else items[1])


def _conv_list(op, arg, value, data_format, default=None):
    """A convolution's strides or dilations: TF takes only a list of 5 ints there."""
    if value is None and default is not None:
        return default
    value = _as_list(value)
    if not isinstance(value, (list, tuple)) or not all(_is_int(v) for v in value):
        raise TypeError(f"{op}: {arg} must be a list of 5 ints, got {value!r}")
    if len(value) != 5:
        raise InvalidArgumentError(f"{op}: {arg} must be a list of 5 ints, got {list(value)} of "
                                   f"length {len(value)}")
    items = [int(v) for v in value]
    if _outer(items, data_format) != (1, 1):
        raise InvalidArgumentError(f"{op}: {arg} must be 1 in the batch and channel dimensions "
                                   f"(TF does not support them there), got {items}")
    if min(items) < 1:
        raise InvalidArgumentError(f"{op}: {arg} must be positive, got {items}")
    return _spatial(items, data_format)


def _conv_dilations(op, dilations, data_format):
    """TF's ``conv3d``/``conv3d_transpose`` dilations: None, an int, or a list of 1, 3 or 5
    ints (``_get_sequence``)."""
    if dilations is None:
        return (1, 1, 1)
    value = _as_list(dilations)
    if _is_int(value):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(_is_int(v) for v in value):
        raise TypeError(f"{op}: dilations must be an int or a list of ints, got {dilations!r}")
    if len(value) not in (1, 3, 5):
        raise ValueError(f"{op}: dilations should be of length 1, 3 or 5. Received: "
                         f"dilations={list(value)} of length {len(value)}")
    if len(value) == 1:
        value = [1, value[0], value[0], value[0], 1] if data_format == "NDHWC" \
            else [1, 1, value[0], value[0], value[0]]
    elif len(value) == 3:
        value = [1, *value, 1] if data_format == "NDHWC" else [1, 1, *value]
    return _conv_list(op, "dilations", list(value), data_format)


def _pool_window(op, arg, value, data_format):
    """TF's ``_get_sequence`` for the pools: an int or a list of 1, 3 or 5 ints."""
    value = _as_list(value)
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    if not all(_is_int(v) for v in items):
        raise TypeError(f"{op}: {arg} must be an int or a list of ints, got {value!r}")
    items = [int(v) for v in items]
    if len(items) not in (1, 3, 5):
        raise ValueError(f"{op}: {arg} should be of length 1, 3 or 5. Received: {arg}={items} "
                         f"of length {len(items)}")
    if len(items) == 1:
        items = items * 3
    elif len(items) == 5:
        if _outer(items, data_format) != (1, 1):
            raise UnimplementedError(f"{op}: {arg} must be 1 in the batch and channel "
                                     f"dimensions (pooling is not supported there), got "
                                     f"{items}")
        items = list(_spatial(items, data_format))
    if min(items) < 1:
        raise InvalidArgumentError(f"{op}: {arg} must be positive, got {items}")
    return tuple(items)


# ---- geometry ------------------------------------------------------------------------------
def _out_size(op, n, k, s, d, padding):
    """((before, after), output size) of one spatial dimension, as TF."""
    eff = (k - 1) * d + 1
    if padding == "SAME":
        out = -(-n // s)
        total = max((out - 1) * s + eff - n, 0)
        return (total // 2, total - total // 2), out
    span = n - eff + s
    out = abs(span) // s * (1 if span >= 0 else -1)  # C++ division truncates
    if out < 0:
        raise InvalidArgumentError(f"{op}: Computed output size would be negative: {out} "
                                   f"[input_size: {n}, effective_filter_size: {eff}, "
                                   f"stride: {s}]")
    return (0, 0), out


def _geometry(op, spatial, ksize, strides, dilations, padding):
    pads, outs = [], []
    for n, k, s, d in zip(spatial, ksize, strides, dilations):
        p, o = _out_size(op, n, k, s, d, padding)
        pads.append(p)
        outs.append(o)
    return tuple(pads), tuple(outs)


def _ndhwc(shape, data_format):
    return tuple(shape) if data_format == "NDHWC" else (shape[0], *shape[2:], shape[1])


def _to_last(xp, x, data_format, dtype):
    if data_format == "NCDHW":
        x = xp.transpose(x, (0, 2, 3, 4, 1))
    return xp.ascontiguousarray(x, dtype=dtype)


def _from_last(xp, y, data_format, dtype):
    if data_format == "NCDHW":
        y = xp.transpose(y, (0, 4, 1, 2, 3))
    return xp.ascontiguousarray(y, dtype=dtype)


def _compute(dtype):
    return np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)


def _offsets(ksize, dilations):
    """(window index, start offset per dimension) over the window in row-major order."""
    for i, idx in enumerate(itertools.product(*(range(k) for k in ksize))):
        yield i, tuple(a * d for a, d in zip(idx, dilations))


def _view(a, start, strides, outs):
    """The [N, Do, Ho, Wo, C] strided view of padded ``a`` at window offset ``start``."""
    return a[(slice(None),)
             + tuple(slice(o, o + s * (n - 1) + 1, s) for o, s, n in zip(start, strides, outs))
             + (slice(None),)]


def _pad(xp, x, pads, value=0):
    if not any(p for pair in pads for p in pair):
        return x
    return xp.pad(x, ((0, 0), *pads, (0, 0)), constant_values=value)


def _crop(a, pads, spatial):
    return a[(slice(None),) + tuple(slice(b, b + n) for (b, _), n in zip(pads, spatial))
             + (slice(None),)]


# ---- convolution kernels (NDHWC, compute dtype) ----------------------------------------------
def _conv_fwd(xp, x, w, strides, dilations, pads, outs, groups):
    """y[n, o, k] = sum over the window and the group's channels of x * w."""
    n, c = x.shape[0], x.shape[-1]
    cg, kout = w.shape[3], w.shape[4]
    kg = kout // groups
    xpad = _pad(xp, x, pads)
    y = xp.zeros((n, *outs, kout), x.dtype)
    rows = n * int(np.prod(outs))
    for i, start in _offsets(w.shape[:3], dilations):
        cols = xp.ascontiguousarray(_view(xpad, start, strides, outs)).reshape(rows, c)
        wk = w[np.unravel_index(i, w.shape[:3])]
        y2 = y.reshape(rows, kout)
        for g in range(groups):
            y2[:, g * kg:(g + 1) * kg] += _mm(xp, cols[:, g * cg:(g + 1) * cg],
                                              wk[:, g * kg:(g + 1) * kg])
    return y


def _mm(xp, a, b):
    """a @ b: on the CPU ipu_gpu's GEMM, whose bits do not depend on the thread count."""
    return a @ b if xp is not np else cpu_matmul(a, b)


def _conv_bwd_input(xp, g, w, shape, strides, dilations, pads, groups):
    """The gradient of _conv_fwd with respect to x (of NDHWC ``shape``): the transposed
    convolution of ``g``."""
    n, spatial, c = shape[0], shape[1:4], shape[4]
    cg, kout = w.shape[3], w.shape[4]
    kg = kout // groups
    outs = g.shape[1:4]
    padded = tuple(s + b + a for s, (b, a) in zip(spatial, pads))
    dx = xp.zeros((n, *padded, c), g.dtype)
    rows = n * int(np.prod(outs))
    g2 = g.reshape(rows, kout)
    for i, start in _offsets(w.shape[:3], dilations):
        wk = w[np.unravel_index(i, w.shape[:3])]
        view = _view(dx, start, strides, outs)
        for grp in range(groups):
            part = _mm(xp, g2[:, grp * kg:(grp + 1) * kg], wk[:, grp * kg:(grp + 1) * kg].T)
            view[..., grp * cg:(grp + 1) * cg] += part.reshape(n, *outs, cg)
    return _crop(dx, pads, spatial)


def _conv_bwd_filter(xp, x, g, wshape, strides, dilations, pads, groups):
    """The gradient of _conv_fwd with respect to w (of ``wshape``)."""
    c = x.shape[-1]
    cg, kout = wshape[3], wshape[4]
    kg = kout // groups
    outs = g.shape[1:4]
    xpad = _pad(xp, x, pads)
    rows = x.shape[0] * int(np.prod(outs))
    g2 = g.reshape(rows, kout)
    dw = xp.zeros(wshape, x.dtype)
    for i, start in _offsets(wshape[:3], dilations):
        cols = xp.ascontiguousarray(_view(xpad, start, strides, outs)).reshape(rows, c)
        at = np.unravel_index(i, wshape[:3])
        for grp in range(groups):
            dw[at][:, grp * kg:(grp + 1) * kg] = _mm(xp, cols[:, grp * cg:(grp + 1) * cg].T,
                                                     g2[:, grp * kg:(grp + 1) * kg])
    return dw


# ---- conv3d ------------------------------------------------------------------------------------
def _check_pair(op, names, x, w):
    if x.dtype not in _FLOATS:
        raise TypeError(f"{op}: {names[0]} must be float16, float32 or float64, got {x.dtype}")
    if w.dtype != x.dtype:
        raise TypeError(f"{op}: {names[1]} must have the dtype of {names[0]} ({x.dtype.name}), "
                        f"got {w.dtype.name}")
    if x.ndim != 5:
        raise InvalidArgumentError(f"{op}: {names[0]} must be 5-dimensional, got shape "
                                   f"{list(x.shape)}")
    if w.ndim != 5:
        raise InvalidArgumentError(f"{op}: {names[1]} must be 5-dimensional [depth, height, "
                                   f"width, in_channels, out_channels], got shape "
                                   f"{list(w.shape)}")


def _groups(op, c, wshape):
    cg, kout = wshape[3], wshape[4]
    if cg == 0 or c % cg:
        raise InvalidArgumentError(f"{op}: Input depth must be evenly divisible by filter "
                                   f"depth: {c} vs {cg}")
    groups = c // cg
    if kout % groups:
        raise InvalidArgumentError(f"{op}: filters must have a number of output channels "
                                   f"divisible by the number of groups {groups}, got {kout}")
    return groups


def _check_conv3d(x, w, *, strides, dilations, padding, data_format):
    _check_pair("conv3d", ("input", "filters"), x, w)
    n, *spatial, c = _ndhwc(x.shape, data_format)
    _groups("conv3d", c, w.shape)
    _geometry("conv3d", spatial, w.shape[:3], strides, dilations, padding)


def _conv3d_forward(k, xp, x, w, *, strides, dilations, padding, data_format):
    dt = _compute(x.dtype)
    xl = _to_last(xp, x, data_format, dt)
    pads, outs = _geometry("conv3d", xl.shape[1:4], w.shape[:3], strides, dilations, padding)
    groups = xl.shape[-1] // w.shape[3]
    y = _conv_fwd(xp, xl, w.astype(dt, copy=False), strides, dilations, pads, outs, groups)
    return _from_last(xp, y, data_format, x.dtype), (x, w)


def _conv3d_backward(k, xp, res, g, *, strides, dilations, padding, data_format):
    x, w = res
    dt = _compute(x.dtype)
    xl = _to_last(xp, x, data_format, dt)
    gl = _to_last(xp, g, data_format, dt)
    wc = w.astype(dt, copy=False)
    pads, _ = _geometry("conv3d", xl.shape[1:4], w.shape[:3], strides, dilations, padding)
    groups = xl.shape[-1] // w.shape[3]
    dx = _conv_bwd_input(xp, gl, wc, xl.shape, strides, dilations, pads, groups)
    dw = _conv_bwd_filter(xp, xl, gl, w.shape, strides, dilations, pads, groups)
    return _from_last(xp, dx, data_format, x.dtype), dw.astype(w.dtype)


_CONV3D = register("conv3d", args=("input", "filters"), check=_check_conv3d,
                   forward=_conv3d_forward, backward=_conv3d_backward)


def conv3d(input, filters, strides, padding, data_format="NDHWC", dilations=None, name=None):
    """Computes a 3-D convolution given 5-D ``input`` and ``filters`` tensors
    (``tf.nn.conv3d``).

    Args:
      input: A float16/float32/float64 tensor ``[batch, in_depth, in_height, in_width,
        in_channels]`` (NDHWC) or ``[batch, in_channels, in_depth, in_height, in_width]``
        (NCDHW).
      filters: ``[filter_depth, filter_height, filter_width, in_channels / groups,
        out_channels]`` of the input's dtype; an input depth that is a multiple of the
        filter's in_channels makes a grouped convolution.
      strides: A list of 5 ints, 1 in the batch and channel dimensions.
      padding: ``"SAME"`` or ``"VALID"``.
      data_format: ``"NDHWC"`` (default) or ``"NCDHW"``.
      dilations: None, an int, or a list of 1, 3 or 5 ints (5: 1 in the batch and channel
        dimensions). TF's CPU kernel takes only 1; this op dilates as TF's GPU kernel.
      name: Ignored.

    Returns:
      A tensor of the input's dtype and format; gradients for input and filters.

    Raises:
      TypeError: non-float or mismatched dtypes, non-list strides, a non-string padding.
      ValueError: a dilations list of bad length.
      InvalidArgumentError: a bad padding string or data_format, a tensor that is not 5-D,
        strides or dilations that are not 1 in the batch and channel dimensions, an input
        depth the filter depth does not divide, or a window that does not fit.
    """
    op = "conv3d"
    data_format = _data_format(op, data_format)
    static = dict(strides=_conv_list(op, "strides", strides, data_format),
                  dilations=_conv_dilations(op, dilations, data_format),
                  padding=_padding(op, padding), data_format=data_format)
    return _CONV3D(input, filters, **static)


# ---- conv3d_transpose --------------------------------------------------------------------------
def _check_transpose(y, w, *, output_shape, strides, dilations, padding, data_format):
    op = "conv3d_transpose"
    _check_pair(op, ("input", "filters"), y, w)
    yl = _ndhwc(y.shape, data_format)
    xl = _ndhwc(output_shape, data_format)
    if yl[4] != w.shape[4]:
        raise InvalidArgumentError(f"{op}: out_backprop and filter_sizes must have the same "
                                   f"number of channels. Got {yl[4]} for out_backprop and "
                                   f"{w.shape[4]} for filter_sizes")
    if xl[4] != w.shape[3]:
        raise InvalidArgumentError(f"{op}: input and filter_sizes must have the same number of "
                                   f"channels. Got {xl[4]} for input and {w.shape[3]} for "
                                   f"filter_sizes")
    if xl[0] != yl[0]:
        raise InvalidArgumentError(f"{op}: output_shape must have the batch size of input "
                                   f"({yl[0]}), got {list(output_shape)}")
    _, outs = _geometry(op, xl[1:4], w.shape[:3], strides, dilations, padding)
    for dim, (got, want) in enumerate(zip(yl[1:4], outs)):
        if got != want:
            raise InvalidArgumentError(
                f"{op}: Conv3DBackpropInputOp: Size of out_backprop doesn't match computed: "
                f"actual = {got}, computed = {want} spatial_dim: {dim} input: {xl[1 + dim]} "
                f"filter: {w.shape[dim]} output: {got} stride: {strides[dim]} dilation: "
                f"{dilations[dim]}")


def _transpose_forward(k, xp, y, w, *, output_shape, strides, dilations, padding,
                       data_format):
    dt = _compute(y.dtype)
    yl = _to_last(xp, y, data_format, dt)
    xshape = _ndhwc(output_shape, data_format)
    pads, _ = _geometry("conv3d_transpose", xshape[1:4], w.shape[:3], strides, dilations,
                        padding)
    x = _conv_bwd_input(xp, yl, w.astype(dt, copy=False), xshape, strides, dilations, pads, 1)
    return _from_last(xp, x, data_format, y.dtype), (y, w)


def _transpose_backward(k, xp, res, g, *, output_shape, strides, dilations, padding,
                        data_format):
    y, w = res
    dt = _compute(y.dtype)
    gl = _to_last(xp, g, data_format, dt)
    yl = _to_last(xp, y, data_format, dt)
    pads, outs = _geometry("conv3d_transpose", gl.shape[1:4], w.shape[:3], strides, dilations,
                           padding)
    dy = _conv_fwd(xp, gl, w.astype(dt, copy=False), strides, dilations, pads, outs, 1)
    dw = _conv_bwd_filter(xp, gl, yl, w.shape, strides, dilations, pads, 1)
    return _from_last(xp, dy, data_format, y.dtype), dw.astype(w.dtype)


_CONV3D_TRANSPOSE = register("conv3d_transpose", args=("input", "filters"),
                             check=_check_transpose, forward=_transpose_forward,
                             backward=_transpose_backward)


def conv3d_transpose(input, filters, output_shape, strides, padding="SAME",
                     data_format="NDHWC", dilations=None, name=None):
    """The transpose of ``conv3d`` (``tf.nn.conv3d_transpose``): the gradient of a
    convolution with respect to its input.

    Args:
      input: A 5-D float tensor ``[batch, depth, height, width, in_channels]`` (NDHWC) or
        NCDHW.
      filters: ``[depth, height, width, output_channels, in_channels]`` of the input's dtype.
      output_shape: A 1-D list (or tensor) of 5 ints: the shape of the result, in
        ``data_format``.
      strides: An int or a list of 1, 3 or 5 ints (5: 1 in the batch and channel
        dimensions).
      padding: ``"SAME"`` (default) or ``"VALID"``.
      data_format: ``"NDHWC"`` (default) or ``"NCDHW"``.
      dilations: None, an int, or a list of 1, 3 or 5 ints (dilated as TF's GPU kernel;
        its CPU kernel takes only 1).
      name: Ignored.

    Returns:
      A tensor of ``output_shape`` and the input's dtype; gradients for input and filters.

    Raises:
      TypeError, ValueError: as ``conv3d``; an ``output_shape`` that is not 5 ints.
      InvalidArgumentError: channel counts that do not match the filters, or an
        ``output_shape`` whose convolution would not give the input's spatial size.
    """
    op = "conv3d_transpose"
    data_format = _data_format(op, data_format)
    shape = _as_list(output_shape)
    if not isinstance(shape, (list, tuple)) or not all(_is_int(v) for v in shape):
        raise TypeError(f"{op}: output_shape must be a list of 5 ints, got {output_shape!r}")
    if len(shape) != 5:
        raise ValueError(f"{op}: output_shape must have length 5, got {list(shape)}")
    stride_list = _as_list(strides)
    if _is_int(stride_list) or (isinstance(stride_list, (list, tuple))
                                and len(stride_list) in (1, 3)):
        items = [stride_list] if _is_int(stride_list) else list(stride_list)
        if len(items) == 1:
            items = items * 3
        stride_list = [1, *items, 1] if data_format == "NDHWC" else [1, 1, *items]
    static = dict(output_shape=tuple(int(v) for v in shape),
                  strides=_conv_list(op, "strides", stride_list, data_format),
                  dilations=_conv_dilations(op, dilations, data_format),
                  padding=_padding(op, padding), data_format=data_format)
    return _CONV3D_TRANSPOSE(input, filters, **static)


# ---- pooling -----------------------------------------------------------------------------------
def _check_pool(op):
    def check(x, *, ksize, strides, padding, data_format):
        if x.dtype not in _FLOATS:
            raise TypeError(f"{op}: input must be float16, float32 or float64, got {x.dtype}")
        if x.ndim != 5:
            raise InvalidArgumentError(f"{op}: input must be 5-dimensional, got shape "
                                       f"{list(x.shape)}")
        _geometry(op, _ndhwc(x.shape, data_format)[1:4], ksize, strides, (1, 1, 1), padding)
    return check


def _max_forward(k, xp, x, *, ksize, strides, padding, data_format):
    dt = _compute(x.dtype)
    xl = _to_last(xp, x, data_format, dt)
    pads, outs = _geometry("max_pool3d", xl.shape[1:4], ksize, strides, (1, 1, 1), padding)
    xpad = _pad(xp, xl, pads, -np.inf)
    y = xp.full((xl.shape[0], *outs, xl.shape[4]), -np.inf, dt)
    for _, start in _offsets(ksize, (1, 1, 1)):
        v = _view(xpad, start, strides, outs)
        y = xp.where(v > y, v, y)  # NaN never wins
    return _from_last(xp, y, data_format, x.dtype), (xl, y)


def _max_backward(k, xp, res, g, *, ksize, strides, padding, data_format):
    xl, y = res
    shape = xl.shape
    gl = _to_last(xp, g, data_format, y.dtype)
    pads, outs = _geometry("max_pool3d", shape[1:4], ksize, strides, (1, 1, 1), padding)
    xpad = _pad(xp, xl, pads, -np.inf)
    dx = xp.zeros(xpad.shape, y.dtype)
    with np.errstate(invalid="ignore"):  # -inf - -inf: NaN, so no gradient (as TF)
        for _, start in _offsets(ksize, (1, 1, 1)):
            # as TF's CPU MaxPool3DGrad: every element within 1e-5 of its window's maximum
            near = xp.abs(_view(xpad, start, strides, outs) - y) < _TIE
            _view(dx, start, strides, outs)[...] += xp.where(near, gl, 0)
    return (_from_last(xp, _crop(dx, pads, shape[1:4]), data_format, g.dtype),)


def _counts(xp, spatial, ksize, strides, pads, outs, dt):
    """How many in-bounds elements each output window of an average pool covers."""
    per_dim = []
    for n, k, s, (before, _), o in zip(spatial, ksize, strides, pads, outs):
        start = np.arange(o) * s - before
        per_dim.append(np.minimum(start + k, n) - np.maximum(start, 0))
    c = per_dim[0][:, None, None] * per_dim[1][None, :, None] * per_dim[2][None, None, :]
    return xp.asarray(c[None, ..., None].astype(dt))


def _avg_forward(k, xp, x, *, ksize, strides, padding, data_format):
    dt = _compute(x.dtype)
    xl = _to_last(xp, x, data_format, dt)
    pads, outs = _geometry("avg_pool3d", xl.shape[1:4], ksize, strides, (1, 1, 1), padding)
    xpad = _pad(xp, xl, pads)
    y = xp.zeros((xl.shape[0], *outs, xl.shape[4]), dt)
    for _, start in _offsets(ksize, (1, 1, 1)):
        y += _view(xpad, start, strides, outs)
    y /= _counts(xp, xl.shape[1:4], ksize, strides, pads, outs, dt)
    return _from_last(xp, y, data_format, x.dtype), (xl.shape, x.dtype)


def _avg_backward(k, xp, res, g, *, ksize, strides, padding, data_format):
    shape, dtype = res
    dt = _compute(dtype)
    gl = _to_last(xp, g, data_format, dt)
    pads, outs = _geometry("avg_pool3d", shape[1:4], ksize, strides, (1, 1, 1), padding)
    gl = gl / _counts(xp, shape[1:4], ksize, strides, pads, outs, dt)
    padded = tuple(s + b + a for s, (b, a) in zip(shape[1:4], pads))
    dx = xp.zeros((shape[0], *padded, shape[4]), dt)
    for _, start in _offsets(ksize, (1, 1, 1)):
        _view(dx, start, strides, outs)[...] += gl
    return (_from_last(xp, _crop(dx, pads, shape[1:4]), data_format, dtype),)


_MAX_POOL3D = register("max_pool3d", args=("input",), check=_check_pool("max_pool3d"),
                       forward=_max_forward, backward=_max_backward)
_AVG_POOL3D = register("avg_pool3d", args=("input",), check=_check_pool("avg_pool3d"),
                       forward=_avg_forward, backward=_avg_backward)


def _pool_static(op, ksize, strides, padding, data_format):
    data_format = _data_format(op, data_format)
    return dict(ksize=_pool_window(op, "ksize", ksize, data_format),
                strides=_pool_window(op, "strides", strides, data_format),
                padding=_padding(op, padding), data_format=data_format)


def max_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):
    """Performs the max pooling on the input (``tf.nn.max_pool3d``).

    Args:
      input: A 5-D float16/float32/float64 tensor in ``data_format``.
      ksize: An int or a list of 1, 3 or 5 ints: the window (5: 1 in the batch and channel
        dimensions).
      strides: An int or a list of 1, 3 or 5 ints: the stride of the window.
      padding: ``"SAME"`` or ``"VALID"``.
      data_format: ``"NDHWC"`` (default) or ``"NCDHW"`` (TF's CPU kernel refuses NCDHW;
        this op pools it as TF's GPU kernel).
      name: Ignored.

    Returns:
      The max-pooled tensor of the input's dtype and format, as TF's CPU kernel: padding
      never wins, NaN is skipped, a window of -inf gives -inf (and no gradient), and the
      gradient goes to every element within 1e-5 of its window's maximum (each of them
      gets all of it: TF's CPU MaxPool3DGrad).

    Raises:
      TypeError: a non-float input, non-int windows or a non-string padding.
      ValueError: window lists of bad length.
      InvalidArgumentError: a bad padding string or data_format, a non-5-D input, a
        non-positive window, or a window that does not fit.
      UnimplementedError: a window or stride over the batch or channels.
    """
    return _MAX_POOL3D(input, **_pool_static("max_pool3d", ksize, strides, padding,
                                             data_format))


def avg_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):
    """Performs the average pooling on the input (``tf.nn.avg_pool3d``): each output is the
    mean of its window's in-bounds elements (SAME padding is not counted).

    Args, Returns and Raises as ``max_pool3d`` (float16 is summed in float32).
    """
    return _AVG_POOL3D(input, **_pool_static("avg_pool3d", ksize, strides, padding,
                                             data_format))


__all__ = ["avg_pool3d", "conv3d", "conv3d_transpose", "max_pool3d"]
