"""Scans, segment sums and contractions of ``tf.math``: ``cumsum``, ``unsorted_segment_sum``
(and ``unsorted_segment_mean`` on it) and ``einsum``.

``unsorted_segment_sum`` scatter-adds rows with the indexing kernels (deterministic: duplicate
ids accumulate in index order on both devices). As TF's kernels, negative ids are dropped, and
ids at or above ``num_segments`` raise InvalidArgumentError on the CPU and are dropped on the
GPU (no device sync to look for them). ``einsum`` of two operands or more is, on the CPU,
``einsum_contract.contract`` (pairwise contractions as transposes, reshapes and one batched
product of the tiled GEMM: bits independent of the thread count), on the GPU ``cupy.einsum``
with its contraction-order optimizer; of one operand ``xp.einsum``. Its gradient with respect
to an operand is the einsum of the cotangent with the other operands, broadcast over labels
only that operand sums over and placed on the diagonal for repeated labels.
"""

from __future__ import annotations

import math
import string

import numpy as np

from ..core import dtypes
from ..core.registry import register
from ..errors import InvalidArgumentError
from ._util import check_axis, require_int, require_numeric, require_same_dtype
from .einsum_contract import contract


def _acc(dtype):
    return dtypes.float32 if dtype == dtypes.float16 else dtype


def _static_int(op: str, arg: str, value) -> int:
    """A Python int, numpy integer or 0-d integer array/Tensor as an int (a static argument;
    reading a Tensor syncs the device)."""
    if hasattr(value, "numpy") and not isinstance(value, np.ndarray):
        value = value.numpy()
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iu":
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{op}: {arg} must be an int, got {value!r}")
    return int(value)


# ---- cumsum -----------------------------------------------------------------------------------
def _check_cumsum(x, *, axis, exclusive, reverse):
    require_numeric("cumsum", "x", x)
    check_axis("cumsum", axis, x.ndim)


def _scan(xp, x, axis, exclusive, reverse, product=False):
    """The (exclusive, reversed) running sum (or product) of ``x`` along ``axis``; float16
    accumulates in float32, integers wrap; an exclusive scan starts from 0 (or 1)."""
    a = xp.flip(x, axis) if reverse else x
    running = xp.cumprod if product else xp.cumsum
    y = running(a, axis=axis, dtype=_acc(x.dtype) if x.dtype.kind == "f" else x.dtype)
    n = x.shape[axis]
    if exclusive and n:
        head = [slice(None)] * x.ndim
        head[axis] = slice(0, n - 1)
        first_shape = list(x.shape)
        first_shape[axis] = 1
        first = (xp.ones if product else xp.zeros)(first_shape, y.dtype)
        y = xp.concatenate([first, y[tuple(head)]], axis=axis)
    if reverse:
        y = xp.flip(y, axis)
    return xp.ascontiguousarray(y.astype(x.dtype, copy=False))


def _cumsum_forward(k, xp, x, *, axis, exclusive, reverse):
    return _scan(xp, x, axis % x.ndim, exclusive, reverse), None


def _cumsum_backward(k, xp, res, g, *, axis, exclusive, reverse):
    # the adjoint of a running sum is the running sum the other way
    return (_scan(xp, g, axis % g.ndim, exclusive, not reverse),)


_CUMSUM = register("cumsum", args=("x",), check=_check_cumsum, forward=_cumsum_forward,
                   backward=_cumsum_backward)


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    """The running sum of ``x`` along ``axis`` (an int, default 0): ``[a, a + b, a + b + c]``;
    ``exclusive`` leaves each entry out of its own sum (``[0, a, a + b]``), ``reverse`` sums
    from the end. Integers wrap; float16 adds in float32. The gradient is the running sum of
    the cotangent in the other direction."""
    return _CUMSUM(x, axis=_static_int("cumsum", "axis", axis), exclusive=bool(exclusive),
                   reverse=bool(reverse))


# ---- unsorted_segment_sum -----------------------------------------------------------------------
_SEGMENT_DTYPES = (dtypes.float16, dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64)


