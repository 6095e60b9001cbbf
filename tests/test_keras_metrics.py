"""ipu_gpu.keras.metrics against tf-keras (the Keras 2 oracle): the same batches (with and
without sample weights) through both, results and state compared after each; metric
functions, edge cases, errors, serialization and compile's metric resolution.

TensorFlow is imported only through the ``real_tf`` fixture; these tests skip without tf-keras.
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import ipu_gpu
from ipu_gpu.keras import losses, metrics


@pytest.fixture(scope="module")
def tf_keras(real_tf):
    """tf-keras (the Keras 2 oracle), imported after TensorFlow's fixture set it up."""
    return pytest.importorskip("tf_keras")


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _batches(kind, seed, n=12, classes=4):
    """Three (y_true, y_pred, sample_weight) batches for metrics of ``kind``."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(3):
        w = [None, rng.uniform(0, 2, n).astype(np.float32), np.float32(0.5)][i]
        if kind == "binary":
            y_true = rng.integers(0, 2, (n, 3)).astype(np.float32)
            y_pred = rng.uniform(0, 1, (n, 3)).astype(np.float32)
        elif kind == "binary1":
            y_true = rng.integers(0, 2, (n, 1)).astype(np.float32)
            y_pred = rng.uniform(0, 1, (n, 1)).astype(np.float32)
        elif kind == "categorical":
            y_true = np.eye(classes, dtype=np.float32)[rng.integers(0, classes, n)]
            y_pred = _softmax(rng.standard_normal((n, classes))).astype(np.float32)
        elif kind == "sparse":
            y_true = rng.integers(0, classes, n)
            y_pred = _softmax(rng.standard_normal((n, classes))).astype(np.float32)
        elif kind == "sparse_column":
            y_true = rng.integers(0, classes, (n, 1))
            y_pred = _softmax(rng.standard_normal((n, classes))).astype(np.float32)
        elif kind == "exact":
            y_true = rng.integers(0, 3, (n, 2)).astype(np.float32)
            y_pred = rng.integers(0, 3, (n, 2)).astype(np.float32)
        else:  # regression
            y_true = rng.standard_normal((n, 3)).astype(np.float32)
            y_pred = rng.standard_normal((n, 3)).astype(np.float32)
            if kind == "positive":
                y_true, y_pred = np.abs(y_true), np.abs(y_pred) + 0.1
        out.append((y_true, y_pred, w))
    return out


CASES = [
    ("Accuracy", {}, "exact"),
    ("BinaryAccuracy", {}, "binary"),
    ("BinaryAccuracy", {"threshold": 0.7}, "binary1"),
    ("CategoricalAccuracy", {}, "categorical"),
    ("SparseCategoricalAccuracy", {}, "sparse"),
    ("SparseCategoricalAccuracy", {}, "sparse_column"),
    ("TopKCategoricalAccuracy", {"k": 2}, "categorical"),
    ("SparseTopKCategoricalAccuracy", {"k": 2}, "sparse"),
    ("SparseTopKCategoricalAccuracy", {}, "sparse_column"),
    ("MeanSquaredError", {}, "regression"),
    ("MeanAbsoluteError", {}, "regression"),
    ("RootMeanSquaredError", {}, "regression"),
    ("MeanAbsolutePercentageError", {}, "regression"),
    ("MeanSquaredLogarithmicError", {}, "positive"),
    ("Hinge", {}, "binary"), ("SquaredHinge", {}, "binary"),
    ("CategoricalHinge", {}, "categorical"), ("KLDivergence", {}, "categorical"),
    ("Poisson", {}, "positive"), ("LogCoshError", {}, "regression"),
    ("CosineSimilarity", {}, "regression"),
    ("BinaryCrossentropy", {"label_smoothing": 0.1}, "binary"),
    ("CategoricalCrossentropy", {}, "categorical"),
    ("SparseCategoricalCrossentropy", {}, "sparse"),
    ("Precision", {}, "binary"),
    ("Precision", {"thresholds": [0.0, 0.5, 1.0]}, "binary"),
    ("Precision", {"top_k": 2}, "binary"),
    ("Recall", {"thresholds": [0.2, 0.5, 0.9]}, "binary"),
    ("Recall", {"class_id": 1}, "binary"),
    ("TruePositives", {}, "binary"), ("FalsePositives", {"thresholds": [0.3, 0.6]}, "binary"),
    ("TrueNegatives", {}, "binary1"), ("FalseNegatives", {}, "binary"),
    ("AUC", {}, "binary"),
    ("AUC", {"num_thresholds": 7, "curve": "PR"}, "binary"),
    ("AUC", {"curve": "PR", "summation_method": "minoring"}, "binary"),
    ("AUC", {"summation_method": "majoring", "thresholds": [0.25, 0.6]}, "binary1"),
    ("AUC", {"curve": "PR_GAIN"}, "binary"),
    ("AUC", {"label_weights": [1.0, 2.0, 0.5]}, "binary"),
    ("AUC", {"multi_label": True, "num_thresholds": 11}, "binary"),
    ("AUC", {"multi_label": True, "thresholds": [0.3, 0.5],
             "label_weights": [1.0, 0.0, 3.0]}, "binary"),
    ("AUC", {"from_logits": True, "num_thresholds": 50}, "regression"),
]


@pytest.mark.parametrize("name,kwargs,kind", CASES, ids=lambda x: str(x))
def test_metric_matches_tf_keras(tf_keras, real_tf, name, kwargs, kind):
    ours = getattr(metrics, name)(**kwargs)
    theirs = getattr(tf_keras.metrics, name)(**kwargs)
    for y_true, y_pred, w in _batches(kind, seed=len(name)):
        a = ours(y_true, y_pred, sample_weight=w)
        b = theirs(y_true, y_pred, sample_weight=w)
        assert isinstance(a, ipu_gpu.Tensor) and tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=3e-6, atol=3e-6)
    assert len(ours.variables) == len(theirs.variables)
    for v, w in zip(ours.variables, theirs.variables):
        assert v.name == w.name and not v.trainable
        np.testing.assert_allclose(v.numpy(), w.numpy(), rtol=3e-6, atol=3e-5)
    assert ours.dtype == theirs.dtype == "float32"
    ours.reset_state()
    theirs.reset_state()
    np.testing.assert_array_equal(ours.result().numpy(), theirs.result().numpy())
    ours_config, theirs_config = ours.get_config(), theirs.get_config()
    theirs_config["name"] = ours_config["name"]  # automatic names depend on the order
    if isinstance(theirs_config.get("label_weights"), np.ndarray):
        theirs_config["label_weights"] = theirs_config["label_weights"].tolist()
    assert ours_config == theirs_config
    again = type(ours).from_config(ours_config)
    assert again.get_config() == ours_config


def test_mean_and_sum_match_tf_keras(tf_keras):
    rng = np.random.default_rng(0)
    for name in ("Mean", "Sum"):
        ours, theirs = getattr(metrics, name)(), getattr(tf_keras.metrics, name)()
        for values, w in [(rng.standard_normal(5), None), (rng.standard_normal((4, 3)),
                                                           rng.uniform(0, 1, 4)),
                          (rng.standard_normal((4, 3)), rng.uniform(0, 1, (4, 3))),
                          (rng.standard_normal((2, 3, 2)), rng.uniform(0, 1, (2, 1))),
                          (np.zeros((0,)), None), (7.0, 2.0)]:
            a = ours(values, sample_weight=w)
            b = theirs(values, sample_weight=w)
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)
    empty = metrics.Mean()
    assert float(empty.result()) == 0.0 and float(empty(np.zeros((0, 3)))) == 0.0


def test_metric_dtype_and_float16_inputs(tf_keras):
    rng = np.random.default_rng(1)
    y_true = rng.standard_normal((6, 2)).astype(np.float16)
    y_pred = rng.standard_normal((6, 2)).astype(np.float16)
    for dtype in (None, "float64"):
        ours = metrics.MeanSquaredError(dtype=dtype)
        theirs = tf_keras.metrics.MeanSquaredError(dtype=dtype)
        a, b = ours(y_true, y_pred), theirs(y_true, y_pred)
        assert a.dtype == np.dtype(b.dtype.as_numpy_dtype) == np.dtype(dtype or "float32")
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)


FUNCTIONS = [("accuracy", "exact", {}), ("binary_accuracy", "binary", {}),
             ("binary_accuracy", "binary", {"threshold": 0.3}),
             ("categorical_accuracy", "categorical", {}),
             ("sparse_categorical_accuracy", "sparse", {}),
             ("sparse_categorical_accuracy", "sparse_column", {}),
             ("top_k_categorical_accuracy", "categorical", {"k": 2}),
             ("sparse_top_k_categorical_accuracy", "sparse", {"k": 3}),
             ("sparse_top_k_categorical_accuracy", "sparse_column", {"k": 1})]


@pytest.mark.parametrize("name,kind,kwargs", FUNCTIONS, ids=lambda x: str(x))
def test_metric_functions_match_tf_keras(tf_keras, real_tf, name, kind, kwargs):
    from tf_keras.src.metrics import accuracy_metrics

    for y_true, y_pred, _ in _batches(kind, seed=2):
        ours = getattr(metrics, name)(ipu_gpu.constant(y_true), ipu_gpu.constant(y_pred),
                                      **kwargs)
        theirs = getattr(accuracy_metrics, name)(real_tf.constant(y_true),
                                                 real_tf.constant(y_pred), **kwargs)
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert ours.dtype == np.dtype(theirs.dtype.as_numpy_dtype)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_in_top_k_ties_and_bad_targets(real_tf):
    predictions = np.array([[0.1, 0.5, 0.5, 0.2], [1.0, np.nan, 0.0, 0.0],
                            [0.3, 0.3, 0.3, 0.3], [0.0, 1.0, 2.0, np.inf]], np.float32)
    for targets in ([2, 0, 3, 3], [1, 1, 0, 2], [0, 4, -1, 1]):
        for k in (1, 2, 3):
            ours = metrics.in_top_k(predictions, np.array(targets, np.int32), k).numpy()
            theirs = real_tf.math.in_top_k(np.array(targets, np.int32), predictions, k).numpy()
            np.testing.assert_array_equal(ours, theirs, err_msg=f"{targets} k={k}")


def test_empty_and_single_batches_match_tf_keras(tf_keras):
    cases = [("BinaryAccuracy", np.zeros((0, 1)), np.zeros((0, 1))),
             ("SparseCategoricalAccuracy", np.zeros((0,)), np.zeros((0, 3))),
             ("AUC", np.zeros((0,)), np.zeros((0,))),
             ("Precision", np.ones((1,)), np.full((1,), 0.9)),
             ("AUC", np.ones((1, 1)), np.full((1, 1), 0.2)),
             ("RootMeanSquaredError", np.zeros((0, 2)), np.zeros((0, 2)))]
    for name, y_true, y_pred in cases:
        a = getattr(metrics, name)()(y_true.astype(np.float32), y_pred.astype(np.float32))
        b = getattr(tf_keras.metrics, name)()(y_true.astype(np.float32),
                                              y_pred.astype(np.float32))
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, err_msg=name)


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the exception itself is the result
        return e
    raise AssertionError("no error raised")


@pytest.mark.parametrize("case", [
    lambda m: m.Precision(thresholds=[0.5, 1.5]),
    lambda m: m.Recall(thresholds=-0.1),
    lambda m: m.AUC(num_thresholds=1),
    lambda m: m.AUC(curve="XY"),
    lambda m: m.AUC(summation_method="simpson"),
    lambda m: m.AUC(num_labels=3),
], ids=["precision_thresholds", "recall_threshold", "auc_thresholds", "auc_curve",
        "auc_summation", "auc_num_labels"])
def test_constructor_errors_match_tf_keras(tf_keras, case):
    ours, theirs = _error(lambda: case(metrics)), _error(lambda: case(tf_keras.metrics))
    assert type(ours) is type(theirs) is ValueError
    assert str(ours) == str(theirs)


def test_bad_inputs():
    with pytest.raises(ValueError, match=r"Shapes \(2, 3\) and \(2, 2\) are incompatible"):
        metrics.accuracy(np.zeros((2, 3)), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="are incompatible"):
        metrics.Precision().update_state(np.zeros((2, 3)), np.zeros((2, 2)))
    with pytest.raises(RuntimeError, match="The output of a metric function can only be a "
                                           "single Tensor"):
        metrics.Mean().update_state({"a": 1.0})
    with pytest.raises(ValueError, match="Number of labels is not consistent"):
        metrics.AUC(multi_label=True, num_labels=3).update_state(np.zeros((2, 2)),
                                                                 np.zeros((2, 2)))
    with pytest.raises(ValueError, match="must have rank 2 when `multi_label=True`"):
        metrics.AUC(multi_label=True).update_state(np.zeros(4), np.zeros(4))
    with pytest.raises(ValueError, match="weight list of length 1"):
        metrics.Mean().set_weights([np.zeros(())])
    with pytest.raises(TypeError, match="unexpected keyword arguments"):
        metrics.Metric(foo=1)


def test_custom_metric_state_api():
    class CountPositives(metrics.Metric):
        def __init__(self, name="count_positives", **kwargs):
            super().__init__(name=name, **kwargs)
            self.count = self.add_weight("count", initializer="zeros")

        def update_state(self, y_true, y_pred, sample_weight=None):
            self.count.assign_add(ipu_gpu.reduce_sum(
                ipu_gpu.cast(ipu_gpu.greater(ipu_gpu.constant(y_pred), 0.0), "float32")))

        def result(self):
            return ipu_gpu.identity(self.count)

    m = CountPositives()
    assert float(m(None, [1.0, -1.0, 2.0])) == 2.0
    assert m.get_weights()[0] == 2.0 and m.trainable_weights == []
    other = CountPositives()
    other.update_state(None, [3.0])
    m.merge_state([other])
    assert float(m.result()) == 3.0
    clone = copy.deepcopy(m)
    assert float(clone.result()) == 3.0 and clone.count is not m.count
    m.reset_states()
    assert float(m.result()) == 0.0
    assert str(metrics.Accuracy()) == "Accuracy(name=accuracy,dtype=float32)"

    class Legacy(CountPositives):
        def reset_states(self):
            self.count.assign(5.0)

    legacy = Legacy()
    with pytest.warns(UserWarning, match="implements a `reset_states\\(\\)` method"):
        legacy.reset_state()
    assert float(legacy.result()) == 5.0


def test_automatic_names_are_unique():
    first, second = metrics.Precision(), metrics.Precision()
    assert first.name.startswith("precision") and first.name != second.name
    assert metrics.Mean().name == "mean" == metrics.Mean().name


def test_get_serialize_deserialize(tf_keras):
    assert metrics.get("accuracy") is metrics.accuracy
    assert metrics.get("mse") is losses.mean_squared_error
    assert isinstance(metrics.get("AUC"), metrics.AUC)
    assert metrics.get(metrics.binary_accuracy) is metrics.binary_accuracy
    obj = metrics.BinaryAccuracy(threshold=0.3)
    config = metrics.serialize(obj)
    assert config == tf_keras.metrics.serialize(tf_keras.metrics.BinaryAccuracy(threshold=0.3),
                                                use_legacy_format=True)
    again = metrics.get(config)
    assert type(again) is metrics.BinaryAccuracy and again.get_config() == obj.get_config()
    assert metrics.serialize(metrics.categorical_accuracy) == "categorical_accuracy"
    wrapper = metrics.MeanMetricWrapper(metrics.binary_accuracy, name="ba")
    assert wrapper.get_config()["fn"] is metrics.binary_accuracy
    config = {**wrapper.get_config(), "fn": "binary_accuracy"}
    assert metrics.MeanMetricWrapper.from_config(config)._fn is metrics.binary_accuracy
    # Keras 2.6 raises here (tf-keras 2.21's newer deserializer returns the string itself)
    with pytest.raises(ValueError, match="Unknown metric function: 'nope'"):
        metrics.get("nope")
    ours, theirs = _error(lambda: metrics.get(3)), _error(lambda: tf_keras.metrics.get(3))
    assert type(ours) is type(theirs) and str(ours) == str(theirs)


@pytest.mark.parametrize("metric", ["accuracy", "acc", "ACC", "crossentropy", "ce", "mse",
                                    "AUC", "binary_accuracy"])
@pytest.mark.parametrize("shapes", [((8, 1), (8, 1)), ((8,), (8, 5)), ((8, 1), (8, 5)),
                                    ((8, 5), (8, 5)), ((8,), (8, 1)), ((8, 3), (8, 1))],
                         ids=str)
def test_compile_resolution_matches_keras(tf_keras, real_tf, metric, shapes):
    from tf_keras.src.engine import compile_utils

    t_shape, p_shape = shapes
    theirs = compile_utils.MetricsContainer([metric])._get_metric_object(
        metric, real_tf.zeros(t_shape), real_tf.zeros(p_shape))
    ours = metrics.get_metric_object(metric, np.zeros(t_shape), p_shape)
    assert isinstance(ours, metrics.Metric)
    if isinstance(theirs, tf_keras.metrics.MeanMetricWrapper) and type(theirs) is \
            tf_keras.metrics.MeanMetricWrapper:
        assert type(ours) is metrics.MeanMetricWrapper
        assert ours.name == theirs.name and ours._fn.__name__ == theirs._fn.__name__
    else:
        assert type(ours).__name__ == type(theirs).__name__
    assert metrics.get_metric_object(None, (1,), (1,)) is None
    loss_metric = metrics.get_metric_object(losses.MeanSquaredError(), (2, 1), (2, 1))
    assert loss_metric.name == "mean_squared_error"


def test_tf1_metric_function_follows_the_loss():
    scce = losses.SparseCategoricalCrossentropy()
    assert metrics.get_metric_function("acc", (None, 5), scce) is \
        metrics.sparse_categorical_accuracy
    assert metrics.get_metric_function("accuracy", (None, 5), losses.BinaryCrossentropy()) is \
        metrics.binary_accuracy
    assert metrics.get_metric_function("accuracy", (None, 1)) is metrics.binary_accuracy
    assert metrics.get_metric_function("ce", (None, 5)) is metrics.categorical_crossentropy
    assert metrics.get_metric_function(
        "ce", (None, 5), losses.LossFunctionWrapper(losses.sparse_categorical_crossentropy)) \
        is metrics.sparse_categorical_crossentropy
    assert metrics.get_metric_function("mae") is losses.mean_absolute_error


def test_update_is_cheap_enough_to_run_every_step():
    """Updating the state adds to the Variables in place; a result read earlier is not
    changed by a later update."""
    m = metrics.SparseCategoricalAccuracy()
    first = m([0, 1], [[0.9, 0.1], [0.2, 0.8]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        second = m([0, 1], [[0.1, 0.9], [0.2, 0.8]])
    assert float(first) == 1.0 and float(second) == 0.75


def test_metrics_on_each_backend(backend):
    """State Variables on the backend under test; numpy batches are copied to them."""
    y_true, y_pred, w = _batches("binary", seed=3)[1]
    device = ipu_gpu.constant(0.0).device
    auc, acc, mean = metrics.AUC(num_thresholds=9), metrics.BinaryAccuracy(), metrics.Mean()
    auc.update_state(y_true, y_pred, sample_weight=w)
    acc.update_state(y_true, ipu_gpu.constant(y_pred))
    mean.update_state(y_pred, sample_weight=w[:, None])
    top = metrics.sparse_top_k_categorical_accuracy(np.array([0, 2]),
                                                    ipu_gpu.constant([[0.1, 0.5, 0.4],
                                                                      [0.2, 0.3, 0.5]]), k=1)
    assert all(v.device == device for v in auc.variables + acc.variables + mean.variables)
    assert top.device == device
    np.testing.assert_array_equal(top.numpy(), [0.0, 1.0])
    np.testing.assert_allclose(float(acc.result()), np.mean((y_pred > 0.5) == y_true),
                               rtol=1e-6)
    np.testing.assert_allclose(float(mean.result()),
                               np.sum(y_pred * w[:, None]) / (3 * np.sum(w)), rtol=1e-5)
    assert 0.0 <= float(auc.result()) <= 1.0
