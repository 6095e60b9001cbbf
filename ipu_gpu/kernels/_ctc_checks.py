"""The CTC loss's shape and value checks and their messages, shared by ctc_cpu and ctc_gpu (the GPU
twin flags bad values on the device and calls ``check_values`` on host copies only when
something is wrong, so both raise the same error)."""

from __future__ import annotations

import numpy as np


def check_values(name, labels, label_length, data_length, max_time, num_classes,
                 first_bad_label):
    """Raise ValueError unless 0 <= data_length <= max_time, 0 <= label_length <=
    max_label_length and labels[b, :label_length[b]] lie in [0, num_classes). Host (numpy)
    arrays; ``first_bad_label(labels, label_length, num_classes)`` gives the (b, i) of the
    first bad label in row-major order, or (-1, -1)."""
    arg = "logit_length" if name == "ctc_loss_v2" else "data_length"
    max_label = labels.shape[1]
    for what, lengths, hi in ((arg, data_length, max_time),
                              ("label_length", label_length, max_label)):
        bad = np.flatnonzero((lengths < 0) | (lengths > hi))
        if bad.size:
            b = bad[0]
            raise ValueError(f"{name}: {what} must be in [0, {hi}], got {lengths[b]} at batch "
                             f"entry {b}")
    b, i = first_bad_label(labels, label_length, num_classes)
    if b >= 0:
        raise ValueError(f"{name}: labels must be in [0, {num_classes}) (num_classes), got "
                         f"{labels[b, i]} at [{b}, {i}]")


def first_bad_label(labels, label_length, num_classes):
    """numpy ``first_bad_label`` for ``check_values`` (lengths already checked)."""
    inside = np.arange(labels.shape[1]) < label_length[:, None]
    bad = inside & ((labels < 0) | (labels >= num_classes))
    if not bad.any():
        return -1, -1
    b, i = np.unravel_index(np.argmax(bad), bad.shape)
    return int(b), int(i)


def check_shapes(name, data, labels, label_length, data_length, loss, grad):
    """Raise ValueError unless data is [T, B, C], labels [B, Lmax], the lengths and ``loss``
    [B] and ``grad`` (unless None) data's shape: what the kernels index with."""
    if data.ndim != 3:
        raise ValueError(f"{name}: data must be [T, B, C], got shape {list(data.shape)}")
    n_b = data.shape[1]
    if labels.ndim != 2 or labels.shape[0] != n_b:
        raise ValueError(f"{name}: labels must be [{n_b}, Lmax], got shape "
                         f"{list(labels.shape)}")
    for arg, a in (("label_length", label_length), ("data_length", data_length),
                   ("loss", loss)):
        if tuple(a.shape) != (n_b,):
            raise ValueError(f"{name}: {arg} must have shape [{n_b}], got {list(a.shape)}")
    if grad is not None and tuple(grad.shape) != tuple(data.shape):
        raise ValueError(f"{name}: grad must have data's shape {list(data.shape)}, got "
                         f"{list(grad.shape)}")
