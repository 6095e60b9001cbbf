"""The training step's fast paths give the numbers and the semantics of the general paths:
the one-pass elementwise kernels (relu, its gradient, bias_add), in-place variable updates,
Python scalars beside float tensors, and the pooled host allocator."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu.core.tensor import Tensor
from ipu_gpu.core import host_memory
from ipu_gpu.kernels import elementwise_cpu

SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 3.0, -3.0])


def _inputs(dtype, shape, seed):
    g = np.random.default_rng(seed)
    x = g.standard_normal(shape).astype(dtype)
    flat = x.reshape(-1)
    flat[: min(flat.size, SPECIALS.size)] = SPECIALS[: flat.size]
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(0, 5), (1, 1), (7,), (256, 512), (2, 3, 4, 5)])
def test_relu_kernels_match_numpy(dtype, shape):
    x = _inputs(dtype, shape, 1)
    g = _inputs(dtype, shape, 2)[::-1].copy() if len(shape) == 1 else _inputs(dtype, shape, 2)
    with np.errstate(invalid="ignore"):
        want_y = np.maximum(x, 0)
        want_g = g * (x > 0).astype(dtype)
    np.testing.assert_array_equal(elementwise_cpu.relu(x), want_y)
    np.testing.assert_array_equal(elementwise_cpu.relu_grad(g, x), want_g)  # NaN * 0 = NaN
    into = g.copy()
    assert elementwise_cpu.relu_grad_into(into, x) is into
    np.testing.assert_array_equal(into, want_g)
    assert elementwise_cpu.relu(x).dtype == dtype


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(0, 4), (1, 1), (256, 512), (2, 3, 5, 4)])
def test_bias_add_kernel_matches_numpy(dtype, shape):
    x = _inputs(dtype, shape, 3)
    b = _inputs(dtype, shape[-1:], 4)
    with np.errstate(invalid="ignore"):
        want = x + b
    np.testing.assert_array_equal(elementwise_cpu.bias_add_last(x, b), want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(0, 4), (1, 2), (3, 2), (256, 512), (32, 16, 16, 64),
                                   (2, 3, 5, 4), (4097, 8)])
def test_column_sums_kernel_gives_numpys_bits(dtype, shape):
    g = _inputs(dtype, shape, 6)
    with np.errstate(invalid="ignore"):
        want = np.sum(g, axis=tuple(range(g.ndim - 1)))
    got = elementwise_cpu.column_sums(g, shape[-1])
    assert got.dtype == dtype and got.shape == shape[-1:]
    np.testing.assert_array_equal(got, want)  # NaN where a NaN or inf - inf was summed


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_bias_add_gradient_of_a_conv_map_matches_float64(data_format):
    g = np.random.default_rng(7)
    x = g.standard_normal((4, 6, 5, 16) if data_format == "NHWC" else (4, 16, 6, 5))
    b = g.standard_normal(16)
    w = g.standard_normal(x.shape)
    xt, bt = tf.constant(x.astype(np.float32)), tf.Variable(b.astype(np.float32))
    with tf.GradientTape() as tape:
        tape.watch(xt)
        loss = tf.reduce_sum(tf.nn.bias_add(xt, bt, data_format=data_format) * w.astype(
            np.float32))
    gx, gb = tape.gradient(loss, [xt, bt])
    axes = (0, 1, 2) if data_format == "NHWC" else (0, 2, 3)
    np.testing.assert_allclose(gx.numpy(), w, rtol=1e-6)
    np.testing.assert_allclose(gb.numpy(), w.sum(axis=axes), rtol=1e-5, atol=1e-5)


def test_kernels_refuse_what_they_do_not_take():
    a = np.ones((4, 4), np.float32)
    assert elementwise_cpu.fits(a, a)
    assert not elementwise_cpu.fits(a[:, ::2])  # strided view: numpy takes it
    assert not elementwise_cpu.fits(a.astype(np.float16))
    assert not elementwise_cpu.fits(a, a.astype(np.float64))


@pytest.mark.parametrize("layout", ["contiguous", "strided", "float16"])
def test_relu_and_bias_add_ops_agree_on_every_path(layout):
    g = np.random.default_rng(5)
    x = g.standard_normal((6, 8)).astype(np.float32)
    b = g.standard_normal(4 if layout == "strided" else 8).astype(np.float32)
    if layout == "strided":
        x = x[:, ::2]
    if layout == "float16":
        x, b = x.astype(np.float16), b.astype(np.float16)
    xt, bt = tf.constant(x), tf.Variable(b)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(xt)
        y = tf.nn.relu(tf.nn.bias_add(xt, bt))
        loss = tf.reduce_sum(y * y)
    gx, gb = tape.gradient(loss, [xt, bt])
    z = x.astype(np.float64) + b
    want_y = np.maximum(z, 0)
    dz = 2 * want_y * (z > 0)
    tol = 1e-2 if layout == "float16" else 1e-6
    np.testing.assert_allclose(y.numpy(), want_y, rtol=tol, atol=tol)
    np.testing.assert_allclose(gx.numpy(), dz, rtol=tol, atol=tol)
    np.testing.assert_allclose(gb.numpy(), dz.sum(axis=0), rtol=tol, atol=10 * tol)


def test_assign_sub_in_place_only_when_nothing_else_holds_the_buffer():
    v = tf.Variable(np.arange(4, dtype=np.float32))
    held = v.read_value()  # an earlier read keeps its numbers
    view = np.asarray(v._value)[1:]
    v.assign_sub(tf.constant(np.ones(4, np.float32)))
    np.testing.assert_array_equal(held.numpy(), [0, 1, 2, 3])
    np.testing.assert_array_equal(view, [1, 2, 3])
    np.testing.assert_array_equal(v.numpy(), [-1, 0, 1, 2])
    del held, view
    buf_id = id(v._value)
    v.assign_add(tf.constant(np.full(4, 2, np.float32)))
    assert id(v._value) == buf_id  # sole owner: updated in place
    np.testing.assert_array_equal(v.numpy(), [1, 2, 3, 4])
    v.assign_sub(v)  # delta is the buffer itself
    np.testing.assert_array_equal(v.numpy(), [0, 0, 0, 0])


def test_in_place_update_does_not_change_tape_residuals():
    v = tf.Variable(np.array([[2.0]], np.float32))
    x = tf.constant(np.array([[3.0]], np.float32))
    with tf.GradientTape() as tape:
        y = tf.matmul(x, v) * tf.matmul(x, v)
    v.assign_sub(tf.constant(np.array([[1.0]], np.float32)))  # the tape holds the old value
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), [[2 * 3 * 3 * 2.0]])


def test_assign_errors_unchanged_by_fast_path():
    v = tf.Variable(np.zeros(3, np.float32))
    with pytest.raises(TypeError):
        v.assign_sub(tf.constant(np.zeros(3, np.float64)))
    with pytest.raises(ValueError, match="shape"):
        v.assign_sub(tf.constant(np.zeros(4, np.float32)))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("scalar", [0.1, 3, -7, 1e40, -1e40, float("nan"), 2**60, 0.0])
def test_python_scalar_beside_float_tensor(dtype, scalar):
    x = tf.constant(np.array([1.5, -2.0], dtype))
    with np.errstate(over="ignore"):
        want = np.array([1.5, -2.0], dtype) * np.asarray(scalar, dtype=dtype)
    got = scalar * x
    assert got.dtype == dtype
    np.testing.assert_array_equal(got.numpy(), want)


def test_host_memory_pool_is_on_and_can_be_refused(monkeypatch):
    if sys.platform.startswith("linux"):
        assert host_memory.pool_host_memory() in (True, False)  # glibc: True; musl: False
    state = dict(host_memory._state)
    try:
        host_memory._state["pooled"] = None
        monkeypatch.setenv("IPU_GPU_HOST_ALLOCATOR", "system")
        assert host_memory.pool_host_memory() is False
    finally:
        host_memory._state.update(state)


@pytest.mark.usefixtures("fresh_ipu_system")
def test_updates_inside_an_emulated_program_swap_whole_buffers():
    from ipu_gpu.ipu import config, ipu_compiler, scopes

    cfg = config.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()
    v = tf.Variable(np.zeros(3, np.float32))
    seen = []

    def program():
        seen.append(id(v._value))
        v.assign_sub(tf.constant(np.ones(3, np.float32)))
        seen.append(id(v._value))
        return v.read_value()

    with scopes.ipu_scope("/device:IPU:0"):
        out = ipu_compiler.compile(program)
    np.testing.assert_array_equal(np.asarray(out[0] if isinstance(out, list) else out),
                                  [-1, -1, -1])
    assert seen[0] != seen[1]  # a fresh buffer, not an in-place update


@pytest.mark.usefixtures("fresh_ipu_system")
def test_scalar_variable_stays_an_array_when_updated_inside_a_program():
    from ipu_gpu.ipu import config, ipu_compiler, scopes

    cfg = config.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()
    v = tf.Variable(np.float32(3.0))

    def program():
        v.assign_add(tf.constant(np.float32(1.0)))
        v.assign_sub(tf.constant(np.float32(0.5)))

    with scopes.ipu_scope("/device:IPU:0"):
        ipu_compiler.compile(program)
    assert type(v._value) is np.ndarray and v._value.shape == ()
    assert float(v.numpy()) == 3.5


def test_buffer_for_update_follows_the_in_place_rule():
    """``Variable._buffer_for_update`` (the optimizers' fused kernels write into it) gives the
    variable's own buffer only where ``assign_sub`` would update in place; else a copy that
    becomes the value only when ``_install_buffer`` is called."""
    v = tf.Variable(np.arange(4, dtype=np.float32))
    buf_id = id(v._value)
    buf = v._buffer_for_update()
    assert id(buf) == buf_id  # sole owner
    buf += 1
    v._install_buffer(buf)
    del buf
    assert id(v._value) == buf_id
    np.testing.assert_array_equal(v.numpy(), [1, 2, 3, 4])
    held = v.read_value()  # an earlier read: the next update must not change it
    buf = v._buffer_for_update()
    assert buf is not held._value
    buf -= 1
    np.testing.assert_array_equal(v.numpy(), [1, 2, 3, 4])  # not installed yet
    v._install_buffer(buf)
    np.testing.assert_array_equal(held.numpy(), [1, 2, 3, 4])
    np.testing.assert_array_equal(v.numpy(), [0, 1, 2, 3])


def test_ops_silence_float_warnings_and_restore_the_callers_error_state():
    from ipu_gpu.ops._util import quiet

    big = tf.constant(np.array([3e38], np.float32))
    with np.errstate(all="raise"):
        np.testing.assert_array_equal((big * 2.0).numpy(), [np.inf])  # TF's answer, no raise
        with quiet(np):
            with quiet(np):
                assert np.geterr()["over"] == "ignore"
            assert np.geterr()["over"] == "ignore"
        assert np.geterr() == {"divide": "raise", "over": "raise", "under": "raise",
                               "invalid": "raise"}
        with pytest.raises(FloatingPointError):
            np.float32(3e38) * np.float32(2)
    with np.errstate(divide="warn", over="warn", invalid="warn"), pytest.warns(RuntimeWarning):
        np.float32(3e38) * np.float32(2)  # the caller's state is back after the op


def test_tape_keeps_only_what_gradients_need():
    """A dense layer's matmul and bias_add outputs are freed once relu has read them: the tape
    keeps residuals (relu its output, matmul its inputs, bias_add shapes), not every array.
    (Second derivatives through them: test_tape's comparisons with TF.)"""
    import weakref

    g = np.random.default_rng(8)
    x = tf.constant(g.standard_normal((4, 3)).astype(np.float32))
    w = tf.Variable(g.standard_normal((3, 5)).astype(np.float32))
    b = tf.Variable(g.standard_normal(5).astype(np.float32))
    with tf.GradientTape(persistent=True) as tape:
        z = tf.matmul(x, w)
        zb = tf.nn.bias_add(z, b)
        freed = [weakref.ref(z._value), weakref.ref(zb._value)]
        y = tf.nn.relu(zb)
        del z, zb
        loss = tf.reduce_sum(y * y)
    assert [r() for r in freed] == [None, None]
    gw, gb = tape.gradient(loss, [w, b])
    zz = x.numpy().astype(np.float64) @ w.numpy() + b.numpy()
    dz = 2 * np.maximum(zz, 0) * (zz > 0)
    np.testing.assert_allclose(gw.numpy(), x.numpy().T @ dz, rtol=1e-5)
    np.testing.assert_allclose(gb.numpy(), dz.sum(axis=0), rtol=1e-5)


# ---- relu's gradient written into the tape's own cotangent ---------------------------------
def _counting_owned_relu(monkeypatch):
    from ipu_gpu.core import tape as tape_module
    from ipu_gpu.ops import nn

    calls = []
    rule = tape_module._OWNED_BACKWARD[nn._RELU]
    monkeypatch.setitem(tape_module._OWNED_BACKWARD, nn._RELU,
                        lambda *a, **k: (calls.append(1), rule(*a, **k))[1])
    return calls


def _counting(monkeypatch, module, name):
    calls = []
    fn = getattr(module, name)
    monkeypatch.setattr(module, name, lambda *a, **k: (calls.append(1), fn(*a, **k))[1])
    return calls


@pytest.mark.parametrize("bias", [True, False])
def test_relu_gradient_in_place_in_a_dense_stack(monkeypatch, bias):
    """relu's gradient is written into the tape's own cotangent: by relu's rule, or after a
    bias_add by the pair rule that also sums the bias's gradient in the same pass."""
    calls = _counting_owned_relu(monkeypatch)
    pair = _counting(monkeypatch, elementwise_cpu, "relu_grad_column_sums_into")
    sums = _counting(monkeypatch, elementwise_cpu, "column_sums")
    g = np.random.default_rng(9)
    x = g.standard_normal((8, 5)).astype(np.float32)
    w1, w2 = g.standard_normal((5, 6)).astype(np.float32), g.standard_normal((6, 3))
    b1 = g.standard_normal(6).astype(np.float32) if bias else np.zeros(6, np.float32)
    vs = [tf.Variable(w1), tf.Variable(b1), tf.Variable(w2.astype(np.float32))]
    with tf.GradientTape() as tape:
        z = tf.matmul(tf.constant(x), vs[0])
        h = tf.nn.relu(tf.nn.bias_add(z, vs[1]) if bias else z)
        del z
        loss = tf.reduce_sum(tf.matmul(h, vs[2]))
    gw1, gb1, gw2 = tape.gradient(loss, vs)
    # the matmul's input gradient was the tape's alone
    assert (calls, pair, sums) == (([], [1], []) if bias else ([1], [], []))
    z = x.astype(np.float64) @ w1 + b1
    dz = (np.ones((8, 3)) @ w2.T) * (z > 0)
    np.testing.assert_allclose(gw1.numpy(), x.T @ dz, rtol=1e-5, atol=1e-5)
    if bias:
        np.testing.assert_allclose(gb1.numpy(), dz.sum(axis=0), rtol=1e-5, atol=1e-5)
    else:
        assert gb1 is None  # the bias was not read
    np.testing.assert_allclose(gw2.numpy(), np.maximum(z, 0).T @ np.ones((8, 3)), rtol=1e-5)


def test_relu_gradient_not_in_place_when_the_cotangent_is_shared(monkeypatch):
    """A cotangent that is also a requested gradient (identity hands it on unchanged), or
    that the caller passed in, is never overwritten."""
    calls = _counting_owned_relu(monkeypatch)
    x = tf.constant(np.array([[1.0, -2.0, 3.0, -4.0]], np.float32))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.nn.relu(x)
        yi = tf.identity(y)
        loss = tf.reduce_sum(yi * 2.0)
    g_yi, g_x = tape.gradient(loss, [yi, x])
    np.testing.assert_array_equal(g_yi.numpy(), [[2, 2, 2, 2]])
    np.testing.assert_array_equal(g_x.numpy(), [[2, 0, 2, 0]])
    seed = np.full((1, 4), 3.0, np.float32)
    np.testing.assert_array_equal(tape.gradient(y, x, output_gradients=seed).numpy(),
                                  [[3, 0, 3, 0]])
    np.testing.assert_array_equal(seed, np.full((1, 4), 3.0, np.float32))
    assert calls == []


# ---- lr * g pending until assign_sub applies it in one pass -----------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scalar_first", [True, False])
def test_pending_product_gives_the_multiply_ops_bits(dtype, scalar_first):
    g = _inputs(dtype, (33, 7), 10)
    t = tf.constant(g)
    for s in (0.01, -3, 1e-30, 2**53):
        p = s * t if scalar_first else t * s
        with np.errstate(all="ignore"):
            want = np.multiply(np.asarray(s, dtype), g)
        assert isinstance(p, tf.Tensor)
        np.testing.assert_array_equal(p.numpy(), want)
        assert type(p) is Tensor and p.dtype == dtype  # a plain Tensor once read


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_assign_sub_of_a_pending_product_is_one_pass_with_the_same_bits(dtype):
    w = _inputs(dtype, (64, 9), 11)
    g = _inputs(dtype, (64, 9), 12)
    with np.errstate(all="ignore"):
        want = w - np.multiply(np.asarray(0.01, dtype), g)
    v = tf.Variable(w)
    buf = id(v._value)
    v.assign_sub(0.01 * tf.constant(g))
    assert id(v._value) == buf  # in place
    np.testing.assert_array_equal(v.numpy(), want)
    held = v.read_value()  # an earlier read: the update must leave it alone
    before = held.numpy()
    v.assign_sub(0.01 * tf.constant(g))
    np.testing.assert_array_equal(held.numpy(), before)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(v.numpy(), want - np.multiply(np.asarray(0.01, dtype), g))


def test_pending_product_reads_the_values_it_was_made_from():
    v = tf.Variable(np.array([1.0, 2.0], np.float32))
    p = 2.0 * v.read_value()
    v.assign_sub(tf.constant(np.array([5.0, 5.0], np.float32)))
    v.assign_add(p)  # computed now, from the read before the update
    np.testing.assert_array_equal(v.numpy(), [-2.0, 1.0])
    q = 3.0 * tf.constant(np.array([1.0], np.float32))
    assert type(tf.convert_to_tensor(q)) is Tensor
    assert "Tensor" in repr(0.5 * tf.constant(np.ones(2, np.float32)))


def test_no_pending_product_under_a_tape_or_for_a_variable():
    x = tf.constant(np.array([1.0, 2.0], np.float32))
    v = tf.Variable(np.array([1.0, 2.0], np.float32))
    assert type(v * 2.0) is Tensor  # a variable's value may change in place
    assert type(x * np.float32(2.0)) is Tensor  # a numpy scalar: the op
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = 3.0 * x
        assert type(y) is Tensor
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [3.0, 3.0])
    with pytest.raises(TypeError):  # errors unchanged: a float beside an int tensor
        _ = 0.5 * tf.constant(np.array([1, 2], np.int32))


# ---- two adjacent records played back at once (tape.set_pair_backward) ----------------------
def _gradients(build, sources, pairs, monkeypatch, output_gradients=None):
    """Gradients of ``build()`` (run under a fresh tape) with the tape's pair rules on or
    off, as numpy arrays."""
    from ipu_gpu.core import tape as tape_module

    with monkeypatch.context() as m:
        if not pairs:
            m.setattr(tape_module, "_PAIR_BACKWARD", {})
        with tf.GradientTape() as tape:
            target = build()
        grads = tape.gradient(target, sources, output_gradients=output_gradients)
    return [None if g is None else g.numpy() for g in grads]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 5), (256, 512), (2, 3, 4, 5)])
