"""The names the portability sweep over Graphcore's tutorials and examples found missing
(tf.name_scope, tf.control_dependencies, tf.dtypes/tf.DType, tf.get_logger, tf.is_tensor,
tf.add_n/tf.math.add_n, tf.nn.relu6, ipu.nn_ops.gelu/swish): numpy references, the real
TensorFlow where it is installed, gradients, errors, and ``ipu-gpu check`` reading them."""

import logging
import textwrap

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu import portability
from ipu_gpu.errors import InvalidArgumentError
from ipu_gpu.ipu import nn_ops


def _real_tf():
    return pytest.importorskip("tensorflow")


def _np_sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _np_gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


_GELU_X = np.array([-3.0, -1.5, -0.25, 0.0, 0.5, 1.0, 2.5], np.float32)


# ---- tf.name_scope -------------------------------------------------------------------------
def _scopes(ns):
    out = []
    with ns("outer") as a:
        out.append(a)
        with ns("inner") as b:
            out.append(b)
            with ns("abs/") as c:
                out.append(c)
            with ns("") as d:
                out.append(d)
        out.append(ns("again").__enter__())
    return out


def test_name_scope_eager_names_match_tensorflow():
    ours = _scopes(tf.name_scope)
    assert ours == ["outer/", "outer/inner/", "abs/", "", "outer/again/"]
    assert ours == _scopes(_real_tf().name_scope)


def test_name_scope_restored_after_an_exception():
    with pytest.raises(RuntimeError):
        with tf.name_scope("boom"):
            raise RuntimeError("x")
    with tf.name_scope("after") as s:
        assert s == "after/"


@pytest.mark.parametrize("bad", [None, 3, b"bytes"])
def test_name_scope_rejects_a_non_string_name(bad):
    with pytest.raises(ValueError, match="name for name_scope must be a string."):
        tf.name_scope(bad)
    with pytest.raises(ValueError, match="name for name_scope must be a string."):
        _real_tf().name_scope(bad)


def test_name_scope_and_control_dependencies_in_a_graph():
    g = tf.compat.v1.Graph()
    with g.as_default():
        assert not tf.executing_eagerly()
        v = tf.compat.v1.Variable(0.0)
        with tf.name_scope("outer") as s:
            c = tf.constant(2.0, name="c")
        inc = v.assign_add(1.0)
        with tf.control_dependencies([inc]):
            read = tf.identity(v)
        plain = tf.identity(v)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            got = [sess.run(read), sess.run(read), sess.run(plain)]
    assert s == "outer/" and c.name == "outer/c:0"
    assert got == [1.0, 2.0, 2.0]  # the dependency runs the increment; the plain read does not


def test_control_dependencies_eager_is_a_null_block():
    v = tf.Variable(1.0)
    with tf.control_dependencies([v.assign_add(1.0)]) as ctx:
        assert ctx is None
        assert float(v.numpy()) == 2.0
    with tf.control_dependencies(None):
        pass


# ---- small names ----------------------------------------------------------------------------
def test_get_logger_is_the_tensorflow_logger():
    assert tf.get_logger() is logging.getLogger("tensorflow")
    assert tf.compat.v1.get_logger() is logging.getLogger("tensorflow")


def test_is_tensor_matches_tensorflow():
    real = _real_tf()
    cases = [(tf.constant(1.0), real.constant(1.0)), (tf.Variable(1.0), real.Variable(1.0)),
             (np.ones(2), np.ones(2)), (1.0, 1.0), ([1, 2], [1, 2]), (None, None),
             (tf.SparseTensor([[0]], [1.0], [2]), real.SparseTensor([[0]], [1.0], [2]))]
    for ours, theirs in cases:
        assert tf.is_tensor(ours) is real.is_tensor(theirs), (ours, theirs)


def test_dtypes_namespace():
    assert tf.dtypes.float32 == np.float32 and tf.dtypes.int32 == np.int32
    assert tf.dtypes.DType is tf.DType is tf.compat.v1.DType
    assert isinstance(tf.dtypes.float16, tf.DType)
    assert tf.dtypes.DType(1) == np.float32 and tf.dtypes.DType(3) == np.int32
    assert tf.dtypes.as_dtype("float64") == np.float64
    y = tf.dtypes.cast(tf.constant([1.7, -2.2]), tf.dtypes.int32)
    np.testing.assert_array_equal(y.numpy(), np.array([1, -2], np.int32))
    assert tf.compat.v1.dtypes.int64 == np.int64


