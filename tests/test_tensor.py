"""Tensor: metadata, conversion out (numpy, __array__, DLPack), operators, indexing,
immutability. TF's eager Tensor is the contract."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu import Tensor, TensorShape


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def _t(a):
    return tf.constant(np.asarray(a))


# ---- metadata ------------------------------------------------------------------------------
def test_shape_is_a_tensorshape_tuple():
    t = tf.zeros([2, 3, 4])
    assert isinstance(t.shape, TensorShape)
    assert isinstance(t.shape, tuple)
    assert t.shape == (2, 3, 4)
    assert t.shape.as_list() == [2, 3, 4]
    assert t.shape.rank == 3
    assert t.shape.ndims == 3
    assert t.shape.num_elements() == 24
    assert t.get_shape() == (2, 3, 4)
    assert tf.constant(1.0).shape.as_list() == []
    assert tf.constant(1.0).shape.rank == 0
    assert tf.zeros([0, 5]).shape.num_elements() == 0


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int8, np.uint8,
                                   np.int16, np.int32, np.int64, np.bool_])
def test_dtype_and_ndim(dtype):
    a = np.zeros((2, 1, 3), dtype)
    t = tf.constant(a)
    assert t.dtype == np.dtype(dtype)
    assert t.ndim == 3
    assert t.numpy().dtype == np.dtype(dtype)


def test_numpy_is_a_copy():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = tf.constant(a)
    n1 = t.numpy()
    n1[0, 0] = 100.0
    np.testing.assert_array_equal(t.numpy(), a)
    assert not np.shares_memory(t.numpy(), t.numpy())
    assert isinstance(n1, np.ndarray) and n1.shape == (2, 3)


def test_array_protocol():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = tf.constant(a)
    np.testing.assert_array_equal(np.asarray(t), a)
    assert np.asarray(t).dtype == np.float32
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    np.testing.assert_array_equal(np.asarray(t, dtype=np.float64), a.astype(np.float64))
    copied = np.array(t, copy=True)
    copied[0, 0] = -1
    assert np.asarray(t)[0, 0] == 0
    assert np.sum(t) == 15.0  # numpy functions accept a Tensor


def test_dlpack_numpy_shares_memory():
    t = tf.constant(np.arange(12, dtype=np.float32).reshape(3, 4))
    a = np.from_dlpack(t)
    np.testing.assert_array_equal(a, np.arange(12).reshape(3, 4))
    assert np.shares_memory(a, np.asarray(t))
    assert t.__dlpack_device__()[0] == 1  # kDLCPU


def test_dlpack_torch_sees_values():
    torch = pytest.importorskip("torch")
    t = tf.constant(np.arange(12, dtype=np.float32).reshape(3, 4))
    tt = torch.from_dlpack(t)
    assert tt.dtype == torch.float32
    assert tuple(tt.shape) == (3, 4)
    np.testing.assert_array_equal(tt.numpy(), np.arange(12).reshape(3, 4))
    assert np.shares_memory(tt.numpy(), np.asarray(t))


def test_len_and_iter():
    t = tf.zeros([4, 2])
    assert len(t) == 4
    rows = list(t)
    assert len(rows) == 4 and all(isinstance(r, Tensor) and r.shape == (2,) for r in rows)
    with pytest.raises(TypeError):
        len(tf.constant(3.0))
    with pytest.raises(TypeError):
        iter(tf.constant(3.0)).__next__()


def test_repr():
    r = repr(tf.constant([[1.0, 2.0]]))
    assert "shape=(1, 2)" in r
    assert "float32" in r
    assert "1." in r and "2." in r
    assert str(tf.constant(7)) == repr(tf.constant(7))
    assert "int32" in repr(tf.constant(7))


def test_python_scalar_conversions():
    assert float(tf.constant(2.5)) == 2.5
    assert int(tf.constant(3)) == 3
    assert bool(tf.constant(True)) is True
    assert [10, 20, 30][tf.constant(1)] == 20  # __index__
    with pytest.raises(ValueError):
        float(tf.zeros([2]))
    with pytest.raises(TypeError):
        [1, 2][tf.constant(1.0)]


def test_not_hashable():
    with pytest.raises(TypeError):
        hash(tf.constant(1.0))


# ---- operators -----------------------------------------------------------------------------
_ARITH = [
    (operator.add, np.add),
    (operator.sub, np.subtract),
    (operator.mul, np.multiply),
    (operator.truediv, np.true_divide),
    (operator.pow, np.power),
]


@pytest.mark.parametrize("op,ref", _ARITH, ids=lambda f: getattr(f, "__name__", ""))
def test_float_operators(op, ref, rng):
    a = rng.uniform(0.5, 2.0, (3, 4)).astype(np.float32)
    b = rng.uniform(0.5, 2.0, (4,)).astype(np.float32)
    ta, tb = tf.constant(a), tf.constant(b)
    want = ref(a, b)
    for got in (op(ta, tb), op(ta, b), op(a, tb)):
        assert isinstance(got, Tensor)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    # Python scalars on either side adopt the tensor's dtype
    for got, exp in ((op(ta, 2.0), ref(a, np.float32(2.0))), (op(2.0, ta), ref(np.float32(2.0), a)),
                     (op(ta, 2), ref(a, np.float32(2))), (op(3, ta), ref(np.float32(3), a))):
        assert got.dtype == np.float32
        np.testing.assert_allclose(got.numpy(), exp, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_floordiv_and_mod_match_python(dtype):
    a = np.array([-7, -3, -1, 0, 1, 3, 7], dtype)
    b = np.array([2, 2, 3, 5, -3, -2, 4], dtype)
    ta, tb = tf.constant(a), tf.constant(b)
    np.testing.assert_array_equal((ta // tb).numpy(), np.floor_divide(a, b))
    np.testing.assert_array_equal((ta % tb).numpy(), np.mod(a, b))
    np.testing.assert_array_equal((ta // 2).numpy(), np.floor_divide(a, dtype(2)))
    np.testing.assert_array_equal((10 // tb).numpy(), np.floor_divide(dtype(10), b))
    np.testing.assert_array_equal((ta % 3).numpy(), np.mod(a, dtype(3)))
    np.testing.assert_array_equal((10 % tb).numpy(), np.mod(dtype(10), b))
    assert (ta // tb).dtype == np.dtype(dtype)
    assert (ta % tb).dtype == np.dtype(dtype)


def test_integer_operators_keep_dtype():
    a = np.array([1, 2, 3], np.int32)
    t = tf.constant(a)
    for got in (t + 1, 1 + t, t - 1, 1 - t, t * 3, 3 * t, t ** 2, 2 ** t):
        assert got.dtype == np.int32
    np.testing.assert_array_equal((2 ** t).numpy(), [2, 4, 8])
    np.testing.assert_array_equal((1 - t).numpy(), [0, -1, -2])


def test_integer_truediv_gives_float():
    # TF: int32 / int32 -> float64; int16 -> float32
    t = tf.constant(np.array([1, 2, 3], np.int32))
    q = t / 2
    assert q.dtype == np.float64
    np.testing.assert_allclose(q.numpy(), [0.5, 1.0, 1.5])
    q16 = tf.constant(np.array([1, 3], np.int16)) / tf.constant(np.array([2, 2], np.int16))
    assert q16.dtype == np.float32


def test_python_float_with_int_tensor_is_a_type_error():
    with pytest.raises(TypeError):
        tf.constant([1, 2]) + 0.5


def test_mixed_tensor_dtypes_are_a_type_error():
    with pytest.raises(TypeError, match="add: y must have the dtype of x"):
        tf.constant(np.ones(2, np.float32)) + tf.constant(np.ones(2, np.float64))
    with pytest.raises(TypeError):
        tf.constant(np.ones(2, np.float32)) + tf.constant([True, False])


def test_numpy_operands_follow_the_tensor_dtype():
    # TF converts a non-Tensor operand to the Tensor's dtype: float64 numpy * float32 Tensor
    # is float32, on either side of the operator (and truncates floats into an int Tensor).
    t = tf.constant([1.0, 2.0])
    for got in (t * np.full(2, 2.5), np.full(2, 2.5) * t, t * np.array(2.5),
                tf.multiply(t, np.full(2, 2.5))):
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got.numpy(), [2.5, 5.0])
    got = tf.constant([1, 2]) + np.array([0.5, 1.5])
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got.numpy(), [1, 3])
    got = np.ones((2, 2)) @ tf.ones([2, 2])
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.numpy(), np.full((2, 2), 2.0))
    assert tf.matmul(tf.ones([2, 2]), [[1, 2], [3, 4]]).dtype == np.float32


def test_broadcast_mismatch_is_a_value_error():
    with pytest.raises(ValueError, match="add"):
        tf.zeros([2, 3]) + tf.zeros([4])


def test_matmul_operator(rng):
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    b = rng.standard_normal((4, 5)).astype(np.float32)
    want = a @ b
    for got in (tf.constant(a) @ tf.constant(b), tf.constant(a) @ b, a @ tf.constant(b)):
        assert isinstance(got, Tensor)
        assert got.shape == (2, 3, 5)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)


def test_unary_operators():
    a = np.array([-1.5, 0.0, 2.0], np.float32)
    t = tf.constant(a)
    np.testing.assert_array_equal((-t).numpy(), -a)
    np.testing.assert_array_equal(abs(t).numpy(), np.abs(a))
    assert (+t) is t
    i = tf.constant(np.array([-3, 4], np.int32))
    np.testing.assert_array_equal((-i).numpy(), [3, -4])
    np.testing.assert_array_equal(abs(i).numpy(), [3, 4])
    assert abs(i).dtype == np.int32


@pytest.mark.parametrize("op", [operator.lt, operator.le, operator.gt, operator.ge,
                                operator.eq, operator.ne])
def test_comparisons(op, rng):
    a = rng.integers(0, 3, (4, 3)).astype(np.float32)
    b = rng.integers(0, 3, (3,)).astype(np.float32)
    want = op(a, b)
    for got in (op(tf.constant(a), tf.constant(b)), op(tf.constant(a), b), op(a, tf.constant(b))):
        assert isinstance(got, Tensor), type(got)
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(got.numpy(), want)
    got = op(tf.constant(a), 1)
    np.testing.assert_array_equal(got.numpy(), op(a, 1))
    got = op(1, tf.constant(a))
    np.testing.assert_array_equal(got.numpy(), op(1, a))


def test_bool_operators():
    a = np.array([True, True, False, False])
    b = np.array([True, False, True, False])
    ta, tb = tf.constant(a), tf.constant(b)
    np.testing.assert_array_equal((ta & tb).numpy(), a & b)
    np.testing.assert_array_equal((ta | tb).numpy(), a | b)
    np.testing.assert_array_equal((~ta).numpy(), ~a)
    np.testing.assert_array_equal((ta & True).numpy(), a)
    np.testing.assert_array_equal((False | tb).numpy(), b)
    np.testing.assert_array_equal((a & tb).numpy(), a & b)
    np.testing.assert_array_equal((ta == tb).numpy(), a == b)
    assert (ta & tb).dtype == np.bool_


def test_logical_operators_reject_numbers():
    with pytest.raises(TypeError):
        tf.constant([1, 2]) & tf.constant([1, 0])
    with pytest.raises(TypeError):
        ~tf.constant([1.0])


# ---- __getitem__ ---------------------------------------------------------------------------
_A = np.arange(60, dtype=np.float32).reshape(3, 4, 5)

_KEYS = [
    0, -1, 2, (1, 2), (1, 2, 3), (-1, -2, -3),
    slice(None), slice(1, None), slice(None, None, -1), slice(None, None, -2),
    slice(-1, 0, -1), (slice(None), slice(3, 0, -2)), (slice(5, 10),),
    Ellipsis, (Ellipsis, 1), (0, Ellipsis), (Ellipsis, slice(None, None, -1)),
    None, (None, 0), (slice(None), None, 1), (Ellipsis, None), (0, None, None, 1),
    (np.array([0, 2, 2, 0]),), (slice(None), np.array([3, 3, 1])),
    (np.array([[0, 1], [2, 2]]), 1), (np.array([-1, 0]),),
    (np.array([True, False, True]),), (_A > 30,), (slice(None), _A[0, :, 0] > 6),
    ([0, 2],),
]


@pytest.mark.parametrize("key", _KEYS, ids=[repr(k)[:40] for k in _KEYS])
def test_getitem_matches_numpy(key):
    t = tf.constant(_A)
    got = t[key]
    want = _A[key]
    assert isinstance(got, Tensor)
    assert got.dtype == np.float32
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want)


def test_getitem_with_tensor_indices():
    t = tf.constant(_A)
    np.testing.assert_array_equal(t[tf.constant(1)].numpy(), _A[1])
    np.testing.assert_array_equal(t[tf.constant([2, 0, 2])].numpy(), _A[[2, 0, 2]])
    mask = tf.constant(np.array([False, True, True]))
    np.testing.assert_array_equal(t[mask].numpy(), _A[[1, 2]])


def test_getitem_scalar():
    s = tf.constant(5.0)
    assert s[...].shape == ()
    assert s[None].shape == (1,)
    with pytest.raises(ValueError):
        s[0]


@pytest.mark.parametrize("key", [3, -4, (0, 4), (0, 0, 5), (np.array([0, 3]),),
                                 (slice(None), np.array([-5]))])
def test_getitem_out_of_range_is_a_value_error(key):
    with pytest.raises(ValueError, match="__getitem__"):
        tf.constant(_A)[key]


@pytest.mark.parametrize("key", [1.5, "a", (np.array([0.5]),), True])
def test_getitem_bad_key_is_a_type_error(key):
    with pytest.raises(TypeError):
        tf.constant(_A)[key]


def test_getitem_gradient_accumulates_duplicates():
    x = tf.constant(np.arange(4, dtype=np.float64))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(x[np.array([0, 2, 2, 3, 3, 3])]) + tf.reduce_sum(x[::-2])
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [1, 1, 2, 4])


# ---- immutability --------------------------------------------------------------------------
def test_no_item_assignment():
    t = tf.zeros([3])
    with pytest.raises(TypeError):
        t[0] = 1.0
    with pytest.raises(TypeError):
        del t[0]
    np.testing.assert_array_equal(t.numpy(), [0, 0, 0])


def test_no_new_attributes():
    t = tf.zeros([3])
    with pytest.raises(AttributeError):
        t.foo = 1


def test_in_place_operators_make_new_tensors():
    t = tf.constant([1.0, 2.0])
    before = t
    t += 1
    assert t is not before
    np.testing.assert_array_equal(before.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(t.numpy(), [2.0, 3.0])


def test_constant_does_not_alias_a_numpy_input():
    a = np.ones(3, np.float32)
    t = tf.constant(a)
    a[0] = 5
    np.testing.assert_array_equal(t.numpy(), [1, 1, 1])


def test_python_float_keeps_full_precision_with_float64():
    # TF converts the Python float straight to the other operand's dtype
    a = np.array([1.0, 3.0, 7.0])
    t = tf.constant(a)
    np.testing.assert_array_equal((t * 0.1).numpy(), a * 0.1)
    np.testing.assert_array_equal((0.1 + t).numpy(), 0.1 + a)
    np.testing.assert_array_equal((t - [0.1, 0.2, 0.3]).numpy(), a - [0.1, 0.2, 0.3])
    np.testing.assert_array_equal(tf.maximum(t, 2.1).numpy(), np.maximum(a, 2.1))


def test_array_view_is_read_only():
    # as TF: np.asarray of a Tensor cannot be used to change the Tensor (or a Variable)
    t = tf.constant([1.0, 2.0])
    a = np.asarray(t)
    with pytest.raises(ValueError, match="read-only"):
        a[0] = 5.0
    v = tf.Variable([1.0, 2.0])
    with pytest.raises(ValueError, match="read-only"):
        np.asarray(v)[0] = 5.0
    np.testing.assert_array_equal(t.numpy(), [1, 2])
    np.testing.assert_array_equal(v.numpy(), [1, 2])
    w = np.array(t)  # np.array copies: writeable
    w[0] = 3.0
    np.testing.assert_array_equal(t.numpy(), [1, 2])


# ---- range: dtypes beyond int32 and bad limits (issue 12) -----------------------------------
@pytest.mark.parametrize("args,kwargs,dtype,values", [
    ((2**31 - 3, 2**31 + 2), {}, np.int64, [2**31 - 3 + i for i in range(5)]),
    ((-(2**31) - 2, -(2**31) + 1), {}, np.int64, [-(2**31) - 2, -(2**31) - 1, -(2**31)]),
    ((-(2**31), -(2**31) + 2), {}, np.int32, [-(2**31), -(2**31) + 1]),
    ((0, 2**32 + 3, 2**31), {}, np.int64, [0, 2**31, 2**32]),
    ((0, 10, 2**33), {}, np.int64, [0]),
    ((2**63 - 3, 2**63 - 1), {}, np.int64, [2**63 - 3, 2**63 - 2]),
    ((np.int64(3),), {}, np.int64, [0, 1, 2]),
    ((0, 2**31 + 5, 2**30), {"dtype": "float32"}, np.float32, [0, 2**30]),  # cast first
    ((0, 2**32 + 3), {"dtype": "int32"}, np.int32, [0, 1, 2]),  # TF wraps the limit
], ids=repr)
def test_range_infers_int64_for_big_ints(args, kwargs, dtype, values):
    t = tf.range(*args, **kwargs)
    assert t.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(t.numpy(), np.array(values, dtype=dtype))


def test_range_dtype_follows_tensor_arguments():
    assert tf.range(tf.constant(1), 2**31 + 1, 2**30).dtype == np.int64
    assert tf.range(tf.constant(0.0, tf.float64), 3).dtype == np.float64
    assert tf.range(tf.constant(3, tf.int64)).dtype == np.int64
    assert tf.range(tf.constant(3), 4.5).dtype == np.float32
    assert tf.range(tf.constant(3.0, tf.float16)).dtype == np.float16
    with pytest.raises(ValueError, match=r"^range: limit must be a scalar, got shape \[2\]"):
        tf.range(tf.constant([1, 2]))


@pytest.mark.parametrize("args,kwargs", [
    ((2**31 - 3, 2**31 + 2), {}), ((-(2**31) - 2, -(2**31) + 1), {}),
    ((0, 2**32 + 3, 2**31), {}), ((tf.constant(1), 2**31 + 5, 2**30), {}), ((0, 1, 0.3), {}),
    ((0.0, 10.0, 0.7), {"dtype": "float16"}), ((1.0, 0.0, -0.25), {}),
    ((0, 2**31 + 5, 2**30), {"dtype": "float32"}), ((0.0, 1.0, np.inf), {}),
], ids=repr)
def test_range_matches_tf(real_tf, args, kwargs):
    targs = [real_tf.constant(a.numpy()) if isinstance(a, Tensor) else a for a in args]
    tkw = {k: real_tf.as_dtype(v) for k, v in kwargs.items()}
    want = real_tf.range(*targs, **tkw)
    got = tf.range(*args, **kwargs)
    assert got.dtype == np.dtype(want.dtype.as_numpy_dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


RANGE_INVALID = [
    ((0, float("inf")), r"limit must be finite, got inf"),
    ((float("-inf"), 0.0), r"start must be finite, got -inf"),
    ((0.0, float("-inf"), -1.0), r"limit must be finite, got -inf"),
    ((0, float("nan")), r"limit must not be NaN, got nan"),
    ((float("nan"), 3.0), r"start must not be NaN, got nan"),
    ((0.0, 1.0, float("nan")), r"delta must not be NaN, got nan"),
    ((0, 10, 0), r"delta must not be 0"),
    ((0.0, 1.0, 0.0), r"delta must not be 0"),
    ((0.0, 1e30), r"\(limit - start\) / delta must be at most 9223372036854775807 elements in "
                  r"float32, got 1.0000000150474662e\+30"),
    ((-(2**63), 2**63 - 1), r"\(limit - start\) / delta must be at most 9223372036854775807 "
                            r"elements, got 18446744073709551615"),
]


@pytest.mark.parametrize("args,match", RANGE_INVALID, ids=repr)
def test_range_invalid_arguments(args, match):
    # TF's Range kernel: InvalidArgumentError; ours is also a ValueError (house style)
    with pytest.raises(tf.errors.InvalidArgumentError, match="^range: " + match):
        tf.range(*args)
    with pytest.raises(ValueError):
        tf.range(*args)


def test_range_float16_overflowing_size():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"^range: .* in float16, got inf"):
        tf.range(0, 60000, 0.5, dtype=tf.float16)  # 60000 / 0.5 overflows float16, as in TF


@pytest.mark.parametrize("args", [a for a, _ in RANGE_INVALID], ids=repr)
def test_tf_range_raises_invalid_argument_too(real_tf, args):
    with pytest.raises(real_tf.errors.InvalidArgumentError):
        real_tf.range(*args)


def test_range_conversion_errors():
    # TF: ValueError "Can't convert Python sequence with out-of-range integer to Tensor."
    with pytest.raises(ValueError, match=r"^range: limit must hold integers in int64 range .* "
                                         r"got 9223372036854775808$"):
        tf.range(0, 2**63)
    with pytest.raises(ValueError, match=r"^range: start must hold integers in int64 range"):
        tf.range(-(2**64), 0)
    # TF: TypeError "Cannot convert 0.5 to EagerTensor of dtype int32" / "... of dtype bool"
    with pytest.raises(TypeError, match=r"^range: start must be convertible to int32, got a "
                                        r"float value"):
        tf.range(0.5, 3.5, dtype=tf.int32)
    with pytest.raises(TypeError, match=r"^range: start must be convertible to bool"):
        tf.range(5, dtype=tf.bool)
    with pytest.raises(TypeError, match=r"^range: limit must be a number, got True"):
        tf.range(True)


@pytest.mark.parametrize("make,op,arg", [
    (lambda: tf.zeros([-1, 3]), "zeros", "shape"), (lambda: tf.ones([2, -3]), "ones", "shape"),
    (lambda: tf.fill([-1, 3], 1.0), "fill", "dims"),
])
def test_negative_sizes_are_invalid_argument(make, op, arg):
    # TF's Fill kernel: InvalidArgumentError "Dimension -1 must be >= 0"
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=rf"^{op}: {arg} must not have negative sizes, got \["):
        make()


def test_set_shape_checks_compatibility_as_tf_eager():
    t = tf.zeros([2, 3])
    t.set_shape([None, 3])
    t.set_shape(tf.TensorShape([2, 3]))
    with pytest.raises(ValueError, match=r"^Tensor's shape \(2, 3\) is not compatible with "
                       r"supplied shape \(2, 4\)\.$"):
        t.set_shape([2, 4])
    assert isinstance(t.shape, tf.TensorShape) and t.shape == tf.TensorShape([2, 3])
