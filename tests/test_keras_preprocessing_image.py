"""Keras image preprocessing layers (issue 16): ``Resizing``, ``CenterCrop``, ``RandomCrop``,
``RandomFlip``, ``RandomRotation``, ``RandomZoom``, ``RandomTranslation``,
``RandomContrast``, ``RandomBrightness``, ``RandomHeight``, ``RandomWidth``.

The projective transform is checked against a float64 numpy reference and TF's
``ImageProjectiveTransformV3``; each layer against tf-keras: the random ones with factor
ranges of zero width, and seeded (each layer draws from its own Philox generator, whose
numbers are TF's, so a seeded layer reproduces tf-keras's layer call after call); configs,
errors, gradients, a Sequential model's fit and ``tf.data`` map."""

from __future__ import annotations

import json

import numpy as np
import pytest

import ipu_gpu as ig
from ipu_gpu import keras
from ipu_gpu.keras import layers as L
from ipu_gpu.keras.layers.preprocessing import image_transform
from reference import preprocessing as ref

FILL_MODES = ["reflect", "wrap", "constant", "nearest"]
INTERPOLATIONS = ["nearest", "bilinear"]


@pytest.fixture(scope="module")
def tfk(real_tf):
    return pytest.importorskip("tf_keras")


@pytest.fixture
def keras_seed():
    """``keras.utils.set_random_seed``, its seed generator cleared afterwards (later tests'
    unseeded draws must not depend on this file)."""
    yield keras.utils.set_random_seed
    keras.backend._SEED_GENERATOR.generator = None


def _images(shape=(2, 8, 10, 3), seed=0):
    return np.random.default_rng(seed).uniform(0, 255, size=shape).astype(np.float32)


def _transforms(rng, n, projective):
    t = np.zeros((n, 8), np.float32)
    t[:, [0, 1, 3, 4]] = rng.uniform(-1.5, 1.5, (n, 4))
    t[:, [2, 5]] = rng.uniform(-12, 12, (n, 2))
    if projective:
        t[:, 6:] = rng.uniform(-0.15, 0.15, (n, 2))
    return t


def _config(cfg: dict) -> dict:
    cfg = json.loads(json.dumps(cfg, default=list))
    cfg.pop("name", None)
    cfg.pop("rng_type", None)  # tf-keras 2.8+; Keras 2.6 (Graphcore's) has none
    return cfg


# ---- the projective transform ---------------------------------------------------------------
@pytest.mark.parametrize("fill_mode", FILL_MODES)
@pytest.mark.parametrize("interpolation", INTERPOLATIONS)
@pytest.mark.parametrize("projective", [False, True])
def test_transform_matches_reference_and_tf(real_tf, fill_mode, interpolation, projective):
    rng = np.random.default_rng(FILL_MODES.index(fill_mode) * 4 + projective)
    images = _images((3, 6, 7, 2), seed=1)
    t = _transforms(rng, 3, projective)
    ours = image_transform.transform(ig.constant(images), t, fill_mode, 3.0,
                                     interpolation).numpy()
    want = ref.projective_transform(images, t, fill_mode, 3.0, interpolation)
    np.testing.assert_allclose(ours, want, atol=2e-3)
    theirs = real_tf.raw_ops.ImageProjectiveTransformV3(
        images=images, transforms=t, output_shape=[6, 7], fill_value=3.0,
        fill_mode=fill_mode.upper(), interpolation=interpolation.upper()).numpy()
    np.testing.assert_allclose(ours, theirs, atol=2e-3)


@pytest.mark.parametrize("fill_mode", FILL_MODES)
def test_transform_far_coordinates_and_thin_images(real_tf, fill_mode):
    rng = np.random.default_rng(7)
    for h, w in [(1, 5), (4, 1), (3, 3)]:
        images = _images((2, h, w, 1), seed=h)
        t = np.zeros((2, 8), np.float32)
        t[:, [0, 4]] = 1
        t[:, [2, 5]] = rng.uniform(-40, 40, (2, 2))  # far outside: several periods
        for interpolation in INTERPOLATIONS:
            ours = image_transform.transform(ig.constant(images), t, fill_mode, 0.0,
                                             interpolation).numpy()
            theirs = real_tf.raw_ops.ImageProjectiveTransformV3(
                images=images, transforms=t, output_shape=[h, w], fill_value=0.0,
                fill_mode=fill_mode.upper(), interpolation=interpolation.upper()).numpy()
            np.testing.assert_allclose(ours, theirs, atol=2e-3)
            np.testing.assert_allclose(
                ours, ref.projective_transform(images, t, fill_mode, 0.0, interpolation),
                atol=2e-3)


