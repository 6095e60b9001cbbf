"""CTC beam-search decoding, beam width 10, top path 1, on peaky posteriors.

* ipu_gpu: ``ipu_gpu.ops.ctc_decoder.ctc_beam_search_decoder`` (log-softmax, then
  Graphcore's prefix beam search in ``kernels/ctc_decoder_cpu.py``).
* tensorflow: ``tf.nn.ctc_beam_search_decoder`` (TF's C++ decoder, CPU), the anchor:
  target ipu_gpu <= 0.05x its time (issue 3).
* ipu_gpu_cupy (GPU rows, skipped without a device): the same call on cupy arrays, the
  CUDA kernel of ``kernels/cuda/ctc_decoder.cu``. No GPU peer exists (torch has no CTC
  beam search), so its ratio is against the TF CPU row.

Peaky posteriors as a CTC acoustic model emits them: on 80% of the frames the blank gets
+6 over standard-normal logits, on the rest one random symbol does. Blank is the last
class (TF's fixed choice). TF expands every class of every beam (about 2 s per utterance
at C=1000), so the large case uses a batch of 4 to keep the TF row near a minute.
"""

from __future__ import annotations

import numpy as np
import pytest
from benchutil import as_impl, impl_params, paired_with, require, rng, to_numpy

import ipu_gpu  # noqa: F401  # conftest's backend switch
from ipu_gpu.ops.ctc_decoder import ctc_beam_search_decoder, tf_ctc_beam_search_decoder

SIZES = {"T200xB16xC40": (200, 16, 40), "T500xB4xC1000": (500, 4, 1000)}
BEAM = 10


def _peaky(t, b, c):
    g = rng(5)
    x = g.standard_normal((t, b, c)).astype(np.float32)
    on_blank = g.random((t, b)) < 0.8
    sym = g.integers(0, c - 1, (t, b))
    tt, bb = np.nonzero(on_blank)
    x[tt, bb, c - 1] += 6
    tt, bb = np.nonzero(~on_blank)
    x[tt, bb, sym[tt, bb]] += 6
    return x


def _fn(impl, p, x, lengths):
    if impl in ("ipu_gpu", "ipu_gpu_cupy"):
        return lambda: ctc_beam_search_decoder(x, lengths, beam_width=BEAM, top_paths=1)
    if impl == "tensorflow":
        tf = p.tf
        return lambda: tf.nn.ctc_beam_search_decoder(x, lengths, beam_width=BEAM, top_paths=1)
    raise ValueError(impl)


def _best_log_prob(impl, result):
    return to_numpy(result[0] if impl.startswith("ipu_gpu") else result[1])[:, 0]


@pytest.mark.parametrize("impl", impl_params(cpu=("ipu_gpu", "tensorflow"),
                                             gpu=("ipu_gpu_cupy",)))
@pytest.mark.parametrize("size", [pytest.param(s, marks=pytest.mark.benchmark(
    group=f"ctc_beam_search_decoder-{s}")) for s in SIZES])
def test_ctc_beam_search_decoder(run, ipu_backend, size, impl):
    p = require(impl)
    t, b, c = SIZES[size]
    x = _peaky(t, b, c)
    lengths = np.full(b, t, np.int32)
    fn = _fn(impl, p, as_impl(impl, x), as_impl(impl, lengths))
    # a finite log-probability of the most probable path (Graphcore's selection differs
    # from TF's where TF deactivates a beam evicted before its parent reached it, see
    # tests/test_ctc_decoder_tf.py; the tf rows below decode with TF's rule)
    best = _best_log_prob(impl, fn())
    assert best.shape == (b,) and np.all(best <= 0) and np.all(np.isfinite(best))
    run(fn, impl=impl, warmup=1 if impl == "tensorflow" else 3,
        sizes={"max_time": t, "batch": b, "classes": c, "beam_width": BEAM, "top_paths": 1,
               "dtype": "float32", "posteriors": "peaky (blank +6 on 80% of frames)"})


# ---- TensorFlow's decoder semantics (tf.nn.ctc_beam_search_decoder) ----------------------------
# ``ipu_gpu.ops.ctc_decoder.tf_ctc_beam_search_decoder`` (kernels/ctc_decoder_tf_cpu.py: TF's
# streaming selection, its per-step normalisation) against TF's C++ decoder on the small case,
# interleaved with it (``paired``); its paths and log-probabilities must equal TF's.
TF_SIZES = {"T200xB16xC40": (200, 16, 40)}


def _tf_semantics_fn(impl, p, x, lengths):
    if impl == "ipu_gpu":
        return lambda: tf_ctc_beam_search_decoder(x, lengths, beam_width=BEAM, top_paths=1)
    return _fn(impl, p, x, lengths)


@pytest.mark.parametrize("impl", impl_params(cpu=("ipu_gpu", "tensorflow"), gpu=()))
@pytest.mark.parametrize("size", [pytest.param(s, marks=pytest.mark.benchmark(
    group=f"ctc_beam_search_decoder_tf-{s}")) for s in TF_SIZES])
def test_tf_ctc_beam_search_decoder(run, ipu_backend, size, impl):
    p = require(impl)
    require("tensorflow")
    t, b, c = TF_SIZES[size]
    x = _peaky(t, b, c)
    lengths = np.full(b, t, np.int32)
    fn = _tf_semantics_fn(impl, p, x, lengths)
    if impl == "ipu_gpu":
        probs, out_lengths, labels = (to_numpy(a) for a in fn())
        decoded, want = p.tf.nn.ctc_beam_search_decoder(x, lengths, beam_width=BEAM)
        dense = np.full((b, t), c - 1, np.int32)
        idx = decoded[0].indices.numpy()
        dense[idx[:, 0], idx[:, 1]] = decoded[0].values.numpy()
        np.testing.assert_array_equal(labels[:, 0], dense)
        np.testing.assert_allclose(probs, want.numpy(), rtol=2e-6, atol=2e-6)
    run(fn, impl=impl, warmup=1 if impl == "tensorflow" else 3,
        paired=paired_with(impl, lambda q: _tf_semantics_fn(q, p, x, lengths),
                           peer="tensorflow"),
        sizes={"max_time": t, "batch": b, "classes": c, "beam_width": BEAM, "top_paths": 1,
               "dtype": "float32", "posteriors": "peaky (blank +6 on 80% of frames)",
               "semantics": "tensorflow"})
