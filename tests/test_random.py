"""tf.random and tf.nn.dropout: the Philox core, TF's seed rules and kernel counters,
distributions, dtypes and shapes, Generator, stateless ops, dropout and its gradient, IPU
replicas, bad inputs and behaviour against the real TensorFlow, and CPU vs GPU bits."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from reference import random as ref

import ipu_gpu as tf
from ipu_gpu import random as rnd
from ipu_gpu.errors import InvalidArgumentError
from ipu_gpu.ops import random as impl
from ipu_gpu.ops.random import dropout

FLOATS = ("float16", "float32", "float64")


@pytest.fixture(autouse=True)
def _no_global_seed():
    """Every test starts and ends without a global seed and with fresh kernel counters."""
    rnd.set_seed(None)
    yield
    rnd.set_seed(None)


def _np(t):
    return np.asarray(t)


def _same(a, b):
    a, b = _np(a), _np(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a, b)


# ---- the generator core ------------------------------------------------------------------------
@pytest.mark.parametrize("counter, key, want", [
    ([0, 0, 0, 0], (0, 0), [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
    ([0xFFFFFFFF] * 4, (0xFFFFFFFF, 0xFFFFFFFF), [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
    ([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], (0xA4093822, 0x299F31D0),
     [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]),
])
def test_philox_known_answers(counter, key, want):
    """Random123's known-answer vectors for Philox4x32-10, and the Python-int reference."""
    c = sum(w << (32 * i) for i, w in enumerate(counter))
    assert ref.philox_block(c, key) == want
    assert impl.philox(np, key, c, 4).tolist() == want


@pytest.mark.parametrize("counter", [0, 2**64 - 3, 2**128 - 2, 5 << 64 | 2**64 - 1])
def test_philox_stream_carries_across_words(counter):
    """Consecutive counters carry from the low 64 bits into the high ones and wrap at 2**128."""
    key = (0x12345678, 0x9ABCDEF0)
    assert impl.philox(np, key, counter, 19).tolist() == ref.stream(key, counter, 19)


def test_uniform_is_tf_bit_conversion_of_the_stream():
    """A stateful op with op seed 7 and no global seed uses TF's (87654321, 7) kernel."""
    key, counter = ref.tf_seed_key_counter(87654321, 7)
    words = ref.stream(key, counter, 10)
    np.testing.assert_array_equal(_np(rnd.uniform([5], seed=7)),
                                  np.float32([ref.uniform_float32(w) for w in words[:5]]))
    # the second call starts 5 * 256 counters later (TF reserves 256 per output)
    words = ref.stream(key, counter + 5 * 256, 2)
    np.testing.assert_array_equal(_np(rnd.uniform([2], seed=7)),
                                  np.float32([ref.uniform_float32(w) for w in words]))
    # float64 is another kernel (TF's dtype attribute): it starts at the first counter
    words = ref.stream(key, counter, 4)
    want = [ref.uniform_float64(*words[:2]), ref.uniform_float64(*words[2:])]
    np.testing.assert_array_equal(_np(rnd.uniform([2], seed=7, dtype=tf.float64)), want)


# ---- seeds: TF2's rules ------------------------------------------------------------------------
def test_op_seed_continues_its_stream_and_set_seed_restarts_it():
    rnd.set_seed(1234)
    a1, a2 = _np(rnd.uniform([3], seed=1)), _np(rnd.uniform([3], seed=1))
    assert not np.array_equal(a1, a2)  # the kernel's counter advanced
    rnd.set_seed(1234)
    _same(rnd.uniform([3], seed=1), a1)
    _same(rnd.uniform([3], seed=1), a2)


def test_global_seed_alone_gives_the_same_sequence_every_run():
    def run():
        rnd.set_seed(5)
        return [_np(rnd.uniform([4])), _np(rnd.normal([4])), _np(rnd.uniform([4])),
                _np(rnd.truncated_normal([3])), _np(rnd.categorical([[0.0, 1.0]], 6))]

    first, second = run(), run()
    for a, b in zip(first, second):
        _same(a, b)
    assert not np.array_equal(first[0], first[2])  # each call gets its own op seed
    rnd.set_seed(6)
    assert not np.array_equal(_np(rnd.uniform([4])), first[0])


def test_op_seed_alone_uses_the_default_global_seed():
    """Without a global seed an op seed is paired with TF's default 87654321: reproducible
    across runs (set_seed(None) clears the counters as a new program would)."""
    a = _np(rnd.uniform([4], seed=3))
    rnd.set_seed(None)
    _same(rnd.uniform([4], seed=3), a)
    rnd.set_seed(87654321)  # the same pair as (default global, 3)
    _same(rnd.uniform([4], seed=3), a)


def test_no_seed_is_nondeterministic():
    a, b = _np(rnd.uniform([8])), _np(rnd.uniform([8]))
    rnd.set_seed(None)
    c = _np(rnd.uniform([8]))
    assert not np.array_equal(a, b) and not np.array_equal(a, c)
    x, y = _np(rnd.normal([8])), _np(rnd.normal([8]))
    assert not np.array_equal(x, y)


