"""tf.compat.v1.train.ExponentialMovingAverage in graph mode (shadow variables, names,
collections, the num_updates decay, apply after a training step, variables_to_restore)
against real TF1 graph mode."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu.compat.v1 as v1

_X = np.array([[1.0, 2.0], [-1.0, 0.5], [0.3, -2.0]], np.float32)


def _ema_run(c, num_updates):
    g = c.Graph()
    with g.as_default():
        w = c.get_variable("w", initializer=np.array([[0.5], [-0.25]], np.float32))
        b = c.Variable(np.float32(0.1), name="b")
        step = c.train.get_or_create_global_step()
        loss = c.reduce_mean((c.matmul(_X, w) + b) ** 2)
        train = c.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
        ema = c.train.ExponentialMovingAverage(0.9, num_updates=step if num_updates else None)
        with c.control_dependencies([train]):
            train_op = ema.apply([w, b])
        shadows = [ema.average(w), ema.average(b)]
        names = ([s.op.name for s in shadows], ema.average_name(w),
                 sorted(v.op.name for v in c.moving_average_variables()),
                 sorted(v.op.name for v in c.trainable_variables()),
                 sorted(ema.variables_to_restore()))
        with c.Session(graph=g) as sess:
            sess.run(c.global_variables_initializer())
            history = [sess.run(shadows)]
            for _ in range(4):
                sess.run(train_op)
                history.append(sess.run(shadows))
            return names, history, sess.run([w, b])


@pytest.mark.parametrize("num_updates", [False, True])
def test_exponential_moving_average_equals_real_tensorflow(real_tf, num_updates):
    ours = _ema_run(v1, num_updates)
    theirs = _ema_run(real_tf.compat.v1, num_updates)
    assert ours[0] == theirs[0]
    for a, b in zip(ours[1] + [ours[2]], theirs[1] + [theirs[2]]):
        for p, q in zip(a, b):
            np.testing.assert_allclose(p, q, rtol=1e-5, atol=1e-7)


def test_exponential_moving_average_errors():
    with v1.Graph().as_default():
        w = v1.Variable(np.float32(1.0))
        i = v1.Variable(np.int32(1))
        ema = v1.train.ExponentialMovingAverage(0.5)
        with pytest.raises(TypeError, match="must be half, float, or double"):
            ema.apply([i])
        ema.apply([w])
        with pytest.raises(ValueError, match="Moving average already computed for"):
            ema.apply([w])
