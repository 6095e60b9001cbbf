"""2-D pooling (``tf.nn.max_pool2d``, ``tf.nn.avg_pool2d``) with TensorFlow 2's semantics
and argument checking.

Output sizes and padding are TF's (``GetWindowedOutputSize``): VALID gives
``(in - k + s) / s`` (truncated), SAME gives ``ceil(in / s)`` with the padding split
``before = total // 2``, explicit padding (max_pool2d only) ``(in + before + after - k + s)
/ s``. Padding is never read: a max window skips it and an average window divides by its
in-bounds count. As TF's CPU kernels, a max window starts from the dtype's lowest finite
value and takes an element only when it is strictly greater (NaN is skipped; an all -inf
window gives the lowest finite value), and its gradient goes to the first maximum in
row-major window order.

A window across channels (4-element ``ksize``/``strides`` with a depth entry k != 1) is TF's
CPU depthwise max pooling: only for max pooling of NHWC tensors, with no spatial window, k
dividing the channels and equal to the depth stride (TF's UnimplementedError otherwise); the
spatial strides are ignored and padding plays no part; each run of k channels becomes its
maximum (C/k channels out). TF has no gradient for it (MaxPoolingGrad raises
UnimplementedError), and neither do we. A depth stride next to a spatial window is ignored,
as TF's kernels do.

The kernels take [B, H, W, C] arrays: NHWC tensors with many channels as they are (the
loops run across channels), NCHW tensors as [N*C, H, W, 1] planes (a reshape; the kernels
have a planar loop nest), and NHWC tensors with few channels transposed to one of those
(see _kernel_layout). float16 is computed in float32.
"""

from __future__ import annotations

import numpy as np

from ..core import dtypes, tape
from ..core.registry import register
from ..errors import UnimplementedError

_FLOATS = (dtypes.float16, dtypes.float32, dtypes.float64)
_FORMATS = ("NHWC", "NCHW")
# The channel loops of the kernels vectorise from this many channels (one AVX-512 vector of
# float32); narrower NHWC tensors are transposed (see _kernel_layout): a short channel loop
# costs more than the two transposes.
WIDE_CHANNELS = 16


# ---- static arguments ------------------------------------------------------------------------
def _ints(op, arg, value, expected="an int or a list of 1, 2 or 4 ints"):
    """``value`` (an int, or a list/tuple/array/Tensor of ints) as a list of Python ints."""
    if hasattr(value, "numpy") and not isinstance(value, np.ndarray):
        value = value.numpy()
    if isinstance(value, np.ndarray):
        value = value.tolist()
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    for v in items:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{op}: {arg} must be {expected}, got {value!r}")
    return [int(v) for v in items]


def _window(op, arg, value, data_format):
    """TF's ``_get_sequence`` for two spatial dimensions: (height, width, depth), depth the
    channel entry of a 4-element value (1 otherwise)."""
    items = _ints(op, arg, value)
    if len(items) not in (1, 2, 4):
        raise ValueError(f"{op}: {arg} must have length 1, 2 or 4, got {items} of length "
                         f"{len(items)}")
    if min(items) <= 0:
        raise ValueError(f"{op}: {arg} must be positive, got {items}")
    if len(items) == 1:
        return items[0], items[0], 1
    if len(items) == 2:
        return items[0], items[1], 1
    c_axis = 3 if data_format == "NHWC" else 1
    h_axis = 1 if data_format == "NHWC" else 2
    if items[0] != 1:
        raise ValueError(f"{op}: {arg} must be 1 in the batch dimension (pooling is not "
                         f"supported on the batch dimension), got {items}")
    return items[h_axis], items[h_axis + 1], items[c_axis]


def _data_format(op, data_format):
    if data_format is None:
        return "NHWC"
    if data_format not in _FORMATS:
        raise ValueError(f"{op}: data_format must be 'NHWC' or 'NCHW', got {data_format!r}")
    return data_format


