"""CTC prefix beam-search decoding on the CPU (Numba), Graphcore's algorithm.

The prefix beam search (Graves 2012, ch. 7; Hannun et al. 2014) as PopLibs runs it
(``lib/popnn/CTCInference.cpp``; tf_ipu_semantics.md section 2.3). Per time step:

* copy: every beam keeps its prefix: pb' = pTotal + lp[blank], pnb' = pnb + lp[last];
* extend: every beam and non-blank symbol s: pnb' = (pb if s == last else pTotal) + lp[s],
  pb' = log-zero;
* merge: an extend whose prefix equals a copy's prefix is log-added into the copy's pnb
  and disabled;
* select: candidates in the order [copies of beams 0..W-1] ++ [extends, symbol-major then
  beam], ranked by pTotal descending, ties won by the earlier candidate (stable); the top
  W become beams 0..W-1 in rank order.

Log space in float32 with Graphcore's finite log-zero (-65504). Beams that no candidate
reaches ("dummy" beams) are tracked as invalid instead of as log-zero sequences; they
report length 0 and probability -65504. Extends that cannot beat the current W-th best
candidate are skipped without being formed (the result is unchanged: a candidate enters
only by beating the W-th best).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._threads import num_threads
from .ctc_decoder_prefix import copy_beam, parent_beam

LOG_ZERO = np.float32(-65504.0)  # Graphcore's probabilityZero (min half)
_NEG_INF = np.float32(-np.inf)
_NEAR_LOG_ZERO = np.float32(-65504.0 + 128.0)

# Below this much work (batch items, and T * B * C) the serial loop is used: an OpenMP launch
# costs more than it saves, its spinning threads stall BLAS calls that follow
# (indexing_cpu.py), and on a shared 2-core box a parallel region waits for the slower
# core (T=200, B=16, C=40, beam 10: 2.3 ms serial vs 8.0 ms parallel with the other core
# busy).
PARALLEL_MIN_BATCH = 4
PARALLEL_MIN_WORK = 1 << 21


def ctc_beam_search(log_probs, lengths, beam_width, blank, probs, out_lengths, decoded):
    """Beam search over float32 C-contiguous ``log_probs`` [T, B, C] (log-softmaxed) with
    int32 ``lengths`` [B] (each in [0, T]) and blank class ``blank`` in [0, C). Writes the
    first P = probs.shape[1] beams: ``probs`` [B, P] float32 (log P, <= 0; -65504 for
    dummy beams), ``out_lengths`` [B, P] int32, ``decoded`` [B, P, T] int32 (positions past
    the length set to ``blank``). All outputs preallocated, fully overwritten.
    Deterministic."""
    if (log_probs.shape[1] >= PARALLEL_MIN_BATCH and log_probs.size >= PARALLEL_MIN_WORK
            and num_threads() > 1):
        _beam_search_batch(log_probs, lengths, beam_width, blank, probs, out_lengths,
                           decoded)
    else:
        _beam_search_batch_serial(log_probs, lengths, beam_width, blank, probs, out_lengths,
                                  decoded)
    return probs, out_lengths, decoded


@njit(cache=True, nogil=True, parallel=True)
def _beam_search_batch(log_probs, lengths, beam_width, blank, probs, out_lengths, decoded):
    for b in prange(log_probs.shape[1]):
        _beam_search_one(log_probs, b, lengths[b], beam_width, blank, probs[b],
                         out_lengths[b], decoded[b])


@njit(cache=True, nogil=True)
def _beam_search_batch_serial(log_probs, lengths, beam_width, blank, probs, out_lengths,
                              decoded):
    for b in range(log_probs.shape[1]):
        _beam_search_one(log_probs, b, lengths[b], beam_width, blank, probs[b],
                         out_lengths[b], decoded[b])


@njit(cache=True, nogil=True, inline="always")
def _logadd(a, b):
    # Graphcore's logadd: max + log(1 + exp(min - max)); finite sentinel, no special case.
    if a < b:
        a, b = b, a
    return a + np.log1p(np.exp(b - a))


@njit(cache=True, nogil=True, inline="always")
def _beats(v, idx, wv, widx):
    # Stable rank: a larger pTotal wins; on a tie the earlier candidate wins.
    return v > wv or (v == wv and idx < widx)


@njit(cache=True, nogil=True)
def _insert(sel_val, sel_idx, sel_pb, sel_pnb, n, w, v, idx, pb, pnb):
    """Insert a candidate into the ranked list of n (<= w) entries; returns the new n."""
    if n == w:
        if not _beats(v, idx, sel_val[w - 1], sel_idx[w - 1]):
            return n
        pos = w - 1
    else:
        pos = n
        n += 1
    while pos > 0 and _beats(v, idx, sel_val[pos - 1], sel_idx[pos - 1]):
        sel_val[pos] = sel_val[pos - 1]
        sel_idx[pos] = sel_idx[pos - 1]
        sel_pb[pos] = sel_pb[pos - 1]
        sel_pnb[pos] = sel_pnb[pos - 1]
        pos -= 1
    sel_val[pos] = v
    sel_idx[pos] = idx
    sel_pb[pos] = pb
    sel_pnb[pos] = pnb
    return n


@njit(cache=True, nogil=True)
def _beam_search_one(log_probs, b, length, w, blank, probs, out_lengths, decoded):
    max_t = log_probs.shape[0]
    c = log_probs.shape[2]
    cap = max(max_t, 1)
    # beam state (rank order), double-buffered prefixes
    pb = np.empty(w, np.float32)
    pnb = np.empty(w, np.float32)
    ptot = np.empty(w, np.float32)
    prefix = np.empty((2, w, cap), np.int32)
    plen = np.zeros((2, w), np.int32)
    phash = np.zeros((2, w), np.uint64)  # hash of the whole prefix
    parent_hash = np.zeros((2, w), np.uint64)  # hash of the prefix less its last symbol
    # candidates
    cpb = np.empty(w, np.float32)
    cpnb = np.empty(w, np.float32)
    merged = np.full((w, c), -1, np.int32)  # time step at which extend (i, s) was merged
    sel_val = np.empty(w, np.float32)
    sel_idx = np.empty(w, np.int64)
    sel_pb = np.empty(w, np.float32)
    sel_pnb = np.empty(w, np.float32)

    pb[0] = np.float32(0.0)
    pnb[0] = LOG_ZERO
    ptot[0] = _logadd(pb[0], pnb[0])
    nvalid = 1
    cur = 0
    for t in range(length):
        lp = log_probs[t, b]
        lp_blank = lp[blank]
        nxt = 1 - cur
        # copy candidates
        for j in range(nvalid):
            cpb[j] = ptot[j] + lp_blank
            if plen[cur, j] > 0:
                cpnb[j] = pnb[j] + lp[prefix[cur, j, plen[cur, j] - 1]]
            else:
                cpnb[j] = LOG_ZERO
        # merge: the copy of beam j absorbs the extend of its parent beam i (if in the beam)
        for j in range(nvalid):
            lj = plen[cur, j]
            if lj == 0:
                continue
            s = prefix[cur, j, lj - 1]
            i = parent_beam(prefix, plen, phash, parent_hash, cur, j, nvalid)
            if i >= 0:
                li = plen[cur, i]
                if li > 0 and prefix[cur, i, li - 1] == s:
                    ext = pb[i] + lp[s]
                else:
                    ext = ptot[i] + lp[s]
                cpnb[j] = _logadd(cpnb[j], ext)
                merged[i, s] = t
        # select: copies first (indices 0..w-1), then extends (w + s*w + i)
        n = 0
        best_base = _NEG_INF
        for j in range(nvalid):
            n = _insert(sel_val, sel_idx, sel_pb, sel_pnb, n, w, _logadd(cpb[j], cpnb[j]), j,
                        cpb[j], cpnb[j])
            if ptot[j] > best_base:
                best_base = ptot[j]
        for s in range(c):
            if s == blank:
                continue
            lps = lp[s]
            # pnb' <= best_base + lps for every beam; pTotal' == pnb' unless near log-zero
            if (n == w and best_base + lps < sel_val[w - 1]
                    and sel_val[w - 1] > LOG_ZERO + np.float32(16.0)):
                continue
            for i in range(nvalid):
                if merged[i, s] == t:
                    continue
                li = plen[cur, i]
                if li > 0 and prefix[cur, i, li - 1] == s:
                    e = pb[i] + lps
                else:
                    e = ptot[i] + lps
                # pTotal' = logadd(log-zero, e) == e unless e is near log-zero (exp underflows)
                v = e if e > _NEAR_LOG_ZERO else _logadd(LOG_ZERO, e)
                if n == w and not _beats(v, w + s * w + i, sel_val[w - 1], sel_idx[w - 1]):
                    continue
                n = _insert(sel_val, sel_idx, sel_pb, sel_pnb, n, w, v, w + s * w + i,
                            LOG_ZERO, e)
        # the ranked candidates become the new beams
        for r in range(n):
            idx = sel_idx[r]
            if idx < w:
                src = idx
                sym = -1
            else:
                src = (idx - w) % w
                sym = (idx - w) // w
            copy_beam(prefix, plen, phash, parent_hash, cur, nxt, r, src, sym)
            pb[r] = sel_pb[r]
            pnb[r] = sel_pnb[r]
            ptot[r] = sel_val[r]
        nvalid = n
        cur = nxt
    # outputs: the first P beams in rank order
    for p in range(probs.shape[0]):
        row = decoded[p]
        if p < nvalid:
            lpth = plen[cur, p]
            probs[p] = ptot[p]
            out_lengths[p] = lpth
            for q in range(lpth):
                row[q] = prefix[cur, p, q]
        else:
            lpth = 0
            probs[p] = LOG_ZERO
            out_lengths[p] = 0
        for q in range(lpth, row.shape[0]):
            row[q] = blank