@pytest.mark.parametrize("seeded", [False, True])
def test_relu_of_bias_add_pair_gives_the_records_bits(monkeypatch, dtype, shape, seeded):
    """relu(bias_add(v, b)) differentiated in one pass: the bits of relu's and bias_add's
    rules one after the other (NaN and inf in the cotangent and the features included), near
    a float64 reference; a cotangent the caller passed in is left as it was."""
    v = tf.Variable(_inputs(dtype, shape, 3))
    b = tf.Variable(_inputs(dtype, shape[-1:], 4)[::-1].copy())
    seed = _inputs(dtype, shape, 5)[..., ::-1].copy() if seeded else None
    kept = None if seed is None else seed.copy()
    pair = _counting(monkeypatch, elementwise_cpu, "relu_grad_column_sums")
    into = _counting(monkeypatch, elementwise_cpu, "relu_grad_column_sums_into")

    def build():
        y = tf.nn.relu(tf.nn.bias_add(v, b))
        return y if seeded else tf.reduce_sum(y * y)

    got = _gradients(build, [v, b], True, monkeypatch, seed)
    assert (len(pair), len(into)) == ((1, 0) if seeded else (0, 1))
    want = _gradients(build, [v, b], False, monkeypatch, seed)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    if seeded:
        np.testing.assert_array_equal(seed, kept)
    with np.errstate(all="ignore"):
        z = v.numpy().astype(np.float64) + b.numpy().astype(np.float64)
        y = np.maximum(z, 0)
        dz = (seed.astype(np.float64) if seeded else 2 * y) * (y > 0)
        db = dz.reshape(-1, shape[-1]).sum(axis=0)
    finite = np.isfinite(dz)
    np.testing.assert_allclose(got[0][finite], dz[finite], rtol=1e-5 if dtype == np.float32
                               else 1e-12)
    np.testing.assert_array_equal(np.isnan(got[0]), np.isnan(dz))
    ok = np.isfinite(db)
    np.testing.assert_allclose(got[1][ok], db[ok], rtol=1e-4 if dtype == np.float32
                               else 1e-10, atol=1e-4 if dtype == np.float32 else 1e-10)


