"""``tf.debugging``: assertions and numeric checks, with TensorFlow's eager errors.

Eager TensorFlow evaluates an assertion at once: a failed value check raises
``InvalidArgumentError`` whose message lists the condition, the first differing indices and
values, and the first elements of each operand (``summarize`` of them, 3 by default, all for
a negative value); shape and rank checks, decidable from the static shapes, raise
``ValueError``. The texts below are TensorFlow's (``check_ops.py``), with the runtime's
``{{function_node ...}}`` and ``[Op:...]`` decorations left out. As in TensorFlow, Python
numbers are converted on their own (``assert_equal(float_tensor, 1)`` compares float32
with int32 and raises), and every check reads the values (on a GPU: ``# syncs device``).
"""

from __future__ import annotations

import numpy as np

from .core.convert import convert_to_tensor
from .core.tensor import Tensor
from .errors import InvalidArgumentError

__all__ = ["Assert", "assert_all_finite", "assert_equal", "assert_greater",
           "assert_greater_equal", "assert_less", "assert_less_equal", "assert_near",
           "assert_non_negative", "assert_none_equal", "assert_rank", "assert_rank_at_least",
           "assert_rank_in", "assert_shapes", "check_numerics"]

_TF_NAMES = {"float16": "half", "float32": "float", "float64": "double"}


def _tf_name(d) -> str:
    return _TF_NAMES.get(np.dtype(d).name, np.dtype(d).name)


def _shape_str(shape) -> str:
    """A static shape as TensorFlow prints a TensorShape: ``(2, 3)``, ``(2,)``, ``()``."""
    return repr(tuple(int(d) for d in shape))


def _dims_str(shape) -> str:
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def _shape_and_dtype_str(t: Tensor) -> str:
    return f"shape={_shape_str(t.shape)} dtype={t.dtype.name}"


def _message_prefix(message) -> str:
    return f"{message}.  " if message else ""


def _host(t: Tensor) -> np.ndarray:
    return t.numpy()  # syncs device


# ---- element-wise comparisons ------------------------------------------------------------


def _binary_assert(sym, opname, compare, x, y, message, summarize):
    x = convert_to_tensor(x)
    y = convert_to_tensor(y)
    if x.dtype != y.dtype:
        raise InvalidArgumentError(
            f"cannot compute {opname} as input #1(zero-based) was expected to be a "
            f"{_tf_name(x.dtype)} tensor but is a {_tf_name(y.dtype)} tensor")
    try:
        np.broadcast_shapes(tuple(x.shape), tuple(y.shape))
    except ValueError:
        raise InvalidArgumentError(f"Incompatible shapes: {_dims_str(x.shape)} vs. "
                                   f"{_dims_str(y.shape)}") from None
    xa, ya = _host(x), _host(y)
    test = np.asarray(compare(xa, ya))
    if test.all():
        return None
    if summarize is None:
        summarize = 3
    elif summarize < 0:
        summarize = 10**9
    data = [f"Condition x {sym} y did not hold."]
    if summarize > 0:
        if tuple(x.shape) == tuple(y.shape) and x.ndim:
            mask = ~test
            indices = np.argwhere(mask)
            n = min(summarize, indices.shape[0])
            data += [f"Indices of first {n} different values:", indices[:n],
                     "Corresponding x values:", xa[mask].reshape(-1)[:n],
                     "Corresponding y values:", ya[mask].reshape(-1)[:n]]
        xf, yf = xa.reshape(-1), ya.reshape(-1)
        nx, ny = min(xf.size, summarize), min(yf.size, summarize)
        data += [f"First {nx} elements of x:", xf[:nx], f"First {ny} elements of y:", yf[:ny]]
    if message is not None:
        data = [message] + data
    raise InvalidArgumentError("\n".join(str(d) for d in data))


def assert_equal(x, y, message=None, summarize=None, name=None):
    """Assert the condition ``x == y`` holds element-wise (shapes broadcast).

    Raises:
      InvalidArgumentError: the condition fails (message: the condition, the first
        ``summarize`` differing indices and values, the first elements of x and y), x and y
        have different dtypes, or their shapes do not broadcast.
    """
    return _binary_assert("==", "Equal", np.equal, x, y, message, summarize)


