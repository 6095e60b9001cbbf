"""tf.image against real TensorFlow and numpy; gradients against finite differences;
random ops' seed rules and use inside tf.data map functions (issue 17)."""

import numpy as np
import pytest

import ipu_gpu as tf

tf_ref = None  # real TensorFlow, set by the fixture below (oneDNN off, see conftest)


@pytest.fixture(autouse=True)
def _real_tf(real_tf):
    global tf_ref
    tf_ref = real_tf
RNG = np.random.default_rng(0)
IMG = RNG.uniform(0, 1, (5, 7, 3)).astype(np.float32)
BATCH = RNG.uniform(0, 1, (2, 6, 4, 3)).astype(np.float32)
U8 = RNG.integers(0, 256, (4, 6, 3)).astype(np.uint8)


def both(fn):
    return [np.asarray(fn(lib)) for lib in (tf, tf_ref)]


def assert_like_tf(fn, rtol=1e-5, atol=1e-6):
    ours, theirs = both(fn)
    assert ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol)


METHODS = ["bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5", "gaussian",
           "mitchellcubic"]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("size", [(3, 4), (11, 9), (5, 14)])
@pytest.mark.parametrize("antialias", [False, True])
def test_resize_like_tf(method, size, antialias):
    assert_like_tf(lambda lib: lib.image.resize(IMG, size, method=method, antialias=antialias))
    assert_like_tf(lambda lib: lib.image.resize(BATCH, size, method=method, antialias=antialias))


def test_resize_dtypes_aspect_ratio_and_errors():
    assert_like_tf(lambda lib: lib.image.resize(U8, (8, 3)))
    assert_like_tf(lambda lib: lib.image.resize(U8, (8, 3), method="nearest"))
    assert_like_tf(lambda lib: lib.image.resize(IMG, (20, 9), preserve_aspect_ratio=True))
    assert_like_tf(lambda lib: lib.image.resize(U8, (4, 6)))  # same size: float32, as TF 2
    assert_like_tf(lambda lib: lib.image.resize(IMG, (3, 4),
                                                method=lib.image.ResizeMethod.BICUBIC))
    with pytest.raises(ValueError):
        tf.image.resize(IMG[0], (3, 3))
    with pytest.raises(ValueError):
        tf.image.resize(IMG, (3, 3), method="cubic")


def test_resize_gradient_matches_finite_differences():
    x0 = RNG.standard_normal((1, 4, 5, 2)).astype(np.float32)
    w = RNG.standard_normal((1, 7, 3, 2)).astype(np.float32)
    x = tf.constant(x0)
    with tf.GradientTape() as t:
        t.watch(x)
        loss = tf.reduce_sum(tf.image.resize(x, (7, 3), method="bicubic") * w)
    g = t.gradient(loss, x).numpy()
    xr = tf_ref.constant(x0)
    with tf_ref.GradientTape() as t2:
        t2.watch(xr)
        loss2 = tf_ref.reduce_sum(tf_ref.image.resize(xr, (7, 3), method="bicubic") * w)
    np.testing.assert_allclose(g, t2.gradient(loss2, xr).numpy(), rtol=1e-4, atol=1e-5)
    # the op is linear: finite differences in float64 of the weights' map are exact
    eps = 1e-2
    e = np.zeros_like(x0)
    e[0, 1, 2, 1] = eps
    fd = (float(tf.reduce_sum(tf.image.resize(x0 + e, (7, 3), method="bicubic") * w))
          - float(tf.reduce_sum(tf.image.resize(x0 - e, (7, 3), method="bicubic") * w))) / (2 * eps)
    assert abs(fd - g[0, 1, 2, 1]) < 1e-3


@pytest.mark.parametrize("name", ["flip_left_right", "flip_up_down", "transpose", "rot90"])
def test_flips_like_tf_and_numpy(name):
    assert_like_tf(lambda lib: getattr(lib.image, name)(IMG))
    assert_like_tf(lambda lib: getattr(lib.image, name)(BATCH))
    np.testing.assert_array_equal(tf.image.flip_left_right(U8).numpy(), U8[:, ::-1])
    np.testing.assert_array_equal(tf.image.flip_up_down(U8).numpy(), U8[::-1])
    assert_like_tf(lambda lib: lib.image.rot90(BATCH, k=3))


