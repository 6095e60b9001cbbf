"""``tf.nn.relu(tf.nn.bias_add(v, b))`` in one pass (ops/bias_relu_fusion.py): the sum is
deferred only where reading it later gives what reading it at once would, its relu and every
other reader give the bits of the two ops run alone, and the tape differentiates them as the
two ops (gradients, pair rule, second derivatives)."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu.core import registry as _registry
from ipu_gpu.core.tensor import Tensor, _Deferred
from ipu_gpu.kernels import elementwise_cpu
from ipu_gpu.ops import bias_relu_fusion


@pytest.fixture(autouse=True)
def _eager_process(monkeypatch):
    """As in a process that has built no TF1 graph: one that has (an earlier test) keeps the
    graph's variable-read probe installed, and bias_add then never defers its sum."""
    monkeypatch.setattr(_registry, "_variable_read_probe", None)

SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 3.0, -3.0])


def _data(dtype, shape, seed):
    g = np.random.default_rng(seed)
    x = g.standard_normal(shape).astype(dtype)
    flat = x.reshape(-1)
    flat[: min(flat.size, SPECIALS.size)] = SPECIALS[: flat.size]
    return x


def _fresh(a):
    """A Tensor whose array nothing else holds, as an op's output is."""
    t = tf.constant(a.copy())
    assert type(t) is Tensor
    return t


def _unfused(monkeypatch):
    monkeypatch.setattr(bias_relu_fusion, "deferred_bias_add", lambda *args: None)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(0, 4), (1, 1), (3, 2), (256, 512), (2, 3, 5, 4)])
def test_bias_relu_kernel_gives_the_two_kernels_bits(dtype, shape):
    x = _data(dtype, shape, 1)
    b = _data(dtype, shape[-1:], 2)[::-1].copy()
    want = elementwise_cpu.relu(elementwise_cpu.bias_add_last(x, b))
    got = elementwise_cpu.bias_relu(x, b)
    assert got.dtype == dtype and got.shape == x.shape
    assert got.tobytes() == want.tobytes()  # NaN stays NaN, -0 + -0 gives 0
    with np.errstate(invalid="ignore"):
        ref = np.where(x + b <= 0, dtype(0), x + b)
    assert got.tobytes() == ref.tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("data_format", [None, "NHWC", "N...C"])
def test_relu_of_bias_add_is_fused_with_the_same_bits(monkeypatch, dtype, data_format):
    shape = (2, 3, 4, 5) if data_format == "NHWC" else (6, 5)
    x, b = _data(dtype, shape, 3), _data(dtype, (5,), 4)
    fused = []
    kernel = elementwise_cpu.bias_relu
    monkeypatch.setattr(elementwise_cpu, "bias_relu", lambda *a: fused.append(1) or kernel(*a))
    h = tf.nn.bias_add(_fresh(x), tf.Variable(b), data_format=data_format)
    assert type(h) is _Deferred
    y = tf.nn.relu(h)
    assert fused == [1] and type(y) is Tensor
    with np.errstate(invalid="ignore"):
        want_sum = x + b
    want = np.where(want_sum <= 0, dtype(0), want_sum)
    assert y.numpy().tobytes() == want.tobytes()
    assert h.numpy().tobytes() == want_sum.tobytes()  # the sum, read after its relu
    assert type(h) is Tensor


def test_sum_is_not_deferred_where_it_could_change(monkeypatch):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = tf.Variable(np.ones(3, np.float32))
    # a caller's numpy array behind the Tensor: it may write it before the sum is read
    held = tf.convert_to_tensor(x)
    h = tf.nn.bias_add(held, b)
    assert type(h) is Tensor
    x[:] = 100
    np.testing.assert_array_equal(h.numpy(), np.arange(6).reshape(2, 3) + 1)
    # channels first, a float16 sum, a raw array, a bias the caller still holds
    v = np.ones((2, 3, 4), np.float32)
    assert type(tf.nn.bias_add(_fresh(v), tf.Variable(np.ones(3, np.float32)),
                               data_format="NCW")) is Tensor
    assert type(tf.nn.bias_add(_fresh(v.astype(np.float16)),
                               tf.Variable(np.ones(4, np.float16)))) is Tensor
    assert type(tf.nn.bias_add(v, b.read_value()[:1] * 0 + np.ones(4, np.float32))) is Tensor
    mine = np.ones(4, np.float32)
    assert type(tf.nn.bias_add(_fresh(v), tf.convert_to_tensor(mine))) is Tensor


