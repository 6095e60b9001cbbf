"""The MLP step's shorter paths (issue 15): matmul's check and backward for two matrices, the
deferred bias_add's check, the pending product's cached learning rate, the tape's records as
tuples and its dense-cotangent branch. Each gives what the general path gives, and is not
taken where the general path must run."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu.core import registry as _registry
from ipu_gpu.core import tape as tape_module
from ipu_gpu.core import tensor as tensor_module
from ipu_gpu.core.tensor import Tensor, _Deferred, _Product
from ipu_gpu.ops import matmul as matmul_module


@pytest.fixture(autouse=True)
def _eager_process(monkeypatch):
    """As in a process that has built no TF1 graph: one that has (an earlier test) keeps the
    graph's variable-read probe installed, and bias_add then never defers its sum."""
    monkeypatch.setattr(_registry, "_variable_read_probe", None)


def _data(shape, seed, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# ---- matmul: check and backward of two matrices ---------------------------------------------
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_check_of_matrices_accepts_exactly_the_inner_dimensions_that_agree(ta, tb):
    a = _data((5, 3) if ta else (3, 5), 1)
    b = _data((4, 5) if tb else (5, 4), 2)
    got = tf.matmul(a, b, transpose_a=ta, transpose_b=tb).numpy()
    want = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="b must have 5 rows"):
        tf.matmul(a, b[:-1] if not tb else b[:, :-1], transpose_a=ta, transpose_b=tb)
    with pytest.raises(TypeError, match="dtype"):
        tf.matmul(a, b.astype(np.float64), transpose_a=ta, transpose_b=tb)
    with pytest.raises(TypeError, match="float16/32/64 or int32/64"):
        tf.matmul(a > 0, b > 0, transpose_a=ta, transpose_b=tb)


@pytest.mark.parametrize("ta,tb,batched", [(False, False, False), (True, False, False),
                                           (False, True, False), (True, True, False),
                                           (False, False, True)])
def test_matmul_gradients_of_matrices_and_batches_match_float64(monkeypatch, ta, tb, batched):
    a = _data(((2,) if batched else ()) + ((5, 3) if ta else (3, 5)), 3)
    b = _data((4, 5) if tb else (5, 4), 4)
    g = _data(((2,) if batched else ()) + (3, 4), 5)
    general = []
    real = matmul_module._grad_a
    monkeypatch.setattr(matmul_module, "_grad_a",
                        lambda *args: general.append(1) or real(*args))
    x, w = tf.constant(a), tf.Variable(b)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.matmul(x, w, transpose_a=ta, transpose_b=tb)
    ga, gb = tape.gradient(y, [x, w], output_gradients=g)
    a64, b64, g64 = (v.astype(np.float64) for v in (a, b, g))
    xa = np.swapaxes(a64, -1, -2) if ta else a64
    wb = b64.T if tb else b64
    want_x = g64 @ wb.T
    want_x = np.swapaxes(want_x, -1, -2) if ta else want_x
    want_w = (np.swapaxes(xa, -1, -2) @ g64).reshape((-1,) + wb.shape).sum(axis=0)
    want_w = want_w.T if tb else want_w
    np.testing.assert_allclose(ga.numpy(), want_x, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gb.numpy(), want_w, rtol=1e-5, atol=1e-5)
    assert ga.shape == a.shape and gb.shape == b.shape
    # the dense layer's branch (no transposes, two matrices) only
    assert general == ([] if not (ta or tb or batched) else [1])


# ---- the deferred bias_add's check ----------------------------------------------------------
def test_deferred_bias_add_still_refuses_what_the_op_refuses():
    v = tf.constant(_data((4, 6), 6))
    with pytest.raises(ValueError, match="bias must have 6 elements"):
        tf.nn.bias_add(v, tf.Variable(_data((5,), 7)))
    with pytest.raises(ValueError, match="bias must be 1-D"):
        tf.nn.bias_add(v, tf.Variable(_data((1, 6), 8)))
    with pytest.raises(ValueError, match="data_format"):
        tf.nn.bias_add(v, tf.Variable(_data((6,), 9)), data_format="NHWCC")
    ok = tf.nn.bias_add(tf.constant(_data((4, 6), 10)), tf.Variable(_data((6,), 11)))
    assert type(ok) is _Deferred


# ---- the pending product's cached learning rate ---------------------------------------------
def test_cached_number_pends_only_for_its_own_dtype():
    big = 1e300  # fits float64, not float32
    t64 = tf.constant(_data((3,), 12, np.float64))
    p = big * t64
    assert type(p) is _Product  # and the cache now holds big for float64
    t32 = tf.constant(_data((3,), 13))
    q = big * t32  # the multiply op (overflow to inf), not a product pending under the cache
    assert type(q) is Tensor
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(q.numpy(), np.float32(big) * t32.numpy())
    r = big * tf.constant(_data((3,), 14, np.float64))
    assert type(r) is _Product and r._pending()[1] is p._pending()[1]  # the shared array
    assert not tensor_module._converts_exactly(2**53 + 1, np.dtype(np.float64))
    assert not tensor_module._converts_exactly(1.0, np.dtype(np.int32))
    assert tensor_module._converts_exactly(-(2**53), np.dtype(np.float32))


# ---- the tape's records ---------------------------------------------------------------------
def test_records_read_by_name_and_compare_by_identity():
    x = tf.constant(np.array([[1.0, -2.0]], np.float32))
    w = tf.Variable(np.eye(2, dtype=np.float32))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.matmul(x, w)
        z = tf.nn.relu(y)
    first, second = tape._records
    assert first.op.name == "matmul" and first.in_ids == [x._id, w._id]
    assert first.out_ids == (y._id,) and first.out_meta is None
    assert [d.name for d in first.in_dtypes] == ["float32", "float32"]
    assert first.arrays is not None and second.op.name == "relu"
    assert first != second and first == first and len({first, second}) == 2
    np.testing.assert_array_equal(tape.gradient(z, x).numpy(), [[1.0, 0.0]])
    rec = tape_module.Record("op", [1], (2,), [], None, (), {}, np, None)
    assert (rec.op, rec.in_ids, rec.out_ids, rec.xp) == ("op", [1], (2,), np)


def test_nested_tapes_take_the_general_backward(monkeypatch):
    calls = []
    real = tape_module._general_backward
    monkeypatch.setattr(tape_module, "_general_backward",
                        lambda *args: calls.append(args[2]) or real(*args))
    x = tf.Variable(np.array([[0.5, -1.5]], np.float32))
    w = tf.constant(np.array([[2.0], [3.0]], np.float32))
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            y = tf.reduce_sum(tf.matmul(x, w) * tf.matmul(x, w))
        g = inner.gradient(y, x)
        assert calls and all(calls)  # nested: every record through the general path
        s = tf.reduce_sum(g)
    calls.clear()
    gg = outer.gradient(s, x)  # no tape records now: the dense branch
    assert calls == []
    # y = (x w)^2: dy/dx = 2 (x w) w^T; sum of it: d/dx = 2 w w^T summed over the columns
    np.testing.assert_allclose(gg.numpy(), 2 * (w.numpy() @ w.numpy().T).sum(axis=1)[None],
                               rtol=1e-6)
