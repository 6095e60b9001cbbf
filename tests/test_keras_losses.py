"""ipu_gpu.keras.losses against a float64 numpy reference of Keras 2's formulas and against
tf-keras (the Keras 2 oracle), plus finite-difference gradients and bad inputs.

The reference below imports nothing from ipu_gpu. TensorFlow is imported only through the
``real_tf`` fixture; the tf-keras comparisons skip without it.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ipu_gpu
from ipu_gpu.keras import losses

EPS = 1e-7


# ---- float64 reference (Keras 2's formulas, plain numpy) ---------------------------------------

def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _log_softmax(x, axis=-1):
    z = x - x.max(axis=axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


def _binary_labels(y):
    return 2.0 * y - 1.0 if np.all((y == 0) | (y == 1)) else y


REFERENCE = {
    "mean_squared_error": lambda t, p: np.mean((p - t) ** 2, axis=-1),
    "mean_absolute_error": lambda t, p: np.mean(np.abs(p - t), axis=-1),
    "mean_absolute_percentage_error": lambda t, p: 100.0 * np.mean(
        np.abs((t - p) / np.maximum(np.abs(t), EPS)), axis=-1),
    "mean_squared_logarithmic_error": lambda t, p: np.mean(
        (np.log(np.maximum(p, EPS) + 1.0) - np.log(np.maximum(t, EPS) + 1.0)) ** 2, axis=-1),
    "binary_crossentropy": lambda t, p: np.mean(-(
        t * np.log(np.clip(p, EPS, 1 - EPS) + EPS)
        + (1 - t) * np.log(1 - np.clip(p, EPS, 1 - EPS) + EPS)), axis=-1),
    "binary_crossentropy_logits": lambda t, z: np.mean(
        np.maximum(z, 0) - z * t + np.log1p(np.exp(-np.abs(z))), axis=-1),
    "categorical_crossentropy": lambda t, p: -np.sum(
        t * np.log(np.clip(p / p.sum(-1, keepdims=True), EPS, 1 - EPS)), axis=-1),
    "categorical_crossentropy_logits": lambda t, z: -np.sum(t * _log_softmax(z), axis=-1),
    "sparse_categorical_crossentropy": lambda t, p: -np.take_along_axis(
        _log_softmax(np.log(np.clip(p, EPS, 1 - EPS))), t[..., None].astype(int), -1)[..., 0],
    "sparse_categorical_crossentropy_logits": lambda t, z: -np.take_along_axis(
        _log_softmax(z), t[..., None].astype(int), -1)[..., 0],
    "hinge": lambda t, p: np.mean(np.maximum(1.0 - _binary_labels(t) * p, 0.0), axis=-1),
    "squared_hinge": lambda t, p: np.mean(
        np.maximum(1.0 - _binary_labels(t) * p, 0.0) ** 2, axis=-1),
    "categorical_hinge": lambda t, p: np.maximum(
        np.max((1 - t) * p, axis=-1) - np.sum(t * p, axis=-1) + 1.0, 0.0),
    "huber": lambda t, p: np.mean(np.where(
        np.abs(p - t) <= 1.0, 0.5 * (p - t) ** 2, np.abs(p - t) - 0.5), axis=-1),
    "kl_divergence": lambda t, p: np.sum(
        np.clip(t, EPS, 1) * np.log(np.clip(t, EPS, 1) / np.clip(p, EPS, 1)), axis=-1),
    "poisson": lambda t, p: np.mean(p - t * np.log(p + EPS), axis=-1),
    "log_cosh": lambda t, p: np.mean(np.log(np.cosh(p - t)), axis=-1),
    "cosine_similarity": lambda t, p: -np.sum(
        t / np.linalg.norm(t, axis=-1, keepdims=True)
        * p / np.linalg.norm(p, axis=-1, keepdims=True), axis=-1),
}


# ---- inputs -----------------------------------------------------------------------------------

def _inputs(name, shape=(5, 4), seed=0):
    """(y_true, y_pred, kwargs) for loss ``name`` (a REFERENCE key), float64."""
    rng = np.random.default_rng(seed)
    kwargs = {}
    base = name.replace("_logits", "")
    if name.endswith("_logits"):
        kwargs["from_logits"] = True
    real = rng.standard_normal(shape)
    probs = _softmax(rng.standard_normal(shape))
    unit = rng.uniform(0.05, 0.95, shape)
    one_hot = np.eye(shape[-1])[rng.integers(0, shape[-1], shape[:-1])]
    if base in ("binary_crossentropy",):
        y_true = rng.integers(0, 2, shape).astype(np.float64)
        y_pred = real if kwargs else unit
    elif base == "categorical_crossentropy":
        y_true, y_pred = one_hot, (real if kwargs else probs)
    elif base == "sparse_categorical_crossentropy":
        y_true = rng.integers(0, shape[-1], shape[:-1]).astype(np.float64)
        y_pred = real if kwargs else probs
    elif base == "kl_divergence":
        y_true, y_pred = _softmax(rng.standard_normal(shape)), probs
    elif base in ("hinge", "squared_hinge"):
        y_true, y_pred = rng.integers(0, 2, shape).astype(np.float64), real
    elif base == "categorical_hinge":
        y_true, y_pred = one_hot, real
    elif base in ("mean_squared_logarithmic_error", "poisson"):
        y_true, y_pred = rng.uniform(0, 3, shape), rng.uniform(0.1, 3, shape)
    elif base == "mean_absolute_percentage_error":
        y_true, y_pred = rng.uniform(0.5, 2, shape) * rng.choice([-1, 1], shape), real
    elif base == "huber":
        y_true, y_pred = rng.standard_normal(shape), 2 * real
    else:
        y_true, y_pred = rng.standard_normal(shape), real
    return y_true, y_pred, kwargs


def _function(name):
    return getattr(losses, name.replace("_logits", ""))


@pytest.fixture(scope="module")
def tf_keras(real_tf):
    """tf-keras (the Keras 2 oracle), imported after TensorFlow's fixture set it up."""
    return pytest.importorskip("tf_keras")


