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
sentinel arithmetic: trap 5; the fast path below uses only 'reassoc' in its two sums and
'contract' in its exp, which hold no sentinels).

That exact kernel (``_ctc_one``) is the fallback. Feasible entries with finite inputs take
the fast path (``_ctc_one_fast``): one batch entry per task, threads over entries (prange,
a serial twin below PARALLEL_MIN_WORK). Its forward pass runs, per time step, the softmax
of the row straight into ``grad[t, b]`` (max as integers, a vectorised float32 exp within
1 ulp, a float64 sum: ``_softmax_row``), gathers the probabilities at the extended labels
and advances alpha in float64 linear space, rescaled every step; the backward pass runs
beta the same way and subtracts the occupancies from the softmax rows. No exp or log per
cell, no [T, B, C] temporary, each row of data read once. The vector loops are small
functions over 0-based views (LLVM leaves loops indexed from a window's start scalar).
Against torch's ``F.log_softmax`` + ``F.ctc_loss`` fwd+bwd (2-core AMD EPYC, interleaved,
bench/test_bench_ctc.py): 0.12x its time at T200 B32 C40 L50 and 0.09x at T500 B16 C1000
L100, where numpy's softmax and a scalar exp per cell gave 0.35x and 0.44x. The first call
compiles for about 13 s (the exact kernel and the helpers; cached on disk after that).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

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
    if work >= PARALLEL_MIN_WORK and n_b > 1:
        _ctc_fast_parallel(data, labels, label_length, data_length, blank_index, logits,
                           want_grad, loss, g, exact, num_threads())
    else:
        _ctc_fast_serial(data, labels, label_length, data_length, blank_index, logits,
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


# ---- the fast path: a fused softmax and float64 linear-space recursions ----------------------
# A float32 exp that LLVM vectorises (this llvmlite has no SVML, so np.exp in a Numba loop is
# one libm call per element): Cody-Waite reduction by ln 2 and Cephes' expf polynomial,
# within 1 ulp of the rounded result on normal outputs (numpy's AVX2 exp: 2.4 ulp); the
# power of two is applied as two exact factors so denormal results round once, as numpy's.
_LOG2E = np.float32(1.4426950408889634)
_LN2_HI = np.float32(0.693359375)
_LN2_LO = np.float32(-2.12194440e-4)
_EXP_LO = np.float32(-104.0)  # exp below this rounds to 0 in float32
_EXP_HI = np.float32(88.72284)  # and from this up it overflows
_HALF = np.float32(0.5)
_INF32 = np.float32(np.inf)
_P0 = np.float32(1.9875691500e-4)
_P1 = np.float32(1.3981999507e-3)
_P2 = np.float32(8.3334519073e-3)
_P3 = np.float32(4.1665795894e-2)
_P4 = np.float32(1.6666665459e-1)
_P5 = np.float32(5.0000001201e-1)
_I32_SIGN_OFF = np.int32(0x7FFFFFFF)
_I32_MIN = np.int32(-(2**31))
_I32_127 = np.int32(127)


@intrinsic
def _f32_from_bits(typingctx, bits):
    """The float32 whose bit pattern is the int32 ``bits``."""
    sig = types.float32(types.int32)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())

    return sig, codegen


@intrinsic
def _prefetch_write(typingctx, arr, i):
    """Hint that ``arr[i]`` (1-D C array) will be written soon."""
    sig = types.void(arr, i)

    def codegen(context, builder, signature, args):
        aty, ity = signature.args
        a = context.make_array(aty)(context, builder, args[0])
        idx = [context.cast(builder, args[1], ity, types.intp)]
        ptr = cgutils.get_item_pointer(context, builder, aty, a, idx, wraparound=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
            "llvm.prefetch.p0i8")
        builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 1), ir.Constant(i32, 3),
                          ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen


@njit(cache=True, nogil=True)
def _prefetch_row(row):
    """Prefetch every 64-byte line of a float32 row for writing."""
    for c in range(0, row.size, 16):
        _prefetch_write(row, c)
    if row.size:
        _prefetch_write(row, row.size - 1)


@njit(cache=True, nogil=True)
def _row_max(row):
    """max(row) for a float32 row, NaN if it holds a NaN with the sign bit clear (compared as
    integers: the order-preserving key of a float's bits, so the loop vectorises)."""
    bits = row.view(np.int32)
    m = _I32_MIN
    for c in range(bits.size):
        i = bits[c]
        m = max(m, np.int32(i ^ ((i >> 31) & _I32_SIGN_OFF)))
    return _f32_from_bits(np.int32(m ^ ((m >> 31) & _I32_SIGN_OFF)))


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def _sum32(row):
    """sum(row) of a float32 row, accumulated in float64. The reassociation lets LLVM keep
    vector partial sums: a fixed order for this compiled loop (any thread, any alignment)."""
    t = 0.0
    for c in range(row.size):
        t += np.float64(row[c])
    return t


