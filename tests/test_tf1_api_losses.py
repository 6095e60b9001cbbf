"""tf.compat.v1.losses beyond the cross-entropies (absolute_difference, cosine_distance,
hinge_loss, huber_loss, log_loss, sigmoid_cross_entropy, add_loss) against real TF1 graph
mode: values, reductions and weights, the losses collection, TF's errors."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu.compat.v1 as v1

_RNG = np.random.default_rng(3)
_LABELS = (_RNG.random((4, 3)) > 0.5).astype(np.float32)
_PRED = _RNG.random((4, 3)).astype(np.float32)
_LOGITS = (_RNG.standard_normal((4, 3)) * 2).astype(np.float32)
_W = np.array([[1.0], [0.0], [2.0], [0.5]], np.float32)
_UNIT = _PRED / np.linalg.norm(_PRED, axis=1, keepdims=True)


def _losses(c):
    g = c.Graph()
    with g.as_default():
        labels = c.placeholder(np.float32, [None, 3])
        pred = c.placeholder(np.float32, [None, 3])
        logits = c.placeholder(np.float32, [None, 3])
        R = c.losses.Reduction
        outs = []
        for reduction, weights in [(R.SUM_BY_NONZERO_WEIGHTS, 1.0),
                                   (R.SUM_BY_NONZERO_WEIGHTS, _W), (R.NONE, _W),
                                   (R.MEAN, _W), (R.SUM, 2.0), (R.SUM_OVER_BATCH_SIZE, _W)]:
            kw = dict(weights=weights, reduction=reduction)
            if reduction == R.NONE:  # get_total_loss adds same-shaped losses only
                kw["loss_collection"] = None
            outs += [c.losses.absolute_difference(labels, pred, **kw),
                     c.losses.cosine_distance(labels, pred, axis=1, **kw),
                     c.losses.hinge_loss(labels, logits, **kw),
                     c.losses.huber_loss(labels, logits, delta=0.7, **kw),
                     c.losses.log_loss(labels, pred, **kw),
                     c.losses.sigmoid_cross_entropy(labels, logits, label_smoothing=0.2, **kw)]
        c.losses.add_loss(c.reduce_sum(pred))
        collected = len(c.losses.get_losses())
        total = c.losses.get_total_loss()
        with c.Session(graph=g) as sess:
            values = sess.run(outs + [total], {labels: _LABELS, pred: _UNIT, logits: _LOGITS})
        return values, collected


def test_losses_equal_real_tensorflow(real_tf):
    ours, n_ours = _losses(v1)
    theirs, n_theirs = _losses(real_tf.compat.v1)
    assert n_ours == n_theirs == 31
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert np.shape(a) == np.shape(b), i
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6, err_msg=str(i))


def test_loss_errors():
    with v1.Graph().as_default():
        x = v1.placeholder(np.float32, [2, 3])
        with pytest.raises(ValueError, match="You must specify 'axis'."):
            v1.losses.cosine_distance(x, x)
        with pytest.raises(ValueError, match="labels must not be None."):
            v1.losses.huber_loss(None, x)
        with pytest.raises(ValueError, match="incompatible"):
            v1.losses.absolute_difference(x, v1.placeholder(np.float32, [2, 4]))
