"""Matrix multiplication (``tf.linalg.matmul``): batched, with transposes, BLAS as the engine;
and ``dense_bias``, Keras's Dense layer (matmul + bias + relu) in one op."""

from __future__ import annotations

import numpy as np

from ..core.registry import register
from ..kernels._blas import limit_thread_spin
from ._util import astype, quiet, require_same_dtype, unbroadcast
from ._util import elementwise_cpu as _elementwise_cpu

# OpenBLAS's idle workers would otherwise spin ~0.1 s after every threaded product, holding a
# core the step's next kernels need (kernels/_blas.py); done at import, before any op runs.
limit_thread_spin()

_AB = ("a", "b")


def _mT(xp, x):
    if xp is np:  # the method: np.swapaxes's Python wrapper costs more than the view
        return x.swapaxes(-1, -2)
    return xp.swapaxes(x, -1, -2)


_cublas = None


# the CPU GEMM, imported on the first product (no kernel family loads with ipu_gpu): numpy's
# BLAS in fixed tiles on Numba's threads, whose bits do not depend on the thread count (a
# module global so that benches can swap in np.matmul)
_cpu_matmul = None


def _mm(xp, x, y):
    """x @ y: on the CPU ``kernels/matmul_cpu`` (numpy's BLAS in fixed tiles: bits that do
    not depend on the thread count), or on the GPU cuBLAS called directly
    (``kernels/cublas_gpu``: a GEMM a CUDA graph can capture), cupy.matmul for the dtypes it
    does not cover."""
    if xp is np:
        return (_cpu_matmul or cpu_matmul)(x, y)  # the kernel itself once it is loaded
    if getattr(xp, "__name__", "") != "cupy":  # Tensors (nested tapes)
        return xp.matmul(x, y)
    global _cublas
    if _cublas is None:
        from ..kernels import cublas_gpu as _cublas_module

        _cublas = _cublas_module
    out = _cublas.matmul(x, y)
    return xp.matmul(x, y) if out is None else out


def cpu_matmul(x, y):
    """``x @ y`` of numpy arrays through ``kernels/matmul_cpu`` (bits that do not depend on
    the thread count), imported on the first product."""
    global _cpu_matmul
    if _cpu_matmul is None:
        from ..kernels import matmul_cpu

        _cpu_matmul = matmul_cpu.matmul
    return _cpu_matmul(x, y)


def _check(a, b, *, transpose_a, transpose_b):
    if (a.ndim == 2 and b.ndim == 2 and a.dtype is b.dtype and a.dtype.kind in "fi"
            and a.shape[transpose_a - 1] == b.shape[-2 + transpose_b]):
        return  # two matrices of one dtype whose inner dimensions agree: every check below
    require_same_dtype("matmul", _AB, a, b)
    if a.dtype.kind not in "fi":
        raise TypeError(f"matmul: a must be float16/32/64 or int32/64, got {a.dtype}")
    for name, x in zip(_AB, (a, b)):
        if x.ndim < 2:
            raise ValueError(f"matmul: {name} must have rank >= 2, got shape {list(x.shape)}")
    k_a = a.shape[-2] if transpose_a else a.shape[-1]
    k_b = b.shape[-1] if transpose_b else b.shape[-2]
    if k_a != k_b:
        raise ValueError(f"matmul: b must have {k_a} rows (the inner dimension of a), got "
                         f"{k_b} (a {list(a.shape)}, b {list(b.shape)}, transpose_a={transpose_a}, "
                         f"transpose_b={transpose_b})")
    if a.ndim == 2 and b.ndim == 2:
        return
    try:
        np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise ValueError(f"matmul: b's batch dimensions {list(b.shape[:-2])} must broadcast with "
                         f"a's {list(a.shape[:-2])}") from None


def _forward(k, xp, a, b, *, transpose_a, transpose_b):
    x = _mT(xp, a) if transpose_a else a
    y = _mT(xp, b) if transpose_b else b
    return _mm(xp, x, y), (a, b)


def _grad_a(xp, a, b, g, transpose_a, transpose_b):
    if not transpose_a:
        return _mm(xp, g, b if transpose_b else _mT(xp, b))
    return _mm(xp, _mT(xp, b), _mT(xp, g)) if transpose_b else _mm(xp, b, _mT(xp, g))


def _grad_b(xp, a, b, g, transpose_a, transpose_b):
    if not transpose_b:
        return _mm(xp, a if transpose_a else _mT(xp, a), g)
    return _mm(xp, _mT(xp, g), _mT(xp, a)) if transpose_a else _mm(xp, _mT(xp, g), a)


