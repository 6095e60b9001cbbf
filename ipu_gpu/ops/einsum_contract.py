"""``einsum`` of two or more numpy arrays as ``tf.einsum``'s CPU kernel computes it: each
two-operand contraction is transposes and reshapes around one batched matrix product, and the
product is ``ops.matmul.cpu_matmul`` (fixed tiles: bits that depend on the shapes only, never
on OpenBLAS's or Numba's thread count, where numpy's ``einsum(optimize=True)`` hands the same
contraction to OpenBLAS's threaded GEMM, or to its unblocked C loop when labels are batched).

Per operand, first: repeated labels become their diagonal and labels nothing else needs are
summed out (numpy's single-operand einsum: one C loop, no BLAS). A dimension of size 1 whose
label is longer elsewhere (a broadcast ellipsis dimension) is dropped from that operand. With
three operands or more the pairs contract in the order of numpy's greedy ``einsum_path``
(a function of the shapes). A pair sharing no summed label is a broadcast product, one rounding
per element as a GEMM with an inner length of one would give.
"""

from __future__ import annotations

import math

import numpy as np

from .matmul import cpu_matmul


def contract(terms, out, arrays):
    """``np.einsum(",".join(terms) + "->" + out, *arrays)`` for two arrays or more of one
    float dtype, ``terms`` and ``out`` explicit (no ellipsis; the caller expands it, with each
    label's size checked)."""
    sizes = {}
    for t, a in zip(terms, arrays):
        for c, d in zip(t, a.shape):
            if d != 1 or c not in sizes:
                sizes[c] = d
    ops = [_drop_broadcast(t, a, sizes) for t, a in zip(terms, arrays)]
    if len(ops) > 2:
        path = np.einsum_path(*_path_args(ops, out), optimize="greedy")[0][1:]
    else:
        path = [(0, 1)]
    for group in path:
        picked = [ops[p] for p in group]
        ops = [o for p, o in enumerate(ops) if p not in group]
        needed = set(out).union(*(t for t, _ in ops))
        if len(picked) == 1:
            term, a = picked[0]
            keep = "".join(dict.fromkeys(c for c in term if c in needed))
            ops.append((keep, _reduce(term, a, keep)))
            continue
        while len(picked) > 1:
            rest = needed.union(*(t for t, _ in picked[2:]))
            picked = [_pair(picked[0], picked[1], rest)] + picked[2:]
        ops.append(picked[0])
    term, a = ops[0]
    # every output label is some operand's (one of size 1 everywhere is never dropped)
    return np.transpose(a, [term.index(c) for c in out])


def _drop_broadcast(term, a, sizes):
    """(term, a) without the dimensions of size 1 whose label is longer elsewhere."""
    drop = [p for p, (c, d) in enumerate(zip(term, a.shape)) if d == 1 and sizes[c] != 1]
    if not drop:
        return term, a
    keep = "".join(c for p, c in enumerate(term) if p not in drop)
    return keep, np.squeeze(a, axis=tuple(drop))


def _path_args(ops, out):
    """einsum_path's arguments: the equation and zero-stride stand-ins of the operands'
    shapes (it reads nothing else)."""
    eq = ",".join(t for t, _ in ops) + "->" + out
    return [eq] + [np.broadcast_to(np.zeros((), a.dtype), a.shape) for _, a in ops]


def _reduce(term, a, keep):
    """``a`` (labels ``term``) as the labels ``keep`` (in term's order, each once): its
    diagonals where ``term`` repeats a label, summed over the labels not kept."""
    if term == keep:
        return a
    return np.einsum(f"{term}->{keep}", a)


def _pair(x, y, needed):
    """(term, array) of the contraction of (term, array) pairs ``x`` and ``y`` over the
    labels they share that ``needed`` does not hold."""
    (tx, a), (ty, b) = x, y
    kx = "".join(dict.fromkeys(c for c in tx if c in needed or c in ty))
    ky = "".join(dict.fromkeys(c for c in ty if c in needed or c in tx))
    a, b = _reduce(tx, a, kx), _reduce(ty, b, ky)
    batch = "".join(c for c in kx if c in ky and c in needed)
    inner = "".join(c for c in kx if c in ky and c not in needed)
    left = "".join(c for c in kx if c not in ky)
    right = "".join(c for c in ky if c not in kx)
    dims = dict(zip(kx, a.shape)) | dict(zip(ky, b.shape))
    nb, nm, nk, nn = (math.prod(dims[c] for c in s) for s in (batch, left, inner, right))
    a3 = np.transpose(a, [kx.index(c) for c in batch + left + inner]).reshape(nb, nm, nk)
    b3 = np.transpose(b, [ky.index(c) for c in batch + inner + right]).reshape(nb, nk, nn)
    if not inner:
        c3 = a3 * b3.reshape(nb, 1, nn)  # one product per element
    elif nb == 1:
        c3 = cpu_matmul(a3[0], b3[0])
    else:
        c3 = cpu_matmul(a3, b3)
    term = batch + left + right
    return term, c3.reshape([dims[c] for c in term])
