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
per element as a GEMM with an inner length of one would give. The plan (every reduction,
transpose and product shape) is computed once per equation and shapes.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .matmul import cpu_matmul


def contract(terms, out, arrays):
    """``np.einsum(",".join(terms) + "->" + out, *arrays)`` for two arrays or more of one
    dtype, ``terms`` and ``out`` explicit (no ellipsis; the caller expands it, with each
    label's size checked)."""
    drops, steps, perm = _plan(tuple(terms), out, tuple(a.shape for a in arrays))
    ops = [a if d is None else a.reshape(d) for a, d in zip(arrays, drops)]
    for i, j, reduce_i, reduce_j, spec_i, spec_j, shape in steps:
        if j is None:  # one operand: diagonals and sums only
            result = np.einsum(reduce_i, ops[i])
        else:
            a = ops[i] if reduce_i is None else np.einsum(reduce_i, ops[i])
            b = ops[j] if reduce_j is None else np.einsum(reduce_j, ops[j])
            a3, b3 = _matrices(a, spec_i), _matrices(b, spec_j)
            if spec_i[3]:
                c3 = a3 * b3  # no summed label: one product per element
            elif a3.shape[0] == 1:
                c3 = cpu_matmul(a3[0], b3[0])
            else:
                c3 = cpu_matmul(a3, b3)
            result = c3.reshape(shape)
        ops = [o for p, o in enumerate(ops) if p != i and p != j] + [result]
    return np.transpose(ops[0], perm)


def _matrices(a, spec):
    """``a`` as its stack of matrices (``spec`` from ``_matrix_spec``)."""
    order, shape, view, _ = spec
    if view and a.flags.c_contiguous:
        return a.reshape(shape[0], shape[2], shape[1]).swapaxes(1, 2)
    return np.transpose(a, order).reshape(shape)


def _matrix_spec(term, batch, rows, cols, dims, outer):
    """How an operand (labels ``term``) becomes a stack of [rows, cols] matrices over
    ``batch``: (axis order, stack shape, whether a C-contiguous operand holds them transposed
    already: a view the GEMM takes as it is, whether no label is summed)."""
    nb, nr, nc = (math.prod(dims[c] for c in s) for s in (batch, rows, cols))
    return (tuple(term.index(c) for c in batch + rows + cols), (nb, nr, nc),
            term == batch + cols + rows, outer)


@functools.lru_cache(maxsize=1024)
def _plan(terms, out, shapes):
    """(per operand: the shape without its broadcast size-1 dimensions or None, the steps,
    the output's axis order). A step (i, j, reduce_i, reduce_j, spec_i, spec_j, shape)
    contracts operands i and j (j None: reduces i by the einsum ``reduce_i``) into one of
    ``shape``, appended after the others."""
    sizes = {}
    for t, shape in zip(terms, shapes):
        for c, d in zip(t, shape):
            if d != 1 or c not in sizes:
                sizes[c] = d
    drops, ops = [], []
    for t, shape in zip(terms, shapes):
        kept = [(c, d) for c, d in zip(t, shape) if d != 1 or sizes[c] == 1]
        drops.append(None if len(kept) == len(t) else tuple(d for _, d in kept))
        ops.append("".join(c for c, _ in kept))
    if len(ops) > 2:
        stand_ins = [np.broadcast_to(np.zeros(()), [sizes[c] for c in t]) for t in ops]
        path = np.einsum_path(",".join(ops) + "->" + out, *stand_ins, optimize="greedy")[0][1:]
    else:
        path = [(0, 1)]
    steps = []
    for group in path:
        group = list(group)
        while group:
            rest = [t for p, t in enumerate(ops) if p not in group[:2]]
            needed = set(out).union(*rest)
            if len(group) == 1:
                t = ops[group[0]]
                keep = "".join(dict.fromkeys(c for c in t if c in needed))
                steps.append((group[0], None, f"{t}->{keep}", None, None, None, None))
                term = keep
            else:
                step, term = _pair_step(ops, group[0], group[1], needed, sizes)
                steps.append(step)
            ops = [t for p, t in enumerate(ops) if p not in group[:2]] + [term]
            # the rest of a group of three or more: folded into the new last operand
            group = [p - sum(q < p for q in group[:2]) for p in group[2:]]
            group = group + [len(ops) - 1] if group else []
    term = ops[0]
    return tuple(drops), tuple(steps), tuple(term.index(c) for c in out)


def _pair_step(ops, i, j, needed, sizes):
    """The step contracting operands i and j over the labels they share that ``needed``
    does not hold, and its result's labels."""
    tx, ty = ops[i], ops[j]
    kx = "".join(dict.fromkeys(c for c in tx if c in needed or c in ty))
    ky = "".join(dict.fromkeys(c for c in ty if c in needed or c in tx))
    batch = "".join(c for c in kx if c in ky and c in needed)
    inner = "".join(c for c in kx if c in ky and c not in needed)
    left = "".join(c for c in kx if c not in ky)
    right = "".join(c for c in ky if c not in kx)
    term = batch + left + right
    outer = not inner
    step = (i, j, None if kx == tx else f"{tx}->{kx}", None if ky == ty else f"{ty}->{ky}",
            _matrix_spec(kx, batch, left, inner, sizes, outer),
            _matrix_spec(ky, batch, inner, right, sizes, outer),
            tuple(sizes[c] for c in term))
    return step, term
