"""Issue 16's model-level items against tf-keras (the Keras 2 oracle): ``summary()`` text for
Sequential, functional (shared layers, several inputs and outputs), recurrent-wrapper and
nested models; HDF5 ``save_weights``/``load_weights`` both ways; LossScaleOptimizer's dynamic
loss scaling step by step (growth after ``dynamic_growth_steps`` finite steps, 2000 by default,
halving and skipping on inf/NaN, floor 1); a model of GRU(reset_after=False) in Bidirectional,
MultiHeadAttention, TimeDistributed, SimpleRNN and LSTM, with and without masks, trained by
both from the same weights; metrics' defaults (AUC's 200 thresholds, TopK's k=5).

TensorFlow is imported only through the ``real_tf`` fixture; these tests skip without tf-keras.
"""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu
import ipu_gpu.keras as ours


@pytest.fixture(scope="module")
def tfk(real_tf):
    """tf-keras, imported after TensorFlow's fixture set it up."""
    return pytest.importorskip("tf_keras")


def _sequential(lib):
    L = lib.layers
    return lib.Sequential([L.Conv2D(4, 3, input_shape=(8, 8, 2), activation="relu"),
                           L.MaxPooling2D(), L.BatchNormalization(), L.Flatten(),
                           L.Dropout(0.1), L.Dense(3)], name="seq")


def _functional(lib):
    L = lib.layers
    a, b = L.Input((6,), name="a"), L.Input((4,), name="b")
    h = L.Dense(5, name="h")(a)
    shared = L.Dense(5, name="shared")
    c = L.Concatenate()([shared(h), L.Dense(5)(b)])
    o1 = L.Dense(2, name="o1")(c)
    o2 = L.Dense(1, name="o2")(L.Add()([h, shared(h)]))
    return lib.Model([a, b], [o1, o2], name="func")


def _recurrent(lib):
    L = lib.layers
    return lib.Sequential([L.Embedding(10, 4, input_length=5),
                           L.Bidirectional(L.LSTM(3, return_sequences=True)),
                           L.TimeDistributed(L.Dense(2)), L.GRU(3, reset_after=False),
                           L.Dense(1)])


def _lazy(lib):
    L = lib.layers
    model = lib.Sequential([L.Dense(3), L.Dense(2)])
    model.build((None, 4))
    return model


def _nested(lib):
    L = lib.layers
    inner = lib.Sequential([L.Dense(4, activation="relu"), L.Dense(3)], name="inner")
    inner.build((None, 6))
    x = L.Input((6,))
    inner.layers[0].trainable = False
    return lib.Model(x, L.Softmax()(inner(x)), name="outer")


MODELS = [_sequential, _functional, _recurrent, _lazy, _nested]


def _summary(model, **kwargs):
    lines = []
    model.summary(print_fn=lambda line, **_: lines.append(line), **kwargs)
    return "\n".join(lines)


@pytest.mark.parametrize("build", MODELS, ids=lambda f: f.__name__[1:])
@pytest.mark.parametrize("kwargs", [{}, dict(line_length=90, positions=[.3, .6, .8, 1.]),
                                    dict(expand_nested=True, show_trainable=True)],
                         ids=["default", "positions", "nested-trainable"])
def test_summary_text_is_tf_keras(tfk, build, kwargs):
    ours.backend.clear_session()
    tfk.backend.clear_session()
    assert _summary(build(ours), **kwargs) == _summary(build(tfk), **kwargs)


@pytest.mark.parametrize("build", MODELS[:3] + MODELS[4:], ids=lambda f: f.__name__[1:])
def test_hdf5_weights_both_ways(tfk, tmp_path, build):
    mine, theirs = build(ours), build(tfk)
    rng = np.random.default_rng(1)
    values = [rng.standard_normal(w.shape).astype(np.float32) for w in theirs.get_weights()]
    theirs.set_weights(values)
    theirs.save_weights(str(tmp_path / "theirs.h5"))
    mine.load_weights(str(tmp_path / "theirs.h5"))
    for a, b in zip(mine.get_weights(), values):
        np.testing.assert_array_equal(a, b)
    mine.set_weights([2 * v for v in values])
    mine.save_weights(str(tmp_path / "mine.h5"))
    theirs.load_weights(str(tmp_path / "mine.h5"))
    for a, b in zip(theirs.get_weights(), values):
        np.testing.assert_array_equal(a, 2 * b)


