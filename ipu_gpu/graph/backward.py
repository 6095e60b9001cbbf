"""Recorded backward plans for a graph's ``gradients`` node.

A graph evaluation that replays a plan (``plan.py``) records the same ops on its tape in the
same order every time, wired the same way. ``gradient`` differentiates such a tape with a
backward plan compiled from the first one: which records can pass a gradient on, the
``needed`` flags of their rules, which input gradients are kept and cast, and where they
accumulate, all decided once; each call then only calls the ops' backward rules (the very
rules, in the very order, with the very sums ``GradientTape.gradient`` uses) on this tape's
residuals.

A plan is made only after its first result was checked equal, bit for bit, to
``GradientTape.gradient``'s on the same tape, and it is used only while the tape's
signature (ops, wiring, watched sources, input dtypes) is the one it was made for; every
other case (nested tapes, sparse gradients, seeds, a tape that changed) is the tape's.
This reads the tape's records (``core/tape.Record``), one layer down.
"""

from __future__ import annotations

import numpy as np

from ..core import tape as tape_module
from ..core.indexed_slices import IndexedSlices
from ..core.tensor import Tensor, wrap

__all__ = ["gradient"]

_UNUSABLE = object()  # a signature whose plan did not reproduce the tape
_MAX_PLANS = 8


def gradient(tape, ys: list, xs: list, seeds, plans: dict, replay=None) -> list:
    """``tape.gradient(ys, xs, output_gradients=seeds)`` (a list, None where unconnected),
    by a backward plan kept in ``plans`` when the tape's signature has one. ``replay``: a
    key naming the forward plans (``plan.Plan``) whose replay alone recorded ``tape``, and the
    kinds of the values they were given (``program._replay_key``, ``session.
    _feed_replay_key``): every replay under that key
    records the same ops wired the same way, so the signature computed at its first use is
    kept under it, not computed again."""
    if (seeds is not None or tape_module.recording_tapes() != [tape]
            or not tape._persistent):
        return tape.gradient(ys, xs, output_gradients=seeds)
    if replay is not None:
        key = plans.get(replay)
        if key is None:
            key = _signature(tape, ys, xs)
            if key is not None:
                _bounded(plans)[replay] = key
    else:
        key = _signature(tape, ys, xs)
    plan = plans.get(key) if key is not None else None
    if plan is not None and plan is not _UNUSABLE:
        out = plan.run(tape._records, ys, xs)
        if out is not None:
            return out
    want = tape.gradient(ys, xs)
    if plan is None and key is not None:
        made = _Backward(tape, ys, xs)
        got = made.run(tape._records, ys, xs)
        _bounded(plans)[key] = made if got is not None and _same(got, want) else _UNUSABLE
    return want


def _bounded(plans: dict) -> dict:
    """``plans``, emptied when full (backward plans by signature, signatures by replayed
    forward plan)."""
    if len(plans) >= _MAX_PLANS:
        plans.clear()
    return plans


def _signature(tape, ys, xs):
    """The ops, the wiring (each id numbered by first appearance), the sources' watched
    flags and the records' input dtypes; None when a target or source is not a Tensor."""
    numbers: dict = {}
    pattern = []
    for t in (*ys, *xs):
        if not isinstance(t, Tensor):
            return None
        pattern.append(numbers.setdefault(t._id, len(numbers)))
    ops = []
    number, add, add_op, add_ops = numbers.setdefault, pattern.append, ops.append, ops.extend
    for rec in tape._records:
        add_op(rec.op)
        for i in rec.in_ids:
            add(number(i, len(numbers)))
        add(-1)
        for i in rec.out_ids:
            add(number(i, len(numbers)))
        add(-2)
        add_ops(rec.in_dtypes)
    watched = tape._watched
    return (tuple(ops), tuple(pattern), tuple(x._id in watched for x in xs))


def _same(got: list, want: list) -> bool:
    for a, b in zip(got, want):
        if (a is None) != (b is None):
            return False
        if a is None:
            continue
        if not isinstance(b, Tensor) or type(a) is not type(b):
            return False
        va, vb = a._value, b._value
        if (type(va) is not type(vb) or va.dtype != vb.dtype or va.shape != vb.shape
                or not np.array_equal(np.asarray(va), np.asarray(vb))):
            return False
    return len(got) == len(want)


class _Backward:
    """The backward pass of one tape signature, by slots (ids numbered as the signature
    numbers them: targets, sources, then each record's inputs and outputs)."""

    def __init__(self, tape, ys, xs):
        numbers: dict = {}
        for t in (*ys, *xs):
            numbers.setdefault(t._id, len(numbers))
        records = tape._records
        for rec in records:
            for i in (*rec.in_ids, *rec.out_ids):
                numbers.setdefault(i, len(numbers))
        self.n_slots = len(numbers)
        self.target_slots = [numbers[t._id] for t in ys]
        watched = tape._watched
        reach = {x._id for x in xs if x._id in watched}
        for rec in records:
            for i in rec.in_ids:
                if i in reach:
                    reach.update(rec.out_ids)
                    break
        self.source_slots = [numbers[x._id] for x in xs]
        steps = []
        for index in range(len(records) - 1, -1, -1):
            rec = records[index]
            if reach.isdisjoint(rec.in_ids):
                continue
            needed = None
            if rec.op.partial_backward:  # the rule is told which input gradients are kept
                needed = tuple(i in reach and d.kind == "f"
                               for i, d in zip(rec.in_ids, rec.in_dtypes))
            keep = [(j, numbers[i], d) for j, (i, d) in enumerate(zip(rec.in_ids,
                                                                       rec.in_dtypes))
                    if d.kind == "f" and i in reach]
            steps.append((index, [numbers[o] for o in rec.out_ids], rec.op, needed, keep))
        self.steps = steps

    def run(self, records, ys, xs):
        """The gradients (Tensors, None where unconnected), or None when this tape takes a
        path the plan does not cover (a sparse gradient)."""
        grads = [None] * self.n_slots
        for slot, t in zip(self.target_slots, ys):
            g = tape_module._ones_like(t._value)  # the tape's seed, made as the tape makes it
            old = grads[slot]
            grads[slot] = g if old is None else old + g
        for index, out_slots, op, needed, keep in self.steps:
            rec = records[index]
            if len(out_slots) == 1:
                c = grads[out_slots[0]]
                if c is None:
                    continue
                cots = [c]
            else:
                cots = [grads[s] for s in out_slots]
                if all(c is None for c in cots):
                    continue
                for j, c in enumerate(cots):
                    if c is None:
                        shape, dtype = rec.out_meta[j]
                        cots[j] = rec.xp.zeros(shape, dtype)
            for c in cots:
                if type(c) is IndexedSlices:
                    return None
            static = rec.static if needed is None else {**rec.static, "needed": needed}
            in_grads = op.backward(op.kernels(rec.xp), rec.xp, rec.residuals, *cots, **static)
            n = len(in_grads)
            for j, slot, dtype in keep:
                g = in_grads[j] if j < n else None
                if g is None:
                    continue
                if type(g) is IndexedSlices:
                    return None
                if g.dtype != dtype:
                    g = g.astype(dtype)
                old = grads[slot]
                grads[slot] = g if old is None else old + g
        out = []
        for slot in self.source_slots:
            g = None if slot is None else grads[slot]
            if type(g) is np.ndarray:
                g = wrap(g)
            elif g is not None and not isinstance(g, Tensor):
                g = wrap(np.asarray(g) if isinstance(g, np.generic) else g)
            out.append(g)
        return out