def test_crops_and_pads_like_tf():
    assert_like_tf(lambda lib: lib.image.crop_to_bounding_box(IMG, 1, 2, 3, 4))
    assert_like_tf(lambda lib: lib.image.pad_to_bounding_box(BATCH, 1, 2, 9, 7))
    for th, tw in ((3, 3), (8, 9), (2, 10), (5, 7)):
        assert_like_tf(lambda lib, th=th, tw=tw: lib.image.resize_with_crop_or_pad(U8, th, tw))
        assert_like_tf(lambda lib, th=th, tw=tw: lib.image.resize_with_crop_or_pad(BATCH, th, tw))
    for f in (0.5, 0.33, 0.9, 1.0):
        assert_like_tf(lambda lib, f=f: lib.image.central_crop(IMG, f))
        assert_like_tf(lambda lib, f=f: lib.image.central_crop(BATCH, f))
    assert tf.image.resize_image_with_crop_or_pad is tf.image.resize_with_crop_or_pad


@pytest.mark.parametrize("call", [
    lambda lib: lib.image.crop_to_bounding_box(IMG, 3, 0, 3, 4),
    lambda lib: lib.image.crop_to_bounding_box(IMG, -1, 0, 3, 4),
    lambda lib: lib.image.pad_to_bounding_box(IMG, 0, 0, 4, 7),
    lambda lib: lib.image.resize_with_crop_or_pad(IMG, 0, 3),
    lambda lib: lib.image.central_crop(IMG, 0.0),
    lambda lib: lib.image.flip_left_right(IMG[0]),
    lambda lib: lib.image.random_brightness(IMG, -0.1),
    lambda lib: lib.image.random_contrast(IMG, 0.5, 0.4),
    lambda lib: lib.image.convert_image_dtype(IMG > 0.5, lib.float32),
])
def test_errors_like_tf(call):
    with pytest.raises(Exception) as theirs:
        call(tf_ref)
    with pytest.raises(type(theirs.value)):
        call(tf)


@pytest.mark.parametrize("src,dst", [
    (np.uint8, np.float32), (np.float32, np.uint8), (np.uint8, np.int32), (np.int32, np.uint8),
    (np.int16, np.float64), (np.float64, np.float32), (np.float32, np.int16), (np.uint8, np.uint8),
])
def test_convert_image_dtype_like_tf(src, dst):
    if np.dtype(src).kind == "f":
        x = np.linspace(-0.2, 1.2, 30).astype(src).reshape(2, 5, 3)
    else:
        info = np.iinfo(src)
        x = np.linspace(max(info.min, -1000), min(info.max, 70000), 30).astype(src).reshape(2, 5, 3)
    for sat in (False, True):
        if np.dtype(src).kind == "f" and np.dtype(dst).kind != "f" and not sat:
            x_ok = np.clip(x, 0, 1)  # out-of-range float->int casts are undefined in TF
        else:
            x_ok = x
        assert_like_tf(lambda lib, s=sat, x=x_ok: lib.image.convert_image_dtype(x, dst, saturate=s))


def test_pixel_value_ops_like_tf():
    assert_like_tf(lambda lib: lib.image.per_image_standardization(IMG))
    assert_like_tf(lambda lib: lib.image.per_image_standardization(BATCH))
    assert_like_tf(lambda lib: lib.image.per_image_standardization(U8))
    assert_like_tf(lambda lib: lib.image.per_image_standardization(np.full((2, 2, 1), 3.0,
                                                                           np.float32)))
    assert_like_tf(lambda lib: lib.image.adjust_brightness(IMG, 0.3))
    assert_like_tf(lambda lib: lib.image.adjust_brightness(U8, 0.2))
    assert_like_tf(lambda lib: lib.image.adjust_contrast(BATCH, 1.7))
    assert_like_tf(lambda lib: lib.image.adjust_contrast(U8, 0.4))
    assert_like_tf(lambda lib: lib.image.rgb_to_grayscale(BATCH))
    assert_like_tf(lambda lib: lib.image.rgb_to_grayscale(U8))
    assert_like_tf(lambda lib: lib.image.grayscale_to_rgb(lib.constant(BATCH[..., :1])))


def test_per_image_standardization_against_numpy():
    x = IMG.astype(np.float64)
    want = (x - x.mean()) / max(x.std(), 1 / np.sqrt(x.size))
    np.testing.assert_allclose(tf.image.per_image_standardization(IMG).numpy(), want, rtol=1e-5,
                               atol=1e-6)


