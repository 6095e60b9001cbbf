"""TF1 dataset iterators in a graph: ``get_next()`` is a node giving the next element at each
``Session.run`` (once per run however often it is fetched), ``OutOfRangeError`` at the end;
``initializer``/``make_initializer`` are graph operations restarting the iterator; against
real TensorFlow's tf.compat.v1 graph mode."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as v1
from ipu_gpu import errors

XS = np.arange(10, dtype=np.float32).reshape(5, 2)
YS = np.arange(5, dtype=np.int32)


def _one_shot(tf, c, make):
    """Values of (element, element * 2) fetched together per run, then the error type at
    the end; a second get_next node advances the same iterator."""
    out = []
    with c.Graph().as_default():
        ds = tf.data.Dataset.from_tensor_slices((XS, YS)).map(lambda x, y: (x + 1.0, y))
        it = make(ds)
        x, y = it.get_next()
        doubled = x * 2.0
        with c.Session() as sess:
            for _ in range(2):
                a, b, d = sess.run([x, y, doubled])
                out.append((a.tolist(), int(b), d.tolist()))
            second = it.get_next()
            out.append(sess.run(second)[0].tolist())  # the same iterator's next element
            out.append(sess.run(x).tolist())
            out.append(sess.run(y).tolist())
            try:
                sess.run(x)
            except Exception as e:  # noqa: BLE001 - the type is compared
                out.append(type(e).__name__)
            try:
                sess.run(x)
            except Exception as e:  # noqa: BLE001 - still at the end
                out.append(type(e).__name__)
    return out


@pytest.mark.parametrize("how", ["method", "function"])
def test_one_shot_iterator_yields_one_element_per_run_as_tf(real_tf, how):
    def make(c):
        if how == "method":  # real TF 2 datasets have only the function
            return lambda ds: (ds.make_one_shot_iterator()
                               if hasattr(ds, "make_one_shot_iterator")
                               else c.data.make_one_shot_iterator(ds))
        return c.data.make_one_shot_iterator
    ours = _one_shot(ig, v1, make(v1))
    theirs = _one_shot(real_tf, real_tf.compat.v1, make(real_tf.compat.v1))
    assert ours == theirs
    assert ours[0] == ([1.0, 2.0], 0, [2.0, 4.0])  # numpy: row 0 plus one
    assert ours[-2:] == ["OutOfRangeError", "OutOfRangeError"]


def _initializable(tf, c):
    out = []
    with c.Graph().as_default():
        ds = tf.data.Dataset.from_tensor_slices(XS).batch(2)
        it = c.data.make_initializable_iterator(ds)
        x = it.get_next()
        total = tf.reduce_sum(x)
        with c.Session() as sess:
            try:
                sess.run(x)
            except Exception as e:  # noqa: BLE001 - the type is compared
                out.append(type(e).__name__)
            for _ in range(2):
                sess.run(it.initializer)
                while True:
                    try:
                        out.append(float(sess.run(total)))
                    except tf.errors.OutOfRangeError:
                        out.append("end")
                        break
    return out


def test_initializable_iterator_restarts_at_each_initializer_run(real_tf):
    ours = _initializable(ig, v1)
    assert ours == _initializable(real_tf, real_tf.compat.v1)
    sums = [float(XS[i:i + 2].sum()) for i in range(0, 5, 2)]
    assert ours == ["FailedPreconditionError", *sums, "end", *sums, "end"]


def _reinitializable(tf, c):
    out = []
    with c.Graph().as_default():
        train = tf.data.Dataset.from_tensor_slices(XS)
        test = tf.data.Dataset.from_tensor_slices(XS[::-1].copy())
        it = c.data.Iterator.from_structure(tf.float32, tf.TensorShape([2]))
        x = it.get_next()
        init_train, init_test = it.make_initializer(train), it.make_initializer(test)
        with c.Session() as sess:
            for init in (init_train, init_test, init_train):
                sess.run(init)
                out.append([sess.run(x).tolist() for _ in range(2)])
    return out


def test_reinitializable_iterator_switches_datasets_as_tf(real_tf):
    ours = _reinitializable(ig, v1)
    assert ours == _reinitializable(real_tf, real_tf.compat.v1)
    assert ours[1] == [XS[4].tolist(), XS[3].tolist()]


def test_eager_iteration_is_unchanged():
    it = v1.data.make_one_shot_iterator(ig.data.Dataset.range(3))
    assert [int(t) for t in it] == [0, 1, 2]
    it = v1.data.make_initializable_iterator(ig.data.Dataset.range(2))
    it.initializer.run()
    assert int(it.get_next()) == 0
    with pytest.raises(errors.OutOfRangeError):
        it.get_next()
        it.get_next()


def test_a_training_loop_over_get_next_consumes_the_dataset_once():
    """A TF1 input pipeline: each sess.run(train) takes the next batch; the numpy model of
    SGD on those batches gives the same weights."""
    rng = np.random.default_rng(2)
    xs = rng.standard_normal((12, 3)).astype(np.float32)
    ys = rng.standard_normal((12, 1)).astype(np.float32)
    with v1.Graph().as_default():
        ds = ig.data.Dataset.from_tensor_slices((xs, ys)).batch(4)
        x, y = v1.data.make_one_shot_iterator(ds).get_next()
        w = v1.Variable(np.zeros((3, 1), np.float32))
        loss = ig.reduce_mean((ig.matmul(x, w) - y) ** 2)
        train = v1.train.GradientDescentOptimizer(0.1).minimize(loss)
        steps = 0
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            try:
                while True:
                    sess.run(train)
                    steps += 1
            except errors.OutOfRangeError:
                pass
            got = sess.run(w)
    want = np.zeros((3, 1))
    for k in range(3):
        xb, yb = xs[4 * k:4 * k + 4].astype(np.float64), ys[4 * k:4 * k + 4]
        want -= 0.1 * 2 * xb.T @ (xb @ want - yb) / 4
    assert steps == 3
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def _fed(tf, c):
    """Placeholders fed to an initializable iterator's initializer (TF's way of feeding numpy
    arrays to a pipeline), re-initialized with other arrays; the errors of an unfed
    initializer and of a one-shot iterator."""
    out = []
    with c.Graph().as_default():
        xp = c.placeholder(tf.float32, [None, 2], name="features")
        yp = c.placeholder(tf.int32, [None], name="labels")
        ds = tf.data.Dataset.from_tensor_slices((xp, yp)).map(lambda x, y: (x * 2.0, y))
        ds = ds.batch(2)
        out.append([(s.shape.as_list(), s.dtype.name) for s in tf.nest.flatten(
            ds.element_spec)])
        it = c.data.make_initializable_iterator(ds)
        x, _ = it.get_next()
        total = tf.reduce_sum(x)
        with c.Session() as sess:
            for rows in (XS, XS[:3] + 100.0):
                sess.run(it.initializer, feed_dict={xp: rows[:, :2], yp: YS[:len(rows)]})
                while True:
                    try:
                        out.append(float(sess.run(total)))
                    except tf.errors.OutOfRangeError:
                        out.append("end")
                        break
            try:
                sess.run(it.initializer, feed_dict={yp: YS})
            except tf.errors.InvalidArgumentError as e:
                out.append(("unfed", "features" in str(e)))
        try:
            c.data.make_one_shot_iterator(ds)
        except ValueError as e:
            out.append(str(e))
    return out


def test_placeholders_fed_to_an_initializer_as_tf(real_tf):
    ours = _fed(ig, v1)
    assert ours == _fed(real_tf, real_tf.compat.v1)
    # numpy: batches of 2 rows of the first two columns, doubled, summed
    sums = [float(2 * XS[i:i + 2, :2].sum()) for i in range(0, 5, 2)]
    assert ours[1:5] == [*sums, "end"]
    assert ("unfed", True) in ours
    assert ours[-1] == "Cannot capture a placeholder (name:features, type:Placeholder) by value."


def test_from_tensors_of_a_fed_placeholder():
    with v1.Graph().as_default():
        p = v1.placeholder(ig.int64, [3])
        it = v1.data.make_initializable_iterator(ig.data.Dataset.from_tensors(p).repeat(2))
        nxt = it.get_next()
        with v1.Session() as sess:
            sess.run(it.initializer, {p: [1, 2, 3]})
            assert [sess.run(nxt).tolist() for _ in range(2)] == [[1, 2, 3]] * 2
            with pytest.raises(errors.OutOfRangeError):
                sess.run(nxt)


def test_a_fed_placeholder_of_unknown_rank():
    with v1.Graph().as_default():
        p = v1.placeholder(ig.float32, None)
        ds = ig.data.Dataset.from_tensor_slices(p)
        assert ds.element_spec.shape.rank is None
        it = v1.data.make_initializable_iterator(ds)
        nxt = it.get_next()
        with v1.Session() as sess:
            sess.run(it.initializer, {p: [[1.0, 2.0], [3.0, 4.0]]})
            np.testing.assert_array_equal(sess.run(nxt), [1.0, 2.0])
    with v1.Graph().as_default():
        with pytest.raises(ValueError, match="rank >= 1"):
            ig.data.Dataset.from_tensor_slices(v1.placeholder(ig.float32, []))
