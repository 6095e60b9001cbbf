"""GradientTape: records differentiable ops and plays them back in reverse.

A record keeps what an op's ``backward`` needs (its residuals and static
arguments) and the node ids of its inputs and outputs; nodes are Tensor ids,
and every read of a Variable carries the variable's id, so gradients with
respect to a variable sum over all its reads.

When other tapes are recording while ``gradient`` runs (nested tapes), the
backward rules run on Tensors through the ops layer's array namespace, so the
outer tapes record the gradient computation and can differentiate it again.

Sparse gradients (``IndexedSlices``, from row gathers) travel as TF's do: two meeting
are concatenated, one meeting a dense gradient is densified into it, ``identity`` and
``cast`` pass them through, and any other op's backward gets the dense value.
"""

from __future__ import annotations

import contextlib
import enum
import operator
import sys
import threading

import numpy as np

from . import backend, nest
from . import tensor as _tensor_module
from .indexed_slices import IndexedSlices, densify
from .tensor import Tensor, Variable, wrap


class UnconnectedGradients(enum.Enum):
    """What ``gradient`` returns for a source the target does not depend on."""

    NONE = "none"
    ZERO = "zero"


class _Local(threading.local):
    def __init__(self):
        self.tapes: list[GradientTape] = []  # the tapes recording now, innermost last


_local = _Local()
_tensor_module._tape_local = _local  # a Tensor times a number stays pending only off tapes
_tensor_ops = None  # array-API namespace over Tensors, installed by ipu_gpu.ops


def set_tensor_namespace(namespace) -> None:
    """Install the Tensor-level namespace that nested-tape gradients run backward rules on."""
    global _tensor_ops
    _tensor_ops = namespace


# op -> a second backward rule, ``rule(k, xp, residuals, g, **static)``, that may write its
# input gradient into its cotangent ``g``; the tape uses it when ``g`` is a numpy array that
# nothing but the tape holds (relu: TF's ReluGrad in place, no full-size temporary).
_OWNED_BACKWARD: dict = {}
_NO_MODULE = object()  # an op's kernel module not looked up yet (``Op._kernel_modules``)
_OWNED_REFS = 2  # sys.getrefcount of such a cotangent in _backprop: its local and the call


def set_owned_backward(op, rule) -> None:
    """Give ``op`` a backward rule that may overwrite its (single, dense) cotangent."""
    _OWNED_BACKWARD[op] = rule


# (consumer op, producer op) -> a rule that plays back two adjacent records at once, the
# producer's single output feeding only the consumer (relu after bias_add: the relu mask and
# the bias's column sums in one pass). ``rule(xp, producer, consumer, g, owned, needed)``
# gets the consumer's cotangent ``g`` (``owned``: the tape alone holds it, so it may be
# overwritten) and gives the producer's input gradients, or None for the records one by one.
_PAIR_BACKWARD: dict = {}
_PAIR_CONSUMERS: set = set()  # the consumer ops of _PAIR_BACKWARD's pairs


def set_pair_backward(consumer, producer, rule) -> None:
    """Let ``rule`` differentiate ``consumer(producer(...))`` in one step (see above)."""
    _PAIR_BACKWARD[(consumer, producer)] = rule
    _PAIR_CONSUMERS.add(consumer)


def recording_tapes() -> list:
    """The tapes recording in this thread (an empty list when none)."""
    return _local.tapes


def variable_accessed(var: Variable) -> None:
    """Let recording tapes watch a trainable variable that was just read."""
    if var._trainable:
        for tp in _local.tapes:
            if tp._watch_accessed and var._id not in tp._watched:
                tp._watched.add(var._id)
                tp._variables.append(var)


_FIELDS = ("op", "in_ids", "out_ids", "in_dtypes", "out_meta", "residuals", "static", "xp",
           "arrays")


class Record(tuple):
    """One differentiable op call as a tape keeps it: a tuple of ``_FIELDS``, read by name
    (made with one tuple build; the tape makes one per op call). ``arrays``: for ops
    differentiable twice, the id()s of the input and output arrays, so second derivatives see
    a residual that is one of them as that node's Tensor (all were alive together when
    recorded, and residuals live on: an id matches only its own array); only the residuals
    stay alive, not every input and output. Else None."""

    __slots__ = ()

    def __new__(cls, op, in_ids, out_ids, in_dtypes, out_meta, residuals, static, xp, arrays):
        return _tuple_new(cls, (op, in_ids, out_ids, in_dtypes, out_meta, residuals, static, xp,
                                arrays))

    __eq__ = object.__eq__  # records compare (and hash) by identity, never by their arrays
    __ne__ = object.__ne__
    __hash__ = object.__hash__


