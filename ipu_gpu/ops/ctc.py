"""CTC loss (Graphcore's ``ipu.nn_ops.ctc_loss_v2`` / ``ctc_loss_with_log_probs`` and their
deprecated aliases): the negative log-likelihood of each label sequence under time-major
class scores, summed over all alignments (Graves et al. 2006).

As on the IPU (PopLibs ``CTCLoss.cpp``): float32 partials (float16 inputs are computed in
float32 and cast), log-zero is the finite -65504 so an infeasible alignment gives a large
finite loss, and the gradient is with respect to the *logits* (softmax - posterior
occupancy) for both variants. One deliberate difference: at padded time steps
(t >= data_length) the gradient is 0, where the IPU writes the softmax.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..core import dtypes, tape
from ..core.registry import register

_FLOATS = (dtypes.float16, dtypes.float32)


def _check(name, data_arg, length_arg):
    def check(labels, data, label_length, data_length, *, blank_index, out_dtype, logits):
        if data.dtype not in _FLOATS:
            raise TypeError(f"{name}: {data_arg} must be float16 or float32, got {data.dtype}")
        if data.ndim != 3:
            raise ValueError(f"{name}: {data_arg} must have rank 3 [max_time, batch_size, "
                             f"num_classes], got shape {list(data.shape)}")
        for arg, a in (("labels", labels), ("label_length", label_length),
                       (length_arg, data_length)):
            if a.dtype != dtypes.int32:
                raise TypeError(f"{name}: {arg} must be int32, got {a.dtype}")
        if labels.ndim != 2:
            raise ValueError(f"{name}: labels must have rank 2 [batch_size, max_label_length], "
                             f"got shape {list(labels.shape)}")
        n_t, n_b, n_c = data.shape
        if labels.shape[0] != n_b:
            raise ValueError(f"{name}: The batch size in the data (dim1: {n_b}) and labels "
                             f"(dim0: {labels.shape[0]}) tensors must be equal.")
        if tuple(label_length.shape) != (n_b,):
            raise ValueError(f"{name}: label_length: The label lengths tensor needs to be of "
                             f"shape [{n_b}], got {list(label_length.shape)}")
        if tuple(data_length.shape) != (n_b,):
            raise ValueError(f"{name}: {length_arg}: The data lengths tensor needs to be of "
                             f"shape [{n_b}], got {list(data_length.shape)}")
        if not 0 <= blank_index < n_c:
            raise ValueError(f"{name}: blank_index must be in [0, {n_c}) (num_classes "
                             f"{n_c}), got {blank_index}")
        if out_dtype not in _FLOATS:
            raise TypeError(f"{name}: out_dtype must be float16 or float32, got {out_dtype}")
        if data.dtype == dtypes.float32 and out_dtype == dtypes.float16:
            raise ValueError(f"out_dtype cannot be float16 when dtype of {data_arg} is "
                             f"float32.")
    return check


def _forward(k, xp, labels, data, label_length, data_length, *, blank_index, out_dtype,
             logits):
    name = "ctc_loss_v2" if logits else "ctc_loss_with_log_probs"
    n_t, n_b, n_c = data.shape
    k.ctc_loss_check_values(name, labels, label_length, data_length, n_t, n_c)  # syncs device
    x = xp.ascontiguousarray(data, dtype=dtypes.float32)
    loss = xp.empty(n_b, dtypes.float32)
    # the gradient is computed in the same pass when a tape could ask for it
    grad = xp.empty(x.shape, dtypes.float32) if tape.recording_tapes() else None
    k.ctc_loss_fwd_bwd(x, xp.ascontiguousarray(labels), label_length, data_length, blank_index,
                       logits, loss, grad)
    return loss.astype(out_dtype, copy=False), (grad, data.dtype)


def _backward(k, xp, res, g, *, blank_index, out_dtype, logits):
    grad, dtype = res
    if isinstance(g, np.ndarray) and isinstance(grad, np.ndarray) and (g == 1).all():
        # the common cotangent (a reduce_sum of the losses): the gradient as computed, with
        # no [T, B, C] multiply and allocation; Tensors are immutable, so the residual can
        # be handed out (again, from a persistent tape)
        return None, grad.astype(dtype, copy=False), None, None
    scaled = grad * g.astype(dtypes.float32, copy=False).reshape(1, -1, 1)
    return None, scaled.astype(dtype, copy=False), None, None


_ARGS_V2 = ("labels", "logits", "label_length", "logit_length")
_ARGS_LP = ("labels", "data", "label_length", "data_length")
_CTC_LOSS_V2 = register("ctc_loss_v2", args=_ARGS_V2,
                        check=_check("ctc_loss_v2", "logits", "logit_length"),
                        forward=_forward, backward=_backward, family="ctc")
_CTC_LOSS_WITH_LOG_PROBS = register(
    "ctc_loss_with_log_probs", args=_ARGS_LP,
    check=_check("ctc_loss_with_log_probs", "data", "data_length"),
    forward=_forward, backward=_backward, family="ctc")


def _static(name, blank_index, out_dtype):
    if isinstance(blank_index, bool) or not isinstance(blank_index, (int, np.integer)):
        raise TypeError(f"{name}: blank_index must be an int, got {blank_index!r}")
    if out_dtype is not None:
        out_dtype = dtypes.as_dtype(out_dtype, arg=f"{name}: out_dtype")
    return int(blank_index), out_dtype


def _dtype_of(x):
    d = getattr(x, "dtype", None)
    try:
        return dtypes.as_dtype(d) if d is not None else dtypes.float32
    except TypeError:
        return d


def ctc_loss_v2(labels, logits, label_length, logit_length, blank_index, out_dtype=None,
                name=None):
    """Calculates and returns CTC (Connectionist Temporal Classification) loss. This op is
    designed and optimized for the IPU and cannot be used with other systems.

    Note: the TensorFlow op tf.nn.ctc_loss is not supported on the IPU.

    Args:
      labels: The labels input [batch_size, max_label_length] int32 tensor.
      logits: The data input [max_time, batch_size, num_classes] float16/float32 tensor.
      label_length: A tensor of shape [batch_size] int32 containing the number of labels in
        each ``labels`` batch entry.
      logit_length: A tensor of shape [batch_size] int32 containing the number of timesteps
        in each ``logits`` batch entry.
      blank_index: The class index to use for the blank label.
      out_dtype: The dtype of the loss tensor (float16 or float32). Cannot be float16 if
        the dtype of ``logits`` is float32. Default: the same as ``logits``.
      name: A name for this op. Defaults to "ctc_loss".

    Returns:
      A loss tensor of shape [batch_size]: the natural-log negative log-likelihood. An
      infeasible alignment gives a large finite loss (about 65504), as on the IPU.

    Gradients are with respect to ``logits``; at time steps t >= logit_length[b] the
    gradient is 0 (the IPU leaves the softmax there). Second derivatives raise LookupError.

    Raises:
      ValueError: bad ranks or shapes, mismatched batch sizes, lengths outside
        [0, max_time] / [0, max_label_length], labels outside [0, num_classes), blank_index
        out of range, or ``out_dtype`` float16 with float32 ``logits``.
      TypeError: wrong dtypes.
    """
    blank_index, out_dtype = _static("ctc_loss_v2", blank_index, out_dtype)
    if out_dtype is None:
        out_dtype = _dtype_of(logits)
    return _CTC_LOSS_V2(labels, logits, label_length, logit_length, blank_index=blank_index,
                        out_dtype=out_dtype, logits=True)


def ctc_loss_with_log_probs(labels, data, label_length, data_length, blank_index,
                            out_dtype=None, name=None):
    """Calculates and returns CTC (Connectionist Temporal Classification) loss. This op is
    designed and optimized for the IPU and cannot be used with other systems. It is
    identical to ``ctc_loss_v2`` except that it takes the negative log probabilities of
    each class, rather than the logits.

    Args:
      labels: The labels input [batch_size, max_label_length] int32 tensor.
      data: The data input [max_time, batch_size, num_classes] float16/float32 tensor of
        log probabilities (used as they are: no log-softmax is applied).
      label_length: A tensor of shape [batch_size] int32 containing the number of labels in
        each ``labels`` batch entry.
      data_length: A tensor of shape [batch_size] int32 containing the number of timesteps
        in each ``data`` batch entry.
      blank_index: The class index to use for the blank label.
      out_dtype: The dtype of the loss tensor (float16 or float32). Cannot be float16 if
        the dtype of ``data`` is float32. Default: the same as ``data``.
      name: A name for this op. Defaults to "ctc_loss".

    Returns:
      A loss tensor of shape [batch_size].

    As on the IPU, the gradient returned for ``data`` is the gradient with respect to the
    logits, ``exp(data) - posterior occupancy``; passed back through a ``log_softmax`` it
    gives the logits gradient unchanged. It is 0 at time steps t >= data_length[b].
    Second derivatives raise LookupError.

    Raises:
      ValueError, TypeError: as ``ctc_loss_v2``.
    """
    blank_index, out_dtype = _static("ctc_loss_with_log_probs", blank_index, out_dtype)
    if out_dtype is None:
        out_dtype = _dtype_of(data)
    return _CTC_LOSS_WITH_LOG_PROBS(labels, data, label_length, data_length,
                                    blank_index=blank_index, out_dtype=out_dtype, logits=False)


_DEPRECATED = ("{} (from tensorflow.python.ipu.ops.nn_ops) is deprecated and will be removed in "
               "a future version.\nInstructions for updating:\nUse ctc_loss_v2 for logits, or "
               "ctc_loss_with_log_probs for log probabilities.")


def ctc_loss(labels, data, label_length, data_length, blank_index, out_dtype=None, name=None):
    """Deprecated (SDK <= 2.3): ``ctc_loss_with_log_probs``. Emits a DeprecationWarning."""
    warnings.warn(_DEPRECATED.format("ctc_loss"), DeprecationWarning, stacklevel=2)
    return ctc_loss_with_log_probs(labels, data, label_length, data_length, blank_index,
                                   out_dtype=out_dtype, name=name)


def ctc_loss_with_logits(labels, data, label_length, data_length, blank_index, out_dtype=None,
                         name=None):
    """Deprecated (SDK <= 2.3): ``ctc_loss_v2``. Emits a DeprecationWarning."""
    warnings.warn(_DEPRECATED.format("ctc_loss_with_logits"), DeprecationWarning, stacklevel=2)
    return ctc_loss_v2(labels, data, label_length, data_length, blank_index,
                       out_dtype=out_dtype, name=name)