# ---- function forms ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_function_matches_float64_reference(name):
    y_true, y_pred, kwargs = _inputs(name)
    if name == "huber":  # Keras computes huber in floatx (float32) whatever the inputs
        ours = losses.huber(ipu_gpu.constant(y_true), ipu_gpu.constant(y_pred))
        assert ours.dtype == np.float32
        np.testing.assert_allclose(ours.numpy(), REFERENCE[name](y_true, y_pred), rtol=1e-6)
        return
    ours = _function(name)(ipu_gpu.constant(y_true), ipu_gpu.constant(y_pred), **kwargs)
    assert ours.dtype == np.float64
    assert ours.shape == y_pred.shape[:-1]
    np.testing.assert_allclose(ours.numpy(), REFERENCE[name](y_true, y_pred), rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("name", sorted(REFERENCE))
@pytest.mark.parametrize("shape", [(5, 4), (1, 1), (2, 3, 4)], ids=str)
def test_function_matches_tf_keras(tf_keras, real_tf, name, shape):
    if name.startswith("sparse") and shape == (1, 1):
        shape = (1, 2)
    y_true, y_pred, kwargs = _inputs(name, shape, seed=1)
    y_true, y_pred = y_true.astype(np.float32), y_pred.astype(np.float32)
    with warnings.catch_warnings(record=True) as caught:  # Keras warns about one class
        warnings.simplefilter("always", SyntaxWarning)
        ours = _function(name)(ipu_gpu.constant(y_true), ipu_gpu.constant(y_pred), **kwargs)
        theirs = getattr(tf_keras.losses, name.replace("_logits", ""))(
            real_tf.constant(y_true), real_tf.constant(y_pred), **kwargs)
    assert len(caught) == (2 if name.startswith("categorical_cross") and shape[-1] == 1
                           else 0)
    assert ours.dtype == np.dtype(theirs.dtype.as_numpy_dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("name", ["mean_squared_error", "binary_crossentropy",
                                  "categorical_crossentropy", "sparse_categorical_crossentropy",
                                  "kl_divergence", "poisson", "log_cosh", "hinge",
                                  "sparse_categorical_crossentropy_logits",
                                  "categorical_crossentropy_logits",
                                  "binary_crossentropy_logits", "cosine_similarity"])
def test_float16_matches_tf_keras(tf_keras, real_tf, name):
    y_true, y_pred, kwargs = _inputs(name, seed=2)
    y_true, y_pred = y_true.astype(np.float16), y_pred.astype(np.float16)
    ours = _function(name)(ipu_gpu.constant(y_true), ipu_gpu.constant(y_pred), **kwargs)
    theirs = getattr(tf_keras.losses, name.replace("_logits", ""))(
        real_tf.constant(y_true), real_tf.constant(y_pred), **kwargs)
    assert ours.dtype == np.float16 == theirs.dtype.as_numpy_dtype
    np.testing.assert_allclose(ours.numpy().astype(np.float32),
                               theirs.numpy().astype(np.float32), rtol=5e-3, atol=5e-3)


@pytest.mark.parametrize("kwargs", [dict(label_smoothing=0.2), dict(axis=0),
                                    dict(from_logits=True, label_smoothing=0.1, axis=0)],
                         ids=str)
@pytest.mark.parametrize("name", ["binary_crossentropy", "categorical_crossentropy"])
def test_crossentropy_options_match_tf_keras(tf_keras, real_tf, name, kwargs):
    y_true, y_pred, _ = _inputs(name, (4, 5), seed=3)
    if kwargs.get("from_logits"):
        y_pred = np.log(y_pred)
    y_true, y_pred = y_true.astype(np.float32), y_pred.astype(np.float32)
    ours = getattr(losses, name)(y_true, y_pred, **kwargs)
    theirs = getattr(tf_keras.losses, name)(y_true, y_pred, **kwargs)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=2e-6, atol=2e-6)


def test_sparse_categorical_options_match_tf_keras(tf_keras, real_tf):
    rng = np.random.default_rng(4)
    logits = rng.standard_normal((3, 5, 4)).astype(np.float32)
    for labels, kwargs in [(rng.integers(0, 5, (3, 4)), dict(axis=1, from_logits=True)),
                           (rng.integers(0, 4, (3, 5, 1)), dict(from_logits=True)),
                           (rng.integers(0, 4, (3, 5)), dict(ignore_class=2)),
                           (rng.integers(0, 4, (3, 5)).astype(np.float32), {})]:
        probs = logits if kwargs.get("from_logits") else _softmax(logits, -1)
        ours = losses.sparse_categorical_crossentropy(labels, probs, **kwargs)
        theirs = tf_keras.losses.sparse_categorical_crossentropy(labels, probs, **kwargs)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=2e-6, atol=2e-6)