def _backward(k, xp, res, g, *, transpose_a, transpose_b, needed=(True, True)):
    # needed (from the tape): skip the GEMM of a gradient that would be thrown away, such as
    # the input batch's in a dense layer.
    a, b = res
    ga = gb = None
    if a.ndim == 2 and b.ndim == 2:  # matrices: no batch axes to sum the gradients over
        if xp is np and not transpose_a and not transpose_b:  # a dense layer's product
            return (_mm(xp, g, b.T) if needed[0] else None,
                    _mm(xp, a.T, g) if needed[1] else None)
        if needed[0]:
            ga = _grad_a(xp, a, b, g, transpose_a, transpose_b)
        if needed[1]:
            gb = _grad_b(xp, a, b, g, transpose_a, transpose_b)
        return ga, gb
    if needed[0]:
        ga = unbroadcast(xp, _grad_a(xp, a, b, g, transpose_a, transpose_b), a.shape)
    if needed[1]:
        gb = unbroadcast(xp, _grad_b(xp, a, b, g, transpose_a, transpose_b), b.shape)
    return ga, gb


_MATMUL = register("matmul", args=_AB, check=_check, forward=_forward, backward=_backward,
                   twice_differentiable=True, scalars_follow=True, partial_backward=True)


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           a_is_sparse=False, b_is_sparse=False, output_type=None, name=None):
    """a @ b over the last two axes, batch axes broadcasting; ``transpose_*``/``adjoint_*``
    transpose an operand first (the same for real dtypes). Both operands share one dtype."""
    return _MATMUL(a, b, transpose_a=bool(transpose_a or adjoint_a),
                   transpose_b=bool(transpose_b or adjoint_b))


# ---- matmul + bias (+ relu): Keras's Dense in one op ----------------------------------------
_DENSE_ARGS = ("x", "kernel", "bias")
def _check_dense_bias(x, w, b, *, relu):
    require_same_dtype("dense_bias", _DENSE_ARGS, x, w, b)
    if x.dtype.kind != "f":
        raise TypeError(f"dense_bias: x must be float16/32/64, got {x.dtype}")
    if x.ndim != 2 or w.ndim != 2:
        raise ValueError(f"dense_bias: x and kernel must be matrices, got shapes "
                         f"{list(x.shape)} and {list(w.shape)}")
    if w.shape[0] != x.shape[1]:
        raise ValueError(f"dense_bias: kernel must have {x.shape[1]} rows (the columns of x), "
                         f"got shape {list(w.shape)}")
    if b.ndim != 1 or b.shape[0] != w.shape[1]:
        raise ValueError(f"dense_bias: bias must be a vector of {w.shape[1]} values (the "
                         f"kernel's columns), got shape {list(b.shape)}")


def _dense_bias_forward(k, xp, x, w, b, *, relu):
    z = _mm(xp, x, w)
    e = _elementwise_cpu(xp, z, b)
    if e is not None:  # one pass over the product while it is in cache, in place
        y = e.bias_relu_into(z, b, relu)
    else:
        with quiet(xp):  # inf + -inf is NaN without a warning, as TF
            y = z + b
        if relu:
            y = xp.where(y <= 0, xp.zeros((), y.dtype), y)  # NaN stays NaN
    return y, ((x, w, y) if relu else (x, w, None))


def _dense_bias_backward(k, xp, res, g, *, relu, needed=(True, True, True)):
    x, w, y = res
    c = w.shape[1]
    e = _elementwise_cpu(xp, g, y) if relu else _elementwise_cpu(xp, g)
    db = None
    if e is not None and g.shape[0] and c > 1:  # bias_add's and relu's kernels, or both at once
        if relu:
            g, db = e.relu_grad_column_sums(g, y)
        else:
            db = e.column_sums(g, c)
    else:
        if relu:  # TF's ReluGrad: times the output's mask, NaN in g stays NaN
            g = g * astype(xp, y > 0, g.dtype)
        db = xp.sum(g, axis=0)
    dx = _mm(xp, g, _mT(xp, w)) if needed[0] else None
    dw = _mm(xp, _mT(xp, x), g) if needed[1] else None
    return dx, dw, db if needed[2] else None


_DENSE_BIAS = register("dense_bias", args=_DENSE_ARGS, check=_check_dense_bias,
                       forward=_dense_bias_forward, backward=_dense_bias_backward,
                       twice_differentiable=True, partial_backward=True)


def dense_bias(x, kernel, bias, relu=False):
    """``relu(bias_add(matmul(x, kernel), bias))`` (the relu only with ``relu``) in one op,
    for a matrix ``x`` [batch, in], ``kernel`` [in, units] and ``bias`` [units] of one float
    dtype: what a Keras ``Dense`` layer computes. The bias and the relu are applied to the
    product in one pass while it is in cache, and their gradients taken in one pass, with the
    arithmetic of the three ops (the same bits)."""
    return _DENSE_BIAS(x, kernel, bias, relu=bool(relu))
