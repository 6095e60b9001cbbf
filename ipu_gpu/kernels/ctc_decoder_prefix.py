"""Prefix bookkeeping shared by the CPU CTC beam-search decoders (Graphcore's,
ctc_decoder_cpu.py, and TF's, ctc_decoder_tf_cpu.py).

Beams live in rank order in double-buffered arrays: ``prefix[buf, beam, :plen]`` the labels,
``phash`` a hash of the whole prefix and ``parent_hash`` a hash of the prefix less its last
label, so a beam's parent is found by a hash compare before a full compare.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import _cache_deps

_cache_deps.install()  # callers' cached kernels embed these helpers

_HASH_MUL = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True, nogil=True, inline="always")
def parent_beam(prefix, plen, phash, parent_hash, cur, j, nvalid):
    """The index of the beam in buffer ``cur`` whose prefix is beam ``j``'s less its last
    label, or -1 where none is (``j`` must have a label)."""
    lj = plen[cur, j]
    for i in range(nvalid):
        if plen[cur, i] != lj - 1 or phash[cur, i] != parent_hash[cur, j]:
            continue
        same = True
        for q in range(lj - 1):
            if prefix[cur, i, q] != prefix[cur, j, q]:
                same = False
                break
        if same:
            return i
    return -1


@njit(cache=True, nogil=True, inline="always")
def copy_beam(prefix, plen, phash, parent_hash, cur, nxt, r, src, sym):
    """Write beam ``src`` of buffer ``cur``, extended by label ``sym`` (none where < 0), as
    beam ``r`` of buffer ``nxt``."""
    ls = plen[cur, src]
    for q in range(ls):
        prefix[nxt, r, q] = prefix[cur, src, q]
    if sym < 0:
        plen[nxt, r] = ls
        phash[nxt, r] = phash[cur, src]
        parent_hash[nxt, r] = parent_hash[cur, src]
    else:
        prefix[nxt, r, ls] = sym
        plen[nxt, r] = ls + 1
        parent_hash[nxt, r] = phash[cur, src]
        phash[nxt, r] = phash[cur, src] * _HASH_MUL + np.uint64(sym + 1)