def test_counters_are_per_op_and_dtype_as_tf_kernels():
    rnd.set_seed(9)
    u1 = _np(rnd.uniform([2], seed=1))
    rnd.normal([5], seed=1)  # another kernel
    rnd.uniform([3], seed=1, dtype=tf.float64)  # another dtype: another kernel
    u2 = _np(rnd.uniform([6], seed=1, minval=2.0, maxval=3.0))  # same kernel, other shape
    rnd.set_seed(9)
    both = _np(rnd.uniform([2], seed=1))
    _same(both, u1)
    raw = _np(rnd.uniform([6], seed=1))
    np.testing.assert_array_equal(u2, raw * np.float32(1.0) + np.float32(2.0))
    # an int64 shape Tensor keys another kernel (TF's shape dtype attribute)
    rnd.set_seed(9)
    _same(rnd.uniform(tf.constant([2], tf.int64), seed=1), u1)


def test_seed_values_as_tf_takes_them():
    rnd.set_seed(2**40)  # TF keeps seed % (2**31 - 1)
    a = _np(rnd.uniform([3], seed=2**33 + 5))
    rnd.set_seed(2**40 % (2**31 - 1))
    _same(rnd.uniform([3], seed=(2**33 + 5) % (2**31 - 1)), a)
    rnd.set_seed(np.int64(4))
    b = _np(rnd.uniform([3], seed=1.7))  # a float op seed truncates, as TF's int attribute
    rnd.set_seed(4)
    _same(rnd.uniform([3], seed=1), b)
    assert impl.get_seed(None)[0] == 4
    rnd.set_seed(0)
    assert impl.get_seed(0) == (0, 2**31 - 1)  # (0, 0) would mean "random" to a kernel
    with pytest.raises(TypeError, match="set_seed: seed must be an int"):
        rnd.set_seed("a")
    with pytest.raises(TypeError, match="seed must be an int"):
        rnd.uniform([2], seed="a")


def test_dropout_with_rate_zero_still_draws_an_op_seed():
    rnd.set_seed(3)
    x = tf.constant([1.0, 2.0])
    assert dropout(x, 0.0) is x
    after = _np(rnd.uniform([2]))
    rnd.set_seed(3)
    rnd.uniform([1])  # any op consumes the first made-up op seed
    _same(rnd.uniform([2]), after)


