"""The GPU twin of the CTC beam-search decoder (kernels/ctc_decoder_gpu.py with
kernels/cuda/ctc_decoder.cu) against its CPU twin (kernels/ctc_decoder_cpu.py).

On this machine the CUDA source runs through tests/cuda_emulator (threads of a block as OS
threads): same beams, same order, same lengths and decoded symbols, and the same float32
probabilities bit for bit (both use glibc's expf/log1pf here). The `gpu`-marked test runs
the public decoder on cupy arrays against the numpy path on a device.
"""

from __future__ import annotations

import cuda_emulator
import numpy as np
import pytest
from cuda_emulator import install_fake_cupy
from hypothesis import given, settings
from hypothesis import strategies as st

from ipu_gpu.kernels import ctc_decoder_cpu

pytestmark = pytest.mark.skipif(not cuda_emulator.compiler_available(), reason="no g++")

LOG_ZERO = np.float32(-65504.0)


@pytest.fixture
def gpu(monkeypatch):
    return install_fake_cupy(monkeypatch, ["ipu_gpu.kernels.ctc_decoder_gpu"]).ctc_decoder_gpu


def _log_softmax(x):
    x = x.astype(np.float64)
    x = x - x.max(axis=2, keepdims=True)
    return (x - np.log(np.exp(x).sum(axis=2, keepdims=True))).astype(np.float32)


def _decode(module, lp, lengths, w, blank, p):
    t, b, _ = lp.shape
    # garbage in the outputs: the kernels must overwrite every element
    out = (np.full((b, p), 7.0, np.float32), np.full((b, p), 7, np.int32),
           np.full((b, p, t), 7, np.int32))
    got = module.ctc_beam_search(np.ascontiguousarray(lp, np.float32),
                                 np.ascontiguousarray(lengths, np.int32), w, blank, *out)
    assert all(g is o for g, o in zip(got, out))
    return out


def _assert_twins_agree(gpu, lp, lengths, w, blank, p):
    want = _decode(ctc_decoder_cpu, lp, lengths, w, blank, p)
    got = _decode(gpu, lp, lengths, w, blank, p)
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got[2], want[2])
    # bitwise, the sign of zero included; NaN where the CPU gives NaN (its sign bit may
    # differ: the CPU and the kernel propagate NaN payloads through different code)
    nan = np.isnan(want[0])
    np.testing.assert_array_equal(np.isnan(got[0]), nan)
    np.testing.assert_array_equal(got[0][~nan].view(np.int32), want[0][~nan].view(np.int32))
    return want


