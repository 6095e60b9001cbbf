"""keras.initializers, activations, regularizers, constraints and backend: tf-keras's values
(seeded initializers bit for bit), Keras's formulas checked by statistics, reproducibility
from the seeds, the identifier forms of ``get`` and Keras's errors."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

import ipu_gpu as ig
from ipu_gpu.keras import activations, backend, constraints, initializers, regularizers


@pytest.fixture(autouse=True)
def no_global_seed_left():
    """Tests that set ipu_gpu's global seed leave none behind for later tests."""
    yield
    ig.random.set_seed(None)


@pytest.fixture(scope="module")
def tfk(real_tf):
    return pytest.importorskip("tf_keras")


RANDOM = ["RandomUniform", "RandomNormal", "TruncatedNormal", "GlorotUniform", "GlorotNormal",
          "HeUniform", "HeNormal", "LecunUniform", "LecunNormal", "Orthogonal"]


@pytest.mark.parametrize("name", RANDOM)
@pytest.mark.parametrize("shape", [(5, 7), (3, 3, 4, 6), (1, 2)])
def test_seeded_initializers_give_tf_keras_values(tfk, name, shape):
    ours = getattr(initializers, name)(seed=11)(shape).numpy()
    theirs = getattr(tfk.initializers, name)(seed=11)(shape).numpy()
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    if name in ("RandomUniform", "GlorotUniform", "HeUniform", "LecunUniform"):
        np.testing.assert_array_equal(ours, theirs)  # uniform draws: bit for bit
    else:  # Box-Muller: float32 libm rounding; QR: LAPACK rounding
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=5e-7)


@pytest.mark.parametrize("name,kwargs", [("Zeros", {}), ("Ones", {}), ("Constant", {"value": 3}),
                                         ("Identity", {"gain": 2.0}),
                                         ("VarianceScaling", {"scale": 2.0, "mode": "fan_out",
                                                              "distribution": "uniform",
                                                              "seed": 1})])
def test_other_initializers_match_tf_keras(tfk, name, kwargs):
    ours = getattr(initializers, name)(**kwargs)((3, 4)).numpy()
    theirs = getattr(tfk.initializers, name)(**kwargs)((3, 4)).numpy()
    np.testing.assert_array_equal(ours, theirs)


FAN_IN, FAN_OUT = 300, 200


@pytest.mark.parametrize("name,mean,std,limit", [
    ("RandomUniform", 0.0, 0.1 / math.sqrt(12), 0.05),
    ("RandomNormal", 0.0, 0.05, None),
    ("TruncatedNormal", 0.0, 0.05 * 0.87962566, 0.1),
    ("GlorotUniform", 0.0, math.sqrt(2 / (FAN_IN + FAN_OUT)), math.sqrt(6 / (FAN_IN + FAN_OUT))),
    ("GlorotNormal", 0.0, math.sqrt(2 / (FAN_IN + FAN_OUT)),
     2 * math.sqrt(2 / (FAN_IN + FAN_OUT)) / 0.87962566),
    ("HeUniform", 0.0, math.sqrt(2 / FAN_IN), math.sqrt(6 / FAN_IN)),
    ("HeNormal", 0.0, math.sqrt(2 / FAN_IN), 2 * math.sqrt(2 / FAN_IN) / 0.87962566),
    ("LecunUniform", 0.0, math.sqrt(1 / FAN_IN), math.sqrt(3 / FAN_IN)),
    ("LecunNormal", 0.0, math.sqrt(1 / FAN_IN), 2 * math.sqrt(1 / FAN_IN) / 0.87962566),
])
def test_distributions_follow_keras_formulas(name, mean, std, limit):
    values = getattr(initializers, name)(seed=5)((FAN_IN, FAN_OUT)).numpy().astype(np.float64)
    assert abs(values.mean() - mean) < 4 * std / math.sqrt(values.size)
    assert abs(values.std() / std - 1) < 0.02
    if limit is not None:
        assert np.abs(values).max() <= limit * (1 + 1e-6)


