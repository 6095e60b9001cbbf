"""Argument normalisation and output-length arithmetic shared by the convolution, pooling
and reshaping layers (``tf_keras/src/utils/conv_utils.py``)."""

from __future__ import annotations

from .. import backend


def normalize_tuple(value, n: int, name: str, allow_zero: bool = False) -> tuple:
    """``value`` (an int or n ints) as a tuple of n positive ints (ValueError otherwise)."""
    error_msg = f"The `{name}` argument must be a tuple of {n} integers. Received: {value}"
    if isinstance(value, int):
        value_tuple = (value,) * n
    else:
        try:
            value_tuple = tuple(value)
        except TypeError:
            raise ValueError(error_msg) from None
        if len(value_tuple) != n:
            raise ValueError(error_msg)
        for single in value_tuple:
            try:
                int(single)
            except (ValueError, TypeError):
                raise ValueError(f"{error_msg}including element {single} of type "
                                 f"{type(single)}") from None
        value_tuple = tuple(int(v) for v in value_tuple)
    if allow_zero:
        bad, req = {v for v in value_tuple if v < 0}, ">= 0"
    else:
        bad, req = {v for v in value_tuple if v <= 0}, "> 0"
    if bad:
        raise ValueError(f"{error_msg} including {bad} that does not satisfy the requirement "
                         f"`{req}`.")
    return value_tuple


def normalize_padding(value):
    if isinstance(value, (list, tuple)):
        return value
    padding = value.lower()
    if padding not in {"valid", "same", "causal"}:
        raise ValueError('The `padding` argument must be a list/tuple or one of "valid", '
                         f'"same" (or "causal", only for `Conv1D). Received: {padding}')
    return padding


def normalize_data_format(value) -> str:
    return backend.normalize_data_format(value)


def conv_output_length(input_length, filter_size, padding, stride, dilation=1):
    """The output length of a convolution or pooling along one dimension (None stays None)."""
    if input_length is None:
        return None
    dilated = filter_size + (filter_size - 1) * (dilation - 1)
    if padding in ("same", "causal"):
        length = input_length
    elif padding == "valid":
        length = input_length - dilated + 1
    else:  # full
        length = input_length + dilated - 1
    return (length + stride - 1) // stride


def deconv_output_length(input_length, filter_size, padding, output_padding=None, stride=0,
                         dilation=1):
    """The output length of a transposed convolution along one dimension."""
    if input_length is None:
        return None
    filter_size = filter_size + (filter_size - 1) * (dilation - 1)
    if output_padding is None:
        if padding == "valid":
            return input_length * stride + max(filter_size - stride, 0)
        if padding == "full":
            return input_length * stride - (stride + filter_size - 2)
        return input_length * stride
    pad = {"same": filter_size // 2, "valid": 0, "full": filter_size - 1}[padding]
    return (input_length - 1) * stride + filter_size - 2 * pad + output_padding


def tf_data_format(data_format: str, ndim: int) -> str:
    """``channels_last`` -> ``NWC``/``NHWC``; ``channels_first`` -> ``NCW``/``NCHW``."""
    spatial = {3: "W", 4: "HW", 5: "DHW"}[ndim]
    return f"N{spatial}C" if data_format == "channels_last" else f"NC{spatial}"
