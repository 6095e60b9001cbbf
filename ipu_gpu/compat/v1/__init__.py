"""``tf.compat.v1``, and what ``import tensorflow`` shows a program written for Graphcore's
TF 1.15 build: the TF1 names. Today these are the names TF1 shares with the eager core and
the behaviour switches; a name ipu_gpu does not emulate raises AttributeError naming it."""

import sys as _sys
import types as _types

import ipu_gpu as _core

from ...ops.nn import xw_plus_b as _xw_plus_b
from ..behavior import (disable_eager_execution, disable_v2_behavior,  # noqa: F401
                        enable_eager_execution, enable_v2_behavior)

_SHARED = [n for n in _core.__all__ if n not in ("backend_name", "set_backend", "BackendError",
                                                  "UnconnectedGradients")]
globals().update({n: getattr(_core, n) for n in _SHARED})

__all__ = sorted(_SHARED + ["disable_eager_execution", "disable_v2_behavior",
                            "enable_eager_execution", "enable_v2_behavior"])

# tf.compat.v1.nn: TF2's tf.nn plus the TF1-only names
nn = _types.ModuleType(f"{__name__}.nn", "``tf.compat.v1.nn``: TF2's ``tf.nn`` plus TF1's "
                       "``xw_plus_b``.")
nn.__dict__.update({n: getattr(_core.nn, n) for n in _core.nn.__all__})
nn.xw_plus_b = _xw_plus_b
nn.__all__ = sorted([*_core.nn.__all__, "xw_plus_b"])
_sys.modules[nn.__name__] = nn
