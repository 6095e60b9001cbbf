"""tf.compat.v1.metrics precision, recall, auc (ROC/PR, every summation method, given
thresholds) and the confusion counts: local variables and their names, update ops, values
over several batches, weights, errors, against real TF1 graph mode and numpy."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu.compat.v1 as v1
from ipu_gpu.errors import InvalidArgumentError

_RNG = np.random.default_rng(11)
_BATCHES = [(_RNG.integers(0, 2, (6, 1)), _RNG.random((6, 1)).astype(np.float32),
             _RNG.random(6).astype(np.float32)) for _ in range(3)]


def _build_and_run(c, tf_mod):
    g = c.Graph()
    with g.as_default():
        labels = c.placeholder(tf_mod.int64, [None, 1])
        probs = c.placeholder(tf_mod.float32, [None, 1])
        weights = c.placeholder(tf_mod.float32, [None])
        classes = c.cast(probs > 0.5, tf_mod.int64)
        metrics = {
            "precision": c.metrics.precision(labels, classes),
            "recall": c.metrics.recall(labels, classes, name="rec"),
            "w_precision": c.metrics.precision(labels, classes,
                                               weights=c.reshape(weights, [-1, 1])),
            "tp": c.metrics.true_positives(labels, classes),
            "fp": c.metrics.false_positives(labels, classes),
            "tn": c.metrics.true_negatives(labels, classes),
            "fn": c.metrics.false_negatives(labels, classes),
            "auc": c.metrics.auc(labels, probs, metrics_collections=["m"],
                                 updates_collections=["u"]),
            "auc_pr": c.metrics.auc(labels, probs, curve="PR", num_thresholds=50,
                                    summation_method="careful_interpolation"),
            "auc_pr_trap": c.metrics.auc(labels, probs, curve="PR", num_thresholds=20),
            "auc_min": c.metrics.auc(labels, probs, summation_method="minoring",
                                     thresholds=[0.7, 0.2, 0.5]),
            "auc_maj": c.metrics.auc(labels, probs, summation_method="majoring",
                                     weights=c.reshape(weights, [-1, 1])),
        }
        names = sorted(v.name for v in c.local_variables())
        info = dict(
            names=names,
            metric_vars=sorted(v.name for v in c.get_collection("metric_variables")),
            global_vars=[v.name for v in c.global_variables()],
            # the counts' ops are named after TF2's resource-variable ops: not compared
            ops=[(k, v.name, u.name) for k, (v, u) in metrics.items()
                 if k not in ("tp", "fp", "tn", "fn")],
            collections=[[t.name for t in c.get_collection(k)] for k in ("m", "u")],
        )
        out = []
        with c.Session(graph=g) as sess:
            sess.run(c.local_variables_initializer())
            out.append(sess.run({k: v for k, (v, _) in metrics.items()}))
            for lab, pr, w in _BATCHES:
                feed = {labels: lab, probs: pr, weights: w}
                out.append(sess.run({k: u for k, (_, u) in metrics.items()}, feed))
                out.append(sess.run({k: v for k, (v, _) in metrics.items()}))
        return info, out


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_classification_metrics_equal_real_tensorflow(real_tf):
    import ipu_gpu as tf

    ours = _build_and_run(v1, tf)
    theirs = _build_and_run(real_tf.compat.v1, real_tf)
    for key in theirs[0]:
        assert ours[0][key] == theirs[0][key], key
    for a, b in zip(ours[1], theirs[1]):
        assert a.keys() == b.keys()
        for k in a:
            np.testing.assert_allclose(a[k], b[k], rtol=1e-5, atol=1e-6, err_msg=k)


def test_precision_recall_against_numpy():
    lab = np.concatenate([b[0] for b in _BATCHES]).ravel().astype(bool)
    pred = np.concatenate([b[1] for b in _BATCHES]).ravel() > 0.5
    with v1.Graph().as_default() as g:
        labels = v1.placeholder(np.int64, [None, 1])
        probs = v1.placeholder(np.float32, [None, 1])
        classes = v1.cast(probs > 0.5, np.int64)
        p, p_up = v1.metrics.precision(labels, classes)
        r, r_up = v1.metrics.recall(labels, classes)
        with v1.Session(graph=g) as sess:
            sess.run(v1.local_variables_initializer())
            assert sess.run([p, r]) == [0.0, 0.0]
            for lab_b, pr_b, _ in _BATCHES:
                sess.run([p_up, r_up], {labels: lab_b, probs: pr_b})
            pv, rv = sess.run([p, r])
    tp = np.sum(lab & pred)
    assert pv == pytest.approx(tp / np.sum(pred)) and rv == pytest.approx(tp / np.sum(lab))


def test_auc_refuses_predictions_outside_unit_interval_and_bad_arguments():
    with v1.Graph().as_default() as g:
        labels = v1.placeholder(np.int64, [None])
        probs = v1.placeholder(np.float32, [None])
        _, update = v1.metrics.auc(labels, probs)
        with v1.Session(graph=g) as sess:
            sess.run(v1.local_variables_initializer())
            with pytest.raises(InvalidArgumentError, match=r"predictions must be in \[0, 1\]"):
                sess.run(update, {labels: [0, 1], probs: [0.5, 1.5]})
        with pytest.raises(ValueError, match="curve must be either ROC or PR, XY unknown"):
            v1.metrics.auc(labels, probs, curve="XY")
        with pytest.raises(ValueError, match="Invalid summation_method: mid"):
            v1.metrics.auc(labels, probs, summation_method="mid")


def test_metrics_refuse_eager_execution():
    with pytest.raises(RuntimeError, match="tf.metrics.precision is not supported when eager"):
        v1.metrics.precision(np.array([1, 0]), np.array([1, 1]))


def _mean_metrics(c, tf_mod):
    g = c.Graph()
    with g.as_default():
        v = c.placeholder(tf_mod.float32, [4])
        lab = c.placeholder(tf_mod.int64, [4])
        target = c.placeholder(tf_mod.float32, [4])
        ms = [c.metrics.mean(v), c.metrics.mean(v, weights=[1.0, 0.0, 2.0, 1.0]),
              c.metrics.accuracy(lab, c.cast(v > 0.0, tf_mod.int64)),
              c.metrics.mean_squared_error(target, v),
              c.metrics.mean_absolute_error(target, v, weights=[1.0, 2.0, 0.0, 1.0]),
              c.metrics.root_mean_squared_error(target, v)]
        with c.variable_scope("s"):
            ms.append(c.metrics.mean(v, name="mm", metrics_collections=["mc"],
                                     updates_collections=["uc"]))
        info = ([x.name for x in c.local_variables()],
                [x.name for x in c.get_collection("metric_variables")],
                [(a.name, b.name) for a, b in ms[:-2] + ms[-1:]],
                [[t.name for t in c.get_collection(k)] for k in ("mc", "uc")])
        out = []
        with c.Session(graph=g) as sess:
            sess.run(c.local_variables_initializer())
            out.append(sess.run([a for a, _ in ms]))
            for vals, labs, tgt in (([1.0, -2.0, 3.0, 0.5], [1, 0, 0, 1], [0.5, 0.0, 2.0, 1.0]),
                                    ([0.0, 2.0, -1.0, 4.0], [0, 1, 1, 1], [1.0, 1.0, 1.0, 1.0])):
                out.append(sess.run([b for _, b in ms], {v: vals, lab: labs, target: tgt}))
            out.append(sess.run([a for a, _ in ms]))
        return info, out


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_mean_metrics_equal_real_tensorflow(real_tf):
    import ipu_gpu as tf

    ours, theirs = _mean_metrics(v1, tf), _mean_metrics(real_tf.compat.v1, real_tf)
    assert ours[0] == theirs[0]
    for a, b in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    with pytest.raises(RuntimeError, match="tf.metrics.mean is not supported when eager"):
        v1.metrics.mean(np.ones(3, np.float32))