def test_orthogonal_and_conv_fans():
    q = initializers.Orthogonal(gain=2.0, seed=1)((6, 4)).numpy()
    np.testing.assert_allclose(q.T @ q, 4 * np.eye(4), atol=1e-5)
    wide = initializers.Orthogonal(seed=1)((3, 8)).numpy()
    np.testing.assert_allclose(wide @ wide.T, np.eye(3), atol=1e-5)
    kernel = initializers.HeNormal(seed=2)((3, 3, 64, 32)).numpy()
    assert abs(kernel.std() / math.sqrt(2 / (9 * 64)) - 1) < 0.03


def test_determinism_and_seeds():
    a = initializers.GlorotUniform(seed=3)((4, 4)).numpy()
    np.testing.assert_array_equal(a, initializers.GlorotUniform(seed=3)((4, 4)).numpy())
    assert not np.array_equal(a, initializers.GlorotUniform(seed=4)((4, 4)).numpy())
    # unseeded: tf.random.set_seed makes a program's sequence of initializers repeat (with no
    # Keras seed generator: an earlier test's keras.utils.set_random_seed installs one)
    backend._SEED_GENERATOR.generator = None
    ig.random.set_seed(123)
    first = [initializers.GlorotUniform()((3, 3)).numpy() for _ in range(2)]
    ig.random.set_seed(123)
    second = [initializers.GlorotUniform()((3, 3)).numpy() for _ in range(2)]
    np.testing.assert_array_equal(first, second)
    assert not np.array_equal(*first)
    # keras.utils.set_random_seed installs Keras's seed generator, which comes first
    backend._SEED_GENERATOR.generator = random.Random(9)
    try:
        x = initializers.RandomNormal()((3,)).numpy()
        backend._SEED_GENERATOR.generator = random.Random(9)
        np.testing.assert_array_equal(x, initializers.RandomNormal()((3,)).numpy())
    finally:
        backend._SEED_GENERATOR.generator = None
        ig.random.set_seed(None)
    init = initializers.RandomUniform()
    values = init((2, 2)).numpy()
    with pytest.warns(UserWarning, match="unseeded and being called multiple times"):
        again = init((2, 2)).numpy()
    np.testing.assert_array_equal(values, again)


def test_get_and_serialization():
    assert isinstance(initializers.get("glorot_uniform"), initializers.GlorotUniform)
    assert isinstance(initializers.get("GlorotUniform"), initializers.GlorotUniform)
    assert isinstance(initializers.get("uniform"), initializers.RandomUniform)
    assert isinstance(initializers.get(initializers.HeNormal), initializers.HeNormal)
    init = initializers.VarianceScaling(2.0, "fan_avg", "normal", seed=4)
    config = initializers.serialize(init)
    assert config["class_name"] == "VarianceScaling"
    clone = initializers.get(config)
    assert clone.get_config() == init.get_config()
    assert initializers.get({"class_name": "Constant", "config": {"value": 2}}).value == 2
    fn = lambda shape, dtype=None: ig.zeros(shape)  # noqa: E731
    assert initializers.get(fn) is fn and initializers.get(None) is None
    with pytest.raises(ValueError, match="Unknown initializer: 'nope'"):
        initializers.get("nope")
    with pytest.raises(ValueError, match="Could not interpret initializer identifier"):
        initializers.get(3)
    with pytest.raises(ValueError, match="Expected floating point type"):
        initializers.GlorotUniform()((2, 2), dtype="int32")
    with pytest.raises(ValueError, match="`scale` must be positive float"):
        initializers.VarianceScaling(scale=0)
    with pytest.raises(ValueError, match="Invalid `mode` argument"):
        initializers.VarianceScaling(mode="fan")
    with pytest.raises(ValueError, match="at least two-dimensional"):
        initializers.Orthogonal()((3,))
    with pytest.raises(TypeError, match="Unknown keyword arguments"):
        initializers.Zeros()((2,), foo=1)