def assert_none_equal(x, y, summarize=None, message=None, name=None):
    """Assert the condition ``x != y`` holds element-wise."""
    return _binary_assert("!=", "NotEqual", np.not_equal, x, y, message, summarize)


def assert_less(x, y, message=None, summarize=None, name=None):
    """Assert the condition ``x < y`` holds element-wise (errors as ``assert_equal``)."""
    return _binary_assert("<", "Less", np.less, x, y, message, summarize)


def assert_less_equal(x, y, message=None, summarize=None, name=None):
    """Assert the condition ``x <= y`` holds element-wise."""
    return _binary_assert("<=", "LessEqual", np.less_equal, x, y, message, summarize)


def assert_greater(x, y, message=None, summarize=None, name=None):
    """Assert the condition ``x > y`` holds element-wise (errors as ``assert_equal``)."""
    return _binary_assert(">", "Greater", np.greater, x, y, message, summarize)


def assert_greater_equal(x, y, message=None, summarize=None, name=None):
    """Assert the condition ``x >= y`` holds element-wise."""
    return _binary_assert(">=", "GreaterEqual", np.greater_equal, x, y, message, summarize)


def assert_non_negative(x, message=None, summarize=None, name=None):
    """Assert ``x >= 0`` element-wise (numeric ``x``).

    Raises:
      InvalidArgumentError: an element is negative (TF's message: the condition, then x's
        shape, dtype and first ``summarize`` elements, 3 by default).
      TypeError: a non-numeric ``x``."""
    x = convert_to_tensor(x)
    if np.dtype(x.dtype).kind not in "iuf":
        raise TypeError(f"Cannot convert 0 to EagerTensor of dtype {np.dtype(x.dtype).name}")
    xa = _host(x)
    if (xa >= 0).all():
        return None
    if xa.ndim:
        flat = xa.reshape(-1)
        n = flat.size if summarize is not None and summarize < 0 else \
            min(flat.size, 3 if summarize is None else summarize)
        items = [str(v) for v in flat[:n]] + (["..."] if n < flat.size else [])
        shown = str(items)
    else:
        shown = str(xa[()])
    head = f"{message}.  " if message else ""
    raise InvalidArgumentError(f"{head}\nCondition x >= 0 did not hold element-wise:\nx (shape="
                               f"{tuple(int(d) for d in x.shape)} dtype="
                               f"{np.dtype(x.dtype).name}) = \n{shown}")


# ---- Assert and assert_near --------------------------------------------------------------


def _summarize(value, summarize) -> str:
    """One data item as TF's eager ``Assert`` prints it: the first ``summarize`` elements,
    ', '-joined, '...' when cut; strings as Python bytes."""
    if isinstance(value, (str, bytes)):
        return str(np.bytes_(value.encode() if isinstance(value, str) else value))
    a = _host(value) if isinstance(value, Tensor) else np.asarray(value)
    if summarize is None:
        summarize = 3
    elif summarize < 0:
        summarize = a.size
    if a.ndim:
        flat = a.reshape(-1)
        items = [str(v) for v in flat[:summarize]]
        if len(items) < flat.size:
            items.append("...")
    else:
        items = [str(a[()])] if summarize != 0 else []
    return ", ".join(items)


def _scalar_repr(value, dtype) -> str:
    """A scalar as eager TF prints a Tensor: ``tf.Tensor(0.01, shape=(), dtype=float32)``."""
    text = str(np.asarray(value, dtype)[()])  # numpy's shortest repr, as TF's Tensor repr
    return f"tf.Tensor({text}, shape=(), dtype={np.dtype(dtype).name})"


def Assert(condition, data, summarize=None, name=None):  # noqa: N802 - TF's name
    """Asserts that the given condition is true.

    Raises:
      InvalidArgumentError: ``condition`` is False ("Expected '...' to be true. Summarized
        data: ..." with the first ``summarize`` elements of each ``data`` item).
    """
    if not bool(np.all(_host(convert_to_tensor(condition)))):
        text = "\n".join(_summarize(d, summarize) for d in data)
        raise InvalidArgumentError(f"Expected '{_scalar_repr(False, np.bool_)}' to be true. "
                                   f"Summarized data: {text}")
    return None


