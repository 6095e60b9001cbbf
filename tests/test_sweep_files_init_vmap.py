"""More names the portability sweep found missing: TF 1's ``tf.gfile`` CamelCase file
functions, TF 2's top-level ``tf.constant_initializer``/``zeros_initializer``/
``ones_initializer``, ``tf.vectorized_map`` and ``tensorflow.python.framework.ops.
control_dependencies``; each against numpy or the real TensorFlow."""

import os

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu import aliases
from ipu_gpu.errors import AlreadyExistsError, InvalidArgumentError, NotFoundError


def _real_tf():
    return pytest.importorskip("tensorflow")


# ---- tf.gfile (TF 1) -------------------------------------------------------------------------
def _gfile_session(g, root):
    """The observable results of a round of tf.gfile calls under ``root``."""
    out = []
    p = os.path.join(root, "a.txt")
    with g.GFile(p, "w") as f:
        f.write("hello")
    with g.Open(p, "r") as f:
        out.append(f.read())
    with g.FastGFile(p, "rb") as f:
        out.append(f.read())
    st = g.Stat(p)
    out.append((st.length, st.is_directory, isinstance(st.mtime_nsec, int)))
    out.append(g.Stat(root).is_directory)
    g.MakeDirs(os.path.join(root, "x", "y"))
    g.MkDir(os.path.join(root, "x"))  # already there: no error
    g.MkDir(os.path.join(root, "z"))
    out.append((g.Exists(p), g.Exists(p + "nope"), g.IsDirectory(root), g.IsDirectory(p)))
    out.append(sorted(g.ListDirectory(root)))
    out.append(sorted(os.path.basename(x) for x in g.Glob(os.path.join(root, "*"))))
    g.Copy(p, os.path.join(root, "b.txt"))
    g.Copy(p, os.path.join(root, "b.txt"), overwrite=True)
    g.Rename(os.path.join(root, "b.txt"), os.path.join(root, "c.txt"))
    out.append([(os.path.relpath(d, root), sorted(s), sorted(f)) for d, s, f in g.Walk(root)])
    out.append(list(g.Walk(os.path.join(root, "missing"))))
    g.Remove(os.path.join(root, "c.txt"))
    g.DeleteRecursively(os.path.join(root, "x"))
    out.append(sorted(g.ListDirectory(root)))
    for call in (lambda: g.Stat(p + "x"), lambda: g.ListDirectory(p + "x"),
                 lambda: g.Remove(p + "x"), lambda: g.DeleteRecursively(p + "x"),
                 lambda: g.Copy(p, p), lambda: g.Rename(p, p)):
        try:
            call()
            out.append("no error")
        except Exception as e:  # noqa: BLE001 - the error's class name is the result
            out.append(type(e).__name__)
    return out


def test_gfile_v1_matches_tensorflow(tmp_path):
    ours_dir, theirs_dir = tmp_path / "ours", tmp_path / "theirs"
    ours_dir.mkdir()
    theirs_dir.mkdir()
    ours = _gfile_session(tf.compat.v1.gfile, str(ours_dir))
    assert ours[-6:] == ["NotFoundError"] * 4 + ["AlreadyExistsError"] * 2
    assert ours == _gfile_session(_real_tf().compat.v1.gfile, str(theirs_dir))


def test_gfile_v1_errors_are_ipu_gpu_errors(tmp_path):
    g = tf.compat.v1.gfile
    p = tmp_path / "f"
    p.write_text("x")
    with pytest.raises(NotFoundError):
        g.Stat(str(tmp_path / "missing"))
    with pytest.raises(AlreadyExistsError):
        g.Copy(str(p), str(p))


def test_tf1_program_sees_gfile():
    assert aliases.resolve("tensorflow.compat.v1.gfile.Exists")[0]
    assert aliases.resolve("tensorflow.compat.v1.gfile.MakeDirs")[0]