for _j, _name in enumerate(_FIELDS):
    setattr(Record, _name, property(operator.itemgetter(_j)))
del _j, _name
_tuple_new = tuple.__new__


def record(op, in_ids, in_arrays, out_ids, out_arrays, residuals, static, xp) -> None:
    """Append the op to every recording tape that watches one of its inputs."""
    rec = None
    for tp in _local.tapes:
        watched = tp._watched
        if watched.isdisjoint(in_ids):
            continue
        if rec is None:
            rec = Record(op, in_ids, out_ids, [a.dtype for a in in_arrays],
                         [(a.shape, a.dtype) for a in out_arrays], residuals, static, xp,
                         (tuple(map(id, in_arrays)), tuple(map(id, out_arrays)))
                         if op.twice_differentiable else None)
        tp._records.append(rec)
        watched.update(out_ids)


def record_one(op, in_ids, in_arrays, out_id, out_array, residuals, static, xp) -> None:
    """``record`` of an op with one output (most ops). Its record keeps no ``out_meta``:
    a single output with no gradient is skipped, never given zeros."""
    rec = None
    for tp in _local.tapes:
        watched = tp._watched
        if watched.isdisjoint(in_ids):
            continue
        if rec is None:
            rec = _tuple_new(Record, (
                op, in_ids, (out_id,), list(map(_dtype_of, in_arrays)), None, residuals, static,
                xp, (tuple(map(id, in_arrays)), (id(out_array),))
                if op.twice_differentiable else None))
        tp._records.append(rec)
        watched.add(out_id)


_dtype_of = operator.attrgetter("dtype")
_TENSOR_TYPES = frozenset({Tensor, Variable})
_ndarray = np.ndarray
_new_tensor = object.__new__
_next_id = _tensor_module._next_id
_id_of = operator.attrgetter("_id")


def _is_float(dtype) -> bool:
    return dtype.kind == "f"


# Ops whose gradient hands a sparse cotangent on as it is (``cast``: in the input's dtype,
# which the tape's cast of every gradient gives), as TF's Identity and Cast gradients do.
_SPARSE_PASSTHROUGH = frozenset({"identity", "cast"})


def _dense(g, nested: bool):
    """``g`` with an IndexedSlices replaced by its dense value (an array unless ``nested``)."""
    if type(g) is not IndexedSlices:
        return g
    t = densify(g, arg="gradient")
    return t if nested else t._value


def _add_grads(old, new, nested: bool):
    """Two gradients of one node summed as TF aggregates them: IndexedSlices concatenated
    (the earlier-recorded contribution, which arrives second, first), else dense sums."""
    if type(old) is IndexedSlices and type(new) is IndexedSlices:
        idx = [new.indices, old.indices]
        if idx[0].dtype != idx[1].dtype:
            idx = [_tensor_ops.astype(i, np.int64) for i in idx]
        if nested:
            values = _tensor_ops.concatenate([new.values, old.values])
            indices = _tensor_ops.concatenate(idx)
        else:
            xp = backend.xp_of(new.values._value)
            values = xp.concatenate([new.values._value, old.values._value])
            indices = xp.concatenate([i._value for i in idx])
        return IndexedSlices(values, indices, old.dense_shape)
    return _dense(old, nested) + _dense(new, nested)