def test_huber_delta_and_aliases(tf_keras):
    y_true, y_pred, _ = _inputs("huber", seed=5)
    for delta in (0.5, 2.0):
        np.testing.assert_allclose(losses.huber(y_true, y_pred, delta=delta).numpy(),
                                   tf_keras.losses.huber(y_true, y_pred, delta=delta).numpy(),
                                   rtol=2e-6)
    for alias in ["mse", "MSE", "mae", "MAE", "mape", "MAPE", "msle", "MSLE", "kld", "KLD",
                  "kullback_leibler_divergence", "logcosh"]:
        assert getattr(losses, alias).__name__ == getattr(tf_keras.losses, alias).__name__
    # Keras 2's losses.py aliases that its public API does not export
    assert losses.huber_loss is losses.huber and losses.bce is losses.BCE is \
        losses.binary_crossentropy


# ---- Loss classes: weighting and reduction ----

CLASSES = [("MeanSquaredError", "mean_squared_error", {}),
           ("MeanAbsoluteError", "mean_absolute_error", {}),
           ("MeanAbsolutePercentageError", "mean_absolute_percentage_error", {}),
           ("MeanSquaredLogarithmicError", "mean_squared_logarithmic_error", {}),
           ("BinaryCrossentropy", "binary_crossentropy", {}),
           ("BinaryCrossentropy", "binary_crossentropy_logits", {"from_logits": True}),
           ("CategoricalCrossentropy", "categorical_crossentropy", {"label_smoothing": 0.1}),
           ("SparseCategoricalCrossentropy", "sparse_categorical_crossentropy", {}),
           ("SparseCategoricalCrossentropy", "sparse_categorical_crossentropy_logits",
            {"from_logits": True}),
           ("CosineSimilarity", "cosine_similarity", {}),
           ("Hinge", "hinge", {}), ("SquaredHinge", "squared_hinge", {}),
           ("CategoricalHinge", "categorical_hinge", {}), ("Poisson", "poisson", {}),
           ("LogCosh", "log_cosh", {}), ("KLDivergence", "kl_divergence", {}),
           ("Huber", "huber", {"delta": 0.7})]

