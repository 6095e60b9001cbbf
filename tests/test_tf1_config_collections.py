"""TF1's session configuration messages (ConfigProto, GPUOptions, RunOptions, ...), GraphKeys
and the collection functions, and tf.contrib.layers' initializers and regularizers."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as tf
import ipu_gpu.compat.v1 as v1


def test_config_messages_behave_as_protobuf(real_tf):
    c = v1.ConfigProto(allow_soft_placement=True, log_device_placement=False,
                       gpu_options=v1.GPUOptions(per_process_gpu_memory_fraction=0.5),
                       device_count={"GPU": 0})
    c.gpu_options.allow_growth = True
    c.intra_op_parallelism_threads = 2
    theirs = real_tf.compat.v1.ConfigProto(
        allow_soft_placement=True, log_device_placement=False,
        gpu_options=real_tf.compat.v1.GPUOptions(per_process_gpu_memory_fraction=0.5),
        device_count={"GPU": 0})
    theirs.gpu_options.allow_growth = True
    theirs.intra_op_parallelism_threads = 2
    for name in ("allow_soft_placement", "intra_op_parallelism_threads",
                 "inter_op_parallelism_threads", "operation_timeout_in_ms"):
        assert getattr(c, name) == getattr(theirs, name)
    assert c.gpu_options.allow_growth and c.gpu_options.per_process_gpu_memory_fraction == 0.5
    assert dict(c.device_count) == dict(theirs.device_count)
    with pytest.raises(ValueError, match='Protocol message ConfigProto has no "bogus" field.'):
        v1.ConfigProto(bogus=1)
    with pytest.raises(ValueError, match='Protocol message ConfigProto has no "bogus" field.'):
        real_tf.compat.v1.ConfigProto(bogus=1)
    with pytest.raises(AttributeError, match="Assignment not allowed"):
        c.gpu_options = v1.GPUOptions()
    copy = v1.ConfigProto()
    copy.CopyFrom(c)
    assert copy == c and copy != v1.ConfigProto()
    assert v1.RunOptions.FULL_TRACE == real_tf.compat.v1.RunOptions.FULL_TRACE == 3
    assert v1.RunOptions(trace_level=v1.RunOptions.FULL_TRACE).trace_level == 3


def test_session_accepts_config_and_run_options():
    with v1.Graph().as_default():
        x = v1.placeholder(tf.float32, [2])
        y = x * 2.0
        config = v1.ConfigProto(allow_soft_placement=True)
        config.gpu_options.allow_growth = True
        with v1.Session(config=config) as sess:
            out = sess.run(y, {x: np.ones(2, np.float32)},
                           options=v1.RunOptions(trace_level=v1.RunOptions.FULL_TRACE),
                           run_metadata=v1.RunMetadata())
    np.testing.assert_array_equal(out, [2.0, 2.0])


def test_graph_keys_are_tensorflows(real_tf):
    theirs = real_tf.compat.v1.GraphKeys
    names = [n for n in vars(v1.GraphKeys) if n.isupper()]
    assert len(names) > 30
    for name in names:
        assert getattr(v1.GraphKeys, name) == getattr(theirs, name), name


def test_collections_of_the_default_graph():
    with v1.Graph().as_default():
        a = v1.get_variable("scope/a", [1])
        b = v1.get_variable("b", [1], trainable=False)
        assert v1.get_collection(v1.GraphKeys.GLOBAL_VARIABLES) == [a, b]
        assert v1.get_collection(v1.GraphKeys.TRAINABLE_VARIABLES) == [a]
        assert v1.get_collection(v1.GraphKeys.GLOBAL_VARIABLES, scope="scope") == [a]
        v1.add_to_collection("mine", 1)
        v1.add_to_collections(["x", "y"], 2)
        v1.add_to_collections("z", 3)
        copy = v1.get_collection("mine")
        copy.append(9)
        assert v1.get_collection("mine") == [1]
        ref = v1.get_collection_ref("mine")
        ref.append(4)
        assert v1.get_collection("mine") == [1, 4]
        assert v1.get_collection("x") == v1.get_collection("y") == [2]
        assert v1.get_collection("z") == [3]
        assert v1.get_collection("absent") == []


def _draw(initializer, shape):
    with v1.Graph().as_default():
        w = v1.get_variable("w", shape, initializer=initializer)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            return sess.run(w).astype(np.float64)


def test_contrib_initializers_follow_tf1s_arithmetic():
    layers = v1.contrib.layers
    fan_in, fan_out = 300, 500
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    w = _draw(layers.xavier_initializer(seed=1), [fan_in, fan_out])
    assert np.abs(w).max() <= limit and np.abs(w).max() > 0.99 * limit
    np.testing.assert_allclose(w.std(), limit / np.sqrt(3.0), rtol=0.02)
    w = _draw(layers.xavier_initializer(uniform=False, seed=1), [fan_in, fan_out])
    deviation = np.sqrt(1.3 / ((fan_in + fan_out) / 2.0))  # before truncation at 2 of them
    assert np.abs(w).max() <= 2 * deviation
    np.testing.assert_allclose(w.std(), deviation * 0.87962566103423978, rtol=0.02)
    w = _draw(layers.variance_scaling_initializer(seed=2), [fan_in, fan_out])  # He's
    np.testing.assert_allclose(w.std(), np.sqrt(1.3 * 2.0 / fan_in) * 0.8796, rtol=0.02)
    w = _draw(layers.variance_scaling_initializer(factor=1.0, mode="FAN_OUT", uniform=True,
                                                  seed=3), [fan_in, fan_out])
    np.testing.assert_allclose(np.abs(w).max(), np.sqrt(3.0 / fan_out), rtol=0.01)
    with pytest.raises(TypeError, match="Unknown mode fan_in"):
        layers.variance_scaling_initializer(mode="fan_in")
    with pytest.raises(TypeError, match="non-floating point type"):
        layers.xavier_initializer(dtype=tf.int32)


def test_contrib_regularizers():
    layers = v1.contrib.layers
    w = tf.constant(np.array([[1.0, -2.0], [0.5, 3.0]], np.float32))
    np.testing.assert_allclose(layers.l2_regularizer(0.1)(w).numpy(), 0.1 * 14.25 / 2,
                               rtol=1e-6)
    np.testing.assert_allclose(layers.l1_regularizer(0.5)(w).numpy(), 0.5 * 6.5, rtol=1e-6)
    np.testing.assert_allclose(layers.l1_l2_regularizer(0.5, 0.1)(w).numpy(),
                               0.5 * 6.5 + 0.1 * 14.25 / 2, rtol=1e-6)
    assert layers.l2_regularizer(0.0)(w) is None
    with pytest.raises(ValueError, match="scale cannot be an integer: 1"):
        layers.l2_regularizer(1)
    with pytest.raises(ValueError, match="Setting a scale less than 0 on a regularizer: -0.5"):
        layers.l1_regularizer(-0.5)
