"""GradientTape: watching, structures, unconnected sources, persistence, variables,
nested tapes (second derivatives, checked against TensorFlow), threads, dtypes."""

from __future__ import annotations

import collections
import threading

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu import GradientTape, Tensor, Variable


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def _c(a):
    return tf.constant(np.asarray(a, dtype=np.float64))


# ---- watching ------------------------------------------------------------------------------
def test_unwatched_constant_gives_none():
    x = _c([1.0, 2.0])
    with GradientTape() as tape:
        y = x * x
    assert tape.gradient(y, x) is None


def test_watch_nested_structure():
    x, y, z = _c(1.0), _c(2.0), _c(3.0)
    with GradientTape() as tape:
        tape.watch([x, {"b": (y,), "a": [z]}])
        out = x * y * z
    gx, gy, gz = tape.gradient(out, [x, y, z])
    assert (float(gx), float(gy), float(gz)) == (6.0, 3.0, 2.0)


@pytest.mark.parametrize("bad", [1.0, np.ones(2), [tf.constant(1.0), 2.0], None])
def test_watch_rejects_non_tensors(bad):
    with GradientTape() as tape:
        with pytest.raises(ValueError, match="GradientTape.watch: tensor must be a Tensor"):
            tape.watch(bad)


def test_gradient_rejects_non_tensor_sources():
    x = _c(1.0)
    with GradientTape() as tape:
        tape.watch(x)
        y = x * 2
    with pytest.raises(ValueError, match="sources"):
        tape.gradient(y, [x, 3.0])


# ---- structures ----------------------------------------------------------------------------
def _program():
    a, b, c = _c([1.0, 2.0]), _c(3.0), _c([[1.0], [2.0]])
    tape = GradientTape(persistent=True)
    with tape:
        tape.watch([a, b, c])
        y = tf.reduce_sum(a * b) + tf.reduce_sum(c * c)
    return tape, y, a, b, c


def test_sources_structure_is_preserved():
    tape, y, a, b, c = _program()
    g = tape.gradient(y, a)
    assert isinstance(g, Tensor)
    np.testing.assert_array_equal(g.numpy(), [3, 3])
    g = tape.gradient(y, [a, b])
    assert isinstance(g, list) and len(g) == 2
    g = tape.gradient(y, (a, b))
    assert isinstance(g, tuple) and len(g) == 2
    g = tape.gradient(y, {"z": a, "y": b})
    assert isinstance(g, dict) and list(g) == ["z", "y"]
    np.testing.assert_array_equal(g["z"].numpy(), [3, 3])
    assert float(g["y"]) == 3.0
    g = tape.gradient(y, {"p": [a, (b, {"q": c})]})
    np.testing.assert_array_equal(g["p"][0].numpy(), [3, 3])
    assert float(g["p"][1][0]) == 3.0
    np.testing.assert_array_equal(g["p"][1][1]["q"].numpy(), [[2], [4]])
    Pair = collections.namedtuple("Pair", "first second")
    g = tape.gradient(y, Pair(a, c))
    assert isinstance(g, Pair)
    assert g.second.shape == (2, 1)


def test_unconnected_sources():
    tape, y, a, b, c = _program()
    d = _c([[5.0, 6.0]])
    with tape:
        tape.watch(d)
    assert tape.gradient(y, [a, d])[1] is None
    for how in ("zero", tf.UnconnectedGradients.ZERO):
        g = tape.gradient(y, [a, d], unconnected_gradients=how)[1]
        assert isinstance(g, Tensor)
        assert g.shape == (1, 2) and g.dtype == np.float64
        np.testing.assert_array_equal(g.numpy(), [[0, 0]])
    assert tape.gradient(y, d, unconnected_gradients="none") is None


