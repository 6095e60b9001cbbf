"""CTC beam-search decoding (``ipu.nn_ops.ctc_beam_search_decoder`` and
``ctc_beam_search_decoder_with_log_probs``): Graphcore's prefix beam search.

The algorithm (copy / extend / merge / select with a stable tie rule, log space with the
finite log-zero -65504) is described in ``kernels/ctc_decoder_cpu.py`` and
tf_ipu_semantics.md section 2.3. No gradient: the ops are registered without a backward
rule, as on the IPU (decoding is not differentiable).

``tf_ctc_beam_search_decoder`` / ``tf_nn_ctc_beam_search_decoder`` are TensorFlow's own
decoder (``tf.nn.ctc_beam_search_decoder``, kernels/ctc_decoder_tf_cpu.py): the same
recurrences, but TF's streaming beam selection, which deactivates a beam pushed out of the
set before its parent reaches it; its paths and log-probabilities differ from Graphcore's
once the beam is narrower than the competing prefixes.
"""

from __future__ import annotations

import numpy as np

from ..core.allocation import check_allocation, format_bytes, host_memory_bytes
from ..core.convert import constant
from ..core.registry import register
from ..errors import FailedPreconditionError, InvalidArgumentError, ResourceExhaustedError
from ._util import quiet, require_int

_DTYPES = (np.dtype(np.float16), np.dtype(np.float32))
LOG_ZERO = -65504.0
_INT32_MAX = 2**31 - 1