class GradientTape:
    """Records operations for automatic differentiation (``tf.GradientTape``).

    Args:
      persistent: if True, ``gradient`` may be called more than once.
      watch_accessed_variables: if True, trainable variables read while the
        tape is recording are watched automatically.
    """

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True):
        self._persistent = bool(persistent)
        self._watch_accessed = bool(watch_accessed_variables)
        self._records: list | None = []
        self._watched: set = set()
        self._variables: list = []
        self._recording = False

    # ---- recording --------------------------------------------------------
    def __enter__(self):
        if self._records is None:
            raise RuntimeError("GradientTape: this non-persistent tape has been used; "
                               "make a new one")
        self._push()
        return self

    def __exit__(self, *exc):
        if self._recording:
            self._pop()
        return False

    def _push(self):
        _local.tapes.append(self)
        self._recording = True

    def _pop(self):
        _local.tapes.remove(self)
        self._recording = False

    def watch(self, tensor) -> None:
        """Watch a Tensor/Variable (or a nested structure of them) so ops on it are recorded."""
        for leaf in nest.flatten(tensor):
            if not isinstance(leaf, Tensor):
                raise ValueError(f"GradientTape.watch: tensor must be a Tensor or Variable, got "
                                 f"{type(leaf).__name__}")
            if leaf._id not in self._watched:
                self._watched.add(leaf._id)
                if isinstance(leaf, Variable):
                    self._variables.append(leaf)

    def watched_variables(self) -> tuple:
        """The variables this tape watches, in the order they were first watched."""
        return tuple(self._variables)

    @contextlib.contextmanager
    def stop_recording(self):
        """A context in which this tape records nothing."""
        if not self._recording:
            raise ValueError("GradientTape.stop_recording: the tape is not recording")
        self._pop()
        try:
            yield
        finally:
            self._push()

    def reset(self) -> None:
        """Forget everything recorded and watched."""
        self._records = []
        self._watched = set()
        self._variables = []

    # ---- differentiation --------------------------------------------------
    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=UnconnectedGradients.NONE):
        """Gradients of ``target`` (summed, if it is not a scalar or is a list) with respect
        to ``sources``, in the structure of ``sources``; None (or zeros, with
        ``unconnected_gradients='zero'``) for sources the target does not depend on and for
        sources the tape does not watch (as TF: a frozen variable, an unwatched constant).
        ``output_gradients`` are the cotangents of ``target``, one per target.
        """
        if self._records is None:
            raise RuntimeError("A non-persistent GradientTape can only be used to compute one "
                               "set of gradients (or jacobians)")
        unconnected = (unconnected_gradients
                       if unconnected_gradients is UnconnectedGradients.NONE
                       else UnconnectedGradients(getattr(unconnected_gradients, "value",
                                                         unconnected_gradients)))
        ts = type(sources)
        flat = ts is list or ts is tuple
        if flat:
            for x in sources:
                if type(x) not in _TENSOR_TYPES:
                    flat = False
                    break
        flat_sources = list(sources) if flat else _leaves(sources)
        for s in () if flat else flat_sources:
            if not isinstance(s, Tensor):
                raise ValueError(f"GradientTape.gradient: sources must be Tensors or Variables, "
                                 f"got {type(s).__name__}")
        flat_targets = _leaves(target)
        for t in flat_targets:
            if not isinstance(t, Tensor):
                raise ValueError(f"GradientTape.gradient: target must be Tensors, got "
                                 f"{type(t).__name__}")
        if output_gradients is None:
            flat_seeds = [None] * len(flat_targets)
        else:
            flat_seeds = nest.flatten(output_gradients)
            if len(flat_seeds) != len(flat_targets):
                raise ValueError(f"GradientTape.gradient: output_gradients must have one entry per "
                                 f"target ({len(flat_targets)}), got {len(flat_seeds)}")

        was_recording = self._recording
        if was_recording:
            self._pop()
        try:
            nested = bool(_local.tapes)
            if nested and _tensor_ops is None:
                raise RuntimeError("GradientTape: ipu_gpu.ops is not loaded")
            grads = self._backprop(flat_targets, flat_seeds, flat_sources, nested)
        finally:
            if was_recording:
                self._push()
        if not self._persistent:
            self._records = None
            self._watched = set()

        results = []
        for s in flat_sources:
            g = grads.get(s._id)
            if g is None:
                if unconnected is UnconnectedGradients.ZERO:
                    xp = backend.xp_of(s._value)
                    results.append(wrap(xp.zeros_like(s._value)))
                else:
                    results.append(None)
            elif type(g) is _ndarray:  # the common case: ``wrap(g)``, inlined
                t = _new_tensor(Tensor)
                t._value = g
                t._id = _next_id()
                if _tensor_module._allocation_hook is not None:
                    _tensor_module._allocation_hook(t)
                results.append(t)
            else:
                results.append(g if isinstance(g, (Tensor, IndexedSlices)) else wrap(
                    g if type(g) is not np.generic and not isinstance(g, np.generic)
                    else np.asarray(g)))
        if flat:  # a list or tuple of Tensors: no walk
            return results if type(sources) is list else tuple(results)
        return nest.pack_sequence_as(sources, results)

    def _backprop(self, targets, seeds, sources, nested: bool) -> dict:
        grads: dict = {}

        for t, seed in zip(targets, seeds):
            if seed is None:
                g = _ones_like(t._value)
                g = wrap(g) if nested else g
            elif nested:
                g = seed if isinstance(seed, Tensor) else wrap(_seed_array(seed, t))
            else:
                g = _seed_array(seed, t)
            old = grads.get(t._id)
            grads[t._id] = g if old is None else _add_grads(old, g, nested)
        g = old = None

        # Only sources the tape watches (watched Tensors and variables, outputs of recorded
        # ops) get gradients, as in TF: a record kept for one watched input must not hand a
        # gradient to an unwatched input beside it (a frozen variable, a constant).
        source_ids = set(map(_id_of, sources))
        reach = source_ids & self._watched
        records = self._records
        for rec in records:
            if not reach.isdisjoint(rec.in_ids):
                reach.update(rec.out_ids)

        owned_rules = _OWNED_BACKWARD
        pair_rules = _PAIR_BACKWARD
        consumers = _PAIR_CONSUMERS if not nested else ()
        ndarray = np.ndarray
        skip = -1
        for at in range(len(records) - 1, -1, -1):
            if at == skip:  # a producer already played back with its consumer
                continue
            rec = records[at]
            out_ids = rec.out_ids
            if len(out_ids) != 1:
                cots = [grads.get(o) for o in out_ids]
                if all(c is None for c in cots) or reach.isdisjoint(rec.in_ids):
                    continue
                in_grads = _general_backward(rec, cots, nested, reach)
                cots = None
            else:  # most ops: one output
                o = out_ids[0]
                # every use of the output came later and has been played back: its gradient
                # is final, and the tape lets go of it unless it is asked for
                c = grads.pop(o, None) if o not in source_ids else grads.get(o)
                if c is None or reach.isdisjoint(rec.in_ids):
                    continue
                if type(c) is not ndarray or nested:
                    in_grads = _general_backward(rec, [c], nested, reach)
                else:  # a dense cotangent off nested tapes: the rules on arrays
                    op = rec.op
                    in_grads = None
                    if op in consumers and at:
                        prev = records[at - 1]
                        pair = pair_rules.get((op, prev.op))
                        if (pair is not None and len(prev.out_ids) == 1
                                and len(rec.in_ids) == 1 and prev.out_ids[0] == rec.in_ids[0]
                                and rec.in_ids[0] not in grads
                                and rec.in_ids[0] not in source_ids):
                            # the producer's output reaches nothing but this record (a later
                            # use would have left a gradient for it, and nothing was
                            # recorded between)
                            owned = (o not in source_ids and c.base is None
                                     and sys.getrefcount(c) == _OWNED_REFS
                                     and c.flags.writeable)
                            in_grads = pair(rec.xp, prev, rec, c, owned,
                                            _needed(prev.in_ids, prev.in_dtypes, reach))
                            if in_grads is not None:
                                rec = prev
                                skip = at - 1
                    if in_grads is None:
                        xp = rec.xp
                        k = op._kernel_modules.get(xp, _NO_MODULE)
                        if k is _NO_MODULE:
                            k = op.kernels(xp)
                        rule = owned_rules.get(op)
                        if (rule is not None and o not in source_ids and c.base is None
                                and sys.getrefcount(c) == _OWNED_REFS and c.flags.writeable):
                            # nothing else holds the cotangent (no other node's gradient, no
                            # caller's array): the rule may write the input gradient into it
                            in_grads = rule(k, xp, rec.residuals, c, **rec.static)
                        elif op.partial_backward:  # told which input gradients are kept
                            in_grads = op.backward(k, xp, rec.residuals, c, **rec.static,
                                                   needed=_needed(rec.in_ids, rec.in_dtypes,
                                                                  reach))
                        else:
                            in_grads = op.backward(k, xp, rec.residuals, c, **rec.static)
                c = None
            for node, g, dtype in zip(rec.in_ids, in_grads, rec.in_dtypes):
                if g is None or dtype.kind != "f" or node not in reach:
                    continue
                if g.dtype is not dtype and g.dtype != dtype:
                    g = _cast(g, dtype)
                if node in grads:
                    grads[node] = _add_grads(grads[node], g, nested)
                else:
                    grads[node] = g
            # hold no gradient past its record: a cotangent's reference count tells the
            # next record whether the tape alone holds it (_OWNED_REFS)
            in_grads = g = None
        return grads