def test_nonscalar_target_is_summed(real_tf, rng):
    xv = rng.standard_normal((3, 4))
    wv = rng.standard_normal((4, 2))
    x, w = _c(xv), _c(wv)
    with GradientTape() as tape:
        tape.watch([x, w])
        y = tf.tanh(tf.matmul(x, w)) * 3.0
    gx, gw = tape.gradient(y, [x, w])
    tx, tw = real_tf.constant(xv), real_tf.constant(wv)
    with real_tf.GradientTape() as ttape:
        ttape.watch([tx, tw])
        ty = real_tf.tanh(real_tf.matmul(tx, tw)) * 3.0
    rx, rw = ttape.gradient(ty, [tx, tw])
    np.testing.assert_allclose(gx.numpy(), rx.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gw.numpy(), rw.numpy(), rtol=1e-12, atol=1e-12)


def test_list_targets_and_output_gradients():
    x = _c([1.0, 2.0, 3.0])
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y1 = x * x
        y2 = tf.reduce_sum(x) * 2.0
    np.testing.assert_array_equal(tape.gradient([y1, y2], x).numpy(), 2 * np.array([1, 2, 3]) + 2)
    np.testing.assert_array_equal(tape.gradient({"a": y1, "b": y2}, x).numpy(),
                                  2 * np.array([1, 2, 3]) + 2)
    g = tape.gradient(y1, x, output_gradients=_c([1.0, 0.0, -1.0]))
    np.testing.assert_array_equal(g.numpy(), [2, 0, -6])
    g = tape.gradient(y1, x, output_gradients=np.array([1.0, 10.0, 100.0]))
    np.testing.assert_array_equal(g.numpy(), [2, 40, 600])
    g = tape.gradient([y1, y2], x, output_gradients=[_c([1.0, 1.0, 1.0]), _c(0.5)])
    np.testing.assert_array_equal(g.numpy(), [3, 5, 7])
    with pytest.raises(ValueError, match="output_gradients"):
        tape.gradient(y1, x, output_gradients=_c([1.0, 2.0]))
    with pytest.raises(ValueError, match="output_gradients"):
        tape.gradient([y1, y2], x, output_gradients=[_c([1.0, 1.0, 1.0])])


# ---- persistence, recording ----------------------------------------------------------------
def test_non_persistent_tape_used_twice():
    x = _c(2.0)
    with GradientTape() as tape:
        tape.watch(x)
        y = x * x
    assert float(tape.gradient(y, x)) == 4.0
    with pytest.raises(RuntimeError):
        tape.gradient(y, x)
    with pytest.raises(RuntimeError):
        with tape:
            pass


def test_persistent_tape_reused():
    x = _c(2.0)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * x
    assert float(tape.gradient(y, x)) == 4.0
    assert float(tape.gradient(z, x)) == 12.0
    assert float(tape.gradient(y, x)) == 4.0
    with tape:  # recording resumes on re-entry
        w = z * x
    assert float(tape.gradient(w, x)) == 32.0


def test_stop_recording():
    x = _c(3.0)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        with tape.stop_recording():
            z = y * x  # not recorded: no path from x
        w = x * 2.0
    assert tape.gradient(z, x) is None
    assert float(tape.gradient(w, x)) == 2.0
    assert float(tape.gradient(y, x)) == 6.0
    with pytest.raises(ValueError):
        with tape.stop_recording():
            pass


def test_ops_outside_the_context_are_not_recorded():
    x = _c(3.0)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
    z = y * x
    assert tape.gradient(z, x) is None
    assert float(tape.gradient(y, x)) == 6.0


def test_reset():
    x = _c(3.0)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        tape.reset()
        tape.watch(x)
        z = x * 5.0
    assert tape.gradient(y, x) is None
    assert float(tape.gradient(z, x)) == 5.0


# ---- variables -----------------------------------------------------------------------------
def test_trainable_variables_are_watched_automatically():
    v = Variable([1.0, 2.0])
    w = Variable(3.0)
    with GradientTape() as tape:
        y = tf.reduce_sum(v * w)
    assert tape.watched_variables() == (v, w)
    gv, gw = tape.gradient(y, [v, w])
    np.testing.assert_array_equal(gv.numpy(), [3, 3])
    assert float(gw) == 3.0


