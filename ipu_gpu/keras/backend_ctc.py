"""Keras 2's CTC helpers in ``keras.backend``: ``ctc_label_dense_to_sparse``,
``ctc_batch_cost`` and ``ctc_decode`` (``tf_keras/src/backend.py``), on ipu_gpu's CTC loss
and beam-search decoder.

As tf-keras: the predictions are softmax outputs ``(samples, time, classes)`` whose last class
is the blank; they enter the loss and the decoders as ``log(y_pred + epsilon())``, treated as
logits (normalised again by a softmax), and decoded labels are padded with -1.
"""

from __future__ import annotations

import numpy as np

import ipu_gpu as _tf

from ..io.sparse import SparseTensor
from ..ops import ctc as _ctc
from ..ops import ctc_decoder as _decoder
from . import backend as _K

__all__ = ["ctc_batch_cost", "ctc_decode", "ctc_label_dense_to_sparse"]


def _host(x) -> np.ndarray:
    return np.asarray(_tf.convert_to_tensor(x).numpy())


def ctc_label_dense_to_sparse(labels, label_lengths):
    """The first ``label_lengths[b]`` labels of each row of the dense ``labels`` as a
    SparseTensor of ``labels``' shape."""
    dense = _host(labels)
    lengths = _host(label_lengths).reshape(-1)
    mask = np.arange(dense.shape[1])[None, :] < lengths[:, None]
    indices = np.argwhere(mask).astype(np.int64)
    return SparseTensor(indices, dense[mask], np.asarray(dense.shape, np.int64))


def _log_inputs(y_pred):
    """``log(transpose(y_pred, [1, 0, 2]) + epsilon())``: time-major log-probabilities."""
    y_pred = _tf.convert_to_tensor(y_pred)
    return _tf.math.log(_tf.transpose(y_pred, [1, 0, 2]) + _K.epsilon())


def ctc_batch_cost(y_true, y_pred, input_length, label_length):
    """The CTC loss of each sample: ``(samples, 1)``.

    Args:
      y_true: ``(samples, max_string_length)`` integer labels (the first
        ``label_length`` of each row count).
      y_pred: ``(samples, time_steps, num_categories)`` softmax outputs; the last category
        is the blank.
      input_length: ``(samples, 1)``: the time steps of each sample.
      label_length: ``(samples, 1)``: the label count of each sample.

    Returns:
      ``(samples, 1)`` losses; differentiable with respect to ``y_pred``.
    """
    labels = _tf.cast(y_true, _tf.int32)
    label_length = _tf.cast(_tf.squeeze(label_length, axis=-1), _tf.int32)
    input_length = _tf.cast(_tf.squeeze(input_length, axis=-1), _tf.int32)
    logits = _log_inputs(y_pred)
    blank = int(logits.shape[-1]) - 1
    loss = _ctc.ctc_loss_v2(labels, logits, label_length, input_length, blank_index=blank)
    return _tf.expand_dims(loss, 1)


def _merge_repeats(path: np.ndarray) -> np.ndarray:
    if len(path) == 0:
        return path
    return path[np.concatenate([[True], path[1:] != path[:-1]])]


def _dense(paths, samples, steps):
    out = np.full((samples, steps), -1, np.int64)
    for b, path in enumerate(paths):
        out[b, :len(path)] = path
    return _tf.constant(out)


def ctc_decode(y_pred, input_length, greedy=True, beam_width=100, top_paths=1):
    """Decode softmax outputs: best path (``greedy``) or beam search.

    Args:
      y_pred: ``(samples, time_steps, num_categories)`` softmax outputs (last: blank).
      input_length: ``(samples,)`` time steps of each sample.
      greedy: the most probable class at each step, repeats merged and blanks removed.
      beam_width, top_paths: the beam search's width and number of paths kept.

    Returns:
      ``(decoded, log_prob)``: a list of ``top_paths`` (1 when greedy) int64 tensors
      ``(samples, time_steps)`` padded with -1, and ``(samples, top_paths)`` float32: the
      negative sum of each step's best logit (greedy) or each path's log-probability.
    """
    y_pred = _tf.convert_to_tensor(y_pred)
    samples, steps = int(y_pred.shape[0]), int(y_pred.shape[1])
    logits = _log_inputs(y_pred)
    lengths = _host(input_length).astype(np.int64).reshape(-1)
    if greedy:
        x = _host(logits)
        blank = x.shape[-1] - 1
        paths, log_prob = [], np.zeros((samples, 1), np.float32)
        for b in range(samples):
            steps_b = x[:int(lengths[b]), b]
            best = steps_b.argmax(axis=-1)
            log_prob[b, 0] = -steps_b.max(axis=-1).sum(dtype=np.float32)
            merged = _merge_repeats(best)
            paths.append(merged[merged != blank])
        return [_dense(paths, samples, steps)], _tf.constant(log_prob)
    # tf-keras calls TF's own decoder (tf.compat.v1.nn.ctc_beam_search_decoder), whose beam
    # selection differs from Graphcore's at narrow beams
    probs, path_lengths, labels = (_host(t) for t in _decoder.tf_ctc_beam_search_decoder(
        logits, _tf.constant(lengths.astype(np.int32)), beam_width=beam_width,
        top_paths=top_paths))
    decoded = []
    for k in range(top_paths):
        # tf.compat.v1's beam search merges repeated labels of each output path
        paths = [_merge_repeats(labels[b, k, :path_lengths[b, k]]) for b in range(samples)]
        decoded.append(_dense(paths, samples, steps))
    return decoded, _tf.constant(probs.astype(np.float32))
