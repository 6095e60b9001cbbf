"""tf.io/tf.image decode_jpeg, decode_and_crop_jpeg, extract_jpeg_shape (E2: most-missed in
Graphcore's CNN input pipelines): equal, byte for byte, to real TF's kernels with
``dct_method="INTEGER_ACCURATE"`` (the IDCT Pillow's libjpeg uses), close to the encoded
pixels, with TF's errors; through ``Dataset.map`` as the pipelines call them."""

from __future__ import annotations

import io

import numpy as np
import pytest

import ipu_gpu
import ipu_gpu.compat.v1 as v1
from ipu_gpu.errors import InvalidArgumentError

Image = pytest.importorskip("PIL.Image")

RNG = np.random.default_rng(17)
# smooth colour gradients plus noise: JPEG-like content, sizes not multiples of the MCU
_yy, _xx = np.mgrid[0:37, 0:53]
PIXELS = np.clip(np.stack([_yy * 6, _xx * 4, 255 - _yy * 3 - _xx * 2], -1)
                 + RNG.normal(0, 12, (37, 53, 3)), 0, 255).astype(np.uint8)


def _jpeg(pixels, subsampling=2, quality=90) -> bytes:
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "JPEG", quality=quality, subsampling=subsampling)
    return out.getvalue()


FILES = {"rgb420": _jpeg(PIXELS, 2), "rgb444": _jpeg(PIXELS, 0),
         "gray": _jpeg(PIXELS[:, :, 1])}


@pytest.mark.parametrize("kind", sorted(FILES))
@pytest.mark.parametrize("channels", [0, 1, 3])
@pytest.mark.parametrize("ratio", [1, 2, 4, 8])
def test_decode_jpeg_equals_tf(real_tf, kind, channels, ratio):
    data = FILES[kind]
    ours = ipu_gpu.io.decode_jpeg(ipu_gpu.constant(data), channels=channels, ratio=ratio)
    theirs = real_tf.io.decode_jpeg(data, channels=channels, ratio=ratio,
                                    dct_method="INTEGER_ACCURATE").numpy()
    assert ours.dtype == ipu_gpu.uint8
    np.testing.assert_array_equal(np.asarray(ours), theirs)


def test_decode_jpeg_is_the_encoded_image():
    """numpy reference: the decoded pixels are those encoded, up to JPEG's loss."""
    out = np.asarray(ipu_gpu.image.decode_jpeg(_jpeg(PIXELS, 0, quality=98)))
    assert out.shape == (37, 53, 3)
    assert np.abs(out.astype(int) - PIXELS).mean() < 3.0
    gray = np.asarray(ipu_gpu.image.decode_jpeg(FILES["gray"]))
    assert gray.shape == (37, 53, 1)
    assert np.abs(gray[:, :, 0].astype(int) - PIXELS[:, :, 1]).mean() < 6.0
    half = np.asarray(ipu_gpu.image.decode_jpeg(FILES["rgb444"], ratio=2))
    assert half.shape == (19, 27, 3)  # ceil(size / ratio), as libjpeg scales


@pytest.mark.parametrize("window", [[0, 0, 37, 53], [3, 5, 20, 30], [17, 1, 20, 52],
                                    [36, 52, 1, 1]])
@pytest.mark.parametrize("channels", [0, 3])
def test_decode_and_crop_jpeg(real_tf, window, channels):
    data = FILES["rgb420"]
    ours = np.asarray(ipu_gpu.image.decode_and_crop_jpeg(data, ipu_gpu.constant(window),
                                                         channels=channels))
    y, x, h, w = window
    full = np.asarray(ipu_gpu.image.decode_jpeg(data, channels=channels))
    np.testing.assert_array_equal(ours, full[y:y + h, x:x + w])
    theirs = real_tf.image.decode_and_crop_jpeg(data, window, channels=channels,
                                                dct_method="INTEGER_ACCURATE").numpy()
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("kind", sorted(FILES))
def test_extract_jpeg_shape(real_tf, kind):
    for dtype, tf_dtype in [(ipu_gpu.int32, real_tf.int32), (ipu_gpu.int64, real_tf.int64)]:
        ours = ipu_gpu.image.extract_jpeg_shape(FILES[kind], output_type=dtype)
        theirs = real_tf.image.extract_jpeg_shape(FILES[kind], output_type=tf_dtype)
        assert ours.dtype == dtype
        np.testing.assert_array_equal(np.asarray(ours), theirs.numpy())


def test_errors():
    data = FILES["rgb444"]
    with pytest.raises(InvalidArgumentError, match="Invalid JPEG data"):
        ipu_gpu.io.decode_jpeg(b"not a jpeg")
    with pytest.raises(InvalidArgumentError, match="Invalid JPEG data"):
        ipu_gpu.io.decode_jpeg(data[: len(data) // 2])  # truncated
    with pytest.raises(InvalidArgumentError, match="Invalid JPEG data"):
        ipu_gpu.image.extract_jpeg_shape(_png())
    with pytest.raises(InvalidArgumentError, match="channels must be"):
        ipu_gpu.io.decode_jpeg(data, channels=2)
    with pytest.raises(InvalidArgumentError, match="ratio must be 1, 2, 4, or 8, got 3"):
        ipu_gpu.io.decode_jpeg(data, ratio=3)
    with pytest.raises(InvalidArgumentError, match="dct_method must be one of"):
        ipu_gpu.io.decode_jpeg(data, dct_method="FLOAT")
    with pytest.raises(InvalidArgumentError, match="scalar"):
        ipu_gpu.io.decode_jpeg(ipu_gpu.constant([data, data]))
    with pytest.raises(InvalidArgumentError, match="crop window"):
        ipu_gpu.image.decode_and_crop_jpeg(data, [30, 0, 10, 10])
    with pytest.raises(InvalidArgumentError, match="output_type"):
        ipu_gpu.image.extract_jpeg_shape(data, output_type=ipu_gpu.float32)


def _png() -> bytes:
    out = io.BytesIO()
    Image.fromarray(PIXELS).save(out, "PNG")
    return out.getvalue()


def test_in_a_dataset_map_and_tf1_names():
    files = [FILES["rgb444"], _jpeg(PIXELS[:20, :30], 0)]
    ds = ipu_gpu.data.Dataset.from_tensor_slices(files).map(
        lambda b: ipu_gpu.image.resize(ipu_gpu.image.decode_jpeg(b, channels=3), [8, 8]))
    got = [np.asarray(x) for x in ds]
    want = [np.asarray(ipu_gpu.image.resize(ipu_gpu.image.decode_jpeg(f), [8, 8]))
            for f in files]
    assert len(got) == 2
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert v1.image.decode_jpeg is ipu_gpu.io.decode_jpeg is ipu_gpu.image.decode_jpeg
    assert v1.image.extract_jpeg_shape is ipu_gpu.image.extract_jpeg_shape