def test_streams_are_thread_safe():
    rnd.set_seed(11)
    results = []
    lock = threading.Lock()

    def draw():
        v = _np(rnd.uniform([64], seed=2))
        with lock:
            results.append(v)

    threads = [threading.Thread(target=draw) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rnd.set_seed(11)
    want = np.sort(np.concatenate([_np(rnd.uniform([64], seed=2)) for _ in range(8)]))
    np.testing.assert_array_equal(np.sort(np.concatenate(results)), want)


# ---- distributions -----------------------------------------------------------------------------
N = 20000


@pytest.mark.parametrize("dtype", FLOATS)
def test_uniform_float_distribution(dtype):
    x = _np(rnd.uniform([N], minval=-1.0, maxval=3.0, dtype=dtype, seed=1)).astype(np.float64)
    assert x.min() >= -1.0 and x.max() < 3.0
    assert abs(x.mean() - 1.0) < 0.05 and abs(x.var() - 16 / 12) < 0.05
    assert ref.ks_statistic(x, lambda v: (v + 1.0) / 4.0) < 2.0 / np.sqrt(N)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_uniform_int_distribution(dtype):
    x = _np(rnd.uniform([N], minval=-3, maxval=7, dtype=dtype, seed=2))
    assert x.dtype == dtype and x.min() == -3 and x.max() == 6
    counts = np.bincount(x + 3, minlength=10)
    assert ref.chi_square(counts, np.full(10, N / 10)) < 40  # 9 dof: p ~ 1e-5
    wide = _np(rnd.uniform([N], minval=-(2**62), maxval=2**62, dtype="int64", seed=3))
    assert wide.min() < -(2**61) and wide.max() > 2**61


@pytest.mark.parametrize("dtype", FLOATS)
def test_normal_distribution(dtype):
    x = _np(rnd.normal([N], mean=2.0, stddev=3.0, dtype=dtype, seed=4)).astype(np.float64)
    assert abs(x.mean() - 2.0) < 0.1 and abs(x.std() - 3.0) < 0.1
    assert ref.ks_statistic(x, lambda v: ref.normal_cdf((v - 2.0) / 3.0)) < 2.0 / np.sqrt(N)


@pytest.mark.parametrize("dtype", FLOATS)
def test_truncated_normal_distribution(dtype):
    x = _np(rnd.truncated_normal([N], dtype=dtype, seed=5)).astype(np.float64)
    assert np.all(np.abs(x) <= 2.0)
    assert abs(x.mean()) < 0.03 and abs(x.var() - ref.TRUNCATED_NORMAL_VARIANCE) < 0.03
    assert ref.ks_statistic(x, ref.truncated_normal_cdf) < 2.0 / np.sqrt(N)
    y = _np(rnd.truncated_normal([N], mean=1.0, stddev=0.5, dtype=dtype, seed=5))
    assert np.all(np.abs(y.astype(np.float64) - 1.0) <= 1.0)


def test_truncated_normal_redraws_rare_groups():
    """Groups needing more than the first candidates take the slow path: find some and check
    that every value is kept in order from its group's stream."""
    out = impl.raw_truncated_normal((1, 2), 0, 40000, np.dtype(np.float32))
    assert np.all(np.abs(out) < 2)
    for g in range(0, 10000, 997):
        words = ref.stream((1, 2), g * 256, 64)
        z = impl._normal_candidates(np.array(words, np.uint32), np.dtype(np.float32))
        np.testing.assert_array_equal(out[4 * g:4 * g + 4], z[np.abs(z) < 2][:4])


def test_categorical_frequencies():
    logits = np.log(np.array([[0.1, 0.2, 0.7], [0.5, 0.5, 1e-30]], np.float32))
    s = _np(rnd.categorical(logits, N, seed=6))
    assert s.shape == (2, N) and s.dtype == np.int64
    for row, p in zip(s, np.exp(logits.astype(np.float64))):
        counts = np.bincount(row, minlength=3)
        keep = p > 1e-6
        assert ref.chi_square(counts[keep], N * p[keep] / p.sum()) < 25
    odd = _np(rnd.categorical([[np.nan, 0.0, -np.inf], [-np.inf, -np.inf, -np.inf]], 5, seed=1))
    np.testing.assert_array_equal(odd, [[1] * 5, [3] * 5])  # non-finite logits have no mass


def test_shuffle_is_a_permutation_of_rows():
    x = np.arange(60).reshape(20, 3)
    y = _np(rnd.shuffle(x, seed=7))
    assert not np.array_equal(x, y)
    np.testing.assert_array_equal(np.sort(y[:, 0]), x[:, 0])
    np.testing.assert_array_equal(y[:, 1], y[:, 0] + 1)
    assert _np(rnd.shuffle(3.0)) == 3.0 and _np(rnd.shuffle([[1, 2]])).tolist() == [[1, 2]]
    first = [int(_np(rnd.shuffle(np.arange(3), seed=s))[0]) for s in range(300)]
    assert ref.chi_square(np.bincount(first, minlength=3), [100] * 3) < 20


# ---- dtypes and shapes -------------------------------------------------------------------------
@pytest.mark.parametrize("shape, want", [
    ([], ()), ([0], (0,)), ([2, 0, 3], (2, 0, 3)), ((2, 3), (2, 3)),
    (np.array([4, 1], np.int64), (4, 1)), (tf.TensorShape((3,)), (3,)),
])
@pytest.mark.parametrize("make", ["normal", "uniform", "truncated_normal", "uniform_int",
                                  "stateless_normal", "stateless_uniform", "generator"])
def test_shapes(shape, want, make):
    fns = {
        "normal": lambda s: rnd.normal(s, seed=1),
        "uniform": lambda s: rnd.uniform(s, seed=1),
        "truncated_normal": lambda s: rnd.truncated_normal(s, seed=1),
        "uniform_int": lambda s: rnd.uniform(s, maxval=5, dtype=tf.int64, seed=1),
        "stateless_normal": lambda s: rnd.stateless_normal(s, seed=[1, 2]),
        "stateless_uniform": lambda s: rnd.stateless_uniform(s, seed=[1, 2]),
        "generator": lambda s: rnd.Generator.from_seed(1).normal(s),
    }
    out = fns[make](shape)
    assert isinstance(out, tf.Tensor) and tuple(out.shape) == want


def test_shape_from_tensors():
    assert rnd.normal(tf.constant([2, 3])).shape == (2, 3)
    n = tf.reduce_sum(tf.ones([4], tf.int32))
    assert rnd.uniform([n, 2]).shape == (4, 2)  # a list holding a scalar Tensor


@pytest.mark.parametrize("dtype", FLOATS)
def test_float_dtypes(dtype):
    for out in (rnd.normal([3], dtype=dtype), rnd.uniform([3], dtype=dtype),
                rnd.truncated_normal([3], dtype=dtype), rnd.stateless_normal([3], [1, 2],
                                                                             dtype=dtype),
                rnd.stateless_uniform([3], [1, 2], dtype=dtype),
                rnd.Generator.from_seed(1).uniform([3], dtype=dtype)):
        assert out.dtype == np.dtype(dtype)


def test_int_dtypes():
    for d in ("int32", "int64"):
        assert rnd.uniform([3], maxval=4, dtype=d).dtype == d
        assert rnd.stateless_uniform([3], [1, 2], minval=None, maxval=None, dtype=d).dtype == d
        assert rnd.categorical([[0.0, 1.0]], 2, dtype=d).dtype == d
        assert rnd.Generator.from_seed(1).uniform([3], minval=0, maxval=4, dtype=d).dtype == d


def test_broadcast_parameters_and_their_gradients():
    mean = tf.Variable(np.array([1.0, -1.0, 0.5], np.float32))
    stddev = tf.Variable(np.float32(2.0))
    with tf.GradientTape() as tape:
        y = rnd.normal([4, 3], mean=mean, stddev=stddev, seed=1)
        loss = tf.reduce_sum(y)
    g_mean, g_std = tape.gradient(loss, [mean, stddev])
    assert y.shape == (4, 3)
    np.testing.assert_array_equal(_np(g_mean), [4.0, 4.0, 4.0])
    rnd.set_seed(None)
    z = _np(rnd.normal([4, 3], seed=1))
    np.testing.assert_allclose(_np(g_std), z.sum(), rtol=1e-5)
    lo = tf.constant([0.0, 10.0])
    u = _np(rnd.uniform([3, 2], minval=lo, maxval=lo + 1.0, seed=2))
    assert np.all((u[:, 0] < 1) & (u[:, 1] >= 10))


# ---- Generator ---------------------------------------------------------------------------------
def test_generator_state_and_reproducibility():
    g = rnd.Generator.from_seed(1234)
    np.testing.assert_array_equal(_np(g.state), [1234, 0, 0])
    assert g.algorithm == rnd.Algorithm.PHILOX.value
    a = _np(g.normal([3]))
    np.testing.assert_array_equal(_np(g.state), [1234 + 3 * 256, 0, 0])
    b = _np(g.uniform([2]))
    _same(rnd.Generator.from_seed(1234).normal([3]), a)
    g.reset_from_seed(1234)
    _same(g.normal([3]), a)
    _same(g.uniform([2]), b)
    h = rnd.Generator(copy_from=g)
    _same(h.normal([4]), g.normal([4]))
    k = rnd.Generator.from_key_counter(key=0, counter=[1234 + 3 * 256, 0], alg="philox")
    _same(k.uniform([2]), b)
    old = _np(g.skip(10))
    assert _np(g.state)[0] == old[0] + 2560
    assert int(_np(g.key)) == 0


def test_generator_seeds_and_splits():
    g = rnd.Generator.from_seed(7)
    seeds = _np(g.make_seeds(4))
    assert seeds.shape == (2, 4) and seeds.dtype == np.int64 and not seeds[1].any()
    parts = g.split(3)
    assert len(parts) == 3 and all(isinstance(p, rnd.Generator) for p in parts)
    states = [_np(p.state) for p in parts]
    assert all(s[0] == 0 and s[1] == 0 for s in states) and len({s[2] for s in states}) == 3
    assert not np.array_equal(_np(parts[0].normal([4])), _np(parts[1].normal([4])))
    assert g.make_seeds(0).shape == (2, 0) and g.split(0) == []


def test_generator_create_state_and_global():
    np.testing.assert_array_equal(rnd.create_rng_state(2**64 + 5, "philox"), [5, 1, 0])
    np.testing.assert_array_equal(rnd.create_rng_state(-1, "philox"), [-1, -1, -1])
    np.testing.assert_array_equal(rnd.create_rng_state([7, 8], "philox"), [0, 7, 8])
    a = rnd.Generator.from_non_deterministic_state()
    b = rnd.Generator.from_non_deterministic_state()
    assert not np.array_equal(_np(a.state), _np(b.state))
    g = rnd.get_global_generator()
    assert rnd.get_global_generator() is g
    mine = rnd.Generator.from_seed(3)
    rnd.experimental.set_global_generator(mine)
    assert rnd.experimental.get_global_generator() is mine
    rnd.set_global_generator(g)
    with pytest.raises(TypeError, match="set_global_generator: generator must be a Generator"):
        rnd.set_global_generator(3)


def test_generator_errors():
    with pytest.raises(ValueError, match="alg must be"):
        rnd.Generator.from_seed(1, alg="foo")
    with pytest.raises(NotImplementedError, match="threefry"):
        rnd.Generator.from_seed(1, alg="threefry")
    g = rnd.Generator.from_seed(1)
    with pytest.raises(ValueError, match="minval and maxval must be both None"):
        g.uniform([2], dtype=tf.int32)
    with pytest.raises(TypeError, match="dtype must be float16"):
        g.normal([2], dtype=tf.int32)
    with pytest.raises(ValueError, match=r"state must have shape \[3\]"):
        rnd.Generator(state=[1, 2], alg="philox")
    with pytest.raises(ValueError, match="state and alg must be given together"):
        rnd.Generator(state=[1, 2, 3])


# ---- stateless ops -----------------------------------------------------------------------------
def test_stateless_ops_depend_only_on_the_seed():
    outs = lambda: [_np(f) for f in (  # noqa: E731
        rnd.stateless_normal([5], seed=[1, 2]), rnd.stateless_uniform([5], seed=[1, 2]),
        rnd.stateless_truncated_normal([5], seed=[1, 2]),
        rnd.stateless_uniform([5], seed=[1, 2], minval=3, maxval=9, dtype=tf.int32),
        rnd.stateless_categorical([[0.0, 1.0, 2.0]], 6, seed=[1, 2]))]
    first = outs()
    rnd.set_seed(3)
    rnd.uniform([10])
    for a, b in zip(first, outs()):
        _same(a, b)
    assert not np.array_equal(first[0], _np(rnd.stateless_normal([5], seed=[2, 1])))
    _same(rnd.stateless_normal([5], seed=np.array([1, 2], np.int64)), first[0])  # same bits
    assert rnd.stateless_uniform([2], seed=[1, 2], minval=None, maxval=None,
                                 dtype="int64").dtype == np.int64


def test_stateless_seed_helpers():
    s = _np(rnd.split([1, 2], 3))
    assert s.shape == (3, 2) and s.dtype == np.int32
    f = _np(rnd.fold_in([1, 2], 5))
    np.testing.assert_array_equal(f, [s[0, 0], 5])
    assert rnd.experimental.stateless_split is rnd.split
    assert rnd.experimental.stateless_fold_in is rnd.fold_in


# ---- dropout -----------------------------------------------------------------------------------
def test_dropout_forward():
    x = np.ones((200, 50), np.float32)
    y = _np(dropout(x, 0.3, seed=1))
    kept = y != 0
    np.testing.assert_array_equal(y[kept], np.float32(1 / 0.7))
    assert abs(kept.mean() - 0.7) < 0.01
    ys = _np(dropout(x, 0.5, noise_shape=[200, 1], seed=2))
    assert np.all(ys == ys[:, :1])  # one decision per row
    yn = _np(dropout(x, 0.5, noise_shape=[None, 1], seed=2))
    assert yn.shape == (200, 50)
    wide = dropout(np.ones((2, 3), np.float32), 0.5, noise_shape=[4, 1, 3], seed=3)
    assert wide.shape == (4, 2, 3)  # TF broadcasts noise against x
    h = dropout(np.ones(8, np.float16), 0.25, seed=4)
    assert h.dtype == np.float16 and set(_np(h).tolist()) <= {0.0, float(np.float16(1 / 0.75))}
    rate = tf.constant(np.float32(0.5))
    yt = _np(dropout(x, rate, seed=5))
    assert set(np.unique(yt).tolist()) == {0.0, 2.0}
    np.testing.assert_array_equal(_np(dropout(x[:2], tf.constant(np.float32(1.0)))), 0 * x[:2])
    inf = _np(dropout(np.array([np.inf, np.nan] * 50, np.float32), 0.5, seed=6))
    assert np.all((inf == 0) | ~np.isfinite(inf))  # dropped values are 0 even for inf/nan


def test_dropout_gradient_reuses_the_mask():
    x = tf.Variable(np.arange(1, 25, dtype=np.float32).reshape(4, 6))
    with tf.GradientTape() as tape:
        y = dropout(x, 0.4, seed=7)
        loss = tf.reduce_sum(y * 3.0)
    g = _np(tape.gradient(loss, x))
    kept = _np(y) != 0
    np.testing.assert_array_equal(g, np.where(kept, np.float32(3.0) * np.float32(1 / 0.6), 0))
    xs = tf.Variable(np.ones((2, 3), np.float32))
    with tf.GradientTape() as tape:
        w = dropout(xs, 0.5, noise_shape=[4, 1, 3], seed=8)
    gw = _np(tape.gradient(w, xs))
    np.testing.assert_array_equal(gw, (_np(w) != 0).sum(axis=0) * 2.0)


def test_dropout_gradient_finite_differences_with_a_fixed_mask():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 4))
    keep = rng.random((5, 1)) > 0.3
    u, v = rng.standard_normal((5, 4)), rng.standard_normal((5, 4))
    scale = 1 / 0.7

    def f(a):
        out = _np(impl._DROPOUT(a, keep, scale=scale, divide=False))
        np.testing.assert_allclose(out, ref.dropout(a, keep, 0.3), rtol=1e-15)
        return np.sum(u * out)

    eps = 1e-6
    numeric = (f(x + eps * v) - f(x - eps * v)) / (2 * eps)
    xt = tf.Variable(x)
    with tf.GradientTape() as tape:
        y = impl._DROPOUT(xt, keep, scale=scale, divide=False)
    g = _np(tape.gradient(y, xt, output_gradients=tf.constant(u)))
    np.testing.assert_allclose(np.sum(g * v), numeric, rtol=1e-7)
    gx, gk = impl._dropout_backward(None, np, (keep, x.shape), u, scale=scale, divide=False)
    assert gk is None
    np.testing.assert_array_equal(gx, g)


