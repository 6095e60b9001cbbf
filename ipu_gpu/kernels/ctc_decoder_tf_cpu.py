"""TensorFlow's CTC beam-search decoder (``tf.nn.ctc_beam_search_decoder``) on the CPU (Numba).

A step-for-step port of the semantics of TF's ``CTCBeamSearchDecoder::Step`` (the
"hibernating" prefix-trie beam search, tensorflow/core/util/ctc/ctc_beam_search.h, with the
default scorer, no label selection, blank = the last class), on arrays instead of a trie:

* each step normalises the logits itself: ``lp[s] = logit[s] - (max + log(sum(exp(logit -
  max))))``, the sum accumulated in class order in float32;
* pass 1, every beam b in rank order: ``label = logsumexp(label, parent's blank or total)``
  when b's parent prefix is a beam (the parent is "active"), then ``label += lp[last]``;
  ``blank = (total + logit[blank]) - norm``; ``total = logsumexp(blank, label)``; every beam
  goes back into the leaf set;
* pass 2, beams in rank order, each only if its old total beats the set's bottom (or the set
  is not full), symbols ascending: a child that is in the set is skipped; otherwise its
  total ``(logit - norm) + (blank if s == last else total)`` enters only when it strictly
  beats the bottom, which is evicted. A beam evicted in pass 2 whose parent then reaches it
  and fails to re-enter it is deactivated (TF resets its ``oldp``): it extends no more this
  step. This rule is why TF and Graphcore's global top-W selection (ctc_decoder_cpu.py)
  give different paths and probabilities once the beam is narrower than the prefixes.

``logsumexp`` is TF's: -inf absorbing, else ``max + log1p(exp(min - max))`` in float32.
The leaves are ranked by total for the next step; ties (which TF's heap orders arbitrarily)
go to the earlier-inserted entry.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._threads import num_threads
from .ctc_decoder_prefix import copy_beam, parent_beam

_NEG_INF = np.float32(-np.inf)

# Batch items decode in parallel from this many items and this much work (T * B * C * beam,
# about 10 ns each on a 2-core AMD EPYC): below it an OpenMP launch and a wait for a busy
# second core cost more than the split saves (ctc_decoder_cpu.py). Items are independent, so
# the bits do not depend on the split.
PARALLEL_MIN_BATCH = 4
PARALLEL_MIN_WORK = 1 << 20


def ctc_beam_search_tf(logits, lengths, beam_width, probs, out_lengths, decoded, leaves):
    """Decode float32 C-contiguous ``logits`` [T, B, C] (blank = C - 1) with int32 ``lengths``
    [B] (each in [0, T]). Writes the first P = probs.shape[1] paths by total: ``probs``
    [B, P] (TF's log_probability), ``out_lengths`` [B, P], ``decoded`` [B, P, T] (positions
    past the length set to the blank), and ``leaves`` [B] int32, the number of leaves each
    item ended with (TF refuses P above it). Outputs preallocated; deterministic."""
    t, batch, c = logits.shape
    if (batch >= PARALLEL_MIN_BATCH and t * batch * c * beam_width >= PARALLEL_MIN_WORK
            and num_threads() > 1):
        _decode_batch(logits, lengths, beam_width, probs, out_lengths, decoded, leaves)
    else:
        for b in range(batch):
            leaves[b] = _decode_one(logits, b, lengths[b], beam_width, probs[b],
                                    out_lengths[b], decoded[b])
    return probs, out_lengths, decoded, leaves


@njit(cache=True, nogil=True, parallel=True)
def _decode_batch(logits, lengths, beam_width, probs, out_lengths, decoded, leaves):
    for b in prange(logits.shape[1]):
        leaves[b] = _decode_one(logits, b, lengths[b], beam_width, probs[b], out_lengths[b],
                                decoded[b])


@njit(cache=True, nogil=True, inline="always")
def _lse(a, b):
    if a == _NEG_INF:
        return b
    if b == _NEG_INF:
        return a
    if a > b:
        return a + np.log1p(np.exp(b - a))
    return b + np.log1p(np.exp(a - b))


@njit(cache=True, nogil=True, inline="always")
def _below(v1, s1, v2, s2):
    # heap order: the lower total first; among equal totals the later-inserted first
    return v1 < v2 or (v1 == v2 and s1 > s2)


@njit(cache=True, nogil=True, inline="always")
def _swap(hv, hs, hb, hl, hsrc, hsym, a, b):
    for arr in (hv, hb, hl):
        arr[a], arr[b] = arr[b], arr[a]
    for iarr in (hs, hsrc, hsym):
        iarr[a], iarr[b] = iarr[b], iarr[a]


@njit(cache=True, nogil=True)
def _sift_down(hv, hs, hb, hl, hsrc, hsym, n, pos):
    while True:
        lo = pos
        for ch in (2 * pos + 1, 2 * pos + 2):
            if ch < n and _below(hv[ch], hs[ch], hv[lo], hs[lo]):
                lo = ch
        if lo == pos:
            return
        _swap(hv, hs, hb, hl, hsrc, hsym, pos, lo)
        pos = lo


@njit(cache=True, nogil=True)
def _push(hv, hs, hb, hl, hsrc, hsym, n, v, seq, blank, label, src, sym):
    pos = n
    hv[pos], hs[pos], hb[pos], hl[pos], hsrc[pos], hsym[pos] = v, seq, blank, label, src, sym
    while pos > 0:
        up = (pos - 1) // 2
        if not _below(hv[pos], hs[pos], hv[up], hs[up]):
            break
        _swap(hv, hs, hb, hl, hsrc, hsym, pos, up)
        pos = up
    return n + 1


@njit(cache=True, nogil=True)
def _decode_one(logits, b, length, w, probs, out_lengths, decoded):
    max_t = logits.shape[0]
    c = logits.shape[2]
    blank = c - 1
    cap = max(max_t, 1)
    # beams in rank order (oldp of the step), double-buffered prefixes
    tot = np.empty(w, np.float32)
    blk = np.empty(w, np.float32)
    lab = np.empty(w, np.float32)
    prefix = np.empty((2, w, cap), np.int32)
    plen = np.zeros((2, w), np.int32)
    phash = np.zeros((2, w), np.uint64)
    parent_hash = np.zeros((2, w), np.uint64)
    kid_t = np.full((w, c), -1, np.int32)  # step at which beam i's child by s was beam kid
    kid = np.empty((w, c), np.int32)
    in_set = np.zeros(w, np.bool_)
    dead = np.zeros(w, np.bool_)
    # the leaf set: a min-heap of entries (total, insertion, blank, label, source, symbol)
    hv = np.empty(w, np.float32)
    hs = np.empty(w, np.int64)
    hb = np.empty(w, np.float32)
    hl = np.empty(w, np.float32)
    hsrc = np.empty(w, np.int64)
    hsym = np.empty(w, np.int64)
    order = np.empty(w, np.int64)

    tot[0] = np.float32(0.0)  # the root: ln(1)
    blk[0] = np.float32(0.0)
    lab[0] = _NEG_INF
    nvalid = 1
    cur = 0
    for t in range(length):
        raw = logits[t, b]
        mx = raw[0]
        for j in range(1, c):
            if raw[j] > mx:
                mx = raw[j]
        acc = np.float32(0.0)
        for j in range(c):
            acc += np.exp(raw[j] - mx)
        norm = mx + np.log(acc)
        nxt = 1 - cur
        n = 0
        seq = 0
        # pass 1: every beam's own update (merging its parent's extension when the parent
        # is a beam); all go back into the set
        for j in range(nvalid):
            label = lab[j]
            lj = plen[cur, j]
            if lj > 0:
                last = prefix[cur, j, lj - 1]
                i = parent_beam(prefix, plen, phash, parent_hash, cur, j, nvalid)
                if i >= 0:
                    li = plen[cur, i]
                    plast = prefix[cur, i, li - 1] if li > 0 else -1
                    label = _lse(label, blk[i] if last == plast else tot[i])
                    kid_t[i, last] = t
                    kid[i, last] = j
                label = label + (raw[last] - norm)
            bl = (tot[j] + raw[blank]) - norm
            n = _push(hv, hs, hb, hl, hsrc, hsym, n, _lse(bl, label), seq, bl, label, j, -1)
            seq += 1
            in_set[j] = True
            dead[j] = False
        # pass 2: extensions, beam-major in rank order, symbols ascending
        for i in range(nvalid):
            ot = tot[i]
            if dead[i] or not (ot > _NEG_INF and (n < w or ot > hv[0])):
                continue
            li = plen[cur, i]
            last = prefix[cur, i, li - 1] if li > 0 else -1
            for s in range(c - 1):
                copy = -1
                if kid_t[i, s] == t:
                    copy = kid[i, s]
                    if in_set[copy]:
                        continue
                label = (raw[s] - norm) + (blk[i] if s == last else tot[i])
                if label > _NEG_INF and (n < w or label > hv[0]):
                    if n == w:  # evict the bottom
                        if hsym[0] < 0:
                            in_set[hsrc[0]] = False
                        n -= 1
                        hv[0], hs[0], hb[0], hl[0] = hv[n], hs[n], hb[n], hl[n]
                        hsrc[0], hsym[0] = hsrc[n], hsym[n]
                        _sift_down(hv, hs, hb, hl, hsrc, hsym, n, 0)
                    n = _push(hv, hs, hb, hl, hsrc, hsym, n, label, seq, _NEG_INF, label, i, s)
                    seq += 1
                elif copy >= 0:
                    dead[copy] = True
        # the leaves, by total descending (ties: earlier-inserted first), become the beams
        for r in range(n):
            order[r] = r
        for r in range(1, n):
            x = order[r]
            q = r
            while q > 0 and _below(hv[order[q - 1]], hs[order[q - 1]], hv[x], hs[x]):
                order[q] = order[q - 1]
                q -= 1
            order[q] = x
        for r in range(n):
            e = order[r]
            copy_beam(prefix, plen, phash, parent_hash, cur, nxt, r, hsrc[e], hsym[e])
        for r in range(n):
            e = order[r]
            tot[r] = hv[e]
            blk[r] = hb[e]
            lab[r] = hl[e]
            dead[r] = False
        nvalid = n
        cur = nxt
    for p in range(probs.shape[0]):
        row = decoded[p]
        lpth = 0
        if p < nvalid:
            lpth = plen[cur, p]
            probs[p] = tot[p]
            for q in range(lpth):
                row[q] = prefix[cur, p, q]
        else:
            probs[p] = _NEG_INF
        out_lengths[p] = lpth
        for q in range(lpth, row.shape[0]):
            row[q] = blank
    return nvalid