def _general_backward(rec, cots: list, nested: bool, reach) -> tuple:
    """The input gradients of ``rec`` from its output cotangents ``cots`` (None where an
    output got none) on nested tapes or for cotangents other than one dense array: zeros for
    the missing ones, sparse ones densified (or handed on by identity and cast)."""
    arrays_type = Tensor if nested else np.ndarray  # a cotangent that needs no work
    if len(cots) > 1 or type(cots[0]) is not arrays_type:  # else: dense, as it is
        for j, c in enumerate(cots):
            if c is None:
                shape, dtype = rec.out_meta[j]
                z = rec.xp.zeros(shape, dtype)
                cots[j] = wrap(z) if nested else z
            elif type(c) is IndexedSlices:
                if rec.op.name in _SPARSE_PASSTHROUGH and len(cots) == 1:
                    break  # handed on below
                cots[j] = _dense(c, nested)
    if type(cots[0]) is IndexedSlices:
        return (cots[0] if rec.in_dtypes[0].kind == "f" else None,)
    needed = None
    if rec.op.partial_backward:  # tell the rule which input gradients are kept
        needed = _needed(rec.in_ids, rec.in_dtypes, reach)
    return _run_backward(rec, cots, nested, needed)


def _needed(in_ids, in_dtypes, reach) -> tuple:
    """Per input, whether its gradient is kept: it leads to a source and is floating-point."""
    if len(in_ids) == 2:  # most differentiable ops (matmul, bias_add): no comprehension
        return (in_ids[0] in reach and in_dtypes[0].kind == "f",
                in_ids[1] in reach and in_dtypes[1].kind == "f")
    return tuple([i in reach and d.kind == "f" for i, d in zip(in_ids, in_dtypes)])


