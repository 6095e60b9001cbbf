"""tf.compat.v1.train learning-rate decays (polynomial, natural_exp, inverse_time, cosine,
cosine with restarts, linear cosine, noisy linear cosine) against real TF1 graph mode, the
eager callables TF 1.15 returns, and a decayed rate driving an optimizer."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as core
import ipu_gpu.compat.v1 as v1

_STEPS = [0, 1, 3, 7, 10, 11, 17, 25, 40]
_DECAYS = [
    ("polynomial_decay", dict(learning_rate=0.1, decay_steps=10)),
    ("polynomial_decay", dict(learning_rate=0.1, decay_steps=10, end_learning_rate=0.01,
                              power=2.0, cycle=True)),
    ("natural_exp_decay", dict(learning_rate=0.1, decay_steps=5, decay_rate=0.5)),
    ("natural_exp_decay", dict(learning_rate=0.1, decay_steps=5, decay_rate=0.5,
                               staircase=True)),
    ("inverse_time_decay", dict(learning_rate=0.1, decay_steps=4, decay_rate=0.3)),
    ("inverse_time_decay", dict(learning_rate=0.1, decay_steps=4, decay_rate=0.3,
                                staircase=True)),
    ("cosine_decay", dict(learning_rate=0.1, decay_steps=20, alpha=0.1)),
    ("cosine_decay_restarts", dict(learning_rate=0.1, first_decay_steps=5)),
    ("cosine_decay_restarts", dict(learning_rate=0.1, first_decay_steps=5, t_mul=1.0,
                                   m_mul=0.5, alpha=0.05)),
    ("linear_cosine_decay", dict(learning_rate=0.1, decay_steps=20, num_periods=2.0,
                                 alpha=0.1, beta=0.01)),
    ("exponential_decay", dict(learning_rate=0.1, decay_steps=3, decay_rate=0.7,
                               staircase=True)),
]


def _rates(c, name, kwargs):
    g = c.Graph()
    with g.as_default():
        step = c.placeholder(np.int64, [])
        lr = getattr(c.train, name)(global_step=step, **kwargs)
        with c.Session(graph=g) as sess:
            return np.array([sess.run(lr, {step: s}) for s in _STEPS])


@pytest.mark.parametrize("name,kwargs", _DECAYS, ids=[f"{n}-{i}" for i, (n, _) in
                                                      enumerate(_DECAYS)])
def test_decay_equals_real_tensorflow(real_tf, name, kwargs):
    ours = _rates(v1, name, kwargs)
    theirs = _rates(real_tf.compat.v1, name, kwargs)
    assert ours.dtype == np.float32
    np.testing.assert_allclose(ours, theirs, rtol=2e-6, atol=1e-8)


def test_noisy_linear_cosine_decay_draws_noise_per_run():
    with v1.Graph().as_default():
        step = v1.placeholder(np.int64, [])
        lr = v1.train.noisy_linear_cosine_decay(1.0, step, 100, initial_variance=1.0,
                                                variance_decay=0.55, beta=0.0)
        with v1.Session() as sess:
            early = np.array([sess.run(lr, {step: 0}) for _ in range(200)])
            late = np.array([sess.run(lr, {step: 100}) for _ in range(200)])
    # step 0: (1 + N(0, 1)) * cosine 1, a new draw per run; step 100: the cosine part is 0
    assert early.mean() == pytest.approx(1.0, abs=0.25)
    assert early.std() == pytest.approx(1.0, rel=0.25)
    np.testing.assert_allclose(late, 0.0, atol=1e-6)


def test_decays_need_a_global_step():
    for name, kwargs in _DECAYS:
        with pytest.raises(ValueError, match=f"global_step is required for {name}."):
            getattr(v1.train, name)(global_step=None, **kwargs)


def test_eager_decay_is_a_callable_following_the_step():
    step = core.Variable(np.int64(0))
    lr = v1.train.polynomial_decay(0.1, step, 10, end_learning_rate=0.0)
    assert callable(lr)
    assert float(lr()) == pytest.approx(0.1)
    step.assign(5)
    assert float(lr()) == pytest.approx(0.05)


def test_decayed_rate_drives_gradient_descent():
    with v1.Graph().as_default():
        w = v1.Variable(np.float32(0.0))
        step = v1.train.get_or_create_global_step()
        lr = v1.train.polynomial_decay(1.0, step, 2, end_learning_rate=0.0)
        train = v1.train.GradientDescentOptimizer(lr).minimize(-w, global_step=step)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            for _ in range(4):
                sess.run(train)
            # rates 1.0, 0.5, 0.0, 0.0 on d(-w)/dw = -1
            assert sess.run(w) == pytest.approx(1.5)