def _require_int_arg(op: str, arg: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{op}: {arg} must be an int, got {value!r}")
    if not -_INT32_MAX - 1 <= value <= _INT32_MAX:  # an int attr of the op, as in TF
        raise InvalidArgumentError(f"{op}: {arg} must be in int32 range (an op attribute), "
                                   f"got {value}")
    return int(value)


def _beam_bytes(max_time: int, num_classes: int) -> int:
    """Host bytes of one beam in the CPU kernel's state: double-buffered prefixes of
    max_time symbols, the merge table row of num_classes entries, ~80 bytes of scores."""
    return 8 * max(max_time, 1) + 4 * num_classes + 80


def _check_memory(op, xp, beam_width, width, top_paths, max_time, batch, num_classes):
    """ResourceExhaustedError, before any kernel runs, when the outputs or the beam state of
    one sequence cannot fit in host memory."""
    check_allocation(op, xp, (batch, top_paths, max_time), np.int32,
                     f"decoded_labels [batch, top_paths, max_time] for top_paths {top_paths}")
    limit = host_memory_bytes()
    if xp is not np or limit is None:
        return  # cupy refuses an impossible GPU workspace at once
    per_beam = _beam_bytes(max_time, num_classes)
    if width * per_beam > limit:
        raise ResourceExhaustedError(
            f"{op}: beam_width must be at most {limit // per_beam} for max_time {max_time} "
            f"and {num_classes} classes (the beam search state of a sequence, {per_beam} "
            f"bytes a beam, must fit in the host's {format_bytes(limit)}), got {beam_width}")


def _check(op: str, data_arg: str, lengths_arg: str):
    def check(data, lengths, *, beam_width, top_paths, blank_index):
        if data.dtype not in _DTYPES:
            raise TypeError(f"{op}: {data_arg} must be float16 or float32, got {data.dtype}")
        require_int(op, lengths_arg, lengths)
        if data.ndim != 3:
            raise ValueError(f"{op}: {data_arg} must have rank 3 [max_time, batch, "
                             f"num_classes], got shape {list(data.shape)}")
        if lengths.ndim != 1:
            raise ValueError(f"{op}: {lengths_arg} must have rank 1 [batch], got shape "
                             f"{list(lengths.shape)}")
        max_time, batch, num_classes = data.shape
        if lengths.shape[0] != batch:
            raise ValueError(f"{op}: {lengths_arg} must have shape [{batch}] (the batch size "
                             f"of {data_arg}), got {list(lengths.shape)}")
        if num_classes < 1:
            raise ValueError(f"{op}: {data_arg} must have at least one class, got shape "
                             f"{list(data.shape)}")
        if beam_width < 1:
            raise ValueError(f"{op}: beam_width must be >= 1, got {beam_width}")
        if top_paths < 1:
            raise ValueError(f"{op}: top_paths must be >= 1, got {top_paths}")
        if top_paths > beam_width:
            raise ValueError(f"{op}: top_paths must be <= beam_width ({beam_width}), got "
                             f"{top_paths}")
        if not -num_classes <= blank_index < num_classes:
            raise ValueError(f"{op}: blank_index must be in [{-num_classes}, {num_classes}) "
                             f"(num_classes {num_classes}), got {blank_index}")
    return check


def _forward(from_logits: bool, op: str, lengths_arg: str):
    def forward(k, xp, data, lengths, *, beam_width, top_paths, blank_index):
        max_time, batch, num_classes = data.shape
        hi = 0
        if batch:
            lo = int(xp.min(lengths))  # syncs device
            hi = int(xp.max(lengths))  # syncs device
            if lo < 0 or hi > max_time:
                bad = lo if lo < 0 else hi
                raise ValueError(f"{op}: {lengths_arg} must be in [0, {max_time}] "
                                 f"(max_time), got {bad}")
        from ..kernels._ctc_beams import effective_beam_width  # kernels load lazily

        width = effective_beam_width(beam_width, num_classes, hi)
        _check_memory(op, xp, beam_width, width, top_paths, max_time, batch, num_classes)
        x = xp.ascontiguousarray(data, dtype=xp.float32)  # float16 computes in float32
        if from_logits:
            with quiet(xp):  # -inf logits give -inf log-probabilities, as TF
                x = x - xp.max(x, axis=2, keepdims=True)
                x -= xp.log(xp.sum(xp.exp(x), axis=2, keepdims=True))
        lens = xp.ascontiguousarray(lengths, dtype=xp.int32)
        blank = blank_index % num_classes
        probs = xp.empty((batch, top_paths), xp.float32)
        out_lengths = xp.empty((batch, top_paths), xp.int32)
        decoded = xp.empty((batch, top_paths, max_time), xp.int32)
        k.ctc_beam_search(x, lens, width, blank, probs, out_lengths, decoded)
        return (probs.astype(data.dtype), out_lengths, decoded), None
    return forward


_DECODER = register(
    "ctc_beam_search_decoder", args=("logits", "logits_lengths"),
    check=_check("ctc_beam_search_decoder", "logits", "logits_lengths"),
    forward=_forward(True, "ctc_beam_search_decoder", "logits_lengths"),
    family="ctc_decoder")
_DECODER_LOG_PROBS = register(
    "ctc_beam_search_decoder_with_log_probs", args=("log_probs", "input_lengths"),
    check=_check("ctc_beam_search_decoder_with_log_probs", "log_probs", "input_lengths"),
    forward=_forward(False, "ctc_beam_search_decoder_with_log_probs", "input_lengths"),
    family="ctc_decoder")


def _statics(op, beam_width, top_paths, blank_index):
    return dict(beam_width=_require_int_arg(op, "beam_width", beam_width),
                top_paths=_require_int_arg(op, "top_paths", top_paths),
                blank_index=_require_int_arg(op, "blank_index", blank_index))


def ctc_beam_search_decoder(logits, logits_lengths, beam_width=100, top_paths=1,
                            blank_index=-1, name=None):
    """CTC beam-search decoding of logits (log-softmax over the classes is applied first).

    Args:
      logits: [max_time, batch_size, num_classes], float16 or float32, time-major.
        float16 is decoded in float32 arithmetic.
      logits_lengths: [batch_size] integer, each in [0, max_time]; time steps at and past
        a sequence's length are ignored.
      beam_width: number of beams kept per step, in [1, 2**31 - 1] (an int32 attribute of
        the op). Only the beams that can exist (num_classes**max(lengths)) are allocated, so
        a beam far wider than the input runs, as in TF.
      top_paths: number of paths returned, in [1, beam_width], most probable first.
      blank_index: the blank class, in [-num_classes, num_classes); negative values count
        from the end, so the default -1 is the last class (``num_classes - 1``).
      name: ignored (TF graph name).

    Returns:
      A tuple ``(label_probabilities, label_lengths, decoded_labels)``:
      label_probabilities [batch_size, top_paths] in the dtype of ``logits``,
      label_lengths [batch_size, top_paths] int32, and
      decoded_labels [batch_size, top_paths, max_time] int32.

      Deliberate differences from Graphcore's documentation:
      * label_probabilities is the natural log-probability log P(path) (<= 0), which is
        what the IPU kernel returns and what Graphcore's own test compares with
        ``tf.nn.ctc_beam_search_decoder``; the docstring's "negative log probabilities"
        does not describe the kernel.
      * decoded_labels positions at and past each path's length hold ``blank_index``
        (normalised to [0, num_classes)); the IPU leaves them uninitialised.
      * a path no beam reaches (fewer distinct prefixes than top_paths) has length 0 and
        probability -65504 (Graphcore's log-zero).

    Raises:
      TypeError: logits not float16/float32, lengths not integer, or a non-int argument.
      ValueError: bad ranks, mismatched batch sizes, lengths outside [0, max_time],
        beam_width < 1, top_paths outside [1, beam_width], blank_index out of range.
      InvalidArgumentError (a ValueError): beam_width, top_paths or blank_index outside
        int32's range (TF: "Attr beam_width has value ... out of range for an int32").
      ResourceExhaustedError: the outputs (top_paths) or the beam search state of one
        sequence (beam_width) cannot fit in host memory; raised before decoding starts.
    """
    op = "ctc_beam_search_decoder"
    return _DECODER(logits, logits_lengths, **_statics(op, beam_width, top_paths, blank_index))


def ctc_beam_search_decoder_with_log_probs(log_probs, input_lengths, beam_width=100,
                                           top_paths=1, blank_index=-1, name=None):
    """CTC beam-search decoding of log-probabilities (used as given, not normalised).

    Args:
      log_probs: [max_time, batch_size, num_classes], float16 or float32, time-major,
        log-probabilities over the classes (e.g. from ``log_softmax``).
      input_lengths: [batch_size] integer, each in [0, max_time].
      beam_width, top_paths, blank_index, name: as ``ctc_beam_search_decoder``.

    Returns:
      ``(label_probabilities, label_lengths, decoded_labels)`` as
      ``ctc_beam_search_decoder``: label_probabilities is log P(path) (<= 0 for normalised
      inputs), not the negative log-probability the Graphcore docstring names; decoded
      positions past each path's length hold the (normalised) blank_index.

    Raises:
      TypeError, ValueError, InvalidArgumentError, ResourceExhaustedError: as
      ``ctc_beam_search_decoder``.
    """
    op = "ctc_beam_search_decoder_with_log_probs"
    return _DECODER_LOG_PROBS(log_probs, input_lengths,
                              **_statics(op, beam_width, top_paths, blank_index))


# ---- TensorFlow's decoder (tf.nn.ctc_beam_search_decoder) ----------------------------------
def _tf_check(inputs, sequence_length, *, beam_width, top_paths):
    op = "ctc_beam_search_decoder"
    if inputs.dtype not in (np.float32, np.float64):
        raise TypeError(f"{op}: inputs must be float32 or float64, got {inputs.dtype}")
    require_int(op, "sequence_length", sequence_length)
    if beam_width < 1:
        raise InvalidArgumentError(f"{op}: Value for attr 'beam_width' of {beam_width} must "
                                   f"be at least minimum 1")
    if top_paths < 1:
        raise InvalidArgumentError(f"{op}: Value for attr 'top_paths' of {top_paths} must be "
                                   f"at least minimum 1")
    if inputs.ndim != 3:
        raise InvalidArgumentError(f"{op}: inputs is not a 3-Tensor")
    if sequence_length.ndim != 1:
        raise InvalidArgumentError(f"{op}: sequence_length is not a vector")
    if sequence_length.shape[0] != inputs.shape[1]:
        raise FailedPreconditionError(
            f"{op}: len(sequence_length) != batch_size.  len(sequence_length):  "
            f"{sequence_length.shape[0]} batch_size: {inputs.shape[1]}")
    if inputs.shape[2] < 1:
        raise InvalidArgumentError(f"{op}: inputs must not be empty")
    if top_paths > beam_width:
        raise InvalidArgumentError(f"{op}: requested more paths than the beam width.")


def _tf_forward(k, xp, inputs, sequence_length, *, beam_width, top_paths):
    op = "ctc_beam_search_decoder"
    max_time, batch, num_classes = inputs.shape
    lens = xp.maximum(xp.asarray(sequence_length, dtype=xp.int64), 0)  # < 0: no steps, as TF
    hi = int(xp.max(lens)) if batch else 0  # syncs device
    if hi > max_time:
        b = int(xp.argmax(lens > max_time))
        raise FailedPreconditionError(f"{op}: sequence_length({b}) <= {max_time}")
    lens = xp.ascontiguousarray(lens, dtype=xp.int32)
    from ..kernels._ctc_beams import effective_beam_width  # kernels load lazily

    width = effective_beam_width(beam_width, num_classes, hi)
    _check_memory(op, xp, beam_width, width, top_paths, max_time, batch, num_classes)
    probs = xp.empty((batch, top_paths), xp.float32)
    out_lengths = xp.empty((batch, top_paths), xp.int32)
    decoded = xp.empty((batch, top_paths, max_time), xp.int32)
    leaves = xp.empty(batch, xp.int32)
    k.ctc_beam_search_tf(xp.ascontiguousarray(inputs, dtype=xp.float32), lens, width, probs,
                         out_lengths, decoded, leaves)
    if batch and int(xp.min(leaves)) < top_paths:  # syncs device
        raise InvalidArgumentError(f"{op}: Less leaves in the beam search than requested.")
    return (probs.astype(inputs.dtype, copy=False), out_lengths, decoded), None


_TF_DECODER = register("ctc_beam_search_decoder_tf", args=("inputs", "sequence_length"),
                       check=_tf_check, forward=_tf_forward, family="ctc_decoder_tf")


def tf_ctc_beam_search_decoder(inputs, sequence_length, beam_width=100, top_paths=1):
    """TensorFlow's CTC beam search (``tf.nn.ctc_beam_search_decoder``'s kernel,
    CTCBeamSearchDecoder with merge_repeated=False), in this module's dense form.

    Not Graphcore's algorithm (``ctc_beam_search_decoder`` above): TF's decoder normalises
    the logits itself, keeps the blank at the last class, and its beam selection streams the
    extensions beam by beam, deactivating a beam that was pushed out of the set before its
    parent reached it (kernels/ctc_decoder_tf_cpu.py), so once the beam is narrower than the
    competing prefixes its paths and log-probabilities differ from the global top-W
    selection. Here they equal TF's bit for bit (float32, same operation order), ties aside
    (TF's heap orders equal totals arbitrarily).

    Args:
      inputs: [max_time, batch_size, num_classes] float32 (or float64, decoded in float32)
        logits; the blank is the last class.
      sequence_length: [batch_size] integer, each <= max_time (a negative one: no steps).
      beam_width: beams kept per step (>= 1).
      top_paths: paths returned (1 <= top_paths <= beam_width).

    Returns:
      ``(log_probability, lengths, decoded)``: [batch_size, top_paths] float32 (TF's
      log_probability: each path's log-probability), [batch_size, top_paths] int32 path
      lengths, and [batch_size, top_paths, max_time] int32 labels (the blank past each
      length).

    Raises (TF's errors and messages):
      TypeError: inputs not float32/float64, lengths not integer, non-int arguments.
      InvalidArgumentError: beam_width or top_paths < 1, top_paths > beam_width, inputs not
        3-D or without classes, or fewer distinct paths than top_paths ("Less leaves in the
        beam search than requested.").
      FailedPreconditionError: a batch size mismatch, or a length above max_time.
    """
    op = "ctc_beam_search_decoder"
    return _TF_DECODER(inputs, sequence_length,
                       beam_width=_require_int_arg(op, "beam_width", beam_width),
                       top_paths=_require_int_arg(op, "top_paths", top_paths))


def tf_nn_ctc_beam_search_decoder(inputs, sequence_length, beam_width=100, top_paths=1):
    """``tf.nn.ctc_beam_search_decoder`` (TF2: merge_repeated=False): TF's decoder
    (``tf_ctc_beam_search_decoder``) with TF's outputs: ``(decoded, log_probability)``,
    ``decoded`` a list of ``top_paths`` SparseTensors (int64 indices [N, 2] of (batch,
    position), int64 values, dense_shape [batch_size, longest path]) and
    ``log_probability`` [batch_size, top_paths]."""
    from ..io.sparse import SparseTensor

    probs, lengths, labels = (np.asarray(t.numpy()) for t in tf_ctc_beam_search_decoder(
        inputs, sequence_length, beam_width=beam_width, top_paths=top_paths))
    decoded = []
    for p in range(lengths.shape[1]):
        n = lengths[:, p]
        rows = np.repeat(np.arange(n.size, dtype=np.int64), n)
        cols = np.concatenate([np.arange(k, dtype=np.int64) for k in n]) if n.size else \
            np.zeros(0, np.int64)
        values = labels[rows, p, cols].astype(np.int64)
        shape = np.array([n.size, int(n.max()) if n.size else 0], np.int64)
        decoded.append(SparseTensor(np.stack([rows, cols], axis=1), values, shape))
    return decoded, constant(probs)
