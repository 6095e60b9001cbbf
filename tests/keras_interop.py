"""Checks shared by the Keras layer tests: HDF5 weights exchanged with tf-keras both ways, a
short ``fit`` equal to tf-keras's, and a layer in a TF1 graph equal to the eager layer."""

from __future__ import annotations

import numpy as np

import ipu_gpu as ig
import ipu_gpu.compat.v1 as v1


def load_their_hdf5_weights(mine, theirs, values, tmp_path):
    """Set tf-keras model ``theirs`` to ``values``, save them as HDF5 and load the file into
    ``mine``: it must hold ``values`` exactly."""
    theirs.set_weights(values)
    theirs.save_weights(str(tmp_path / "theirs.h5"))
    mine.load_weights(str(tmp_path / "theirs.h5"))
    for a, b in zip(mine.get_weights(), values):
        np.testing.assert_array_equal(a, b)


def assert_fit_matches(mine, theirs, x, y, loss_atol=1e-6):
    """Two epochs of unshuffled batches of 4 on both compiled models: equal losses and final
    weights."""
    kwargs = dict(batch_size=4, epochs=2, shuffle=False, verbose=0)
    got, want = mine.fit(x, y, **kwargs), theirs.fit(x, y, **kwargs)
    np.testing.assert_allclose(got.history["loss"], want.history["loss"], rtol=1e-5,
                               atol=loss_atol)
    for a, b in zip(mine.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def load_our_hdf5_weights(theirs, mine, values, tmp_path):
    """Save ``mine``'s weights as HDF5 and load them into tf-keras model ``theirs`` (first set
    to ``values``, so the load must change them): it must hold ``mine``'s exactly."""
    mine.save_weights(str(tmp_path / "mine.h5"))
    theirs.set_weights(values)
    theirs.load_weights(str(tmp_path / "mine.h5"))
    for a, b in zip(theirs.get_weights(), mine.get_weights()):
        np.testing.assert_array_equal(a, b)


def assert_graph_matches_eager(make_layer, x, draw, feed_shape, out_shape):
    """``make_layer()`` called eagerly on ``x`` and in a TF1 graph on a placeholder of
    ``feed_shape`` (its static output shape must be ``out_shape``), both given weights
    ``draw(shape)``: equal outputs and gradients of ``sum(y * y)`` for the input and the
    trainable weights."""
    eager = make_layer()
    xi = ig.constant(x)
    eager(xi)
    weights = [draw(w.shape).astype(np.float32) for w in eager.get_weights()]
    eager.set_weights(weights)
    with ig.GradientTape() as tape:
        tape.watch(xi)
        want = eager(xi)
        want_grads = tape.gradient(ig.reduce_sum(want * want), [xi, *eager.trainable_weights])
    with v1.Graph().as_default():
        ph = v1.placeholder(np.float32, feed_shape)
        layer = make_layer()
        y = layer(ph)
        assert y.shape.as_list() == list(out_shape)
        layer.set_weights(weights)
        grads = v1.gradients(ig.reduce_sum(y * y), [ph, *layer.trainable_weights])
        with v1.Session() as sess:
            got, got_grads = sess.run([y, grads], {ph: x})
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-6, atol=1e-6)
    for a, b in zip(got_grads, want_grads):
        np.testing.assert_allclose(a, np.asarray(ig.convert_to_tensor(b)), rtol=1e-5, atol=1e-5)


def assert_outputs_and_gradients_match(tf, ours, theirs, x, rng):
    """``ours`` and tf-keras's ``theirs`` called on ``x``: equal outputs (each of a list) and
    equal gradients of ``sum(y * u)`` over the outputs (``u`` drawn from ``rng`` per output)
    for ``x`` and the trainable weights."""
    xi, xt = ig.constant(x), tf.constant(x)
    with ig.GradientTape() as t1:
        t1.watch(xi)
        yi = _as_list(ours(xi))
        us = [rng.standard_normal(y.shape).astype(np.float32) for y in yi]
        li = sum(ig.reduce_sum(y * u) for y, u in zip(yi, us))
    with tf.GradientTape() as t2:
        t2.watch(xt)
        yt = _as_list(theirs(xt))
        lt = sum(tf.reduce_sum(y * u) for y, u in zip(yt, us))
    assert len(yi) == len(yt)
    for a, b in zip(yi, yt):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-5)
    for a, b in zip(t1.gradient(li, [xi, *ours.trainable_variables]),
                    t2.gradient(lt, [xt, *theirs.trainable_variables])):
        np.testing.assert_allclose(np.asarray(ig.convert_to_tensor(a)), tf.convert_to_tensor(b),
                                   rtol=1e-4, atol=1e-4)


def _as_list(y):
    return list(y) if isinstance(y, (list, tuple)) else [y]
