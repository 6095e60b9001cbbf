"""``ipu.image_ops.normalise_image``: the float64 reference, per-step rounding in the output
dtype (float16 for uint8 images), the zero fourth channel, TF1 graphs, Graphcore's errors."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as v1
from ipu_gpu import ipu
from ipu_gpu.ipu import image_ops
from tests.reference import ipu_ops as ref

OFFSETS, SCALES = [0.485, 0.456, 0.406], [1 / 0.229, 1 / 0.224, 1 / 0.225]


@pytest.mark.parametrize("dtype, out_dtype, tol", [
    (np.uint8, np.float16, 5e-3), (np.float16, np.float16, 5e-3), (np.float32, np.float32, 1e-6)])
def test_matches_the_reference(dtype, out_dtype, tol):
    rng = np.random.default_rng(0)
    image = (rng.integers(0, 256, (2, 5, 4, 3)) if dtype == np.uint8
             else rng.random((2, 5, 4, 3))).astype(dtype)
    scale = 1 / 255 if dtype == np.uint8 else 1.0
    y = image_ops.normalise_image(image, OFFSETS, SCALES, scale=scale)
    assert y.dtype == out_dtype and tuple(y.shape) == (2, 5, 4, 4)
    want = ref.normalise_image(image, OFFSETS, SCALES, scale)
    np.testing.assert_allclose(np.asarray(y, np.float64), want, rtol=tol, atol=tol)
    assert (np.asarray(y)[..., 3] == 0).all()


def test_each_step_is_rounded_to_the_output_dtype():
    image = np.array([[[201, 17, 255]]], np.uint8)
    y = np.asarray(image_ops.normalise_image(image, OFFSETS, SCALES, scale=1 / 255))
    h = np.float16
    x = image.astype(h) * h(1 / 255)
    want = (x - np.array(OFFSETS, h)) * np.array(SCALES, h)
    np.testing.assert_array_equal(y[..., :3], want)


def test_tensor_offsets_and_scales_are_cast_and_graphs_work():
    image = np.random.default_rng(1).random((3, 3, 3)).astype(np.float16)
    eager = np.asarray(ipu.ops.image_ops.normalise_image(
        image, ig.constant(OFFSETS, dtype=ig.float64), ig.constant(SCALES), scale=2))
    with v1.Graph().as_default():
        p = v1.placeholder(np.float16, [3, 3, 3])
        y = image_ops.normalise_image(p, OFFSETS, SCALES, scale=2)
        with v1.Session() as sess:
            graph = sess.run(y, {p: image})
    np.testing.assert_array_equal(graph, eager)
    np.testing.assert_allclose(eager, ref.normalise_image(image, OFFSETS, SCALES, 2), atol=1e-2)


@pytest.mark.parametrize("image, offsets, error, match", [
    (np.ones((2, 2, 3), np.float64), OFFSETS, TypeError,
     "The input `image` to `normalise_image` must be either float16, float32 or uint8."),
    (np.ones((2, 2, 3), np.int32), OFFSETS, TypeError, "must be either float16"),
    (np.ones((2, 2, 2), np.float32), OFFSETS, ValueError, "The image has 2 channels, expected 3."),
    (np.ones((2, 2, 3), np.float32), [1.0, 2.0], ValueError,
     "channel_offsets must be the same size as the number of image channels 3, but was 2"),
])
def test_graphcore_errors(image, offsets, error, match):
    with pytest.raises(error, match=match):
        image_ops.normalise_image(image, offsets, SCALES)
