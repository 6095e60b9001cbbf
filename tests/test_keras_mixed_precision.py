"""keras.mixed_precision against tf_keras (Keras 2): policies, float16 layers with float32
weights read as float16 (AutoCastVariable), LossScaleOptimizer's dynamic loss scale, and
Model.compile wrapping the optimizer under ``mixed_float16``.

The same model with the same weights computes in float16 on both sides; outputs agree to
float16 tolerance. The loss-scale trajectory (halving on overflow with the step skipped,
doubling after ``dynamic_growth_steps`` finite steps) must be identical step by step: the
test data keep every overflow far from float16's limit.
"""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu import keras
from ipu_gpu.keras import layers, mixed_precision, optimizers
from ipu_gpu.keras.engine.autocast_variable import AutoCastVariable


@pytest.fixture(scope="module")
def K(real_tf):
    """tf_keras, imported after the real_tf fixture has configured TensorFlow."""
    return pytest.importorskip("tf_keras")


@pytest.fixture
def mixed(request):
    """Both sides under ``mixed_float16`` for one test (tf_keras only when the test uses it)."""
    libs = [keras]
    if "K" in request.fixturenames:
        libs.append(request.getfixturevalue("K"))
    for lib in libs:
        lib.mixed_precision.set_global_policy("mixed_float16")
    try:
        yield
    finally:
        for lib in libs:
            lib.mixed_precision.set_global_policy("float32")


@pytest.mark.parametrize("name", ["float32", "float16", "float64", "mixed_float16",
                                  "mixed_bfloat16"])
def test_policy_matches_keras(K, name):
    ours, theirs = mixed_precision.Policy(name), K.mixed_precision.Policy(name)
    assert (ours.name, ours.compute_dtype, ours.variable_dtype) == (
        theirs.name, theirs.compute_dtype, theirs.variable_dtype)
    assert repr(ours) == repr(theirs)


def test_global_policy_round_trip():
    assert mixed_precision.global_policy().name == "float32"
    mixed_precision.set_global_policy("mixed_float16")
    try:
        assert mixed_precision.global_policy().name == "mixed_float16"
        assert layers.Dense(2).dtype_policy.name == "mixed_float16"
    finally:
        mixed_precision.set_global_policy("float32")
    assert layers.Dense(2).dtype_policy.name == "float32"


def test_bad_policy_name_raises():
    with pytest.raises(ValueError, match="Cannot convert value"):
        mixed_precision.Policy("mixed_float17")


def test_mixed_bfloat16_layer_is_refused():
    with pytest.raises(NotImplementedError, match="bfloat16"):
        layers.Dense(2, dtype="mixed_bfloat16")


def test_dense_weights_are_float32_read_as_float16(mixed):
    dense = layers.Dense(3)
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    y = dense(x)
    assert y.dtype == np.float16
    assert isinstance(dense.kernel, AutoCastVariable)
    assert dense.kernel.true_dtype == np.float32 and dense.kernel.dtype == np.float32
    assert dense.dtype == "float32" and dense.compute_dtype == "float16"
    expected = (x.astype(np.float16) @ dense.kernel.numpy().astype(np.float16))
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-3, atol=1e-3)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.cast(dense(x), "float32"))
    grads = tape.gradient(loss, dense.trainable_weights)
    assert [g.dtype for g in grads] == [np.float32, np.float32]
    np.testing.assert_allclose(grads[0].numpy(), np.tile(x.sum(0)[:, None], (1, 3)), rtol=1e-3)


def test_autocast_off_keeps_float32_reads(mixed):
    class Scale(layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight("w", shape=(), initializer="ones", autocast=False)

        def call(self, x):
            return x * tf.cast(self.w, x.dtype)

    layer = Scale()
    layer(np.ones((2,), np.float32))
    assert not isinstance(layer.w, AutoCastVariable)


def _model(lib, seed=0):
    L = lib.layers
    inputs = L.Input((6,))
    h = L.Dense(8, activation="relu", kernel_initializer=lib.initializers.GlorotUniform(seed),
                bias_initializer="ones")(inputs)
    h = L.Dense(1, kernel_initializer=lib.initializers.GlorotUniform(seed + 1))(h)
    out = L.Activation("linear", dtype="float32")(h)
    return lib.Model(inputs, out)


def test_mixed_model_matches_keras(K, mixed):
    ours, theirs = _model(keras), _model(K)
    theirs.set_weights(ours.get_weights())
    assert [w.dtype for w in theirs.get_weights()] == [w.dtype for w in ours.get_weights()]
    x = np.random.default_rng(0).normal(size=(5, 6)).astype(np.float32)
    a, b = ours(x), theirs(x)
    assert a.dtype == np.float32 and str(b.dtype.name) == "float32"
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=2e-3, atol=2e-3)
    assert ours.layers[1](x).dtype == np.float16