# ---- add_n -----------------------------------------------------------------------------------
def test_add_n_sums_and_passes_gradients():
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(3)]
    vs = [tf.Variable(a) for a in arrays]
    with tf.GradientTape() as tape:
        total = tf.add_n(vs)
        loss = tf.reduce_sum(total * total)
    np.testing.assert_allclose(total.numpy(), arrays[0] + arrays[1] + arrays[2], rtol=1e-6)
    for g in tape.gradient(loss, vs):
        np.testing.assert_allclose(g.numpy(), 2 * total.numpy(), rtol=1e-6)
    assert tf.math.add_n is tf.add_n
    np.testing.assert_array_equal(tf.add_n((np.ones(2, np.float32),)).numpy(), [1.0, 1.0])


def test_add_n_errors_match_tensorflow():
    real = _real_tf()
    with pytest.raises(ValueError):
        tf.add_n([])
    with pytest.raises(ValueError):
        real.add_n([])
    with pytest.raises(InvalidArgumentError, match="must have the same size and shape"):
        tf.add_n([tf.ones((2, 3)), tf.ones((3,))])  # no broadcasting
    with pytest.raises(real.errors.InvalidArgumentError, match="must have the same size"):
        real.add_n([real.ones((2, 3)), real.ones((3,))])
    with pytest.raises(InvalidArgumentError, match="expected to be a float tensor but is a "
                                                   "int32 tensor"):
        tf.add_n([tf.ones((2,)), tf.ones((2,), tf.int32)])
    with pytest.raises(real.errors.InvalidArgumentError, match="expected to be a float tensor "
                                                               "but is a int32 tensor"):
        real.add_n([real.ones((2,)), real.ones((2,), real.int32)])


# ---- relu6 -----------------------------------------------------------------------------------
def test_relu6_values_and_gradient_match_tensorflow():
    real = _real_tf()
    x = np.array([-2.0, 0.0, 0.5, 3.0, 6.0, 6.5, 100.0], np.float32)
    np.testing.assert_array_equal(tf.nn.relu6(x).numpy(), np.minimum(np.maximum(x, 0), 6))
    v = tf.Variable(x)
    with tf.GradientTape() as tape:
        y = tf.nn.relu6(v) * tf.constant(np.arange(1, 8, dtype=np.float32))
    g = tape.gradient(y, v).numpy()
    rv = real.Variable(x)
    with real.GradientTape() as rtape:
        ry = real.nn.relu6(rv) * real.constant(np.arange(1, 8, dtype=np.float32))
    np.testing.assert_array_equal(g, rtape.gradient(ry, rv).numpy())  # 0 at exactly 0 and 6
    ints = np.array([-3, 2, 9], np.int32)
    np.testing.assert_array_equal(tf.nn.relu6(ints).numpy(), real.nn.relu6(ints).numpy())
    assert tf.nn.relu6(ints).dtype == np.int32


def test_relu6_rejects_bool_and_runs_in_a_graph():
    with pytest.raises(InvalidArgumentError, match="Value for attr 'T' of bool"):
        tf.nn.relu6(np.array([True]))
    x = np.array([-1.0, 3.0, 8.0], np.float32)
    with tf.compat.v1.Graph().as_default():
        y = tf.compat.v1.nn.relu6(tf.constant(x))
        with tf.compat.v1.Session() as sess:
            np.testing.assert_array_equal(sess.run(y), tf.nn.relu6(x).numpy())


# ---- ipu.nn_ops.gelu / swish -----------------------------------------------------------------
def test_ipu_gelu_defaults_to_the_tanh_form():
    real = _real_tf()
    got = nn_ops.gelu(_GELU_X).numpy()
    np.testing.assert_allclose(got, _np_gelu_tanh(_GELU_X.astype(np.float64)), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(got, real.nn.gelu(_GELU_X, approximate=True).numpy(),
                               rtol=1e-6, atol=1e-7)
    exact = nn_ops.gelu(_GELU_X, approximate=False).numpy()
    np.testing.assert_allclose(exact, real.nn.gelu(_GELU_X, approximate=False).numpy(),
                               rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("approximate", [True, False])
def test_ipu_gelu_gradient_matches_tensorflow(approximate):
    real = _real_tf()
    v = tf.Variable(_GELU_X)
    with tf.GradientTape() as tape:
        y = nn_ops.gelu(v, approximate=approximate)
    rv = real.Variable(_GELU_X)
    with real.GradientTape() as rtape:
        ry = real.nn.gelu(rv, approximate=approximate)
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), rtape.gradient(ry, rv).numpy(),
                               rtol=1e-5, atol=1e-6)