def _padding(op, padding, data_format, explicit):
    """'SAME', 'VALID', or (max_pool2d) explicit ((top, bottom), (left, right))."""
    choices = "'SAME', 'VALID' or a list of 4 [before, after] pairs" if explicit \
        else "'SAME' or 'VALID'"
    if isinstance(padding, str):
        if padding in ("SAME", "VALID"):
            return padding
        raise ValueError(f"{op}: padding must be {choices}, got {padding!r}")
    if not explicit or not isinstance(padding, (list, tuple, np.ndarray)):
        raise TypeError(f"{op}: padding must be {choices}, got {padding!r}")
    pairs = []
    for pair in padding:
        if not isinstance(pair, (list, tuple, np.ndarray)) or len(pair) != 2:
            raise ValueError(f"{op}: padding must be {choices}, got {padding!r}")
        pairs.append(_ints(op, "padding", list(pair), "a list of [before, after] int pairs"))
    if len(pairs) != 4:
        raise ValueError(f"{op}: padding must be {choices}, got {len(pairs)} pairs")
    if min(min(p) for p in pairs) < 0:
        raise ValueError(f"{op}: padding must be non-negative, got {pairs}")
    c_axis, h_axis = (3, 1) if data_format == "NHWC" else (1, 2)
    if pairs[0] != [0, 0] or pairs[c_axis] != [0, 0]:
        raise ValueError(f"{op}: padding must be 0 in the batch and channel dimensions, got "
                         f"{pairs}")
    return tuple(pairs[h_axis]), tuple(pairs[h_axis + 1])


def _static(op, ksize, strides, padding, data_format, explicit):
    data_format = _data_format(op, data_format)
    kh, kw, kd = _window(op, "ksize", ksize, data_format)
    sh, sw, sd = _window(op, "strides", strides, data_format)
    if kd != 1 and (kh, kw) != (1, 1):
        raise UnimplementedError(f"{op}: MaxPooling supports exactly one of pooling across "
                                 f"depth or pooling across width/height.")
    padding = _padding(op, padding, data_format, explicit)
    ksize = (kh, kw)
    if not isinstance(padding, str):
        for side, pad, k in (("top", padding[0][0], ksize[0]), ("bottom", padding[0][1], ksize[0]),
                             ("left", padding[1][0], ksize[1]),
                             ("right", padding[1][1], ksize[1])):
            if pad >= k:
                raise ValueError(f"{op}: padding must be smaller than the window size, got "
                                 f"{side} padding {pad} for window size {k}")
    # TF's kernels ignore the depth stride of a spatial window and the spatial strides of a
    # depth window
    depth = (1, 1) if kd == 1 else (kd, sd)
    strides = (sh, sw) if kd == 1 else (1, 1)
    return dict(ksize=ksize, strides=strides, padding=padding, data_format=data_format,
                depth=depth)


def _check_depth(op, c, depth, padding, data_format):
    """TF's conditions on a window across channels (PoolParameters, then the op's own), in
    TF's order; all raise UnimplementedError."""
    window, stride = depth
    if c % window:
        raise UnimplementedError(f"{op}: Depthwise max pooling requires the depth window to "
                                 f"evenly divide the input depth")
    if stride != window:
        raise UnimplementedError(f"{op}: Depthwise max pooling requires the depth window to "
                                 f"equal the depth stride")
    if op == "avg_pool2d":
        raise UnimplementedError(f"{op}: Non-spatial pooling is not yet supported. "
                                 f"Volunteers? :)")
    if data_format != "NHWC":  # TF's NCHW kernels are its GPU kernels
        raise UnimplementedError(f"{op}: Depthwise max pooling is currently only implemented "
                                 f"for CPU devices.")
    if not isinstance(padding, str):
        raise UnimplementedError(f"{op}: Depthwise max pooling does not support explicit "
                                 f"padding.")