# ---- IPU programs ------------------------------------------------------------------------------
def _program_draws(n_replicas, body):
    """Run ``body`` on every replica of an n-IPU device; return {replica: numpy result}."""
    from ipu_gpu.ipu import ipu_compiler, replication_ops, scopes

    got, lock = {}, threading.Lock()

    def comp():
        out = _np(body())
        with lock:
            got[int(_np(replication_ops.replication_index()))] = out
        return None

    with scopes.ipu_scope("/device:IPU:0"):
        ipu_compiler.compile(comp)
    return got


def _configure(n):
    from ipu_gpu.ipu import config

    cfg = config.IPUConfig()
    cfg.auto_select_ipus = n
    cfg.configure_ipu_system()


@pytest.mark.usefixtures("fresh_ipu_system")
def test_replicas_draw_different_numbers_and_reset_ipu_seed_repeats_them():
    from ipu_gpu.ipu import utils

    _configure(2)
    body = lambda: rnd.uniform([6], seed=1)  # noqa: E731 - TF op seeds are ignored on the IPU
    first = _program_draws(2, body)
    assert sorted(first) == [0, 1] and not np.array_equal(first[0], first[1])
    again = _program_draws(2, body)
    assert not np.array_equal(first[0], again[0])  # unseeded: a new seed every execution
    utils.reset_ipu_seed(7)
    a, b = _program_draws(2, body), _program_draws(2, body)
    assert not np.array_equal(a[0], a[1]) and not np.array_equal(a[0], b[0])
    utils.reset_ipu_seed(7)
    _same(_program_draws(2, body)[1], a[1])
    _same(_program_draws(2, body)[0], b[0])
    utils.reset_ipu_seed(7, experimental_identical_replicas=True)
    same = _program_draws(2, body)
    _same(same[0], same[1])
    nxt = _program_draws(2, body)
    _same(nxt[0], nxt[1])
    assert not np.array_equal(same[0], nxt[0])


