"""``tensorflow.python.ipu.image_ops`` (also ``ipu.ops.image_ops``): the PopLibs image
normalisation that pads RGB images to 4 channels.

Deliberate difference: Graphcore registers no gradient for it (an input-pipeline op); here a
float image gets the gradient of the arithmetic."""

from __future__ import annotations

from ipu_gpu.core import dtypes
from ipu_gpu.core.convert import convert_to_tensor
from ipu_gpu.core.registry import symbolic_call
from ipu_gpu.core.tensor import Tensor
from ipu_gpu.ops import math as math_ops
from ipu_gpu.ops.array import pad

__all__ = ["normalise_image"]

_CHANNELS = 3


def _per_channel(arg: str, value, dtype):
    t = math_ops.cast(value, dtype) if isinstance(value, Tensor) else convert_to_tensor(
        value, dtype=dtype)
    if tuple(t.shape) != (_CHANNELS,):
        size = t.shape[0] if len(t.shape) == 1 else list(t.shape)
        raise ValueError(f"{arg} must be the same size as the number of image channels "
                         f"{_CHANNELS}, but was {size}.")
    return t


def normalise_image(image, channel_offsets, channel_scales, scale=1, name=None):
    """Pad ``image`` ([..., 3], channels innermost) to 4 channels and normalise it:
    ``out[..., c] = (image[..., c] * scale - channel_offsets[c]) * channel_scales[c]`` for
    the 3 channels, each step rounded to the output dtype; ``out[..., 3] = 0``.

    Args:
      image: a uint8, float16 or float32 tensor [..., 3].
      channel_offsets: a [3] array or tensor of offsets.
      channel_scales: a [3] array or tensor of scales.
      scale: a scalar constant applied to the image first (default 1).
      name: optional op name.

    Returns:
      A [..., 4] tensor of ``image``'s dtype, float16 for uint8 images.

    Raises:
      TypeError: an image of another dtype (Graphcore's message).
      ValueError: an image whose innermost dimension is not 3; offsets or scales that do
        not hold 3 values.
    """
    node = symbolic_call(normalise_image, (image, channel_offsets, channel_scales),
                         dict(scale=scale, name=name))
    if node is not NotImplemented:
        return node
    image = convert_to_tensor(image)
    if image.dtype not in (dtypes.float16, dtypes.float32, dtypes.uint8):
        raise TypeError("The input `image` to `normalise_image` must be either float16, "
                        "float32 or uint8.")
    out_dtype = dtypes.float16 if image.dtype == dtypes.uint8 else image.dtype
    if len(image.shape) == 0 or image.shape[-1] != _CHANNELS:
        channels = image.shape[-1] if len(image.shape) else 0
        raise ValueError(f"The image has {channels} channels, expected {_CHANNELS}.")
    offsets = _per_channel("channel_offsets", channel_offsets, out_dtype)
    scales = _per_channel("channel_scales", channel_scales, out_dtype)
    x = math_ops.cast(image, out_dtype) if image.dtype != out_dtype else image
    x = math_ops.multiply(x, convert_to_tensor(scale, dtype=out_dtype))
    x = math_ops.multiply(math_ops.subtract(x, offsets), scales)
    return pad(x, [[0, 0]] * (len(image.shape) - 1) + [[0, 1]])