def _check_segment_sum(data, ids, *, num_segments):
    if data.dtype not in _SEGMENT_DTYPES:
        raise TypeError(f"unsorted_segment_sum: data must be float16, float32, float64, int32 or "
                        f"int64, got {data.dtype}")
    require_int("unsorted_segment_sum", "segment_ids", ids)
    if tuple(data.shape[:ids.ndim]) != tuple(ids.shape):
        raise InvalidArgumentError(f"unsorted_segment_sum: data.shape = {list(data.shape)} must "
                                   f"start with segment_ids.shape = {list(ids.shape)}")


def _segment_rows(shape, ids_ndim):
    return math.prod(shape[:ids_ndim]), math.prod(shape[ids_ndim:])


def _segment_sum_forward(k, xp, data, ids, *, num_segments):
    n, width = _segment_rows(data.shape, ids.ndim)
    # row 0 collects the negative ids, which TF drops; id i goes to row i + 1
    flat = ids.reshape(-1).astype(np.int64)
    shifted = xp.where(flat < 0, 0, flat + 1)
    out = xp.zeros((num_segments + 1, width), data.dtype)
    rows = xp.ascontiguousarray(data).reshape(n, width)
    if data.dtype == np.int64:  # the same sums modulo 2**64; the GPU atomics take uint64 only
        rows, target = rows.view(np.uint64), out.view(np.uint64)
    else:
        target = out
    try:
        k.scatter_add_rows(rows, shifted, target)
    except ValueError:  # the CPU kernel's range check: find the id for TF's message
        bad = xp.flatnonzero(flat >= num_segments)
        if not bad.size:
            raise
        i = int(bad[0])
        raise InvalidArgumentError(f"unsorted_segment_sum: segment_ids[{i}] = {int(flat[i])} is "
                                   f"out of range [0, {num_segments})") from None
    out = out[1:].reshape((num_segments,) + tuple(data.shape[ids.ndim:]))
    return out, (shifted, data.shape, ids.ndim)


def _segment_sum_backward(k, xp, res, g, *, num_segments):
    shifted, shape, ids_ndim = res
    n, width = _segment_rows(shape, ids_ndim)
    rows = xp.concatenate([xp.zeros((1, width), g.dtype),
                           xp.ascontiguousarray(g).reshape(num_segments, width)])
    out = xp.empty((n, width), g.dtype)
    k.gather_rows(rows, shifted, out)  # dropped ids read the zero row (or, on the GPU, zeros)
    return out.reshape(shape), None


_UNSORTED_SEGMENT_SUM = register(
    "unsorted_segment_sum", args=("data", "segment_ids"), check=_check_segment_sum,
    forward=_segment_sum_forward, backward=_segment_sum_backward, family="indexing")


def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    """``output[i] = sum(data[j...])`` over the ``j...`` with ``segment_ids[j...] == i``
    (``tf.math.unsorted_segment_sum``), 0 for empty segments.

    Args:
      data: A float16/32/64 or int32/64 Tensor.
      segment_ids: An integer Tensor whose shape is a prefix of ``data.shape``; ids in any
        order. Negative ids are dropped, as TF.
      num_segments: The number of segments (an int >= 0).
      name: Ignored.

    Returns:
      A Tensor of data's dtype with shape ``[num_segments] + data.shape[segment_ids.ndim:]``.
      Duplicate ids accumulate in index order on both devices (deterministic).

    The gradient with respect to ``data`` gathers the cotangent rows (zeros for dropped ids).

    Raises:
      InvalidArgumentError: ``num_segments`` < 0, a shape of ``segment_ids`` that does not
        start ``data.shape``, or (CPU, as TF's CPU kernel) an id >= ``num_segments``; the GPU
        drops such ids, as TF's GPU kernel.
      TypeError: a non-integer ``segment_ids`` or ``num_segments``, or an unsupported dtype.
    """
    count = _static_int("unsorted_segment_sum", "num_segments", num_segments)
    if count < 0:
        raise InvalidArgumentError(f"unsorted_segment_sum: num_segments must not be negative, "
                                   f"got {count}")
    return _UNSORTED_SEGMENT_SUM(data, segment_ids, num_segments=count)