@pytest.mark.usefixtures("fresh_ipu_system")
def test_replica_streams_advance_in_program_order_and_leave_the_host_alone():
    from ipu_gpu.ipu import utils

    _configure(2)
    rnd.set_seed(3)
    host_first = _np(rnd.uniform([3]))

    def body():
        a = rnd.uniform([4])
        b = rnd.normal([4])
        mask = dropout(tf.ones([4]), 0.5)
        s = rnd.stateless_uniform([4], seed=[1, 2])
        return tf.concat([a, b, mask, s], 0)

    utils.reset_ipu_seed(1)
    out = _program_draws(2, body)
    assert not np.array_equal(out[0][:4], out[0][4:8])
    _same(out[0][12:], out[1][12:])  # stateless: the same on every replica
    rnd.set_seed(3)
    _same(rnd.uniform([3]), host_first)
    rnd.uniform([3])
    host_second = _np(rnd.uniform([3]))
    rnd.set_seed(3)
    rnd.uniform([3])
    _program_draws(2, body)  # the program draws nothing from the host's seeds
    rnd.uniform([3])
    _same(rnd.uniform([3]), host_second)


@pytest.mark.usefixtures("fresh_ipu_system")
def test_dropout_gradient_inside_a_replica():
    from ipu_gpu.ipu import utils

    _configure(2)
    utils.reset_ipu_seed(2, experimental_identical_replicas=True)

    def body():
        x = tf.Variable(np.ones((8, 8), np.float32))
        with tf.GradientTape() as tape:
            y = dropout(x, 0.5)
        g = tape.gradient(y, x)
        return tf.stack([y, g])

    out = _program_draws(2, body)
    _same(out[0][0], out[0][1])  # the gradient of ones is the output itself
    _same(out[0], out[1])


