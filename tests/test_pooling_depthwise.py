"""Max pooling across channels (TF's CPU "depthwise max pooling": ksize/strides [1, 1, 1, k])
through tf.nn.max_pool2d, max_pool1d and max_pool, against TensorFlow's CPU kernel and the
float64 reference; TF's conditions and errors (avg_pool2d's too), its missing gradient, and
the GPU path."""

from __future__ import annotations

import numpy as np
import pytest
from reference import pooling as ref

import ipu_gpu
from ipu_gpu.errors import UnimplementedError
from ipu_gpu.ops import nn, pooling

SEEDS = range(8)


def _case(seed):
    """(x, k, spatial strides, padding): C a multiple of k; for k < 8 NaN, +-inf and signed
    zeros too (TF's Eigen reduction vectorises runs of 8 or more, and then orders NaN and
    -0/+0 as the CPU's vector max does, so those runs get plain values)."""
    rng = np.random.default_rng(seed)
    k = (2, 3, 4, 5, 2, 3, 8, 16)[seed % 8]
    shape = (int(rng.integers(1, 3)), int(rng.integers(1, 5)), int(rng.integers(1, 5)),
             k * int(rng.integers(1, 4)))
    x = rng.standard_normal(shape).astype(np.float32)
    if k < 8:
        x = np.round(x * 2) / 2  # ties
        flat = x.reshape(-1)
        for value, share in ((np.nan, 0.15), (-np.inf, 0.1), (np.inf, 0.05), (-0.0, 0.1)):
            flat[rng.random(flat.size) < share] = value
    strides = [int(s) for s in rng.integers(1, 4, 2)]
    return x, k, strides, str(rng.choice(["SAME", "VALID"]))


