"""``tf.compat.v1.summary.image`` (TF 1.15's ``tf.summary.image``): up to ``max_outputs``
images of a ``[batch, height, width, channels]`` tensor (1: grayscale, 3: RGB, 4: RGBA) as
PNGs in a ``Summary``, tagged ``<tag>/image`` when ``max_outputs`` is 1, else
``<tag>/image/<i>``.

uint8 images are written as they are; float images are mapped into uint8 as TF's kernel maps
them: with a negative value ``v * 127 / max|v| + 128``, else ``v * 255 / max(v)`` (a scale of
0 when that maximum is below 1e-6), truncated, non-finite pixels red. The PNGs are written
here (filter 0, zlib); their pixels, not their bytes, equal TF's."""

from __future__ import annotations

import struct
import zlib

import numpy as np

from ...errors import InvalidArgumentError
from ...summary import events as _events

__all__ = ["encode_png", "image"]


def encode_png(pixels: np.ndarray) -> bytes:
    """A PNG of the uint8 ``[height, width, channels]`` array (channels 1, 2, 3 or 4)."""
    h, w, c = pixels.shape
    color = {1: 0, 2: 4, 3: 2, 4: 6}[c]

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    rows = np.concatenate([np.zeros((h, 1), np.uint8),
                           np.ascontiguousarray(pixels, np.uint8).reshape(h, w * c)], axis=1)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows.tobytes(), 6)) + chunk(b"IEND", b""))


def _to_uint8(images: np.ndarray) -> np.ndarray:
    if images.dtype == np.uint8:
        return images
    out = np.empty(images.shape, np.uint8)
    for i, im in enumerate(images.astype(np.float32)):
        finite = np.isfinite(im).all(axis=-1)
        vals = im[finite] if finite.any() else np.zeros(1, np.float32)
        lo, hi = float(vals.min()), float(vals.max())
        if lo < 0:
            top = max(abs(lo), abs(hi))
            scale, offset = (0.0 if top < 1e-6 else 127.0 / top), 128.0
        else:
            scale, offset = (0.0 if hi < 1e-6 else 255.0 / hi), 0.0
        mapped = (im * np.float32(scale) + np.float32(offset)).astype(np.float32)
        out[i] = np.clip(np.nan_to_num(mapped), 0, 255).astype(np.uint8)
        bad = np.array([255, 0, 0, 255][:im.shape[-1]], np.uint8)
        out[i][~finite] = bad
    return out


def _encode_image(tag, images, max_outputs):
    if images.ndim != 4 or images.shape[-1] not in (1, 3, 4):
        raise InvalidArgumentError(f"Tensor must be 4-D with last dim 1, 3, or 4, not "
                                   f"{list(images.shape)}")
    if images.dtype.kind not in "fu" or (images.dtype.kind == "u" and images.dtype != np.uint8):
        raise InvalidArgumentError(f"image summary '{tag}': uint8 or floating point images "
                                   f"are needed, got {images.dtype}")
    pixels = _to_uint8(images[:max_outputs])
    values = []
    for i, im in enumerate(pixels):
        h, w, c = im.shape
        proto = (_events._int_field(1, h) + _events._int_field(2, w)
                 + _events._int_field(3, c) + _events._bytes_field(4, encode_png(im)))
        name = f"{tag}/image" if max_outputs == 1 else f"{tag}/image/{i}"
        values.append(_events._bytes_field(1, _events._text(name))
                      + _events._bytes_field(4, proto, keep_empty=True))
    return b"".join(_events._bytes_field(1, v, keep_empty=True) for v in values)


def image(name, tensor, max_outputs=3, collections=None, family=None):
    """A ``Summary`` with up to ``max_outputs`` images of ``tensor`` as PNGs.

    Raises:
      InvalidArgumentError: ``max_outputs`` < 1 (at once); when it runs, ``tensor`` is not
        4-D with 1, 3 or 4 channels, or not uint8/floating point."""
    from .summary import _summary_op

    if int(max_outputs) < 1:
        raise InvalidArgumentError(f"max_images must be >= 1, got {max_outputs}")
    return _summary_op("ImageSummary", name, [tensor],
                       lambda tag, images: _encode_image(tag, images, int(max_outputs)),
                       collections, family)