@pytest.mark.parametrize("blank", ["first", "middle", "last"])
def test_random_cases_match_cpu_twin(gpu, blank):
    rng = np.random.default_rng({"first": 1, "middle": 2, "last": 3}[blank])
    for w in (1, 2, 5):
        for _ in range(3):
            t, b, c = int(rng.integers(1, 11)), int(rng.integers(1, 4)), int(rng.integers(2, 7))
            p = int(rng.integers(1, w + 1))
            blank_index = {"first": 0, "middle": c // 2, "last": c - 1}[blank]
            lp = _log_softmax(2.0 * rng.standard_normal((t, b, c)))
            lengths = rng.integers(0, t + 1, b)
            _assert_twins_agree(gpu, lp, lengths, w, blank_index, p)


def test_batch_with_zero_and_partial_lengths(gpu):
    rng = np.random.default_rng(4)
    lp = _log_softmax(3.0 * rng.standard_normal((9, 4, 5)))
    want = _assert_twins_agree(gpu, lp, [9, 0, 4, 1], 4, 2, 3)
    assert want[1][1].tolist() == [0, 0, 0]  # length 0: the empty path, then dummies
    assert want[0][1, 0] == 0.0 and (want[0][1, 1:] == LOG_ZERO).all()
    assert (want[2][1] == 2).all() and (want[2][2, :, 4:] == 2).all()


def test_dummy_beams_when_the_beam_holds_every_prefix(gpu):
    # T=3, C=3 (blank 1): at most 1 + 2 + 4 + 8 = 15 prefixes < beam 24
    rng = np.random.default_rng(5)
    lp = _log_softmax(rng.standard_normal((3, 2, 3)))
    want = _assert_twins_agree(gpu, lp, [3, 2], 24, 1, 20)
    assert (want[1][:, -1] == 0).all() and (want[0][:, -1] == LOG_ZERO).all()
    assert len({tuple(r[:n]) for r, n in zip(want[2][0], want[1][0])}) > 8


def test_beam_wider_than_reachable_prefixes_is_narrowed_without_effect(gpu):
    assert gpu.effective_beam_width(1000, 3, 4) == 81
    assert gpu.effective_beam_width(10, 3, 4) == 10
    assert gpu.effective_beam_width(5, 1, 9) == 1
    assert gpu.effective_beam_width(5, 7, 0) == 1
    lp = _log_softmax(np.random.default_rng(6).standard_normal((3, 2, 3)))
    _assert_twins_agree(gpu, lp, [3, 3], 1000, 0, 3)
    # more paths asked for than beams can exist: the rest are dummies
    want = _assert_twins_agree(gpu, lp[:1, :, :2], [1, 0], 5, 0, 5)
    assert (want[0][:, 2:] == LOG_ZERO).all() and (want[0][0, :2] > LOG_ZERO).all()


def test_ties_keep_candidate_order(gpu):
    # uniform posteriors: every candidate of a step ties; repeated values within a frame
    for t, c, w, blank in ((1, 4, 4, 1), (1, 4, 2, 1), (4, 3, 4, 2), (5, 4, 6, 0)):
        lp = np.full((t, 2, c), np.float32(np.log(1.0 / c)), np.float32)
        lp[:, 1, 0] = np.float32(np.log(0.5))  # second item: ties among the others only
        lp[:, 1, 1:] = np.float32(np.log(0.5 / (c - 1)))
        _assert_twins_agree(gpu, lp, [t, t], w, blank, min(w, 4))
    lp = np.round(_log_softmax(np.random.default_rng(7).standard_normal((8, 3, 5))))
    _assert_twins_agree(gpu, lp, [8, 6, 8], 5, 4, 5)


def test_peaky_posteriors_prune_extends(gpu):
    # a dominant class per frame: most extends fall below the W-th candidate and are dropped
    rng = np.random.default_rng(8)
    t, b, c = 12, 3, 12
    x = rng.standard_normal((t, b, c)).astype(np.float32)
    peak = np.where(rng.random((t, b)) < 0.7, c - 1, rng.integers(0, c - 1, (t, b)))
    np.put_along_axis(x, peak[..., None], 8.0, axis=2)
    lp = _log_softmax(x)
    for w, p in ((1, 1), (2, 2), (3, 2)):
        _assert_twins_agree(gpu, lp, [12, 11, 7], w, c - 1, p)


def test_signed_zeros_and_minus_inf_log_probs(gpu):
    rng = np.random.default_rng(9)
    lp = _log_softmax(rng.standard_normal((8, 2, 4)))
    lp[rng.random(lp.shape) < 0.3] = -np.inf
    _assert_twins_agree(gpu, lp, [8, 8], 3, 1, 3)
    zeros = np.where(rng.random((6, 2, 3)) < 0.5, np.float32(-0.0), np.float32(-1.0))
    _assert_twins_agree(gpu, zeros.astype(np.float32), [6, 5], 4, 0, 4)


def test_nan_and_plus_inf_take_the_serial_selection(gpu):
    # the stable rank is no total order with NaN: the kernel replays the CPU insertion
    rng = np.random.default_rng(10)
    for trial in range(4):
        lp = _log_softmax(2.0 * rng.standard_normal((7, 2, 4)))
        lp[rng.random(lp.shape) < 0.1] = np.nan
        lp[rng.random(lp.shape) < 0.1] = np.inf
        lp[rng.random(lp.shape) < 0.2] = -np.inf
        want = _assert_twins_agree(gpu, lp, [7, 6], 3, trial % 4, 3)
    assert np.isnan(want[0]).any() or np.isinf(want[0]).any()


@settings(max_examples=25, deadline=None)
@given(t=st.integers(0, 7), b=st.integers(1, 3), c=st.integers(1, 6), w=st.integers(1, 7),
       peaky=st.booleans(), seed=st.integers(0, 2**16), data=st.data())
def test_property_twins_agree(t, b, c, w, peaky, seed, data):
    p = data.draw(st.integers(1, w))
    blank = data.draw(st.integers(0, c - 1))
    rng = np.random.default_rng(seed)
    x = 2.0 * rng.standard_normal((t, b, c))
    if peaky:
        np.put_along_axis(x, rng.integers(0, c, (t, b, 1)), 7.0, axis=2)
    lengths = rng.integers(0, t + 1, b)
    with pytest.MonkeyPatch.context() as mp:  # hypothesis reruns the body: no fixture
        gpu = install_fake_cupy(mp, ["ipu_gpu.kernels.ctc_decoder_gpu"]).ctc_decoder_gpu
        _assert_twins_agree(gpu, _log_softmax(x), lengths, w, blank, p)


def test_empty_batch_and_zero_max_time(gpu):
    _assert_twins_agree(gpu, np.zeros((5, 0, 3), np.float32), np.zeros(0, np.int32), 2, 0, 1)
    want = _assert_twins_agree(gpu, np.zeros((0, 2, 3), np.float32), [0, 0], 3, 2, 2)
    assert want[0].tolist() == [[0.0, LOG_ZERO]] * 2


@pytest.mark.parametrize("op", ["ctc_beam_search_decoder",
                                "ctc_beam_search_decoder_with_log_probs"])
def test_op_forward_drives_the_gpu_twin(gpu, op):
    # the op's own forward (log-softmax, blank normalisation, output allocation) with the
    # GPU kernel module as ``k``: the contract between ops/ctc_decoder.py and the kernel
    from ipu_gpu.ops import ctc_decoder

    registered = {"ctc_beam_search_decoder": ctc_decoder._DECODER,
                  "ctc_beam_search_decoder_with_log_probs": ctc_decoder._DECODER_LOG_PROBS}[op]
    rng = np.random.default_rng(12)
    x = (2.0 * rng.standard_normal((7, 3, 5))).astype(np.float16)
    lengths = np.array([7, 0, 4], np.int64)
    static = dict(beam_width=4, top_paths=3, blank_index=-2)
    got, _ = registered.forward(gpu, np, x, lengths, **static)
    want, _ = registered.forward(ctc_decoder_cpu, np, x, lengths, **static)
    assert [g.dtype for g in got] == [np.float16, np.int32, np.int32]
    for g, e in zip(got, want):
        np.testing.assert_array_equal(g, e)


def test_block_size_and_index_range(gpu):
    assert gpu.block_threads(1, 2) == 32
    assert gpu.block_threads(5, 6) == 32
    assert gpu.block_threads(8, 6) == 64
    assert gpu.block_threads(10, 40) == 512
    assert gpu.block_threads(100, 1000) == 1024
    assert gpu.block_threads(100, 1000, limit=640) == 512  # the kernel's register-bound cap
    assert gpu.block_threads(10, 40, limit=256) == 256
    assert gpu.block_threads(1, 2, limit=16) == 32
    lp = np.zeros((2, 1, 2**16), np.float32)
    with pytest.raises(ValueError, match="beam_width"):
        _decode(gpu, lp, [2], 2**16, 0, 1)


@pytest.mark.gpu
@pytest.mark.parametrize("variant", ["logits", "log_probs"])
def test_public_decoder_on_cupy_matches_numpy(variant):
    from conftest import require_gpu

    from ipu_gpu.ipu import nn_ops

    cupy = require_gpu()
    rng = np.random.default_rng(11)
    fn = (nn_ops.ctc_beam_search_decoder if variant == "logits"
          else nn_ops.ctc_beam_search_decoder_with_log_probs)
    cases = [(40, 5, 12, 8, 3, 11), (60, 3, 300, 10, 2, 0), (25, 4, 6, 50, 50, 3),
             (30, 2, 5, 1, 1, 2)]
    for t, b, c, w, p, blank in cases:
        x = (3.0 * rng.standard_normal((t, b, c))).astype(np.float32)
        x[..., blank] += 2.0
        if variant == "log_probs":
            x = _log_softmax(x)
        lengths = rng.integers(0, t + 1, b).astype(np.int32)
        want = [o.numpy() for o in fn(x, lengths, beam_width=w, top_paths=p,
                                      blank_index=blank)]
        got = fn(cupy.asarray(x), cupy.asarray(lengths), beam_width=w, top_paths=p,
                 blank_index=blank)
        assert all(isinstance(o.numpy(), np.ndarray) for o in got)
        got = [o.numpy() for o in got]
        np.testing.assert_array_equal(got[1], want[1])
        np.testing.assert_array_equal(got[2], want[2])
        np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-4)
    # uniform posteriors: exact ties, ranked by candidate index on the device too
    x = np.zeros((6, 2, 4), np.float32)
    want = [o.numpy() for o in fn(x, np.array([6, 4], np.int32), beam_width=6, top_paths=6,
                                  blank_index=1)]
    got = [o.numpy() for o in fn(cupy.asarray(x), cupy.asarray(np.array([6, 4], np.int32)),
                                 beam_width=6, top_paths=6, blank_index=1)]
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e, rtol=1e-6)