def test_random_ops_follow_seed_rules_and_flip_or_not():
    tf.random.set_seed(3)
    a = [tf.image.random_flip_left_right(BATCH, seed=7).numpy() for _ in range(6)]
    tf.random.set_seed(3)
    b = [tf.image.random_flip_left_right(BATCH, seed=7).numpy() for _ in range(6)]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)  # same global and op seed: same sequence
    flipped = set()
    for x in a:
        for i in range(2):
            same, mirrored = np.array_equal(x[i], BATCH[i]), np.array_equal(x[i], BATCH[i, :, ::-1])
            assert same or mirrored
            flipped.add(mirrored)
    assert flipped == {True, False}
    tf.random.set_seed(5)
    c = tf.image.random_crop(IMG, [3, 4, 3], seed=1).numpy()
    windows = [IMG[i:i + 3, j:j + 4] for i in range(3) for j in range(4)]
    assert any(np.array_equal(c, w) for w in windows)
    d = tf.image.random_brightness(IMG, 0.2, seed=1).numpy() - IMG
    assert np.ptp(d) < 1e-6 and abs(d.mean()) <= 0.2
    ratio = tf.image.random_contrast(IMG, 0.5, 1.5, seed=2).numpy() - IMG.mean((0, 1))
    factor = ratio / (IMG - IMG.mean((0, 1)))
    assert 0.5 <= np.median(factor) < 1.5
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.image.random_crop(IMG, [6, 4, 3])


def test_random_ops_inside_dataset_map():
    tf.random.set_seed(11)
    ds = tf.data.Dataset.from_tensor_slices(np.stack([IMG] * 8)).map(
        lambda x: tf.image.random_crop(tf.image.random_flip_up_down(x, seed=4), [4, 4, 3],
                                       seed=5))
    out1 = [e.numpy() for e in ds]
    tf.random.set_seed(11)
    out2 = [e.numpy() for e in ds]
    assert all(o.shape == (4, 4, 3) for o in out1)
    for x, y in zip(out1, out2):
        np.testing.assert_array_equal(x, y)
    assert len({o.tobytes() for o in out1}) > 1


def test_tf1_graph_image_ops_run_per_session_run():
    from ipu_gpu.compat import v1

    with v1.Graph().as_default():
        x = v1.placeholder(tf.float32, [6, 4, 3])
        r = tf.image.resize(x, (3, 8), method="bicubic")
        c = tf.image.resize_with_crop_or_pad(x, 5, 5)
        s = tf.image.per_image_standardization(x)
        crop = tf.image.random_crop(tf.image.random_flip_left_right(x, seed=2), [2, 2, 3], seed=3)
        (g,) = v1.gradients(tf.reduce_sum(r * r), [x])
        with v1.Session() as sess:
            feed = {x: BATCH[0]}
            rv, cv, sv, gv = sess.run([r, c, s, g], feed)
            crops = [sess.run(crop, feed) for _ in range(8)]
    np.testing.assert_allclose(rv, tf.image.resize(BATCH[0], (3, 8), method="bicubic").numpy(),
                               rtol=1e-6)
    np.testing.assert_array_equal(cv, tf.image.resize_with_crop_or_pad(BATCH[0], 5, 5).numpy())
    np.testing.assert_allclose(sv, tf.image.per_image_standardization(BATCH[0]).numpy(),
                               rtol=1e-6)
    xt = tf.constant(BATCH[0])
    with tf.GradientTape() as t:
        t.watch(xt)
        loss = tf.reduce_sum(tf.image.resize(xt, (3, 8), method="bicubic") ** 2)
    np.testing.assert_allclose(gv, t.gradient(loss, xt).numpy(), rtol=1e-5)
    windows = {BATCH[0][i:i + 2, j:j + 2].tobytes() for i in range(5) for j in range(3)}
    windows |= {BATCH[0][:, ::-1][i:i + 2, j:j + 2].tobytes() for i in range(5) for j in range(3)}
    assert all(c.tobytes() in windows for c in crops)
    assert len({c.tobytes() for c in crops}) > 1  # drawn per Session.run


def test_map_fn_of_image_ops_over_a_batch():
    out = tf.map_fn(lambda im: tf.image.central_crop(im, 0.5), tf.constant(BATCH))
    np.testing.assert_array_equal(out.numpy(), tf.image.central_crop(BATCH, 0.5).numpy())


