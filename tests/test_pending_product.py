"""``lr * g`` left pending (core.tensor._Product) until a variable update applies it in one
pass (issue 15): assign_sub/assign_add/assign give the bits of the multiply op followed by
the update, rounded as numpy's two passes round them (no fused multiply-add); any other read
gives the multiply op's bits; operands that could change are not left pending."""

from __future__ import annotations

import re

import numba
import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu.core.tensor import Tensor, _Product, wrap
from ipu_gpu.kernels import optimizer_cpu


def _data(dtype, shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _fresh(a):
    """A Tensor whose array nothing else holds, as an op's output is."""
    t = tf.constant(a.copy())
    assert type(t) is Tensor
    return t


def _two_passes(w, s, g, how):
    with np.errstate(all="ignore"):
        p = np.multiply(np.asarray(s, w.dtype), g)
        return {"sub": w - p, "add": w + p, "assign": p}[how]


def _fma_differs(w, s, g, how):
    """Where one rounding of ``w -/+ s * g`` (a fused multiply-add) differs from numpy's two
    (float32: the float64 product of two float32 values is exact)."""
    exact = np.float64(np.float32(s)) * g.astype(np.float64)
    one = (w.astype(np.float64) + (exact if how == "add" else -exact)).astype(np.float32)
    return one != _two_passes(w, s, g, how)


def _update(v, p, how):
    return {"sub": v.assign_sub, "add": v.assign_add, "assign": v.assign}[how](p)


@pytest.mark.parametrize("how", ["sub", "add", "assign"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scalar_first", [True, False])
def test_update_of_a_pending_product_is_in_place_with_the_two_ops_bits(how, dtype,
                                                                        scalar_first):
    w, g = _data(dtype, (300, 7), 1), _data(dtype, (300, 7), 2)
    w.reshape(-1)[:6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0]
    g.reshape(-1)[:6] = [1.0, 2.0, np.inf, -0.0, 0.0, np.nan]
    for s in (0.01, 3, -0.5):
        v = tf.Variable(w)
        buf = id(v._value)
        p = s * _fresh(g) if scalar_first else _fresh(g) * s
        assert type(p) is _Product
        _update(v, p, how)
        assert id(v._value) == buf  # written in place: no product, no new buffer
        assert v.numpy().tobytes() == _two_passes(w, s, g, how).tobytes()


@pytest.mark.parametrize("how", ["sub", "add", "assign"])
@pytest.mark.parametrize("shape", [(), (5,), (2, 3, 4)])
def test_update_in_place_for_any_rank(how, shape):
    # the kernels take the arrays as they are (reshaped inside): scalars, vectors, filters
    w, g = _data(np.float32, shape, 8), _data(np.float32, shape, 9)
    v = tf.Variable(w)
    buf = id(v._value)
    _update(v, 0.3 * _fresh(g), how)
    assert id(v._value) == buf
    assert v.numpy().tobytes() == _two_passes(w, 0.3, g, how).tobytes()


@pytest.mark.parametrize("how", ["sub", "add"])
def test_no_fused_multiply_add(how):
    # values where one rounding differs from two, so a contracted kernel fails here
    w, g = _data(np.float32, (4096,), 3), _data(np.float32, (4096,), 4)
    assert _fma_differs(w, 0.01, g, how).sum() > 50
    v = tf.Variable(w)
    _update(v, 0.01 * _fresh(g), how)
    assert v.numpy().tobytes() == _two_passes(w, 0.01, g, how).tobytes()
    # the flat kernels (Keras, PopTorch) and the any-rank ones (Variable updates)
    flat = [(optimizer_cpu.sgd, (3,), (1,))] if how == "sub" else []
    for cached, shape, coef in flat + [
            ({"sub": optimizer_cpu.sub_product, "add": optimizer_cpu.add_product}[how],
             (3, 2), ())]:
        # the same function and flags uncached (Numba inspects no code loaded from its cache)
        kernel = numba.jit(**cached.targetoptions)(cached.py_func)
        for dtype in (np.float32, np.float64):
            kernel(np.ones(shape, dtype), np.ones(shape, dtype), np.ones(coef, dtype))
        for sig in kernel.signatures:
            ir, asm = kernel.inspect_llvm(sig), kernel.inspect_asm(sig)
            assert "fmul" in ir  # the loop is in the inspected code (inlined)
            assert re.search(r"f(mul|add|sub) (fast|contract)", ir) is None
            assert "llvm.fma" not in ir and re.search(r"vf(n)?m(add|sub)", asm) is None


@pytest.mark.parametrize("how", ["sub", "add", "assign"])
def test_general_path_where_the_buffer_is_held_or_does_not_fit(how):
    w, g = _data(np.float32, (5, 3), 5), _data(np.float32, (5, 3), 6)
    v = tf.Variable(w)
    held = v.read_value()
    _update(v, 0.5 * _fresh(g), how)
    np.testing.assert_array_equal(held.numpy(), w)  # the earlier read is left alone
    np.testing.assert_array_equal(v.numpy(), _two_passes(w, 0.5, g, how))
    v64 = tf.Variable(w.astype(np.float64))  # another dtype: the op's conversion rules
    with pytest.raises((TypeError, ValueError)):
        _update(v64, 0.5 * _fresh(g), how)
    with pytest.raises(ValueError):  # another shape
        _update(tf.Variable(w), 0.5 * _fresh(g[:2]), how)
    small = tf.Variable(w[0])  # broadcast: the general path's rules
    with pytest.raises(ValueError):
        _update(small, 0.5 * _fresh(g), how)


def test_operands_that_could_change_are_not_left_pending():
    caller = np.array([1.0, 2.0, 3.0], np.float32)
    t = tf.convert_to_tensor(caller)  # keeps the caller's array
    p = 2.0 * t
    assert type(p) is Tensor
    caller[:] = 5.0
    np.testing.assert_array_equal(p.numpy(), [2.0, 4.0, 6.0])
    base = np.arange(6, dtype=np.float32)
    assert type(2.0 * wrap(base[1:])) is Tensor  # a view: its base may be written
    v = tf.Variable(np.ones(3, np.float32))
    assert type(2.0 * v) is Tensor  # a variable's value may change in place


def test_pending_product_reads_as_a_tensor_everywhere():
    g = np.arange(12, dtype=np.float32).reshape(4, 3) - 6
    want = np.float32(0.5) * g

    def p():
        out = 0.5 * _fresh(g)
        assert type(out) is _Product
        return out
    assert p().shape == (4, 3) and p().dtype == np.float32
    np.testing.assert_array_equal(p().numpy(), want)
    np.testing.assert_array_equal(np.asarray(p()), want)
    np.testing.assert_array_equal(tf.convert_to_tensor(p()).numpy(), want)
    np.testing.assert_array_equal((p() + 1.0).numpy(), want + 1)
    np.testing.assert_array_equal(tf.reduce_sum(p()).numpy(), np.sum(want))
    np.testing.assert_array_equal(p()[1].numpy(), want[1])
    np.testing.assert_array_equal(tf.Variable(p()).numpy(), want)
    assert "-3." in repr(p()) and "-3." in str(p())
    q = p()
    q.numpy()
    assert type(q) is Tensor  # a plain Tensor once read


def test_gradients_through_a_pending_product_are_the_multiply_ops():
    g = _data(np.float32, (3, 4), 7)
    p = 0.25 * _fresh(g)
    assert type(p) is _Product
    with tf.GradientTape() as tape:
        tape.watch(p)
        y = tf.reduce_sum(p * p)
    np.testing.assert_array_equal(tape.gradient(y, p).numpy(), 2 * (np.float32(0.25) * g))
    x = _fresh(g)
    with tf.GradientTape() as tape:  # under a tape the multiply runs and is recorded
        tape.watch(x)
        y = 0.25 * x
        assert type(y) is Tensor
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), np.full((3, 4), 0.25, np.float32))


def test_sgd_step_as_users_write_it_matches_numpy():
    w, g = _data(np.float64, (64, 9), 8), _data(np.float64, (64, 9), 9)
    v = tf.Variable(w)
    x = tf.constant(g)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(v * x)
    (grad,) = tape.gradient(loss, [v])
    v.assign_sub(0.1 * grad)
    assert v.numpy().tobytes() == (w - 0.1 * g).tobytes()


def test_products_of_one_number_share_its_array_and_others_convert_anew():
    # the learning rate's 0-d array is made once per number object and dtype; a new number
    # (or dtype) converts anew, exactly as the multiply op converts it
    lr, other = 0.1, 0.3
    g32, g64 = _data(np.float32, (5,), 7), _data(np.float64, (5,), 8)
    p1, p2 = lr * _fresh(g32), lr * _fresh(g32)
    p3, p4 = other * _fresh(g32), lr * _fresh(g64)
    for p in (p1, p2, p3, p4):
        assert type(p) is _Product
    s1, s2, s3, s4 = (p._pending()[1] for p in (p1, p2, p3, p4))
    assert s1 is s2 and not s1.flags.writeable
    assert s3 is not s1 and s3.dtype == np.float32 and s3 == np.float32(other)
    assert s4.dtype == np.float64 and s4 == lr and s1 == np.float32(lr)
    np.testing.assert_array_equal(p3.numpy(), np.multiply(np.float32(other), g32))
    np.testing.assert_array_equal(p4.numpy(), np.multiply(np.float64(lr), g64))
