"""CTC layers: ``CTCLoss`` (``ipu.nn_ops`` CTC loss, batch mean), ``CTCInferenceLayer``
(beam-search decoding) and ``CTCPredictionsLayer`` (the most likely path, padded with the
blank index)."""

from __future__ import annotations

import numpy as np

from ipu_gpu.ipu import nn_ops
from ipu_gpu.keras.engine.base_layer import Layer
from ipu_gpu.ops import creation as _creation
from ipu_gpu.ops import indexing as _indexing
from ipu_gpu.ops import math as _m
from ipu_gpu.ops import reduction as _r
from ipu_gpu.ops import shape as _shape
from ipu_gpu.ops import sort as _sort

__all__ = ["CTCInferenceLayer", "CTCLoss", "CTCPredictionsLayer"]


class CTCInferenceLayer(Layer):
    """Beam-search CTC decoding of ``data`` (batch, time, classes): logits with
    ``from_logits``, else log probabilities. ``call(data, data_length)`` returns (the paths'
    log probabilities (batch, top_paths), their lengths (batch, top_paths), the decoded
    paths (batch, top_paths, time))."""

    def __init__(self, blank_index=0, beam_width=100, top_paths=1, from_logits=False,
                 **kwargs):
        super().__init__(**kwargs)
        self.blank_index = blank_index
        self.beam_width = beam_width
        self.top_paths = top_paths
        self.from_logits = from_logits

    def call(self, data, data_length, **kwargs):
        decode = (nn_ops.ctc_beam_search_decoder if self.from_logits
                  else nn_ops.ctc_beam_search_decoder_with_log_probs)
        return decode(data, data_length, beam_width=self.beam_width,
                      top_paths=self.top_paths, blank_index=self.blank_index)

    def get_config(self) -> dict:
        return {**super().get_config(), "blank_index": self.blank_index,
                "beam_width": self.beam_width, "top_paths": self.top_paths,
                "from_logits": self.from_logits}


class CTCPredictionsLayer(Layer):
    """The most likely decoded path of each example (batch, time), positions past its
    length set to ``blank_index``. Arguments as ``CTCInferenceLayer``."""

    def __init__(self, blank_index=0, beam_width=100, top_paths=1, from_logits=False,
                 **kwargs):
        super().__init__(**kwargs)
        self._inference_layer = CTCInferenceLayer(blank_index=blank_index,
                                                  beam_width=beam_width, top_paths=top_paths,
                                                  from_logits=from_logits, **kwargs)

    @staticmethod
    def _select_most_likely_path(probs, predicted, top_paths, lengths):
        batch_size, _, max_time = predicted.shape
        if top_paths == 1:
            return _shape.reshape(predicted, [batch_size, max_time]), \
                _shape.reshape(lengths, [batch_size])
        # Graphcore takes the argmin of the paths' scores (the decoder's negative log
        # probabilities on the IPU)
        best = np.argmin(probs.numpy(), axis=1)
        rows = np.arange(batch_size)
        return (_sort.gather_nd(predicted, np.stack([rows, best], 1).astype(np.int32)),
                _sort.gather_nd(lengths, np.stack([rows, best], 1).astype(np.int32)))

    @staticmethod
    def _mask_out_junk_values(blank_index, best_predictions, lengths):
        batch_size, max_time = best_predictions.shape
        positions = np.broadcast_to(np.arange(max_time, dtype=np.int32), (batch_size, max_time))
        keep = _m.less(positions, _shape.reshape(_m.cast(lengths, "int32"), [batch_size, 1]))
        blank = _creation.fill([batch_size, max_time],
                               np.asarray(blank_index, best_predictions.dtype))
        return _indexing.where(keep, best_predictions, blank)

    def call(self, data, data_length, **kwargs):
        layer = self._inference_layer
        probs, lengths, predicted = layer.call(data, data_length, **kwargs)
        best, lengths = self._select_most_likely_path(probs, predicted, layer.top_paths,
                                                      lengths)
        return self._mask_out_junk_values(layer.blank_index, best, lengths)

    def get_config(self) -> dict:
        return self._inference_layer.get_config()


class CTCLoss(Layer):
    """The mean over the batch of the CTC loss, shape [1]. ``call(labels, data,
    label_length, data_length)``: ``data`` (batch, time, classes) are logits with
    ``from_logits``, else log probabilities."""

    def __init__(self, blank_index=0, from_logits=False, **kwargs):
        super().__init__(**kwargs)
        self.blank_index = blank_index
        self.from_logits = from_logits

    def call(self, labels, data, label_length, data_length, **kwargs):
        loss_fn = nn_ops.ctc_loss_v2 if self.from_logits else nn_ops.ctc_loss_with_log_probs
        loss = loss_fn(labels, data, label_length, data_length, self.blank_index)
        return _shape.reshape(_r.reduce_mean(loss), [1])

    def get_config(self) -> dict:
        return {**super().get_config(), "blank_index": self.blank_index,
                "from_logits": self.from_logits}