def test_watch_accessed_variables_false():
    v = Variable([1.0, 2.0])
    u = Variable(2.0)
    with GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(u)
        y = tf.reduce_sum(v * v) * u
    assert tape.watched_variables() == (u,)
    gv, gu = tape.gradient(y, [v, u])
    assert gv is None
    assert float(gu) == 5.0


def test_non_trainable_variables_are_not_watched():
    v = Variable([1.0, 2.0], trainable=False)
    with GradientTape(persistent=True) as tape:
        y = tf.reduce_sum(v * v)
    assert tape.gradient(y, v) is None
    assert tape.watched_variables() == ()
    with GradientTape() as tape:
        tape.watch(v)  # explicit watch works
        y = tf.reduce_sum(v * v)
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [2, 4])


def test_variable_read_several_times_sums():
    v = Variable([1.0, -2.0])
    with GradientTape() as tape:
        a = v * 3.0
        b = tf.square(v)
        c = v.read_value() * v.value()
        y = tf.reduce_sum(a + b + c + v)
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), 3 + 2 * np.array([1, -2]) * 2 + 1)


def test_gradients_of_a_node_used_three_times_sum_in_reverse_record_order():
    """Each use's gradient is added to the sum of the later uses' (the order the tape plays
    records back): bit for bit numpy's (gc + gb) + ga, float32."""
    rng = np.random.default_rng(7)
    xv, a, b, c = ((rng.standard_normal(1000) * 10.0 ** rng.integers(-3, 4, 1000))
                   .astype(np.float32) for _ in range(4))
    x = tf.constant(xv)
    with GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(x * a) + tf.reduce_sum(x * b) + tf.reduce_sum(x * c)
    g = tape.gradient(y, x).numpy()
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g, (c + b) + a)
    assert not np.array_equal((a + b) + c, (c + b) + a)  # the order shows in these bits


def test_variable_assigned_inside_the_tape():
    v = Variable(2.0)
    with GradientTape() as tape:
        y = v * v
        v.assign(10.0)
        z = y * v  # v read again after the assignment: gradients from both reads sum
    assert float(tape.gradient(z, v)) == pytest.approx(2 * 2.0 * 10.0 + 4.0)


def test_integer_sources_give_none():
    i = tf.constant([1, 2, 3])
    x = _c([1.0, 2.0, 3.0])
    with GradientTape() as tape:
        tape.watch([i, x])
        y = tf.reduce_sum(tf.cast(i, tf.float64) * x) + tf.reduce_sum(tf.cast(i * i, tf.float64))
    gi, gx = tape.gradient(y, [i, x])
    assert gi is None
    np.testing.assert_array_equal(gx.numpy(), [1, 2, 3])


def test_stop_gradient():
    x = _c(3.0)
    with GradientTape() as tape:
        tape.watch(x)
        y = x * tf.stop_gradient(x * x)
    assert float(tape.gradient(y, x)) == 9.0


# ---- only watched sources get gradients (as TF) --------------------------------------------
def test_frozen_variable_beside_a_trainable_one_gives_none():
    w = Variable(2.0)
    frozen = Variable(3.0, trainable=False)
    with GradientTape(persistent=True) as tape:
        y = w * frozen  # recorded because w is watched; frozen is an unwatched input of it
    assert tape.watched_variables() == (w,)
    gw, gf = tape.gradient(y, [w, frozen])
    assert float(gw) == 3.0
    assert gf is None
    gw, gf = tape.gradient(y, [w, frozen], unconnected_gradients="zero")
    assert float(gw) == 3.0
    assert isinstance(gf, Tensor) and gf.dtype == np.float32 and float(gf) == 0.0