def unsorted_segment_mean(data, segment_ids, num_segments, name=None):
    """``output[i]`` is the mean of the ``data[j...]`` with ``segment_ids[j...] == i``
    (``tf.math.unsorted_segment_mean``), 0 for empty segments: ``unsorted_segment_sum``
    divided by the segment's count (at least 1), as TF computes it (so integer data gives
    float64, and the gradient is the sum's scaled by 1 / count).

    Raises:
      As ``unsorted_segment_sum``."""
    from ..core import registry
    from ..core.convert import convert_to_tensor
    from .creation import ones
    from .math import maximum, truediv
    from .shape import reshape

    node = registry.symbolic_call(unsorted_segment_mean, (data, segment_ids),
                                  dict(num_segments=num_segments))
    if node is not NotImplemented:  # one node of the TF1 graph being built
        return node
    data_t = convert_to_tensor(data)
    ids_t = convert_to_tensor(segment_ids)
    count = _static_int("unsorted_segment_mean", "num_segments", num_segments)
    summed = unsorted_segment_sum(data_t, ids_t, count)
    n = unsorted_segment_sum(ones(tuple(ids_t.shape), data_t.dtype), ids_t, count)
    n = reshape(n, [count] + [1] * (data_t.ndim - ids_t.ndim))
    return truediv(summed, maximum(n, np.ones((), data_t.dtype)))


def segment_sum(data, segment_ids, name=None):
    """``output[i] = sum(data[j])`` over the ``j`` with ``segment_ids[j] == i``
    (``tf.math.segment_sum``): ``segment_ids`` is a sorted int32/int64 vector, one id per row
    of ``data``; the output has ``max(segment_ids) + 1`` rows (0 for empty ids), 0 for ids
    that do not occur. Reads the ids on the host (the output's size depends on them). The
    gradient is ``unsorted_segment_sum``'s.

    Raises:
      InvalidArgumentError: ``segment_ids`` not a vector, not one id per row of ``data``, not
        sorted, or negative (TF's messages).
      TypeError: a non-integer ``segment_ids``.
    """
    from ..core.convert import convert_to_tensor

    ids_t = convert_to_tensor(segment_ids)
    if ids_t.dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"segment_sum: segment_ids must be int32 or int64, got {ids_t.dtype}")
    ids = ids_t.numpy()
    data_t = convert_to_tensor(data)
    if ids.ndim != 1:
        raise InvalidArgumentError("segment_sum: segment_ids should be a vector.")
    if data_t.ndim == 0 or ids.shape[0] != data_t.shape[0]:
        raise InvalidArgumentError("segment_sum: segment_ids should be the same size as "
                                   "dimension 0 of input.")
    if ids.size and ids[0] < 0:
        raise InvalidArgumentError(f"segment_sum: Segment id {int(ids[0])} out of range "
                                   f"[0, {int(ids[-1]) + 1}), possibly because 'segment_ids' "
                                   "input is not sorted.")
    if ids.size > 1 and (np.diff(ids) < 0).any():
        raise InvalidArgumentError("segment_sum: segment ids are not increasing")
    count = int(ids[-1]) + 1 if ids.size else 0
    return unsorted_segment_sum(data_t, ids_t, count)


# ---- einsum -------------------------------------------------------------------------------------
_LABELS = frozenset(string.ascii_letters)


def _parse(equation, n_inputs):
    """(input terms, output term) of an einsum equation; terms are strings of letters, with
    "..." where an ellipsis stands. An implicit output is TF's and numpy's: the ellipsis, then
    the labels that appear once, in alphabetical order."""
    if not isinstance(equation, str):
        raise TypeError(f"einsum: equation must be a string, got {equation!r}")
    eq = equation.replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != n_inputs:
        raise ValueError(f"einsum: equation {equation!r} must have one term per input: it has "
                         f"{len(terms)}, got {n_inputs} inputs")
    for t in terms + ([out] if arrow else []):
        body = t.replace("...", "", 1)
        if not set(body) <= _LABELS or t.count("...") > 1:
            raise ValueError(f"einsum: equation must be letters, commas, '->' and at most one "
                             f"'...' per term, got {equation!r}")
    letters = "".join(t.replace("...", "") for t in terms)
    if arrow:
        body = out.replace("...", "")
        for c in body:
            if c not in letters:
                raise ValueError(f"einsum: output subscripts must appear in the inputs, got "
                                 f"label {c!r} in {equation!r}")
        if len(set(body)) != len(body):
            raise ValueError(f"einsum: output subscripts must not repeat a label, got "
                             f"{equation!r}")
        if "..." in out and not any("..." in t for t in terms):
            raise ValueError(f"einsum: an output '...' needs one in the inputs, got {equation!r}")
    else:
        once = sorted(c for c in set(letters) if letters.count(c) == 1)
        out = ("..." if any("..." in t for t in terms) else "") + "".join(once)
    return tuple(terms), out