# ---- LossScaleOptimizer -----------------------------------------------------------------------
_INF, _NAN = np.inf, np.nan
_STEPS = [[1, 1], [1, _INF], [1, 1], [_NAN, 1], [1, 1], [1, 1], [1, 1], [1, 1], [2, 2],
          [1, 1], [1e38, 1e38]]


def _loss_scale_trace(lib, tfk, gradients, **kwargs):
    """[(loss scale, iterations, variable, dynamic counter)] after each step of ``gradients``
    (each multiplied by the loss scale, then unscaled by the optimizer)."""
    if lib is tfk:
        tf = tfk.backend.tf if hasattr(tfk.backend, "tf") else __import__("tensorflow")
        variable, constant = tf.Variable([1.0, 2.0]), tf.constant
        opt = tfk.mixed_precision.LossScaleOptimizer(tfk.optimizers.legacy.SGD(0.1), **kwargs)
    else:
        variable = ipu_gpu.Variable(np.array([1.0, 2.0], np.float32))
        constant = ipu_gpu.constant
        opt = ours.mixed_precision.LossScaleOptimizer(ours.optimizers.SGD(0.1), **kwargs)
    trace = []
    with np.errstate(over="ignore", invalid="ignore"):
        for g in gradients:
            scaled = np.array(g, np.float32) * np.float32(float(opt.loss_scale))
            grads = opt.get_unscaled_gradients([constant(scaled)])
            opt.apply_gradients(zip(grads, [variable]))
            counter = int(opt.dynamic_counter.numpy()) if opt.dynamic else None
            trace.append((float(opt.loss_scale), int(opt.iterations.numpy()),
                          variable.numpy().tolist(), counter))
    return trace


@pytest.mark.parametrize("kwargs", [dict(), dict(dynamic_growth_steps=3),
                                    dict(initial_scale=4, dynamic_growth_steps=2),
                                    dict(dynamic=False, initial_scale=8)],
                         ids=["default", "growth3", "scale4-growth2", "fixed"])
def test_loss_scale_optimizer_steps_match_tf_keras(tfk, kwargs):
    mine = _loss_scale_trace(ours, tfk, _STEPS, **kwargs)
    theirs = _loss_scale_trace(tfk, tfk, _STEPS, **kwargs)
    np.testing.assert_equal(mine, theirs)


def test_loss_scale_floor_and_default_growth_after_2000_steps(tfk):
    halvings = [[_INF, 1]] * 20
    assert _loss_scale_trace(ours, tfk, halvings) == _loss_scale_trace(tfk, tfk, halvings)
    assert _loss_scale_trace(ours, tfk, halvings)[-1][0] == 1.0
    finite = [[1e-3, 1e-3]] * 2001
    mine = _loss_scale_trace(ours, tfk, finite)
    assert [m[0] for m in mine[1997:]] == [32768.0, 32768.0, 65536.0, 65536.0]
    assert mine[1998][3] == 1999 and mine[1999][3] == 0
    theirs = _loss_scale_trace(tfk, tfk, finite[:3])  # tf-keras is slow; its first steps
    np.testing.assert_allclose([m[2] for m in mine[:3]], [t[2] for t in theirs], rtol=1e-7)