WEIGHTS = [None, 2.5, "per_sample", "per_sample_column", "per_element"]
REDUCTIONS = ["auto", "none", "sum", "sum_over_batch_size"]


def _weight(kind, y_pred, y_true, rng):
    n = y_pred.shape[0]
    if kind == "per_sample":
        return rng.uniform(0, 2, n).astype(np.float32)
    if kind == "per_sample_column":
        return rng.uniform(0, 2, (n, 1)).astype(np.float32)
    if kind == "per_element":  # one weight per per-sample loss entry
        return rng.uniform(0, 2, y_true.shape[:1]).astype(np.float32)
    return kind


@pytest.mark.parametrize("cls,name,kwargs", CLASSES, ids=lambda x: str(x))
def test_loss_class_matches_tf_keras(tf_keras, real_tf, cls, name, kwargs):
    rng = np.random.default_rng(6)
    y_true, y_pred, _ = _inputs(name, (6, 3), seed=6)
    y_true, y_pred = y_true.astype(np.float32), y_pred.astype(np.float32)
    for reduction in REDUCTIONS:
        ours_loss = getattr(losses, cls)(reduction=reduction, **kwargs)
        theirs_loss = getattr(tf_keras.losses, cls)(reduction=reduction, **kwargs)
        for kind in WEIGHTS:
            w = _weight(kind, y_pred, y_true, rng)
            for wrap_ours, wrap_theirs in [(ipu_gpu.constant, real_tf.constant),
                                           (np.asarray, np.asarray)]:
                args = (wrap_ours(y_true), wrap_ours(y_pred))
                ours = ours_loss(*args, sample_weight=w)
                theirs = theirs_loss(wrap_theirs(y_true), wrap_theirs(y_pred), sample_weight=w)
                assert tuple(ours.shape) == tuple(theirs.shape), (reduction, kind)
                np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=3e-6, atol=3e-6,
                                           err_msg=f"{reduction} {kind}")
    ours_config = getattr(losses, cls)(**kwargs).get_config()
    theirs_config = getattr(tf_keras.losses, cls)(**kwargs).get_config()
    theirs_config.pop("fn", None)  # tf-keras's newer saving format
    assert ours_config == theirs_config


@pytest.mark.parametrize("cls,name,kwargs", [CLASSES[0], CLASSES[4], CLASSES[6], CLASSES[7]],
                         ids=lambda x: str(x))
