"""convert_to_tensor, constant and cast: TF's conversion rules (dtypes of Python values,
numpy dtypes kept, zero-copy DLPack for torch, constant's shape argument, cast semantics)."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu import Tensor, Variable

CONVERTERS = [tf.convert_to_tensor, tf.constant]


# ---- Python values -------------------------------------------------------------------------
@pytest.mark.parametrize("convert", CONVERTERS)
@pytest.mark.parametrize("value,dtype", [
    (1.5, np.float32), (2, np.int32), (True, np.bool_), (False, np.bool_),
    (2 ** 31, np.int64), (-(2 ** 31) - 1, np.int64), (2 ** 31 - 1, np.int32),
    ([1, 2 ** 40], np.int64), ([1.0, 2], np.float32), ([[1, 2], [3, 4]], np.int32),
    ([[True], [False]], np.bool_), ([], np.float32), ([[], []], np.float32),
    (((1.0, 2.0), (3.0, 4.0)), np.float32),
])
def test_python_value_dtypes(convert, value, dtype):
    t = convert(value)
    assert isinstance(t, Tensor)
    assert t.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(t.numpy(), np.asarray(value, dtype=dtype))
    assert t.shape == np.asarray(value).shape


@pytest.mark.parametrize("convert", CONVERTERS)
@pytest.mark.parametrize("value", [[[1, 2], [3]], [1, [2]], [[1.0], [2.0, 3.0]]])
def test_ragged_lists(convert, value):
    with pytest.raises(ValueError, match="rectangular"):
        convert(value)


@pytest.mark.parametrize("convert", CONVERTERS)
def test_out_of_range_int_and_none(convert):
    with pytest.raises(ValueError):
        convert(2 ** 70)  # TF: "Can't convert Python sequence with out-of-range integer"
    with pytest.raises((TypeError, ValueError)):
        convert(None)
    assert convert("text").numpy() == b"text"  # tf.string (tests/test_strings_core.py)
    with pytest.raises(TypeError):
        convert(1 + 2j)


@pytest.mark.parametrize("convert", CONVERTERS)
def test_python_value_with_dtype(convert):
    t = convert([1, 2], dtype=tf.float64)
    assert t.dtype == np.float64
    t = convert(1.5, dtype="float16")
    assert t.dtype == np.float16 and float(t) == 1.5
    t = convert(True, dtype=tf.int32)
    assert t.dtype == np.int32 and int(t) == 1
    t = convert([1, 2], dtype=tf.uint8)
    assert t.dtype == np.uint8
    with pytest.raises(TypeError):
        convert([1.5], dtype=tf.int32)  # TF: "Cannot convert [1.5] to EagerTensor of dtype int32"
    with pytest.raises(TypeError):
        convert([1, 2], dtype=tf.bool)


def test_dtype_hint():
    assert tf.convert_to_tensor(1, dtype_hint=tf.float32).dtype == np.float32
    assert tf.convert_to_tensor(1.5, dtype_hint=tf.int32).dtype == np.float32  # hint ignored
    assert tf.convert_to_tensor(np.ones(2), dtype_hint=tf.float32).dtype == np.float64
    assert tf.convert_to_tensor(tf.constant(1), dtype_hint=tf.float32).dtype == np.int32


# ---- numpy ---------------------------------------------------------------------------------
@pytest.mark.parametrize("convert", CONVERTERS)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int8, np.uint8,
                                   np.int16, np.int32, np.int64, np.bool_])
def test_numpy_keeps_dtype(convert, dtype):
    a = (np.arange(6) % 3).astype(dtype).reshape(2, 3)
    t = convert(a)
    assert t.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(t.numpy(), a)


@pytest.mark.parametrize("convert", CONVERTERS)
def test_numpy_scalars(convert):
    assert convert(np.float64(1.5)).dtype == np.float64
    assert convert(np.int64(3)).dtype == np.int64
    assert convert(np.float16(1)).shape == ()


@pytest.mark.parametrize("convert", CONVERTERS)
def test_numpy_with_dtype_casts(convert):
    a = np.array([1.7, -1.7, 2.5])
    t = convert(a, dtype=tf.float32)
    assert t.dtype == np.float32
    np.testing.assert_allclose(t.numpy(), a, rtol=1e-7)
    t = convert(a, dtype=tf.int32)  # TF casts numpy arrays, truncating toward zero
    np.testing.assert_array_equal(t.numpy(), [1, -1, 2])


@pytest.mark.parametrize("dtype", [np.complex64, np.uint16, np.uint64, object])
def test_unsupported_numpy_dtypes(dtype):  # np.str_ arrays are tf.string (test_strings_core)
    with pytest.raises(TypeError):
        tf.convert_to_tensor(np.zeros(2, dtype))


def test_non_contiguous_numpy():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)[::2, ::-3]
    for convert in CONVERTERS:
        np.testing.assert_array_equal(convert(a).numpy(), a)
    np.testing.assert_array_equal(tf.reduce_sum(a, axis=0).numpy(), a.sum(0))


def test_constant_copies_numpy_convert_may_share():
    a = np.ones(3, np.float32)
    c = tf.constant(a)
    assert not np.shares_memory(np.asarray(c), a)
    t = tf.convert_to_tensor(a)
    np.testing.assert_array_equal(t.numpy(), a)


# ---- Tensors and Variables -----------------------------------------------------------------
def test_tensor_passthrough_and_dtype_mismatch():
    t = tf.constant([1.0, 2.0])
    assert tf.convert_to_tensor(t) is t
    assert tf.convert_to_tensor(t, dtype=tf.float32) is t
    with pytest.raises(TypeError, match="convert_to_tensor: value must have dtype float64"):
        tf.convert_to_tensor(t, dtype=tf.float64)
    with pytest.raises(TypeError, match="constant: value must have dtype int32"):
        tf.constant(t, dtype=tf.int32)  # TF: "Expected tensor ... with dtype tf.int32"
    np.testing.assert_array_equal(tf.constant(t).numpy(), [1, 2])


def test_variables():
    v = Variable([1.0, 2.0])
    t = tf.convert_to_tensor(v)
    assert type(t) is Tensor
    np.testing.assert_array_equal(t.numpy(), [1, 2])
    with pytest.raises(TypeError):
        tf.convert_to_tensor(v, dtype=tf.float64)
    c = tf.constant(v)
    v.assign([3.0, 4.0])
    np.testing.assert_array_equal(t.numpy(), [1, 2])
    np.testing.assert_array_equal(c.numpy(), [1, 2])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.convert_to_tensor(v) ** 2)
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [6, 8])


# ---- torch, tf, __array__ ------------------------------------------------------------------
def test_torch_zero_copy():
    torch = pytest.importorskip("torch")
    tt = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    t = tf.convert_to_tensor(tt)
    assert t.dtype == np.float32 and t.shape == (3, 4)
    assert np.shares_memory(np.asarray(t), tt.numpy())
    np.testing.assert_array_equal(t.numpy(), tt.numpy())
    for tdtype, ndtype in [(torch.int64, np.int64), (torch.float64, np.float64),
                           (torch.float16, np.float16), (torch.bool, np.bool_),
                           (torch.uint8, np.uint8), (torch.int32, np.int32)]:
        assert tf.convert_to_tensor(torch.zeros(2, dtype=tdtype)).dtype == ndtype
    nc = tt.t()  # a strided view
    np.testing.assert_array_equal(tf.convert_to_tensor(nc).numpy(), nc.numpy())
    assert tf.convert_to_tensor(tt, dtype=tf.float64).dtype == np.float64


def test_torch_requires_grad():
    torch = pytest.importorskip("torch")
    tt = torch.randn(3, 2, requires_grad=True)
    t = tf.convert_to_tensor(tt)
    np.testing.assert_array_equal(t.numpy(), tt.detach().numpy())
    assert np.shares_memory(np.asarray(t), tt.detach().numpy())
    np.testing.assert_array_equal(tf.constant(tt).numpy(), tt.detach().numpy())
    np.testing.assert_array_equal((tf.constant(1.0) * tt).numpy(), tt.detach().numpy())
    assert tt.requires_grad


def test_torch_in_ops_and_constant_copies():
    torch = pytest.importorskip("torch")
    tt = torch.ones(3)
    y = tf.reduce_sum(tf.convert_to_tensor(tt) * 2.0)
    assert float(y) == 6.0
    c = tf.constant(tt)
    tt.add_(1)
    np.testing.assert_array_equal(c.numpy(), [1, 1, 1])  # tf.constant copies


def test_tf_eager_tensors(real_tf):
    x = real_tf.constant([[1.0, 2.0], [3.0, 4.0]])
    t = tf.convert_to_tensor(x)
    assert t.dtype == np.float32 and t.shape == (2, 2)
    np.testing.assert_array_equal(t.numpy(), x.numpy())
    assert tf.convert_to_tensor(real_tf.constant([1, 2])).dtype == np.int32
    assert tf.constant(real_tf.constant([1, 2], dtype=real_tf.int64)).dtype == np.int64
    v = real_tf.Variable([1.0, 2.0], dtype=real_tf.float64)
    np.testing.assert_array_equal(tf.convert_to_tensor(v).numpy(), [1, 2])


class _ArrayLike:
    def __init__(self, a):
        self._a = a

    def __array__(self, dtype=None, copy=None):
        return self._a if dtype is None else self._a.astype(dtype)


def test_objects_with_array_protocol():
    a = np.arange(4, dtype=np.int16)
    t = tf.convert_to_tensor(_ArrayLike(a))
    assert t.dtype == np.int16
    np.testing.assert_array_equal(t.numpy(), a)
    c = tf.constant(_ArrayLike(a), dtype=tf.float32)
    assert c.dtype == np.float32
    np.testing.assert_array_equal(c.numpy(), a)
    c = tf.constant(_ArrayLike(a))
    a[0] = 9
    assert int(c[0]) == 0


def test_unconvertible_object():
    with pytest.raises(TypeError, match="convert_to_tensor: value must be"):
        tf.convert_to_tensor(object())


# ---- constant(shape=) ----------------------------------------------------------------------
def test_constant_broadcasts_a_scalar():
    t = tf.constant(1.5, shape=[2, 3])
    assert t.shape == (2, 3) and t.dtype == np.float32
    np.testing.assert_array_equal(t.numpy(), np.full((2, 3), 1.5))
    t = tf.constant([7], shape=(2, 2), dtype=tf.int64)
    assert t.dtype == np.int64
    np.testing.assert_array_equal(t.numpy(), np.full((2, 2), 7))
    assert tf.constant(0.0, shape=[0, 3]).shape == (0, 3)
    assert tf.constant(2.0, shape=[]).shape == ()


def test_constant_reshapes():
    t = tf.constant([1, 2, 3, 4, 5, 6], shape=[2, 3])
    np.testing.assert_array_equal(t.numpy(), [[1, 2, 3], [4, 5, 6]])
    t = tf.constant(np.ones((2, 3)), shape=[3, 2])
    assert t.shape == (3, 2) and t.dtype == np.float64
    t = tf.constant(np.arange(4), shape=tf.TensorShape([4, 1]))
    assert t.shape == (4, 1)


def test_constant_bad_shape():
    with pytest.raises(TypeError, match="constant"):
        tf.constant([1, 2, 3], shape=[2, 2])
    with pytest.raises(TypeError, match="constant"):
        tf.constant([[1, 2]], shape=[2, 2])


def test_constant_dtype_names():
    for name, want in [("float32", np.float32), (tf.float16, np.float16), (np.int8, np.int8),
                       ("double", np.float64), ("half", np.float16), (float, np.float32)]:
        assert tf.constant(1, dtype=name).dtype == np.dtype(want)
    assert tf.constant(True, dtype=bool).dtype == np.bool_
    with pytest.raises(TypeError, match="dtype"):
        tf.constant(1, dtype="complex64")


# ---- cast ----------------------------------------------------------------------------------
def test_cast_float_to_int_truncates_toward_zero():
    t = tf.cast(tf.constant([-2.7, -1.5, -0.5, 0.5, 1.5, 2.7]), tf.int32)
    assert t.dtype == np.int32
    np.testing.assert_array_equal(t.numpy(), [-2, -1, 0, 0, 1, 2])
    np.testing.assert_array_equal(tf.cast(tf.constant([-2.7, 2.7], dtype=tf.float64),
                                          tf.int64).numpy(), [-2, 2])


@pytest.mark.parametrize("src,dst", [
    (np.float32, np.float16), (np.float16, np.float64), (np.int32, np.float32),
    (np.int64, np.int32), (np.bool_, np.float32), (np.float32, np.bool_), (np.int32, np.uint8),
    (np.uint8, np.int8), (np.int8, np.int64), (np.float64, np.int16),
])
def test_cast_matches_tf(real_tf, src, dst):
    rng = np.random.default_rng(5)
    a = (rng.standard_normal(20) * 200).astype(src)
    got = tf.cast(tf.constant(a), dst)
    want = real_tf.cast(real_tf.constant(a), real_tf.as_dtype(np.dtype(dst))).numpy()
    assert got.dtype == np.dtype(dst)
    np.testing.assert_array_equal(got.numpy(), want)


def test_cast_out_of_range_is_silent():
    # TF saturates/wraps without complaint; warnings are errors in this suite
    t = tf.cast(tf.constant([1e10, -1e10, np.nan]), tf.int32)
    assert t.dtype == np.int32
    assert np.isinf(tf.cast(tf.constant([70000.0]), tf.float16).numpy()).all()
    np.testing.assert_array_equal(tf.cast(tf.constant([300, -1]), tf.uint8).numpy(), [44, 255])


def test_cast_same_dtype_and_gradient():
    x = tf.constant([1.0, 2.0])
    assert tf.cast(x, tf.float32).dtype == np.float32
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.cast(x, tf.float16) * 3)
    g = tape.gradient(y, x)
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g.numpy(), [3, 3])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.cast(tf.cast(x, tf.int32), tf.float32))
    assert tape.gradient(y, x) is None  # no gradient through an integer cast, as TF


def test_one_hot_rejects_on_value_of_another_dtype():
    with pytest.raises(TypeError, match="^one_hot: on_value must have dtype float64"):
        tf.one_hot([0, 1], 3, on_value=tf.constant(1.0), dtype=tf.float64)


# ---- integers beyond int32 / int64 (issue 12) ------------------------------------------------
BIG_INT_VALUES = [
    2 ** 31, -(2 ** 31) - 1, [1, 2 ** 40, -3], [[1, 2], [3, -(2 ** 40)]], [[1], [2 ** 31]],
    [2 ** 63 - 1, -(2 ** 63)], ((5, -(2 ** 33)),),
]


@pytest.mark.parametrize("convert", CONVERTERS)
@pytest.mark.parametrize("value", BIG_INT_VALUES, ids=repr)
def test_ints_beyond_int32_become_int64(convert, value):
    t = convert(value)
    assert t.dtype == np.int64
    np.testing.assert_array_equal(t.numpy(), np.array(value, dtype=object).astype(np.int64))


@pytest.mark.parametrize("convert", CONVERTERS)
@pytest.mark.parametrize("value,bad", [
    (2 ** 63, 2 ** 63), (-(2 ** 63) - 1, -(2 ** 63) - 1), ([1, 2 ** 63], 2 ** 63),
    ([[1], [2 ** 63]], 2 ** 63), ([[-1, 2], [3, 2 ** 64]], 2 ** 64), ([-(2 ** 70), 1], -(2 ** 70)),
], ids=repr)
def test_ints_beyond_int64_are_a_value_error(convert, value, bad):
    # TF: ValueError "Can't convert Python sequence with out-of-range integer to Tensor."
    name = convert.__name__
    with pytest.raises(ValueError, match=rf"^{name}: value must hold integers in int64 range .*"
                                         rf"got {bad}$"):
        convert(value)
    with pytest.raises(ValueError, match=rf"^{name}: value must hold integers in int64"):
        convert(value, dtype=tf.int64)
    with pytest.raises(ValueError, match=rf"^{name}: value must hold integers in int64"):
        convert(value, dtype=tf.int8)


@pytest.mark.parametrize("convert", CONVERTERS)
def test_ints_beyond_int64_convert_to_floats(convert):
    # TF: a float dtype, or a float in the list, takes any integer a double can hold
    assert float(convert(2 ** 63, dtype=tf.float64)) == 2.0 ** 63
    assert float(convert(2 ** 70, dtype=tf.float32)) == np.float32(2.0 ** 70)
    t = convert([1.5, 2 ** 70])
    assert t.dtype == np.float32
    np.testing.assert_array_equal(t.numpy(), np.float32([1.5, 2.0 ** 70]))
    with pytest.raises(ValueError, match=r"value must hold numbers in float64 range, got an "
                                         r"integer of 1101 bits$"):
        convert([1.5, 2 ** 1100])


@pytest.mark.parametrize("convert", CONVERTERS)
def test_ints_wrap_into_a_narrower_requested_dtype(convert):
    # TF 2.21 converts Python ints to a requested integer dtype modulo 2**bits
    assert int(convert(2 ** 40 + 5, dtype=tf.int32)) == 5
    np.testing.assert_array_equal(convert([2 ** 31, 1], dtype=tf.int32).numpy(), [-(2 ** 31), 1])
    np.testing.assert_array_equal(convert([300, -1], dtype=tf.uint8).numpy(), [44, 255])
    assert int(tf.convert_to_tensor(2 ** 40, dtype_hint=tf.int32)) == 0


def test_big_ints_match_tf(real_tf):
    for value in BIG_INT_VALUES + [[1.5, 2 ** 70], 7, [[-(2 ** 31)]]]:
        want = real_tf.constant(value)
        got = tf.constant(value)
        assert got.dtype == np.dtype(want.dtype.as_numpy_dtype), value
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    for value in ([2 ** 63], [[1], [-(2 ** 63) - 1]]):
        with pytest.raises(ValueError):
            real_tf.constant(value)
        with pytest.raises(ValueError):
            tf.constant(value)


def test_python_scalar_dtype():
    from ipu_gpu.core.dtypes import python_scalar_dtype

    assert python_scalar_dtype(2 ** 31 - 1) == np.int32
    assert python_scalar_dtype(-(2 ** 31)) == np.int32
    assert python_scalar_dtype(2 ** 31) == np.int64
    assert python_scalar_dtype(-(2 ** 63)) == np.int64
    with pytest.raises(ValueError, match="int64 range, got 9223372036854775808"):
        python_scalar_dtype(2 ** 63)