@njit(cache=True, nogil=True, fastmath={"reassoc"})
def _sum64(v):
    """sum(v) of a float64 vector (vector partial sums, as _sum32)."""
    t = 0.0
    for s in range(v.size):
        t += v[s]
    return t


@njit(cache=True, nogil=True, fastmath={"contract"})
def _exp_row(row, shift, out):
    """out = exp(row - shift) in float32, NaN for NaN; branch-free so that the loop vectorises
    (the polynomial's multiply-adds fused)."""
    for c in range(row.size):
        v = row[c] - shift
        x = v if v > _EXP_LO else _EXP_LO  # NaN -> _EXP_LO: keeps the int conversion defined
        x = x if x < _EXP_HI else _EXP_HI
        k = np.floor(x * _LOG2E + _HALF)
        r = x - k * _LN2_HI
        r = r - k * _LN2_LO
        y = _P0 * r + _P1
        y = y * r + _P2
        y = y * r + _P3
        y = y * r + _P4
        y = y * r + _P5
        y = y * r * r + r + _ONE
        ki = np.int32(k)  # in [-150, 128]
        k1 = ki >> 1
        y = y * _f32_from_bits(np.int32((k1 + _I32_127) << 23))
        y = y * _f32_from_bits(np.int32((ki - k1 + _I32_127) << 23))
        y = y if v > _EXP_LO else _ZERO
        y = y if v < _EXP_HI else _INF32
        out[c] = y if v == v else v


@njit(cache=True, nogil=True)
def _softmax_row(row, out, logits):
    """out = softmax(row) (``logits``) or exp(row); returns the log-sum-exp (0 for exp), NaN
    when the row holds a NaN or an infinity that leaves no finite softmax."""
    if not logits:
        _exp_row(row, _ZERO, out)
        return _ZERO
    m = _row_max(row)
    _exp_row(row, m, out)
    tot = _sum32(out)
    inv = np.float32(1.0 / tot)
    for c in range(out.size):
        out[c] *= inv
    return m + np.float32(np.log(tot))


_TINY = 1e-280  # float64: a scaled probability below this risks underflow -> exact fallback
_P_MIN = np.float32(2.0**-100)  # a softmax entry below this is rebuilt from its log in float64
_P_MAX = np.float32(3.0e38)
PREFETCH_AHEAD = 2  # the backward pass prefetches the gradient row this many steps ahead

# The vector loops of the recursions are small functions of their own over 0-based views:
# LLVM vectorises them there (an index from a window's start needs Numba's negative-index
# check, and inside the large kernel LLVM left even 0-based loops scalar).


_BITS_MIN = np.uint32(np.float32(_P_MIN).view(np.uint32))
_BITS_SPAN = np.uint32(np.float32(_P_MAX).view(np.uint32) - _BITS_MIN)


@njit(cache=True, nogil=True)
def _gather(pt, out, lab, blank):
    """pt = out at the extended labels [blank, lab[0], blank, ..., blank] in float64;
    nonzero if one lies outside [_P_MIN, _P_MAX] (NaN included: compared as bits)."""
    bits = out.view(np.uint32)
    qb = out[blank]
    bad = np.uint32(bits[blank] - _BITS_MIN) > _BITS_SPAN
    for i in range(lab.size):
        k = lab[i]
        pt[2 * i] = qb
        pt[2 * i + 1] = out[k]
        bad |= np.uint32(bits[k] - _BITS_MIN) > _BITS_SPAN
    pt[2 * lab.size] = qb
    return bad


@njit(cache=True, nogil=True)
def _scatter(out, idx, v, scale):
    """out[idx[j]] -= float32(v[j] * scale), in order (an index may repeat)."""
    for j in range(idx.size):
        out[idx[j]] -= np.float32(v[j] * scale)


@njit(cache=True, nogil=True)
def _alpha_step(cur, prev0, prev1, prev2, skip, p):
    """cur = (prev2 + prev1 + skip * prev0) * p; nonzero if a product underflowed to 0."""
    under = 0
    for j in range(cur.size):
        r = prev2[j] + prev1[j] + skip[j] * prev0[j]
        v = r * p[j]
        under |= np.int64((r > 0.0) & (v == 0.0))
        cur[j] = v
    return under