def test_ipu_swish_values_and_gradient():
    real = _real_tf()
    x = _GELU_X
    np.testing.assert_allclose(nn_ops.swish(x).numpy(), x * _np_sigmoid(x), rtol=1e-6,
                               atol=1e-7)
    v = tf.Variable(x)
    with tf.GradientTape() as tape:
        y = nn_ops.swish(v)
    rv = real.Variable(x)
    with real.GradientTape() as rtape:
        ry = real.nn.silu(rv)
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), rtape.gradient(ry, rv).numpy(),
                               rtol=1e-5, atol=1e-6)


def test_ipu_activations_reject_integer_input():
    with pytest.raises(ValueError):
        nn_ops.gelu(np.array([1, 2], np.int32))
    with pytest.raises((ValueError, TypeError)):
        nn_ops.swish(np.array([1, 2], np.int32))


# ---- ipu-gpu check --------------------------------------------------------------------------
def test_check_reports_the_sweep_names_provided(tmp_path):
    program = tmp_path / "prog.py"
    program.write_text(textwrap.dedent("""\
        import tensorflow as tf
        from tensorflow.python import ipu
        from tensorflow.python.ipu import nn_ops

        tf.get_logger().propagate = False
        with tf.name_scope("block"):
            x = tf.constant([1.0], dtype=tf.dtypes.float32)
        assert isinstance(x.dtype, tf.DType) and tf.is_tensor(x)
        with tf.control_dependencies([x]):
            y = tf.math.add_n([tf.nn.relu6(x), nn_ops.gelu(x), ipu.nn_ops.swish(x)])
        """))
    report = portability.check_file(str(program), tf_version=2)
    assert report.errors == []
    assert [s.name for s in report.missing] == []
    names = {s.name for s in report.provided}
    assert {"tensorflow.name_scope", "tensorflow.dtypes.float32", "tensorflow.DType",
            "tensorflow.control_dependencies", "tensorflow.math.add_n", "tensorflow.nn.relu6",
            "tensorflow.get_logger", "tensorflow.is_tensor",
            "tensorflow.python.ipu.nn_ops.gelu"} <= names


# ---- no_op, get_static_value, assert_non_negative, autograph, reduce_util -----------------------
def test_no_op_and_get_static_value():
    real = _real_tf()
    assert tf.no_op() is None and real.no_op() is None
    for ours, theirs in [(tf.constant([1, 2]), real.constant([1, 2])), (3, 3), ([1, 2], [1, 2])]:
        np.testing.assert_array_equal(tf.get_static_value(ours), real.get_static_value(theirs))
    assert tf.get_static_value(tf.Variable(2.0)) == 2.0
    with tf.compat.v1.Graph().as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2])
        assert tf.get_static_value(x * 2.0) is None
        op = tf.no_op()
        assert op.type == "NoOp"
        with tf.compat.v1.Session() as sess:
            assert sess.run(op) is None


@pytest.mark.parametrize(("x", "summarize", "message"), [
    (np.array([1, -2, 3, 4, 5]), None, None),
    (np.array([[0.5, -1.0], [2.0, 3.0]], np.float32), None, "msg"),
    (np.array([-1, 2, 3, 4], np.int32), 0, None),
    (np.array([-1, 2], np.int32), 5, None),
    (np.int32(-3), None, None),
])
def test_assert_non_negative_message_matches_tensorflow(x, summarize, message):
    real = _real_tf()
    with pytest.raises(InvalidArgumentError) as ours:
        tf.debugging.assert_non_negative(x, summarize=summarize, message=message)
    with pytest.raises(real.errors.InvalidArgumentError) as theirs:
        real.debugging.assert_non_negative(x, summarize=summarize, message=message)
    assert str(ours.value) == theirs.value.message


def test_assert_non_negative_passes_and_rejects_strings():
    assert tf.debugging.assert_non_negative(np.array([0.0, 1.0])) is None
    assert tf.debugging.assert_non_negative(np.array([], np.float32)) is None
    with pytest.raises(TypeError):
        tf.debugging.assert_non_negative(np.array(["a"]))


