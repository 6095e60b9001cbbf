"""Keras ``fit`` under a distribution strategy scales the loss as Keras 2 does (issue 16):
divided by ``num_replicas_in_sync`` for SUM_OVER_BATCH_SIZE/AUTO losses and for the
regularization losses, a SUM loss's metric multiplied by it. ``IPUStrategy`` reports one
replica, so its R replicas' gradients are summed (Graphcore's semantics); ``PopDistStrategy``
reports R, so they are averaged (Graphcore's keras/ipu/distributed_test.py). Checked against a
numpy float64 model of R replicas (replica r takes dataset element step * R + r), Graphcore's
own test, and tf-keras under a MirroredStrategy of R CPU replicas (in a subprocess, whose
TensorFlow can be given R logical devices)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from ipu_gpu import keras
from ipu_gpu.emulation import system
from ipu_gpu.ipu import config as ipu_config
from ipu_gpu.ipu import ipu_strategy
from ipu_gpu.ipu.distributed import popdist_strategy
from ipu_gpu.popdist import tensorflow as popdist_tf

_POPDIST_ENV = ("POPDIST_NUM_INSTANCES", "POPDIST_INSTANCE_INDEX", "POPDIST_NUM_LOCAL_REPLICAS",
                "POPDIST_NUM_IPUS_PER_REPLICA")


@pytest.fixture
def replicas_env(monkeypatch):
    for name in _POPDIST_ENV:
        monkeypatch.delenv(name, raising=False)

    def set_replicas(r):
        monkeypatch.setenv("POPDIST_NUM_LOCAL_REPLICAS", str(r))
        system.reset()
        cfg = ipu_config.IPUConfig()
        popdist_tf.set_ipu_config(cfg)
        cfg.configure_ipu_system()
    yield set_replicas
    system.reset()


def _data(seed=0, n=48, d=4):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    y = (x @ rng.standard_normal((d, 1)) + 0.1 * rng.standard_normal((n, 1))).astype(np.float32)
    return x, y


def _numpy_replicas(x, y, w0, b0, lr, batch, replicas, steps, average, l2=0.0, reduction="mean"):
    """float64 SGD on a linear model: replica r of step s takes batch s * R + r; each replica's
    gradient of (its loss + the L2 penalty), divided by R when ``average``, summed. Returns
    the per-step loss metric values (the mean over replicas) and the final weights."""
    w, b = w0.astype(np.float64), b0.astype(np.float64)
    metric = []
    for s in range(steps):
        gw, gb, values = np.zeros_like(w), np.zeros_like(b), []
        for r in range(replicas):
            k = s * replicas + r
            xb, yb = x[k * batch:(k + 1) * batch].astype(np.float64), y[k * batch:(k + 1) * batch]
            err = xb @ w + b - yb
            scale = 1.0 / batch if reduction == "mean" else 1.0
            data_loss = np.sum(err ** 2) * scale
            dw, db = 2 * xb.T @ err * scale + 2 * l2 * w, 2 * err.sum(0) * scale
            div = replicas if average else 1
            if reduction == "sum" and average:  # a SUM loss is not divided, its penalty is
                dw = 2 * xb.T @ err * scale + 2 * l2 * w / replicas
                div = 1
            gw, gb = gw + dw / div, gb + db / div
            # a SUM loss's metric counts every replica (Keras multiplies it by R)
            values.append(data_loss * (replicas if (reduction == "sum" and average) else 1)
                          + l2 * np.sum(w ** 2))
        w, b = w - lr * gw, b - lr * gb
        metric.append(values)
    return metric, w, b


def _fit(strategy_cls, x, y, w0, b0, lr, batch, replicas, l2=0.0, reduction="auto"):
    strategy = strategy_cls()
    with strategy.scope():
        reg = keras.regularizers.l2(l2) if l2 else None
        model = keras.Sequential([keras.layers.Dense(1, kernel_regularizer=reg,
                                                     input_shape=(x.shape[1],))])
        model.set_weights([w0, b0])
        model.compile(optimizer=keras.optimizers.SGD(lr),
                      loss=keras.losses.MeanSquaredError(reduction=reduction),
                      steps_per_execution=1)
        history = model.fit(x, y, batch_size=batch, epochs=1, shuffle=False, verbose=0)
    return history.history["loss"], model.get_weights()


@pytest.mark.parametrize("replicas", [2, 4])
@pytest.mark.parametrize("which", ["popdist", "ipu"])
def test_fit_equals_a_numpy_model_of_r_replicas(replicas_env, replicas, which):
    replicas_env(replicas)
    x, y = _data(replicas)
    rng = np.random.default_rng(10 + replicas)
    w0 = rng.standard_normal((4, 1)).astype(np.float32)
    b0 = rng.standard_normal(1).astype(np.float32)
    batch, lr, l2 = 3, 0.02, 0.01
    cls = popdist_strategy.PopDistStrategy if which == "popdist" else ipu_strategy.IPUStrategy
    loss, (w, b) = _fit(cls, x, y, w0, b0, lr, batch, replicas, l2=l2)
    steps = len(x) // (batch * replicas)
    metric, w_ref, b_ref = _numpy_replicas(x, y, w0, b0, lr, batch, replicas, steps,
                                           average=which == "popdist", l2=l2)
    np.testing.assert_allclose(w, w_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b, b_ref, rtol=1e-5, atol=1e-6)
    # History reports the last replica's epoch mean (Graphcore's default metric reduction)
    np.testing.assert_allclose(loss[0], np.mean([v[-1] for v in metric]), rtol=1e-5)


def test_popdist_fit_equals_one_replica_on_the_combined_batch(replicas_env):
    """Averaged gradients: R replicas of batch B under PopDistStrategy train as one device on
    batches of R * B (the loss is a mean, so the numbers agree to rounding)."""
    x, y = _data(3)
    rng = np.random.default_rng(4)
    w0, b0 = rng.standard_normal((4, 1)).astype(np.float32), np.zeros(1, np.float32)
    replicas_env(2)
    _, (w2, b2) = _fit(popdist_strategy.PopDistStrategy, x, y, w0, b0, 0.05, 4, 2)
    replicas_env(1)
    _, (w1, b1) = _fit(popdist_strategy.PopDistStrategy, x, y, w0, b0, 0.05, 8, 1)
    np.testing.assert_allclose(w2, w1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b2, b1, rtol=1e-5, atol=1e-6)


def test_ipu_strategy_sums_so_lr_over_r_equals_popdist(replicas_env):
    """IPUStrategy (one TF replica) sums the gradients: with the learning rate divided by R it
    gives PopDistStrategy's averaged run exactly (R = 2: scaling by 1/2 is exact)."""
    x, y = _data(5)
    rng = np.random.default_rng(6)
    w0, b0 = rng.standard_normal((4, 1)).astype(np.float32), np.ones(1, np.float32)
    replicas_env(2)
    pd_loss, pd_w = _fit(popdist_strategy.PopDistStrategy, x, y, w0, b0, 0.05, 4, 2, l2=0.01)
    ipu_loss, ipu_w = _fit(ipu_strategy.IPUStrategy, x, y, w0, b0, 0.025, 4, 2, l2=0.01)
    assert pd_loss == ipu_loss
    for a, b in zip(pd_w, ipu_w):
        np.testing.assert_array_equal(a, b)


