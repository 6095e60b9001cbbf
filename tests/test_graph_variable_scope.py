"""TF1 variable scopes beyond names and reuse: custom getters (TF's protocol, nested getters
composing) and partitioned variables (shards ``name/part_<i>``, the partitioners, reading
concatenates), against real TensorFlow's tf.compat.v1 graph mode."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as v1

FULL = np.arange(30, dtype=np.float32).reshape(10, 3) / 10.0


def _custom_getters(c):
    """Names seen by nested custom getters, the variables they made and the kwargs the
    true getter was offered."""
    log = []

    def suffix(getter, name, *args, **kwargs):
        log.append(("suffix", name, kwargs["reuse"], kwargs["trainable"],
                    np.dtype(kwargs["dtype"].as_numpy_dtype if hasattr(
                        kwargs["dtype"], "as_numpy_dtype") else kwargs["dtype"]).name,
                    sorted(kwargs)))
        return getter(name + "_s", *args, **kwargs)

    def scale(getter, name, **kwargs):
        log.append(("scale", name))
        kwargs["initializer"] = c.constant_initializer(2.0)
        return getter(name, **kwargs)

    def plain(getter, name, shape=None, dtype=None, initializer=None, regularizer=None,
              reuse=None, trainable=None, collections=None, caching_device=None,
              partitioner=None, validate_shape=True, use_resource=None, synchronization=None,
              aggregation=None):
        log.append(("plain", name, "AUTO_REUSE" if reuse is c.AUTO_REUSE else reuse))
        return getter(name, shape=shape, dtype=dtype, initializer=initializer, reuse=reuse,
                      trainable=trainable, partitioner=partitioner)

    with c.Graph().as_default():
        with c.variable_scope("a", custom_getter=suffix):
            c.get_variable("x", [2], initializer=c.zeros_initializer())
            with c.variable_scope("b", custom_getter=scale):
                c.get_variable("y", [2], dtype=np.float64)
                with c.variable_scope("c"):  # inherits the composed getter
                    c.get_variable("z", [2])
            with c.variable_scope("d"):
                c.get_variable("w", [2], custom_getter=plain)  # replaces the scope's
        with c.variable_scope("a", reuse=True, custom_getter=plain):
            again = c.get_variable("x_s", [2])
        with c.variable_scope("r", reuse=c.AUTO_REUSE, custom_getter=plain):
            c.get_variable("r", [2], initializer=c.zeros_initializer())
        with c.variable_scope("p", custom_getter=plain, partitioner=c.fixed_size_partitioner(2)):
            part = c.get_variable("q", [4, 2], initializer=c.zeros_initializer())
        names = [v.name for v in c.global_variables()]
        with c.Session() as sess:
            sess.run(c.global_variables_initializer())
            values = sess.run([again] + [v for v in c.global_variables()
                                         if v.name.startswith("a/b")])
    return log, names, [np.asarray(v).tolist() for v in values], len(list(part))


def test_custom_getters_compose_as_in_real_tf1(real_tf):
    ours = _custom_getters(v1)
    theirs = _custom_getters(real_tf.compat.v1)
    assert ours == theirs
    log, names = ours[0], ours[1]
    assert [entry[:2] for entry in log[:5]] == [("suffix", "a/x"), ("scale", "a/b/y"),
                                                 ("suffix", "a/b/y"), ("scale", "a/b/c/z"),
                                                 ("suffix", "a/b/c/z")]
    assert "constraint" in log[0][-1]  # offered to a getter taking **kwargs
    assert names[:3] == ["a/x_s:0", "a/b/y_s:0", "a/b/c/z_s:0"]


def test_custom_getter_errors():
    with v1.Graph().as_default():
        with pytest.raises(ValueError, match="Passed a custom_getter which is not callable: "
                                             "3"):
            v1.get_variable("x", [2], custom_getter=3)
        with pytest.raises(ValueError, match="Partitioner must be callable, but received: 2"):
            v1.get_variable("y", [2], partitioner=2)


def _partitioned(c, partitioner, steps=3):
    """A partitioned variable of FULL's shape trained in ``c``: shard names, shapes and
    values, its partitions, the losses and the concatenated value after training."""
    rng = np.random.default_rng(3)
    xs = rng.standard_normal((6, 10)).astype(np.float32)
    with c.Graph().as_default():
        x = c.placeholder(np.float32, [None, 10])
        with c.variable_scope("net", partitioner=partitioner):
            w = c.get_variable("w", initializer=c.constant(FULL))
            b = c.get_variable("b", [3, 5], initializer=c.ones_initializer())
            s = c.get_variable("scalar", [], initializer=c.zeros_initializer())  # not split
        loss = c.reduce_mean(c.square(c.matmul(x, w))) + c.reduce_sum(b) * s
        train = c.train.GradientDescentOptimizer(0.05).minimize(loss)
        shards = [(v.name, v.shape.as_list()) for v in w]
        with c.Session() as sess:
            sess.run(c.global_variables_initializer())
            first = sess.run(list(w))
            losses = [sess.run([loss, train], {x: xs})[0] for _ in range(steps)]
            read = sess.run(w.as_tensor())
            b_read = sess.run(b.as_tensor())
    return (shards, [v.name for v in b], type(s).__name__ == "PartitionedVariable",
            w._get_partitions(), [f.tolist() for f in first], np.array(losses), read,
            b_read)


@pytest.mark.parametrize("which", ["fixed", "fixed_axis1", "min_max", "axis_size"])
def test_partitioned_variables_match_real_tf1(real_tf, which):
    def partitioner(c):
        return {"fixed": lambda: c.fixed_size_partitioner(3),
                "fixed_axis1": lambda: c.fixed_size_partitioner(2, axis=1),
                "min_max": lambda: c.min_max_variable_partitioner(4, min_slice_size=32),
                "axis_size": lambda: c.variable_axis_size_partitioner(40)}[which]()
    ours = _partitioned(v1, partitioner(v1))
    theirs = _partitioned(real_tf.compat.v1, partitioner(real_tf.compat.v1))
    assert ours[:5] == theirs[:5]
    np.testing.assert_allclose(ours[5], theirs[5], rtol=1e-5)
    np.testing.assert_allclose(ours[6], theirs[6], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(ours[7], theirs[7])


def test_partitioners_match_real_tf1(real_tf):
    c = real_tf.compat.v1
    shapes = [[10, 3], [7], [1, 9], [1000, 64], [3, 5, 2]]
    for dtype in (np.float32, np.float64, np.int32):
        for shape in shapes:
            for name, kwargs in (("fixed_size_partitioner", {"num_shards": 4}),
                                 ("fixed_size_partitioner", {"num_shards": 2,
                                                             "axis": len(shape) - 1}),
                                 ("min_max_variable_partitioner", {"max_partitions": 3,
                                                                   "min_slice_size": 16}),
                                 ("min_max_variable_partitioner", {"max_partitions": 100}),
                                 ("variable_axis_size_partitioner", {"max_shard_bytes": 64}),
                                 ("variable_axis_size_partitioner", {"max_shard_bytes": 64,
                                                                     "max_shards": 2})):
                ours = getattr(v1, name)(**kwargs)(shape=ig.TensorShape(shape), dtype=dtype)
                theirs = getattr(c, name)(**kwargs)(shape=real_tf.TensorShape(shape),
                                                    dtype=real_tf.as_dtype(dtype))
                assert list(ours) == list(theirs), (name, kwargs, shape, dtype)


def test_partitioned_variable_reuse_and_errors(real_tf):
    def errors(c):
        out = []

        def attempt(fn):
            try:
                fn()
                out.append(None)
            except ValueError as e:
                out.append(str(e).replace("TensorShape(", "").split(" Originally")[0])
        with c.Graph().as_default():
            three = c.fixed_size_partitioner(3)
            with c.variable_scope("s", partitioner=three):
                w = c.get_variable("w", [6, 2])
            with c.variable_scope("s", reuse=True, partitioner=three):
                out.append(c.get_variable("w", [6, 2]) is w)
                attempt(lambda: c.get_variable("missing", [6, 2]))
                attempt(lambda: c.get_variable("w", [6, 2],
                                               partitioner=c.fixed_size_partitioner(2)))
            with c.variable_scope("s", partitioner=three):
                attempt(lambda: c.get_variable("w", [6, 2]))
                attempt(lambda: c.get_variable("n", initializer=np.zeros((6, 2), np.float32)))
            with c.variable_scope("s", reuse=c.AUTO_REUSE):
                attempt(lambda: c.get_variable("w", [6, 2]))  # no partitioner: a shard exists
            c.get_variable("plain", [6, 2])
            attempt(lambda: c.get_variable("plain", [6, 2], partitioner=three))
            attempt(lambda: c.get_variable("two", [4, 4],
                                           partitioner=lambda shape, dtype: [2, 2]))
            attempt(lambda: c.get_variable("rank", [4, 4], partitioner=lambda shape, dtype: [2]))
            attempt(lambda: c.get_variable("zero", [4, 4],
                                           partitioner=lambda shape, dtype: [0, 1]))
        return out
    assert errors(v1) == errors(real_tf.compat.v1)


def test_partitioned_variable_eagerly():
    """Outside a graph the shards are eager variables; ops read their concatenation and
    gradients reach every shard."""
    scope = f"eager_{id(object())}"
    with v1.variable_scope(scope, partitioner=v1.fixed_size_partitioner(3)):
        w = v1.get_variable("w", initializer=ig.constant(FULL))
    assert [v.name for v in w] == [f"{scope}/w/part_{i}:0" for i in range(3)]
    np.testing.assert_array_equal(w.as_tensor().numpy(), FULL)
    x = ig.constant(np.ones((2, 10), np.float32))
    with ig.GradientTape() as tape:
        y = ig.reduce_sum(ig.matmul(x, w))
    grads = tape.gradient(y, list(w))
    assert [g.shape for g in grads] == [(4, 3), (3, 3), (3, 3)]
    np.testing.assert_allclose(y.numpy(), 2 * FULL.sum(), rtol=1e-6)
    w.assign(np.zeros((10, 3), np.float32))
    assert float(ig.reduce_sum(w).numpy()) == 0.0
    assert len(w) == 3 and w.shape == [10, 3] and w.name == f"{scope}/w"
