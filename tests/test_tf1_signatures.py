"""TF 1.15's argument names and semantics where TF 2 changed them (reduction_indices,
keep_dims, squeeze_dims, dim, filter, value; row-selecting where; no gradient into the
labels of softmax_cross_entropy_with_logits), values and errors against real TF1 graph
mode."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as tf
import ipu_gpu.compat.v1 as v1

_RNG = np.random.default_rng(2)
_X = _RNG.standard_normal((2, 3)).astype(np.float32)
_IMG = _RNG.standard_normal((1, 4, 4, 2)).astype(np.float32)
_K = _RNG.standard_normal((2, 2, 2, 3)).astype(np.float32)
_LABELS = np.array([[0.2, 0.3, 0.5], [1.0, 0.0, 0.0]], np.float32)


def _run(c, tf_mod):
    with c.Graph().as_default() as g:
        x = c.placeholder(tf_mod.float32, [2, 3])
        img = c.placeholder(tf_mod.float32, [1, 4, 4, 2])
        labels = c.placeholder(tf_mod.float32, [2, 3])
        outs = [c.reduce_sum(x, 1, keep_dims=True), c.reduce_mean(x, reduction_indices=[1]),
                c.reduce_max(x, reduction_indices=0, keep_dims=True),
                c.reduce_logsumexp(x, reduction_indices=1),
                c.reduce_any(x > 0.0, reduction_indices=1),
                c.squeeze(c.expand_dims(x, dim=0), squeeze_dims=[0]),
                c.nn.softmax(x, dim=0), c.nn.log_softmax(x, dim=0),
                c.nn.conv2d(img, filter=_K, strides=[1, 1, 1, 1], padding="VALID"),
                c.nn.max_pool(value=img, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1],
                              padding="VALID"),
                c.nn.avg_pool(img, [1, 2, 2, 1], [1, 2, 2, 1], "SAME"),
                *c.nn.moments(x, [0], keep_dims=True), c.norm(x, axis=1, keep_dims=True),
                c.where(c.constant([True, False]), x, -x),
                c.where(x > 0.0, x, c.zeros_like(x))]
        xent = c.nn.softmax_cross_entropy_with_logits(labels=labels, logits=x)
        xent2 = c.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=x)
        g1 = c.gradients(xent, [labels, x])
        g2 = c.gradients(xent2, [labels])
        with c.Session(graph=g) as sess:
            feed = {x: _X, img: _IMG, labels: _LABELS}
            values = sess.run(outs + [xent, g1[1], g2[0]], feed)
        return values, g1[0] is None, [o.shape.as_list() for o in outs]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_tf1_signatures_equal_real_tensorflow(real_tf):
    ours, theirs = _run(v1, tf), _run(real_tf.compat.v1, real_tf)
    assert ours[1] is True and theirs[1] is True  # no gradient into the labels
    assert ours[2] == theirs[2]
    for a, b in zip(ours[0], theirs[0]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_where_selects_rows_against_numpy():
    cond = np.array([True, False])
    got = v1.where(cond, _X, -_X)
    np.testing.assert_array_equal(got, np.where(cond[:, None], _X, -_X))


def _error_cases(c, x):
    return [(lambda: c.reduce_sum(x, axis=1, reduction_indices=1),
             "Cannot specify both 'reduction_indices' and 'axis'"),
            (lambda: c.reduce_sum(x, keepdims=True, keep_dims=True),
             "Cannot specify both 'keep_dims' and 'keepdims'"),
            (lambda: c.squeeze(x, axis=[0], squeeze_dims=[0]),
             "Cannot specify both 'squeeze_dims' and 'axis'"),
            (lambda: c.expand_dims(x), "Must specify an axis argument"),
            (lambda: c.nn.softmax(x, axis=0, dim=0), "Cannot specify both 'dim' and 'axis'"),
            (lambda: c.nn.conv2d(_IMG, filter=_K, filters=_K, strides=1, padding="VALID"),
             "Cannot specify both 'filter' and 'filters'"),
            (lambda: c.nn.max_pool(value=_IMG, input=_IMG, ksize=2, strides=2,
                                   padding="VALID"),
             "Cannot specify both 'value' and 'input'"),
            (lambda: c.nn.softmax_cross_entropy_with_logits(labels=x, logits=x, axis=1),
             "Cannot specify both 'dim' and 'axis'"),
            (lambda: c.nn.softmax_cross_entropy_with_logits(labels=x),
             "Both `labels` and `logits` must be provided"),
            (lambda: c.where(x > 0.0, x), "x and y must both be non-None"),
            (lambda: c.where(c.placeholder(np.bool_, [3]), x, x),
             "Dimension 0 in both shapes must be equal, but are 3 and 2"),
            (lambda: c.where(x > 0.0, x, 0.0), "Shapes must be equal rank")]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_tf1_signature_errors_as_tf(real_tf):
    for c in (v1, real_tf.compat.v1):
        with c.Graph().as_default():
            for call, message in _error_cases(c, c.placeholder(np.float32, [2, 3])):
                with pytest.raises(ValueError, match=message):
                    call()


def _positional_names(c, tf_mod):
    with c.Graph().as_default() as g:
        x = c.placeholder(tf_mod.float32, [2, 3], name="x")
        p = c.placeholder(tf_mod.bool, [], name="p")
        outs = [c.gather(x, [1, 0], None, "gathered"), c.pad(x, [[1, 0], [0, 1]], "CONSTANT",
                                                             "padded", 2.0),
                c.shape(x, "sh"), c.size(x, "sz"), c.zeros_like(tensor=x),
                c.ones_like(tensor=x), c.boolean_mask(x, [True, False], "masked"),
                c.cond(p, fn1=lambda: x * 2.0, fn2=lambda: x - 1.0)]
        names = [o.op.name for o in outs[:4]]  # boolean_mask: TF names an inner node
        with c.Session(graph=g) as sess:
            values = [sess.run(outs, {x: _X, p: flag}) for flag in (True, False)]
        return names, values


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_tf1_argument_order_equals_real_tensorflow(real_tf):
    ours = _positional_names(v1, tf)
    theirs = _positional_names(real_tf.compat.v1, real_tf)
    assert ours[0] == theirs[0]
    for a_run, b_run in zip(ours[1], theirs[1]):
        for a, b in zip(a_run, b_run):
            np.testing.assert_allclose(a, b, rtol=1e-6)
    with pytest.raises(ValueError, match="Cannot specify both 'fn1' and 'true_fn'"):
        v1.cond(True, true_fn=lambda: 1.0, fn1=lambda: 2.0, false_fn=lambda: 0.0)