@pytest.mark.parametrize("case", ["bias_add output used twice", "bias_add output a source",
                                  "NCHW", "one channel", "float16", "op between"])
def test_relu_of_bias_add_pair_only_where_it_is_the_same(monkeypatch, case):
    """Where relu is not the bias_add output's only use, the channel axis is not last, the
    bias has one element, the kernel does not take the dtype or another op was recorded
    between the two, the records play back one by one (the same numbers)."""
    g = np.random.default_rng(11)
    shape = {"NCHW": (2, 3, 4, 5), "one channel": (4, 1)}.get(case, (4, 6))
    dtype = np.float16 if case == "float16" else np.float32
    v = tf.Variable(g.standard_normal(shape).astype(dtype))
    b = tf.Variable(g.standard_normal(shape[1] if case == "NCHW" else shape[-1]).astype(dtype))
    kept = {}

    def build():
        z = tf.nn.bias_add(v, b, data_format="NCHW" if case == "NCHW" else None)
        if case == "op between":
            tf.identity(v)
        y = tf.nn.relu(z)
        loss = tf.reduce_sum(y * y)
        if case == "bias_add output used twice":
            loss = loss + tf.reduce_sum(z * 3.0)
        kept["z"] = z
        return loss

    sources = [v, b]
    calls = _counting(monkeypatch, elementwise_cpu, "relu_grad_column_sums_into")
    if case == "bias_add output a source":
        with tf.GradientTape() as tape:
            loss = build()
        got = [t.numpy() for t in tape.gradient(loss, [v, b, kept["z"]])]
        assert calls == []
        z = kept["z"].numpy()
        np.testing.assert_allclose(got[2], 2 * np.maximum(z, 0), rtol=1e-6)
        np.testing.assert_array_equal(got[0], got[2])
        np.testing.assert_allclose(got[1], got[2].sum(axis=0), rtol=1e-5)
        return
    got = _gradients(build, sources, True, monkeypatch)
    assert calls == []
    want = _gradients(build, sources, False, monkeypatch)
    for a, w in zip(got, want):
        np.testing.assert_array_equal(a, w)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("axis", [None, [0, 1], 1])