def _scale_trajectory(lib, model, x, y, optimizer):
    scales = []
    model.compile(optimizer, "mse")
    for i in range(0, len(x), 4):
        model.train_on_batch(x[i:i + 4], y[i:i + 4])
        scales.append(float(np.asarray(model.optimizer.loss_scale)))
    return scales, int(np.asarray(model.optimizer.iterations))


def test_compile_wraps_optimizer_and_loss_scale_trajectory_matches_keras(K, mixed):
    # targets far off: the first steps' float16 gradients overflow until the scale is low
    rng = np.random.default_rng(1)
    x = (rng.normal(size=(96, 6)) * 4).astype(np.float32)
    y = (rng.normal(size=(96, 1)) * 30 + 200).astype(np.float32)
    ours, theirs = _model(keras), _model(K)
    theirs.set_weights(ours.get_weights())
    ours.compile(optimizers.SGD(1e-4), "mse")
    assert isinstance(ours.optimizer, mixed_precision.LossScaleOptimizer)
    assert ours.optimizer.initial_scale == 2**15 and ours.optimizer.dynamic_growth_steps == 2000
    ours_scales, ours_iters = _scale_trajectory(
        keras, ours, x, y, mixed_precision.LossScaleOptimizer(
            optimizers.SGD(1e-5), initial_scale=2**15, dynamic_growth_steps=2))
    theirs_scales, theirs_iters = _scale_trajectory(
        K, theirs, x, y, K.mixed_precision.LossScaleOptimizer(
            K.optimizers.legacy.SGD(1e-5), initial_scale=2**15, dynamic_growth_steps=2))
    assert ours_scales == theirs_scales
    assert min(ours_scales) < 2**15 and ours_scales[-1] > min(ours_scales)  # both directions
    assert ours_iters == theirs_iters == 24
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(a, b, rtol=5e-3, atol=5e-3)


def test_loss_scale_optimizer_api(K):
    ours = mixed_precision.LossScaleOptimizer(optimizers.SGD(0.5))
    theirs = K.mixed_precision.LossScaleOptimizer(K.optimizers.legacy.SGD(0.5))
    assert ours.dynamic and float(np.asarray(ours.loss_scale)) == 2.0**15
    assert ours.get_config()["dynamic_growth_steps"] == theirs.get_config()[
        "dynamic_growth_steps"] == 2000
    assert ours.get_config()["initial_scale"] == theirs.get_config()["initial_scale"]
    loss = tf.constant(3.0)
    assert float(np.asarray(ours.get_scaled_loss(loss))) == 3.0 * 2**15
    grads = ours.get_unscaled_gradients([tf.constant([2.0**15, 2.0**16]), None])
    np.testing.assert_array_equal(grads[0].numpy(), [1.0, 2.0])
    assert grads[1] is None
    assert float(np.asarray(ours.learning_rate)) == 0.5
    ours.learning_rate = 0.25
    assert float(np.asarray(ours.inner_optimizer.learning_rate)) == 0.25


def test_nonfinite_step_is_skipped_and_scale_halves():
    opt = mixed_precision.LossScaleOptimizer(optimizers.SGD(1.0), initial_scale=8.0,
                                             dynamic_growth_steps=2)
    var = tf.Variable([1.0, 2.0])
    opt.apply_gradients([(tf.constant([np.inf, 1.0]), var)])
    np.testing.assert_array_equal(var.numpy(), [1.0, 2.0])
    assert float(np.asarray(opt.loss_scale)) == 4.0 and int(np.asarray(opt.iterations)) == 1
    for _ in range(2):
        opt.apply_gradients([(tf.constant([1.0, 1.0]), var)])
    np.testing.assert_array_equal(var.numpy(), [-1.0, 0.0])
    assert float(np.asarray(opt.loss_scale)) == 8.0 and int(np.asarray(opt.iterations)) == 3
    small = mixed_precision.LossScaleOptimizer(optimizers.SGD(1.0), initial_scale=1.0)
    small.apply_gradients([(tf.constant([np.nan, 1.0]), var)])
    assert float(np.asarray(small.loss_scale)) == 1.0  # never below 1