def test_edge_shapes_match_tf_keras(tf_keras, real_tf, cls, name, kwargs):
    for shape in [(0, 3), (1, 3), (1, 1)]:
        if name.startswith("sparse") and shape[-1] == 1:
            continue
        y_true, y_pred, _ = _inputs(name, shape, seed=7)
        y_true, y_pred = y_true.astype(np.float32), y_pred.astype(np.float32)
        warnings.simplefilter("ignore", SyntaxWarning)  # categorical with one class
        for reduction in REDUCTIONS:
            for w in (None, np.ones(shape[0], np.float32)):
                ours = getattr(losses, cls)(reduction=reduction, **kwargs)(
                    ipu_gpu.constant(y_true), ipu_gpu.constant(y_pred), sample_weight=w)
                theirs = getattr(tf_keras.losses, cls)(reduction=reduction, **kwargs)(
                    real_tf.constant(y_true), real_tf.constant(y_pred), sample_weight=w)
                assert tuple(ours.shape) == tuple(theirs.shape)
                np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=2e-6, atol=2e-6)


def test_sparse_ignore_class_masks_the_average(tf_keras, real_tf):
    rng = np.random.default_rng(8)
    labels = np.array([[0, 2, 1], [2, 2, 0]])
    probs = _softmax(rng.standard_normal((2, 3, 3))).astype(np.float32)
    for reduction in REDUCTIONS:
        for w in (None, np.array([1.0, 3.0], np.float32)):
            ours = losses.SparseCategoricalCrossentropy(ignore_class=2, reduction=reduction)(
                labels, probs, sample_weight=w)
            theirs = tf_keras.losses.SparseCategoricalCrossentropy(
                ignore_class=2, reduction=reduction)(labels, probs, sample_weight=w)
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=2e-6, atol=2e-6)


def test_reduction_arithmetic():
    y_true = np.zeros((2, 3), np.float32)
    y_pred = np.array([[1, 1, 1], [2, 2, 2]], np.float32)  # per-sample mse: 1, 4
    w = np.array([1.0, 0.5], np.float32)
    r = losses.Reduction
    assert float(losses.MeanSquaredError()(y_true, y_pred)) == 2.5
    assert float(losses.MeanSquaredError(reduction=r.SUM)(y_true, y_pred, w)) == 3.0
    assert float(losses.MeanSquaredError()(y_true, y_pred, w)) == 1.5
    np.testing.assert_array_equal(
        losses.MeanSquaredError(reduction=r.NONE)(y_true, y_pred, w).numpy(), [1.0, 2.0])
    assert float(losses.MeanSquaredError()(y_true, y_pred, 0.0)) == 0.0
    assert r.all() == ("auto", "none", "sum", "sum_over_batch_size")
    assert float(losses.compute_weighted_loss(np.array([1, 2, 3]), reduction="sum")) == 6
    assert losses.compute_weighted_loss(np.array([1, 2, 3])).dtype == np.int64


# ---- gradients ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_finite_difference_gradient(name):
    """<grad L(y_pred), v> against (L(y_pred + e v) - L(y_pred - e v)) / 2e, float64, with a
    random sample weight and the default reduction."""
    y_true, y_pred, kwargs = _inputs(name, (4, 3), seed=9)
    rng = np.random.default_rng(10)
    v = rng.standard_normal(y_pred.shape)
    w = rng.uniform(0.5, 1.5, y_pred.shape[0])
    fn = _function(name)
    if name == "huber":
        y_true, y_pred, v = (a.astype(np.float32) for a in (y_true, y_pred, v))
        w = w.astype(np.float32)
    loss = losses.LossFunctionWrapper(fn, **kwargs)

    def value(p):
        return float(loss(ipu_gpu.constant(y_true), ipu_gpu.constant(p), sample_weight=w))

    x = ipu_gpu.Variable(y_pred)
    with ipu_gpu.GradientTape() as tape:
        out = loss(ipu_gpu.constant(y_true), x, sample_weight=w)
    g = tape.gradient(out, x).numpy()
    e = 1e-3 if name == "huber" else 1e-6
    numeric = (value(y_pred + e * v) - value(y_pred - e * v)) / (2 * e)
    tol = 2e-3 if name == "huber" else 1e-6
    np.testing.assert_allclose(np.sum(g * v), numeric, rtol=tol, atol=tol)


