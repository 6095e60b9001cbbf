"""The IPU utilities a TF1 program calls in graph mode (move_variable_initialization_to_cpu,
reset_ipu_seed, ipu_shard, tf.device("cpu") around host tensors) in a sharded program
compiled once and run by a Session, against the same model in real TF1 graph mode."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu.compat.v1 as v1

_RNG = np.random.default_rng(5)
_X = _RNG.standard_normal((4, 3)).astype(np.float32)
_K1 = (_RNG.standard_normal((3, 5)) * 0.5).astype(np.float32)
_K2 = (_RNG.standard_normal((5, 1)) * 0.5).astype(np.float32)


def _model(c, x, shard=None):
    import contextlib

    shard = shard or (lambda i: contextlib.nullcontext())
    with shard(0):
        h = c.layers.dense(x, 5, activation=c.nn.relu,
                           kernel_initializer=c.constant_initializer(_K1))
    with shard(1):
        out = c.layers.dense(h, 1, kernel_initializer=c.constant_initializer(_K2))
    loss = c.reduce_mean(out * out)
    step = c.train.get_or_create_global_step()
    train = c.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    return loss, train


def _ipu_run(steps):
    from conftest import configure_ipus

    from ipu_gpu.ipu import ipu_compiler, scopes, utils

    configure_ipus(2)
    with v1.Graph().as_default():
        with v1.device("cpu"):
            x = v1.placeholder(np.float32, [4, 3], name="x")
        with scopes.ipu_scope("/device:IPU:0"):
            # the train op becomes a control dependency of the program's one output
            (loss,) = ipu_compiler.compile(lambda x: _model(v1, x, scopes.ipu_shard), [x])
        assert utils.move_variable_initialization_to_cpu() is None
        init = v1.global_variables_initializer()
        with v1.Session() as sess:
            sess.run(init)
            utils.reset_ipu_seed(1)
            losses = [sess.run(loss, {x: _X}) for _ in range(steps)]
            step = sess.run(v1.train.get_global_step())
        return np.array(losses), step


def _reference_run(c, steps):
    g = c.Graph()
    with g.as_default():
        with c.device("cpu"):
            x = c.placeholder(np.float32, [4, 3], name="x")
        loss, train = _model(c, x)
        with c.Session(graph=g) as sess:
            sess.run(c.global_variables_initializer())
            losses = [sess.run([loss, train], {x: _X})[0] for _ in range(steps)]
            return np.array(losses), sess.run(c.train.get_global_step())


@pytest.mark.filterwarnings("ignore:`tf.layers:UserWarning")  # TF's deprecation notices
def test_sharded_tf1_program_equals_real_tensorflow(real_tf, monkeypatch, fresh_ipu_system):
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", "1")  # TF's tf.layers need Keras 2
    ours, step = _ipu_run(3)
    theirs, their_step = _reference_run(real_tf.compat.v1, 3)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)
    assert step == their_step == 3
    np.testing.assert_allclose(_reference_run(v1, 3)[0], theirs, rtol=1e-5)
