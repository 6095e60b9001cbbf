"""Collectives between replicas (cross_replica_sum/mean, all_gather, all_to_all, reduce_scatter,
replication_index, assume_equal_across_replicas) and within one replica's shards
(within_replica all_gather/reduce_scatter/all_reduce).

Cross-replica ops run inside ``ipu_compiler.compile``: each replica publishes its array
through ``Program.exchange`` (``emulation/engine.py``) and reduces the arrays of its group in
replica order, so every replica computes the same bits and CPU and GPU agree. float16 sums,
means and products accumulate in float32 (the IPU's float32 partials: the mean of 65504s does
not overflow). Outside a compiled program (host code) the op acts as a program with one
replica. Replica groups: a group size k < R forms the consecutive groups {0..k-1}, {k..2k-1},
...; R must be divisible by k.

Within-replica ops take the shards of one sharded tensor as a list (the emulator keeps a
replica's shards in one thread) and compute locally. Decision (Graphcore leaves it open):
within-replica ``reduce_scatter`` gives shard i chunk i of the padded reduced vector.
"""

from __future__ import annotations

import math

import numpy as np

from ..core import backend
from ..core.registry import recorded_call, register
from ..core.tensor import Tensor, wrap
from ..emulation import context
from ._util import shape_str

OPS = ("ADD", "MUL", "MIN", "MAX", "LOGICAL_AND", "LOGICAL_OR", "SQUARE_ADD", "LOCAL", "MEAN")
WITHIN_OPS = ("ADD", "MUL", "MIN", "MAX", "LOGICAL_AND", "LOGICAL_OR", "LOCAL")
_DTYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.int32))


# ---- helpers ---------------------------------------------------------------------------------


def _where():
    """(replica index, replication factor, program) of the running code; host = (0, 1, None)."""
    ctx = context.current()
    if ctx is None:
        return 0, 1, None
    return ctx.replica_index, ctx.replication_factor, ctx.program


def group_size(op: str, arg: str, k, n_replicas: int) -> int:
    """The collective group size for ``k`` (None = all replicas); ValueError unless it divides
    the replication factor (Graphcore: an exception at compile time)."""
    if k is None or k == 0:
        return n_replicas
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"{op}: {arg} must be an int or None, got {k!r}")
    k = int(k)
    if k < 1 or k > n_replicas or n_replicas % k:
        raise ValueError(f"{op}: {arg} must divide the replication factor {n_replicas} (the "
                         f"replicas form consecutive groups of {arg}), got {k}")
    return k


def _sync_producer(arrays) -> None:
    if arrays and backend.is_cupy_array(arrays[0]):
        import cupy  # the replica's arrays are cupy: the backend is loaded already

        cupy.cuda.get_current_stream().synchronize()  # syncs device: peers read these arrays


def _to_local(xp, a):
    """A peer replica's array usable here (a copy onto this GPU when it lives on another)."""
    if xp is np:
        return a
    if a.device.id != xp.cuda.Device().id:
        return xp.array(a, copy=True)
    return a


