"""``BatchNormalization(synchronized=True)`` (issue 16): statistics over the replicas in sync,
as tf-keras's ``_sync_calculate_mean_and_var``. Without a strategy it equals tf-keras's
synchronized layer (the default replica context; values, gradients, moving statistics) and a
float64 numpy reference; under ``IPUStrategy`` with R replicas the batch statistics and the
moving statistics are those of all R replicas' batches, so R replicas of batch B train as
tf-keras on batches of R * B (the IPU sums the replicas' gradients: learning rate times R)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import configure_ipus

import ipu_gpu as ig
from ipu_gpu import keras
from ipu_gpu.ipu import ipu_strategy


@pytest.fixture(scope="module")
def tfk(real_tf):
    return pytest.importorskip("tf_keras")


@pytest.mark.parametrize("axis,shape", [(-1, (6, 4)), (1, (3, 4, 2, 2)), (-1, (2, 3, 5))])
def test_matches_tf_keras_without_a_strategy(tfk, real_tf, axis, shape):
    tf = real_tf
    rng = np.random.default_rng(len(shape))
    x = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
    ours = keras.layers.BatchNormalization(axis=axis, synchronized=True, momentum=0.8)
    theirs = tfk.layers.BatchNormalization(axis=axis, synchronized=True, momentum=0.8)
    ours.build(shape)
    theirs.build(shape)
    weights = [w + rng.standard_normal(w.shape).astype(np.float32) * 0.1
               for w in theirs.get_weights()]
    ours.set_weights(weights)
    theirs.set_weights(weights)
    u = rng.standard_normal(shape).astype(np.float32)
    xt, xi = tf.constant(x), ig.constant(x)
    with tf.GradientTape() as t1:
        t1.watch(xt)
        yt = theirs(xt, training=True)
        lt = tf.reduce_sum(yt * u)
    with ig.GradientTape() as t2:
        t2.watch(xi)
        yi = ours(xi, training=True)
        li = ig.reduce_sum(yi * u)
    np.testing.assert_allclose(yi.numpy(), yt.numpy(), rtol=1e-4, atol=1e-4)
    for a, b in zip(t2.gradient(li, [xi, *ours.trainable_variables]),
                    t1.gradient(lt, [xt, *theirs.trainable_variables])):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-4)
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # the float64 reference: moments over every axis but the channel axis
    axes = tuple(i for i in range(len(shape)) if i != axis % len(shape))
    gamma, beta = weights[0], weights[1]
    bshape = [1] * len(shape)
    bshape[axis] = shape[axis]
    x64 = x.astype(np.float64)
    mean = x64.mean(axes, keepdims=True)
    var = np.maximum((x64 ** 2).mean(axes, keepdims=True) - mean ** 2, 0)
    want = (x64 - mean) / np.sqrt(var + 1e-3) * gamma.reshape(bshape) + beta.reshape(bshape)
    np.testing.assert_allclose(yi.numpy(), want, rtol=1e-4, atol=1e-4)
    assert ours.get_config() == theirs.get_config() | {"name": ours.name}


def test_fused_and_synchronized_is_refused_as_tf_keras(tfk):
    with pytest.raises(ValueError) as theirs:
        tfk.layers.BatchNormalization(synchronized=True, fused=True)
    with pytest.raises(ValueError) as ours:
        keras.layers.BatchNormalization(synchronized=True, fused=True)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.usefixtures("fresh_ipu_system")
@pytest.mark.parametrize("replicas", [2, 4])
def test_ipu_replicas_share_statistics_and_train_as_the_combined_batch(tfk, replicas):
    rng = np.random.default_rng(replicas)
    batch, steps = 4, 3
    x = (rng.standard_normal((batch * replicas * steps, 5)) * 2 + 1).astype(np.float32)
    y = rng.standard_normal((len(x), 1)).astype(np.float32)

    def build(lib, synchronized):
        kwargs = {"synchronized": True} if synchronized else {}
        return lib.Sequential([lib.layers.Dense(4, input_shape=(5,)),
                               lib.layers.BatchNormalization(momentum=0.5, **kwargs),
                               lib.layers.Dense(1)])

    theirs = build(tfk, False)
    theirs.compile(optimizer=tfk.optimizers.legacy.SGD(0.01 * replicas), loss="mse")
    configure_ipus(replicas)
    with ipu_strategy.IPUStrategy().scope():
        ours = build(keras, True)
        ours.set_weights(theirs.get_weights())
        ours.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse", steps_per_execution=1)
        ours.fit(x, y, batch_size=batch, epochs=1, shuffle=False, verbose=0)
    theirs.fit(x, y, batch_size=batch * replicas, epochs=1, shuffle=False, verbose=0)
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5)


@pytest.mark.usefixtures("fresh_ipu_system")
def test_unsynchronized_replicas_keep_their_own_statistics():
    """The control: without ``synchronized`` each replica normalises by its own batch, so the
    moving mean the host sees is replica 0's batch mean, not the combined one."""
    configure_ipus(2)
    x = np.concatenate([np.zeros((4, 3)), np.ones((4, 3)) * 8]).astype(np.float32)
    means = {}
    for sync in (False, True):
        with ipu_strategy.IPUStrategy().scope():
            model = keras.Sequential([keras.layers.BatchNormalization(
                momentum=0.0, synchronized=sync, input_shape=(3,))])
            model.compile(optimizer=keras.optimizers.SGD(0.0), loss="mse",
                          steps_per_execution=1)
            model.fit(x, x, batch_size=4, epochs=1, shuffle=False, verbose=0)
            means[sync] = model.layers[0].moving_mean.numpy()
    np.testing.assert_allclose(means[False], 0.0)
    np.testing.assert_allclose(means[True], 4.0)