def _label_sizes(terms, shapes):
    """label -> size, checking ranks and that each label has one size; and the broadcast
    shape of the ellipsis dimensions."""
    sizes = {}
    ellipses = []
    for i, (t, shape) in enumerate(zip(terms, shapes)):
        named = len(t.replace("...", ""))
        if ("..." in t and len(shape) < named) or ("..." not in t and len(shape) != named):
            want = f"at least {named}" if "..." in t else f"{named}"
            raise InvalidArgumentError(f"einsum: inputs[{i}] must have rank {want} (subscripts "
                                       f"{t!r}), got shape {list(shape)}")
        head, _, tail = t.partition("...")
        e = len(shape) - named
        dims = list(zip(head, shape[:len(head)])) + list(zip(tail, shape[len(head) + e:]))
        ellipses.append(tuple(shape[len(head):len(head) + e]) if "..." in t else ())
        for c, d in dims:
            if sizes.setdefault(c, d) != d:
                raise InvalidArgumentError(f"einsum: label {c!r} must have one size, got "
                                           f"{sizes[c]} and {d} (inputs[{i}] has shape "
                                           f"{list(shape)})")
    try:
        ellipsis = np.broadcast_shapes(*ellipses)
    except ValueError:
        raise InvalidArgumentError(f"einsum: the '...' dimensions must broadcast, got "
                                   f"{[list(e) for e in ellipses]}") from None
    return sizes, ellipsis


def _check_einsum(*ops, terms, out):
    if not ops:
        raise ValueError("einsum: needs at least one input")
    require_same_dtype("einsum", tuple(f"inputs[{i}]" for i in range(len(ops))), *ops)
    if ops[0].dtype.kind not in "fi":
        raise TypeError(f"einsum: inputs must be float16/32/64 or int32/64, got {ops[0].dtype}")
    _, ellipsis = _label_sizes(terms, [o.shape for o in ops])
    if ellipsis and "..." not in out:
        raise InvalidArgumentError(f"einsum: Output contains {len(ellipsis)} broadcasting "
                                   "dimension(s) but no ellipsis (...) was found in the output "
                                   "subscripts.")


def _equation(terms, out):
    return ",".join(terms) + "->" + out


def _einsum_forward(k, xp, *ops, terms, out):
    acc = _acc(ops[0].dtype)
    arrays = [o.astype(acc, copy=False) for o in ops]
    if xp is np and len(ops) > 1:
        new_terms, new_out, _ = _explicit(terms, out, [o.shape for o in ops])
        y = contract(new_terms, new_out, arrays)
    else:
        y = xp.einsum(_equation(terms, out), *arrays, optimize=len(ops) > 1)
    return xp.asarray(y).astype(ops[0].dtype, copy=False), tuple(ops)


def _explicit(terms, out, shapes):
    """The terms with each ellipsis replaced by fresh letters for its dimensions
    (right-aligned, as broadcasting), and every label's size (an ellipsis letter's is the
    broadcast size)."""
    sizes, ellipsis = _label_sizes(terms, shapes)
    used = set("".join(terms) + out)
    fresh = "".join([c for c in string.ascii_letters if c not in used][:len(ellipsis)])
    sizes.update(zip(fresh, ellipsis))

    def expand(t, e):
        return t.replace("...", fresh[len(fresh) - e:])

    new_terms = [expand(t, len(s) - len(t.replace("...", ""))) for t, s in zip(terms, shapes)]
    return new_terms, expand(out, len(ellipsis)), sizes