# ---- geometry ------------------------------------------------------------------------------
def _output_size(op, n, k, s, padding):
    """TF's GetWindowedOutputSize: (output size, padding before) for one dimension."""
    if padding == "VALID":
        span, before = n - k + s, 0
    elif padding == "SAME":
        out = (n + s - 1) // s
        return out, max(0, (out - 1) * s + k - n) // 2
    else:
        before, after = padding
        span = n + before + after - k + s
    out = abs(span) // s * (1 if span >= 0 else -1)  # C++ division truncates
    if out < 0:
        raise ValueError(f"{op}: ksize must fit in the padded input, got window {k} over input "
                         f"size {n} (padding {padding}, stride {s}): the output size would be "
                         f"{out}")
    return out, before


def _geometry(op, shape, ksize, strides, padding, data_format):
    """(n, h, w, c, oh, ow, pad_top, pad_left) of an input of ``shape``."""
    if data_format == "NHWC":
        n, h, w, c = shape
    else:
        n, c, h, w = shape
    pad_h = padding if isinstance(padding, str) else padding[0]
    pad_w = padding if isinstance(padding, str) else padding[1]
    oh, pt = _output_size(op, h, ksize[0], strides[0], pad_h)
    ow, pl = _output_size(op, w, ksize[1], strides[1], pad_w)
    return n, h, w, c, oh, ow, pt, pl


def _kernel_layout(data_format, n, c):
    """How the kernels see the tensor: "direct" ([N, H, W, C] as it is), "channels" (the
    batch folded into the channels, [1, H, W, N*C]) or "planar" ([N*C, H, W, 1])."""
    if data_format == "NCHW":
        return "planar"  # a reshape, no copy
    if c >= WIDE_CHANNELS:
        return "direct"
    return "channels" if n * c >= WIDE_CHANNELS else "planar"


def _to_kernel(xp, a, data_format, n, c, dtype):
    """``a`` (NHWC or NCHW) as the C-contiguous 4-D array of ``dtype`` the kernels take."""
    layout = _kernel_layout(data_format, n, c)
    if layout == "direct":
        return xp.ascontiguousarray(a, dtype=dtype)
    if layout == "channels":
        order = (1, 2, 0, 3) if data_format == "NHWC" else (2, 3, 0, 1)  # to [H, W, N, C]
        t = xp.ascontiguousarray(a.transpose(order), dtype=dtype)
        return t.reshape(1, t.shape[0], t.shape[1], n * c)
    if data_format == "NHWC":
        a = a.transpose(0, 3, 1, 2)
    t = xp.ascontiguousarray(a, dtype=dtype)
    return t.reshape(n * c, t.shape[2], t.shape[3], 1)


def _kernel_shape(data_format, n, h, w, c):
    layout = _kernel_layout(data_format, n, c)
    return {"direct": (n, h, w, c), "channels": (1, h, w, n * c),
            "planar": (n * c, h, w, 1)}[layout]


def _from_kernel(xp, a, data_format, n, c, dtype):
    """The inverse of _to_kernel for a kernel result [B, H', W', C']."""
    layout = _kernel_layout(data_format, n, c)
    if layout == "channels":
        a = a.reshape(a.shape[1], a.shape[2], n, c)
        a = a.transpose((2, 0, 1, 3) if data_format == "NHWC" else (2, 3, 0, 1))
    elif layout == "planar":
        a = a.reshape(n, c, a.shape[1], a.shape[2])
        if data_format == "NHWC":
            a = a.transpose(0, 2, 3, 1)
    return xp.ascontiguousarray(a, dtype=dtype)


def _compute_dtype(dtype):
    return dtypes.float32 if dtype == dtypes.float16 else dtype


# ---- the ops -------------------------------------------------------------------------------
def _check(op):
    def check(x, *, ksize, strides, padding, data_format, depth):
        if x.dtype not in _FLOATS:
            raise TypeError(f"{op}: input must be float16, float32 or float64, got {x.dtype}")
        if x.ndim != 4:
            layout = "[batch, height, width, channels]" if data_format == "NHWC" \
                else "[batch, channels, height, width]"
            raise ValueError(f"{op}: input must be 4-dimensional {layout}, got shape "
                             f"{list(x.shape)}")
        _, h, w, c, _, _, _, _ = _geometry(op, x.shape, ksize, strides, padding, data_format)
        if depth != (1, 1):
            _check_depth(op, c, depth, padding, data_format)
        if op == "max_pool2d" and h * w > np.iinfo(np.int32).max:
            raise ValueError(f"{op}: input must have fewer than 2**31 elements per channel "
                             f"plane, got {h} x {w}")
    return check


