"""CTC loss in float64: the log-space alpha/beta recursions (Graves et al. 2006) with
PopLibs' finite log-zero, and a brute-force sum over all alignments for tiny sizes.

Gradients are with respect to the logits (softmax - posterior occupancy), as the IPU
returns for both the logits and the log-probabilities variants; 0 at padded time steps.
"""

from __future__ import annotations

import itertools

import numpy as np

LOG_ZERO = -65504.0


def log_softmax(x):
    x = np.asarray(x, np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def _logadd(*v):
    m = max(v)
    return m + np.log(sum(np.exp(x - m) for x in v))


def _extended(label, blank):
    ext = [blank]
    for c in label:
        ext += [int(c), blank]
    return ext


def ctc_one(lp, label, blank):
    """(loss, grad) for one sequence: ``lp`` [T, C] log-probabilities (T >= 1), ``label`` a
    list of class ids. grad = exp(lp) - exp(G + loss), G started at log-zero."""
    lp = np.asarray(lp, np.float64)
    n_t, n_c = lp.shape
    ext = _extended(label, blank)
    n_s = len(ext)
    skip = [s >= 2 and s % 2 == 1 and ext[s] != ext[s - 2] for s in range(n_s)]
    alpha = np.full((n_t, n_s), LOG_ZERO)
    alpha[0, 0] = lp[0, ext[0]]
    if n_s > 1:
        alpha[0, 1] = lp[0, ext[1]]
    for t in range(1, n_t):
        for s in range(n_s):
            parents = [alpha[t - 1, s]]
            if s >= 1:
                parents.append(alpha[t - 1, s - 1])
            if skip[s]:
                parents.append(alpha[t - 1, s - 2])
            alpha[t, s] = _logadd(*parents) + lp[t, ext[s]]
    beta = np.full((n_t, n_s), LOG_ZERO)
    beta[-1, -1] = lp[-1, ext[-1]]
    if n_s > 1:
        beta[-1, -2] = lp[-1, ext[-2]]
    for t in range(n_t - 2, -1, -1):
        for s in range(n_s):
            children = [beta[t + 1, s]]
            if s + 1 < n_s:
                children.append(beta[t + 1, s + 1])
            if s + 2 < n_s and skip[s + 2]:
                children.append(beta[t + 1, s + 2])
            beta[t, s] = _logadd(*children) + lp[t, ext[s]]
    ll = alpha[-1, -1] if n_s == 1 else _logadd(alpha[-1, -1], alpha[-1, -2])
    loss = -ll
    occ = np.full((n_t, n_c), LOG_ZERO)
    for t in range(n_t):
        for s in range(n_s):
            c = ext[s]
            occ[t, c] = _logadd(occ[t, c], alpha[t, s] + beta[t, s] - lp[t, c])
    grad = np.exp(lp) - np.exp(occ + loss)
    return loss, grad


def ctc_loss(labels, data, label_length, data_length, blank_index, logits=True):
    """Loss [B] and gradient [T, B, C] w.r.t. the logits for time-major ``data``."""
    data = np.asarray(data, np.float64)
    n_t, n_b, n_c = data.shape
    lp = log_softmax(data) if logits else data
    loss = np.zeros(n_b)
    grad = np.zeros_like(data)
    for b in range(n_b):
        tb, lb = int(data_length[b]), int(label_length[b])
        label = [int(c) for c in labels[b][:lb]]
        if tb == 0:
            loss[b] = 0.0 if lb == 0 else -LOG_ZERO
            continue
        loss[b], grad[:tb, b] = ctc_one(lp[:tb, b], label, blank_index)
    return loss, grad


def _collapse(path, blank):
    out = []
    prev = None
    for c in path:
        if c != prev and c != blank:
            out.append(c)
        prev = c
    return out


def brute_force_one(lp, label, blank):
    """(loss, grad) for one sequence by enumerating all C**T paths (tiny sizes only); the
    sequence must be feasible. grad = softmax - posterior class occupancy."""
    lp = np.asarray(lp, np.float64)
    n_t, n_c = lp.shape
    label = list(label)
    total = 0.0
    occ = np.zeros((n_t, n_c))
    for path in itertools.product(range(n_c), repeat=n_t):
        if _collapse(path, blank) != label:
            continue
        p = np.exp(sum(lp[t, c] for t, c in enumerate(path)))
        total += p
        for t, c in enumerate(path):
            occ[t, c] += p
    return -np.log(total), np.exp(lp) - occ / total