RGB = RNG.uniform(0, 1, (2, 5, 4, 3)).astype(np.float32)
RGB[0, 0, 0] = [0.5, 0.5, 0.5]  # a grey: hue 0
RGB[0, 0, 1] = [0.0, 0.0, 0.0]  # black: saturation 0
RGB[0, 0, 2] = [0.9, 0.2, 0.9]  # red == blue == max


def test_colour_ops_like_tf():
    assert_like_tf(lambda lib: lib.image.rgb_to_hsv(RGB))
    assert_like_tf(lambda lib: lib.image.hsv_to_rgb(lib.image.rgb_to_hsv(RGB)))
    hsv = RNG.uniform(0, 1, (3, 4, 3)).astype(np.float32)
    assert_like_tf(lambda lib: lib.image.hsv_to_rgb(hsv))
    for f in (0.0, 0.4, 1.7, 5.0):
        assert_like_tf(lambda lib, f=f: lib.image.adjust_saturation(RGB, f), atol=2e-6)
    for d in (-0.7, -0.1, 0.0, 0.25, 0.9):
        assert_like_tf(lambda lib, d=d: lib.image.adjust_hue(RGB, d), atol=2e-6)
    assert_like_tf(lambda lib: lib.image.adjust_saturation(U8, 1.5), atol=1)
    assert_like_tf(lambda lib: lib.image.adjust_hue(U8, 0.3), atol=1)
    for gamma, gain in ((0.5, 1.0), (2.0, 0.7)):
        assert_like_tf(lambda lib, g=gamma, k=gain: lib.image.adjust_gamma(RGB, g, k))
        assert_like_tf(lambda lib, g=gamma, k=gain: lib.image.adjust_gamma(U8, g, k), atol=1)


@pytest.mark.parametrize("call", [
    lambda lib: lib.image.random_saturation(RGB, 0.5, 0.5),
    lambda lib: lib.image.random_saturation(RGB, -0.5, 0.5),
    lambda lib: lib.image.random_hue(RGB, 0.6),
    lambda lib: lib.image.random_hue(RGB, -0.1),
    lambda lib: lib.image.adjust_gamma(RGB, -1.0),
])
def test_colour_errors_like_tf(call):
    with pytest.raises(Exception) as theirs:
        call(tf_ref)
    with pytest.raises(type(theirs.value)):
        call(tf)


def test_random_colour_ops_draw_with_seeds():
    tf.random.set_seed(9)
    a = tf.image.random_saturation(RGB, 0.5, 1.5, seed=1).numpy()
    b = tf.image.random_hue(RGB, 0.2, seed=2).numpy()
    tf.random.set_seed(9)
    np.testing.assert_array_equal(a, tf.image.random_saturation(RGB, 0.5, 1.5, seed=1).numpy())
    np.testing.assert_array_equal(b, tf.image.random_hue(RGB, 0.2, seed=2).numpy())
    # the value equals adjust_* by some factor in range: saturation ratio of a coloured pixel
    s_in = tf.image.rgb_to_hsv(RGB).numpy()[1, 2, 2, 1]
    s_out = tf.image.rgb_to_hsv(a).numpy()[1, 2, 2, 1]
    assert 0.5 - 1e-5 <= s_out / s_in <= 1.5 + 1e-5 or s_out == 1.0


def test_hsv_gradient_matches_finite_differences():
    x0 = RGB[1, :2, :2].astype(np.float64)  # float64: rgb_to_hsv/hsv_to_rgb keep the dtype
    scale = np.array([1.0, 0.6, 1.0])

    def f(v):
        hsv = tf.image.rgb_to_hsv(v) * scale
        return tf.reduce_sum(tf.image.hsv_to_rgb(hsv) ** 2)
    x = tf.constant(x0)
    with tf.GradientTape() as t:
        t.watch(x)
        loss = f(x)
    g = t.gradient(loss, x).numpy()
    eps = 1e-6
    for idx in ((1, 0, 2), (0, 1, 0), (1, 1, 1)):
        e = np.zeros_like(x0)
        e[idx] = eps
        fd = (float(f(tf.constant(x0 + e))) - float(f(tf.constant(x0 - e)))) / (2 * eps)
        assert abs(fd - g[idx]) < 1e-6 * max(1.0, abs(fd))
