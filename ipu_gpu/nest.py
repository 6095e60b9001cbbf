"""``tf.nest``: nested structures of lists, tuples, namedtuples and mappings.

As TensorFlow's: a mapping's values are taken in sorted key order and rebuilt in the
mapping's own key order; every other value (Tensors, arrays, numbers, strings, None) is a
leaf. The errors are TensorFlow's types, with its messages' first lines.
"""

from __future__ import annotations

import collections.abc

__all__ = ["assert_same_structure", "flatten", "is_nested", "map_structure",
           "pack_sequence_as"]


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def is_nested(seq) -> bool:
    """True for a list, tuple (namedtuples included) or mapping."""
    return isinstance(seq, (list, tuple, collections.abc.Mapping))


def _children(s) -> list:
    if isinstance(s, collections.abc.Mapping):
        return [s[k] for k in sorted(s)]
    return list(s)


def flatten(structure, expand_composites=False) -> list:
    """The leaves of ``structure`` in order; a leaf gives ``[structure]``."""
    out: list = []

    def walk(s):
        if is_nested(s):
            for c in _children(s):
                walk(c)
        else:
            out.append(s)
    walk(structure)
    return out


def _sequence_like(instance, args):
    if isinstance(instance, collections.abc.Mapping):
        result = dict(zip(sorted(instance), args))
        keys = list(instance)
        if isinstance(instance, collections.defaultdict):
            d = collections.defaultdict(instance.default_factory)
            d.update((k, result[k]) for k in keys)
            return d
        return type(instance)((k, result[k]) for k in keys)
    if _is_namedtuple(instance):
        return type(instance)(*args)
    return type(instance)(args)


def pack_sequence_as(structure, flat_sequence, expand_composites=False):
    """``structure`` rebuilt with its leaves taken in order from ``flat_sequence``."""
    if not is_nested(flat_sequence):
        raise TypeError(f"Attempted to pack value:\n  {flat_sequence!r}\ninto a structure, but "
                        f"found incompatible type `{type(flat_sequence)}` instead.")
    flat = list(flat_sequence)
    if not is_nested(structure):
        if len(flat) != 1:
            raise ValueError(f"The target structure is of type `{type(structure)}`\n  "
                             f"{structure!r}\nHowever the input is a sequence "
                             f"({type(flat_sequence)}) of length {len(flat)}.\n  {flat!r}\n"
                             f"nest cannot guarantee that it is safe to map one to the other.")
        return flat[0]
    n = len(flatten(structure))
    if n != len(flat):
        raise ValueError(f"Could not pack sequence. Structure had {n} atoms, but flat_sequence "
                         f"had {len(flat)} items.  Structure: {structure!r}, flat_sequence: "
                         f"{flat!r}.")
    it = iter(flat)

    def pack(s):
        if is_nested(s):
            return _sequence_like(s, [pack(c) for c in _children(s)])
        return next(it)
    return pack(structure)


def _kind(s):
    if _is_namedtuple(s):
        return type(s)
    if isinstance(s, collections.abc.Mapping):
        return dict
    return type(s)


def assert_same_structure(nest1, nest2, check_types=True, expand_composites=False) -> None:
    """Raise ValueError if the structures nest differently (or have different lengths or
    keys), TypeError if ``check_types`` and their sequence types differ."""
    def walk(a, b):
        if is_nested(a) != is_nested(b):
            raise ValueError(f"The two structures don't have the same nested structure.\n\n"
                             f"First structure: {nest1}\n\nSecond structure: {nest2}\n\n"
                             f"More specifically: Substructure \"{a}\" is a sequence, while "
                             f"substructure \"{b}\" is not" if is_nested(a) else
                             f"The two structures don't have the same nested structure.\n\n"
                             f"First structure: {nest1}\n\nSecond structure: {nest2}\n\n"
                             f"More specifically: Substructure \"{b}\" is a sequence, while "
                             f"substructure \"{a}\" is not")
        if not is_nested(a):
            return
        if check_types and _kind(a) is not _kind(b):
            raise TypeError(f"The two structures don't have the same sequence type. Input "
                            f"structure has type {_kind(a)}, while shallow structure has type "
                            f"{_kind(b)}.")
        if isinstance(a, collections.abc.Mapping) and isinstance(b, collections.abc.Mapping):
            if set(a) != set(b):
                raise ValueError(f"The two dictionaries don't have the same set of keys. First "
                                 f"structure has keys {list(a)}, while second structure has "
                                 f"keys {list(b)}.")
        if len(a) != len(b):
            raise ValueError(f"The two structures don't have the same nested structure.\n\n"
                             f"First structure: {nest1}\n\nSecond structure: {nest2}\n\n"
                             f"More specifically: Substructure \"{a}\" has length {len(a)}, "
                             f"while substructure \"{b}\" has length {len(b)}")
        for x, y in zip(_children(a), _children(b)):
            walk(x, y)
    walk(nest1, nest2)
    n1, n2 = len(flatten(nest1)), len(flatten(nest2))
    if n1 != n2:
        raise ValueError(f"The two structures don't have the same number of elements.\n\n"
                         f"First structure ({n1} elements): {nest1}\n\n"
                         f"Second structure ({n2} elements): {nest2}")


def map_structure(func, *structure, **kwargs):
    """``func`` applied to the matching leaves of the structures (all the same structure), in
    the structure of the first."""
    if not callable(func):
        raise TypeError(f"func must be callable, got: {func}")
    if not structure:
        raise ValueError("Must provide at least one structure")
    check_types = kwargs.pop("check_types", True)
    kwargs.pop("expand_composites", None)
    if kwargs:
        raise ValueError(f"Only valid keyword arguments are `check_types` and "
                         f"`expand_composites`, not: `{', '.join(kwargs)}`")
    for other in structure[1:]:
        assert_same_structure(structure[0], other, check_types=check_types)
    flats = [flatten(s) for s in structure]
    return pack_sequence_as(structure[0], [func(*xs) for xs in zip(*flats)])