def _gather_group(op: str, tag: str, xp, arrays: list, k: int) -> list:
    """Exchange ``arrays`` (this replica's, a list) with the replicas of its group; return
    ``[member][i]`` in replica order. Checks that peers sent matching shapes and dtypes."""
    r, n, program = _where()
    if program is None:
        return [arrays]
    _sync_producer(arrays)
    values = program.exchange(r, tag, arrays)
    g0 = (r // k) * k
    members = values[g0:g0 + k]
    for m, peer in enumerate(members):
        for a, b in zip(peer, arrays):
            if a.shape != b.shape or a.dtype != b.dtype:
                raise ValueError(f"{op}: every replica must pass the same shape and dtype, "
                                 f"replica {g0 + m} passed {shape_str(a.shape)} {a.dtype} and "
                                 f"replica {r} {shape_str(b.shape)} {b.dtype}")
    return [[_to_local(xp, a) for a in peer] for peer in members]


def _acc_dtype(dtype):
    return np.dtype(np.float32) if dtype == np.float16 else dtype


def reduce_in_order(xp, parts: list, how: str):
    """Reduce ``parts`` (same shape and dtype) elementwise in list order; float16 accumulates
    in float32. ``how`` is one of OPS except LOCAL."""
    dtype = parts[0].dtype
    acc = _acc_dtype(dtype)
    if how in ("LOGICAL_AND", "LOGICAL_OR"):
        out = parts[0] != 0
        for p in parts[1:]:
            out = (out & (p != 0)) if how == "LOGICAL_AND" else (out | (p != 0))
        return out.astype(dtype)
    out = parts[0].astype(acc, copy=True)
    if how == "SQUARE_ADD":
        out = out * out
    for p in parts[1:]:
        p = p.astype(acc, copy=False)
        if how in ("ADD", "MEAN"):
            out += p
        elif how == "SQUARE_ADD":
            out += p * p
        elif how == "MUL":
            out *= p
        elif how == "MIN":
            out = xp.minimum(out, p)
        elif how == "MAX":
            out = xp.maximum(out, p)
    if how == "MEAN":
        out = out / acc.type(len(parts)) if acc.kind == "f" else out // len(parts)
    return out.astype(dtype, copy=False)


def _check_dtype(op: str, arg: str, a) -> None:
    if a.dtype not in _DTYPES:
        raise TypeError(f"{op}: {arg} must be float16, float32 or int32, got {a.dtype}")


def _no_gradient(op_type: str):
    def backward(k, xp, res, *gs, **static):
        raise LookupError(f"No gradient defined for operation '{op_type}' (Graphcore registers "
                          "none)")
    return backward


def _op_name(op: str, arg, allowed) -> str:
    if not isinstance(arg, str):
        raise TypeError(f"{op}: op must be a str such as 'COLLECTIVE_OP_ADD', got {arg!r}")
    name = arg[len("COLLECTIVE_OP_"):] if arg.startswith("COLLECTIVE_OP_") else arg
    if name not in allowed:
        raise ValueError(f"{op}: op must be one of "
                         f"{', '.join('COLLECTIVE_OP_' + o for o in allowed)}, got {arg!r}")
    return name


# ---- cross_replica_sum / cross_replica_mean --------------------------------------------------


def _check_x(x, *, group, mean):
    _check_dtype("cross_replica_mean" if mean else "cross_replica_sum", "x", x)


def _crs_forward(k, xp, x, *, group, mean):
    name = "cross_replica_mean" if mean else "cross_replica_sum"
    _, n, _ = _where()
    g = group_size(name, "replica_group_size", group, n)
    parts = [p[0] for p in _gather_group(name, f"{name}(group={g})", xp, [x], g)]
    return reduce_in_order(xp, parts, "MEAN" if mean else "ADD"), ()


def _crs_backward(k, xp, res, g, *, group, mean):
    return (_crs_forward(k, xp, g, group=group, mean=False)[0],)


_CROSS_REPLICA_SUM = register("cross_replica_sum", args=("x",), check=_check_x,
                              forward=_crs_forward, backward=_crs_backward)
_CROSS_REPLICA_MEAN = register("cross_replica_mean", args=("x",), check=_check_x,
                               forward=_crs_forward,
                               backward=_no_gradient("IpuCrossReplicaMean"))


def cross_replica_sum(x, replica_group_size=None, name=None):
    """Sum the input tensor across replicas.

    Args:
      x: The local tensor to the sum.
      replica_group_size: The number of replicas in each collective group. If None, there is
        a single group containing all the replicas. If a number less than the total number of
        replicas in the model is provided, the replicas are divided into consecutive groups of
        the given size, and the collective operation is performed within each respective
        group. The total number of replicas must be evenly divisible by it.
      name: Optional op name.

    Returns:
      A Tensor which is summed across the replicas in the same group. Its gradient is the
      cross-replica sum of the incoming gradient.
    """
    return _CROSS_REPLICA_SUM(x, group=replica_group_size, mean=False)


def cross_replica_mean(x, replica_group_size=None, name=None):
    """Computes the mean of the input tensor across replicas (float16 accumulates in float32,
    so the mean of 65504s is 65504). Has no gradient (LookupError), as in Graphcore's SDK.

    Args:
      x: The local tensor to the mean.
      replica_group_size: The number of replicas in each collective group (None: all).
      name: Optional op name.

    Returns:
      A Tensor which is averaged across the replicas in the same group.
    """
    return _CROSS_REPLICA_MEAN(x, group=replica_group_size, mean=True)


# ---- all_gather / all_to_all -----------------------------------------------------------------


def _check_all_gather(*xs, replication_factor):
    for i, x in enumerate(xs):
        _check_dtype("all_gather", f"x[{i}]" if len(xs) > 1 else "x", x)


def _all_gather_forward(k, xp, *xs, replication_factor):
    _, n, _ = _where()
    g = group_size("all_gather", "replication_factor", replication_factor, n)
    members = _gather_group("all_gather", f"all_gather(group={g})", xp, list(xs), g)
    return [xp.stack([m[i] for m in members]) for i in range(len(xs))], ()


_ALL_GATHER = register("all_gather", args=("x...",), check=_check_all_gather,
                       forward=_all_gather_forward, backward=_no_gradient("IpuAllGather"))


def all_gather(x, replication_factor, name=None):
    """Gather the data on all replicas to all other replicas. Each replica will have the exact
    same output.

    Args:
      x: The tensor to gather (or a list of tensors: a list of outputs is returned).
      replication_factor: The number of replicas in each collective group; fewer than the
        replicas of the model divides them into consecutive groups (the total must be evenly
        divisible by it).
      name: Optional op name.

    Returns:
      A tensor of [replication_factor][x] with each replica in the same group having the same
      tensor. No gradient is registered (LookupError).
    """
    if isinstance(x, (list, tuple)):
        if not x:
            raise ValueError("all_gather: x must hold at least one tensor")
        return list(_ALL_GATHER(*x, replication_factor=replication_factor))
    return _ALL_GATHER(x, replication_factor=replication_factor)[0]


def _check_all_to_all(x, *, split_dimension, concat_dimension, replication_factor):
    _check_dtype("all_to_all", "x", x)
    for arg, d in (("split_dimension", split_dimension), ("concat_dimension", concat_dimension)):
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            raise TypeError(f"all_to_all: {arg} must be an int, got {d!r}")
        if not 0 <= d < x.ndim:
            raise ValueError(f"all_to_all: {arg} must be in [0, {x.ndim}), got {d}")


def _all_to_all_forward(k, xp, x, *, split_dimension, concat_dimension, replication_factor):
    r, n, _ = _where()
    g = group_size("all_to_all", "replication_factor", replication_factor, n)
    if x.shape[split_dimension] % g:
        raise ValueError(f"all_to_all: the size of split_dimension {split_dimension} "
                         f"({x.shape[split_dimension]}) must be divisible by the group size "
                         f"{g}")
    tag = f"all_to_all(split={split_dimension}, concat={concat_dimension}, group={g})"
    members = _gather_group("all_to_all", tag, xp, [x], g)
    me = r % g
    chunks = [xp.split(m[0], g, axis=split_dimension)[me] for m in members]
    return xp.concatenate(chunks, axis=concat_dimension), ()


def _all_to_all_backward(k, xp, res, g, *, split_dimension, concat_dimension,
                         replication_factor):
    out, _ = _all_to_all_forward(k, xp, g, split_dimension=concat_dimension,
                                 concat_dimension=split_dimension,
                                 replication_factor=replication_factor)
    return (out,)


_ALL_TO_ALL = register("all_to_all", args=("x",), check=_check_all_to_all,
                       forward=_all_to_all_forward, backward=_all_to_all_backward)


def all_to_all(x, split_dimension, concat_dimension, replication_factor, name=None):
    """Perform an XLA all to all operation across all replicas.

    ``x`` is split into ``replication_factor`` equal chunks along ``split_dimension``; chunk j
    goes to replica j of the group, and each replica concatenates the chunks it receives along
    ``concat_dimension`` in source-replica order.

    Args:
      split_dimension: A value in the interval [0,n) that names the dimension along which the
        operand is split.
      concat_dimension: A value in the interval [0,n) that names the dimension along which the
        split blocks are concatenated.
      replication_factor: The replication factor of the model (or of a replica group).
      name: Optional op name.

    Returns:
      A tensor of the same size where each replica will have a different value. Its gradient
      is the all_to_all of the gradient with the two dimensions swapped.
    """
    return _ALL_TO_ALL(x, split_dimension=split_dimension, concat_dimension=concat_dimension,
                       replication_factor=replication_factor)


# ---- reduce_scatter --------------------------------------------------------------------------


def _check_reduce_scatter(*xs, replication_factor, op):
    for i, x in enumerate(xs):
        arg = f"x[{i}]" if len(xs) > 1 else "x"
        _check_dtype("reduce_scatter", arg, x)
        if x.ndim != 1:
            raise ValueError(f"reduce_scatter: {arg} must have rank 1, got shape "
                             f"{shape_str(x.shape)}")


def _pad_to(xp, a, length):
    if a.shape[0] == length:
        return a
    out = xp.zeros((length,) + a.shape[1:], a.dtype)
    out[:a.shape[0]] = a
    return out


def _reduce_scatter_forward(k, xp, *xs, replication_factor, op):
    r, n, _ = _where()
    g = group_size("reduce_scatter", "replication_factor", replication_factor, n)
    me = r % g
    outs = []
    if op == "LOCAL":  # no reduction: this replica's own chunk of its own input
        members = None
    else:
        members = _gather_group("reduce_scatter", f"reduce_scatter(op={op}, group={g})", xp,
                                list(xs), g)
    for i, x in enumerate(xs):
        size = math.ceil(x.shape[0] / g)
        if members is None:
            full = x
        else:
            full = reduce_in_order(xp, [m[i] for m in members], op)
        full = _pad_to(xp, full, size * g)
        outs.append(xp.array(full[me * size:(me + 1) * size], copy=True))
    return outs, ()


_REDUCE_SCATTER = register("reduce_scatter", args=("x...",), check=_check_reduce_scatter,
                           forward=_reduce_scatter_forward,
                           backward=_no_gradient("IpuReduceScatter"))


def reduce_scatter(x, replication_factor, op="COLLECTIVE_OP_ADD", name=None):
    """Reduce the given replicated tensor with the result scattered across the replicas. For
    an input of shape [num_elements], the output will have shape
    [ceil(num_elements / replication_factor)]. If replication_factor does not evenly divide
    num_elements, the result is zero-padded. Example::

      Input:  Replica0: [x0, y0, z0]
              Replica1: [x1, y1, z1]
      Output: Replica0: [x0 + x1, y0 + y1]
              Replica1: [z0 + z1, 0]

    Args:
      x: The input Tensor. Must have rank 1 (or a list of them: a list is returned).
      replication_factor: The number of replicas in each collective group (consecutive
        groups when fewer than the replicas of the model; the total must be divisible by it).
      op: Reduce operation, valid ops are: COLLECTIVE_OP_ADD, COLLECTIVE_OP_MUL,
        COLLECTIVE_OP_MIN, COLLECTIVE_OP_MAX, COLLECTIVE_OP_LOGICAL_AND,
        COLLECTIVE_OP_LOGICAL_OR, COLLECTIVE_OP_SQUARE_ADD, COLLECTIVE_OP_LOCAL (no
        reduction: each replica keeps its chunk of its own input) and COLLECTIVE_OP_MEAN.
        LOGICAL ops treat non-zero as true and return 1/0 in the input's dtype.
      name: Optional op name.

    Returns:
      A Tensor with the result for this replica. No gradient is registered (LookupError).
    """
    how = _op_name("reduce_scatter", op, OPS)
    if isinstance(x, (list, tuple)):
        if not x:
            raise ValueError("reduce_scatter: x must hold at least one tensor")
        return list(_REDUCE_SCATTER(*x, replication_factor=replication_factor, op=how))
    return _REDUCE_SCATTER(x, replication_factor=replication_factor, op=how)[0]


# ---- replication_index / assume_equal_across_replicas ----------------------------------------


def replication_index(name=None) -> Tensor:
    """An operation which allows the user to get the replication index.

    Returns:
      A Tensor initialized with the replication index (int32 scalar; 0 on the host).
    """
    node = recorded_call(replication_index, (), dict(name=name))
    if node is not NotImplemented:  # built into a TF1 graph: each replica's own, per run
        return node
    r, _, _ = _where()
    return wrap(backend.default_xp().asarray(np.int32(r)))


_ASSUME_EQUAL = register("assume_equal_across_replicas", args=("tensor",),
                         check=lambda x, inplace: None,
                         forward=lambda k, xp, x, inplace: (x if inplace else x.copy(), ()),
                         backward=lambda k, xp, res, g, inplace: (g,))


def assume_equal_across_replicas(tensors, inplace=False):
    """Mark the given tensors as equal across replicas to try and prevent divergent control
    flow compilation errors. In the emulator this is the identity (a copy of each tensor
    unless ``inplace``); results are undefined on the IPU when the values differ.

    Args:
      tensors: A tensor or a structure of tensors which will be marked as equal across
        replicas.
      inplace: Whether the given tensor(s) are copied (False) or returned as they are.

    Returns:
      A tensor or a structure of tensors which matches shape and type of the tensors arg.
    """
    from ..core import nest

    return nest.map_structure(lambda t: _ASSUME_EQUAL(t, inplace=bool(inplace)), tensors)


# ---- within-replica ops ----------------------------------------------------------------------


def _check_shards(op: str, shards) -> None:
    if not shards:
        raise ValueError(f"{op}: input_shards must hold at least one tensor")
    dtype, ndim = shards[0].dtype, shards[0].ndim
    for s in shards[1:]:
        if s.dtype != dtype:
            raise ValueError("Expected tensors to all be of the same type.")
    for s in shards[1:]:
        if s.ndim != ndim:
            raise ValueError("Expected tensors to all be of the same rank.")


def _concat_shape(shards, axis) -> tuple:
    shape = list(shards[0].shape)
    for i, s in enumerate(shards[1:], 1):
        other = list(s.shape)
        if shape[:axis] != other[:axis] or shape[axis + 1:] != other[axis + 1:]:
            raise ValueError(f"Expecting tensor dimensions to all have the same sizes, except "
                             f"for dim {axis}, but got shapes {shape} and {other} for tensors "
                             f"0 and {i}")
        shape[axis] += other[axis]
    return tuple(shape)


def _check_within_gather(*shards, axis):
    _check_shards("all_gather", shards)
    ndim = shards[0].ndim
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"all_gather: axis must be an int, got {axis!r}")
    if ndim and not -ndim <= axis < ndim:
        raise ValueError(f"all_gather: axis must be in [{-ndim}, {ndim}), got {axis}")
    if ndim:
        _concat_shape(shards, axis % ndim)