# ---- recurrent wrappers and attention, trained ------------------------------------------------
def _attention_model(lib, mask_zero):
    L = lib.layers
    inputs = L.Input((6,), dtype="int32")
    x = L.Embedding(12, 4, mask_zero=mask_zero)(inputs)
    x = L.Bidirectional(L.GRU(3, reset_after=False, return_sequences=True))(x)
    x = L.MultiHeadAttention(num_heads=2, key_dim=2)(x, x)
    x = L.TimeDistributed(L.Dense(4, activation="tanh"))(x)
    pooled = L.GlobalAveragePooling1D()(L.LSTM(2, return_sequences=True)(x))
    outputs = L.Dense(3)(L.Concatenate()([L.SimpleRNN(3)(x), pooled]))
    return lib.Model(inputs, outputs)


@pytest.mark.parametrize("mask_zero", [pytest.param(False, marks=pytest.mark.slow), True])
def test_wrappers_attention_and_gru_train_as_tf_keras(tfk, mask_zero):
    """(About 15 s, nearly all of it tf-keras building and running the RNNs.)"""
    ours.backend.clear_session()  # the same layer names whichever tests ran before
    tfk.backend.clear_session()
    rng = np.random.default_rng(0)
    x = rng.integers(1, 12, (32, 6))
    x[::3, 4:] = 0
    y = rng.integers(0, 3, 32)
    theirs = _attention_model(tfk, mask_zero)
    mine = _attention_model(ours, mask_zero)
    assert [w.name for w in mine.weights] == [w.name for w in theirs.weights]
    mine.set_weights(theirs.get_weights())
    results = []
    for model, lib, opt in [(mine, ours, ours.optimizers.Adam(0.01)),
                            (theirs, tfk, tfk.optimizers.legacy.Adam(0.01))]:
        model.compile(opt, lib.losses.SparseCategoricalCrossentropy(from_logits=True),
                      run_eagerly=True)  # tf-keras traces RNNs slowly
        history = model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
        results.append((history.history["loss"], model.get_weights(), model(x).numpy()))
    (loss_a, weights_a, pred_a), (loss_b, weights_b, pred_b) = results
    np.testing.assert_allclose(loss_a, loss_b, rtol=1e-6)
    for a, b in zip(weights_a, weights_b):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=5e-6)
    np.testing.assert_allclose(pred_a, pred_b, rtol=1e-5, atol=5e-6)


# ---- metric defaults ---------------------------------------------------------------------------
def test_metric_defaults_are_tf_keras(tfk):
    mine, theirs = ours.metrics.AUC(), tfk.metrics.AUC()
    assert mine.num_thresholds == theirs.num_thresholds == 200
    assert mine.curve.name == theirs.curve.name == "ROC"
    assert mine.summation_method.name == theirs.summation_method.name == "INTERPOLATION"
    assert ours.metrics.AUC(curve="pr").curve.value == "PR" and mine.curve == "ROC"
    np.testing.assert_allclose(mine.thresholds, theirs.thresholds, rtol=1e-7)
    assert ours.metrics.TopKCategoricalAccuracy().get_config()["k"] == 5
    rng = np.random.default_rng(3)
    y_true = np.eye(8, dtype=np.float32)[rng.integers(0, 8, 40)]
    y_pred = rng.uniform(size=(40, 8)).astype(np.float32)
    for name in ("TopKCategoricalAccuracy", "AUC", "Precision", "Recall"):
        a, b = getattr(ours.metrics, name)(), getattr(tfk.metrics, name)()
        a.update_state(y_true, y_pred)
        b.update_state(y_true, y_pred)
        np.testing.assert_allclose(a.result().numpy(), b.result().numpy(), rtol=1e-6,
                                   err_msg=name)
    for kwargs in (dict(top_k=3, class_id=2), dict(thresholds=[0.2, 0.7], class_id=5)):
        for name in ("Precision", "Recall"):
            a, b = getattr(ours.metrics, name)(**kwargs), getattr(tfk.metrics, name)(**kwargs)
            a.update_state(y_true, y_pred)
            b.update_state(y_true, y_pred)
            np.testing.assert_allclose(a.result().numpy(), b.result().numpy(), rtol=1e-6,
                                       err_msg=f"{name}{kwargs}")