# ---- activations --------------------------------------------------------------------------------
ACTIVATIONS = [("relu", {}), ("relu", {"alpha": 0.1, "max_value": 1.5, "threshold": 0.3}),
               ("relu", {"max_value": 6.0}), ("relu", {"alpha": 0.2}), ("sigmoid", {}),
               ("softmax", {}), ("softmax", {"axis": (1, 2)}), ("tanh", {}), ("elu", {}),
               ("elu", {"alpha": 0.5}), ("selu", {}), ("softplus", {}), ("softsign", {}),
               ("swish", {}), ("gelu", {}), ("gelu", {"approximate": True}),
               ("exponential", {}), ("hard_sigmoid", {}), ("linear", {}), ("mish", {})]


@pytest.mark.parametrize("name,kwargs", ACTIVATIONS,
                         ids=[f"{n}-{i}" for i, (n, _) in enumerate(ACTIVATIONS)])
def test_activations_match_tf_keras(tfk, real_tf, name, kwargs):
    tf = real_tf
    x = np.random.default_rng(0).normal(0, 3, size=(2, 3, 4)).astype(np.float32)
    u = np.random.default_rng(1).normal(size=x.shape).astype(np.float32)
    xt = ig.constant(x)
    with ig.GradientTape() as tape:
        tape.watch(xt)
        ours = getattr(activations, name)(xt, **kwargs)
        loss = ig.reduce_sum(ours * u)
    grad = tape.gradient(loss, xt)
    xtf = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xtf)
        theirs = getattr(tfk.activations, name)(xtf, **kwargs)
        loss = tf.reduce_sum(theirs * u)
    want_grad = tape.gradient(loss, xtf)
    np.testing.assert_allclose(np.asarray(ours), theirs.numpy(), rtol=1e-5, atol=1e-6)
    if want_grad is not None:
        np.testing.assert_allclose(grad.numpy(), want_grad.numpy(), rtol=1e-4, atol=1e-5)


def test_activation_get_and_serialize(tfk):
    assert activations.get(None) is activations.linear
    assert activations.get("relu") is activations.relu
    assert activations.get("silu") is activations.swish
    assert activations.get(abs) is abs
    assert activations.serialize(activations.gelu) == "gelu"
    assert activations.get("leaky_relu")(ig.constant([-1.0])).numpy()[0] == pytest.approx(-0.2)
    with pytest.raises(ValueError, match="Unknown activation function 'nope'"):
        activations.get("nope")
    with pytest.raises(TypeError, match="Could not interpret activation"):
        activations.get(3)
    with pytest.raises(ValueError, match="Cannot apply softmax to a tensor that is 1D"):
        activations.softmax(ig.constant([1.0, 2.0]))
    # Keras 2's hard sigmoid: 0.2 x + 0.5 (Keras 3 uses x / 6)
    np.testing.assert_allclose(activations.hard_sigmoid(ig.constant([-3.0, 1.0, 3.0])).numpy(),
                               [0.0, 0.7, 1.0], rtol=1e-6)


# ---- regularizers and constraints ---------------------------------------------------------
@pytest.mark.parametrize("make", [lambda m: m.L1(), lambda m: m.L2(0.3), lambda m: m.L1L2(0.1, 0.2),
                                  lambda m: m.l1_l2(), lambda m: m.get("l2"),
                                  lambda m: m.get("l1_l2"), lambda m: m.get("L1")],
                         ids=["L1", "L2", "L1L2", "l1_l2", "get-l2", "get-l1_l2", "get-L1"])
def test_regularizers_match_tf_keras(tfk, make):
    w = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)
    ours, theirs = make(regularizers), make(tfk.regularizers)
    np.testing.assert_allclose(float(ours(ig.constant(w))), float(theirs(w)), rtol=1e-6)
    assert ours.get_config() == theirs.get_config()
    assert type(regularizers.get(regularizers.serialize(ours))) is type(ours)