def test_loss_scale_optimizer_errors():
    with pytest.raises(TypeError, match="inner_optimizer"):
        mixed_precision.LossScaleOptimizer("sgd")
    with pytest.raises(TypeError, match='"dynamic"'):
        mixed_precision.LossScaleOptimizer(optimizers.SGD(), dynamic="yes")
    with pytest.raises(ValueError, match='"initial_scale" must be specified'):
        mixed_precision.LossScaleOptimizer(optimizers.SGD(), dynamic=False)
    with pytest.raises(ValueError, match='"dynamic_growth_steps" must be None'):
        mixed_precision.LossScaleOptimizer(optimizers.SGD(), dynamic=False, initial_scale=2,
                                           dynamic_growth_steps=3)
    inner = optimizers.SGD()
    wrapped = mixed_precision.LossScaleOptimizer(inner)
    with pytest.raises(TypeError, match="cannot wrap another"):
        mixed_precision.LossScaleOptimizer(wrapped)
    with pytest.raises(ValueError, match="already wrapped"):
        mixed_precision.LossScaleOptimizer(inner)


def test_loss_scale_optimizer_serializes():
    opt = mixed_precision.LossScaleOptimizer(optimizers.Adam(0.1), initial_scale=4.0,
                                             dynamic_growth_steps=7)
    again = optimizers.deserialize(optimizers.serialize(opt))
    assert isinstance(again, mixed_precision.LossScaleOptimizer)
    assert (again.initial_scale, again.dynamic_growth_steps) == (4.0, 7)
    assert isinstance(again.inner_optimizer, optimizers.Adam)


def test_mixed_model_trains_under_ipu_strategy(fresh_ipu_system, mixed):
    """Two replicas, gradient accumulation 2: the loss scale moves once per weight update."""
    from ipu_gpu.ipu import config
    from ipu_gpu.ipu.ipu_strategy import IPUStrategy

    cfg = config.IPUConfig()
    cfg.auto_select_ipus = 2
    cfg.configure_ipu_system()
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 6)).astype(np.float32)
    y = np.argmax(x[:, :3], axis=1)  # learnable labels: the loss falls for any initial weights
    with IPUStrategy().scope():
        inputs = keras.Input((6,))
        h = layers.Dense(8, activation="relu")(inputs)
        out = layers.Activation("softmax", dtype="float32")(layers.Dense(3)(h))
        model = keras.Model(inputs, out)
        model.compile(optimizers.SGD(0.1), "sparse_categorical_crossentropy",
                      steps_per_execution=4)
        model.set_gradient_accumulation_options(gradient_accumulation_steps_per_replica=2)
        history = model.fit(x, y, batch_size=4, epochs=2, verbose=0)
    assert isinstance(model.optimizer, mixed_precision.LossScaleOptimizer)
    assert history.history["loss"][1] < history.history["loss"][0]
    assert int(np.asarray(model.optimizer.iterations)) == 8  # 64 / 4 / 2 replicas / 2 * 2
    assert int(np.asarray(model.optimizer.dynamic_counter)) == 8
    assert float(np.asarray(model.optimizer.loss_scale)) == 2.0**15