def _same(got, want):
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("seed", SEEDS)
def test_matches_tensorflow_and_reference(real_tf, seed):
    x, k, (sh, sw), padding = _case(seed)
    ksize, strides = [1, 1, 1, k], [1, sh, sw, k]  # TF ignores the spatial strides here
    want = real_tf.nn.max_pool2d(x, ksize, strides, padding).numpy()
    got = pooling.max_pool2d(x, ksize, strides, padding).numpy()
    assert got.shape == x.shape[:3] + (x.shape[3] // k,) and got.dtype == np.float32
    _same(got, want)
    _same(got, ref.depth_max_pool(x, k).astype(np.float32))


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_other_dtypes_match_tensorflow(real_tf, dtype):
    x, k, _, _ = _case(1)
    x = x.astype(dtype)
    want = real_tf.nn.max_pool2d(x, [1, 1, 1, k], [1, 1, 1, k], "VALID").numpy()
    got = pooling.max_pool2d(x, [1, 1, 1, k], [1, 1, 1, k], "VALID").numpy()
    assert got.dtype == dtype
    _same(got, want)


def test_special_values_follow_the_first_element_rule(real_tf):
    """A run starts from its first channel and takes only strictly greater values: a leading
    NaN stays, a later NaN is skipped, -inf stays -inf (no lowest-finite floor, unlike the
    spatial kernel) and the first of two equal zeros keeps its sign."""
    nan, inf = np.nan, np.inf
    x = np.array([1, 1, nan, 3, 3, nan, -inf, -inf, -inf, nan, -3.4e38, -inf, inf, nan,
                  -0.0, 0.0, 0.0, -0.0, nan, nan], np.float32).reshape(1, 1, 1, -1)
    got = pooling.max_pool2d(x, [1, 1, 1, 2], [1, 1, 1, 2], "VALID").numpy().reshape(-1)
    want = np.array([1, nan, 3, -inf, -inf, -3.4e38, inf, -0.0, 0.0, nan], np.float32)
    _same(got, want)
    _same(got, real_tf.nn.max_pool2d(x, [1, 1, 1, 2], [1, 1, 1, 2], "VALID").numpy()
          .reshape(-1))


def test_one_dimensional_and_rank_generic_forms(real_tf):
    x = np.random.default_rng(5).standard_normal((2, 5, 6)).astype(np.float32)
    want = real_tf.nn.max_pool1d(x, [1, 1, 3], [1, 1, 3], "VALID").numpy()
    _same(nn.max_pool1d(x, [1, 1, 3], [1, 1, 3], "VALID").numpy(), want)
    x4 = x.reshape(2, 5, 1, 6)
    want = real_tf.nn.max_pool(x4, [1, 1, 1, 2], [1, 1, 1, 2], "SAME").numpy()
    _same(nn.max_pool(x4, [1, 1, 1, 2], [1, 1, 1, 2], "SAME").numpy(), want)
    _same(ipu_gpu.nn.max_pool2d(x4, [1, 1, 1, 6], [1, 1, 1, 6], "SAME").numpy(),
          x4.max(axis=3, keepdims=True))


def test_depth_stride_beside_a_spatial_window_is_ignored(real_tf):
    """TF's kernels read the channel stride only for a channel window."""
    x = np.random.default_rng(6).standard_normal((2, 5, 6, 4)).astype(np.float32)
    for fn_name in ("max_pool2d", "avg_pool2d"):
        want = getattr(real_tf.nn, fn_name)(x, 2, [1, 2, 1, 3], "SAME").numpy()
        got = getattr(pooling, fn_name)(x, 2, [1, 2, 1, 3], "SAME").numpy()
        assert got.shape == want.shape == (2, 3, 6, 4)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_works_on_empty_inputs(real_tf):
    for shape in ((0, 3, 4, 4), (2, 3, 4, 0), (2, 0, 4, 4)):
        x = np.zeros(shape, np.float32)
        want = real_tf.nn.max_pool2d(x, [1, 1, 1, 2], [1, 1, 1, 2], "VALID").numpy()
        got = pooling.max_pool2d(x, [1, 1, 1, 2], [1, 1, 1, 2], "VALID").numpy()
        assert got.shape == want.shape


NO_PAD = [[0, 0], [0, 0], [0, 0], [0, 0]]
# (op, input shape, ksize, strides, padding, TF's message)
ERRORS = [
    ("max_pool2d", (2, 3, 4, 6), [1, 1, 1, 4], [1, 1, 1, 4], "VALID",
     "Depthwise max pooling requires the depth window to evenly divide the input depth"),
    ("max_pool2d", (2, 3, 4, 6), [1, 1, 1, 2], [1, 1, 1, 3], "SAME",
     "Depthwise max pooling requires the depth window to equal the depth stride"),
    ("max_pool2d", (2, 3, 4, 6), [1, 1, 1, 2], [1, 1, 1, 1], "VALID",
     "Depthwise max pooling requires the depth window to equal the depth stride"),
    ("max_pool2d", (2, 3, 4, 6), [1, 1, 1, 2], 2, "VALID",
     "Depthwise max pooling requires the depth window to equal the depth stride"),
    ("max_pool2d", (2, 3, 4, 5), [1, 1, 1, 2], [1, 1, 1, 3], "VALID",  # divisibility first
     "Depthwise max pooling requires the depth window to evenly divide the input depth"),
    ("max_pool2d", (2, 3, 4, 6), [1, 2, 1, 2], [1, 1, 1, 2], "VALID",
     "MaxPooling supports exactly one of pooling across depth or pooling across width/height."),
    ("max_pool2d", (2, 3, 4, 6), [1, 1, 1, 2], [1, 1, 1, 2], NO_PAD,
     "Depthwise max pooling does not support explicit padding."),
    ("avg_pool2d", (2, 3, 4, 6), [1, 1, 1, 2], [1, 1, 1, 2], "VALID",
     "Non-spatial pooling is not yet supported. Volunteers? :)"),
    ("avg_pool2d", (2, 3, 4, 6), [1, 1, 1, 4], [1, 1, 1, 4], "VALID",
     "Depthwise max pooling requires the depth window to evenly divide the input depth"),
    ("avg_pool2d", (2, 3, 4, 6), [1, 1, 1, 2], [1, 1, 1, 3], "VALID",
     "Depthwise max pooling requires the depth window to equal the depth stride"),
    ("avg_pool2d", (2, 3, 4, 6), [1, 2, 2, 2], [1, 1, 1, 2], "SAME",
     "MaxPooling supports exactly one of pooling across depth or pooling across width/height."),
]


@pytest.mark.parametrize("op, shape, ksize, strides, padding, message", ERRORS)
def test_errors_match_tensorflow(real_tf, op, shape, ksize, strides, padding, message):
    x = np.zeros(shape, np.float32)
    with pytest.raises(real_tf.errors.UnimplementedError, match=message.replace("?", r"\?")
                       .replace("(", r"\(").replace(")", r"\)")):
        getattr(real_tf.nn, op)(x, ksize, strides, padding)
    with pytest.raises(UnimplementedError) as info:
        getattr(pooling, op)(x, ksize, strides, padding)
    assert str(info.value) == f"{op}: {message}"


def test_nchw_raises_tensorflows_gpu_error():
    """TF pools NCHW on its GPU only, where depthwise max pooling is refused."""
    x = np.zeros((2, 4, 3, 3), np.float32)
    with pytest.raises(UnimplementedError, match="max_pool2d: Depthwise max pooling is "
                       "currently only implemented for CPU devices"):
        pooling.max_pool2d(x, [1, 2, 1, 1], [1, 2, 1, 1], "VALID", data_format="NCHW")
    with pytest.raises(UnimplementedError, match="evenly divide"):
        pooling.max_pool2d(x, [1, 3, 1, 1], [1, 3, 1, 1], "VALID", data_format="NCHW")


def test_gradient_raises_as_tensorflow(real_tf):
    """TF has no gradient for pooling across channels: its MaxPoolGrad raises."""
    x = np.random.default_rng(7).standard_normal((1, 2, 2, 4)).astype(np.float32)
    xt = real_tf.constant(x)
    with real_tf.GradientTape() as tape:
        tape.watch(xt)
        y = real_tf.nn.max_pool2d(xt, [1, 1, 1, 2], [1, 1, 1, 2], "VALID")
    message = "MaxPoolingGrad is not yet supported on the depth dimension."
    with pytest.raises(real_tf.errors.UnimplementedError, match=message):
        tape.gradient(y, xt)
    ours = ipu_gpu.constant(x)
    with ipu_gpu.GradientTape() as tape:
        tape.watch(ours)
        y = pooling.max_pool2d(ours, [1, 1, 1, 2], [1, 1, 1, 2], "VALID")
    _same(y.numpy(), ref.depth_max_pool(x, 2).astype(np.float32))
    with pytest.raises(UnimplementedError, match=f"^max_pool2d: {message}$"):
        tape.gradient(y, ours)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_gpu_matches_cpu(dtype):
    from conftest import require_gpu

    cupy = require_gpu()
    x, k, strides, padding = _case(2)
    x = x.astype(dtype)
    cpu = pooling.max_pool2d(x, [1, 1, 1, k], [1, 1, 1, k], padding).numpy()
    previous = ipu_gpu.backend_name()
    ipu_gpu.set_backend("gpu")
    try:
        gpu = pooling.max_pool2d(ipu_gpu.constant(cupy.asarray(x)), [1, 1, 1, k],
                                 [1, 1, 1, k], padding).numpy()
    finally:
        ipu_gpu.set_backend(previous)
    _same(gpu, cpu)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", [2, 3, 4, 8, 16])
def test_cpu_kernel_follows_the_first_element_rule_serial_and_parallel(monkeypatch, k, dtype):
    """pooling_cpu.max_pool_depth_fwd, ties, NaN, +-inf and signed zeros included, equals the
    float64 reference's rule bit for bit, serially and on the parallel driver (forced)."""
    from ipu_gpu.kernels import pooling_cpu

    rng = np.random.default_rng(k)
    x = np.round(rng.standard_normal((2, 16, 16, 16 * k)) * 2).astype(dtype) / 2
    flat = x.reshape(-1)
    for value, share in ((np.nan, 0.1), (-np.inf, 0.05), (np.inf, 0.02), (-0.0, 0.1)):
        flat[rng.random(flat.size) < share] = value
    want = ref.depth_max_pool(x, k).astype(dtype)
    runs = []
    for parallel in (True, False):
        monkeypatch.setattr(pooling_cpu, "_parallel", lambda work, p=parallel: p)
        out = np.empty(x.shape[:3] + (16,), dtype)
        runs.append(pooling_cpu.max_pool_depth_fwd(x, out, k))
        _same(out, want)
    _same(runs[0], runs[1])
    got = pooling.max_pool2d(np.asfortranarray(x), [1, 1, 1, k], [1, 1, 1, k], "VALID")
    _same(got.numpy(), want)  # a non-contiguous input through the op
