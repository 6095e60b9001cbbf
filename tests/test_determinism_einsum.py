"""einsum (forward and gradients) and the spectral norm (ord=2: its SVD and its gradient's
product) give bits that depend only on the shapes: the same under OpenBLAS thread counts 1-3
and Numba thread counts 1-4, where numpy's einsum(optimize=True) hands the contraction to
OpenBLAS's threaded GEMM; close to a float64 numpy reference and to TensorFlow."""

from __future__ import annotations

import hashlib

import numpy as np
from thread_grid import bits_per_thread_count
import pytest

import ipu_gpu as tf
from ipu_gpu.kernels import matmul_cpu
from ipu_gpu.ops import einsum_contract

# (equation, operand shapes, dtype): each contraction above matmul_cpu.SMALL_MNK multiply-adds
CASES = [
    ("ij,jk->ik", [(96, 200), (200, 300)], np.float32),
    ("bhqd,bhkd->bhqk", [(2, 4, 64, 32), (2, 4, 64, 32)], np.float32),
    ("...ij,...jk->...ik", [(3, 1, 64, 80), (2, 80, 96)], np.float32),
    ("abc,cd,de->abe", [(4, 50, 60), (60, 70), (70, 80)], np.float64),
    ("btd,dh->bth", [(8, 40, 96), (96, 128)], np.float32),
]


def _operands(case, seed):
    _, shapes, dtype = case
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def _with_grads(case, seed=0):
    """einsum's output and the gradients of sum(output * u) for each operand (numpy)."""
    eq = case[0]
    xs = [tf.constant(x) for x in _operands(case, seed)]
    with tf.GradientTape() as tape:
        for x in xs:
            tape.watch(x)
        y = tf.einsum(eq, *xs)
    u = np.random.default_rng(seed + 100).standard_normal(y.shape).astype(case[2])
    grads = tape.gradient(y, xs, output_gradients=tf.constant(u))
    return [y.numpy()] + [g.numpy() for g in grads], u


def _spectral(seed=0):
    x = tf.constant(np.random.default_rng(seed).standard_normal((300, 300)).astype(np.float32))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.norm(x, ord=2, axis=(0, 1))
    return [y.numpy(), tape.gradient(y, x).numpy()]


def all_bits():
    """sha256 of every output of CASES (with gradients) and of the spectral norm."""
    out = []
    for case in CASES:
        out += [hashlib.sha256(a.tobytes()).hexdigest() for a in _with_grads(case)[0]]
    return out + [hashlib.sha256(a.tobytes()).hexdigest() for a in _spectral()]


def test_bits_do_not_depend_on_the_blas_or_numba_thread_count():
    runs = bits_per_thread_count("test_determinism_einsum", "all_bits")
    here = all_bits()
    assert all(r == here for r in runs.values()), runs


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_close_to_a_float64_reference(case):
    got, u = _with_grads(case)
    xs = [x.astype(np.float64) for x in _operands(case, 0)]
    eq = case[0]
    tol = 2e-5 if case[2] == np.float32 else 1e-12
    want = np.einsum(eq, *xs)
    np.testing.assert_allclose(got[0], want, rtol=tol, atol=tol * np.abs(want).max())
    if "..." in eq:
        return  # its gradients: against TensorFlow below
    lhs, out = eq.split("->")
    terms = lhs.split(",")
    for i, t in enumerate(terms):  # d sum(y * u) / d x_i: u contracted with the others
        rest = terms[:i] + terms[i + 1:]
        w = np.einsum(",".join([out] + rest) + "->" + t, u.astype(np.float64),
                      *(xs[:i] + xs[i + 1:]))
        np.testing.assert_allclose(got[1 + i], w, rtol=tol, atol=tol * np.abs(w).max())


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_matches_tensorflow(case, real_tf):
    got, u = _with_grads(case)
    xs = [real_tf.constant(x) for x in _operands(case, 0)]
    with real_tf.GradientTape() as tape:
        for x in xs:
            tape.watch(x)
        y = real_tf.einsum(case[0], *xs)
    theirs = [y.numpy()] + [g.numpy() for g in tape.gradient(y, xs, output_gradients=u)]
    tol = 2e-5 if case[2] == np.float32 else 1e-12
    for g, w in zip(got, theirs):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol * np.abs(w).max())


