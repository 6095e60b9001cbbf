"""Flatten and rebuild nested structures (lists, tuples, dicts, namedtuples), as tf.nest does."""

from __future__ import annotations


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def flatten(structure) -> list:
    """The leaves of ``structure`` in a fixed order (dict keys sorted, as tf.nest)."""
    out: list = []
    _flatten_into(structure, out)
    return out


def _flatten_into(s, out: list) -> None:
    if isinstance(s, dict):
        for key in sorted(s):
            _flatten_into(s[key], out)
    elif isinstance(s, (list, tuple)):
        for item in s:
            _flatten_into(item, out)
    else:
        out.append(s)


def pack_sequence_as(structure, flat):
    """Rebuild ``structure`` with the leaves taken in order from ``flat``."""
    if type(structure) is list and len(flat) == len(structure) and not any(
            isinstance(s, (list, tuple, dict)) for s in structure):
        return list(flat)  # a flat list of leaves (gradient's sources, mostly)
    it = iter(flat)
    result = _pack(structure, it)
    return result


def _pack(s, it):
    if isinstance(s, dict):
        packed = {key: _pack(s[key], it) for key in sorted(s)}
        return type(s)((key, packed[key]) for key in s)
    if _is_namedtuple(s):
        return type(s)(*[_pack(item, it) for item in s])
    if isinstance(s, (list, tuple)):
        return type(s)(_pack(item, it) for item in s)
    return next(it)


def map_structure(fn, structure):
    """``structure`` with ``fn`` applied to every leaf."""
    return pack_sequence_as(structure, [fn(leaf) for leaf in flatten(structure)])