def test_autograph_do_not_convert_keeps_the_function():
    def f(x):
        """Doc."""
        return x * 2

    for wrapped in (tf.autograph.experimental.do_not_convert(f),
                    tf.autograph.experimental.do_not_convert()(f)):
        assert wrapped(3) == 6 and wrapped.__doc__ == "Doc." and wrapped.__name__ == "f"
    traced = tf.function(tf.autograph.experimental.do_not_convert(f))
    assert float(traced(tf.constant(2.0)).numpy()) == 4.0


def test_compat_v1_names_and_reduce_util():
    from ipu_gpu import aliases

    assert tf.compat.v1.UnconnectedGradients is tf.UnconnectedGradients
    with tf.compat.v1.Graph().as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2])
        w = tf.compat.v1.placeholder(tf.float32, [2])
        grads = tf.compat.v1.gradients(tf.reduce_sum(x * 2.0), [x, w],
                                       unconnected_gradients=tf.compat.v1.UnconnectedGradients.ZERO)
        with tf.compat.v1.Session() as sess:
            gx, gw = sess.run(grads, {x: np.ones(2), w: np.ones(2)})
    np.testing.assert_array_equal(gx, [2.0, 2.0])
    np.testing.assert_array_equal(gw, [0.0, 0.0])
    ok, op = aliases.resolve("tensorflow.python.distribute.reduce_util.ReduceOp")
    assert ok and op is tf.distribute.ReduceOp


# ---- unsorted_segment_mean -----------------------------------------------------------------------
@pytest.mark.parametrize(("data", "ids", "n"), [
    (np.array([1, 2, 3], np.int32), [0, 0, 1], 3),
    (np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32), [0, -1, 0], 2),
    (np.array([[1.0, 2.0], [3.0, 4.0]], np.float64), [[0, 1], [1, 1]], 2),
    (np.zeros((0, 3), np.float32), np.zeros((0,), np.int32), 2),
])
def test_unsorted_segment_mean_matches_tensorflow(data, ids, n):
    real = _real_tf()
    ours = tf.math.unsorted_segment_mean(data, ids, n)
    theirs = real.math.unsorted_segment_mean(data, ids, n)
    assert ours.dtype == theirs.dtype.as_numpy_dtype
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_unsorted_segment_mean_numpy_reference_and_gradient():
    rng = np.random.default_rng(2)
    data = rng.standard_normal((7, 3)).astype(np.float32)
    ids = np.array([2, 0, 2, -1, 0, 2, 4], np.int32)
    want = np.zeros((5, 3), np.float32)
    for s in range(5):
        rows = data[ids == s]
        if len(rows):
            want[s] = rows.mean(axis=0)
    v = tf.Variable(data)
    weights = rng.standard_normal((5, 3)).astype(np.float32)
    with tf.GradientTape() as tape:
        y = tf.math.unsorted_segment_mean(v, ids, 5)
        loss = tf.reduce_sum(y * weights)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-5, atol=1e-6)
    counts = np.bincount(ids[ids >= 0], minlength=5)
    want_grad = np.where((ids >= 0)[:, None], weights[np.maximum(ids, 0)] /
                         np.maximum(counts[np.maximum(ids, 0)], 1)[:, None], 0.0)
    np.testing.assert_allclose(tape.gradient(loss, v).numpy(), want_grad, rtol=1e-5, atol=1e-6)
    with pytest.raises(InvalidArgumentError, match="out of range"):
        tf.math.unsorted_segment_mean(np.ones(2, np.float32), [0, 5], 2)


def test_unsorted_segment_mean_in_a_graph_with_gradients():
    x_val = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    w = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    with tf.compat.v1.Graph().as_default():
        x = tf.compat.v1.placeholder(tf.float32, [3, 2])
        ids = tf.compat.v1.placeholder(tf.int32, [3])
        y = tf.math.unsorted_segment_mean(x, ids, 2)
        (g,) = tf.compat.v1.gradients(tf.reduce_sum(y * w), x)
        with tf.compat.v1.Session() as sess:
            y_val, g_val = sess.run([y, g], {x: x_val, ids: [0, 1, 0]})
    np.testing.assert_allclose(y_val, [[2.0, 3.0], [2.0, 3.0]])
    np.testing.assert_allclose(g_val, [[0.5, 1.0], [3.0, 4.0], [0.5, 1.0]])
