"""TF1's older names and small graph utilities (random_normal, to_float, arg_max,
count_nonzero's old arguments, add_n, tf.Tensor checks, get_default_session,
is_variable_initialized, Print, py_func, tf.train's checkpoint-state helpers), against real
TF1 graph mode or numpy."""

from __future__ import annotations

import os

import numpy as np
import pytest

import ipu_gpu.compat.v1 as v1

_X = np.array([[0.0, 3.0, -1.0], [2.0, 0.0, 5.0]], np.float32)


def _renamed(c):
    g = c.Graph()
    with g.as_default():
        x = c.placeholder(np.float32, [2, 3])
        outs = [c.to_float(c.to_int32(x)), c.to_int64(x), c.to_double(x),
                c.arg_max(x, 1), c.arg_min(x, 0), c.argmax(x, dimension=1),
                c.argmax(x), c.count_nonzero(x, reduction_indices=[1], keep_dims=True),
                c.count_nonzero(input=x), c.add_n([x, x, x]), c.add_n([x]),
                c.global_norm([x, 2.0 * x])]
        shapes = [c.random_normal([2, 3]).shape, c.random_uniform([4]).shape,
                  c.truncated_normal([1, 2]).shape, c.multinomial(x, 5).shape,
                  c.random_shuffle(x).shape]
        with c.Session(graph=g) as sess:
            values = sess.run(outs, {x: _X})
        return values, [o.dtype.name for o in outs], [s.as_list() for s in shapes]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_renamed_ops_equal_real_tensorflow(real_tf):
    ours = _renamed(v1)
    theirs = _renamed(real_tf.compat.v1)
    for a, b in zip(ours[0], theirs[0]):
        np.testing.assert_allclose(a, b, rtol=1e-6)
        assert np.asarray(a).dtype == np.asarray(b).dtype
    assert ours[1] == theirs[1]
    assert ours[2] == theirs[2]


def test_renamed_op_argument_errors():
    with pytest.raises(ValueError, match="Cannot specify both 'axis' and 'dimension'"):
        v1.argmax(_X, axis=0, dimension=1)
    with pytest.raises(ValueError, match="inputs must be a list of at least one Tensor"):
        v1.add_n([])


def test_tensor_isinstance_as_tf1(real_tf):
    for c in (v1, real_tf.compat.v1):
        with c.Graph().as_default():
            x = c.placeholder(np.float32, [2])
            v = c.Variable(np.zeros(2, np.float32))
            y = x + v
            assert isinstance(x, c.Tensor) and isinstance(y, c.Tensor)
            assert not isinstance(v, c.Tensor)
            assert isinstance(y.op, c.Operation)
            assert isinstance(c.no_op(), c.Operation)


def test_default_session_and_initialization_checks():
    assert v1.get_default_session() is None
    with v1.Graph().as_default():
        v = v1.Variable(np.float32(1.0))
        ready = v1.is_variable_initialized(v)
        with v1.Session() as sess:
            assert v1.get_default_session() is sess
            assert not sess.run(ready)
            sess.run(v.initializer)
            assert sess.run(ready)
        assert v1.get_default_session() is None
        assert v1.all_variables() == v1.global_variables()
        assert v1.model_variables() == [] and v1.moving_average_variables() == []


def test_print_writes_message_and_data_each_run(capfd):
    with v1.Graph().as_default():
        x = v1.placeholder(np.float32, [4])
        y = v1.Print(x * 2.0, [x, v1.reduce_sum(x)], message="x: ", summarize=2, first_n=2)
        with v1.Session() as sess:
            for _ in range(3):
                out = sess.run(y, {x: [1.0, 2.5, 3.0, 4.0]})
    np.testing.assert_array_equal(out, [2.0, 5.0, 6.0, 8.0])
    assert capfd.readouterr().err.splitlines() == ["x: [1 2.5...]10.5"] * 2


