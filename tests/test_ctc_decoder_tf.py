"""TensorFlow's CTC beam-search decoder (ops.ctc_decoder.tf_ctc_beam_search_decoder, kernel
kernels/ctc_decoder_tf_cpu.py, and ipu_gpu.nn.ctc_beam_search_decoder) against
tf.nn.ctc_beam_search_decoder: paths, lengths and log-probabilities at beam widths 1 to 100
on seeded random logits, TF's errors, and the rule that makes TF differ from Graphcore's
decoder (ops.ctc_decoder.ctc_beam_search_decoder) at narrow beams."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu
from ipu_gpu.errors import FailedPreconditionError, InvalidArgumentError
from ipu_gpu.ops.ctc_decoder import (ctc_beam_search_decoder, tf_ctc_beam_search_decoder,
                                     tf_nn_ctc_beam_search_decoder)


def _tf_dense(tf, x, lengths, w, p):
    """TF's (log_probability, lengths, labels) in our dense form (blank past each path)."""
    decoded, log_probs = tf.nn.ctc_beam_search_decoder(x, lengths, beam_width=w, top_paths=p)
    t, b, c = x.shape
    out = np.full((b, p, t), c - 1, np.int32)
    out_len = np.zeros((b, p), np.int32)
    for i, sp in enumerate(decoded):
        for (bb, q), v in zip(sp.indices.numpy(), sp.values.numpy()):
            out[bb, i, q] = v
            out_len[bb, i] = max(out_len[bb, i], q + 1)
    return log_probs.numpy(), out_len, out


def _ours(x, lengths, w, p):
    return tuple(t.numpy() for t in tf_ctc_beam_search_decoder(x, lengths, beam_width=w,
                                                                top_paths=p))


def _assert_same(got, want):
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got[2], want[2])
    # the same float32 operations in the same order: equal up to libm differences
    np.testing.assert_allclose(got[0], want[0], rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("w", [1, 2, 5, 20, 100])
@pytest.mark.parametrize("t,b,c", [(12, 3, 5), (30, 4, 10), (40, 2, 30)])
def test_matches_tensorflow_at_every_beam_width(real_tf, t, b, c, w):
    for seed in range(4):
        rng = np.random.default_rng(1000 * t + 10 * c + seed)
        x = (2.0 * rng.standard_normal((t, b, c))).astype(np.float32)
        lengths = rng.integers(t // 2, t + 1, b).astype(np.int32)
        p = min(w, 3)
        _assert_same(_ours(x, lengths, w, p), _tf_dense(real_tf, x, lengths, w, p))


def test_where_tensorflow_and_graphcore_differ(real_tf):
    """T=8, C=4, beam 2: the same best path, but TF's probability is higher. In TF's pass 2
    a beam pushed out of the set before its parent reaches it is deactivated and extends no
    more; Graphcore's decoder ranks every extension of every beam at once."""
    rng = np.random.default_rng(5)
    x = (2 * rng.standard_normal((8, 1, 4))).astype(np.float32)
    lengths = np.array([8], np.int32)
    want = _tf_dense(real_tf, x, lengths, 2, 1)
    ours = _ours(x, lengths, 2, 1)
    _assert_same(ours, want)
    graphcore = [a.numpy() for a in ctc_beam_search_decoder(x, lengths, beam_width=2)]
    np.testing.assert_array_equal(graphcore[2], want[2])
    assert abs(graphcore[0].item() - want[0].item()) > 0.1


def test_float64_zero_and_negative_lengths(real_tf):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 3, 4))
    lengths = np.array([6, 0, -2], np.int32)
    got = _ours(x, lengths, 4, 1)
    want = _tf_dense(real_tf, x, lengths, 4, 1)
    assert got[0].dtype == np.float64
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got[2], want[2])
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)  # TF decodes float64 in float64


def test_nn_function_returns_tensorflows_sparse_outputs(real_tf):
    rng = np.random.default_rng(4)
    x = (2 * rng.standard_normal((9, 3, 5))).astype(np.float32)
    lengths = np.array([9, 4, 1], np.int32)
    decoded, log_probs = ipu_gpu.nn.ctc_beam_search_decoder(x, lengths, beam_width=6,
                                                            top_paths=3)
    want_decoded, want_log_probs = real_tf.nn.ctc_beam_search_decoder(x, lengths, beam_width=6,
                                                                      top_paths=3)
    np.testing.assert_allclose(log_probs.numpy(), want_log_probs.numpy(), rtol=2e-6)
    assert len(decoded) == 3
    for got, want in zip(decoded, want_decoded):
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
        np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
        np.testing.assert_array_equal(got.dense_shape.numpy(), want.dense_shape.numpy())
        assert got.values.numpy().dtype == np.int64
    assert tf_nn_ctc_beam_search_decoder is ipu_gpu.nn.ctc_beam_search_decoder