def _kernels(op, xp):
    k = op._kernel_modules.get(xp, _NO_MODULE)
    return op.kernels(xp) if k is _NO_MODULE else k


def _ones_like(v):
    """The seed gradient of a target: ones shaped and laid out as ``v``."""
    if type(v) is np.ndarray and v.flags.c_contiguous:
        g = np.empty(v.shape, v.dtype)
        g.fill(1)
        return g
    return backend.xp_of(v).ones_like(v)


def _leaves(structure) -> list:
    """``nest.flatten(structure)``, without the walk for a Tensor or a flat list of them."""
    ts = type(structure)
    if ts is Tensor or ts is Variable:
        return [structure]
    if ts is list or ts is tuple:
        for x in structure:
            tx = type(x)
            if tx is not Tensor and tx is not Variable:
                return nest.flatten(structure)
        return list(structure)
    return nest.flatten(structure)


def _seed_array(seed, target: Tensor):
    from .convert import to_array

    a = to_array(seed, dtype=target.dtype, arg="output_gradients", op="GradientTape.gradient")
    if tuple(a.shape) != tuple(target.shape):
        raise ValueError(f"GradientTape.gradient: output_gradients must have the target's shape "
                         f"{tuple(target.shape)}, got {tuple(a.shape)}")
    return a


def _cast(g, dtype):
    if type(g) is IndexedSlices:
        return IndexedSlices(_tensor_ops.astype(g.values, dtype), g.indices, g.dense_shape)
    if isinstance(g, Tensor):
        return _tensor_ops.astype(g, dtype)
    return g.astype(dtype)


def _run_backward(rec: Record, cots: list, nested: bool, needed=None):
    op = rec.op
    k = op.kernels(rec.xp)
    static = rec.static if needed is None else {**rec.static, "needed": needed}
    if not nested:
        return op.backward(k, rec.xp, rec.residuals, *cots, **static)
    involved = {c._id for c in cots}
    involved.update(rec.in_ids)
    wanted = any(not involved.isdisjoint(tp._watched) for tp in _local.tapes)
    if not wanted:
        grads = op.backward(k, rec.xp, rec.residuals, *[c._value for c in cots], **static)
        return [None if g is None else g if type(g) is IndexedSlices else wrap(g)
                for g in grads]
    if rec.arrays is None:
        raise LookupError(f"{op.name}: its gradient is not differentiable (second derivatives "
                          f"of {op.name} are not supported)")
    in_array_ids, out_array_ids = rec.arrays
    node_of = dict(zip(in_array_ids, rec.in_ids))
    node_of.update(zip(out_array_ids, rec.out_ids))  # an output before an input
    residuals = tuple(_as_tensor_residual(r, node_of) for r in rec.residuals)
    return op.backward(k, _tensor_ops, residuals, *cots, **static)


def _as_tensor_residual(r, node_of):
    if isinstance(r, np.ndarray) or backend.is_cupy_array(r):
        node = node_of.get(id(r))
        # an input or output as its node; else data fixed w.r.t. the inputs (masks, ids)
        return wrap(r) if node is None else wrap(r, node)
    return r
