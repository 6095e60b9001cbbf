"""CTC loss on the CPU (Numba): log-space alpha/beta recursions (Graves et al. 2006) with the
loss and the logits gradient computed in one call.

Arithmetic follows PopLibs' CTC loss (``lib/popnn/CTCLoss.cpp``): float32 partials, log-zero
is the finite sentinel -65504 (so an infeasible alignment gives a large finite loss, not
inf), ``logadd(a, b) = max + log1p(exp(min - max))``, and the gradient is
``exp(lp) - exp(G + loss)`` with ``G[t, c]`` the log-sum of the occupancies of class c,
started at log-zero. We accumulate the occupancies in linear space (one exp per cell
instead of an exp and a log) and add the log-zero start as its own term
``exp(loss - 65504)``, which is 0 unless the alignment is infeasible.

Every constant is a float32 (a float64 literal would silently promote the kernels to
float64: perf_anchors.md section 1, trap 4) and there is no fastmath (it would break the
sentinel arithmetic: trap 5).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._ctc_checks import check_shapes, check_values
from ._threads import num_threads

LOG_ZERO = np.float32(-65504.0)  # PopLibs' probabilityZero: the smallest float16
_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)

# Below this much work (time steps x batch x (classes + extended labels)) the serial kernel
# wins: an OpenMP launch costs more, and its spinning threads would stall BLAS calls that
# follow in a training step (see indexing_cpu.py).
PARALLEL_MIN_WORK = 1 << 17


def ctc_loss_fwd_bwd(data, labels, label_length, data_length, blank_index, logits, loss, grad):
    """CTC loss per batch entry into ``loss`` [B] and, unless ``grad`` is None, the gradient
    of the loss with respect to the logits (softmax - posterior occupancy) into ``grad``
    [T, B, C], 0 at t >= data_length[b].

    ``data`` [T, B, C] float32 C-contiguous: logits when ``logits`` is True (a log-softmax
    over classes is applied first), else log-probabilities used as they are. ``labels``
    [B, Lmax] int32, lengths [B] int32. Outputs preallocated float32, fully overwritten.
    Deterministic (each batch entry is computed by one thread in a fixed order).

    Raises ValueError naming ``ctc_loss_fwd_bwd`` and the argument, before writing anything,
    for mismatched shapes, ``blank_index`` outside [0, C), ``data_length`` outside [0, T],
    ``label_length`` outside [0, Lmax] or a label (within its length) outside [0, C): the
    op checks these first (``ctc_loss_check_values``), and this O(B * Lmax) second look
    keeps any other caller from indexing out of bounds.
    """
    check_shapes("ctc_loss_fwd_bwd", data, labels, label_length, data_length, loss, grad)
    n_t, n_b, n_c = data.shape
    if not 0 <= blank_index < n_c:
        raise ValueError(f"ctc_loss_fwd_bwd: blank_index must be in [0, {n_c}) (num_classes), "
                         f"got {blank_index}")
    ctc_loss_check_values("ctc_loss_fwd_bwd", labels, label_length, data_length, n_t, n_c)
    want_grad = grad is not None
    g = grad if want_grad else np.empty((0, 0, 0), np.float32)
    exact = np.empty(n_b, np.bool_)  # which entries took the exact log-space path
    work = n_t * n_b * (n_c + 2 * labels.shape[1] + 1)
    lse = _softmax_into(data, logits, want_grad, g)
    if work >= PARALLEL_MIN_WORK and n_b > 1:
        _ctc_fast_parallel(data, lse, labels, label_length, data_length, blank_index, logits,
                           want_grad, loss, g, exact, num_threads())
    else:
        _ctc_fast_serial(data, lse, labels, label_length, data_length, blank_index, logits,
                         want_grad, loss, g, exact)
    return loss, grad


def ctc_loss_check_values(name, labels, label_length, data_length, max_time, num_classes):
    """Raise ValueError unless 0 <= data_length <= max_time, 0 <= label_length <=
    max_label_length and labels[b, :label_length[b]] lie in [0, num_classes). One O(B *
    Lmax) pass; the message is built only when something is wrong."""
    if (labels.ndim != 2 or label_length.shape != (labels.shape[0],)
            or data_length.shape != (labels.shape[0],)):
        raise ValueError(f"{name}: labels must be [B, Lmax] and the lengths [B], got shapes "
                         f"{list(labels.shape)}, {list(label_length.shape)} and "
                         f"{list(data_length.shape)}")
    if not _values_in_range(labels, label_length, data_length, max_time, num_classes):
        check_values(name, labels, label_length, data_length, max_time, num_classes,
                     _first_bad_label)
        raise ValueError(f"{name}: lengths or labels out of range")  # not reached


@njit(cache=True, nogil=True)
def _values_in_range(labels, label_length, data_length, max_time, num_classes):
    max_label = labels.shape[1]
    for b in range(labels.shape[0]):
        n_lab = label_length[b]
        if data_length[b] < 0 or data_length[b] > max_time or n_lab < 0 or n_lab > max_label:
            return False
        for i in range(n_lab):
            if labels[b, i] < 0 or labels[b, i] >= num_classes:
                return False
    return True


@njit(cache=True, nogil=True)
def _first_bad_label(labels, label_length, num_classes):
    for b in range(labels.shape[0]):
        for i in range(label_length[b]):
            if labels[b, i] < 0 or labels[b, i] >= num_classes:
                return b, i
    return -1, -1


@njit(cache=True, nogil=True)
def _logadd2(a, b):
    if a < b:
        a, b = b, a
    return a + np.log1p(np.exp(b - a))


@njit(cache=True, nogil=True)
def _logadd3(a, b, c):
    m = max(a, max(b, c))
    return m + np.log(np.exp(a - m) + np.exp(b - m) + np.exp(c - m))


@njit(cache=True, nogil=True)
def _ctc_one(data, labels, label_length, data_length, blank, logits, want_grad, loss, grad, b):
    """One batch entry: loss[b] and, if ``want_grad``, grad[:, b, :]."""
    t_max = data.shape[0]
    n_cls = data.shape[2]
    n_t = data_length[b]
    n_lab = label_length[b]
    n_s = 2 * n_lab + 1
    if want_grad:
        for t in range(n_t, t_max):
            row = grad[t, b]
            for c in range(n_cls):
                row[c] = _ZERO
    if n_t == 0:  # no time steps: log-one for the empty label, log-zero otherwise
        loss[b] = _ZERO if n_lab == 0 else -LOG_ZERO
        return

    # extended label [blank, l1, blank, l2, ..., lL, blank]; skip[s]: s-2 -> s allowed
    ext = np.empty(n_s, np.int32)
    skip = np.zeros(n_s, np.bool_)
    for s in range(n_s):
        ext[s] = blank if s % 2 == 0 else labels[b, s // 2]
        if s >= 3 and s % 2 == 1 and ext[s] != ext[s - 2]:
            skip[s] = True

    # log-probabilities at the extended labels; the softmax row goes straight into grad
    lpe = np.empty((n_t, n_s), np.float32)
    for t in range(n_t):
        row = data[t, b]
        lse = _ZERO
        if logits:
            m = row[0]
            for c in range(1, n_cls):
                m = max(m, row[c])
            total = _ZERO
            if want_grad:
                out = grad[t, b]
                for c in range(n_cls):
                    e = np.exp(row[c] - m)
                    out[c] = e
                    total += e
                inv = _ONE / total
                for c in range(n_cls):
                    out[c] *= inv
            else:
                for c in range(n_cls):
                    total += np.exp(row[c] - m)
            lse = m + np.log(total)
        elif want_grad:
            out = grad[t, b]
            for c in range(n_cls):
                out[c] = np.exp(row[c])
        for s in range(n_s):
            lpe[t, s] = row[ext[s]] - lse

    # alpha, the full table (the backward pass needs every row)
    alpha = np.empty((n_t, n_s), np.float32)
    for s in range(n_s):
        alpha[0, s] = LOG_ZERO
    alpha[0, 0] = lpe[0, 0]
    if n_s > 1:
        alpha[0, 1] = lpe[0, 1]
    for t in range(1, n_t):
        prev = alpha[t - 1]
        cur = alpha[t]
        lp = lpe[t]
        cur[0] = prev[0] + lp[0]
        for s in range(1, n_s):
            if skip[s]:
                r = _logadd3(prev[s], prev[s - 1], prev[s - 2])
            else:
                r = _logadd2(prev[s], prev[s - 1])
            cur[s] = r + lp[s]
    last = alpha[n_t - 1]
    ll = last[n_s - 1]
    if n_s > 1:
        ll = _logadd2(ll, last[n_s - 2])
    nll = -ll
    loss[b] = nll
    if not want_grad:
        return

    # beta (two rows) and the occupancy subtracted from the softmax, t descending
    base = np.exp(nll + LOG_ZERO)  # the log-zero start of G; 0 unless infeasible
    beta = np.empty(n_s, np.float32)
    nxt = np.empty(n_s, np.float32)
    for s in range(n_s):
        beta[s] = LOG_ZERO
    beta[n_s - 1] = lpe[n_t - 1, n_s - 1]
    if n_s > 1:
        beta[n_s - 2] = lpe[n_t - 1, n_s - 2]
    for t in range(n_t - 1, -1, -1):
        out = grad[t, b]
        a = alpha[t]
        lp = lpe[t]
        if base != _ZERO:
            for c in range(n_cls):
                out[c] -= base
        for s in range(n_s):
            out[ext[s]] -= np.exp(a[s] + beta[s] - lp[s] + nll)
        if t == 0:
            break
        lp = lpe[t - 1]
        for s in range(n_s - 1):
            if s + 2 < n_s and skip[s + 2]:
                r = _logadd3(beta[s], beta[s + 1], beta[s + 2])
            else:
                r = _logadd2(beta[s], beta[s + 1])
            nxt[s] = r + lp[s]
        nxt[n_s - 1] = beta[n_s - 1] + lp[n_s - 1]
        beta, nxt = nxt, beta


def _softmax_into(data, logits, want_grad, g):
    """The softmax over classes (``logits``) or exp of the log-probabilities into ``g`` when
    ``want_grad``, with numpy's vectorised exp (Numba's exp is a scalar libm call here:
    perf_anchors.md section 8); returns the log-sum-exp [T, B] (0 for log-probabilities)."""
    n_t, n_b, _ = data.shape
    with np.errstate(all="ignore"):
        if logits:
            m = data.max(axis=2, keepdims=True)
            buf = g if want_grad else np.empty_like(data)
            np.subtract(data, m, out=buf)
            np.exp(buf, out=buf)
            tot = buf.sum(axis=2, keepdims=True)
            lse = (m + np.log(tot)).reshape(n_t, n_b)
            if want_grad:
                np.multiply(buf, _ONE / tot, out=buf)
            return lse
        if want_grad:
            np.exp(data, out=g)
        return np.zeros((n_t, n_b), np.float32)


def _ctc_serial(data, labels, label_length, data_length, blank, logits, want_grad, loss, grad):
    """The serial path of ``ctc_loss_fwd_bwd`` (``grad`` an empty 3-d array when not
    ``want_grad``); returns which entries [B] took the exact log-space path."""
    lse = _softmax_into(data, logits, want_grad, grad)
    exact = np.empty(data.shape[1], np.bool_)
    _ctc_fast_serial(data, lse, labels, label_length, data_length, blank, logits, want_grad,
                     loss, grad, exact)
    return exact


_TINY = 1e-280  # float64: a scaled probability below this risks underflow -> exact fallback


@njit(cache=True, nogil=True)
def _rescale(vec, lo, hi, inv):
    """vec[lo:hi+1] *= inv; False if a positive entry falls below _TINY (underflow risk)."""
    mn = np.inf
    for s in range(lo, hi + 1):
        v = vec[s] * inv
        vec[s] = v
        if v > 0.0:
            mn = min(mn, v)
    return mn > _TINY


@njit(cache=True, nogil=True)
def _ctc_one_fast(data, lse, labels, label_length, data_length, blank, logits, want_grad,
                  loss, grad, b):
    """As ``_ctc_one`` but with ``grad[t, b]`` (t < data_length) already holding the softmax
    (or exp of the log-probabilities) and ``lse`` the log-sum-exp: the recursions run in
    linear space (float64, rescaled every step, restricted to the states that can both be
    reached and reach the end), so they need no exp or log. Whenever that could lose
    anything against the log-space arithmetic (an infeasible alignment, non-finite
    inputs, a scaled value near float64's underflow), it defers to the exact ``_ctc_one``.
    Returns True when it did.
    """
    t_max = data.shape[0]
    n_cls = data.shape[2]
    n_t = data_length[b]
    n_lab = label_length[b]
    n_s = 2 * n_lab + 1
    need = n_lab
    for i in range(1, n_lab):
        if labels[b, i] == labels[b, i - 1]:
            need += 1
    if n_t == 0 or n_t < need:
        _ctc_one(data, labels, label_length, data_length, blank, logits, want_grad, loss,
                 grad, b)
        return True
    if want_grad:
        for t in range(n_t, t_max):
            row = grad[t, b]
            for c in range(n_cls):
                row[c] = _ZERO

    ext = np.empty(n_s, np.int32)
    skip = np.zeros(n_s, np.bool_)
    for s in range(n_s):
        ext[s] = blank if s % 2 == 0 else labels[b, s // 2]
        if s >= 3 and s % 2 == 1 and ext[s] != ext[s - 2]:
            skip[s] = True

    # probabilities at the extended labels, scaled per step by the row maximum
    p = np.empty((n_t, n_s), np.float64)
    log_scale = 0.0
    for t in range(n_t):
        row = data[t, b]
        lse_t = lse[t, b]
        mx = -np.inf
        for s in range(n_s):
            v = row[ext[s]] - lse_t  # float32, as in _ctc_one
            p[t, s] = v
            mx = max(mx, v)
        if not np.isfinite(mx):
            _ctc_one(data, labels, label_length, data_length, blank, logits, want_grad, loss,
                     grad, b)
            return True
        bad = False
        for s in range(n_s):
            d = p[t, s] - mx
            if not d > -600.0:
                bad = True
            p[t, s] = np.exp(d)
        if bad:
            _ctc_one(data, labels, label_length, data_length, blank, logits, want_grad, loss,
                     grad, b)
            return True
        log_scale += mx

    # alpha (scaled per step), states outside [lo, hi] are 0
    alpha = np.zeros((n_t, n_s), np.float64)
    hi = min(n_s - 1, 1)
    lo = max(0, n_s - 2 * n_t)
    tot = 0.0
    for s in range(lo, hi + 1):
        alpha[0, s] = p[0, s]
        tot += p[0, s]
    inv = 1.0 / tot
    for s in range(lo, hi + 1):
        alpha[0, s] *= inv
    log_scale -= np.log(inv)
    bad = False
    for t in range(1, n_t):
        prev = alpha[t - 1]
        cur = alpha[t]
        pt = p[t]
        hi = min(n_s - 1, 2 * t + 1)
        lo = max(0, n_s - 2 * (n_t - t))
        tot = 0.0
        for s in range(lo, hi + 1):
            r = prev[s]
            if s >= 1:
                r += prev[s - 1]
                if skip[s]:
                    r += prev[s - 2]
            reached = r > 0.0  # exactly 0 only when no predecessor is reachable
            r *= pt[s]
            if reached and not r > 0.0:
                bad = True  # the product underflowed
            cur[s] = r
            tot += r
        if bad or not tot > 0.0:
            bad = True
            break
        inv = 1.0 / tot
        if not _rescale(cur, lo, hi, inv):
            bad = True
            break
        log_scale -= np.log(inv)
    if bad:
        _ctc_one(data, labels, label_length, data_length, blank, logits, want_grad, loss,
                 grad, b)
        return True
    last = alpha[n_t - 1]
    lik = last[n_s - 1]
    if n_s > 1:
        lik += last[n_s - 2]
    nll = -(np.log(lik) + log_scale)
    if not want_grad:
        loss[b] = np.float32(nll)
        return False

    # beta' (beta without the emission at t), scaled per step; occupancy = alpha * beta'
    # normalised per step (it sums to 1 over the states at every t)
    beta = np.zeros(n_s, np.float64)
    nxt = np.zeros(n_s, np.float64)
    beta[n_s - 1] = 1.0
    if n_s > 1:
        beta[n_s - 2] = 1.0
    for t in range(n_t - 1, -1, -1):
        out = grad[t, b]
        a = alpha[t]
        hi = min(n_s - 1, 2 * t + 1)
        lo = max(0, n_s - 2 * (n_t - t))
        tot = 0.0
        for s in range(lo, hi + 1):
            tot += a[s] * beta[s]
        if not tot > 0.0:
            bad = True
            break
        inv = 1.0 / tot
        for s in range(lo, hi + 1):
            out[ext[s]] -= np.float32(a[s] * beta[s] * inv)
        if t == 0:
            break
        # beta'_{t-1}(s) = sum over successors k of p_t(k) beta'_t(k), s in window(t - 1)
        pt = p[t]
        hi2 = min(n_s - 1, 2 * t - 1)
        lo2 = max(0, n_s - 2 * (n_t - t + 1))
        for s in range(lo, hi + 1):
            v = beta[s] * pt[s]
            if beta[s] > 0.0 and not v > 0.0:
                bad = True  # the product underflowed
            beta[s] = v
        if bad:
            break
        tot = 0.0
        for s in range(lo2, hi2 + 1):
            r = beta[s]
            if s + 1 < n_s:
                r += beta[s + 1]
                if s + 2 < n_s and skip[s + 2]:
                    r += beta[s + 2]
            nxt[s] = r
            tot += r
        if not tot > 0.0:
            bad = True
            break
        inv = 1.0 / tot
        if not _rescale(nxt, lo2, hi2, inv):
            bad = True
            break
        for s in range(lo, hi + 1):
            beta[s] = 0.0
        beta, nxt = nxt, beta
    if bad:
        _ctc_one(data, labels, label_length, data_length, blank, logits, want_grad, loss,
                 grad, b)
        return True
    loss[b] = np.float32(nll)
    return False


@njit(cache=True, nogil=True)
def _ctc_fast_serial(data, lse, labels, label_length, data_length, blank, logits, want_grad,
                     loss, grad, exact):
    for b in range(data.shape[1]):
        exact[b] = _ctc_one_fast(data, lse, labels, label_length, data_length, blank, logits,
                                 want_grad, loss, grad, b)


@njit(cache=True, nogil=True, parallel=True)
def _ctc_fast_parallel(data, lse, labels, label_length, data_length, blank, logits, want_grad,
                       loss, grad, exact, nthreads):
    n_b = data.shape[1]
    for i in prange(nthreads):
        for b in range(i, n_b, nthreads):
            exact[b] = _ctc_one_fast(data, lse, labels, label_length, data_length, blank,
                                     logits, want_grad, loss, grad, b)
