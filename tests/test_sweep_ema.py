"""tf.train.ExponentialMovingAverage in its TF 2 (eager) form (issue 17 sweep), against the
real TensorFlow and a numpy reference: shadow creation and naming, repeated apply, the
num_updates decay, a variable decay, variables_to_restore, TF 2's errors; and the same
class in a TF 1 graph still building an update op."""

import re

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as tf1


def _trace(tf, decay=0.5, num_updates=None):
    v = tf.Variable([1.0, 2.0], name="w")
    b = tf.Variable(5.0, name="b")
    step = tf.Variable(0, dtype=tf.int64) if num_updates else None
    ema = tf.train.ExponentialMovingAverage(decay, num_updates=step)
    # (the shadow's name without TF's eager uniquifying suffix: after earlier averages in
    # the process TF names it w/ExponentialMovingAverage_<n>)
    out = [ema.apply([v]), ema.average(v).numpy().tolist(),
           re.sub(r"(_\d+)?:0$", "", ema.average(v).name),
           ema.average(v).trainable, re.sub(r"_\d+$", "", ema.average_name(v)),
           ema.average_name(b), ema.name,
           ema.average(b)]
    for i, value in enumerate(([3.0, 4.0], [5.0, 6.0], [0.0, -1.0])):
        v.assign(value)
        if step is not None:
            step.assign(i + 1)
        ema.apply([v, b])
        out.append(ema.average(v).numpy().tolist())
        out.append(float(ema.average(b).numpy()))
    out.append(sorted((k, val.name) for k, val in ema.variables_to_restore().items()))
    return out


def _numpy_trace(decay, num_updates):
    shadow, values = np.array([1.0, 2.0]), []
    for i, value in enumerate(([3.0, 4.0], [5.0, 6.0], [0.0, -1.0])):
        d = min(decay, (2.0 + i) / (11.0 + i)) if num_updates else decay
        shadow = shadow - (1 - d) * (shadow - np.array(value))
        values.append(shadow.tolist())
    return values


@pytest.mark.parametrize("decay,num_updates", [(0.5, False), (0.9, True), (0.99, True)])
def test_eager_form_matches_real_tensorflow_and_numpy(decay, num_updates, real_tf):
    got, want = _trace(ig, decay, num_updates), _trace(real_tf, decay, num_updates)
    assert got[0] is None and got[2:7] == want[2:7] and got[7] is None and want[7] is None
    np.testing.assert_allclose(got[1], want[1])
    for g, w in zip(got[8:-1], want[8:-1]):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    # TF's eager map also holds the shadows of earlier averages in the process
    assert got[-1] == [("b/ExponentialMovingAverage", "b:0"),
                       ("w/ExponentialMovingAverage", "w:0")]
    assert set(got[-1]) <= {(re.sub(r"_\d+$", "", k), n) for k, n in want[-1]}
    np.testing.assert_allclose(got[8:-1:2], _numpy_trace(decay, num_updates), rtol=1e-6)


def test_a_variable_decay_and_errors(real_tf):
    for tf in (ig, real_tf):
        v = tf.Variable([2.0])
        decay = tf.Variable(0.25)
        ema = tf.train.ExponentialMovingAverage(decay)
        ema.apply([v])
        v.assign([6.0])
        decay.assign(0.5)
        ema.apply([v])
        np.testing.assert_allclose(ema.average(v).numpy(), [4.0])
        with pytest.raises(TypeError, match="does not support non-Variable tensors when "
                                            "eager execution is enabled"):
            ema.apply([tf.constant([1.0])])
        with pytest.raises(TypeError, match="The variables must be half, float, or double"):
            ema.apply([tf.Variable(1)])


def test_graph_form_still_builds_an_update_op():
    with tf1.Graph().as_default():
        v = tf1.get_variable("v", initializer=tf1.constant([1.0, 3.0]))
        ema = tf1.train.ExponentialMovingAverage(0.5)
        update = ema.apply([v])
        assign = v.assign([3.0, 5.0])
        with tf1.Session() as sess:
            sess.run(tf1.global_variables_initializer())
            sess.run(assign)
            sess.run(update)
            np.testing.assert_allclose(sess.run(ema.average(v)), [2.0, 4.0])
        assert ema.average_name(v) == "v/ExponentialMovingAverage"
        with pytest.raises(ValueError, match="Moving average already computed for"):
            ema.apply([v])