def test_mean_of_sparse_xent_pair_gives_the_records_bits(monkeypatch, dtype, axis):
    """reduce_mean of the per-example cross-entropies differentiated in one multiply: the
    bits of the two rules one after the other, near a float64 reference (a mean over some
    axes only plays back record by record)."""
    g = np.random.default_rng(12)
    logits = tf.Variable(g.standard_normal((6, 5, 7)).astype(dtype) * 3)
    labels = tf.constant(g.integers(0, 7, (6, 5)).astype(np.int32))
    from ipu_gpu.core import tape as tape_module
    from ipu_gpu.ops import nn, reduction

    fused = []  # whether the pair rule took each call
    key = (reduction._REDUCE_MEAN, nn._SPARSE_XENT)
    rule = tape_module._PAIR_BACKWARD[key]
    monkeypatch.setitem(tape_module._PAIR_BACKWARD, key,
                        lambda *a: (lambda r: (fused.append(r is not None), r)[1])(rule(*a)))

    def build():
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits), axis=axis)
        return loss if axis != 1 else tf.reduce_sum(loss)

    (got,) = _gradients(build, [logits], True, monkeypatch)
    (want,) = _gradients(build, [logits], False, monkeypatch)
    assert fused == [axis != 1]
    np.testing.assert_array_equal(got, want)
    x = logits.numpy().astype(np.float64)
    p = np.exp(x - x.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    p[np.arange(6)[:, None], np.arange(5), labels.numpy()] -= 1
    n = 30 if axis != 1 else 5
    tol = {np.float16: 2e-3, np.float32: 1e-6, np.float64: 1e-14}[dtype]
    np.testing.assert_allclose(got.astype(np.float64), p / n, rtol=tol * 10, atol=tol)