def _within_gather_forward(k, xp, *shards, axis):
    # Graphcore gathers the flattened shards and reshapes the result to the shape of
    # concat(input_shards, axis): for axis != 0 that is not the values of the concat.
    flat = xp.concatenate([s.reshape(-1) for s in shards])
    shape = _concat_shape(shards, axis % shards[0].ndim) if shards[0].ndim else flat.shape
    return [flat.reshape(shape).copy() for _ in shards], [s.shape for s in shards]


def _within_gather_backward(k, xp, shapes, *gs, axis):
    total = gs[0].reshape(-1)
    for g in gs[1:]:
        total = total + g.reshape(-1)
    out, start = [], 0
    for shape in shapes:
        n = int(np.prod(shape, dtype=np.int64))
        out.append(total[start:start + n].reshape(shape))
        start += n
    return tuple(out)


def _within_scatter(xp, shards, how):
    """Shard i's chunk of the reduced, zero-padded vector (reduce over shards in order)."""
    s = len(shards)
    flat = [x.reshape(-1) if x.ndim else x.reshape(1) for x in shards]
    n = max(f.shape[0] for f in flat)
    flat = [_pad_to(xp, f, n) for f in flat]
    size = math.ceil(n / s)
    if how == "LOCAL":
        return [xp.array(_pad_to(xp, f, size * s)[i * size:(i + 1) * size], copy=True)
                for i, f in enumerate(flat)], n
    full = _pad_to(xp, reduce_in_order(xp, flat, how), size * s)
    return [xp.array(full[i * size:(i + 1) * size], copy=True) for i in range(s)], n