@njit(cache=True, nogil=True)
def _emit(beta, p):
    """beta *= p; nonzero if a product underflowed to 0."""
    under = 0
    for j in range(beta.size):
        v = beta[j] * p[j]
        under |= np.int64((beta[j] > 0.0) & (v == 0.0))
        beta[j] = v
    return under


@njit(cache=True, nogil=True)
def _beta_step(nxt, b0, b1, b2, skip):
    """nxt = b0 + b1 + skip * b2 (a state's successors: itself, the next, the skip)."""
    for j in range(nxt.size):
        nxt[j] = b0[j] + b1[j] + skip[j] * b2[j]


@njit(cache=True, nogil=True)
def _product(out, a, b):
    for j in range(out.size):
        out[j] = a[j] * b[j]


@njit(cache=True, nogil=True)
def _copy(dst, src):
    for j in range(dst.size):
        dst[j] = src[j]


@njit(cache=True, nogil=True)
def _fill(v, x):
    for j in range(v.size):
        v[j] = x


@njit(cache=True, nogil=True)
def _rescale(vec, inv):
    """vec *= inv; False if a positive entry falls to _TINY or below (underflow risk)."""
    bad = 0
    for s in range(vec.size):
        v = vec[s] * inv
        vec[s] = v
        bad |= np.int64((v > 0.0) & (v <= _TINY))
    return bad == 0


@njit(cache=True, nogil=True)
def _from_logs(pt, row, ext, lse):
    """pt[s] = exp(row[ext[s]] - lse - mx) in float64 with mx the largest exponent; returns
    mx, or NaN when that is not finite or a term falls below exp(-600)."""
    mx = -np.inf
    for s in range(pt.size):
        v = row[ext[s]] - lse  # float32, as in _ctc_one
        pt[s] = v
        mx = max(mx, v)
    if not np.isfinite(mx):
        return np.nan
    for s in range(pt.size):
        d = pt[s] - mx
        if not d > -600.0:
            return np.nan
        pt[s] = np.exp(d)
    return np.float64(mx)