def assert_near(x, y, rtol=None, atol=None, message=None, summarize=None, name=None):
    """Assert that x and y are close element-wise: ``|x - y| <= atol + rtol * |y|``.

    ``rtol`` and ``atol`` default to 10 times the dtype's epsilon; y is converted to x's
    dtype.

    Raises:
      InvalidArgumentError: some element is not close (TF's ``Assert`` message).
      ValueError: x is not floating point ("data type <class 'numpy.int32'> not inexact").
    """
    x = convert_to_tensor(x)
    y = convert_to_tensor(y, dtype=x.dtype)
    eps = np.finfo(x.dtype.type).eps
    rtol = 10 * eps if rtol is None else rtol
    atol = 10 * eps if atol is None else atol
    xa, ya = _host(x), _host(y)
    with np.errstate(all="ignore"):
        r, a = np.asarray(rtol, x.dtype), np.asarray(atol, x.dtype)
        close = np.abs(xa - ya) <= a + r * np.abs(ya)
    if close.all():
        return None
    data = [_message_prefix(message),
            f"x and y not equal to tolerance rtol = {_scalar_repr(rtol, x.dtype)}, "
            f"atol = {_scalar_repr(atol, x.dtype)}",
            f"x (shape={_shape_str(x.shape)} dtype={x.dtype.name}) = ", x,
            f"y (shape={_shape_str(y.shape)} dtype={y.dtype.name}) = ", y]
    return Assert(False, data, summarize=summarize)


# ---- ranks and shapes --------------------------------------------------------------------


def _rank_value(rank):
    r = convert_to_tensor(rank)
    if r.dtype != np.int32:
        raise TypeError(f"tensor must be of type tf.int32; got tf.{r.dtype.name}")
    a = _host(r)
    if a.ndim != 0:
        raise ValueError("Rank must be a scalar.")
    return int(a)


def assert_rank(x, rank, message=None, name=None):
    """Assert that x has rank equal to ``rank``.

    Raises:
      ValueError: x has another rank ("Tensor  must have rank 2.  Received rank 1, shape
        (2,)"), or ``rank`` is not a scalar.
      TypeError: ``rank`` is not an int32 value.
    """
    x = convert_to_tensor(x)
    want = _rank_value(rank)
    if x.ndim != want:
        raise ValueError(f"{_message_prefix(message)}Tensor  must have rank {want}.  Received "
                         f"rank {x.ndim}, shape {_shape_str(x.shape)}")
    return None


def assert_rank_at_least(x, rank, message=None, name=None):
    """Assert that x has rank ``rank`` or higher (ValueError otherwise)."""
    x = convert_to_tensor(x)
    want = _rank_value(rank)
    if x.ndim < want:
        raise ValueError(f"{_message_prefix(message)}Tensor  must have rank at least {want}.  "
                         f"Received rank {x.ndim}, shape {_shape_str(x.shape)}")
    return None


def assert_rank_in(x, ranks, message=None, name=None):
    """Assert that x has a rank in ``ranks`` (ValueError otherwise)."""
    x = convert_to_tensor(x)
    wanted = tuple(_rank_value(r) for r in ranks)
    if x.ndim not in wanted:
        raise ValueError(f"{_message_prefix(message)}Tensor  must have rank in {wanted}.  "
                         f"Received rank {x.ndim}, shape {_shape_str(x.shape)}")
    return None


def _known(size) -> bool:
    if size is None:
        return False
    try:
        int(size)
    except (ValueError, TypeError):
        return False
    return True