def test_variable_read_but_not_watched_gives_none():
    w = Variable(2.0)
    v = Variable([5.0, 6.0])
    with GradientTape(watch_accessed_variables=False, persistent=True) as tape:
        tape.watch(w)
        y = tf.reduce_sum(w * v)
    assert tape.watched_variables() == (w,)
    gw, gv = tape.gradient(y, [w, v])
    assert float(gw) == 11.0
    assert gv is None
    gv = tape.gradient(y, [w, v], unconnected_gradients=tf.UnconnectedGradients.ZERO)[1]
    np.testing.assert_array_equal(gv.numpy(), [0, 0])


def test_unwatched_tensors_give_none():
    x, c = _c(4.0), _c(7.0)
    v = Variable(np.float64(5.0))
    early = v.read_value()  # read before the tape: not watched by it
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * c
        h = c * c  # not recorded: no watched input
        z = h * x + early * x
    gx, gc = tape.gradient(y, [x, c])
    assert float(gx) == 7.0 and gc is None
    gh, ge, gx = tape.gradient(z, [h, early, x])
    assert gh is None and ge is None
    assert float(gx) == 54.0


def test_watched_tensors_and_recorded_outputs_get_gradients():
    x, c = _c(4.0), _c(7.0)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        h = x * c  # the output of a recorded op is watched
        y = h * h
    gh, gx, gc = tape.gradient(y, [h, x, c])
    assert (float(gh), float(gx), gc) == (56.0, 392.0, None)


def test_target_that_is_a_source_gets_ones_even_unwatched():
    c = _c([1.0, 2.0])
    frozen = Variable(3.0, trainable=False)
    with GradientTape(persistent=True) as tape:
        pass
    np.testing.assert_array_equal(tape.gradient(c, c).numpy(), [1, 1])
    assert float(tape.gradient(frozen, frozen)) == 1.0


def test_nested_tapes_give_none_for_unwatched_sources():
    x, c = _c(4.0), _c(7.0)
    with GradientTape() as outer:
        outer.watch(x)
        with GradientTape() as inner:
            inner.watch(x)
            y = x * x * c
        g = inner.gradient(y, x)
    assert float(g) == 56.0
    gx, gc = outer.gradient(g, [x, c])
    assert float(gx) == 14.0 and gc is None

    w = Variable(2.0)
    frozen = Variable(3.0, trainable=False)
    with GradientTape() as outer:
        with GradientTape() as inner:
            y = w * w * frozen
        gw, gf = inner.gradient(y, [w, frozen])
    assert float(gw) == 12.0 and gf is None
    hw, hf = outer.gradient(gw, [w, frozen])
    assert float(hw) == 6.0 and hf is None


def _watching_cases(lib):
    """Gradients (None or numpy) of small programs where some sources are not watched."""
    out = []
    w = lib.Variable(2.0)
    frozen = lib.Variable(3.0, trainable=False)
    v = lib.Variable(5.0)
    x, c = lib.constant(4.0), lib.constant(7.0)
    with lib.GradientTape(persistent=True) as tape:
        y = w * frozen * v + c
    out += tape.gradient(y, [w, frozen, v, c])
    out += tape.gradient(y, [w, frozen, v, c], unconnected_gradients="zero")
    out.append([var.name for var in tape.watched_variables()])
    with lib.GradientTape(watch_accessed_variables=False, persistent=True) as tape:
        tape.watch([x, frozen])
        y = w * frozen * x * c
    out += tape.gradient(y, [w, frozen, x, c])
    out += tape.gradient(y, [w, frozen, x, c], unconnected_gradients="zero")
    out.append([var.name for var in tape.watched_variables()])
    with lib.GradientTape() as outer:
        with lib.GradientTape() as inner:
            y = w * w * frozen * c
        g = inner.gradient(y, [w, frozen, c])
    out += g
    out += outer.gradient(g[0], [w, frozen, c])
    return [None if g is None else g if isinstance(g, list) else np.asarray(g) for g in out]


def test_watching_matches_tensorflow(real_tf):
    ours, theirs = _watching_cases(tf), _watching_cases(real_tf)
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if b is None or isinstance(b, list):
            assert a == b, i
        else:
            assert a is not None, i
            np.testing.assert_allclose(a, b, rtol=1e-6, err_msg=str(i))