def _depth_max_forward(k, xp, x, window):
    """TF's CPU depthwise max pooling: each run of ``window`` channels reduced to its maximum,
    the running value starting at the run's first element and taking an element only when it
    is strictly greater (a NaN that opens a run stays; a later NaN is skipped). One pass of
    the CPU kernel for float32/float64 on the CPU, else array operations."""
    if xp is np and x.dtype in (np.float32, np.float64):
        out = np.empty(x.shape[:3] + (x.shape[3] // window,), x.dtype)
        return k.max_pool_depth_fwd(np.ascontiguousarray(x), out, window)
    runs = x.reshape(x.shape[:3] + (x.shape[3] // window, window))
    out = xp.ascontiguousarray(runs[..., 0])
    for i in range(1, window):
        v = runs[..., i]
        xp.copyto(out, v, where=v > out)
    return out


def _max_forward(k, xp, x, *, ksize, strides, padding, data_format, depth):
    if depth[0] != 1:
        return _depth_max_forward(k, xp, x, depth[0]), None
    n, h, w, c, oh, ow, pt, pl = _geometry("max_pool2d", x.shape, ksize, strides, padding,
                                           data_format)
    dt = _compute_dtype(x.dtype)
    x4 = _to_kernel(xp, x, data_format, n, c, dt)
    out4 = xp.empty((x4.shape[0], oh, ow, x4.shape[3]), dt)
    # the argmax is recorded only when a tape could ask for the gradient
    arg = xp.empty(out4.shape, np.int32) if tape.recording_tapes() else None
    floor = dt.type(np.finfo(x.dtype).min)  # the lowest finite value of the input's dtype
    k.max_pool_fwd(x4, out4, arg, ksize[0], ksize[1], strides[0], strides[1], pt, pl, floor)
    return _from_kernel(xp, out4, data_format, n, c, x.dtype), (arg, x.shape, x.dtype)


def _max_backward(k, xp, res, g, *, ksize, strides, padding, data_format, depth):
    if depth[0] != 1:
        raise UnimplementedError("max_pool2d: MaxPoolingGrad is not yet supported on the depth "
                                 "dimension.")
    arg, shape, dtype = res
    n, h, w, c, oh, ow, pt, pl = _geometry("max_pool2d", shape, ksize, strides, padding,
                                           data_format)
    dt = _compute_dtype(dtype)
    dx4 = xp.empty(_kernel_shape(data_format, n, h, w, c), dt)
    k.max_pool_bwd(_to_kernel(xp, g, data_format, n, c, dt), arg, dx4, ksize[0], ksize[1],
                   strides[0], strides[1], pt, pl)
    return (_from_kernel(xp, dx4, data_format, n, c, dtype),)


def _avg_forward(k, xp, x, *, ksize, strides, padding, data_format, depth):
    n, h, w, c, oh, ow, pt, pl = _geometry("avg_pool2d", x.shape, ksize, strides, padding,
                                           data_format)
    dt = _compute_dtype(x.dtype)
    x4 = _to_kernel(xp, x, data_format, n, c, dt)
    out4 = xp.empty((x4.shape[0], oh, ow, x4.shape[3]), dt)
    k.avg_pool_fwd(x4, out4, ksize[0], ksize[1], strides[0], strides[1], pt, pl)
    return _from_kernel(xp, out4, data_format, n, c, x.dtype), (x.shape, x.dtype)


def _avg_backward(k, xp, res, g, *, ksize, strides, padding, data_format, depth):
    shape, dtype = res
    n, h, w, c, oh, ow, pt, pl = _geometry("avg_pool2d", shape, ksize, strides, padding,
                                           data_format)
    dt = _compute_dtype(dtype)
    dx4 = xp.empty(_kernel_shape(data_format, n, h, w, c), dt)
    k.avg_pool_bwd(_to_kernel(xp, g, data_format, n, c, dt), dx4, ksize[0], ksize[1],
                   strides[0], strides[1], pt, pl)
    return (_from_kernel(xp, dx4, data_format, n, c, dtype),)


_MAX_POOL2D = register("max_pool2d", args=("input",), check=_check("max_pool2d"),
                       forward=_max_forward, backward=_max_backward, family="pooling")
_AVG_POOL2D = register("avg_pool2d", args=("input",), check=_check("avg_pool2d"),
                       forward=_avg_forward, backward=_avg_backward, family="pooling")


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):
    """Performs max pooling on 2D spatial data such as images (``tf.nn.max_pool2d``).

    Args:
      input: A 4-D float16/float32/float64 tensor of the format given by ``data_format``.
      ksize: An int or list of ints of length 1, 2 or 4: the window size (1 or 2 values
        give the height and width; 4 values must be 1 in the batch dimension, and a channel
        entry k != 1 pools across channels (TF's depthwise max pooling: NHWC only, height
        and width windows 1, k dividing the channels).
      strides: An int or list of ints of length 1, 2 or 4: the stride of the window (with a
        channel window, its channel entry must equal k; the spatial entries are ignored).
      padding: ``"SAME"``, ``"VALID"``, or explicit padding: a list of 4 ``[before,
        after]`` pairs in the layout of ``data_format``, 0 in the batch and channel
        dimensions, each smaller than the window.
      data_format: ``"NHWC"`` (default) or ``"NCHW"``.
      name: Ignored.

    Returns:
      The max-pooled tensor, of the input's dtype and format. Padding never wins: a window
      starts from the dtype's lowest finite value and NaN is skipped, as TF's CPU kernel.
      Pooling across channels gives C/k channels; a run starts from its first channel (so a
      leading NaN stays), as TF's depthwise kernel.

    The gradient goes to the first maximum of each window in row-major order, as TF's CPU
    kernel (where TF's CPU kernel sends it to a NaN that opens a window, we send it to the
    maximum the forward returned).

    Raises:
      ValueError: bad lengths or values of ``ksize``/``strides``/``padding``, an unknown
        ``data_format``, an input that is not 4-D, or a window that does not fit.
      TypeError: a non-float input, or non-int window arguments.
      UnimplementedError: a channel window with a spatial window, one that does not divide
        the channels or differs from its stride, with explicit padding or NCHW (TF's
        messages); and the gradient of pooling across channels.
    """
    static = _static("max_pool2d", ksize, strides, padding, data_format, explicit=True)
    return _MAX_POOL2D(input, **static)


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):
    """Performs the average pooling on the input (``tf.nn.avg_pool2d``).

    Each entry of the output is the mean of the corresponding ``ksize`` window of
    ``input``; with ``"SAME"`` padding a window at the border is averaged over its
    in-bounds elements only (the padding is not counted), as TF.

    Args:
      input: A 4-D float16/float32/float64 tensor of the format given by ``data_format``.
      ksize: An int or list of ints of length 1, 2 or 4: the window size.
      strides: An int or list of ints of length 1, 2 or 4: the stride of the window.
      padding: ``"SAME"`` or ``"VALID"`` (TF's avg_pool2d takes no explicit padding).
      data_format: ``"NHWC"`` (default) or ``"NCHW"``.
      name: Ignored.

    Returns:
      The average-pooled tensor, of the input's dtype and format (float16 is summed in
      float32).

    Raises:
      ValueError: bad lengths or values of ``ksize``/``strides``/``padding``, an unknown
        ``data_format``, an input that is not 4-D, or a window that does not fit.
      TypeError: a non-float input, non-int window arguments, or a non-string padding.
      UnimplementedError: a window across channels (TF: "Non-spatial pooling is not yet
        supported", after its depthwise checks).
    """
    static = _static("avg_pool2d", ksize, strides, padding, data_format, explicit=False)
    return _AVG_POOL2D(input, **static)
