"""``tf.io.decode_jpeg`` / ``tf.image.decode_jpeg``, ``decode_and_crop_jpeg`` and
``extract_jpeg_shape``: JPEG bytes (a scalar string Tensor) to a uint8 ``[height, width,
channels]`` image, decoded by libjpeg(-turbo) through Pillow (the ``image`` extra), with TF's
defaults: accurate integer IDCT, fancy upsampling, ``ratio`` as libjpeg's DCT scaling.

Differences from TF's kernel: Pillow always decodes with libjpeg's accurate integer IDCT, so
TF's default ``dct_method`` (``""``, libjpeg's fast IDCT, as ``"INTEGER_FAST"``) decodes as
``"INTEGER_ACCURATE"``: equal to TF's bytes with ``dct_method="INTEGER_ACCURATE"``, a few
levels (up to 5 seen) from TF's default. ``fancy_upscaling=False`` is a hint Pillow cannot
pass to libjpeg (decoded with fancy upsampling); ``try_recover_truncated`` and
``acceptable_fraction`` keep Pillow's strict decoding (a truncated file is an error). Errors
are those of Graphcore's TF 1.15/2.6 kernels. Host-side and eager (``Dataset.map`` calls its
function eagerly).
"""

from __future__ import annotations

import io

import numpy as np

from ..core.spec import spec_dtype, string
from ..core.tensor import Tensor, wrap
from ..errors import InvalidArgumentError

__all__ = ["decode_and_crop_jpeg", "decode_jpeg", "extract_jpeg_shape"]

_DCT_METHODS = ("", "INTEGER_FAST", "INTEGER_ACCURATE")


def _contents(contents, op: str) -> bytes:
    value = contents._value if isinstance(contents, Tensor) else contents
    if isinstance(value, str):
        value = value.encode()
    a = np.asarray(value, dtype=object)
    if a.ndim != 0:
        raise InvalidArgumentError(f"contents must be scalar, got shape {list(a.shape)}")
    item = a.item()
    if isinstance(contents, Tensor) and contents.dtype != string:
        raise TypeError(f"{op}: contents must be a string Tensor, got {contents.dtype}")
    if not isinstance(item, (bytes, bytearray, str)):
        raise TypeError(f"{op}: contents must be a string, got {type(item).__name__}")
    return item.encode() if isinstance(item, str) else bytes(item)


def _open(data: bytes):
    try:
        from PIL import Image
    except ImportError as e:  # the documented optional dependency
        raise ImportError("decoding JPEG needs Pillow: pip install 'ipu-gpu[image]'") from e
    try:
        image = Image.open(io.BytesIO(data), formats=["JPEG"])
    except Exception:
        image = None
    if image is None:
        raise InvalidArgumentError(f"Invalid JPEG data or crop window, data size {len(data)}")
    return image


def _check_args(channels, ratio, dct_method) -> None:
    if channels not in (0, 1, 3):
        raise InvalidArgumentError(f"channels must be 0, 1, or 3, got {channels}")
    if ratio not in (1, 2, 4, 8):
        raise InvalidArgumentError(f"ratio must be 1, 2, 4, or 8, got {ratio}")
    if dct_method not in _DCT_METHODS:
        raise InvalidArgumentError("dct_method must be one of {'', 'INTEGER_FAST', "
                                   f"'INTEGER_ACCURATE'}}, got {dct_method!r}")


def _decode(data: bytes, channels: int, ratio: int) -> np.ndarray:
    image = _open(data)
    components = len(image.getbands())
    mode = {1: "L", 3: "RGB"}.get(channels or min(components, 3), image.mode)
    w, h = image.size  # libjpeg converts the colours and scales (ceil(size / ratio)) itself
    image.draft(mode, (max(1, w // ratio), max(1, h // ratio)))
    try:
        image.load()
    except Exception as e:
        raise InvalidArgumentError(f"Invalid JPEG data or crop window, data size {len(data)}"
                                   ) from e
    if image.mode != mode:
        image = image.convert(mode)
    a = np.asarray(image, dtype=np.uint8)
    return a[:, :, None] if a.ndim == 2 else a


def decode_jpeg(contents, channels=0, ratio=1, fancy_upscaling=True,
                try_recover_truncated=False, acceptable_fraction=1, dct_method="", name=None):
    """A uint8 ``[height, width, channels]`` Tensor of the JPEG ``contents``; ``channels`` 0
    keeps the file's (1 or 3), 1 gives grayscale, 3 RGB; ``ratio`` (1, 2, 4, 8) downscales
    while decoding.

    Raises:
      InvalidArgumentError: not a JPEG, or bad ``channels``/``ratio``/``dct_method``."""
    _check_args(channels, ratio, dct_method)
    return wrap(_decode(_contents(contents, "DecodeJpeg"), channels, ratio))


def decode_and_crop_jpeg(contents, crop_window, channels=0, ratio=1, fancy_upscaling=True,
                         try_recover_truncated=False, acceptable_fraction=1, dct_method="",
                         name=None):
    """``decode_jpeg`` of the window ``crop_window`` = [y, x, height, width] (int32) of the
    (``ratio``-scaled) image.

    Raises:
      InvalidArgumentError: as ``decode_jpeg``, or a window outside the image."""
    _check_args(channels, ratio, dct_method)
    data = _contents(contents, "DecodeAndCropJpeg")
    window = np.asarray(crop_window._value if isinstance(crop_window, Tensor) else crop_window)
    if window.shape != (4,):
        raise InvalidArgumentError(f"crop_window must be shape [4], got {list(window.shape)}")
    y, x, h, w = (int(v) for v in window)
    image = _decode(data, channels, ratio)
    height, width = image.shape[:2]
    if h <= 0 or w <= 0 or y < 0 or x < 0 or y + h > height or x + w > width:
        raise InvalidArgumentError(f"Invalid JPEG data or crop window, data size {len(data)}")
    return wrap(np.ascontiguousarray(image[y:y + h, x:x + w]))


def extract_jpeg_shape(contents, output_type=np.int32, name=None):
    """The ``[height, width, channels]`` of the JPEG ``contents`` (its file's channels), read
    from its header, as ``output_type`` (int32 or int64).

    Raises:
      InvalidArgumentError: not a JPEG, or another ``output_type``."""
    dtype = spec_dtype(output_type, "output_type")
    if dtype not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise InvalidArgumentError(f"Value for attr 'output_type' of {np.dtype(dtype).name} "
                                   "is not in the list of allowed values: int32, int64")
    image = _open(_contents(contents, "ExtractJpegShape"))
    w, h = image.size
    return wrap(np.array([h, w, len(image.getbands())], dtype=dtype))