def test_regularizer_errors():
    with pytest.raises(ValueError, match="not a valid regularization penalty number"):
        regularizers.L2("x")
    with pytest.raises(ValueError, match="infinite number or NaN"):
        regularizers.L1(float("nan"))
    with pytest.raises(ValueError, match="Could not interpret regularizer identifier"):
        regularizers.get(1)
    assert regularizers.get(None) is None


@pytest.mark.parametrize("make", [lambda m: m.MaxNorm(1.5), lambda m: m.NonNeg(),
                                  lambda m: m.UnitNorm(axis=1),
                                  lambda m: m.MinMaxNorm(0.5, 1.0, rate=0.7),
                                  lambda m: m.get("max_norm"), lambda m: m.get("unit_norm")],
                         ids=["max_norm", "non_neg", "unit_norm", "min_max_norm", "get-max_norm",
                              "get-unit_norm"])
def test_constraints_match_tf_keras(tfk, make):
    w = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)
    ours, theirs = make(constraints), make(tfk.constraints)
    np.testing.assert_allclose(ours(ig.constant(w)).numpy(), theirs(w).numpy(), rtol=1e-6)
    assert ours.get_config() == theirs.get_config()
    assert type(constraints.get(constraints.serialize(ours))) is type(ours)
    assert constraints.get(None) is None


# ---- backend ----------------------------------------------------------------------------------
def test_backend_settings(tfk):
    assert backend.floatx() == tfk.backend.floatx() == "float32"
    assert backend.epsilon() == tfk.backend.epsilon() == 1e-7
    try:
        backend.set_floatx("float64")
        assert backend.floatx() == "float64"
        assert initializers.Ones()((1,)).dtype == np.float64
        backend.set_epsilon(1e-5)
        assert backend.epsilon() == 1e-5
    finally:
        backend.set_floatx("float32")
        backend.set_epsilon(1e-7)
    with pytest.raises(ValueError, match="Unknown `floatx` value"):
        backend.set_floatx("int8")
    previous = backend.image_data_format()
    try:
        backend.set_image_data_format("channels_first")
        assert backend.image_data_format() == "channels_first"
    finally:
        backend.set_image_data_format(previous)
    with pytest.raises(ValueError, match="The `data_format` argument must be one of"):
        backend.set_image_data_format("nhwc")
    assert backend.learning_phase() == 0
    with backend.learning_phase_scope(1):
        assert backend.learning_phase() == 1
    with pytest.raises(ValueError, match="Expected learning phase to be 0 or 1"):
        backend.set_learning_phase(2)
    backend.set_learning_phase(1)
    assert backend.learning_phase() == 1
    backend.clear_session()
    assert backend.learning_phase() == 0 and not backend.global_learning_phase_is_set()


def test_backend_tensor_helpers():
    x = ig.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert backend.int_shape(x) == (2, 3) and backend.ndim(x) == 2
    assert backend.dtype(x) == "float32"
    np.testing.assert_array_equal(backend.get_value(x), x.numpy())
    v = ig.Variable(np.zeros(3, np.float32))
    backend.set_value(v, [1, 2, 3])
    np.testing.assert_array_equal(v.numpy(), [1, 2, 3])
    assert backend.count_params(v) == 3
    np.testing.assert_allclose(backend.mean(x, axis=-1).numpy(), [1.0, 4.0])
    np.testing.assert_allclose(backend.clip(x, 1.0, 3.0).numpy(), np.clip(x.numpy(), 1, 3))
    np.testing.assert_allclose(backend.sqrt(ig.constant([-1.0, 4.0])).numpy(), [0.0, 2.0])
    assert backend.cast_to_floatx(np.array([1, 2])).dtype == np.float32
    with pytest.raises(ValueError, match="Expected a symbolic tensor instance"):
        backend.is_keras_tensor(3)
