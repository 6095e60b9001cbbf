"""``tensorflow.python.ipu.sharding``: utility functions for sharded TF1 graphs.

Graphcore's functions read and write an operation's attributes: ``_XlaSharding`` (the shard
set by ``ipu_shard``) and ``_class`` (co-location with another operation, ``loc:@<name>``).
They work here on any operation that exposes attributes: a TF ``node_def``-style ``attr`` map,
or ipu_gpu's per-operation attribute dict (``set_attr``). ipu_gpu's graph operations carry no
such attributes of their own (shards do not change any number in the emulator), so on its
graphs ``propagate_sharding`` finds nothing to move unless attributes were set.
"""

from __future__ import annotations

from ipu_gpu.graph import GraphTensor

__all__ = ["dependencies", "get_shard_from_colocation", "get_sharding", "has_attr",
           "propagate_sharding", "set_attr"]

_XLA_SHARDING = "_XlaSharding"
_CLASS = "_class"
_OWN = "_ipu_attrs"


def _attrs(o) -> dict:
    node_def = getattr(o, "node_def", None)
    if node_def is not None and hasattr(node_def, "attr"):
        return dict(node_def.attr.items())
    return getattr(o, _OWN, None) or {}


def _get_attr(o, attr_name):
    if hasattr(o, "get_attr") and getattr(o, "node_def", None) is not None:
        return o.get_attr(attr_name)
    return _attrs(o)[attr_name]


def set_attr(o, attr_name: str, value) -> None:
    """Set the attribute ``attr_name`` of the ipu_gpu operation ``o`` (emulator only: what
    TF's ``Operation._set_attr`` does for these functions)."""
    attrs = getattr(o, _OWN, None)
    if attrs is None:
        attrs = {}
        setattr(o, _OWN, attrs)
    attrs[attr_name] = value


def has_attr(o, attr_name) -> bool:
    """True if the operation ``o`` has the attribute ``attr_name``."""
    return attr_name in _attrs(o)


def get_sharding(op):
    """The shard list of ``op``'s ``_XlaSharding`` attribute, or None without one."""
    if not has_attr(op, _XLA_SHARDING):
        return None
    value = _get_attr(op, _XLA_SHARDING)
    return list(value) if isinstance(value, (list, tuple)) else value


def dependencies(roots) -> set:
    """The ancestor operations of ``roots`` (operations or tensors), the roots included:
    everything reached through inputs and control inputs."""
    working = list(roots)
    op_set: set = set()
    while working:
        o = working.pop(0)
        if isinstance(o, GraphTensor) or (hasattr(o, "op") and not hasattr(o, "inputs")):
            o = o.op
        if o in op_set:
            continue
        op_set.add(o)
        working += [t.op for t in o.inputs if t.op not in op_set]
        working += [c for c in o.control_inputs if c not in op_set]
    return op_set


def _colocation_groups(op) -> list:
    if hasattr(op, "colocation_groups") and getattr(op, "node_def", None) is not None:
        return list(op.colocation_groups())
    value = _attrs(op).get(_CLASS, [])
    return list(value) if isinstance(value, (list, tuple)) else [value]


def get_shard_from_colocation(op):
    """The ``_XlaSharding`` attribute of an operation co-located with ``op`` (its
    ``loc:@<name>`` groups first, then the producers of its inputs), or None."""
    g = op.graph
    for c in _colocation_groups(op):
        text = c.decode("utf-8") if isinstance(c, bytes) else str(c)
        try:
            coloc_op = g.get_operation_by_name(text[5:])
        except KeyError:
            continue
        if has_attr(coloc_op, _XLA_SHARDING):
            return _get_attr(coloc_op, _XLA_SHARDING)
    for t in op.inputs:
        if has_attr(t.op, _XLA_SHARDING):
            return _get_attr(t.op, _XLA_SHARDING)
    return None


def propagate_sharding(g) -> None:
    """Move the sharding of forward operations onto the backward operations co-located
    with them, until nothing changes."""
    changed = True
    while changed:
        changed = False
        for o in g.get_operations():
            if not has_attr(o, _CLASS) or has_attr(o, _XLA_SHARDING):
                continue
            attr = get_shard_from_colocation(o)
            if attr is not None:
                set_attr(o, _XLA_SHARDING, attr)
                changed = True
                break