# ---- bad inputs, as TF raises them -------------------------------------------------------------
ERRORS = [
    # (name, ipu_gpu call, TF call, ipu_gpu's exception, TF's exception name)
    ("negative size", lambda m: m.normal([-1]), InvalidArgumentError, "InvalidArgumentError"),
    ("float size", lambda m: m.normal([2.5]), InvalidArgumentError, "InvalidArgumentError"),
    ("2-d shape", lambda m: m.normal([[2]]), InvalidArgumentError, "InvalidArgumentError"),
    ("scalar shape", lambda m: m.normal(3), InvalidArgumentError, "InvalidArgumentError"),
    ("normal int dtype", lambda m: m.normal([2], dtype="int32"), TypeError, "TypeError"),
    ("mean of another dtype", lambda m: m.normal([2], mean=m.constant(1.0, "float64")),
     ValueError, "ValueError"),
    ("string mean", lambda m: m.normal([2], mean="a"), TypeError, "TypeError"),
    ("uniform bool dtype", lambda m: m.uniform([2], dtype="bool"), ValueError, "ValueError"),
    ("uniform int8 dtype", lambda m: m.uniform([2], maxval=3, dtype="int8"), ValueError,
     "ValueError"),
    ("int without maxval", lambda m: m.uniform([2], dtype="int32"), ValueError, "ValueError"),
    ("int minval >= maxval", lambda m: m.uniform([2], minval=5, maxval=5, dtype="int32"),
     InvalidArgumentError, "InvalidArgumentError"),
    ("int vector minval", lambda m: m.uniform([2], minval=[0, 1], maxval=5, dtype="int32"),
     InvalidArgumentError, "InvalidArgumentError"),
    ("float minval, int dtype", lambda m: m.uniform([2], minval=0.5, maxval=3, dtype="int32"),
     TypeError, "TypeError"),
    ("truncated int dtype", lambda m: m.truncated_normal([2], dtype="int32"), TypeError,
     "TypeError"),
    ("categorical 1-d logits", lambda m: m.categorical([1.0, 2.0], 3), InvalidArgumentError,
     "InvalidArgumentError"),
    ("categorical int16", lambda m: m.categorical([[1.0, 2.0]], 3, dtype="int16"), ValueError,
     "ValueError"),
    ("categorical negative samples", lambda m: m.categorical([[1.0, 2.0]], -1),
     InvalidArgumentError, "InvalidArgumentError"),
    ("categorical no classes", lambda m: m.categorical(m.zeros([2, 0]), 3),
     InvalidArgumentError, "InvalidArgumentError"),
    ("categorical int logits", lambda m: m.categorical([[1, 2]], 3), TypeError,
     "NotFoundError"),
    ("categorical float samples", lambda m: m.categorical([[1.0, 2.0]], 2.5), TypeError,
     "TypeError"),
    ("stateless seed shape", lambda m: m.stateless_normal([2], seed=[1, 2, 3]),
     InvalidArgumentError, "InvalidArgumentError"),
    ("stateless float seed", lambda m: m.stateless_normal([2], seed=[1.0, 2.0]),
     InvalidArgumentError, "InvalidArgumentError"),
    ("stateless None seed", lambda m: m.stateless_normal([2], seed=None), ValueError,
     "ValueError"),
    ("stateless scalar seed", lambda m: m.stateless_normal([2], seed=1), InvalidArgumentError,
     "InvalidArgumentError"),
    ("stateless int without maxval",
     lambda m: m.stateless_uniform([2], seed=[1, 2], dtype="int32"), ValueError, "ValueError"),
    ("stateless int with one bound",
     lambda m: m.stateless_uniform([2], seed=[1, 2], minval=None, maxval=3, dtype="int32"),
     ValueError, "ValueError"),
    ("stateless categorical 1-d", lambda m: m.stateless_categorical([1.0, 2.0], 3, seed=[1, 2]),
     InvalidArgumentError, "InvalidArgumentError"),
    ("generator bad alg", lambda m: m.Generator.from_seed(1, alg="foo"), ValueError,
     "ValueError"),
    ("generator int normal", lambda m: m.Generator.from_seed(1).normal([2], dtype="int32"),
     TypeError, "TypeError"),
    ("generator int uniform without maxval",
     lambda m: m.Generator.from_seed(1).uniform([2], dtype="int32"), ValueError, "ValueError"),
    ("dropout rate 1", lambda m: m.dropout(m.ones([2]), 1.0), ValueError, "ValueError"),
    ("dropout negative rate", lambda m: m.dropout(m.ones([2]), -0.1), ValueError, "ValueError"),
    ("dropout bool rate", lambda m: m.dropout(m.ones([2]), True), ValueError, "ValueError"),
    ("dropout string rate", lambda m: m.dropout(m.ones([2]), "a"), ValueError, "ValueError"),
    ("dropout vector rate", lambda m: m.dropout(m.ones([2]), [0.5, 0.5]), ValueError,
     "ValueError"),
    ("dropout int x", lambda m: m.dropout(m.ones([2], "int32"), 0.5), ValueError, "ValueError"),
    ("dropout bad noise_shape", lambda m: m.dropout(m.ones([2, 3]), 0.5, noise_shape=[2, 2]),
     InvalidArgumentError, "InvalidArgumentError"),
    ("dropout rate of another dtype",
     lambda m: m.dropout(m.ones([2]), m.constant(0.5, "float64")), ValueError, "ValueError"),
]