def _check_within_reduce(*shards, op):
    name = "reduce_scatter" if op[0] == "scatter" else "all_reduce"
    _check_shards(name, shards)
    for i, s in enumerate(shards):
        if s.ndim > 1:
            raise ValueError(f"{name}: input_shards[{i}] must have rank 0 or 1, got shape "
                             f"{shape_str(s.shape)}")


def _within_reduce_forward(k, xp, *shards, op):
    kind, how = op
    chunks, _ = _within_scatter(xp, shards, how)
    sizes = [(s.shape, max(int(s.size), 1)) for s in shards]
    if kind == "scatter":
        return chunks, sizes
    full = xp.concatenate(chunks)
    return [full.copy() for _ in shards], sizes


def _within_reduce_backward(k, xp, sizes, *gs, op):
    kind, how = op
    if how != "ADD":
        raise LookupError(f"No gradient defined for a within-replica {kind} with op "
                          f"COLLECTIVE_OP_{how} (the emulator differentiates ADD only)")
    if kind == "scatter":
        full = xp.concatenate(gs)  # the gradient is the all_gather of the chunk gradients
    else:
        full = gs[0]
        for g in gs[1:]:
            full = full + g
    return tuple(full[:n].reshape(shape) for shape, n in sizes)


_WITHIN_ALL_GATHER = register("within_replica_all_gather", args=("input_shards...",),
                              check=_check_within_gather, forward=_within_gather_forward,
                              backward=_within_gather_backward)