# ---- dtypes --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_gradient_dtype_is_source_dtype(dtype):
    x = tf.constant(np.array([0.5, -1.0, 2.0], dtype))
    v = Variable(np.array([[1.0, 2.0], [3.0, 4.0]], dtype))
    with GradientTape() as tape:
        tape.watch(x)
        y = (tf.reduce_sum(tf.tanh(x) * x) + tf.reduce_mean(tf.matmul(v, v))
             + tf.reduce_sum(tf.nn.softmax(v)))
    gx, gv = tape.gradient(y, [x, v])
    assert gx.dtype == np.dtype(dtype)
    assert gv.dtype == np.dtype(dtype)
    xf = np.array([0.5, -1.0, 2.0])
    want = np.tanh(xf) + xf * (1 - np.tanh(xf) ** 2)
    np.testing.assert_allclose(gx.numpy().astype(np.float64), want,
                               rtol=2e-3 if dtype == np.float16 else 1e-6)


def test_gradient_through_cast_keeps_source_dtype():
    x = tf.constant(np.array([1.0, 2.0], np.float32))
    with GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.cast(x, tf.float64) ** 2)
    g = tape.gradient(y, x)
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g.numpy(), [2, 4])


# ---- nested tapes: second derivatives ------------------------------------------------------
def test_second_derivative_of_cube():
    xv = np.array([-2.0, 0.5, 3.0])
    x = _c(xv)
    with GradientTape() as outer:
        outer.watch(x)
        with GradientTape() as inner:
            inner.watch(x)
            y = x ** 3
        dy = inner.gradient(y, x)
    np.testing.assert_allclose(dy.numpy(), 3 * xv ** 2)
    np.testing.assert_allclose(outer.gradient(dy, x).numpy(), 6 * xv)


def test_third_derivative_of_cube():
    x = _c([1.0, 2.0])
    with GradientTape() as t3:
        t3.watch(x)
        with GradientTape() as t2:
            t2.watch(x)
            with GradientTape() as t1:
                t1.watch(x)
                y = x * x * x
            d1 = t1.gradient(y, x)
        d2 = t2.gradient(d1, x)
    np.testing.assert_allclose(t3.gradient(d2, x).numpy(), [6.0, 6.0])


def test_second_derivative_of_tanh():
    xv = np.linspace(-2, 2, 7)
    x = _c(xv)
    with GradientTape() as outer:
        outer.watch(x)
        with GradientTape() as inner:
            inner.watch(x)
            y = tf.tanh(x)
        dy = inner.gradient(y, x)
    t = np.tanh(xv)
    np.testing.assert_allclose(dy.numpy(), 1 - t * t, rtol=1e-12)
    np.testing.assert_allclose(outer.gradient(dy, x).numpy(), -2 * t * (1 - t * t), atol=1e-12)


def _nested_pair(lib, program, *values):
    """(first gradients, gradients of sum(first**2)) of program(*inputs) for lib."""
    xs = [lib.constant(v) for v in values]
    with lib.GradientTape() as outer:
        outer.watch(xs)
        with lib.GradientTape() as inner:
            inner.watch(xs)
            y = program(lib, *xs)
        g = inner.gradient(y, xs)
        z = lib.add_n([lib.reduce_sum(gi * gi) for gi in g]) if hasattr(lib, "add_n") else (
            sum(lib.reduce_sum(gi * gi) for gi in g))
    return [np.asarray(gi) for gi in g], [np.asarray(h) for h in outer.gradient(z, xs)]


def _matmul_program(lib, x, w):
    return lib.reduce_sum(lib.tanh(lib.matmul(x, w)) ** 2)


def _softmax_program(lib, x, c):
    return lib.reduce_sum(lib.nn.softmax(x) * c)


def _log_softmax_program(lib, x, c):
    return lib.reduce_sum(lib.nn.log_softmax(x, axis=0) * c)


