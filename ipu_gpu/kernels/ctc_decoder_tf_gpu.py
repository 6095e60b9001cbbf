"""TensorFlow's CTC beam-search decoder for arrays on the GPU: TF runs it only on the CPU
(CTCBeamSearchDecoder has no GPU kernel), so the inputs are copied to the host, decoded by
ctc_decoder_tf_cpu, and the results copied back."""

from __future__ import annotations

import cupy
import numpy as np

from . import ctc_decoder_tf_cpu


def ctc_beam_search_tf(logits, lengths, beam_width, probs, out_lengths, decoded, leaves):
    """As ctc_decoder_tf_cpu.ctc_beam_search_tf, for cupy arrays."""
    host = [np.empty(a.shape, a.dtype) for a in (probs, out_lengths, decoded, leaves)]
    ctc_decoder_tf_cpu.ctc_beam_search_tf(cupy.asnumpy(logits), cupy.asnumpy(lengths),
                                          beam_width, *host)
    for dev, h in zip((probs, out_lengths, decoded, leaves), host):
        dev.set(h)
    return probs, out_lengths, decoded, leaves