def test_py_func_in_a_graph_runs_numpy_each_run():
    calls = []

    def scale(a, b):
        calls.append(1)
        return (a * b).astype(np.float32), np.int32(a.size)
    with v1.Graph().as_default():
        x = v1.placeholder(np.float32, [None])
        y, n = v1.py_func(scale, [x, 3.0], [v1.float32, v1.int32])
        assert y.shape.rank is None
        z = v1.reduce_sum(y)
        with v1.Session() as sess:
            assert sess.run([z, n], {x: [1.0, 2.0]}) == [9.0, 2]
            assert sess.run(z, {x: [1.0]}) == 3.0
    assert len(calls) == 2


def test_checkpoint_state_helpers(tmp_path):
    with v1.Graph().as_default():
        v = v1.Variable(np.float32(1.0))
        step = v1.train.create_global_step()
        with pytest.raises(ValueError, match='"global_step" already exists.'):
            v1.train.create_global_step()
        saver = v1.train.Saver(max_to_keep=2)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            assert v1.train.global_step(sess, step) == 0
            assert v1.train.get_checkpoint_state(str(tmp_path)) is None
            prefixes = [saver.save(sess, str(tmp_path / "model"), global_step=i)
                        for i in range(3)]
            sess.run(v.assign(5.0))
            state = v1.train.get_checkpoint_state(str(tmp_path))
            assert state.model_checkpoint_path == prefixes[-1]
            assert state.all_model_checkpoint_paths == prefixes[1:]
            assert v1.train.latest_checkpoint(str(tmp_path)) == prefixes[-1]
            assert not v1.train.checkpoint_exists(prefixes[0])  # beyond max_to_keep
            assert all(v1.train.checkpoint_exists(p) for p in prefixes[1:])
            saver.restore(sess, state.model_checkpoint_path)
            assert sess.run(v) == 1.0
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "model-1.npz", "model-2.npz"]


def test_identity_names_its_node(real_tf):
    for c in (v1, real_tf.compat.v1):
        with c.Graph().as_default() as g:
            x = c.placeholder(np.float32, [2], name="x")
            y = c.identity(x * 2.0, name="output")
            z = c.identity(x, name="output")
            with c.name_scope("head"):
                h = c.identity(y, name="logits")
            assert (y.name, z.name, h.name) == ("output:0", "output_1:0", "head/logits:0")
            assert g.get_tensor_by_name("output:0") is y
            with c.Session() as sess:
                np.testing.assert_array_equal(sess.run("head/logits:0", {"x:0": [1, 2]}),
                                              [2.0, 4.0])


def _normalized(c):
    g = c.Graph()
    with g.as_default():
        x = c.placeholder(np.float32, [None, 3])
        mean, var = c.nn.moments(x, [0])
        y = c.nn.batch_normalization(x, mean, var, offset=0.5, scale=2.0, variance_epsilon=1e-3)
        z = c.nn.batch_normalization(x, mean, var, None, None, 1e-3)
        checked = c.check_numerics(x * 2.0, "bad x")
        with c.Session(graph=g) as sess:
            out = sess.run([y, z, checked], {x: _X})
            with pytest.raises(Exception) as err:
                sess.run(checked, {x: np.full((2, 3), np.inf, np.float32)})
        return out, type(err.value).__name__, str(err.value)


def test_batch_normalization_and_check_numerics_equal_real_tensorflow(real_tf):
    ours, kind, message = _normalized(v1)
    theirs, their_kind, their_message = _normalized(real_tf.compat.v1)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert kind == their_kind == "InvalidArgumentError"
    assert "bad x : Tensor had Inf values" in message and "bad x" in their_message
    assert v1.dimension_value(v1.Dimension(3)) == 3 and v1.dimension_value(None) is None