def test_transform_rounds_halves_away_from_zero(real_tf):
    images = np.arange(80, dtype=np.float32).reshape(1, 8, 10, 1)
    t = image_transform.zoom_matrix(np.array([[0.8, 1.3]], np.float32), 8, 10)  # x.5 columns
    ours = image_transform.transform(ig.constant(images), t, "nearest", 0.0, "nearest")
    theirs = real_tf.raw_ops.ImageProjectiveTransformV3(
        images=images, transforms=t, output_shape=[8, 10], fill_value=0.0, fill_mode="NEAREST",
        interpolation="NEAREST")
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_transform_gradient_is_the_exact_adjoint():
    """The transform is linear in the image: its gradient is the transpose, <T'u, v> =
    <u, T v> for any u, v (checked in float64). TF's own registered gradient is not this: it
    applies the inverse transform to the cotangent, an approximation (a deviation here)."""
    rng = np.random.default_rng(3)
    t = _transforms(rng, 2, True)
    u = rng.standard_normal((2, 5, 6, 2))
    v = rng.standard_normal((2, 5, 6, 2))
    for fill_mode in FILL_MODES:
        for interpolation in INTERPOLATIONS:
            x = ig.constant(rng.standard_normal((2, 5, 6, 2)))
            with ig.GradientTape() as tape:
                tape.watch(x)
                loss = ig.reduce_sum(image_transform.transform(
                    x, t, fill_mode, 0.0, interpolation) * u)
            grad = tape.gradient(loss, x).numpy()
            tv = image_transform.transform(ig.constant(v), t, fill_mode, 0.0,
                                           interpolation).numpy()
            np.testing.assert_allclose(np.sum(grad * v), np.sum(u * tv), rtol=1e-10)


# ---- the affine layers with a fixed drawn parameter ---------------------------------------
AFFINE_CASES = [
    ("RandomRotation", dict(factor=(0.1, 0.1))),
    ("RandomRotation", dict(factor=(-0.3, -0.3), fill_mode="constant", fill_value=7.0)),
    ("RandomRotation", dict(factor=(0.25, 0.25), fill_mode="wrap", interpolation="nearest")),
    ("RandomZoom", dict(height_factor=(0.3, 0.3), width_factor=(-0.2, -0.2),
                        fill_mode="wrap", interpolation="nearest")),
    ("RandomZoom", dict(height_factor=(-0.4, -0.4))),
    ("RandomZoom", dict(height_factor=(0.5, 0.5), fill_mode="nearest")),
    ("RandomTranslation", dict(height_factor=(0.2, 0.2), width_factor=(-0.3, -0.3),
                               fill_mode="nearest")),
    ("RandomTranslation", dict(height_factor=(-0.5, -0.5), width_factor=(0.7, 0.7),
                               fill_mode="constant", interpolation="nearest")),
    ("RandomTranslation", dict(height_factor=(0.35, 0.35), width_factor=(0.15, 0.15))),
]


@pytest.mark.parametrize("name,kwargs", AFFINE_CASES)
def test_affine_layers_match_tf_keras(tfk, name, kwargs):
    images = _images()
    ours, theirs = getattr(L, name)(**kwargs), getattr(tfk.layers, name)(**kwargs)
    np.testing.assert_allclose(ours(images).numpy(), theirs(images).numpy(), atol=2e-3)
    single = images[0]  # an unbatched image
    np.testing.assert_allclose(ours(single).numpy(), theirs(single).numpy(), atol=2e-3)
    assert ours(single).shape == single.shape
    np.testing.assert_array_equal(ours(images, training=False).numpy(), images)
    assert _config(ours.get_config()) == _config(theirs.get_config())