def _mixed_program(lib, x, w):
    pre = lib.matmul(x, w, transpose_b=True)
    h = lib.nn.relu(pre) + lib.sigmoid(pre)
    scale = 2.0 + lib.reduce_max(w, axis=0, keepdims=True)
    return lib.reduce_mean(h * h) + lib.reduce_sum(lib.exp(x) / scale)


@pytest.mark.parametrize("program,shapes", [
    (_matmul_program, [(3, 4), (4, 5)]),
    (_softmax_program, [(4, 6), (4, 6)]),
    (_log_softmax_program, [(5, 3), (5, 3)]),
    (_mixed_program, [(3, 4), (5, 4)]),
], ids=["matmul", "softmax", "log_softmax", "mixed"])
def test_second_derivatives_match_tensorflow(real_tf, rng, program, shapes):
    values = [rng.standard_normal(s) for s in shapes]
    g, h = _nested_pair(tf, program, *values)
    rg, rh = _nested_pair(real_tf, program, *values)
    for a, b in zip(g + h, rg + rh):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


def test_second_derivative_through_getitem():
    x = _c([1.0, 2.0, 3.0])
    with GradientTape() as outer:
        outer.watch(x)
        with GradientTape() as inner:
            inner.watch(x)
            y = tf.reduce_sum(x[1:] ** 3)
        dy = inner.gradient(y, x)
    np.testing.assert_allclose(outer.gradient(dy, x).numpy(), [0.0, 12.0, 18.0])


def test_second_derivative_through_repeated_integer_index():
    x = _c([1.0, 2.0, 3.0])
    with GradientTape() as outer:
        outer.watch(x)
        with GradientTape() as inner:
            inner.watch(x)
            y = tf.reduce_sum(x[[0, 0, 2]] ** 3)
        dy = inner.gradient(y, x)  # [2 * 3x0^2, 0, 3x2^2]
    np.testing.assert_allclose(dy.numpy(), [6.0, 0.0, 27.0])
    np.testing.assert_allclose(outer.gradient(dy, x).numpy(), [12.0, 0.0, 18.0])


# ---- threads -------------------------------------------------------------------------------
def test_tapes_are_thread_local():
    x = _c([1.0, 2.0])
    started, computed = threading.Barrier(2), threading.Barrier(2)
    shared = {}
    results = {}
    errors = []

    def recorder():
        try:
            with GradientTape(persistent=True) as tape:
                tape.watch(x)
                started.wait()  # the other thread now computes on x while we record
                computed.wait()
                own = x * 3.0
            results["other"] = tape.gradient(shared["y"], x)
            results["own"] = tape.gradient(own, x)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)
            started.abort()
            computed.abort()

    def other():
        try:
            started.wait()
            shared["y"] = x * x
            computed.wait()
        except Exception as e:  # pragma: no cover
            errors.append(e)

    threads = [threading.Thread(target=recorder), threading.Thread(target=other)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors
    assert results["other"] is None
    np.testing.assert_array_equal(results["own"].numpy(), [3, 3])


def test_concurrent_tapes_in_threads(rng):
    n = 8
    inputs = [rng.standard_normal((16, 8)) for _ in range(n)]
    w_np = rng.standard_normal((8, 4))
    w = Variable(w_np)
    out = [None] * n
    go = threading.Barrier(n)

    def work(i):
        x = _c(inputs[i])
        go.wait()
        for _ in range(5):
            with GradientTape() as tape:
                tape.watch(x)
                y = tf.reduce_sum(tf.tanh(tf.matmul(x, w)))
            out[i] = tape.gradient(y, [x, w])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    for i in range(n):
        d = 1 - np.tanh(inputs[i] @ w_np) ** 2
        np.testing.assert_allclose(out[i][0].numpy(), d @ w_np.T, rtol=1e-10)
        np.testing.assert_allclose(out[i][1].numpy(), inputs[i].T @ d, rtol=1e-10)