def test_deferred_sum_keeps_the_values_it_was_made_from():
    x = _data(np.float32, (4, 3), 5)
    bias = tf.Variable(np.array([1.0, -2.0, 3.0], np.float32))
    weights = tf.Variable(x)
    h = tf.nn.bias_add(_fresh(x), bias)
    h2 = tf.nn.bias_add(weights, tf.Variable(np.zeros(3, np.float32)))
    assert type(h) is _Deferred and type(h2) is Tensor  # a variable's value: the op runs
    bias.assign_sub(0.5 * tf.constant(np.ones(3, np.float32)))  # would be in place
    weights.assign_add(tf.constant(np.ones((4, 3), np.float32)))
    weights.assign_sub(2.0 * tf.constant(np.ones((4, 3), np.float32)))
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(h.numpy(), x + np.array([1.0, -2.0, 3.0], np.float32))
        np.testing.assert_array_equal(h2.numpy(), x)
    np.testing.assert_array_equal(bias.numpy(), [0.5, -2.5, 2.5])


def test_deferred_sum_reads_as_a_tensor_everywhere():
    x = np.arange(12, dtype=np.float32).reshape(4, 3) - 6
    b = np.array([0.5, -1.0, 2.0], np.float32)
    want = x + b

    def h():
        out = tf.nn.bias_add(_fresh(x), tf.Variable(b))
        assert type(out) is _Deferred
        return out
    assert h().shape == (4, 3) and h().dtype == np.float32
    np.testing.assert_array_equal(np.asarray(h()), want)
    np.testing.assert_array_equal(tf.convert_to_tensor(h()).numpy(), want)
    np.testing.assert_array_equal((h() * 2).numpy(), want * 2)
    np.testing.assert_array_equal(tf.nn.sigmoid(h()).numpy(), tf.nn.sigmoid(want).numpy())
    np.testing.assert_array_equal(tf.nn.relu(tf.nn.relu(h())).numpy(), np.maximum(want, 0))
    v = tf.Variable(np.zeros((4, 3), np.float32))
    v.assign(h())
    np.testing.assert_array_equal(v.numpy(), want)
    assert "0.5" in repr(h())


@pytest.mark.parametrize("case", ["relu", "sum used twice", "sum as target", "no relu",
                                  "sum a source", "persistent twice"])
def test_tape_gradients_equal_the_unfused_ops(monkeypatch, case):
    g = np.random.default_rng(6)
    x = g.standard_normal((5, 4)).astype(np.float32)
    w0 = g.standard_normal((4, 3)).astype(np.float32)
    b0 = g.standard_normal(3).astype(np.float32)

    def run():
        w, b = tf.Variable(w0), tf.Variable(b0)
        with tf.GradientTape(persistent=case == "persistent twice") as tape:
            s = tf.nn.bias_add(tf.matmul(tf.constant(x), w), b)
            if case == "sum a source":
                tape.watch(s)
            if case == "sum as target":
                target = s
            elif case == "no relu":
                target = tf.reduce_sum(s * s)
            else:
                y = tf.nn.relu(s)
                target = tf.reduce_sum(y * y)
                if case == "sum used twice":
                    target = target + tf.reduce_sum(s)
        sources = [w, b, s] if case == "sum a source" else [w, b]
        grads = tape.gradient(target, sources)
        if case == "persistent twice":
            grads += tape.gradient(target, [b])
        return [gr.numpy() for gr in grads]

    fused = run()
    _unfused(monkeypatch)
    plain = run()
    for a, c in zip(fused, plain):
        assert a.tobytes() == c.tobytes()


def test_second_derivative_through_the_fused_pair(monkeypatch):
    x0 = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], np.float64)
    b0 = np.array([0.1, 0.2, -0.3], np.float64)

    def run():
        x, b = tf.Variable(x0), tf.Variable(b0)
        with tf.GradientTape() as outer:
            with tf.GradientTape() as inner:
                y = tf.nn.relu(tf.nn.bias_add(x * 1, b))
                loss = tf.reduce_sum(y * y * y)
            gx = inner.gradient(loss, x)
            total = tf.reduce_sum(gx * gx)
        return gx.numpy(), outer.gradient(total, b).numpy()

    gx, gb = run()
    s = x0 + b0
    np.testing.assert_allclose(gx, 3 * np.maximum(s, 0) ** 2, rtol=1e-12)
    np.testing.assert_allclose(gb, (36 * np.maximum(s, 0) ** 3).sum(axis=0), rtol=1e-12)
    _unfused(monkeypatch)
    gx2, gb2 = run()
    assert gx.tobytes() == gx2.tobytes() and gb.tobytes() == gb2.tobytes()


def test_bias_add_errors_unchanged():
    v = _fresh(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="bias must have 3 elements"):
        tf.nn.bias_add(v, tf.Variable(np.ones(4, np.float32)))
    with pytest.raises(TypeError, match="bias_add: bias must have the dtype"):
        tf.nn.bias_add(v, tf.Variable(np.ones(3, np.float64)))
    with pytest.raises(ValueError, match="data_format must be"):
        tf.nn.bias_add(v, tf.Variable(np.ones(3, np.float32)), data_format="NXC")
