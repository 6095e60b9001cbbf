"""tf.compat.v1.image's TF 1 resize functions (legacy sampling, align_corners,
half_pixel_centers) against real TF (issue 17)."""

import numpy as np
import pytest

from ipu_gpu.compat import v1

tf_ref = None  # real TensorFlow, set by the fixture below (oneDNN off, see conftest)


@pytest.fixture(autouse=True)
def _real_tf(real_tf):
    global tf_ref
    tf_ref = real_tf


RNG = np.random.default_rng(1)
IMG = RNG.uniform(0, 1, (2, 5, 7, 3)).astype(np.float32)
U8 = RNG.integers(0, 256, (6, 4, 2)).astype(np.uint8)


def assert_like_tf(fn):
    ours, theirs = np.asarray(fn(v1)), np.asarray(fn(tf_ref.compat.v1))
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("fn", ["resize_bilinear", "resize_nearest_neighbor", "resize_bicubic",
                                "resize_area"])
@pytest.mark.parametrize("size", [(3, 4), (11, 9), (1, 1), (5, 16)])
@pytest.mark.parametrize("align_corners", [False, True])
def test_legacy_resizes_like_tf(fn, size, align_corners):
    assert_like_tf(lambda lib: getattr(lib.image, fn)(IMG, size, align_corners=align_corners))
    if fn != "resize_area":
        assert_like_tf(lambda lib: getattr(lib.image, fn)(IMG, size, half_pixel_centers=True))


@pytest.mark.parametrize("method", [0, 1, 2, 3, "bilinear", "nearest"])
def test_resize_images_like_tf(method):
    assert_like_tf(lambda lib: lib.image.resize_images(U8, (9, 3), method=method))
    assert_like_tf(lambda lib: lib.image.resize_images(IMG, (4, 4), method=method,
                                                       align_corners=True))
    assert_like_tf(lambda lib: lib.image.resize_images(U8, (6, 4), method=method))  # unchanged
    assert_like_tf(lambda lib: lib.image.resize_images(IMG[0], (20, 8), method=method,
                                                       preserve_aspect_ratio=True))


def test_v1_namespace_and_errors():
    assert v1.image.ResizeMethod.BICUBIC == tf_ref.compat.v1.image.ResizeMethod.BICUBIC
    assert v1.image.flip_left_right is not None and v1.image.resize_image_with_crop_or_pad
    with pytest.raises(tf_ref.errors.InvalidArgumentError):
        tf_ref.compat.v1.image.resize_bilinear(IMG, (3, 3), align_corners=True,
                                               half_pixel_centers=True)
    import ipu_gpu as tf
    with pytest.raises(tf.errors.InvalidArgumentError):
        v1.image.resize_bilinear(IMG, (3, 3), align_corners=True, half_pixel_centers=True)