def test_sum_reduction_is_not_divided_and_its_metric_is_multiplied(replicas_env):
    replicas_env(2)
    x, y = _data(7, n=24)
    w0, b0 = np.full((4, 1), 0.3, np.float32), np.zeros(1, np.float32)
    loss, (w, b) = _fit(popdist_strategy.PopDistStrategy, x, y, w0, b0, 0.01, 3, 2,
                        l2=0.01, reduction="sum")
    steps = len(x) // 6
    metric, w_ref, b_ref = _numpy_replicas(x, y, w0, b0, 0.01, 3, 2, steps, average=True,
                                           l2=0.01, reduction="sum")
    np.testing.assert_allclose(w, w_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b, b_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(loss[0], np.mean([v[-1] for v in metric]), rtol=1e-5)


@pytest.mark.parametrize("replicas", [2, 4])
def test_graphcore_single_multi_replica_training_step_keras(replicas_env, replicas):
    """Graphcore's keras/ipu/distributed_test.py: a loss ``w * x`` on every replica reports
    ``w * x`` and moves ``w`` by ``lr * x`` under PopDistStrategy."""
    replicas_env(replicas)
    with popdist_strategy.PopDistStrategy().scope():
        lr, w = 0.5, 2.0
        model = keras.Sequential([keras.layers.Dense(
            1, kernel_initializer=keras.initializers.Constant(w), use_bias=False)])
        model.compile(loss=lambda _, y_pred: y_pred, optimizer=keras.optimizers.SGD(lr),
                      steps_per_execution=1)
        model.build((1, 1))
        for x in range(5):
            assert model.trainable_variables[0].numpy()[0, 0] == w
            data = np.array([[x]], np.float32).repeat(replicas, axis=0)
            history = model.fit(data, data, batch_size=1, epochs=1, verbose=0)
            assert history.history["loss"][0] == w * x
            w -= lr * x


_MIRRORED = r"""
import json, os, sys
import numpy as np
import tensorflow as tf
R, lr, batch, l2 = int(sys.argv[1]), 0.02, 3, 0.01
tf.config.set_logical_device_configuration(
    tf.config.list_physical_devices("CPU")[0], [tf.config.LogicalDeviceConfiguration()] * R)
import tf_keras as keras
data = json.loads(sys.stdin.read())
x, y = np.array(data["x"], np.float32), np.array(data["y"], np.float32)
strategy = tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(R)])
assert strategy.num_replicas_in_sync == R
with strategy.scope():
    model = keras.Sequential([keras.layers.Dense(1, kernel_regularizer=keras.regularizers.l2(l2),
                                                 input_shape=(x.shape[1],))])
    model.set_weights([np.array(data["w0"], np.float32), np.array(data["b0"], np.float32)])
    model.compile(optimizer=keras.optimizers.legacy.SGD(lr), loss="mse")
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(batch * R, drop_remainder=True)
opts = tf.data.Options()
opts.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
h = model.fit(ds.with_options(opts), epochs=1, verbose=0)
print(json.dumps({"loss": h.history["loss"], "w": [a.tolist() for a in model.get_weights()]}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("replicas", [2])
def test_popdist_fit_equals_tf_keras_under_mirrored_strategy(replicas_env, real_tf, replicas):
    """tf-keras divides the loss by num_replicas_in_sync under a MirroredStrategy of R CPU
    replicas (each taking a consecutive slice of the global batch, which is the batch the
    IPU's replica r takes): the weights after an epoch agree with PopDistStrategy's. (The
    History values differ by design: tf-keras averages the loss metric over all replicas,
    Graphcore's Keras reports the last replica's by default.)"""
    x, y = _data(replicas)
    rng = np.random.default_rng(10 + replicas)
    w0 = rng.standard_normal((4, 1)).astype(np.float32)
    b0 = rng.standard_normal(1).astype(np.float32)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", TF_ENABLE_ONEDNN_OPTS="0",
               CUDA_VISIBLE_DEVICES="")
    out = subprocess.run([sys.executable, "-c", _MIRRORED, str(replicas)], env=env,
                         input=json.dumps({"x": x.tolist(), "y": y.tolist(),
                                           "w0": w0.tolist(), "b0": b0.tolist()}),
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    theirs = json.loads(out.stdout.strip().splitlines()[-1])
    replicas_env(replicas)
    loss, (w, b) = _fit(popdist_strategy.PopDistStrategy, x, y, w0, b0, 0.02, 3, replicas,
                        l2=0.01)
    np.testing.assert_allclose(w, np.array(theirs["w"][0]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b, np.array(theirs["w"][1]), rtol=1e-5, atol=1e-6)
    assert np.isfinite(loss[0]) and np.isfinite(theirs["loss"][0])
