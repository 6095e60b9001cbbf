"""``AutoCastVariable``: a float32 layer weight read in the layer's 16-bit compute dtype
(Keras 2's ``mixed_precision/autocast_variable.py``).

A layer under a mixed policy (``mixed_float16``) creates its floating weights as
AutoCastVariables. Inside a layer's call (``Layer.__call__``, or a functional-graph probe)
every read of one, by an op or by ``read_value``/``value``, is cast to the compute dtype of
the layer being called; the cast is an op on the tape, so its gradient arrives in the
variable's float32. Outside any layer call reads are float32, as Keras reads them outside
``enable_auto_cast_variables``. The running layer is the call context's ``layer``, which
``Layer.__call__`` sets anyway, so autocasting costs nothing per call; the op registry asks a
Variable subclass with ``_reads_cast`` for ``read_value()`` instead of its buffer.

``dtype`` is the dtype reads give (float16 inside the call), ``true_dtype`` the variable's, as
in Keras.
"""

from __future__ import annotations

import numpy as np

from ...ops import math as _m
from .base_layer import KerasVariable
from .call_context import _CONTEXT


def _autocast_dtype():
    """The dtype AutoCastVariables read as now: the running layer's floating compute dtype,
    or None (no layer call in progress, or a non-floating one)."""
    layer = _CONTEXT.layer
    if layer is None:
        return None
    compute = layer._dtype_policy._compute_np
    return compute if compute.kind == "f" else None


class AutoCastVariable(KerasVariable):
    """A float32 layer weight read in the running layer's compute dtype."""

    __slots__ = ()
    _reads_cast = True  # the op registry reads it through read_value()

    @property
    def dtype(self) -> np.dtype:
        """The dtype a read gives now (the compute dtype inside a layer call)."""
        return _autocast_dtype() or self._value.dtype

    @property
    def true_dtype(self) -> np.dtype:
        """The variable's own dtype (float32), before any cast."""
        return self._value.dtype

    def read_value(self):
        value = super().read_value()
        dtype = _autocast_dtype()
        if dtype is None or dtype == value._value.dtype:
            return value
        return _m.cast(value, dtype)

    def __repr__(self) -> str:
        return (f"<AutoCastVariable '{self._name}' shape={tuple(self._value.shape)} "
                f"dtype={self.true_dtype.name} dtype_to_cast_to={self.dtype.name}>")