_WITHIN_REDUCE = register("within_replica_reduce", args=("input_shards...",),
                          check=_check_within_reduce, forward=_within_reduce_forward,
                          backward=_within_reduce_backward)


def _shard_list(op: str, input_shards) -> list:
    if not isinstance(input_shards, (list, tuple)):
        raise TypeError(f"{op}: input_shards must be a list of tensors, got "
                        f"{type(input_shards).__name__}")
    ids = [id(t) for t in input_shards]
    if len(set(ids)) != len(ids):
        raise ValueError("input_shards should not contain any duplicate entries.")
    return list(input_shards)


def within_all_gather(input_shards, axis=0):
    """Perform an all gather for a list of sharded tensors within a replica.

    As Graphcore's op: the shards are flattened and gathered, and every shard receives that
    vector reshaped to the shape of ``concat(input_shards, axis)`` (the values of the concat
    only for axis 0); scalar shards give a vector of one value per shard. Returns one tensor
    per shard. Gradient: the within-replica reduce_scatter (ADD) of the gradients."""
    shards = _shard_list("all_gather", input_shards)
    return list(_WITHIN_ALL_GATHER(*shards, axis=axis))


def within_reduce_scatter(input_shards, op):
    """Reduce a list of sharded rank 0/1 tensors within a replica (shards zero-padded to the
    longest) and scatter the result: shard i gets chunk i of the reduced vector zero-padded to
    a multiple of the shard count (``ceil(n / shards)`` values each). Gradient (ADD): the
    within-replica all_gather of the gradients."""
    shards = _shard_list("reduce_scatter", input_shards)
    how = _op_name("reduce_scatter", op, WITHIN_OPS)
    outs = _WITHIN_REDUCE(*shards, op=("scatter", how))
    return list(outs)


def within_all_reduce(input_shards, op):
    """Reduce a list of sharded rank 0/1 tensors within a replica; every shard receives the
    whole reduced vector (reduce_scatter followed by all_gather, so its length is padded to a
    multiple of the shard count). Gradient (ADD): the all_reduce of the gradients."""
    shards = _shard_list("all_reduce", input_shards)
    how = _op_name("all_reduce", op, WITHIN_OPS)
    return list(_WITHIN_REDUCE(*shards, op=("reduce", how)))
