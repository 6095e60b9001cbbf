"""TF1 variables API: regularizers feeding REGULARIZATION_LOSSES (get_variable, variable
scopes, tf.layers.dense), initializers drawn when the initializer op runs, the
tf.initializers module, unknown-rank placeholders; against real TF1 graph mode or numpy."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu.compat.v1 as v1

_K = np.arange(12, dtype=np.float32).reshape(3, 4) / 10.0
_B = np.linspace(-1.0, 1.0, 4).astype(np.float32)


def _regularized(c):
    g = c.Graph()
    with g.as_default():
        def l2(w):
            return 0.5 * c.reduce_sum(w * w)

        def l1(w):
            return 0.1 * c.reduce_sum(c.abs(w))
        w = c.get_variable("w", initializer=_K, regularizer=l2)
        with c.variable_scope("scoped", regularizer=l1):
            s = c.get_variable("s", initializer=_B)
            t = c.get_variable("t", initializer=_B, regularizer=l2)  # its own wins
        x = c.placeholder(np.float32, [None, 3])
        c.layers.dense(x, 4, kernel_initializer=c.constant_initializer(_K),
                       bias_initializer=c.constant_initializer(_B),
                       kernel_regularizer=l2, bias_regularizer=l1,
                       activity_regularizer=l1)
        losses = c.get_collection(c.GraphKeys.REGULARIZATION_LOSSES)
        total = c.losses.get_regularization_loss()
        everything = c.losses.get_total_loss()
        with c.Session(graph=g) as sess:
            sess.run(c.global_variables_initializer())
            feed = {x: np.ones((2, 3), np.float32)}
            return (len(losses), sess.run(losses, feed), sess.run(total, feed),
                    sess.run(everything, feed), [w.name, s.name, t.name])


@pytest.mark.filterwarnings("ignore:`tf.layers:UserWarning")  # TF's deprecation notices
def test_regularizers_equal_real_tensorflow(real_tf, monkeypatch):
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", "1")  # TF's tf.layers need Keras 2
    ours = _regularized(v1)
    theirs = _regularized(real_tf.compat.v1)
    assert ours[0] == theirs[0] == 6
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6)
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-6)
    np.testing.assert_allclose(ours[3], theirs[3], rtol=1e-6)
    assert ours[4] == theirs[4]


def test_regularizer_runs_once_per_variable_not_on_reuse():
    with v1.Graph().as_default():
        for _ in range(2):
            with v1.variable_scope("m", reuse=v1.AUTO_REUSE):
                v1.get_variable("w", [2], regularizer=lambda w: v1.reduce_sum(w))
        assert len(v1.losses.get_regularization_losses()) == 1
        v1.get_variable("n", [2], regularizer=lambda w: None)  # None adds nothing
        assert len(v1.losses.get_regularization_losses()) == 1


def test_initializers_draw_when_the_initializer_runs():
    with v1.Graph().as_default():
        init = v1.random_normal_initializer()
        with v1.variable_scope("s", initializer=v1.truncated_normal_initializer(stddev=0.1)):
            a = v1.get_variable("a", [50])
            b = v1.get_variable("b", [50])  # one scope initializer shared by a and b
        c = v1.get_variable("c", [50], initializer=init)
        d = v1.get_variable("d", [50], initializer=init)
        seeded = v1.get_variable("e", [50], initializer=v1.random_normal_initializer(seed=3))
        reset = v1.global_variables_initializer()
        with v1.Session() as sess:
            sess.run(reset)
            first = sess.run([a, b, c, d, seeded])
            sess.run(reset)
            second = sess.run([a, b, c, d, seeded])
    for x, y in zip(first[:4], second[:4]):  # TF's initializer ops draw anew each run
        assert not np.allclose(x, y)
    assert not np.allclose(first[0], first[1]) and not np.allclose(first[2], first[3])
    np.testing.assert_array_equal(first[4], second[4])  # a seeded draw repeats
    assert np.abs(first[0]).max() <= 0.2 and first[2].std() > 0.5


def test_initializers_module_has_tf1_names_and_defaults():
    names = ["constant", "global_variables", "glorot_normal", "glorot_uniform", "he_normal",
             "he_uniform", "identity", "lecun_normal", "lecun_uniform", "local_variables",
             "ones", "orthogonal", "random_normal", "random_uniform", "tables_initializer",
             "truncated_normal", "uniform_unit_scaling", "variables", "variance_scaling",
             "zeros"]
    assert sorted(v1.initializers.__all__) == names
    for name in names:
        assert callable(getattr(v1.initializers, name))
    n = 40000
    normal = v1.initializers.random_normal()([n]).numpy()
    assert normal.std() == pytest.approx(1.0, rel=0.03)  # TF1's stddev 1, not Keras's 0.05
    uniform = v1.initializers.random_uniform()([n]).numpy()
    assert 0.0 <= uniform.min() and uniform.max() < 1.0 and uniform.mean() == pytest.approx(
        0.5, abs=0.01)
    he = v1.initializers.he_normal()([200, 200]).numpy()
    assert he.std() == pytest.approx(np.sqrt(2.0 / 200), rel=0.03)
    assert np.abs(he).max() <= 2 * np.sqrt(2.0 / 200) / 0.87962566103423978 + 1e-6
    lecun = v1.initializers.lecun_uniform()([100, 50]).numpy()
    assert np.abs(lecun).max() <= np.sqrt(3.0 / 100)
    q = v1.orthogonal_initializer(gain=2.0)([6, 4]).numpy()
    np.testing.assert_allclose(q.T @ q, 4.0 * np.eye(4), atol=1e-5)
    np.testing.assert_array_equal(v1.initializers.identity()([3, 3]).numpy(), np.eye(3))
    unit = v1.uniform_unit_scaling_initializer(factor=2.0)([3, 5, 8]).numpy()
    assert np.abs(unit).max() <= 2.0 * np.sqrt(3.0 / 15)
    assert np.abs(unit).max() > 0.8 * 2.0 * np.sqrt(3.0 / 15)
    assert v1.initializers.random_normal is v1.random_normal_initializer


def test_initializers_variable_ops():
    with v1.Graph().as_default():
        v = v1.Variable(np.float32(1.0))
        ops = [v1.initializers.global_variables(), v1.initializers.local_variables(),
               v1.initializers.variables([v]), v1.initializers.tables_initializer(),
               v1.tables_initializer()]
        with v1.Session() as sess:
            for op in ops:
                assert sess.run(op) is None
            assert sess.run(v) == 1.0


def _unknown_rank(c):
    g = c.Graph()
    with g.as_default():
        x = c.placeholder(np.float32, None)
        y = c.nn.relu(x) * 2.0 + 1.0
        s = c.reduce_sum(x)
        m = c.reduce_mean(y, axis=-1)
        with c.Session(graph=g) as sess:
            feeds = [np.arange(6, dtype=np.float32).reshape(2, 3) - 2.0,
                     np.arange(4, dtype=np.float32)]
            values = [sess.run([y, s, m], {x: f}) for f in feeds]
        return [t.shape.rank for t in (x, y, s, m)], values


def test_unknown_rank_placeholders_flow_through_ops(real_tf):
    ours_ranks, ours = _unknown_rank(v1)
    theirs_ranks, theirs = _unknown_rank(real_tf.compat.v1)
    assert ours_ranks == theirs_ranks == [None, None, 0, None]
    for a, b in zip(ours, theirs):
        for p, q in zip(a, b):
            np.testing.assert_allclose(p, q, rtol=1e-6)


def _collected(c):
    g = c.Graph()
    with g.as_default():
        c.Variable(1.0, name="plain")
        c.Variable(1.0, name="frozen", trainable=False)
        c.Variable(1.0, name="local", collections=[c.GraphKeys.LOCAL_VARIABLES])
        c.Variable(1.0, name="both", trainable=False,
                   collections=[c.GraphKeys.LOCAL_VARIABLES, "mine"])
        c.get_variable("gv", [2], collections=["mine"])
        c.get_local_variable("lv", [2])

        def names(key):
            return sorted(v.op.name for v in c.get_collection(key))
        result = [names(k) for k in (c.GraphKeys.GLOBAL_VARIABLES,
                                     c.GraphKeys.TRAINABLE_VARIABLES,
                                     c.GraphKeys.LOCAL_VARIABLES, "mine")]
        with c.Session(graph=g) as sess:
            sess.run([c.global_variables_initializer(), c.local_variables_initializer()])
            result.append(sess.run(c.get_collection(c.GraphKeys.LOCAL_VARIABLES)[-1]).shape)
        return result


def test_variable_collections_equal_real_tensorflow(real_tf):
    ours = _collected(v1)
    assert ours == _collected(real_tf.compat.v1)
    assert ours[2] == ["both", "local", "lv"]
