"""tf.layers' classes (TF 1.15's legacy layers: Dense, Conv2D, MaxPooling2D,
AveragePooling2D, BatchNormalization, Dropout, Flatten): scopes and names, reuse on a second
call, variables/updates/losses bookkeeping, outputs and a training step, against real TF1
graph mode with identical initial values."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as tf
import ipu_gpu.compat.v1 as v1

_RNG = np.random.default_rng(3)
_X = _RNG.standard_normal((4, 8, 8, 3)).astype(np.float32)
_X2 = _RNG.standard_normal((4, 8, 8, 3)).astype(np.float32)
_K1 = (_RNG.standard_normal(3 * 3 * 3 * 4) * 0.3).astype(np.float32)
_K2 = (_RNG.standard_normal(16 * 5) * 0.3).astype(np.float32)


def _build_and_run(tf_mod, c):
    g = c.Graph()
    with g.as_default():
        x = c.placeholder(tf_mod.float32, [None, 8, 8, 3], name="x")
        training = c.placeholder(tf_mod.bool, [], name="training")
        L = c.layers
        conv = L.Conv2D(4, 3, strides=2, padding="same", activation=tf_mod.nn.relu,
                        kernel_initializer=c.constant_initializer(_K1),
                        kernel_regularizer=lambda w: 0.01 * c.reduce_sum(c.square(w)),
                        name="sub/conv1")
        bn = L.BatchNormalization(momentum=0.9)
        pool = L.MaxPooling2D(2, 2)
        avg = L.AveragePooling2D(1, 1)
        flat = L.Flatten()
        drop = L.Dropout(0.5)
        dense = L.Dense(5, kernel_initializer=c.constant_initializer(_K2), name="head")

        def net(inp, bn_training):
            h = bn(conv(inp), training=bn_training)
            h = flat(avg(pool(h)))
            return dense(drop(h, training=False))
        y1 = net(x, training)
        # second call: the same variables, ops in the same scopes (batch normalization with
        # its moving statistics: TF's reads of a variable two updates assign race)
        y2 = net(x * 2.0, False)
        # the step's loss reads no moving statistics (TF's reads race the updates)
        loss = c.reduce_mean(c.square(y1)) + c.add_n(conv.losses)
        with c.control_dependencies(bn.updates):
            step = c.train.GradientDescentOptimizer(0.1).minimize(loss)
        info = dict(
            names=[v.name for v in c.global_variables()],
            layer_vars=[[v.name for v in layer.variables] for layer in (conv, bn, dense)],
            trainable=[[v.name for v in layer.trainable_variables] for layer in (conv, bn)],
            non_trainable=[v.name for v in bn.non_trainable_variables],
            attrs=[conv.kernel.name, conv.bias.name, dense.kernel.name, bn.gamma.name,
                   bn.moving_mean.name, bn.moving_variance.name],
            layer_names=[conv.name, bn.name, pool.name, flat.name, dense.name, drop.name],
            scopes=[conv.scope_name, bn.scope_name, dense.scope_name],
            counts=[len(bn.updates), len(conv.losses), len(dense.losses),
                    len(c.get_collection(c.GraphKeys.UPDATE_OPS))],
            built=[conv.built, dense.built],
            y_ops=[y1.op.name.split("/")[0], y2.op.name.split("/")[0]],
        )
        with c.Session(graph=g) as sess:
            sess.run(c.global_variables_initializer())
            values = []
            for feed in (_X, _X2):
                values.append(sess.run([y1, y2, loss], {x: feed, training: True}))
                sess.run(step, {x: feed, training: True})
            values.append(sess.run([y1, loss], {x: _X, training: False}))
            values.append(sess.run([dense.kernel, bn.moving_mean, bn.moving_variance]))
        return info, values


@pytest.mark.filterwarnings("ignore:`tf.layers:UserWarning")  # TF's deprecation notices
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_layer_classes_equal_real_tensorflow(real_tf, monkeypatch):
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", "1")  # TF's tf.layers need Keras 2
    ours = _build_and_run(tf, v1)
    theirs = _build_and_run(real_tf, real_tf.compat.v1)
    for key in theirs[0]:
        assert ours[0][key] == theirs[0][key], (key, ours[0][key], theirs[0][key])
    for a_run, b_run in zip(ours[1], theirs[1]):
        for a, b in zip(a_run, b_run):
            np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5)


def test_dense_class_against_numpy_and_reuse():
    w = np.arange(6, dtype=np.float32).reshape(3, 2) / 4
    with v1.Graph().as_default() as g:
        x = v1.placeholder(np.float32, [None, 3])
        layer = v1.layers.Dense(2, activation=v1.nn.relu, bias_initializer=v1.ones_initializer(),
                                kernel_initializer=v1.constant_initializer(w))
        assert not layer.built and layer.variables == []
        a, b = layer(x), layer.apply(x + 1.0)
        other = v1.layers.Dense(2)(x)
        assert [v.name for v in v1.global_variables()] == [
            "dense/kernel:0", "dense/bias:0", "dense_1/kernel:0", "dense_1/bias:0"]
        assert other.op.name.startswith("dense_1/")
        with v1.Session(graph=g) as sess:
            sess.run(v1.global_variables_initializer())
            xv = np.array([[1.0, -2.0, 0.5]], np.float32)
            av, bv = sess.run([a, b], {x: xv})
    np.testing.assert_allclose(av, np.maximum(xv @ w + 1.0, 0.0), rtol=1e-6)
    np.testing.assert_allclose(bv, np.maximum((xv + 1.0) @ w + 1.0, 0.0), rtol=1e-6)


def test_dropout_class_with_a_training_tensor():
    with v1.Graph().as_default() as g:
        x = v1.placeholder(np.float32, [2, 1000])
        training = v1.placeholder(np.bool_, [])
        v1.set_random_seed(1)
        y = v1.layers.Dropout(0.25)(x, training=training)
        ones = np.ones((2, 1000), np.float32)
        with v1.Session(graph=g) as sess:
            off = sess.run(y, {x: ones, training: False})
            on = sess.run(y, {x: ones, training: True})
    np.testing.assert_array_equal(off, ones)
    assert set(np.unique(on)) <= {0.0, np.float32(1 / 0.75)}
    assert 0.15 < float(np.mean(on == 0.0)) < 0.35


def test_layer_class_errors_as_tf():
    with pytest.raises(ValueError, match="kernel_size"):
        v1.layers.Conv2D(4, (1, 2, 3))
    with pytest.raises(ValueError, match="padding"):
        v1.layers.MaxPooling2D(2, 2, padding="full")
    with v1.Graph().as_default():
        layer = v1.layers.Dense(3)
        with pytest.raises(ValueError, match="has not been used yet"):
            layer.scope_name  # noqa: B018 - the property raises


@pytest.mark.filterwarnings("ignore:`tf.layers:UserWarning")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_dense_on_rank_3_inputs_equals_real_tensorflow(real_tf, monkeypatch):
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", "1")
    x_val = _RNG.standard_normal((2, 5, 3)).astype(np.float32)
    k_val = _RNG.standard_normal((3, 4)).astype(np.float32)

    def run(c, tf_mod):
        with c.Graph().as_default() as g:
            x = c.placeholder(tf_mod.float32, [None, 5, 3])
            layer = c.layers.Dense(4, kernel_initializer=c.constant_initializer(k_val))
            y = layer(x)
            z = c.layers.dense(x, 2, name="second")
            grads = c.gradients(c.reduce_sum(y * y), [layer.kernel, x])
            with c.Session(graph=g) as sess:
                sess.run(c.global_variables_initializer())
                return (y.shape.as_list(), z.shape.as_list(), sess.run(y, {x: x_val}),
                        *sess.run(grads, {x: x_val}))
    ours, theirs = run(v1, tf), run(real_tf.compat.v1, real_tf)
    assert ours[:2] == theirs[:2] == ([None, 5, 4], [None, 5, 2])
    for a, b in zip(ours[2:], theirs[2:]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours[2], x_val @ k_val, rtol=1e-5, atol=1e-6)


@pytest.mark.filterwarnings("ignore:`tf.layers:UserWarning")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_functional_and_class_output_names_equal_real_tensorflow(real_tf, monkeypatch):
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", "1")

    def names(c, tf_mod):
        with c.Graph().as_default():
            x = c.placeholder(tf_mod.float32, [None, 8, 8, 3])
            L = c.layers
            a = L.conv2d(x, 4, 3, activation=tf_mod.nn.relu)
            b = L.conv2d(a, 4, 3, name="named")
            p = L.average_pooling2d(L.max_pooling2d(b, 2, 2), 1, 1)
            d = L.dense(L.flatten(p), 5, activation=tf_mod.nn.relu)
            e = L.dropout(L.dense(d, 2, name="head"), training=False)
            classes = [L.Conv2D(4, 3, activation=tf_mod.nn.relu)(x), L.MaxPooling2D(2, 2)(x),
                       L.Flatten()(x), L.Dense(3, activation=tf_mod.nn.relu)(L.flatten(x)),
                       L.Dropout(0.5)(x)]
            return [t.op.name for t in (a, b, p, d, e, *classes)]
    assert names(v1, tf) == names(real_tf.compat.v1, real_tf)