@njit(cache=True, nogil=True)
def _ctc_one_fast(data, labels, label_length, data_length, blank, logits, want_grad, loss,
                  grad, b):
    """As ``_ctc_one``, but the softmax rows (``_softmax_row``, into ``grad[t, b]`` or a
    scratch row) are computed in the pass that runs alpha, and the recursions run in
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
            _fill(grad[t, b], _ZERO)

    # the extended labels (unsigned: indexing needs no negative-index check); skip[s + 2] is
    # 1.0 where s - 2 -> s is allowed, with two zeros on each side so windows need no clipping
    ext = np.empty(n_s, np.uint32)
    skip = np.zeros(n_s + 4, np.float64)
    for s in range(n_s):
        ext[s] = blank if s % 2 == 0 else labels[b, s // 2]
        if s >= 3 and s % 2 == 1 and ext[s] != ext[s - 2]:
            skip[s + 2] = 1.0
    lab = ext[1::2].copy()
    scratch = np.empty(0 if want_grad else n_cls, np.float32)

    # forward, one time step at a time: the softmax row, the probabilities at the extended
    # labels (float64; a row holding one outside [_P_MIN, _P_MAX] is rebuilt from the
    # log-probabilities, scaled by their maximum), then alpha. alpha[t, s + 2] holds state
    # s (two zero columns in front let s - 1 and s - 2 be read without a branch); states
    # outside the window [lo, hi] are 0.
    p = np.empty((n_t, n_s), np.float64)
    alpha = np.empty((n_t, n_s + 2), np.float64)
    log_scale = 0.0
    for t in range(n_t):
        row = data[t, b]
        out = grad[t, b] if want_grad else scratch
        lse = _softmax_row(row, out, logits)
        if not np.isfinite(lse):
            break
        pt = p[t]
        if _gather(pt, out, lab, blank):
            mx = _from_logs(pt, row, ext, lse)
            if np.isnan(mx):
                break
            log_scale += mx
        # alpha_t over its window [lo, hi] (reached from the start, able to reach the end)
        hi = min(n_s - 1, 2 * t + 1)
        lo = max(0, n_s - 2 * (n_t - t))
        cur = alpha[t]
        _fill(cur[lo:lo + 2], 0.0)  # the next step reads states lo - 2 .. hi + 2
        _fill(cur[hi + 3:hi + 5], 0.0)
        cw = cur[lo + 2:hi + 3]
        if t == 0:
            _copy(cw, pt[lo:hi + 1])
        else:
            prev = alpha[t - 1]
            if _alpha_step(cw, prev[lo:hi + 1], prev[lo + 1:hi + 2], prev[lo + 2:hi + 3],
                           skip[lo + 2:hi + 3], pt[lo:hi + 1]):
                break
        tot = _sum64(cw)
        if not tot > 0.0:
            break
        inv = 1.0 / tot
        if not _rescale(cw, inv):
            break
        log_scale -= np.log(inv)
    else:
        last = alpha[n_t - 1]
        lik = last[n_s + 1]
        if n_s > 1:
            lik += last[n_s]
        nll = -(np.log(lik) + log_scale)
        if not want_grad or _ctc_grad_fast(grad, b, blank, n_t, n_s, lab, skip, p, alpha):
            loss[b] = np.float32(nll)
            return False
    _ctc_one(data, labels, label_length, data_length, blank, logits, want_grad, loss, grad, b)
    return True


@njit(cache=True, nogil=True)
def _ctc_grad_fast(grad, b, blank, n_t, n_s, lab, skip, p, alpha):
    """The backward pass of ``_ctc_one_fast``: subtracts the occupancies from the softmax
    in grad[:n_t, b]; False if it hit an underflow (the caller then redoes the entry).

    beta' is beta without the emission at t, scaled per step; the occupancy alpha * beta'
    is normalised per step (it sums to 1 over the states at every t). beta[s] for s < n_s,
    two zeros behind it so that s + 1 and s + 2 are read without a branch."""
    beta = np.zeros(n_s + 2, np.float64)
    nxt = np.zeros(n_s + 2, np.float64)
    occ = np.empty(n_s, np.float64)
    beta[n_s - 1] = 1.0
    if n_s > 1:
        beta[n_s - 2] = 1.0
    for t in range(n_t - 1, -1, -1):
        out = grad[t, b]
        if t >= PREFETCH_AHEAD:  # written in the forward pass, mostly out of L2 by now
            _prefetch_row(grad[t - PREFETCH_AHEAD, b])
        hi = min(n_s - 1, 2 * t + 1)
        lo = max(0, n_s - 2 * (n_t - t))
        n_w = hi - lo + 1
        bw = beta[lo:hi + 1]
        ow = occ[:n_w]
        _product(ow, alpha[t, lo + 2:hi + 3], bw)
        tot = _sum64(ow)
        if not tot > 0.0:
            return False
        inv = 1.0 / tot
        # the blank (even states) takes its occupancies summed: one subtraction, not a chain
        # of dependent read-modify-writes of one element; then the labels (odd states)
        out[blank] -= np.float32(_sum64(occ[lo % 2:n_w:2]) * inv)
        odd = occ[(lo | 1) - lo:n_w:2]
        _scatter(out, lab[lo // 2:lo // 2 + odd.size], odd, inv)
        if t == 0:
            return True
        # beta'_{t-1}(s) = sum over successors k of p_t(k) beta'_t(k), s in window(t - 1)
        if _emit(bw, p[t, lo:hi + 1]):
            return False
        hi2 = min(n_s - 1, 2 * t - 1)
        lo2 = max(0, n_s - 2 * (n_t - t + 1))
        nw = nxt[lo2:hi2 + 1]
        _beta_step(nw, beta[lo2:hi2 + 1], beta[lo2 + 1:hi2 + 2], beta[lo2 + 2:hi2 + 3],
                   skip[lo2 + 4:hi2 + 5])
        tot = _sum64(nw)
        if not tot > 0.0 or not _rescale(nw, 1.0 / tot):
            return False
        _fill(bw, 0.0)
        beta, nxt = nxt, beta
    return True


@njit(cache=True, nogil=True)
def _ctc_fast_serial(data, labels, label_length, data_length, blank, logits, want_grad, loss,
                     grad, exact):
    for b in range(data.shape[1]):
        exact[b] = _ctc_one_fast(data, labels, label_length, data_length, blank, logits,
                                 want_grad, loss, grad, b)


@njit(cache=True, nogil=True, parallel=True)
def _ctc_fast_parallel(data, labels, label_length, data_length, blank, logits, want_grad,
                       loss, grad, exact, nthreads):
    n_b = data.shape[1]
    for i in prange(nthreads):
        for b in range(i, n_b, nthreads):
            exact[b] = _ctc_one_fast(data, labels, label_length, data_length, blank, logits,
                                     want_grad, loss, grad, b)


def _ctc_serial(data, labels, label_length, data_length, blank, logits, want_grad, loss, grad):
    """The serial path of ``ctc_loss_fwd_bwd`` (``grad`` an empty 3-d array when not
    ``want_grad``); returns which entries [B] took the exact log-space path."""
    exact = np.empty(data.shape[1], np.bool_)
    _ctc_fast_serial(data, labels, label_length, data_length, blank, logits, want_grad, loss,
                     grad, exact)
    return exact
