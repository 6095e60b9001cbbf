"""``tensorflow.python.ipu.nn_ops`` (also ``ipu.ops.nn_ops``): CTC loss, CTC beam-search
decoding, ``multi_conv`` and the Popnn ``gelu``/``swish``, re-exported from ``ipu_gpu.ops``."""

from ipu_gpu.ops.ctc import ctc_loss, ctc_loss_v2, ctc_loss_with_log_probs, ctc_loss_with_logits
from ipu_gpu.ops.ctc_decoder import (ctc_beam_search_decoder,
                                     ctc_beam_search_decoder_with_log_probs)
from ipu_gpu.ops.multi_conv import multi_conv

from .nn_ops_activations import gelu, swish

__all__ = ["ctc_beam_search_decoder", "ctc_beam_search_decoder_with_log_probs", "ctc_loss",
           "ctc_loss_v2", "ctc_loss_with_log_probs", "ctc_loss_with_logits", "gelu", "multi_conv",
           "swish"]