SEEDED_CASES = [
    ("RandomFlip", dict()), ("RandomFlip", dict(mode="vertical")),
    ("RandomCrop", dict(height=5, width=4)), ("RandomRotation", dict(factor=0.2)),
    ("RandomZoom", dict(height_factor=0.3, width_factor=(-0.2, 0.3), fill_mode="nearest")),
    ("RandomTranslation", dict(height_factor=0.2, width_factor=0.3, fill_mode="constant",
                               interpolation="nearest")),
    ("RandomContrast", dict(factor=0.4)), ("RandomBrightness", dict(factor=0.3)),
    ("RandomHeight", dict(factor=0.4)), ("RandomWidth", dict(factor=(-0.3, 0.5))),
]


@pytest.mark.parametrize("name,kwargs", SEEDED_CASES)
def test_seeded_random_layers_reproduce_tf_keras(tfk, name, kwargs):
    images = _images((5, 8, 10, 3))
    ours, theirs = getattr(L, name)(seed=3, **kwargs), getattr(tfk.layers, name)(seed=3, **kwargs)
    for x in (images, images[0], images[:2], images):  # batches and a single image
        np.testing.assert_allclose(ours(x).numpy(), theirs(x).numpy(), atol=2e-3)


def test_unseeded_layers_follow_keras_set_random_seed(keras_seed):
    images = _images((4, 6, 6, 1))
    keras_seed(21)
    first = L.RandomRotation(0.3)(images).numpy()
    keras_seed(21)
    np.testing.assert_array_equal(L.RandomRotation(0.3)(images).numpy(), first)


def test_rotation_by_a_quarter_turn_is_rot90():
    images = _images((2, 6, 6, 1))
    out = L.RandomRotation((0.25, 0.25), interpolation="nearest")(images)
    np.testing.assert_array_equal(out.numpy(), np.rot90(images, 1, axes=(1, 2)))


@pytest.mark.parametrize("name,kwargs", [
    ("RandomRotation", dict(factor=0.2)),
    ("RandomZoom", dict(height_factor=0.3, width_factor=(-0.1, 0.4))),
    ("RandomTranslation", dict(height_factor=0.2, width_factor=0.1)),
])
def test_random_parameters_are_per_image_and_seeded(name, kwargs):
    images = np.repeat(_images((1, 8, 8, 1)), 6, axis=0)
    a, b = getattr(L, name)(seed=11, **kwargs), getattr(L, name)(seed=11, **kwargs)
    first = a(images).numpy()
    np.testing.assert_array_equal(first, b(images).numpy())  # same seed, same draws
    assert len({arr.tobytes() for arr in first}) == 6  # each image its own parameter
    assert not np.array_equal(a(images).numpy(), first)  # the next call draws anew


def test_rotation_angles_cover_the_factor_range(monkeypatch):
    seen = []
    real = image_transform.rotation_matrix

    def spy(angles, h, w):
        seen.extend(np.asarray(angles).tolist())
        return real(angles, h, w)
    monkeypatch.setattr(image_transform, "rotation_matrix", spy)
    layer = L.RandomRotation((-0.1, 0.2), seed=5)
    for _ in range(20):
        layer(_images((16, 4, 4, 1)))
    turns = np.array(seen) / (2 * np.pi)
    assert turns.min() >= -0.1 and turns.max() < 0.2
    assert abs(turns.mean() - 0.05) < 0.01  # uniform: mean 0.05, sd of the mean ~0.005


# ---- flips, contrast, brightness ---------------------------------------------------------
@pytest.mark.parametrize("mode", ["horizontal", "vertical", "horizontal_and_vertical"])
def test_random_flip(real_tf, tfk, mode):
    images = _images((64, 4, 5, 2))
    out = L.RandomFlip(mode, seed=3)(images).numpy()
    options = {"horizontal": [lambda x: x, lambda x: x[:, ::-1]],
               "vertical": [lambda x: x, lambda x: x[::-1]]}
    options["horizontal_and_vertical"] = [lambda x: x, lambda x: x[:, ::-1],
                                          lambda x: x[::-1], lambda x: x[::-1, ::-1]]
    picked = []
    for x, y in zip(images, out):
        matches = [i for i, f in enumerate(options[mode]) if np.array_equal(f(x), y)]
        assert len(matches) == 1
        picked.append(matches[0])
    counts = np.bincount(picked, minlength=len(options[mode]))
    assert counts.min() >= 64 // len(options[mode]) // 3  # every outcome, about evenly
    np.testing.assert_array_equal(L.RandomFlip(mode)(images, training=False).numpy(), images)
    ints = images.astype(np.uint8)
    assert L.RandomFlip(mode)(ints, training=False).dtype == np.float32  # tf-keras casts
    assert tfk.layers.RandomFlip(mode)(ints, training=False).dtype == "float32"
    assert _config(L.RandomFlip(mode, seed=2).get_config()) == _config(
        tfk.layers.RandomFlip(mode, seed=2).get_config())


