"""``tf.map_fn``, ``tf.scan``, ``tf.foldl`` and ``tf.foldr``: a Python function applied along
the first axis of (nested structures of) Tensors.

Composites of ``unstack`` and ``stack``: the function runs once per element, eagerly, so a
GradientTape differentiates through it. ``parallel_iterations``, ``back_prop``,
``swap_memory`` and ``infer_shape`` are accepted and change nothing (iterations run in
order). In a TF1 graph the whole call is one node, run on each ``Session.run``'s values (the
graph tensors and variables ``fn`` captures are inputs of the node, read in the run).

As TensorFlow: scalars are refused (ValueError), the elements of a structure must have the
same first dimension (ValueError), results of another dtype than the declared
``fn_output_signature`` (by default the elements' own structure and dtypes) raise
InvalidArgumentError, a fold or scan of no elements without an initializer raises
OutOfRangeError. A non-callable ``fn`` raises TypeError (TF's own check, older releases).
"""

from __future__ import annotations

from . import nest as tf_nest
from .core import registry
from .core.convert import convert_to_tensor
from .core.dtypes import as_dtype
from .core.spec import TensorSpec
from .core.tensor import Tensor
from .errors import InvalidArgumentError, OutOfRangeError
from .ops.array import unstack
from .ops.creation import zeros
from .ops.shape import stack

__all__ = ["foldl", "foldr", "map_fn", "scan", "vectorized_map"]


def _is_tensor(x) -> bool:
    return isinstance(x, Tensor) or type(x).__name__ == "GraphTensor"


def _static_graph_elems(elems) -> bool:
    """Whether ``elems`` holds graph tensors whose first dimensions are all known: the loop
    is then unrolled into the graph (``fn`` may capture graph tensors and variables)."""
    leaves = tf_nest.flatten(elems)
    graph = [x for x in leaves if type(x).__name__ == "GraphTensor"]
    return bool(graph) and all(x.shape.rank and x.shape.as_list()[0] is not None
                               for x in graph)


def _graph_call(fn, args, kwargs):
    """The call as one node of the TF1 graph being built (structure rebuilt from the last
    run of ``fn``), or NotImplemented when no argument is a graph tensor or the elements'
    first dimensions are known (then the loop unrolls into graph nodes)."""
    if _static_graph_elems(args[1]):
        return NotImplemented
    structure = []

    def flat(*a, **k):
        out = fn(*a, **k)
        structure[:] = [out]
        return list(tf_nest.flatten(out))

    flat.__name__ = fn.__name__
    node = registry.symbolic_call(flat, args, kwargs)
    if node is NotImplemented:
        return node
    return tf_nest.pack_sequence_as(structure[0], node if isinstance(node, list) else [node])


def _check_fn(fn):
    if not callable(fn):
        raise TypeError("fn must be callable.")


def _slices(elems):
    """The flattened elements as Tensors and their common length."""
    flat = [e if _is_tensor(e) else convert_to_tensor(e) for e in tf_nest.flatten(elems)]
    if not flat:
        raise ValueError("elems must be a Tensor or (possibly nested) sequence of Tensors, got "
                         "an empty structure")
    for e in flat:
        if len(e.shape) == 0:
            raise ValueError("Elements in elems must be 1+ dimensional Tensors, not scalars")
    n = int(flat[0].shape[0])
    for e in flat[1:]:
        if int(e.shape[0]) != n:
            raise ValueError(f"Dimensions {n} and {int(e.shape[0])} are not compatible")
    return flat, n


def _as_tensor(x, dtype):
    t = x if _is_tensor(x) else convert_to_tensor(x, dtype=dtype)
    if dtype is not None and t.dtype != dtype:
        raise InvalidArgumentError(f"TensorArray dtype is {dtype.name} but Op is trying to write "
                                   f"dtype {t.dtype.name}")
    return t


def _signature_leaves(signature, elems_flat):
    """(dtype, trailing shape or None) per output leaf of ``fn_output_signature``; with no
    fully known shape TF's empty result is a vector, shape (0,)."""
    if signature is None:
        return [(e.dtype, None) for e in elems_flat]

    def leaf(s):
        if isinstance(s, TensorSpec):
            dims = s.shape.as_list() if s.shape.rank is not None else None
            return s.dtype, (None if dims is None or None in dims else tuple(dims))
        return as_dtype(s, "fn_output_signature"), None
    return [leaf(s) for s in tf_nest.flatten(signature)]


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True, swap_memory=False,
           infer_shape=True, name=None, fn_output_signature=None):
    """``fn`` applied to each slice of ``elems`` along axis 0, results stacked
    (``tf.map_fn``); ``fn_output_signature`` (or the deprecated ``dtype``) gives the
    structure and dtypes of ``fn``'s result when they are not those of ``elems``."""
    node = _graph_call(map_fn, (fn, elems), dict(
        dtype=dtype, fn_output_signature=fn_output_signature))
    if node is not NotImplemented:
        return node
    _check_fn(fn)
    if fn_output_signature is None:
        fn_output_signature = dtype
    flat, n = _slices(elems)
    out_structure = elems if fn_output_signature is None else fn_output_signature
    leaves = _signature_leaves(fn_output_signature, flat)
    columns = [unstack(e) for e in flat]
    results = [[] for _ in leaves]
    for i in range(n):
        value = fn(tf_nest.pack_sequence_as(elems, [c[i] for c in columns]))
        tf_nest.assert_same_structure(out_structure, value, check_types=False)
        for j, (x, (d, _)) in enumerate(zip(tf_nest.flatten(value), leaves)):
            results[j].append(_as_tensor(x, d))
    outs = []
    for r, (d, trailing) in zip(results, leaves):
        if r:
            outs.append(stack(r))
        else:
            outs.append(zeros((0, *(trailing or ())), d))
    return tf_nest.pack_sequence_as(out_structure, outs)