def _relative_checkpoints(c, directory):
    g = c.Graph()
    with g.as_default():
        v = c.Variable(np.float32(1.0), name="v")
        saver = c.train.Saver(max_to_keep=2)
        with c.Session(graph=g) as sess:
            sess.run(c.global_variables_initializer())
            prefixes = [saver.save(sess, f"{directory}/model", global_step=i) for i in range(3)]
            sess.run(v.assign(7.0))
            latest = c.train.latest_checkpoint(directory)
            state = c.train.get_checkpoint_state(directory)
            saver.restore(sess, latest)
            restored = sess.run(v)
    with open(os.path.join(directory, "checkpoint")) as f:
        written = [ln for ln in f.read().splitlines() if "timestamp" not in ln]
    return (prefixes, latest, state.model_checkpoint_path,
            list(state.all_model_checkpoint_paths), restored, written)


def test_relative_checkpoint_paths_equal_real_tensorflow(real_tf, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ours = _relative_checkpoints(v1, "ours")
    theirs = _relative_checkpoints(real_tf.compat.v1, "theirs")
    assert ours == tuple(x.replace("theirs", "ours") if isinstance(x, str) else
                         [y.replace("theirs", "ours") for y in x] if isinstance(x, list) else x
                         for x in theirs)
    assert ours[5][0] == 'model_checkpoint_path: "model-2"'
    os.remove("ours/model-2.npz")
    assert v1.train.latest_checkpoint("ours") is None  # TF: the newest checkpoint is gone


def _scoped_names(c):
    with c.Graph().as_default():
        x = c.placeholder(np.float32, [None, 3], name="x")
        with c.name_scope("ns"):
            with c.variable_scope("head"):
                y = c.identity(x, name="out")
                w = c.get_variable("w", [3, 2], regularizer=lambda w: c.reduce_sum(w))
                v = c.Variable(1.0, name="plain")
        (reg,) = c.losses.get_regularization_losses()
        return y.name, w.name, v.name, reg.name.startswith("head/w/Regularizer/")


def test_variable_scopes_name_ops_not_get_variable_equal_real_tensorflow(real_tf):
    assert _scoped_names(v1) == _scoped_names(real_tf.compat.v1) == (
        "ns/head/out:0", "head/w:0", "ns/head/plain:0", True)


def _repeated_scopes(c):
    names = []
    with c.Graph().as_default():
        x = c.placeholder(np.float32, [2], name="x")
        for _ in range(2):
            with c.name_scope("block") as scope:
                names += [scope, c.identity(x, name="out").name]
        with c.name_scope("block/") as scope:  # re-entered as it is
            names += [scope, c.identity(x, name="out").name]
        for _ in range(2):
            with c.variable_scope("vs", reuse=c.AUTO_REUSE):
                names += [c.identity(x, name="o").name, c.get_variable("w", [1]).name]
    return names


def test_repeated_name_scopes_equal_real_tensorflow(real_tf):
    assert _repeated_scopes(v1) == _repeated_scopes(real_tf.compat.v1)


def _unconnected(c):
    g = c.Graph()
    with g.as_default():
        x = c.placeholder(np.float32, [2])
        z = c.placeholder(np.float32, [3])
        zero = c.gradients(c.reduce_sum(x * x), [x, z], unconnected_gradients="zero")
        none = c.gradients(c.reduce_sum(x * x), [z])
        only = c.gradients(c.reduce_sum(x), [z], unconnected_gradients="zero")
        with c.Session(graph=g) as sess:
            return sess.run([zero, only], {x: [1.0, 2.0], z: [1.0, 2.0, 3.0]}), none


def test_unconnected_gradients_equal_real_tensorflow(real_tf):
    (ours, ours_none), (theirs, theirs_none) = _unconnected(v1), _unconnected(
        real_tf.compat.v1)
    assert ours_none == theirs_none == [None]
    for a, b in zip(ours[0] + ours[1], theirs[0] + theirs[1]):
        np.testing.assert_array_equal(a, b)
    with v1.Graph().as_default():
        x = v1.placeholder(np.float32, [2])
        with pytest.raises(ValueError, match="'bad' is not a valid UnconnectedGradients"):
            v1.gradients(x, [x], unconnected_gradients="bad")


def _stopped(c):
    g = c.Graph()
    with g.as_default():
        x = c.placeholder(np.float32, [3])
        w = c.Variable(np.array([0.5, -1.0, 2.0], np.float32))
        a = x * w
        b = a * a + x
        y = c.reduce_sum(b * a + c.exp(a) * w)
        grads = [c.gradients(y, [x, w], stop_gradients=[a]),
                 c.gradients(y, [x, w], stop_gradients=[b]),
                 c.gradients(y, [x, w], stop_gradients=[a, b]),
                 c.gradients(y, [x, w], stop_gradients=b, grad_ys=2.0),
                 c.gradients(y, [x, a], stop_gradients=[a])]
        connected = [c.gradients(b, [w], stop_gradients=[a])]
        missing = [[t is None for t in pair] for pair in grads]
        fetches = [[t for t in pair if t is not None] for pair in grads]
        with c.Session(graph=g) as sess:
            sess.run(c.global_variables_initializer())
            return sess.run(fetches, {x: [1.0, 2.0, -0.5]}), connected + missing


def test_stop_gradients_equal_real_tensorflow(real_tf):
    (ours, ours_connected), (theirs, their_connected) = _stopped(v1), _stopped(
        real_tf.compat.v1)
    assert ours_connected == their_connected  # which gradients are None
    assert ours_connected[:2] == [[None], [False, False]]  # w reaches b only through a
    for a, b in zip(ours, theirs):
        for p, q in zip(a, b):
            np.testing.assert_allclose(p, q, rtol=2e-5, atol=1e-5)


def test_colocate_with_is_accepted():
    with v1.Graph().as_default():
        v = v1.Variable(np.float32(2.0))
        with v1.colocate_with(v):
            y = v * 3.0
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            assert sess.run(y) == 6.0


def test_dtype_class_as_tf1(real_tf):
    for c in (v1, real_tf.compat.v1):
        assert isinstance(c.float32, c.DType) and not isinstance(3, c.DType)
        assert [c.DType(e).name for e in (1, 2, 3, 9, 10, 19)] == [
            "float32", "float64", "int32", "int64", "bool", "float16"]
        with pytest.raises(TypeError, match="99 does not correspond to a valid "
                                            "tensorflow::DataType"):
            c.DType(99)

    def annotated(dtype: v1.DType = v1.float32):  # Graphcore's TF1 code annotates so
        return dtype
    assert annotated() == v1.float32


def test_dropout_takes_tf1_keep_prob(real_tf):
    ones = np.ones(4000, np.float32)
    with v1.Graph().as_default() as g:
        x = v1.placeholder(np.float32, [4000])
        keep = v1.placeholder(np.float32, [])
        v1.set_random_seed(3)
        fed, positional, by_rate = (v1.nn.dropout(x, keep), v1.nn.dropout(x, 0.8),
                                    v1.nn.dropout(x, rate=0.25))
        with v1.Session(graph=g) as sess:
            a, b, c = sess.run([fed, positional, by_rate], {x: ones, keep: 0.5})
            kept_all = sess.run(fed, {x: ones, keep: 1.0})
    for out, p in ((a, 0.5), (b, 0.8), (c, 0.75)):  # keep probability p, kept scaled 1/p
        assert set(np.unique(out)) == {0.0, np.float32(1.0 / p)}
        assert abs(float(np.mean(out != 0.0)) - p) < 0.05
    np.testing.assert_array_equal(kept_all, ones)
    for c in (v1, real_tf.compat.v1):  # the errors TF raises (TF 1.15's texts here)
        with c.Graph().as_default():
            x = c.placeholder(np.float32, [4])
            with pytest.raises(ValueError, match="Cannot specify both 'keep_prob' and 'rate'"):
                c.nn.dropout(x, keep_prob=0.5, rate=0.5)
            with pytest.raises(ValueError, match="rate"):
                c.nn.dropout(x)
            with pytest.raises(ValueError, match="rate"):
                c.nn.dropout(x, keep_prob=0.0)
    with v1.Graph().as_default():
        with pytest.raises(ValueError, match="You must provide a rate to dropout"):
            v1.nn.dropout(v1.placeholder(np.float32, [4]))
