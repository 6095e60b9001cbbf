"""Variable: construction, assignment, reads, and use wherever a Tensor is accepted."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu import Tensor, Variable


def test_construct_from_values():
    v = Variable([[1.0, 2.0], [3.0, 4.0]])
    assert isinstance(v, Tensor)
    assert v.dtype == np.float32
    assert v.shape == (2, 2)
    np.testing.assert_array_equal(v.numpy(), [[1, 2], [3, 4]])
    assert Variable(3).dtype == np.int32
    assert Variable(True).dtype == np.bool_
    assert Variable(np.zeros(3, np.float64)).dtype == np.float64
    assert Variable(tf.constant([1.0, 2.0])).dtype == np.float32


def test_callable_initial_value():
    calls = []

    def init():
        calls.append(1)
        return np.full((2, 3), 7.0, np.float32)

    v = Variable(init)
    assert calls == [1]
    assert v.shape == (2, 3)
    np.testing.assert_array_equal(v.numpy(), np.full((2, 3), 7.0))
    v2 = Variable(lambda: tf.ones([4]), dtype=tf.float32)
    np.testing.assert_array_equal(v2.numpy(), np.ones(4))


def test_dtype_conversion():
    v = Variable(1, dtype=tf.float32)
    assert v.dtype == np.float32 and float(v) == 1.0
    v = Variable([1, 2], dtype="float64")
    assert v.dtype == np.float64
    v = Variable(np.arange(3, dtype=np.float64), dtype=tf.float16)
    assert v.dtype == np.float16
    np.testing.assert_array_equal(v.numpy(), [0, 1, 2])
    with pytest.raises(TypeError):
        Variable(1.5, dtype=tf.int32)  # TF: "Cannot convert 1.5 to EagerTensor of dtype int32"
    with pytest.raises(TypeError):
        Variable(tf.constant([1.0]), dtype=tf.float64)  # a Tensor's dtype is never converted


def test_owns_its_buffer():
    a = np.ones(3, np.float32)
    v = Variable(a)
    a[0] = 9
    np.testing.assert_array_equal(v.numpy(), [1, 1, 1])
    t = tf.constant([1.0, 2.0])
    v = Variable(t)
    v.assign([5.0, 6.0])
    np.testing.assert_array_equal(t.numpy(), [1, 2])


def test_owns_its_buffer_from_torch():
    torch = pytest.importorskip("torch")
    tt = torch.ones(3)
    v = Variable(tt)
    tt.add_(1)
    np.testing.assert_array_equal(v.numpy(), [1, 1, 1])
    v.assign(tt)
    tt.add_(1)
    np.testing.assert_array_equal(v.numpy(), [2, 2, 2])


def test_name_and_trainable():
    v = Variable(1.0)
    assert v.name == "Variable:0"
    assert v.trainable is True
    w = Variable(1.0, name="w", trainable=False)
    assert w.name == "w:0"
    assert w.trainable is False
    assert "w:0" in repr(w)


@pytest.mark.parametrize("bad", [1, 0, "yes", None])
def test_trainable_must_be_bool(bad):
    with pytest.raises(TypeError, match="Variable: trainable must be a bool"):
        Variable(1.0, trainable=bad)


def test_name_must_be_str():
    with pytest.raises(TypeError, match="Variable: name must be a str"):
        Variable(1.0, name=3)


def test_bad_initial_value():
    with pytest.raises(TypeError):
        Variable(object())
    with pytest.raises(ValueError):
        Variable([[1.0, 2.0], [3.0]])


# ---- assignment ----------------------------------------------------------------------------
def test_assign_returns_the_variable():
    v = Variable([1.0, 2.0])
    assert v.assign([3.0, 4.0]) is v
    np.testing.assert_array_equal(v.numpy(), [3, 4])
    assert v.assign_add([1.0, 1.0]) is v
    np.testing.assert_array_equal(v.numpy(), [4, 5])
    assert v.assign_sub(tf.constant([2.0, 2.0])) is v
    np.testing.assert_array_equal(v.numpy(), [2, 3])
    v.assign(np.array([7.0, 8.0]))  # numpy float64 converted to the variable's float32
    assert v.dtype == np.float32
    np.testing.assert_array_equal(v.numpy(), [7, 8])


def test_assign_python_scalar_to_scalar_variable():
    v = Variable(0.0)
    v.assign(2.5)
    v.assign_add(1.0)
    v.assign_sub(0.5)
    assert float(v) == 3.0
    i = Variable(0)
    i.assign_add(1)
    i.assign_add(1)
    assert int(i) == 2 and i.dtype == np.int32


@pytest.mark.parametrize("method", ["assign", "assign_add", "assign_sub"])
def test_assign_shape_mismatch(method):
    v = Variable(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match=rf"Variable\.{method}: value must have shape \(2, 3\)"):
        getattr(v, method)(np.zeros((3, 2), np.float32))
    with pytest.raises(ValueError, match="value"):
        getattr(v, method)(np.zeros((3,), np.float32))
    np.testing.assert_array_equal(v.numpy(), np.zeros((2, 3)))


def test_assign_dtype_mismatch_with_a_tensor():
    v = Variable([1.0, 2.0])
    with pytest.raises(TypeError):
        v.assign(tf.constant([1.0, 2.0], dtype=tf.float64))
    with pytest.raises(TypeError):
        v.assign(tf.constant([1, 2]))


def test_assign_does_not_alias_the_source():
    v = Variable(np.zeros(3, np.float32))
    src = np.ones(3, np.float32)
    v.assign(src)
    src[0] = 5
    np.testing.assert_array_equal(v.numpy(), [1, 1, 1])
    t = tf.constant([2.0, 2.0, 2.0])
    v.assign(t)
    v.assign_add([1.0, 1.0, 1.0])
    np.testing.assert_array_equal(t.numpy(), [2, 2, 2])


# ---- reads ---------------------------------------------------------------------------------
def test_read_value_and_value():
    v = Variable([1.0, 2.0])
    r = v.read_value()
    assert type(r) is Tensor
    np.testing.assert_array_equal(r.numpy(), [1, 2])
    assert type(v.value()) is Tensor
    np.testing.assert_array_equal(v.value().numpy(), [1, 2])


def test_earlier_reads_unaffected_by_later_assigns():
    v = Variable([1.0, 2.0])
    reads = [v.read_value(), v.value(), tf.convert_to_tensor(v), tf.identity(v), v + 0,
             v[0:2]]
    arr = np.asarray(v)
    v.assign([10.0, 20.0])
    v.assign_add([1.0, 1.0])
    v.assign_sub([1.0, 1.0])
    for r in reads:
        np.testing.assert_array_equal(np.asarray(r), [1, 2])
    np.testing.assert_array_equal(arr, [1, 2])
    np.testing.assert_array_equal(v.numpy(), [10, 20])


def test_usable_as_a_tensor():
    v = Variable(np.arange(6, dtype=np.float32).reshape(2, 3))
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal((v + 1).numpy(), a + 1)
    np.testing.assert_array_equal((1 - v).numpy(), 1 - a)
    np.testing.assert_array_equal((v * v).numpy(), a * a)
    np.testing.assert_array_equal((-v).numpy(), -a)
    np.testing.assert_array_equal((v > 2).numpy(), a > 2)
    np.testing.assert_array_equal((v @ tf.ones([3, 1])).numpy(), a @ np.ones((3, 1)))
    np.testing.assert_array_equal(tf.matmul(v, v, transpose_b=True).numpy(), a @ a.T)
    np.testing.assert_array_equal(tf.reduce_sum(v, axis=1).numpy(), a.sum(1))
    np.testing.assert_array_equal(tf.nn.relu(v - 2).numpy(), np.maximum(a - 2, 0))
    np.testing.assert_array_equal(tf.gather(v, [1, 0]).numpy(), a[[1, 0]])
    np.testing.assert_array_equal(tf.reshape(v, [3, 2]).numpy(), a.reshape(3, 2))
    np.testing.assert_array_equal(tf.add(v, v).numpy(), a + a)
    np.testing.assert_array_equal(v[1, ::-1].numpy(), a[1, ::-1])
    np.testing.assert_array_equal(np.asarray(v), a)
    np.testing.assert_array_equal(np.from_dlpack(v), a)
    np.testing.assert_array_equal(tf.convert_to_tensor(v).numpy(), a)
    assert len(v) == 2
    assert v.shape.as_list() == [2, 3]
    assert v.ndim == 2
    assert float(Variable(2.5)) == 2.5
    assert isinstance(v + 1, Tensor) and not isinstance(v + 1, Variable)


def test_gradient_flows_to_variable_through_every_use():
    v = Variable([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        y = (tf.reduce_sum(v * v) + tf.reduce_sum(tf.convert_to_tensor(v))
             + tf.reduce_sum(v.read_value()) + tf.reduce_sum(v[1:]))
    g = tape.gradient(y, v)
    np.testing.assert_allclose(g.numpy(), 2 * np.array([1, 2, 3]) + 2 + [0, 1, 1])


def test_not_hashable_but_identity_comparable():
    v = Variable(1.0)
    with pytest.raises(TypeError):
        hash(v)
    assert bool(v == 1.0)


def test_bad_dtype_names_the_argument():
    with pytest.raises(TypeError, match="^Variable: dtype must be"):
        Variable(1.0, dtype="not-a-dtype")
