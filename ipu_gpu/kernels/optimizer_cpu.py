"""One-pass optimizer updates on the CPU (Numba): Keras's Adam and SGD with momentum.

The generic path (``keras/optimizers``) updates a variable with ops: Adam is about nine
elementwise op calls per variable per step, each a dispatch, an output allocation and a full
pass over the data. These kernels read the gradient once and update the variable and its slots
in place in one serial pass, with TF's kernel arithmetic in the variables' dtype, element by
element in the same order as the op expressions (so results equal the generic path's):

* ``adam`` (TF's ApplyAdam, no amsgrad)::

      m += (g - m) * (1 - beta_1);  v += (g * g - v) * (1 - beta_2)
      var -= m * alpha / (sqrt(v) + epsilon)

* ``momentum`` (TF's ApplyKerasMomentum)::

      accum = accum * momentum - g * lr
      var += accum                                    (nesterov: var += accum * momentum - g * lr)

* ``sgd``: ``var -= g * lr``; ``sub_product`` and ``add_product``: ``var -= g * lr`` and
  ``var += g * lr`` for ``Variable.assign_sub``/``assign_add`` of a pending ``lr * g``
  (arrays of any rank, reshaped in the kernel: the three Python-side reshapes cost as much as
  the dispatch on a bias). No fastmath: the product is rounded before the sum, as numpy's two
  passes round it (no fused multiply-add).

Arguments are C-contiguous float32/float64 numpy arrays of one dtype viewed as 1-D, and
``coef``, the scalars as a 1-D array of that dtype (so the arithmetic stays in that dtype).
``error_model="numpy"``: a zero denominator gives inf/NaN as the ops do (Python's model
would raise), and without that division check LLVM vectorises the loops (Adam's sqrt and
divide ran 7x slower scalar). Serial, as ``elementwise_cpu``: at weight sizes an OpenMP
launch and its spinning threads cost more than they save next to the step's BLAS calls. The
caller decides which buffers may be written in place (``Variable._buffer_for_update``).
"""

from __future__ import annotations

import numpy as np
from numba import njit


def fits(*arrays) -> bool:
    """Whether the kernels here take these arrays: numpy, C-contiguous, one shape, one
    float32/float64 dtype."""
    first = arrays[0]
    d = first.dtype
    if type(first) is not np.ndarray or not (d == np.float32 or d == np.float64):
        return False
    for a in arrays:
        if (type(a) is not np.ndarray or a.dtype != d or a.shape != first.shape
                or not a.flags.c_contiguous):
            return False
    return True


@njit(cache=True, nogil=True, error_model="numpy")
def adam(var, m, v, g, coef):
    """Adam step in place: ``coef`` = (alpha, epsilon, 1 - beta_1, 1 - beta_2)."""
    alpha, epsilon, one_minus_beta_1, one_minus_beta_2 = coef[0], coef[1], coef[2], coef[3]
    for i in range(var.size):
        gi = g[i]
        mi = m[i]
        mi = mi + (gi - mi) * one_minus_beta_1
        vi = v[i]
        vi = vi + (gi * gi - vi) * one_minus_beta_2
        m[i] = mi
        v[i] = vi
        var[i] = var[i] - mi * alpha / (np.sqrt(vi) + epsilon)


@njit(cache=True, nogil=True, error_model="numpy")
def momentum(var, accum, g, coef, nesterov):
    """SGD-with-momentum step in place: ``coef`` = (lr, momentum)."""
    lr, mom = coef[0], coef[1]
    for i in range(var.size):
        step = g[i] * lr
        a = accum[i] * mom - step
        accum[i] = a
        if nesterov:
            var[i] = var[i] + (a * mom - step)
        else:
            var[i] = var[i] + a


@njit(cache=True, nogil=True, error_model="numpy")
def _sub_scaled(var, g, lr):
    for i in range(var.size):
        var[i] = var[i] - g[i] * lr


@njit(cache=True, nogil=True, error_model="numpy")
def _add_scaled(var, g, lr):
    for i in range(var.size):
        var[i] = var[i] + g[i] * lr


@njit(cache=True, nogil=True, error_model="numpy")
def sgd(var, g, coef):
    """Plain SGD step in place: ``coef`` = (lr,)."""
    _sub_scaled(var, g, coef[0])


@njit(cache=True, nogil=True, error_model="numpy")
def sub_product(var, g, lr):
    """``var -= g * lr`` in place, ``var`` and ``g`` of one shape (any rank), ``lr`` 0-d."""
    _sub_scaled(var.reshape(-1), g.reshape(-1), lr[()])


@njit(cache=True, nogil=True, error_model="numpy")
def add_product(var, g, lr):
    """``var += g * lr`` in place, ``var`` and ``g`` of one shape (any rank), ``lr`` 0-d."""
    _add_scaled(var.reshape(-1), g.reshape(-1), lr[()])