# ---- bad inputs ----

def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the exception itself is the result
        return e
    raise AssertionError("no error raised")


def test_bad_arguments_raise_as_keras(tf_keras):
    ours = _error(lambda: losses.MeanSquaredError(reduction="mean"))
    theirs = _error(lambda: tf_keras.losses.MeanSquaredError(reduction="mean"))
    assert type(ours) is type(theirs) is ValueError and str(ours) == str(theirs)
    ours = _error(lambda: losses.categorical_crossentropy([[0, 1]], [[0.5, 0.5]], axis=True))
    theirs = _error(lambda: tf_keras.losses.categorical_crossentropy([[0, 1]], [[0.5, 0.5]],
                                                                     axis=True))
    assert type(ours) is type(theirs) is ValueError and str(ours) == str(theirs)
    y = np.ones((2, 3), np.float32)
    ours = _error(lambda: losses.categorical_crossentropy(y, np.ones((2, 4), np.float32)))
    theirs = _error(lambda: tf_keras.losses.categorical_crossentropy(
        y, np.ones((2, 4), np.float32)))
    assert type(ours) is type(theirs) is ValueError and str(ours) == str(theirs)


def test_bad_inputs_name_the_argument():
    y = np.ones((2, 3), np.float32)
    with pytest.raises(TypeError, match="y_true must be a numeric tensor"):
        losses.mean_squared_error(np.array([["a", "b", "c"]] * 2), y)
    with pytest.raises(ValueError, match="subtract"):
        losses.mean_squared_error(np.ones((2, 4), np.float32), y)
    with pytest.raises(ipu_gpu.errors.InvalidArgumentError, match="sample_weight"):
        losses.MeanSquaredError()(y, y, sample_weight=np.ones(3, np.float32))
    with pytest.raises(TypeError, match="sample_weight must be a numeric tensor"):
        losses.MeanSquaredError()(y, y, sample_weight=np.array(["x", "y"]))
    with pytest.raises(ValueError, match="y_true must hold one class index per prediction"):
        losses.sparse_categorical_crossentropy(np.zeros((2, 2, 2)), y)
    with pytest.raises(ValueError, match=r"labels must be in \[0, 3\), got 3"):
        losses.sparse_categorical_crossentropy(np.array([0, 3]), y)
    with pytest.raises(TypeError, match="y_pred must be a floating-point tensor"):
        losses.sparse_categorical_crossentropy(np.array([0, 1]), np.ones((2, 3), np.int32))
    with pytest.warns(SyntaxWarning, match="expected y_pred.shape to be"):
        losses.categorical_crossentropy(np.ones((2, 1)), np.ones((2, 1)))


def _strategy():
    """A one-replica tf.distribute strategy (the base class, as the emulator's strategies)."""
    from ipu_gpu import distribute

    strategy = distribute.Strategy.__new__(distribute.Strategy)
    distribute.Strategy.__init__(strategy, distribute.StrategyExtended(strategy))
    return strategy


def test_strategy_requires_an_explicit_reduction():
    y = np.ones((2, 3), np.float32)
    with _strategy().scope():
        with pytest.raises(ValueError, match="Please use `tf.keras.losses.Reduction.SUM`"):
            losses.MeanSquaredError()(y, y)
        assert float(losses.MeanSquaredError(reduction="sum")(y, y)) == 0.0
        allowed = losses.MeanSquaredError()
        allowed._allow_sum_over_batch_size = True  # what compile() does
        assert float(allowed(y, y)) == 0.0
    assert float(losses.MeanSquaredError()(y, y)) == 0.0


# ---- get / serialize -----------------------------------------------------------------------------