def assert_shapes(shapes, data=None, summarize=None, message=None, name=None):
    """Assert tensor shapes and dimension size relationships between tensors.

    ``shapes`` is a list (or dict) of ``(tensor, shape)`` pairs; each shape entry is an
    int (that size), a string naming a size shared by every entry of that name (``'N'``),
    ``None`` or ``'.'`` (any size); a first entry ``...`` (Ellipsis) or ``'*'`` allows any
    number of leading dimensions. An empty shape stands for a scalar or a 1-element vector.

    Raises:
      ValueError: a rank or a size does not match (TF's messages, e.g. "Specified by tensor
        shape=(2, 3) dtype=float32 dimension 0.  Tensor shape=(3,) dtype=float32 dimension 0
        must have size 2.  Received size 3, shape (3,)").
    """
    if isinstance(shapes, dict):
        shapes = shapes.items()
    prefix = _message_prefix(message)
    entries = []
    for x, symbolic in shapes:
        if symbolic is None:
            continue
        x = convert_to_tensor(x)
        if not (hasattr(symbolic, "__iter__") or hasattr(symbolic, "__getitem__")):
            raise ValueError(f"{prefix}Tensor {_shape_and_dtype_str(x)}.  Specified shape must "
                             "be an iterable.  An iterable has the attribute `__iter__` or "
                             f"`__getitem__`.  Received specified shape: {symbolic}")
        symbols = tuple(symbolic)
        leading = False
        for i, s in enumerate(symbols):
            if isinstance(s, str) and s == "*" or s is Ellipsis:
                if i != 0:
                    raise ValueError(f"{prefix}Tensor {_shape_and_dtype_str(x)} specified shape "
                                     f"index {i}.  Symbol `...` or `*` for a variable number of "
                                     "unspecified dimensions is only allowed as the first entry")
                leading = True
        sizes = (1,) if x.ndim == 0 else tuple(int(d) for d in x.shape)
        sym = symbols[1:] if leading else symbols
        entries.append((x, leading, sizes, sym or (1,)))

    for x, leading, _, sym in entries:  # ranks first, as TF's control dependencies order
        rank = len(sym)
        if leading:
            if rank not in (0, 1):
                assert_rank_at_least(x, rank, message=message)
        elif rank in (0, 1):
            assert_rank_in(x, [0, 1], message=message)
        else:
            assert_rank(x, rank, message=message)

    specified = {}
    for x, leading, actual, sym in entries:
        for i, s in enumerate(sym):
            if s is None or (isinstance(s, str) and s == "."):
                continue
            dim = i - len(sym) if leading else i
            if _known(s) or s in specified:
                if _known(s):
                    size, how = int(s), "Specified explicitly"
                else:
                    size, by, at = specified[s]
                    how = f"Specified by tensor {_shape_and_dtype_str(by)} dimension {at}"
                got = actual[dim]
                if got != size:
                    raise ValueError(f"{prefix}{how}.  Tensor {_shape_and_dtype_str(x)} "
                                     f"dimension {dim} must have size {size}.  Received size "
                                     f"{got}, shape {_shape_str(x.shape)}")
            else:
                specified[s] = (actual[dim], x, dim)
    return None


# ---- numerics ----------------------------------------------------------------------------


def check_numerics(tensor, message, name=None):
    """Checks a tensor for NaN and Inf values; returns the tensor.

    Raises:
      InvalidArgumentError: the tensor holds NaN or Inf ("<message> : Tensor had NaN
        values", "... Inf values", "... Inf and NaN values"), or is not floating point.
    """
    t = convert_to_tensor(tensor)
    if t.dtype.kind != "f":
        raise InvalidArgumentError(f"Value for attr 'T' of {t.dtype.name} is not in the list of "
                                   "allowed values: bfloat16, half, float, double")
    a = _host(t)
    has_nan, has_inf = bool(np.isnan(a).any()), bool(np.isinf(a).any())
    if has_nan or has_inf:
        what = "Inf and NaN" if has_nan and has_inf else ("NaN" if has_nan else "Inf")
        raise InvalidArgumentError(f"{message} : Tensor had {what} values")
    return t


def assert_all_finite(x, message, name=None):
    """Assert that the tensor does not contain any NaN's or Inf's; returns it (errors as
    ``check_numerics``)."""
    return check_numerics(x, message)