_X = np.zeros((4, 2, 3), np.float32)
ERRORS = [
    (_X, [4, 5], {}, FailedPreconditionError, r"sequence_length\(1\) <= 4"),
    (_X, [4, 2], {"beam_width": 0}, InvalidArgumentError,
     "Value for attr 'beam_width' of 0 must be at least minimum 1"),
    (_X, [4, 2], {"top_paths": 0}, InvalidArgumentError,
     "Value for attr 'top_paths' of 0 must be at least minimum 1"),
    (_X, [4, 2], {"beam_width": 2, "top_paths": 3}, InvalidArgumentError,
     "requested more paths than the beam width."),
    (_X, [4, 2, 1], {}, FailedPreconditionError,
     "len\\(sequence_length\\) != batch_size.  len\\(sequence_length\\):  3 batch_size: 2"),
    (_X[0], [4, 2], {}, InvalidArgumentError, "inputs is not a 3-Tensor"),
    (np.zeros((4, 2, 0), np.float32), [4, 2], {}, InvalidArgumentError,
     "inputs must not be empty"),
    (np.zeros((1, 1, 2), np.float32), [1], {"beam_width": 3, "top_paths": 3},
     InvalidArgumentError, "Less leaves in the beam search than requested."),
]


@pytest.mark.parametrize("x, lengths, kw, exc, message", ERRORS)
def test_errors_match_tensorflow(real_tf, x, lengths, kw, exc, message):
    lengths = np.array(lengths, np.int32)
    with pytest.raises((real_tf.errors.InvalidArgumentError,
                        real_tf.errors.FailedPreconditionError), match=message) as theirs:
        real_tf.nn.ctc_beam_search_decoder(x, lengths, **kw)
    with pytest.raises(exc, match=f"^ctc_beam_search_decoder: {message}") as ours:
        tf_ctc_beam_search_decoder(x, lengths, **kw)
    assert type(ours.value).__name__ == type(theirs.value).__name__


def test_bad_types():
    with pytest.raises(TypeError, match="inputs must be float32 or float64"):
        tf_ctc_beam_search_decoder(_X.astype(np.int32), np.array([4, 2], np.int32))
    with pytest.raises(TypeError, match="sequence_length must be an integer"):
        tf_ctc_beam_search_decoder(_X, np.array([4.0, 2.0], np.float32))
    with pytest.raises(TypeError, match="beam_width must be an int"):
        tf_ctc_beam_search_decoder(_X, np.array([4, 2], np.int32), beam_width=2.0)


@pytest.mark.gpu
def test_gpu_arrays_decode_on_the_host_as_tensorflow():
    from conftest import require_gpu

    cupy = require_gpu()
    rng = np.random.default_rng(8)
    x = (2 * rng.standard_normal((10, 3, 6))).astype(np.float32)
    lengths = np.array([10, 7, 3], np.int32)
    cpu = _ours(x, lengths, 5, 2)
    previous = ipu_gpu.backend_name()
    ipu_gpu.set_backend("gpu")
    try:
        gpu = tuple(t.numpy() for t in tf_ctc_beam_search_decoder(
            ipu_gpu.constant(cupy.asarray(x)), ipu_gpu.constant(cupy.asarray(lengths)),
            beam_width=5, top_paths=2))
    finally:
        ipu_gpu.set_backend(previous)
    for a, b in zip(gpu, cpu):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("w", [1, 8])
def test_parallel_batch_gives_the_serial_bits(w, monkeypatch):
    from ipu_gpu.kernels import ctc_decoder_tf_cpu as kernel

    rng = np.random.default_rng(77 + w)
    t, b, c = 50, 7, 12
    x = (2.0 * rng.standard_normal((t, b, c))).astype(np.float32)
    lengths = rng.integers(1, t + 1, b).astype(np.int32)
    lengths[0], lengths[1] = 1, t
    calls = []
    parallel = kernel._decode_batch
    monkeypatch.setattr(kernel, "_decode_batch", lambda *a: calls.append(1) or parallel(*a))
    monkeypatch.setattr(kernel, "PARALLEL_MIN_WORK", 1 << 62)
    serial = _ours(x, lengths, w, min(w, 3))
    assert not calls
    monkeypatch.setattr(kernel, "PARALLEL_MIN_WORK", 0)
    monkeypatch.setattr(kernel, "num_threads", lambda: 2)
    split = _ours(x, lengths, w, min(w, 3))
    assert calls
    for got, want in zip(split, serial):
        np.testing.assert_array_equal(np.asarray(got).view(np.uint8),
                                      np.asarray(want).view(np.uint8))