# ---- TF 2 initializers ----------------------------------------------------------------------
def _init_results(t):
    out = []
    cases = [lambda: t.constant_initializer(5)((2,)),
             lambda: t.constant_initializer(2.5)((2, 1)),
             lambda: t.constant_initializer(5)((2,), dtype=t.float32),
             lambda: t.constant_initializer([1, 2, 3, 4])((2, 2)),
             lambda: t.constant_initializer(np.arange(4.0))((4,), t.float32),
             lambda: t.constant_initializer([1, 2])((3,)),
             lambda: t.constant_initializer(object()),
             lambda: t.constant_initializer(1)((2,), foo=1),
             lambda: t.zeros_initializer()((2, 3)),
             lambda: t.ones_initializer()((2,), t.int64),
             lambda: t.ones_initializer()((2,), dtype=t.bool),
             lambda: t.ones_initializer()((2,), dtype=t.string),
             lambda: t.constant_initializer(3)((2,), partition_shape=(1,),
                                               partition_offset=(0,))]
    for c in cases:
        try:
            r = np.asarray(c())
            out.append((r.tolist(), r.dtype.name))
        except Exception as e:  # noqa: BLE001 - the error's class name is the result
            out.append(type(e).__name__)
    out.append(t.constant_initializer(2.5).get_config())
    return out


def test_tf2_initializers_match_tensorflow():
    ours = _init_results(tf)
    assert ours[0] == ([5, 5], "int32") and ours[8] == ([[0.0] * 3] * 2, "float32")
    assert ours == _init_results(_real_tf())


def test_constant_initializer_in_a_keras_layer():
    layer = tf.keras.layers.Dense(3, kernel_initializer=tf.constant_initializer(0.5),
                                  bias_initializer=tf.constant_initializer(-np.log(99.0)))
    y = layer(np.ones((1, 2), np.float32))
    assert layer.kernel.dtype == np.float32
    np.testing.assert_allclose(y.numpy(), np.full((1, 3), 1.0 - np.log(99.0)), rtol=1e-6)


def test_initializer_config_round_trip():
    init = tf.constant_initializer.from_config(tf.constant_initializer([1.0, 2.0]).get_config())
    np.testing.assert_array_equal(init((2,), tf.float32).numpy(), [1.0, 2.0])
    assert isinstance(tf.zeros_initializer.from_config({}), tf.zeros_initializer)


# ---- tf.vectorized_map ------------------------------------------------------------------------
def _vmap_results(t):
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    ones = np.ones((3, 1), np.float32)
    cases = [lambda: t.vectorized_map(lambda r: r * 2.0, x),
             lambda: t.vectorized_map(lambda a: {"s": t.reduce_sum(a[0]) + a[1][0], "p": a[0]},
                                      (x, ones)),
             lambda: t.vectorized_map(lambda r: t.reduce_sum(r), np.zeros((0, 2), np.float32)),
             lambda: t.vectorized_map(lambda r: t.cast(r, t.int32), x),
             lambda: t.vectorized_map(lambda r: 3.0, x),
             lambda: t.vectorized_map(lambda a: a[0] + a[1], (x, np.ones((2, 2), np.float32)))]
    out = []
    for c in cases:
        try:
            out.append(t.nest.map_structure(
                lambda a: (np.asarray(a).tolist(), np.asarray(a).dtype.name), c()))
        except Exception as e:  # noqa: BLE001 - the error's class name is the result
            out.append(type(e).__name__)
    return out


def test_vectorized_map_matches_tensorflow():
    ours = _vmap_results(tf)
    assert ours[-1] == "InvalidArgumentError"
    assert ours == _vmap_results(_real_tf())
    with pytest.raises(InvalidArgumentError):
        tf.vectorized_map(lambda a: a[0], (np.ones((3, 1)), np.ones((2, 1))))


def test_vectorized_map_gradient_equals_numpy():
    rng = np.random.default_rng(1)
    w = tf.Variable(rng.standard_normal((4, 3)).astype(np.float32))
    x = rng.standard_normal((5, 4)).astype(np.float32)
    with tf.GradientTape() as tape:
        y = tf.vectorized_map(lambda r: tf.tanh(tf.reshape(tf.matmul(r[None], w), [-1])), x)
        loss = tf.reduce_sum(y)
    want_y = np.tanh(x @ w.numpy())
    np.testing.assert_allclose(y.numpy(), want_y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tape.gradient(loss, w).numpy(), x.T @ (1 - want_y ** 2),
                               rtol=1e-5, atol=1e-5)


def test_vectorized_map_in_a_graph():
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    with tf.compat.v1.Graph().as_default():
        ph = tf.compat.v1.placeholder(tf.float32, [None, 2])
        y = tf.vectorized_map(lambda r: r * r, ph)
        with tf.compat.v1.Session() as sess:
            np.testing.assert_array_equal(sess.run(y, {ph: x}), x * x)


# ---- tensorflow.python.framework.ops.control_dependencies -----------------------------------
def test_framework_ops_control_dependencies_resolves():
    ok, fn = aliases.resolve("tensorflow.python.framework.ops.control_dependencies")
    assert ok and fn is tf.control_dependencies