@pytest.mark.parametrize("factor", [0.5, (0.2, 0.9), (0.0, 0.3)])
def test_random_contrast_is_adjust_contrast_by_a_drawn_factor(real_tf, factor):
    images = _images((3, 5, 6, 3))
    lower, upper = (factor, factor) if isinstance(factor, float) else factor
    for seed in range(5):
        out = L.RandomContrast(factor, seed=seed)(images).numpy()
        mean = images.mean(axis=(1, 2), keepdims=True)
        inside = (out > 0) & (out < 255) & (np.abs(images - mean) > 1)
        f = ((out - mean) / (images - mean))[inside]
        assert f.max() - f.min() < 1e-3  # one factor for the batch
        f = float(np.median(f))
        assert 1 - lower - 1e-6 <= f < 1 + upper + 1e-6
        want = real_tf.clip_by_value(real_tf.image.adjust_contrast(images, f), 0, 255).numpy()
        np.testing.assert_allclose(out, want, atol=0.05)


def test_random_contrast_edge_cases(tfk):
    images = _images((2, 3, 3, 1))
    for lib in (L, tfk.layers):
        with pytest.raises(ValueError, match="upper must be > lower"):
            lib.RandomContrast(0.0)(images)  # an empty range, refused at call by both
    np.testing.assert_array_equal(L.RandomContrast(0.3)(images, training=False).numpy(),
                                  images)


@pytest.mark.parametrize("kwargs", [
    dict(factor=(0.1, 0.1)), dict(factor=(-0.4, -0.4), value_range=(0, 1)),
    dict(factor=(0.5, 0.5), value_range=[-1, 1]),
])
def test_random_brightness_matches_tf_keras(tfk, kwargs):
    images = _images((2, 4, 5, 3))
    low, high = sorted(kwargs.get("value_range", (0, 255)))
    images = (images / 255 * (high - low) + low).astype(np.float32)
    ours, theirs = L.RandomBrightness(**kwargs), tfk.layers.RandomBrightness(**kwargs)
    np.testing.assert_allclose(ours(images).numpy(), theirs(images).numpy(), atol=1e-4)
    np.testing.assert_allclose(ours(images[0]).numpy(), theirs(images[0]).numpy(), atol=1e-4)
    assert _config(ours.get_config()) == _config(theirs.get_config())


def test_random_brightness_draws_per_image_deltas():
    images = np.full((32, 3, 3, 2), 100.0, np.float32)
    out = L.RandomBrightness(0.2, seed=1)(images).numpy()
    deltas = out[:, 0, 0, 0] - 100
    assert np.all(out == out[:, :1, :1, :1])  # one delta per image
    assert deltas.min() >= -51 and deltas.max() < 51 and len(set(deltas.tolist())) == 32
    with pytest.raises(ValueError, match="rank 3 or 4"):
        L.RandomBrightness(0.2)(np.zeros((2, 3), np.float32))


# ---- sizes ------------------------------------------------------------------------------
@pytest.mark.parametrize("interpolation", ["bilinear", "nearest", "bicubic", "area",
                                           "lanczos3", "lanczos5", "gaussian",
                                           "mitchellcubic"])
@pytest.mark.parametrize("crop", [False, True])
def test_resizing_matches_tf_keras(tfk, interpolation, crop):
    images = _images((2, 9, 12, 2))
    for size in [(5, 4), (13, 11), (9, 12)]:
        ours = L.Resizing(*size, interpolation=interpolation, crop_to_aspect_ratio=crop)
        theirs = tfk.layers.Resizing(*size, interpolation=interpolation,
                                     crop_to_aspect_ratio=crop)
        np.testing.assert_allclose(ours(images).numpy(), theirs(images).numpy(), atol=2e-3)
        np.testing.assert_allclose(ours(images[1]).numpy(), theirs(images[1]).numpy(),
                                   atol=2e-3)
    assert _config(ours.get_config()) == _config(theirs.get_config())


