"""kernels/matmul_cpu's tiled GEMM (tf.matmul's CPU engine) gives bits that depend only on the
shapes: the same under any OpenBLAS and Numba thread count, equal bit for bit to a tile-wise
numpy reference (each tile of ``matmul_cpu.tiles`` one numpy GEMM on one BLAS thread), and
close to a float64 product; numpy's results and errors everywhere else."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import ipu_gpu as tf
from ipu_gpu.kernels import matmul_cpu
from ipu_gpu.kernels._blas import single_threaded_blas
from ipu_gpu.ops import matmul as matmul_op

SHAPES = [  # (batch, m, k, n): the MLP bench's GEMMs, 2-D tiles, batches, thin products
    ((), 256, 784, 512), ((), 784, 256, 512), ((), 256, 512, 784), ((), 256, 512, 10),
    ((), 512, 256, 10), ((), 256, 10, 512), ((), 1000, 300, 700), ((3,), 400, 300, 700),
    ((2, 5), 40, 50, 60), ((), 64, 64, 64), ((), 3, 1000, 1000),
]


def _tilewise(x, y):
    """x @ y tile by tile, each tile a numpy GEMM on one BLAS thread, for one batch matrix
    at a time (x, y broadcast first)."""
    m, k, n = x.shape[-2], x.shape[-1], y.shape[-1]
    batch = np.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    xb = np.broadcast_to(x, batch + (m, k))
    yb = np.broadcast_to(y, batch + (k, n))
    out = np.empty(batch + (m, n), x.dtype)
    rows, cols = matmul_cpu.tiles(m, k, n)
    with single_threaded_blas():
        for idx in np.ndindex(*batch):
            for r0, r1 in zip(rows, rows[1:]):
                for c0, c1 in zip(cols, cols[1:]):
                    out[idx][r0:r1, c0:c1] = np.matmul(xb[idx][r0:r1], yb[idx][:, c0:c1])
    return out


def _operands(shape, dtype, seed, transpose_a=False, transpose_b=False):
    batch, m, k, n = shape
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(batch + ((k, m) if transpose_a else (m, k))).astype(dtype)
    b = rng.standard_normal(batch + ((n, k) if transpose_b else (k, n))).astype(dtype)
    return a, b


def _close_to_float64(got, a, b):
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    tol = 2e-5 if got.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.sqrt(max(a.shape[-1], 1)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
def test_tiled_product_is_the_tilewise_numpy_reference_bit_for_bit(shape, dtype):
    a, b = _operands(shape, dtype, 1)
    batch, m, k, n = shape
    assert matmul_cpu.deterministic(a, b) == (int(np.prod(batch)) * m * k * n
                                              > matmul_cpu.SMALL_MNK)
    got = matmul_cpu.matmul(a, b)
    assert got.dtype == dtype and got.shape == np.matmul(a, b).shape
    np.testing.assert_array_equal(got, _tilewise(a, b))
    _close_to_float64(got, a, b)


@pytest.mark.parametrize("transpose_a,transpose_b", [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_transposed_views_go_to_blas_uncopied(transpose_a, transpose_b, dtype, monkeypatch):
    a, b = _operands(((), 256, 512, 784), dtype, 2, transpose_a, transpose_b)
    x = a.swapaxes(-1, -2) if transpose_a else a
    y = b.swapaxes(-1, -2) if transpose_b else b
    copied = []
    real = np.ascontiguousarray
    monkeypatch.setattr(matmul_cpu.np, "ascontiguousarray",
                        lambda v, *args, **kw: copied.append(v.shape) or real(v, *args, **kw))
    got = matmul_cpu.matmul(x, y)
    monkeypatch.undo()
    assert not copied
    np.testing.assert_array_equal(got, _tilewise(np.ascontiguousarray(x), np.ascontiguousarray(y)))
    with threadpool_limits(3, "blas"):
        np.testing.assert_array_equal(matmul_cpu.matmul(x, y), got)
    _close_to_float64(got, x, y)


def _unaligned(a):
    """A copy of ``a`` whose data starts one byte past an element boundary."""
    buf = np.empty(a.nbytes + 1, np.uint8)
    v = np.frombuffer(buf.data, a.dtype, a.size, offset=1).reshape(a.shape)
    v[...] = a
    assert not v.flags.aligned
    return v


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_non_contiguous_and_odd_layouts(dtype):
    rng = np.random.default_rng(8)
    big = rng.standard_normal((600, 900)).astype(dtype)
    w = rng.standard_normal((900, 700)).astype(dtype)
    cases = [
        (big[:300, :500], w[:500, :400]),  # row strides wider than the rows
        (big[::2, ::2], w[::2, :350]),  # no unit stride: copied
        (big[::-1, :400], w[:400, ::-1]),  # negative strides: copied
        (_unaligned(big[:200, :300]), w[:300, :200]),
        (big[:300, :500].T[:, :250], w[:250, :200]),  # a transposed strided view
    ]
    for x, y in cases:
        got = matmul_cpu.matmul(x, y)
        np.testing.assert_array_equal(got, _tilewise(np.ascontiguousarray(x),
                                                      np.ascontiguousarray(y)))
        _close_to_float64(got, x, y)


def test_broadcast_batch_and_out():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 1, 96, 200)).astype(np.float32)
    b = rng.standard_normal((3, 200, 300)).astype(np.float32)
    want = _tilewise(a, b)
    out = np.full((4, 3, 96, 300), np.nan, np.float32)
    assert matmul_cpu.matmul(a, b, out=out) is out
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(matmul_cpu.matmul(a, b), want)
    # a 2-D left operand against a batch, and a transposed batch
    x = rng.standard_normal((96, 200)).astype(np.float32)
    np.testing.assert_array_equal(matmul_cpu.matmul(x, b), _tilewise(x, b))
    bt = rng.standard_normal((3, 300, 200)).astype(np.float32).swapaxes(-1, -2)
    np.testing.assert_array_equal(matmul_cpu.matmul(a, bt), _tilewise(a, np.ascontiguousarray(bt)))


@pytest.mark.parametrize("shape", [(0, 50, 60), (50, 0, 60), (50, 60, 0), (3, 0, 4, 5)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_empty_products_are_numpys(shape, dtype):
    *batch, m, k, n = shape
    a = np.ones(tuple(batch) + (m, k), dtype)
    b = np.ones((k, n), dtype)
    got = matmul_cpu.matmul(a, b)
    want = np.matmul(a, b)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    # big enough to take the tiled path, with no inner length: zeros
    a, b = np.ones((700, 0), dtype), np.ones((0, 800), dtype)
    np.testing.assert_array_equal(matmul_cpu.matmul(a, b), np.zeros((700, 800), dtype))
    out = np.full((700, 800), np.nan, dtype)
    matmul_cpu.matmul(a, b, out=out)
    np.testing.assert_array_equal(out, 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_row_and_one_column(dtype):
    rng = np.random.default_rng(9)
    for m, k, n in [(1, 3000, 2000), (2000, 3000, 1), (1, 20, 30), (1, 1, 5000), (5000, 1, 1)]:
        a = rng.standard_normal((m, k)).astype(dtype)
        b = rng.standard_normal((k, n)).astype(dtype)
        got = matmul_cpu.matmul(a, b)
        assert got.shape == (m, n)
        _close_to_float64(got, a, b)
        with threadpool_limits(2, "blas"):
            np.testing.assert_array_equal(matmul_cpu.matmul(a, b), got)


def test_tiles_cover_the_output_and_depend_on_the_shape_only():
    for m, k, n in [(256, 784, 512), (784, 256, 512), (2048, 2048, 2048), (7, 100000, 9),
                    (100000, 64, 3), (30, 30, 30), (256, 512, 10), (1, 3000, 2000)]:
        rows, cols = matmul_cpu.tiles(m, k, n)
        assert rows[0] == 0 and rows[-1] == m and cols[0] == 0 and cols[-1] == n
        assert all(r1 > r0 for r0, r1 in zip(rows, rows[1:]))
        assert all(c1 > c0 for c0, c1 in zip(cols, cols[1:]))
        assert all(r % matmul_cpu.ROW_MULTIPLE == 0 for r in rows[1:-1])
        assert all(c % matmul_cpu.COL_MULTIPLE == 0 for c in cols[1:-1])
        count = (len(rows) - 1) * (len(cols) - 1)
        assert count <= matmul_cpu.MAX_TILES
        if m * k * n > matmul_cpu.SPLIT_MIN_MNK and max(m, n) >= 48:
            assert count >= 2
    # the MLP bench's GEMMs: two threads evenly loaded (an even count of equal tiles)
    rows, cols = matmul_cpu.tiles(256, 784, 512)
    sizes = {(r1 - r0) * (c1 - c0) for r0, r1 in zip(rows, rows[1:])
             for c0, c1 in zip(cols, cols[1:])}
    assert len(sizes) == 1 and ((len(rows) - 1) * (len(cols) - 1)) % 2 == 0


def _repacked(m, k, n, rows, cols):
    """Operand elements packed once more than by one GEMM of the whole product."""
    return (len(rows) - 2) * k * n + (len(cols) - 2) * m * k


@pytest.mark.parametrize("shape", [(512, 512, 512), (1024, 1024, 1024), (2048, 2048, 2048),
                                   (2048, 512, 2048), (256, 784, 512), (784, 256, 512),
                                   (8192, 8192, 8192), (100000, 64, 3), (3, 1000, 1000)])
def test_tiles_repack_within_the_budget(shape):
    """Each tile's GEMM packs its operand panels again: above two tiles, the repacking stays
    within PACK_BUDGET of the product's work, and twice the count would break it (or the
    cap); the count is a power of two (two or more threads share it evenly)."""
    m, k, n = shape
    rows, cols = matmul_cpu.tiles(m, k, n)
    count = (len(rows) - 1) * (len(cols) - 1)
    assert count >= 2 and count & (count - 1) == 0
    budget = matmul_cpu.PACK_BUDGET * m * k * n
    if count > 2:
        assert matmul_cpu.PACK_COST * _repacked(m, k, n, rows, cols) <= budget
    if 2 * count <= min(matmul_cpu.MAX_TILES, m * k * n // matmul_cpu.SPLIT_MIN_MNK):
        grids = [(matmul_cpu._cuts(m, tr, matmul_cpu.ROW_MULTIPLE),
                  matmul_cpu._cuts(n, 2 * count // tr, matmul_cpu.COL_MULTIPLE))
                 for tr in (1, 2, 4, 8, 16, 32, 64, 128) if tr <= 2 * count]
        assert all(matmul_cpu.PACK_COST * _repacked(m, k, n, r, c) > budget for r, c in grids
                   if (len(r) - 1) * (len(c) - 1) == 2 * count)


def test_tiles_of_the_bench_products():
    """1024^3 in two row tiles, 2048^3 in 2 x 2 (1% repacking), the MLP's forward GEMM in two
    column tiles (its 256 rows are the shorter side)."""
    assert [len(t) - 1 for t in matmul_cpu.tiles(1024, 1024, 1024)] == [2, 1]
    assert [len(t) - 1 for t in matmul_cpu.tiles(2048, 2048, 2048)] == [2, 2]
    rows, cols = matmul_cpu.tiles(256, 784, 512)
    assert list(rows) == [0, 256] and list(cols) == [0, 256, 512]


@pytest.mark.parametrize("dtype", [np.float16, np.int32, np.int64])
def test_other_dtypes_and_small_products_are_numpys(dtype):
    rng = np.random.default_rng(4)
    a = (rng.standard_normal((300, 200)) * 4).astype(dtype)
    b = (rng.standard_normal((200, 100)) * 4).astype(dtype)
    assert not matmul_cpu.deterministic(a, b)
    np.testing.assert_array_equal(matmul_cpu.matmul(a, b), np.matmul(a, b))
    small = a[:32, :32].astype(np.float32), b[:32, :32].astype(np.float32)
    assert not matmul_cpu.deterministic(*small)
    np.testing.assert_array_equal(matmul_cpu.matmul(*small), np.matmul(*small))
    mixed = a.astype(np.float32), b.astype(np.float64)
    assert not matmul_cpu.deterministic(*mixed)
    np.testing.assert_array_equal(matmul_cpu.matmul(*mixed), np.matmul(*mixed))


def test_tf_matmul_float16_is_unchanged():
    rng = np.random.default_rng(10)
    a = rng.standard_normal((300, 200)).astype(np.float16)
    b = rng.standard_normal((200, 400)).astype(np.float16)
    np.testing.assert_array_equal(tf.matmul(a, b).numpy(), np.matmul(a, b))


def test_bad_input_raises_as_numpy():
    a, b = _operands(((), 256, 784, 512), np.float32, 5)
    with pytest.raises(ValueError):
        matmul_cpu.matmul(a, b, out=np.empty((256, 511), np.float32))
    with pytest.raises(ValueError):
        matmul_cpu.matmul(a, b[:700])
    with pytest.raises(ValueError):
        matmul_cpu.matmul(np.ones((2, 300, 400), np.float32), np.ones((3, 400, 500), np.float32))
    # an out numpy casts into, and an out that is one of the operands
    out64 = np.empty((256, 512), np.float64)
    matmul_cpu.matmul(a, b, out=out64)
    np.testing.assert_array_equal(out64, np.matmul(a, b, out=np.empty((256, 512), np.float64)))
    sq = np.random.default_rng(5).standard_normal((300, 300)).astype(np.float32)
    want = matmul_cpu.matmul(sq, sq)
    assert matmul_cpu.matmul(sq, sq.copy(), out=sq) is sq
    np.testing.assert_array_equal(sq, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gemm_accumulate_adds_the_tiled_product(dtype):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((300, 64)).astype(dtype)  # k one OpenBLAS k-block: one rounding
    y = rng.standard_normal((64, 500)).astype(dtype)
    c = rng.standard_normal((300, 500)).astype(dtype)
    want = c + _tilewise(x, y)
    assert matmul_cpu.gemm_accumulate(x, y, c)
    np.testing.assert_array_equal(c, want)
    assert not matmul_cpu.gemm_accumulate(x, y, np.empty((300, 500), np.float16))
    assert not matmul_cpu.gemm_accumulate(x, y, np.empty((500, 300), dtype).T)
    assert not matmul_cpu.gemm_accumulate(x, y, np.empty((300, 499), dtype))


def test_bits_do_not_depend_on_the_blas_or_numba_thread_count():
    """The MLP bench's GEMMs (forward and both gradients' transposed operands) and a float64
    batch, where numpy's threaded GEMM gives other bits on 1, 2 and 3 OpenBLAS threads with
    its Haswell/Zen kernels: Numba threads and OpenBLAS threads 1 to 4 each (a child process
    with NUMBA_NUM_THREADS=4), equal to this process's bits and the tile-wise reference."""
    script = textwrap.dedent("""
        import hashlib, json, sys
        import numba, numpy as np
        from threadpoolctl import threadpool_limits
        sys.path.insert(0, sys.argv[1])
        from test_matmul_determinism import _mlp_pairs
        from ipu_gpu.kernels import matmul_cpu
        runs = {}
        for nt in (1, 2, 3, 4):
            numba.set_num_threads(nt)
            for blas in (1, 2, 3, 4):
                with threadpool_limits(blas, "blas"):
                    runs[f"{nt},{blas}"] = [hashlib.sha256(matmul_cpu.matmul(x, y).tobytes())
                                            .hexdigest() for x, y in _mlp_pairs()]
        print(json.dumps(runs))
        """)
    env = dict(os.environ, NUMBA_NUM_THREADS="4")
    done = subprocess.run([sys.executable, "-c", script, os.path.dirname(__file__)], env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    runs = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(runs) == 16
    import hashlib

    here = [hashlib.sha256(matmul_cpu.matmul(x, y).tobytes()).hexdigest()
            for x, y in _mlp_pairs()]
    assert all(r == here for r in runs.values()), runs
    want = [hashlib.sha256(_tilewise(np.ascontiguousarray(x), np.ascontiguousarray(y))
                           .tobytes()).hexdigest() for x, y in _mlp_pairs()]
    assert here == want


def _mlp_pairs():
    out = []
    for dtype in (np.float32, np.float64):
        a, b = _operands(((), 256, 784, 512), dtype, 7)
        u = np.random.default_rng(6).standard_normal((256, 512)).astype(dtype)
        out += [(a, b), (u, b.T), (a.T, u)]
    x, y = _operands(((3,), 400, 300, 700), np.float64, 12)
    return out + [(x, y)]


def test_numba_thread_count_in_process():
    pairs = _mlp_pairs()[:3]
    before = numba.get_num_threads()
    runs = []
    try:
        for nt in range(1, numba.config.NUMBA_NUM_THREADS + 1):
            numba.set_num_threads(nt)
            runs.append([matmul_cpu.matmul(x, y).tobytes() for x, y in pairs])
    finally:
        numba.set_num_threads(before)
    assert all(r == runs[0] for r in runs)


def test_a_forked_child_multiplies_with_the_same_bits():
    """GNU OpenMP aborts a forked child of a process whose OpenMP threads ran; the child's
    tiles run on its calling thread instead, with the same bits."""
    script = textwrap.dedent("""
        import os, sys
        import numpy as np
        from ipu_gpu.kernels import matmul_cpu
        rng = np.random.default_rng(0)
        a = rng.standard_normal((256, 784)).astype(np.float32)
        b = rng.standard_normal((784, 512)).astype(np.float32)
        parent = matmul_cpu.matmul(a, b).tobytes()
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            same = matmul_cpu.matmul(a, b).tobytes() == parent
            os.write(w, b"same" if same else b"differ")
            os._exit(0)
        os.close(w)
        got = os.read(r, 16)
        _, status = os.waitpid(pid, 0)
        print(got.decode(), status)
        """)
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", script], capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.split() == ["same", "0"], (done.stdout, done.stderr[-2000:])


def test_tf_matmul_and_its_gradients_run_the_tiled_gemm():
    a, b = _operands(((), 256, 784, 512), np.float32, 13)
    g = np.random.default_rng(14).standard_normal((256, 512)).astype(np.float32)
    at, bt = tf.constant(a), tf.Variable(b)
    with tf.GradientTape() as tape:
        tape.watch(at)
        y = tf.matmul(at, bt)
    da, db = tape.gradient(y, [at, bt], output_gradients=tf.constant(g))
    np.testing.assert_array_equal(y.numpy(), _tilewise(a, b))
    np.testing.assert_array_equal(da.numpy(), _tilewise(g, np.ascontiguousarray(b.T)))
    np.testing.assert_array_equal(db.numpy(), _tilewise(np.ascontiguousarray(a.T), g))
    t = tf.matmul(tf.constant(a.T.copy()), tf.constant(b.T.copy()), transpose_a=True,
                  transpose_b=True)
    np.testing.assert_array_equal(t.numpy(), _tilewise(a, b))


def test_dense_bias_uses_the_tiled_gemm():
    """Keras's Dense runs as ``dense_bias``: its product and kernel gradient are the tiled
    GEMM's, under any OpenBLAS thread count."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((256, 784)).astype(np.float32)
    w = rng.standard_normal((784, 512)).astype(np.float32)
    bias = rng.standard_normal(512).astype(np.float32)
    u = rng.standard_normal((256, 512)).astype(np.float32)
    got = {}
    for blas in (1, 2, 3):
        tw = tf.constant(w)
        with threadpool_limits(blas, "blas"):
            with tf.GradientTape() as tape:
                tape.watch(tw)
                y = matmul_op.dense_bias(tf.constant(x), tw, tf.constant(bias), relu=True)
            dw = tape.gradient(y, tw, output_gradients=u)
        got[blas] = (y.numpy(), dw.numpy())
    y_want = np.maximum(_tilewise(x, w) + bias, 0)
    dw_want = _tilewise(np.ascontiguousarray(x.T), u * (y_want > 0))
    for y, dw in got.values():
        np.testing.assert_array_equal(y, y_want)
        np.testing.assert_array_equal(dw, dw_want)


def test_conv3d_bits_do_not_depend_on_the_blas_thread_count():
    """conv3d's per-tap GEMMs (forward and both gradients) are the tiled GEMM's too."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 12, 12, 12, 32)).astype(np.float32)
    w = rng.standard_normal((3, 3, 3, 32, 48)).astype(np.float32)
    runs = set()
    for blas in (1, 2, 3):
        tx, tw = tf.constant(x), tf.constant(w)
        with threadpool_limits(blas, "blas"):
            with tf.GradientTape() as tape:
                tape.watch([tx, tw])
                y = tf.nn.conv3d(tx, tw, [1, 1, 1, 1, 1], "SAME")
            gx, gw = tape.gradient(y, [tx, tw], output_gradients=np.ones(y.shape, np.float32))
        runs.add(tuple(v.numpy().tobytes() for v in (y, gx, gw)))
    assert len(runs) == 1


def test_tiles_run_on_the_calling_thread_inside_a_single_threaded_section(monkeypatch):
    """While a single_threaded_blas section is open (replicas running concurrently, a
    convolution's blocks), or for one tile, the tiles run in order on the calling thread:
    the same GEMMs, the same bits."""
    a, b = _operands(((), 256, 784, 512), np.float32, 15)
    small = _operands(((), 256, 512, 10), np.float32, 16)
    real = matmul_cpu._kernels()
    used = []

    def spy(kernel, name):
        def run(*args):
            used.append(name)
            return kernel(*args)
        return run

    spies = {d: (spy(p, "parallel"), spy(s, "serial")) for d, (p, s) in real.items()}
    plan_spies = {d: (spy(p, "parallel"), spy(s, "serial"))
                  for d, (p, s) in matmul_cpu._plan_kernels().items()}
    monkeypatch.setattr(matmul_cpu, "_kernels", lambda: spies)
    monkeypatch.setattr(matmul_cpu, "_plan_kernels", lambda: plan_spies)
    monkeypatch.setattr(matmul_cpu, "_PLANS", {})  # plans of earlier calls hold the real kernels
    free = matmul_cpu.matmul(a, b)
    with single_threaded_blas():
        inside = matmul_cpu.matmul(a, b)
    one_tile = matmul_cpu.matmul(*small)
    assert used == ["parallel", "serial", "serial"]
    np.testing.assert_array_equal(inside, free)
    np.testing.assert_array_equal(one_tile, _tilewise(*small))


def test_concurrent_callers_and_byte_swapped_inputs():
    """Python threads multiplying at once (each its own OpenMP team or the calling thread)
    get the single-caller bits; byte-swapped float32 goes to numpy."""
    import threading

    pairs = _mlp_pairs()[:3]
    want = [matmul_cpu.matmul(x, y) for x, y in pairs]
    bad = []

    def work():
        for _ in range(3):
            for (x, y), w in zip(pairs, want):
                if not np.array_equal(matmul_cpu.matmul(x, y), w):
                    bad.append(1)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad
    a, b = pairs[0]
    sa, sb = a.astype(a.dtype.newbyteorder()), b.astype(b.dtype.newbyteorder())
    assert sa.dtype == sb.dtype and not matmul_cpu.deterministic(sa, sb)
    np.testing.assert_array_equal(matmul_cpu.matmul(sa, sb), np.matmul(sa, sb))