def _diagonal(xp, a, term, shape, dtype):
    """``a`` (one axis per distinct label of ``term``, in order of first appearance) placed on
    the diagonals of an array of ``shape`` where ``term`` repeats a label, zero elsewhere."""
    first = {}
    view = []
    for p, c in enumerate(term):
        view.append(shape[p] if c not in first else 1)
        first.setdefault(c, p)
    out = xp.reshape(a, view)
    for p, c in enumerate(term):
        q = first[c]
        if q != p:
            idx = xp.arange(shape[p])
            rows = [1] * len(shape)
            cols = [1] * len(shape)
            rows[q], cols[p] = shape[q], shape[p]
            out = out * (xp.reshape(idx, rows) == xp.reshape(idx, cols)).astype(dtype)
    return xp.broadcast_to(out, shape)


def _einsum_backward(k, xp, ops, g, *, terms, out, needed=None):
    new_terms, new_out, sizes = _explicit(terms, out, [o.shape for o in ops])
    acc = _acc(g.dtype)
    # the operands broadcast over the whole ellipsis (views), so every label has one size
    arrays = [o.astype(acc, copy=False) for o in ops]
    full = [xp.broadcast_to(a, [sizes[c] for c in t]) for t, a in zip(new_terms, arrays)]
    cotangent = g.astype(acc, copy=False)
    grads = []
    for i, (t, o) in enumerate(zip(new_terms, ops)):
        if (needed is not None and not needed[i]) or o.dtype.kind != "f":
            grads.append(None)
            continue
        others = [j for j in range(len(ops)) if j != i]
        unique = "".join(dict.fromkeys(t))
        reachable = set(new_out).union(*(new_terms[j] for j in others))
        # labels summed inside this operand alone are broadcast back afterwards
        keep = "".join(c for c in unique if c in reachable)
        eq = ",".join([new_out] + [new_terms[j] for j in others]) + "->" + keep
        if xp is np and others:
            part = contract([new_out] + [new_terms[j] for j in others], keep,
                            [cotangent] + [arrays[j] for j in others])
        else:
            part = xp.einsum(eq, cotangent, *[full[j] for j in others], optimize=bool(others))
        part = xp.reshape(xp.asarray(part), [sizes[c] if c in keep else 1 for c in unique])
        spread = xp.broadcast_to(part, [sizes[c] for c in unique])
        grad = _diagonal(xp, spread, t, [sizes[c] for c in t], acc)
        # ellipsis dimensions this operand broadcast from size 1 sum back to 1
        axes = tuple(p for p, c in enumerate(t) if o.shape[p] == 1 and sizes[c] != 1)
        if axes:
            grad = xp.sum(grad, axis=axes, keepdims=True)
        grads.append(xp.ascontiguousarray(grad).astype(o.dtype, copy=False))
    return tuple(grads)


_EINSUM = register("einsum", args=("inputs...",), check=_check_einsum, forward=_einsum_forward,
                   backward=_einsum_backward, partial_backward=True)


def einsum(equation, *inputs, **kwargs):
    """Tensor contraction over subscripts (``tf.einsum``): ``einsum("ij,jk->ik", a, b)`` is a
    matrix product, ``"ii->i"`` a diagonal, ``"...ij->...ji"`` a batched transpose. Without
    "->" the output is the ellipsis and the labels that appear once, alphabetically. Named
    labels must have one size everywhere; ellipsis dimensions broadcast. The inputs share one
    dtype (float16/32/64, int32/64; float16 is computed in float32). ``name`` and
    ``optimize`` are accepted and ignored (three operands or more contract in the order of
    numpy's greedy ``einsum_path``).

    Raises:
      ValueError: a malformed equation, or one term per input not given.
      InvalidArgumentError: ranks that do not match the subscripts, a label with two sizes,
        or an explicit output without "..." where the ellipsis stands for dimensions.
      TypeError: mixed or unsupported dtypes."""
    unknown = set(kwargs) - {"name", "optimize"}
    if unknown:
        raise TypeError(f"einsum: unexpected keyword arguments {sorted(unknown)}")
    if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)):
        inputs = tuple(inputs[0])
    terms, out = _parse(equation, len(inputs))
    return _EINSUM(*inputs, terms=terms, out=out)
