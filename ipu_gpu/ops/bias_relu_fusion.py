"""``tf.nn.relu(tf.nn.bias_add(v, b))`` in one pass on the CPU: bias_add leaves its sum not
computed (``core.tensor.deferred``) and a relu of it writes ``relu(v + b)`` straight from
``v`` and ``b``, so the full-size sum is never written to memory and read back (a dense or
conv layer's epilogue in a training step). Each op is still recorded on the tape as itself,
with the residuals it keeps when run alone (bias_add: shapes; relu: its output), so the
gradients, and the tape's relu-of-bias_add pair rule, are those of the two ops.

The sum is deferred only where computing it later gives what computing it now would: numpy
float32/float64 C-contiguous operands, channels last, no allocation hook (the ledger charges
outputs as they are made), no replica running, no TF1 graph recording variable reads, and
operand arrays that nothing but their Tensor or Variable holds (a caller's numpy array could
be written before the sum is read; a variable whose buffer a deferred sum holds is updated
into a new buffer, ``Variable._owns_buffer``). Anything that reads the sum computes it with
bias_add's own kernel (the same bits). Elsewhere both ops run as registered.
"""

from __future__ import annotations

import sys

import numpy as np

from ..core import registry as _registry
from ..core import tape as _tape
from ..core import tensor as _tensor
from ..core.tensor import Tensor, Variable, wrap
from ._util import _ELEMENTWISE_CPU, elementwise_cpu

_HELD_REFS = 3  # sys.getrefcount of an operand array held only by its Tensor: slot, local, call
_tapes = _tape._local
_SLOT = _tensor._SLOT  # a pending Tensor's slot: (compute, operands) until computed


def _free(t):
    """The numpy array of the plain Tensor or Variable ``t`` when nothing else holds it and it
    owns its memory, else None."""
    tt = type(t)
    if tt is Tensor:
        a = t._value
    elif tt is Variable and not _tensor._slotted:
        a = t._host_value
    else:
        return None
    if type(a) is not np.ndarray or a.base is not None or sys.getrefcount(a) > _HELD_REFS:
        return None
    return a


def deferred_bias_add(op, value, bias, data_format):
    """``op(value, bias, data_format=...)`` (the registered bias_add; ``value`` a plain
    Tensor) as a deferred Tensor, recorded on the recording tapes as the op records itself;
    None where the sum is not deferred (the caller runs the op)."""
    if (_tensor._allocation_hook is not None or _registry._variable_read_probe is not None
            or not (data_format is None or (type(data_format) is str
                                            and data_format.endswith("C")))):
        return None
    a = value._value  # ``_free(value)`` inlined (``value`` is a plain Tensor)
    if type(a) is not np.ndarray or a.base is not None or sys.getrefcount(a) > _HELD_REFS:
        return None
    b = _free(bias)
    if b is None or a.ndim < 2:
        return None
    k = _ELEMENTWISE_CPU[0] if _ELEMENTWISE_CPU else elementwise_cpu(np, a)  # the module
    if k is None or not k.fits2(a, b):
        return None
    static = {"data_format": data_format}
    if data_format is not None or b.ndim != 1 or b.shape[0] != a.shape[-1]:
        op.check(a, b, **static)  # else: one dtype (fits2), a matrix or more, a bias per column
    out = _tensor.deferred(k.bias_add_last, (a, b))
    if _tapes.tapes:
        if type(bias) is Variable:
            _tape.variable_accessed(bias)
        _tape.record_one(op, [value._id, bias._id], [a, b], out._id, None,
                         (a.shape, b.shape), static, np)
    return out


def relu_of_deferred(op, features):
    """``op(features)`` (the registered relu) for a deferred bias_add sum, from its operands
    in one pass, recorded as the op records itself; None where ``features`` is no longer
    pending or not a bias_add's (the caller runs the op)."""
    pending = _SLOT.__get__(features)  # ``features._pending()``, inlined
    if type(pending) is not tuple or _tensor._allocation_hook is not None:
        return None
    compute, (a, b) = pending
    # a bias_add's sum (``deferred_bias_add``, which loaded the kernels): operands it checked
    # with ``fits2``, held by nothing that could reshape or retype them since
    k = _ELEMENTWISE_CPU[0] if _ELEMENTWISE_CPU else None
    if k is None or compute is not k.bias_add_last:
        return None
    y = k.bias_relu(a, b)
    out = wrap(y)
    if _tapes.tapes:
        _tape.record_one(op, [features._id], [a], out._id, y, (y,), {}, np)
    return out