def test_resizing_integer_images_and_dtypes(tfk):
    ints = _images((1, 6, 6, 1)).astype(np.uint8)
    for interpolation in ("nearest", "bilinear"):
        ours = L.Resizing(4, 3, interpolation=interpolation)(ints)
        theirs = tfk.layers.Resizing(4, 3, interpolation=interpolation)(ints)
        assert ours.dtype == theirs.dtype == np.float32
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=1e-3)
    out = L.Resizing(3, 3, dtype="float64")(ints)
    assert out.dtype == np.float64


@pytest.mark.parametrize("size", [(5, 4), (8, 10), (12, 4), (3, 14)])
def test_center_crop_matches_tf_keras(tfk, size):
    images = _images()
    ours, theirs = L.CenterCrop(*size), tfk.layers.CenterCrop(*size)
    np.testing.assert_allclose(ours(images).numpy(), theirs(images).numpy(), atol=2e-3)
    np.testing.assert_allclose(ours(images[0]).numpy(), theirs(images[0]).numpy(), atol=2e-3)
    assert _config(ours.get_config()) == _config(theirs.get_config())


def test_center_crop_is_the_middle_window():
    images = _images((1, 7, 9, 1))
    np.testing.assert_array_equal(L.CenterCrop(3, 4)(images).numpy(), images[:, 2:5, 2:6])


def test_random_crop(tfk):
    images = _images((2, 8, 10, 3))
    layer = L.RandomCrop(5, 4, seed=9)
    offsets = set()
    for _ in range(12):
        out = layer(images).numpy()
        found = [(i, j) for i in range(4) for j in range(7)
                 if np.array_equal(images[:, i:i + 5, j:j + 4], out)]
        assert len(found) == 1  # one window, the same for the whole batch
        offsets.add(found[0])
    assert len(offsets) > 4
    theirs = tfk.layers.RandomCrop(5, 4)
    np.testing.assert_allclose(layer(images, training=False).numpy(),
                               theirs(images, training=False).numpy(), atol=2e-3)
    big = tfk.layers.RandomCrop(12, 4)  # larger than the image: resized, as at inference
    np.testing.assert_allclose(L.RandomCrop(12, 4)(images).numpy(), big(images).numpy(),
                               atol=2e-3)
    assert _config(L.RandomCrop(5, 4, seed=9).get_config()) == _config(
        tfk.layers.RandomCrop(5, 4, seed=9).get_config())


@pytest.mark.parametrize("name", ["RandomHeight", "RandomWidth"])
@pytest.mark.parametrize("factor,interpolation", [((0.5, 0.5), "bilinear"),
                                                  ((-0.4, -0.4), "nearest"),
                                                  ((0.25, 0.25), "bicubic")])
def test_random_height_width_match_tf_keras(tfk, name, factor, interpolation):
    images = _images()
    ours = getattr(L, name)(factor, interpolation=interpolation)
    theirs = getattr(tfk.layers, name)(factor, interpolation=interpolation)
    np.testing.assert_allclose(ours(images).numpy(), theirs(images).numpy(), atol=2e-3)
    np.testing.assert_array_equal(ours(images, training=False).numpy(), images)
    assert _config(ours.get_config()) == _config(theirs.get_config())
    assert ours.compute_output_shape((None, 8, 10, 3)).as_list() == \
        theirs.compute_output_shape((None, 8, 10, 3)).as_list()


def test_random_height_draws_in_range():
    images = _images((1, 10, 4, 1))
    heights = {L.RandomHeight((-0.5, 0.5), seed=s)(images).shape[1] for s in range(30)}
    assert heights <= set(range(5, 15)) and len(heights) > 5