def test_get_serialize_deserialize(tf_keras):
    assert losses.get("mse") is losses.mean_squared_error
    assert losses.get("categorical_crossentropy") is losses.categorical_crossentropy
    assert isinstance(losses.get("MeanSquaredError"), losses.MeanSquaredError)
    assert losses.get(None) is None
    assert losses.get(losses.hinge) is losses.hinge
    obj = losses.BinaryCrossentropy(from_logits=True, label_smoothing=0.1, reduction="sum")
    config = losses.serialize(obj)
    theirs = tf_keras.losses.serialize(
        tf_keras.losses.BinaryCrossentropy(from_logits=True, label_smoothing=0.1,
                                           reduction="sum"), use_legacy_format=True)
    assert theirs["config"].pop("fn") == "binary_crossentropy"  # tf-keras's newer key
    assert config == theirs
    again = losses.get(config)
    assert type(again) is losses.BinaryCrossentropy and again.get_config() == obj.get_config()
    theirs["config"]["fn"] = "binary_crossentropy"  # read back from tf-keras's form too
    assert losses.get(theirs).get_config() == obj.get_config()
    assert losses.serialize(losses.mse) == "mean_squared_error"
    ours = _error(lambda: losses.get("nope"))
    theirs = _error(lambda: tf_keras.losses.get("nope"))
    assert type(ours) is type(theirs) is ValueError
    assert str(theirs).startswith(str(ours))
    with pytest.raises(ValueError, match="Could not interpret loss function identifier: 3"):
        losses.get(3)
    assert losses.is_categorical_crossentropy(losses.CategoricalCrossentropy())
    assert losses.is_categorical_crossentropy("categorical_crossentropy")
    assert not losses.is_categorical_crossentropy(losses.mse)


def test_losses_on_each_backend(backend):
    """numpy labels and weights beside predictions on the backend under test (GPU: copied to
    the device, as TF places them) give the CPU's values."""
    y_true, y_pred, _ = _inputs("sparse_categorical_crossentropy", (6, 4), seed=11)
    w = np.linspace(0.5, 1.5, 6)
    pred = ipu_gpu.constant(y_pred)
    assert pred.device == ipu_gpu.constant(0.0).device
    got = [losses.SparseCategoricalCrossentropy()(y_true, pred, sample_weight=w),
           losses.MeanSquaredError(reduction="none")(np.eye(4)[y_true.astype(int)], pred),
           losses.Huber()(np.ones((6, 4)), pred), losses.cosine_similarity(np.ones((6, 4)), pred),
           losses.categorical_crossentropy(np.eye(4)[y_true.astype(int)], pred,
                                           label_smoothing=0.1)]
    expected = [REFERENCE["sparse_categorical_crossentropy"](y_true, y_pred) @ w / 6,
                REFERENCE["mean_squared_error"](np.eye(4)[y_true.astype(int)], y_pred),
                np.mean(REFERENCE["huber"](np.ones((6, 4)), y_pred)),
                REFERENCE["cosine_similarity"](np.ones((6, 4)), y_pred),
                REFERENCE["categorical_crossentropy"](
                    np.eye(4)[y_true.astype(int)] * 0.9 + 0.025, y_pred)]
    for a, b in zip(got, expected):
        assert a.device == pred.device
        np.testing.assert_allclose(a.numpy(), b, rtol=1e-6)


def test_backend_epsilon_is_the_clipping_bound():
    from ipu_gpu.keras import backend

    y_true, y_pred = np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]])
    before = float(losses.binary_crossentropy(y_true, y_pred)[0])
    backend.set_epsilon(1e-3)
    try:
        after = float(losses.binary_crossentropy(y_true, y_pred)[0])
    finally:
        backend.set_epsilon(1e-7)
    assert np.isclose(before, -np.log(2e-7), rtol=1e-4)
    assert np.isclose(after, -np.log(2e-3), rtol=1e-4)