@pytest.mark.parametrize("name, kwargs, shape", [
    ("Conv2D", dict(filters=3, kernel_size=3), (2, 6, 6, 2)),
    ("BatchNormalization", {}, (4, 5)),
    ("LayerNormalization", {}, (4, 5)),
    ("Embedding", dict(input_dim=10, output_dim=3), (2, 4)),
    ("LSTM", dict(units=3), (2, 4, 5)),
    ("GRU", dict(units=3), (2, 4, 5)),
    ("MultiHeadAttention", dict(num_heads=2, key_dim=2), (2, 3, 4)),
])
def test_mixed_layers_match_keras(K, mixed, name, kwargs, shape):
    """float16 outputs with Keras's weights; normalization and embedding weights are read
    unconverted (Keras makes them with ``experimental_autocast=False``)."""
    rng = np.random.default_rng(3)
    x = (rng.integers(0, 10, size=shape) if name == "Embedding"
         else rng.normal(size=shape).astype(np.float32))
    args = (x, x) if name == "MultiHeadAttention" else (x,)
    ours, theirs = getattr(layers, name)(**kwargs), getattr(K.layers, name)(**kwargs)
    theirs(*args)
    ours(*args)
    weights = [w + rng.uniform(0.1, 0.3, size=w.shape).astype(w.dtype)
               for w in theirs.get_weights()]
    theirs.set_weights(weights)
    ours.set_weights(weights)
    for training in (False, True):
        kw = {} if name in ("Embedding", "MultiHeadAttention") else {"training": training}
        a, b = ours(*args, **kw), theirs(*args, **kw)
        assert a.dtype == np.float16 and b.dtype.name == "float16"
        np.testing.assert_allclose(np.asarray(a, np.float32), b.numpy().astype(np.float32),
                                   rtol=5e-3, atol=5e-3)
    for a, b in zip(ours.get_weights(), theirs.get_weights()):  # BN's moving statistics
        assert a.dtype == b.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-3)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.cast(ours(*args), "float32"))
    assert {g.dtype for g in tape.gradient(loss, ours.trainable_weights)} == {np.dtype("float32")}


def test_keras26_module_layout_and_experimental_api():
    """Keras 2.6's ``mixed_precision.policy`` module (Graphcore's test imports it) and the
    deprecated ``experimental`` API: a PolicyV1's loss_scale decides compile's wrapping."""
    from ipu_gpu.keras.mixed_precision import experimental, policy

    try:
        policy.set_policy(policy.Policy("mixed_float16"))
        assert mixed_precision.global_policy().name == "mixed_float16"
        with policy.policy_scope("float32"):
            assert layers.Dense(1).dtype_policy.name == "float32"
        assert experimental.get_layer_policy(layers.Dense(1)).name == "mixed_float16"
        experimental.set_policy(experimental.Policy("mixed_float16", loss_scale=64))
        inputs = keras.Input((3,))
        model = keras.Model(inputs, layers.Dense(1)(inputs))
        model.compile("sgd", "mse")
        assert not model.optimizer.dynamic and model.optimizer.initial_scale == 64
        experimental.set_policy(experimental.Policy("float32"))
        assert experimental.global_policy().loss_scale is None
    finally:
        mixed_precision.set_global_policy("float32")
    with pytest.raises(ValueError, match="get_policy can only be called on a layer"):
        experimental.get_layer_policy(3)
    fixed = experimental.LossScaleOptimizer(optimizers.SGD(), loss_scale=8)
    assert (fixed.dynamic, fixed.initial_scale) == (False, 8.0)
    assert experimental.LossScaleOptimizer(optimizers.SGD(), "dynamic").dynamic
    with pytest.raises(ValueError, match="Invalid value passed to loss_scale"):
        experimental.LossScaleOptimizer(optimizers.SGD(), "static")


def test_graphcore_mixed_precision_program(fresh_ipu_system):
    """Graphcore's keras/ipu/mixed_precision_test.py, as a program writes it."""
    from ipu_gpu.ipu import config
    from ipu_gpu.ipu.ipu_strategy import IPUStrategyV1
    from ipu_gpu.keras.mixed_precision import policy

    cfg = config.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()
    try:
        with IPUStrategyV1().scope():
            policy.set_policy(policy.Policy("mixed_float16"))
            inputs = keras.layers.Input(shape=(32), dtype=np.single, batch_size=2)
            init = keras.initializers.Constant(0.1)
            x = keras.layers.Dense(4, name="layer0", kernel_initializer=init)(inputs)
            x = keras.layers.Dense(2, name="layer1", kernel_initializer=init)(x)
            m = keras.Model(inputs, x)
            m.compile("sgd", loss="mse", steps_per_execution=4)
            history = m.fit(np.full([60, 32], 1.0, np.single), np.full([60], 1.0, np.single),
                            batch_size=2, steps_per_epoch=1, epochs=1, verbose=0)
    finally:
        mixed_precision.set_global_policy("float32")
    assert np.isfinite(history.history["loss"][0])
    assert isinstance(m.optimizer, mixed_precision.LossScaleOptimizer)