# ---- arguments, configs ------------------------------------------------------------------
ERROR_CASES = [
    ("RandomFlip", dict(mode="diagonal"), ValueError, "unknown mode"),
    ("RandomRotation", dict(factor=(0.2, 0.1)), ValueError, "cannot have a negative value"),
    ("RandomRotation", dict(factor=0.1, fill_mode="mirror"), NotImplementedError,
     "Unknown `fill_mode`"),
    ("RandomRotation", dict(factor=0.1, interpolation="bicubic"), NotImplementedError,
     "Unknown `interpolation`"),
    ("RandomZoom", dict(height_factor=1.5), ValueError, "between \\[-1, 1\\]"),
    ("RandomZoom", dict(height_factor=0.2, width_factor=(-1.5, 0)), ValueError,
     "larger than -1"),
    ("RandomTranslation", dict(height_factor=(0.3, 0.1), width_factor=0.1), ValueError,
     "upper bound less than lower bound"),
    ("RandomTranslation", dict(height_factor=0.1, width_factor=1.2), ValueError,
     "between \\[-1, 1\\]"),
    ("RandomContrast", dict(factor=-0.1), ValueError, "cannot have negative values"),
    ("RandomContrast", dict(factor=(1.5, 0.2)), ValueError, "greater than 1"),
    ("RandomBrightness", dict(factor=1.5), ValueError, "in the range \\[-1.0, 1.0\\]"),
    ("RandomBrightness", dict(factor=(0.1, 0.2, 0.3)), ValueError, "list of two numbers"),
    ("RandomBrightness", dict(factor="big"), ValueError, "should be a number"),
    ("RandomBrightness", dict(factor=0.1, value_range=(0, 1, 2)), ValueError,
     "`value_range` argument"),
    ("RandomHeight", dict(factor=(0.3, 0.1)), ValueError, "upper bound lesser"),
    ("RandomHeight", dict(factor=(-1.5, 0.1)), ValueError, "larger than -1"),
    ("RandomWidth", dict(factor=(0.3, 0.1)), ValueError, "upper bound less than"),
    ("RandomWidth", dict(factor=0.1, interpolation="cubic"), NotImplementedError,
     "Value not recognized for `interpolation`"),
    ("Resizing", dict(height=3, width=3, interpolation="linear"), NotImplementedError,
     "Value not recognized for `interpolation`"),
]


@pytest.mark.parametrize("name,kwargs,error,match", ERROR_CASES)
def test_bad_arguments_raise_as_tf_keras(tfk, name, kwargs, error, match):
    with pytest.raises(error, match=match):
        getattr(tfk.layers, name)(**kwargs)
    with pytest.raises(error, match=match):
        getattr(L, name)(**kwargs)


def test_dict_inputs_are_refused():
    with pytest.raises(ValueError, match="keras_cv"):
        L.RandomFlip().call({"images": ig.constant(_images())})


CONFIG_CASES = [
    ("Resizing", dict(height=4, width=5, interpolation="area", crop_to_aspect_ratio=True)),
    ("CenterCrop", dict(height=4, width=5)),
    ("RandomCrop", dict(height=4, width=5, seed=3)),
    ("RandomFlip", dict(mode="vertical", seed=1)),
    ("RandomRotation", dict(factor=(-0.2, 0.3), fill_mode="constant", fill_value=1.0,
                            interpolation="nearest", seed=4)),
    ("RandomZoom", dict(height_factor=0.2, width_factor=(0.1, 0.3), fill_mode="wrap")),
    ("RandomTranslation", dict(height_factor=0.1, width_factor=(-0.2, 0.2), seed=2)),
    ("RandomContrast", dict(factor=(0.2, 0.4), seed=6)),
    ("RandomBrightness", dict(factor=-0.3, value_range=(255, 0), seed=7)),
    ("RandomHeight", dict(factor=(0.1, 0.5), interpolation="gaussian", seed=8)),
    ("RandomWidth", dict(factor=0.3)),
]


@pytest.mark.parametrize("name,kwargs", CONFIG_CASES)
def test_config_round_trip_matches_tf_keras(tfk, name, kwargs):
    ours, theirs = getattr(L, name)(**kwargs), getattr(tfk.layers, name)(**kwargs)
    assert _config(ours.get_config()) == _config(theirs.get_config())
    clone = getattr(L, name).from_config(ours.get_config())
    assert clone.get_config() == ours.get_config()
    again = L.deserialize(L.serialize(ours))
    assert type(again) is type(ours) and again.get_config() == ours.get_config()


