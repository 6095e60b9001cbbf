"""Dot-product and additive attention layers: ``Attention`` (Luong-style) and
``AdditiveAttention`` (Bahdanau-style), as tf-keras's ``BaseDenseAttention`` family.

Called on ``[query, value]`` or ``[query, value, key]`` (key defaults to value), with an
optional ``mask=[query_mask, value_mask]``: scores ``(batch, Tq, Tv)``, masked positions (a
False value mask, or above the diagonal with ``use_causal_mask``) lowered by 1e9 (65504 in
float16) before the softmax, dropout on the weights in training, ``weights @ value``, and the
rows of masked queries zeroed.
"""

from __future__ import annotations

import numpy as np

import ipu_gpu as _tf

from ..engine.base_layer import Layer

__all__ = ["AdditiveAttention", "Attention"]


class _DenseAttention(Layer):
    def __init__(self, dropout=0.0, seed=None, **kwargs):
        self.causal = kwargs.pop("causal", False)
        super().__init__(**kwargs)
        self.dropout = dropout
        self.seed = seed
        self.supports_masking = True

    def _calculate_scores(self, query, key):
        raise NotImplementedError  # each subclass defines its score

    def _validate_call_args(self, inputs, mask):
        name = type(self).__name__
        if not isinstance(inputs, list):
            raise ValueError(f"{name} layer must be called on a list of inputs, namely "
                             f"[query, value] or [query, value, key]. Received: {inputs}.")
        if len(inputs) < 2 or len(inputs) > 3:
            raise ValueError(f"{name} layer accepts inputs list of length 2 or 3, namely "
                             f"[query, value] or [query, value, key]. Received length: "
                             f"{len(inputs)}.")
        if mask:
            if not isinstance(mask, list):
                raise ValueError(f"{name} layer mask must be a list, namely [query_mask, "
                                 f"value_mask]. Received: {mask}.")
            if len(mask) < 2 or len(mask) > len(inputs):
                raise ValueError(f"{name} layer mask must be a list of length 2, namely "
                                 f"[query_mask, value_mask]. Received length: {len(mask)}.")

    def _apply_scores(self, scores, value, scores_mask, training):
        if scores_mask is not None:
            big = 65504.0 if scores.dtype == np.float16 else 1.0e9
            scores = scores - big * _tf.cast(_tf.logical_not(scores_mask), scores.dtype)
        weights = _tf.nn.softmax(scores)
        if training is None:
            from .. import backend

            training = backend.learning_phase()
        if self.dropout > 0 and training:
            weights = _tf.nn.dropout(weights, rate=self.dropout, seed=self.seed)
        return _tf.matmul(weights, value), weights

    def call(self, inputs, mask=None, training=None, return_attention_scores=False,
             use_causal_mask=False):
        self._validate_call_args(inputs, mask)
        q, v = inputs[0], inputs[1]
        k = inputs[2] if len(inputs) > 2 else v
        q_mask = mask[0] if mask else None
        v_mask = mask[1] if mask else None
        scores = self._calculate_scores(q, k)
        scores_mask = None
        if v_mask is not None:
            scores_mask = _tf.expand_dims(_tf.cast(v_mask, _tf.bool), axis=-2)
        if self.causal or use_causal_mask:
            tq, tv = int(scores.shape[-2]), int(scores.shape[-1])
            causal = _tf.constant(np.tril(np.ones((tq, tv), bool)))
            scores_mask = causal if scores_mask is None else _tf.logical_and(scores_mask,
                                                                            causal)
        result, weights = self._apply_scores(scores, v, scores_mask, training)
        if q_mask is not None:
            result = result * _tf.cast(_tf.expand_dims(q_mask, axis=-1), result.dtype)
        if return_attention_scores:
            return result, weights
        return result

    def compute_mask(self, inputs, mask=None):
        self._validate_call_args(inputs, mask)
        if mask and mask[0] is not None:
            return _tf.convert_to_tensor(mask[0])
        return None

    def compute_output_shape(self, input_shape):
        return input_shape[0]

    def get_config(self) -> dict:
        config = super().get_config()
        config["dropout"] = self.dropout
        return config


class Attention(_DenseAttention):
    """Dot-product attention: scores ``query @ key^T`` (times a trainable scalar with
    ``use_scale``), or with ``score_mode="concat"`` ``sum(tanh(query + key))`` per pair.

    Raises:
      ValueError: an unknown ``score_mode``.
    """

    def __init__(self, use_scale=False, score_mode="dot", **kwargs):
        super().__init__(**kwargs)
        self.use_scale = use_scale
        self.score_mode = score_mode
        if score_mode not in ["dot", "concat"]:
            raise ValueError(f"Received: score_mode={score_mode}. Acceptable values are: "
                             '["dot", "concat"]')

    def build(self, input_shape):
        self.scale = (self.add_weight(name="scale", shape=(), initializer="ones",
                                      dtype=self.dtype, trainable=True)
                      if self.use_scale else None)
        self.concat_score_weight = (
            self.add_weight(name="concat_score_weight", shape=(), initializer="ones",
                            dtype=self.dtype, trainable=True)
            if self.score_mode == "concat" else None)
        super().build(input_shape)

    def _calculate_scores(self, query, key):
        if self.score_mode == "dot":
            scores = _tf.matmul(query, key, transpose_b=True)
            return scores * self.scale if self.scale is not None else scores
        pairs = _tf.expand_dims(query, axis=-2) + _tf.expand_dims(key, axis=-3)
        if self.scale is not None:
            pairs = self.scale * pairs
        return self.concat_score_weight * _tf.reduce_sum(_tf.tanh(pairs), axis=-1)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(use_scale=self.use_scale, score_mode=self.score_mode)
        return config


class AdditiveAttention(_DenseAttention):
    """Additive attention: scores ``sum(scale * tanh(query + key))`` per (query, key) pair,
    ``scale`` a trainable vector of the value's last size (glorot-uniform) with
    ``use_scale``."""

    def __init__(self, use_scale=True, **kwargs):
        super().__init__(**kwargs)
        self.use_scale = use_scale

    def build(self, input_shape):
        dim = list(input_shape[1])[-1]
        self.scale = (self.add_weight(name="scale", shape=[int(dim)],
                                      initializer="glorot_uniform", dtype=self.dtype,
                                      trainable=True)
                      if self.use_scale else None)
        super().build(input_shape)

    def _calculate_scores(self, query, key):
        pairs = _tf.tanh(_tf.expand_dims(query, axis=-2) + _tf.expand_dims(key, axis=-3))
        if self.use_scale:
            pairs = self.scale * pairs
        return _tf.reduce_sum(pairs, axis=-1)

    def get_config(self) -> dict:
        config = super().get_config()
        config["use_scale"] = self.use_scale
        return config
