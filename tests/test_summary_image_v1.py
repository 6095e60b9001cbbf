"""tf.compat.v1.summary.image (E2: most-missed in Graphcore's TF1 programs): the Summary's
bytes parse with real TF's protobuf, and its tags, sizes and PNG pixels equal those of real
TF's ImageSummary kernel, for uint8 and float images (TF's uint8 mapping, non-finite pixels
red); numpy reference of the mapping; errors."""

from __future__ import annotations

import io

import numpy as np
import pytest

import ipu_gpu.compat.v1 as v1
from ipu_gpu.compat.v1 import summary_image
from ipu_gpu.errors import InvalidArgumentError

Image = pytest.importorskip("PIL.Image")
RNG = np.random.default_rng(23)


def _images(summary_bytes, real_tf):
    out = []
    for value in real_tf.compat.v1.Summary.FromString(summary_bytes).value:
        im = value.image
        pixels = np.asarray(Image.open(io.BytesIO(im.encoded_image_string)))
        out.append((value.tag, im.height, im.width, im.colorspace,
                    pixels.reshape(im.height, im.width, -1)))
    return out


def _theirs(real_tf, x, **kw):
    with real_tf.Graph().as_default():
        s = real_tf.compat.v1.summary.image("imgs", real_tf.constant(x), **kw)
        with real_tf.compat.v1.Session() as sess:
            return sess.run(s)


def _ours(x, **kw):
    with v1.Graph().as_default():
        s = v1.summary.image("imgs", v1.constant(x), **kw)
        with v1.Session() as sess:
            return sess.run(s)


CASES = {
    "uint8_rgb": RNG.integers(0, 256, (4, 5, 7, 3), dtype=np.uint8),
    "uint8_gray_one": RNG.integers(0, 256, (1, 6, 4, 1), dtype=np.uint8),
    "float_positive": RNG.random((2, 3, 5, 3)).astype(np.float32) * 4.0,
    "float_signed_rgba": RNG.normal(0, 2, (3, 4, 4, 4)).astype(np.float32),
    "float_zero": np.zeros((1, 2, 2, 1), np.float32),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("max_outputs", [1, 3])
def test_equals_real_tf(real_tf, case, max_outputs):
    x = CASES[case]
    ours = _images(_ours(x, max_outputs=max_outputs), real_tf)
    theirs = _images(_theirs(real_tf, x, max_outputs=max_outputs), real_tf)
    assert [o[:4] for o in ours] == [t[:4] for t in theirs]
    for o, t in zip(ours, theirs):
        np.testing.assert_array_equal(o[4], t[4])
    assert len(ours) == min(max_outputs, len(x))


def test_non_finite_pixels_are_red(real_tf):
    x = RNG.random((1, 3, 3, 3)).astype(np.float32)
    x[0, 1, 1] = [np.nan, 0.5, 0.5]
    x[0, 2, 0, 2] = np.inf
    ours = _images(_ours(x), real_tf)[0][4]
    theirs = _images(_theirs(real_tf, x), real_tf)[0][4]
    np.testing.assert_array_equal(ours, theirs)
    assert list(ours[1, 1]) == [255, 0, 0]


def test_float_mapping_numpy_reference():
    x = np.array([[[[-2.0], [0.0], [1.0], [2.0]]]], np.float32)
    np.testing.assert_array_equal(summary_image._to_uint8(x)[0, 0, :, 0],
                                  np.trunc(x[0, 0, :, 0] * 127 / 2 + 128).astype(np.uint8))
    y = np.array([[[[0.0], [0.5], [2.0]]]], np.float32)
    np.testing.assert_array_equal(summary_image._to_uint8(y)[0, 0, :, 0],
                                  np.trunc(y[0, 0, :, 0] * 255 / 2).astype(np.uint8))


def test_eager_tf1_bytes_and_errors(real_tf):
    x = CASES["uint8_rgb"][:1]
    data = v1.summary.image("e", x)  # outside a graph: the bytes at once
    [(tag, h, w, c, pixels)] = _images(data, real_tf)
    assert (tag, h, w, c) == ("e/image/0", 5, 7, 3)
    assert _images(v1.summary.image("e", x, max_outputs=1), real_tf)[0][0] == "e/image"
    np.testing.assert_array_equal(pixels, x[0])
    with pytest.raises(InvalidArgumentError, match="4-D with last dim 1, 3, or 4"):
        v1.summary.image("bad", np.zeros((2, 3, 3, 2), np.uint8))
    with pytest.raises(InvalidArgumentError, match="4-D"):
        v1.summary.image("bad", np.zeros((3, 3, 3), np.uint8))
    with pytest.raises(InvalidArgumentError, match="max_images must be >= 1"):
        v1.summary.image("bad", x, max_outputs=0)
    with v1.Graph().as_default():
        s = v1.summary.image("in_graph", v1.constant(x))
        assert s in v1.get_collection(v1.GraphKeys.SUMMARIES)