class _Ours:
    """ipu_gpu under the names the error table uses."""

    def __getattr__(self, name):
        if name == "dropout":
            return dropout
        return getattr(rnd, name, None) or getattr(tf, name)


class _Theirs:
    def __init__(self, real):
        self._tf = real

    def __getattr__(self, name):
        real = self._tf
        if name == "dropout":
            return real.nn.dropout
        if name in ("constant", "ones", "zeros"):
            f = getattr(real, name)
            return lambda *a: f(*a[:1], *(getattr(real, d) if isinstance(d, str) else d
                                          for d in a[1:]))
        f = getattr(real.random, name)
        if not callable(f) or isinstance(f, type):
            return f

        def call(*args, **kwargs):  # TF wants dtype objects
            kwargs = {k: getattr(real, v) if k == "dtype" else v for k, v in kwargs.items()}
            return f(*args, **kwargs)

        return call


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_bad_inputs_raise_as_tf(case, real_tf):
    _, call, ours, theirs = case
    with pytest.raises(ours) as info:
        call(_Ours())
    assert ":" in str(info.value)  # "<op>: <argument> must be ..., got ..."
    with pytest.raises(Exception) as tf_info:
        call(_Theirs(real_tf))
    assert type(tf_info.value).__name__ == theirs


# ---- against the real TensorFlow ---------------------------------------------------------------
def _sequence(m, dropout_fn):
    """A program's worth of stateful calls, for ipu_gpu (m = rnd) or TF (m = tf.random)."""
    x = np.ones((4, 6), np.float32)
    out = []
    for dt in FLOATS:
        out += [("u", m.uniform([3, 5], seed=7, dtype=dt)),
                ("u", m.uniform([7], minval=-2, maxval=3, seed=7, dtype=dt)),
                ("u", m.uniform([5], dtype=dt)),
                ("n", m.normal([9], seed=3, dtype=dt)),
                ("n", m.truncated_normal([2, 11], seed=3, dtype=dt)),
                ("n", m.normal([3], mean=1.0, stddev=2.0, dtype=dt))]
    for dt in ("int32", "int64"):
        out.append(("u", m.uniform([13], minval=-5, maxval=1000, seed=7, dtype=dt)))
    logits = [[0.0, 1.0, 2.0], [1.0, -np.inf, 0.0]]
    out += [("u", m.categorical(logits, 17, seed=2)), ("u", m.categorical(logits, 5)),
            ("u", m.shuffle(np.arange(40).reshape(20, 2), seed=4)),
            ("u", m.shuffle(np.arange(9))),
            ("u", dropout_fn(x, 0.4, seed=3)), ("u", dropout_fn(x, 0.4, noise_shape=[4, 1])),
            ("u", dropout_fn(x.astype(np.float16), 0.3, seed=3))]
    return out


@pytest.mark.parametrize("global_seed", [5, 87654321, 2**35])
def test_stateful_ops_give_tensorflows_cpu_numbers(real_tf, global_seed):
    """TF's own numbers: bit for bit, except Box-Muller values to 2 ulp (TF calls glibc's
    float32 log/sin/cos, ipu_gpu rounds float64 ones)."""
    dtype_of = lambda d: getattr(real_tf, d)  # noqa: E731

    class TFRandom:
        def __getattr__(self, name):
            f = getattr(real_tf.random, name)
            return lambda *a, dtype=None, **k: f(*a, **k, **({} if dtype is None else
                                                            {"dtype": dtype_of(dtype)}))

    for _ in range(2):  # a second run: set_seed restarts every counter
        rnd.set_seed(global_seed)
        real_tf.random.set_seed(global_seed)
        ours = _sequence(rnd, dropout)
        theirs = _sequence(TFRandom(), real_tf.nn.dropout)
        for (kind, a), (_, b) in zip(ours, theirs):
            a, b = _np(a), b.numpy()
            assert a.dtype == b.dtype and a.shape == b.shape
            if kind == "u":
                np.testing.assert_array_equal(a, b)
            else:
                np.testing.assert_array_max_ulp(a, b, maxulp=2)


