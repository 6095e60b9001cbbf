"""``keras.backend``'s CTC helpers (issue 16): ``ctc_batch_cost`` (values and gradients),
``ctc_decode`` (greedy and beam search) and ``ctc_label_dense_to_sparse`` against tf-keras on
seeded random softmax outputs, and the CTC loss and best-path decoding against the float64
references (tests/reference/ctc.py and a numpy best path)."""

from __future__ import annotations

import numpy as np
import pytest
from reference import ctc as rctc

import ipu_gpu as ig
from ipu_gpu.keras import backend as K


@pytest.fixture(scope="module")
def tfk(real_tf):
    return pytest.importorskip("tf_keras")


def _case(seed, b=3, t=12, c=6, max_label=4):
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((b, t, c)) * 2
    p = (np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)).astype(np.float32)
    labels = rng.integers(0, c - 1, (b, max_label)).astype(np.int32)
    label_length = rng.integers(1, max_label + 1, (b, 1)).astype(np.int32)
    input_length = rng.integers(t // 2 + 2, t + 1, (b, 1)).astype(np.int32)
    return p, labels, label_length, input_length


@pytest.mark.parametrize("seed", range(4))
def test_ctc_batch_cost_matches_tf_keras_and_the_reference(tfk, real_tf, seed):
    tf = real_tf
    p, labels, label_length, input_length = _case(seed)
    pt, pi = tf.constant(p), ig.constant(p)
    with tf.GradientTape() as t1:
        t1.watch(pt)
        want = tfk.backend.ctc_batch_cost(tf.constant(labels), pt, tf.constant(input_length),
                                          tf.constant(label_length))
        lt = tf.reduce_sum(want * np.arange(1, 4, dtype=np.float32)[:, None])
    with ig.GradientTape() as t2:
        t2.watch(pi)
        got = K.ctc_batch_cost(labels, pi, input_length, label_length)
        li = ig.reduce_sum(got * np.arange(1, 4, dtype=np.float32)[:, None])
    assert got.shape == want.shape == (3, 1)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(t2.gradient(li, pi).numpy(), t1.gradient(lt, pt).numpy(),
                               rtol=1e-4, atol=1e-5)
    data = np.log(np.transpose(p, (1, 0, 2)).astype(np.float64) + 1e-7)
    ref, _ = rctc.ctc_loss(labels, data, label_length[:, 0], input_length[:, 0],
                           p.shape[-1] - 1)
    np.testing.assert_allclose(got.numpy()[:, 0], ref, rtol=1e-5)


def _best_path(p, lengths):
    out = np.full(p.shape[:2], -1)
    for b in range(len(p)):
        best = np.log(p[b, :lengths[b]].astype(np.float64) + 1e-7).argmax(-1)
        keep = np.concatenate([[True], best[1:] != best[:-1]]) & (best != p.shape[-1] - 1)
        out[b, :keep.sum()] = best[keep]
    return out


@pytest.mark.parametrize("seed", range(4))
def test_ctc_decode_matches_tf_keras(tfk, real_tf, seed):
    tf = real_tf
    p, _, _, input_length = _case(10 + seed, c=4)
    lengths = input_length[:, 0]
    got, got_lp = K.ctc_decode(p, lengths)
    want, want_lp = tfk.backend.ctc_decode(tf.constant(p), tf.constant(lengths))
    assert len(got) == len(want) == 1
    np.testing.assert_array_equal(got[0].numpy(), want[0].numpy())
    assert got[0].dtype == ig.int64
    np.testing.assert_array_equal(got[0].numpy(), _best_path(p, lengths))
    np.testing.assert_allclose(got_lp.numpy(), want_lp.numpy(), rtol=1e-6)
    # beam search at tf-keras's default width
    got, got_lp = K.ctc_decode(p, lengths, greedy=False, top_paths=2)
    want, want_lp = tfk.backend.ctc_decode(tf.constant(p), tf.constant(lengths), greedy=False,
                                           top_paths=2)
    assert len(got) == len(want) == 2
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_allclose(got_lp.numpy(), want_lp.numpy(), rtol=1e-5)


@pytest.mark.parametrize("beam_width", [1, 2, 5, 20])
def test_ctc_decode_narrow_beams_match_tf_keras(tfk, real_tf, beam_width):
    """Narrow beams, where TF's decoder (which tf-keras calls) selects beams differently from
    Graphcore's global top-W: paths and log-probabilities still equal tf-keras's."""
    tf = real_tf
    rng = np.random.default_rng(beam_width)
    p = rng.dirichlet(np.full(10, 0.3), size=(6, 30)).astype(np.float32)
    lengths = rng.integers(20, 31, size=6).astype(np.int32)
    top = min(2, beam_width)
    got, got_lp = K.ctc_decode(p, lengths, greedy=False, beam_width=beam_width, top_paths=top)
    want, want_lp = tfk.backend.ctc_decode(tf.constant(p), tf.constant(lengths), greedy=False,
                                           beam_width=beam_width, top_paths=top)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_allclose(got_lp.numpy(), want_lp.numpy(), rtol=1e-5)


def test_ctc_label_dense_to_sparse_matches_tf_keras(tfk, real_tf):
    tf = real_tf
    labels = np.array([[1, 2, 3, 4], [5, 6, 0, 0], [7, 0, 0, 0]], np.int32)
    lengths = np.array([4, 2, 1], np.int32)
    got = K.ctc_label_dense_to_sparse(labels, lengths)
    want = tfk.backend.ctc_label_dense_to_sparse(tf.constant(labels), tf.constant(lengths))
    np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
    np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
    np.testing.assert_array_equal(got.dense_shape.numpy(), want.dense_shape.numpy())
    np.testing.assert_array_equal(ig.sparse.to_dense(got).numpy(),
                                  np.where(np.arange(4) < lengths[:, None], labels, 0))