def vectorized_map(fn, elems, fallback_to_while_loop=True, warn=True):
    """``fn`` applied to each slice of ``elems`` along axis 0, results stacked
    (``tf.vectorized_map``). Unlike ``map_fn``, the structure and dtypes of the result are
    those ``fn`` returns (a constant result is repeated per slice); with no slices ``fn`` is
    traced once on zeros of a slice's shape for them. TensorFlow vectorizes the loop
    (pfor); here it runs slice by slice, with the same values.

    Raises:
      InvalidArgumentError: the elements' first dimensions differ."""
    node = _graph_call(vectorized_map, (fn, elems), dict(
        fallback_to_while_loop=fallback_to_while_loop, warn=warn))
    if node is not NotImplemented:
        return node
    _check_fn(fn)
    try:
        flat, n = _slices(elems)
    except ValueError as e:
        if "not compatible" in str(e):
            raise InvalidArgumentError(str(e)) from None
        raise
    if n == 0:
        probe = fn(tf_nest.pack_sequence_as(elems, [zeros(tuple(e.shape[1:]), e.dtype)
                                                    for e in flat]))
        leaves = [_as_tensor(x, None) for x in tf_nest.flatten(probe)]
        return tf_nest.pack_sequence_as(probe, [zeros((0, *x.shape), x.dtype) for x in leaves])
    columns = [unstack(e) for e in flat]
    values = [fn(tf_nest.pack_sequence_as(elems, [c[i] for c in columns])) for i in range(n)]
    for v in values[1:]:
        tf_nest.assert_same_structure(values[0], v, check_types=False)
    flat_values = [[_as_tensor(x, None) for x in tf_nest.flatten(v)] for v in values]
    outs = [stack([row[j] for row in flat_values]) for j in range(len(flat_values[0]))]
    return tf_nest.pack_sequence_as(values[0], outs)

def _scan(fn, elems, initializer, reverse: bool, keep_all: bool, what: str):
    _check_fn(fn)
    flat, n = _slices(elems)
    columns = [unstack(e) if n else [] for e in flat]
    order = list(range(n - 1, -1, -1) if reverse else range(n))
    if initializer is None:
        if not order:
            raise OutOfRangeError("Tried to read from index 0 but array size is: 0")
        first = order.pop(0)
        acc = tf_nest.pack_sequence_as(elems, [c[first] for c in columns])
        acc_structure = elems
        steps = [(first, acc)]
    else:
        acc = tf_nest.map_structure(
            lambda x: x if _is_tensor(x) else convert_to_tensor(x), initializer)
        acc_structure = initializer
        steps = []
    for i in order:
        acc = fn(acc, tf_nest.pack_sequence_as(elems, [c[i] for c in columns]))
        tf_nest.assert_same_structure(acc_structure, acc, check_types=False)
        steps.append((i, acc))
    if not keep_all:
        return acc
    steps.sort(key=lambda s: s[0])
    leaves = [tf_nest.flatten(s[1]) for s in steps]
    n_out = len(tf_nest.flatten(acc_structure))
    init_flat = tf_nest.flatten(acc)
    outs = []
    for j in range(n_out):
        if leaves:
            outs.append(stack([_as_tensor(v[j], None) for v in leaves]))
        else:
            x = init_flat[j]
            outs.append(zeros((0, *x.shape), x.dtype))
    return tf_nest.pack_sequence_as(acc_structure, outs)


def scan(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
         swap_memory=False, infer_shape=True, reverse=False, name=None):
    """The successive accumulators of ``fn(acc, x)`` over the slices of ``elems``, stacked
    (``tf.scan``); without ``initializer`` the first slice is the first accumulator;
    ``reverse`` scans from the last slice (results stay in the slices' order)."""
    node = _graph_call(scan, (fn, elems), dict(initializer=initializer, reverse=reverse))
    if node is not NotImplemented:
        return node
    return _scan(fn, elems, initializer, bool(reverse), True, "scan")


def foldl(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
          swap_memory=False, name=None):
    """The last accumulator of ``fn(acc, x)`` over the slices of ``elems`` from the first
    (``tf.foldl``)."""
    node = _graph_call(foldl, (fn, elems), dict(initializer=initializer))
    if node is not NotImplemented:
        return node
    return _scan(fn, elems, initializer, False, False, "foldl")


def foldr(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
          swap_memory=False, name=None):
    """The last accumulator of ``fn(acc, x)`` over the slices of ``elems`` from the last
    (``tf.foldr``)."""
    node = _graph_call(foldr, (fn, elems), dict(initializer=initializer))
    if node is not NotImplemented:
        return node
    return _scan(fn, elems, initializer, True, False, "foldr")
