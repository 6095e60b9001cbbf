"""tf.compat.v1.train AdadeltaOptimizer, FtrlOptimizer (FtrlV2 shrinkage, other powers,
beta), ProximalGradientDescentOptimizer and ProximalAdagradOptimizer: a small MLP trained in
graph mode equals real TF1 graph mode, each update equals a numpy model of TF's kernel, and
bad hyper-parameters raise TF's errors."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu.compat.v1 as v1

_RNG = np.random.default_rng(5)
_X = _RNG.standard_normal((16, 5)).astype(np.float32)
_Y = _RNG.integers(0, 3, 16).astype(np.int32)
_W1 = (_RNG.standard_normal((5, 8)) * 0.5).astype(np.float32)
_W2 = (_RNG.standard_normal((8, 3)) * 0.5).astype(np.float32)

_OPTIMIZERS = {
    "adadelta": lambda c: c.train.AdadeltaOptimizer(1.0, rho=0.9, epsilon=1e-6),
    "ftrl": lambda c: c.train.FtrlOptimizer(0.3, l1_regularization_strength=0.01,
                                            l2_regularization_strength=0.02),
    "ftrl_power": lambda c: c.train.FtrlOptimizer(0.3, learning_rate_power=-0.3,
                                                  initial_accumulator_value=0.2),
    "ftrl_shrinkage": lambda c: c.train.FtrlOptimizer(
        0.3, l1_regularization_strength=0.001, l2_shrinkage_regularization_strength=0.05),
    "ftrl_beta": lambda c: c.train.FtrlOptimizer(0.3, beta=0.5),
    "proximal_sgd": lambda c: c.train.ProximalGradientDescentOptimizer(
        0.2, l1_regularization_strength=0.01, l2_regularization_strength=0.05),
    "proximal_sgd_l2": lambda c: c.train.ProximalGradientDescentOptimizer(
        0.2, l2_regularization_strength=0.05),
    "proximal_adagrad": lambda c: c.train.ProximalAdagradOptimizer(
        0.2, l1_regularization_strength=0.005, l2_regularization_strength=0.01),
}


def _mlp(tf_mod, c, optimizer, steps=5):
    with c.Graph().as_default():
        x = c.placeholder(np.float32, [None, 5])
        y = c.placeholder(np.int32, [None])
        w1, w2 = c.Variable(_W1, name="w1"), c.Variable(_W2, name="w2")
        logits = tf_mod.matmul(tf_mod.nn.relu(tf_mod.matmul(x, w1)), w2)
        loss = tf_mod.reduce_mean(tf_mod.nn.sparse_softmax_cross_entropy_with_logits(
            labels=y, logits=logits))
        opt = _OPTIMIZERS[optimizer](c)
        step = opt.minimize(loss)
        with c.Session() as sess:
            sess.run(c.global_variables_initializer())
            losses = [sess.run([loss, step], {x: _X, y: _Y})[0] for _ in range(steps)]
            return np.array(losses), sess.run([w1, w2]), sorted(opt.get_slot_names())


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("optimizer", sorted(_OPTIMIZERS))
def test_training_equals_real_tf1_graph_mode(real_tf, optimizer):
    import ipu_gpu as tf

    ours = _mlp(tf, v1, optimizer)
    theirs = _mlp(real_tf, real_tf.compat.v1, optimizer)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5, atol=1e-6)
    for a, b in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=2e-6)
    assert ours[2] == theirs[2]


_V0 = np.array([0.5, -1.0, 0.02, 2.0], np.float32)
_GRADS = [np.array([0.3, -0.2, 0.01, 1.5], np.float32),
          np.array([-0.1, 0.4, -0.05, 0.5], np.float32)]


def _numpy_steps(kind, lr=0.1, l1=0.05, l2=0.1):
    v = _V0.astype(np.float64)
    a = np.zeros(4) if kind == "adadelta" else np.full(4, 0.1)
    b = np.zeros(4)
    for g in _GRADS:
        g = g.astype(np.float64)
        if kind == "adadelta":  # a: accum, b: accum_update (rho 0.95, eps 1e-8)
            a = a * 0.95 + g * g * 0.05
            update = np.sqrt(b + 1e-8) / np.sqrt(a + 1e-8) * g
            v = v - lr * update
            b = b * 0.95 + update * update * 0.05
        elif kind == "ftrl":  # a: accum, b: linear
            n = a + g * g
            b = b + g - (np.sqrt(n) - np.sqrt(a)) / lr * v
            v = np.where(np.abs(b) > l1, (l1 * np.sign(b) - b) / (np.sqrt(n) / lr + 2 * l2),
                         0.0)
            a = n
        elif kind == "proximal_sgd":
            prox = v - lr * g
            v = np.sign(prox) * np.maximum(np.abs(prox) - lr * l1, 0) / (1 + lr * l2)
        else:  # proximal_adagrad
            a = a + g * g
            rate = lr / np.sqrt(a)
            prox = v - rate * g
            v = np.sign(prox) * np.maximum(np.abs(prox) - rate * l1, 0) / (1 + rate * l2)
    return v


@pytest.mark.parametrize("kind", ["adadelta", "ftrl", "proximal_sgd", "proximal_adagrad"])
def test_updates_equal_a_numpy_model_of_the_kernel(kind):
    make = {"adadelta": lambda: v1.train.AdadeltaOptimizer(0.1),
            "ftrl": lambda: v1.train.FtrlOptimizer(0.1, l1_regularization_strength=0.05,
                                                   l2_regularization_strength=0.1),
            "proximal_sgd": lambda: v1.train.ProximalGradientDescentOptimizer(
                0.1, l1_regularization_strength=0.05, l2_regularization_strength=0.1),
            "proximal_adagrad": lambda: v1.train.ProximalAdagradOptimizer(
                0.1, l1_regularization_strength=0.05, l2_regularization_strength=0.1)}[kind]
    with v1.Graph().as_default() as g:
        var = v1.Variable(_V0)
        grad = v1.placeholder(np.float32, [4])
        step = make().apply_gradients([(grad, var)])
        with v1.Session(graph=g) as sess:
            sess.run(v1.global_variables_initializer())
            for gv in _GRADS:
                sess.run(step, {grad: gv})
            got = sess.run(var)
    np.testing.assert_allclose(got, _numpy_steps(kind), rtol=1e-5, atol=1e-7)


def test_bad_hyper_parameters_raise_as_tf():
    with pytest.raises(ValueError, match="initial_accumulator_value -1.000000 needs to be "
                                         "positive or zero"):
        v1.train.FtrlOptimizer(0.1, initial_accumulator_value=-1.0)
    with pytest.raises(ValueError, match="learning_rate_power 0.500000 needs to be negative"):
        v1.train.FtrlOptimizer(0.1, learning_rate_power=0.5)
    with pytest.raises(ValueError, match="l1_regularization_strength -0.100000 needs to be"):
        v1.train.FtrlOptimizer(0.1, l1_regularization_strength=-0.1)
    with pytest.raises(ValueError, match="l2_shrinkage_regularization_strength -1.000000"):
        v1.train.FtrlOptimizer(0.1, l2_shrinkage_regularization_strength=-1.0)
    with pytest.raises(ValueError, match="initial_accumulator_value must be positive: 0.0"):
        v1.train.ProximalAdagradOptimizer(0.1, initial_accumulator_value=0.0)