def test_stateless_ops_and_generators_give_tensorflows_numbers(real_tf):
    for dt in FLOATS:
        for seed in ([3, -4], np.array([2**40, 7], np.int64)):
            _same(rnd.stateless_uniform([5], seed=seed, dtype=dt),
                  real_tf.random.stateless_uniform([5], seed=seed, dtype=dt).numpy())
            np.testing.assert_array_max_ulp(
                _np(rnd.stateless_normal([6], seed=seed, dtype=dt)),
                real_tf.random.stateless_normal([6], seed=seed, dtype=dt).numpy(), maxulp=2)
            np.testing.assert_array_max_ulp(
                _np(rnd.stateless_truncated_normal([7], seed=seed, dtype=dt)),
                real_tf.random.stateless_truncated_normal([7], seed=seed, dtype=dt).numpy(),
                maxulp=2)
    for dt in ("int32", "int64"):
        for lo, hi in ((-7, 9), (None, None)):
            _same(rnd.stateless_uniform([5], seed=[3, 4], minval=lo, maxval=hi, dtype=dt),
                  real_tf.random.stateless_uniform([5], seed=[3, 4], minval=lo, maxval=hi,
                                                   dtype=dt).numpy())
    _same(rnd.stateless_categorical([[0.0, 1.0, 2.0]], 9, seed=[1, 2]),
          real_tf.random.stateless_categorical([[0.0, 1.0, 2.0]], 9, seed=[1, 2]).numpy())
    _same(rnd.split([1, 2], 3), real_tf.random.experimental.stateless_split([1, 2], 3).numpy())
    _same(rnd.fold_in([1, 2], 5), real_tf.random.fold_in([1, 2], 5).numpy())
    g, tg = rnd.Generator.from_seed(11), real_tf.random.Generator.from_seed(11)
    _same(g.uniform([5]), tg.uniform([5]).numpy())
    np.testing.assert_array_max_ulp(_np(g.normal([5])), tg.normal([5]).numpy(), maxulp=2)
    np.testing.assert_array_max_ulp(_np(g.truncated_normal([5])),
                                    tg.truncated_normal([5]).numpy(), maxulp=2)
    _same(g.uniform([5], minval=2, maxval=10, dtype="int64"),
          tg.uniform([5], minval=2, maxval=10, dtype=real_tf.int64).numpy())
    _same(g.uniform_full_int([5]), tg.uniform_full_int([5], dtype=real_tf.int64).numpy())
    _same(g.make_seeds(3), tg.make_seeds(3).numpy())
    _same(g.split(2)[1].state, tg.split(2)[1].state.numpy())
    _same(g.skip(5), tg.skip(5).numpy())
    _same(g.state, tg.state.numpy())
    for seed in (2**70 + 5, -3, [4, 5]):
        _same(rnd.create_rng_state(seed, "philox"),
              real_tf.random.create_rng_state(seed, "philox").numpy())


def test_dropout_and_its_gradient_match_tensorflow(real_tf):
    x = np.linspace(-2, 2, 48, dtype=np.float32).reshape(6, 8)
    u = np.cos(np.arange(48, dtype=np.float32)).reshape(6, 8)
    for rate, noise in ((0.25, None), (0.6, [6, 1]), (np.float32(0.5), [1, 8])):
        rnd.set_seed(4)
        real_tf.random.set_seed(4)
        xt = tf.Variable(x)
        with tf.GradientTape() as tape:
            y = dropout(xt, rate, noise_shape=noise, seed=9)
        g = tape.gradient(y, xt, output_gradients=tf.constant(u))
        rx = real_tf.Variable(x)
        with real_tf.GradientTape() as rtape:
            ry = real_tf.nn.dropout(rx, rate, noise_shape=noise, seed=9)
        rg = rtape.gradient(ry, rx, output_gradients=u)
        _same(y, ry.numpy())
        _same(g, rg.numpy())
    rate = np.float32(0.3)
    rnd.set_seed(4)
    real_tf.random.set_seed(4)
    _same(dropout(x, tf.constant(rate), seed=1),
          real_tf.nn.dropout(x, real_tf.constant(rate), seed=1).numpy())


# ---- CPU and GPU -------------------------------------------------------------------------------
def _everything():
    rnd.set_seed(21)
    g = rnd.Generator.from_seed(5)
    x = tf.constant(np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6))
    outs = [rnd.uniform([33], seed=1, dtype=d) for d in FLOATS]
    outs += [rnd.normal([33], dtype=d) for d in FLOATS]
    outs += [rnd.truncated_normal([33], mean=1.0, stddev=2.0, dtype=d) for d in FLOATS]
    outs += [rnd.uniform([17], minval=-9, maxval=99, dtype=d) for d in ("int32", "int64")]
    outs += [rnd.categorical(np.log([[0.2, 0.3, 0.5]] * 2), 12), rnd.shuffle(x),
             dropout(x, 0.5), dropout(x, 0.5, noise_shape=[4, 1]),
             rnd.stateless_uniform([9], seed=[1, 2]), rnd.stateless_normal([9], seed=[1, 2]),
             rnd.stateless_truncated_normal([9], seed=[1, 2]),
             rnd.stateless_categorical(np.zeros((2, 5), np.float32), 7, seed=[3, 4]),
             g.uniform([9]), g.normal([9]), g.uniform([9], minval=0, maxval=5, dtype="int64"),
             g.make_seeds(2)]
    return [_np(t) for t in outs]


@pytest.mark.gpu
def test_cpu_and_gpu_give_identical_bits(backend):
    """The same seeds give the same bits whichever backend draws them."""
    tf.set_backend("cpu")
    want = _everything()
    tf.set_backend("cpu" if backend is np else "gpu")
    got = _everything()
    assert len(got) == len(want)
    for a, b in zip(got, want):
        _same(a, b)