def _random_init_draws(t):
    t.random.set_seed(5)
    return [np.asarray(t.random_normal_initializer(1.0, 2.0, seed=3)((2, 2))),
            np.asarray(t.random_normal_initializer(seed=3)((2,), t.float64)),
            np.asarray(t.random_uniform_initializer(0, 10, seed=3)((4,), t.int32)),
            np.asarray(t.random_uniform_initializer(-1.0, 1.0, seed=3)((4,), t.float16)),
            np.asarray(t.random_normal_initializer(seed=3)((3,), partition_shape=(1,),
                                                           partition_offset=(0,))),
            np.asarray(t.random_normal_initializer()((3,))),  # unseeded: the global seed's
            np.asarray(t.random_uniform_initializer()((3,)))]


def test_tf2_random_initializers_match_tensorflow():
    real = _real_tf()
    ours, theirs = _random_init_draws(tf), _random_init_draws(real)
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=1e-5,
                                   atol=1e-6)
    init = tf.random_normal_initializer(seed=4)
    np.testing.assert_array_equal(init((3,)).numpy(), init((3,)).numpy())  # stateless
    assert tf.random_uniform_initializer(seed=3).get_config() == \
        {"minval": -0.05, "maxval": 0.05, "seed": 3}
    with pytest.raises(ValueError, match="expected to be floating point"):
        tf.random_normal_initializer(seed=3)((2,), tf.int32)
    with pytest.raises(ValueError, match="expected to be numeric"):
        tf.random_uniform_initializer(seed=3)((2,), tf.bool)


def test_tf_initializers_is_the_keras_module():
    assert tf.initializers is tf.keras.initializers
    assert aliases.resolve("tensorflow.initializers.GlorotUniform")[0]


# ---- TF 1's top-level tf.io names ------------------------------------------------------------
def test_tf1_io_names_parse_a_record_as_tensorflow(tmp_path):
    real = _real_tf()
    v1 = tf.compat.v1
    path = str(tmp_path / "r.tfrecord")
    example = real.train.Example(features=real.train.Features(feature={
        "x": real.train.Feature(float_list=real.train.FloatList(value=[1.0, 2.0])),
        "ids": real.train.Feature(int64_list=real.train.Int64List(value=[3, 4, 5]))}))
    with v1.python_io.TFRecordWriter(path) as w:
        w.write(example.SerializeToString())
    (record,) = list(v1.python_io.tf_record_iterator(path))
    assert record == example.SerializeToString()
    spec = {"x": v1.FixedLenFeature([2], v1.float32), "ids": v1.VarLenFeature(v1.int64)}
    parsed = v1.parse_single_example(record, spec)
    np.testing.assert_array_equal(parsed["x"].numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(v1.sparse_tensor_to_dense(parsed["ids"]).numpy(), [3, 4, 5])
    theirs = real.compat.v1.parse_single_example(
        record, {"x": real.compat.v1.FixedLenFeature([2], real.float32),
                 "ids": real.compat.v1.VarLenFeature(real.int64)})
    np.testing.assert_array_equal(
        v1.sparse_tensor_to_dense(parsed["ids"], default_value=0).numpy(),
        real.compat.v1.sparse_tensor_to_dense(theirs["ids"], default_value=0).numpy())


def test_tf1_decode_raw_old_argument_name():
    real = _real_tf()
    v1 = tf.compat.v1
    np.testing.assert_array_equal(v1.decode_raw(bytes=b"ab", out_type=tf.uint8).numpy(),
                                  real.compat.v1.decode_raw(bytes=b"ab",
                                                            out_type=real.uint8).numpy())
    with pytest.raises(ValueError, match="Cannot specify both 'bytes' and 'input_bytes'."):
        v1.decode_raw(input_bytes=b"ab", bytes=b"ab", out_type=tf.uint8)
    with pytest.raises(ValueError):
        v1.decode_raw(out_type=tf.uint8)


def test_framework_tensor_shape_and_spec_modules():
    ok, shape_cls = aliases.resolve("tensorflow.python.framework.tensor_shape.TensorShape")
    assert ok and shape_cls is tf.TensorShape
    assert shape_cls([2, None]).as_list() == [2, None]
    ok, spec_cls = aliases.resolve("tensorflow.python.framework.tensor_spec.TensorSpec")
    assert ok and spec_cls is tf.TensorSpec