def test_spectral_norm_close_to_float64_and_tensorflow(real_tf):
    y, g = _spectral()
    x = np.random.default_rng(0).standard_normal((300, 300)).astype(np.float32)
    u, s, vh = np.linalg.svd(x.astype(np.float64))
    np.testing.assert_allclose(y, s[0], rtol=1e-6)
    np.testing.assert_allclose(g, np.outer(u[:, 0], vh[0]), atol=1e-6)
    t = real_tf.constant(x)
    with real_tf.GradientTape() as tape:
        tape.watch(t)
        ty = real_tf.norm(t, ord=2, axis=(0, 1))
    np.testing.assert_allclose(y, ty.numpy(), rtol=1e-5)
    np.testing.assert_allclose(g, tape.gradient(ty, t).numpy(), atol=1e-5)


def test_contractions_run_the_tiled_gemm(monkeypatch):
    """Every BLAS-sized two-operand contraction is one matmul_cpu product (the gradients'
    too), bit for bit the product of the reshaped operands (k's matrices as a transposed
    view)."""
    calls = []
    real = einsum_contract.cpu_matmul
    monkeypatch.setattr(einsum_contract, "cpu_matmul",
                        lambda a, b: calls.append((a.shape, b.shape)) or real(a, b))
    q, k = _operands(CASES[1], 3)
    got = tf.einsum("bhqd,bhkd->bhqk", q, k).numpy()
    assert calls == [((8, 64, 32), (8, 32, 64))]
    want = matmul_cpu.matmul(q.reshape(8, 64, 32), k.reshape(8, 64, 32).swapaxes(1, 2))
    np.testing.assert_array_equal(got, want.reshape(2, 4, 64, 64))
    calls.clear()
    _with_grads(CASES[0])
    assert len(calls) == 3  # forward, and one product per gradient


EQUATIONS = [  # the engine on its own: diagonals, sums, broadcasts, outer and scalar results
    ("ij,jk->ik", [(40, 50), (50, 60)]), ("i,i->", [(7,), (7,)]), ("i,j->ij", [(3,), (4,)]),
    ("ij,ij->ij", [(3, 4), (3, 4)]), ("ab,b->a", [(10, 1), (1,)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 6)]), ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 6)]),
    ("iij,jk->ik", [(3, 3, 4), (4, 5)]), ("ijk,kl->l", [(2, 3, 4), (4, 5)]),
    ("ij,kl->", [(2, 3), (4, 5)]), ("ii,ij->j", [(3, 3), (3, 4)]), ("ba,ac->cb", [(3, 4), (4, 5)]),
    ("...,...->...", [(2, 3), (3,)]), ("ij,j,jk->ik", [(3, 4), (4,), (4, 5)]),
    ("i,i,i->", [(5,), (5,), (5,)]), ("...j,...j,...j->...j", [(3, 4), (1, 4), (3, 4)]),
    ("bij,bjk,bkl,blm->bim", [(2, 3, 4), (2, 4, 5), (2, 5, 6), (2, 6, 3)]),
    ("ij,jk->ik", [(0, 5), (5, 3)]), ("ij,jk->ik", [(4, 0), (0, 3)]),
]


@pytest.mark.parametrize("eq,shapes", EQUATIONS, ids=[e for e, _ in EQUATIONS])
@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_engine_against_numpy(eq, shapes, dtype):
    rng = np.random.default_rng(5)
    xs = [(rng.standard_normal(s) * 5).astype(dtype) for s in shapes]
    want = np.einsum(eq, *xs)
    got = tf.einsum(eq, *xs).numpy()
    assert got.shape == want.shape and got.dtype == want.dtype
    if dtype == np.int64:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_ellipsis_dimensions_missing_from_the_output_are_rejected_as_tf(real_tf):
    x = np.ones((3, 4), np.float32)
    for eq, args in [("...j,...j->j", (x, x)), ("...j->j", (x,))]:
        with pytest.raises(real_tf.errors.InvalidArgumentError,
                           match="1 broadcasting dimension"):
            real_tf.einsum(eq, *args)
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"^einsum: Output contains 1 broadcasting dimension\(s\) but "
                                 r"no ellipsis"):
            tf.einsum(eq, *args)
    # an ellipsis that stands for no dimension may be left out
    np.testing.assert_array_equal(tf.einsum("...j,...j->j", x[0], x[0]).numpy(), x[0])