def test_experimental_preprocessing_namespace():
    pre = keras.layers.experimental.preprocessing
    for name in ("Resizing", "CenterCrop", "RandomCrop", "RandomFlip", "RandomRotation",
                 "RandomZoom", "RandomTranslation", "RandomContrast", "RandomHeight",
                 "RandomWidth", "Rescaling"):
        assert getattr(pre, name) is getattr(keras.layers, name)
    assert ig.keras.layers.experimental.preprocessing.RandomFlip is L.RandomFlip


# ---- gradients, models, tf.data ---------------------------------------------------------
@pytest.mark.parametrize("layer_fn", [
    lambda lib: lib.Resizing(5, 7, interpolation="bicubic"),
    lambda lib: lib.Resizing(9, 3, crop_to_aspect_ratio=True),
    lambda lib: lib.CenterCrop(4, 12),
    lambda lib: lib.RandomBrightness((0.1, 0.1)),
    lambda lib: lib.RandomHeight((0.5, 0.5)),
])
def test_gradients_match_tf_keras(real_tf, tfk, layer_fn):
    images = _images((2, 6, 8, 2))
    u = np.random.default_rng(0).standard_normal(
        layer_fn(tfk.layers)(images).shape).astype(np.float32)
    x = ig.constant(images)
    with ig.GradientTape() as tape:
        tape.watch(x)
        loss = ig.reduce_sum(layer_fn(L)(x) * u)
    xt = real_tf.constant(images)
    with real_tf.GradientTape() as tape2:
        tape2.watch(xt)
        loss2 = real_tf.reduce_sum(layer_fn(tfk.layers)(xt) * u)
    np.testing.assert_allclose(tape.gradient(loss, x).numpy(), tape2.gradient(loss2, xt).numpy(),
                               atol=1e-3)


def test_augmentation_in_a_sequential_model_trains_and_is_identity_at_inference(keras_seed):
    keras_seed(0)
    rng = np.random.default_rng(0)
    x = _images((32, 8, 8, 1)) / 255
    y = rng.integers(0, 2, 32)
    model = keras.Sequential([
        keras.Input((8, 8, 1)), L.RandomFlip("horizontal", seed=1),
        L.RandomRotation(0.1, seed=2), L.RandomZoom(0.1, seed=3),
        L.RandomTranslation(0.1, 0.1, seed=4), L.RandomContrast(0.2, seed=5),
        L.Resizing(6, 6), L.Flatten(), L.Dense(2)])
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(x, y, batch_size=8, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2 and np.isfinite(history.history["loss"]).all()
    kernel, bias = model.layers[-1].get_weights()
    resized = L.Resizing(6, 6)(x).numpy().reshape(32, -1)
    np.testing.assert_allclose(model.predict(x, verbose=0), resized @ kernel + bias,
                               rtol=1e-4, atol=1e-5)
    assert model.layers[-1].input_shape == (None, 36)


def test_layers_in_tf_data_map(tfk):
    images = _images((6, 8, 10, 3))
    layers = [L.Resizing(4, 5), L.RandomRotation((0.1, 0.1)), L.CenterCrop(4, 4)]
    theirs = [tfk.layers.Resizing(4, 5), tfk.layers.RandomRotation((0.1, 0.1)),
              tfk.layers.CenterCrop(4, 4)]
    for ours_layer, their_layer in zip(layers, theirs):
        ds = ig.data.Dataset.from_tensor_slices(images).batch(3).map(ours_layer)
        got = np.concatenate([b.numpy() for b in ds])
        np.testing.assert_allclose(got, their_layer(images).numpy(), atol=2e-3)
    flip = ig.data.Dataset.from_tensor_slices(images).map(
        lambda im: L.RandomFlip("horizontal", seed=0)(im))
    for x, y in zip(images, flip):
        assert np.array_equal(y.numpy(), x) or np.array_equal(y.numpy(), x[:, ::-1])


def test_layers_on_tf1_graph_tensors():
    """On placeholders of an unknown batch (Graphcore's TF1 programs): each run computes on
    the fed values, random layers draw anew per run, a training placeholder fed False is
    the identity."""
    import ipu_gpu.compat.v1 as v1

    images = _images((2, 8, 10, 3))
    with v1.Graph().as_default():
        x = v1.placeholder("float32", [None, 8, 10, 3])
        training = v1.placeholder("bool", [])
        resized = L.Resizing(4, 5)(x)
        rotated = L.RandomRotation(0.2, seed=1)(x, training=training)
        flipped = L.RandomFlip(seed=2)(x)
        taller = L.RandomHeight(0.5, seed=3)(x)
        assert rotated.shape.as_list() == [None, 8, 10, 3]
        assert taller.shape.as_list() == [None, None, 10, 3]
        with v1.Session() as sess:
            np.testing.assert_allclose(sess.run(resized, {x: images}),
                                       L.Resizing(4, 5)(images).numpy(), atol=1e-4)
            runs = [sess.run(rotated, {x: images, training: True}) for _ in range(2)]
            assert not np.array_equal(runs[0], runs[1])
            np.testing.assert_array_equal(sess.run(rotated, {x: images, training: False}),
                                          images)
            flips = [sess.run(flipped, {x: images}) for _ in range(8)]
            assert len({f.tobytes() for f in flips}) > 1
            assert sess.run(taller, {x: images}).shape[2:] == (10, 3)
    with v1.Graph().as_default():  # height and width known only when the graph runs
        x = v1.placeholder("float32", [None, None, None, 3])
        layers = [L.Resizing(4, 5), L.Resizing(4, 5, crop_to_aspect_ratio=True),
                  L.CenterCrop(4, 4), L.CenterCrop(12, 3)]
        outputs = [layer(x) for layer in layers]
        assert [o.shape.as_list() for o in outputs] == [[None, 4, 5, 3], [None, 4, 5, 3],
                                                        [None, 4, 4, 3], [None, 12, 3, 3]]
        with v1.Session() as sess:
            got = sess.run(outputs, {x: images})
    for layer, out in zip(layers, got):
        np.testing.assert_allclose(out, layer(images).numpy(), atol=1e-4)


def test_models_with_preprocessing_layers_exchange_hdf5_with_tf_keras(tfk, tmp_path):
    x = _images((8, 6, 6, 1)) / 255

    def build(lib):
        norm = lib.layers.Normalization()
        norm.adapt(x)
        return lib.Sequential([
            lib.Input((6, 6, 1)), norm, lib.layers.RandomFlip(seed=1),
            lib.layers.RandomRotation(0.1, fill_mode="constant"), lib.layers.Resizing(4, 4),
            lib.layers.CenterCrop(3, 3), lib.layers.Flatten(), lib.layers.Dense(2)])
    theirs = build(tfk)
    with pytest.warns(UserWarning, match="This file format is considered legacy"):
        theirs.save(tmp_path / "theirs.h5")
    ours = keras.models.load_model(tmp_path / "theirs.h5")
    assert [type(layer).__name__ for layer in ours.layers] == [
        type(layer).__name__ for layer in theirs.layers]
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)
    mine = build(keras)
    mine.save(tmp_path / "ours.h5")
    back = tfk.models.load_model(tmp_path / "ours.h5")
    np.testing.assert_allclose(back.predict(x, verbose=0), mine.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)
    clone = keras.models.model_from_json(mine.to_json())
    assert clone.layers[1].get_config() == mine.layers[1].get_config()


def test_experimental_namespace_sync_batch_normalization_and_einsum_dense(tfk, real_tf):
    exp = keras.layers.experimental
    assert exp.EinsumDense is L.EinsumDense
    x = _images((6, 3, 4, 2)) / 255
    ours, theirs = exp.SyncBatchNormalization(momentum=0.8), \
        tfk.layers.experimental.SyncBatchNormalization(momentum=0.8)
    plain = L.BatchNormalization(momentum=0.8, synchronized=True)
    for layer in (ours, theirs, plain):
        layer(x[:1])
    want = theirs(x, training=True).numpy()
    for out in (ours(x, training=True), plain(x, training=True)):
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert ours.synchronized
    assert _config(ours.get_config()) == _config(theirs.get_config())
    clone = exp.SyncBatchNormalization.from_config(ours.get_config())
    assert clone.synchronized and clone.get_config() == ours.get_config()
    with pytest.raises(ValueError, match="`fused=True` is not supported"):
        exp.SyncBatchNormalization(fused=True)
    again = L.deserialize(tfk.layers.serialize(theirs))  # configs saved by tf-keras
    assert type(again) is exp.SyncBatchNormalization
