"""Generic tests over every row of the op table (``tests/opdb.py``): forward against the
float64 reference, exact output shape and dtype, a float64 VJP check against central
differences, every error input, and CPU against GPU."""

from __future__ import annotations

import zlib
from functools import cache

import numpy as np
import pytest
from opdb import DEFAULT_TOL, F64, OPS, OPS_BY_NAME

import ipu_gpu as tf
from ipu_gpu.core.backend import cupy_if_gpu

REQUIRED = {
    # top level
    "add", "subtract", "multiply", "divide", "negative", "pow", "square", "sqrt", "rsqrt",
    "exp", "log", "abs", "sign", "maximum", "minimum", "tanh", "sigmoid", "matmul",
    "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reshape", "transpose",
    "expand_dims", "squeeze", "concat", "stack", "split", "gather", "one_hot", "where", "zeros",
    "ones", "zeros_like", "ones_like", "fill", "range", "argmax", "argmin", "equal",
    "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or",
    "logical_not", "clip_by_value", "stop_gradient", "identity", "cast", "constant",
    "convert_to_tensor", "floordiv", "floormod",
    # tf.nn
    "relu", "leaky_relu", "elu", "softmax", "log_softmax", "sigmoid_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits", "sparse_softmax_cross_entropy_with_logits", "bias_add",
    "l2_loss",
    # Tensor.__getitem__
    "getitem",
    # issue 14: array ops
    "shape", "size", "rank", "tile", "pad", "slice", "strided_slice", "unstack", "broadcast_to",
    "reverse", "roll", "eye", "linspace", "meshgrid",
    # issue 14: math, reductions, sorting, n-d indexing, nn
    "log1p", "expm1", "softplus", "erf", "erfc", "reciprocal", "floor", "ceil", "round",
    "is_nan", "is_finite", "is_inf", "reduce_prod", "reduce_any", "reduce_all",
    "reduce_logsumexp", "reduce_variance", "reduce_std", "count_nonzero", "moments", "norm",
    "cumsum", "unsorted_segment_sum", "einsum", "sort", "argsort", "top_k", "gather_nd",
    "scatter_nd", "tensor_scatter_nd_update", "tensor_scatter_nd_add", "boolean_mask", "gelu",
    "silu", "l2_normalize", "xw_plus_b", "max_pool1d", "avg_pool1d", "max_pool", "avg_pool",
    "nn.embedding_lookup",
    # tf.nn convolution and pooling (issue 5)
    "conv2d", "conv2d_bias", "dense_bias", "depthwise_conv2d", "conv2d_transpose", "conv1d",
    "max_pool2d",
    "avg_pool2d",
    # ipu.statistics_ops (issue 4)
    "histogram", "histogram_update", "fixed_width_bins", "histogram_normalize",
    # ipu.slicing_ops (issue 4)
    "sequence_slice", "sequence_slice_unpack", "sequence_slice_pack",
    # ipu.embedding_ops / ipu.math_ops (issues 4 and 5)
    "embedding_lookup", "segment_sum", "serialized_matmul",
    # trigonometric and hyperbolic functions (issue 17)
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "asinh", "acosh",
    "atanh",
    # special functions (issue 17)
    "lgamma", "digamma",
    # more tf / tf.math / tf.nn ops (issue 17)
    "selu", "cumprod", "sequence_mask", "repeat", "tensordot",
    "linalg.diag", "linalg.diag_part", "band_part", "tensor_diag", "tensor_diag_part",
    "unique", "unique.idx", "searchsorted", "histogram_fixed_width",
}


# ---- samples, fresh per test id but stable across runs -------------------------------------
def _seed(*parts) -> int:
    return zlib.crc32("/".join(str(p) for p in parts).encode())


@cache
def samples_of(name: str, dtype: str) -> tuple:
    rng = np.random.default_rng(_seed(name, dtype))
    return tuple(OPS_BY_NAME[name].sample_inputs(rng, np.dtype(dtype)))


def _case(name, dtype, index):
    row = OPS_BY_NAME[name]
    return row, samples_of(name, dtype)[index], np.dtype(dtype)


CASES = [pytest.param(row.name, d.name, i, id=f"{row.name}-{d.name}-{i}")
         for row in OPS for d in row.dtypes for i in range(len(samples_of(row.name, d.name)))]


# ---- moving values --------------------------------------------------------------------------
def to_backend(value, xp):
    """numpy arrays inside ``value`` (nested lists/tuples/dicts) moved onto ``xp``."""
    if isinstance(value, np.ndarray):
        return xp.asarray(value)
    if isinstance(value, (list, tuple)):
        return type(value)(to_backend(v, xp) for v in value)
    if isinstance(value, dict):
        return {k: to_backend(v, xp) for k, v in value.items()}
    return value


def to_reference(value):
    """Float arrays inside ``value`` as float64 (exact), the reference's input."""
    if isinstance(value, np.ndarray):
        return value.astype(np.float64) if value.dtype.kind == "f" else value
    if isinstance(value, (list, tuple)):
        return type(value)(to_reference(v) for v in value)
    if isinstance(value, dict):
        return {k: to_reference(v) for k, v in value.items()}
    return value


def to_numpy(t) -> np.ndarray:
    v = t._value if isinstance(t, tf.Tensor) else t
    if type(v).__module__.startswith("cupy"):
        return v.get()  # syncs device
    return np.asarray(v)


def as_list(out) -> list:
    return list(out) if isinstance(out, (list, tuple)) else [out]


def run(row, sample, xp):
    """The op's outputs (a list) for ``sample`` with its arrays on ``xp``."""
    return as_list(row.op(*to_backend(sample.args, xp), **to_backend(sample.kwargs, xp)))


def reference(row, sample) -> list:
    return [np.asarray(r) for r in as_list(row.ref(*to_reference(sample.args),
                                                  **to_reference(sample.kwargs)))]


def tolerance(row, dtype, out_dtype) -> tuple:
    floats = [d for d in (np.dtype(dtype), np.dtype(out_dtype)) if d.kind == "f"]
    least = min(floats, key=lambda d: d.itemsize) if floats else F64
    return row.tolerance(least) if least in DEFAULT_TOL else row.tolerance(F64)


def assert_values(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float, msg=""):
    assert actual.shape == expected.shape, msg
    if actual.dtype.kind == "f" or expected.dtype.kind == "f":
        np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64),
                                   rtol=rtol, atol=atol, equal_nan=True, err_msg=msg)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=msg)


# ---- the table itself --------------------------------------------------------------------------
def test_table_has_every_public_op():
    assert set(OPS_BY_NAME) == REQUIRED


@pytest.mark.parametrize("name", sorted(OPS_BY_NAME))
def test_row_is_complete(name):
    row = OPS_BY_NAME[name]
    counts = [len(samples_of(name, d.name)) for d in row.dtypes]
    assert counts and min(counts) >= 1 and sum(counts) >= 3
    assert list(row.error_inputs()), f"{name}: needs at least one error input"
    for i in row.diff_args:
        assert isinstance(i, int) and i >= 0


# ---- (a) forward against the float64 reference ------------------------------------------------
@pytest.mark.parametrize(("name", "dtype", "index"), CASES)
def test_forward_matches_reference(name, dtype, index, backend):
    row, sample, d = _case(name, dtype, index)
    outs = run(row, sample, backend)
    refs = reference(row, sample)
    assert len(outs) == len(refs)
    rtol, atol = tolerance(row, d, row.expected_dtype(sample, d))
    for k, (o, r) in enumerate(zip(outs, refs)):
        assert_values(to_numpy(o), r, rtol, atol, f"{sample.desc}: output {k}")


# ---- (b) exact output shape and dtype --------------------------------------------------------
@pytest.mark.parametrize(("name", "dtype", "index"), CASES)
def test_output_shape_and_dtype(name, dtype, index, backend):
    row, sample, d = _case(name, dtype, index)
    outs = run(row, sample, backend)
    refs = reference(row, sample)
    want = row.expected_dtype(sample, d)
    device = "/device:CPU:0" if backend is np else "/device:GPU:0"
    assert len(outs) == len(refs)
    for o, r in zip(outs, refs):
        assert type(o) is tf.Tensor
        assert tuple(o.shape) == r.shape, sample.desc
        assert o.dtype == want, sample.desc
        assert o.device == device
        assert isinstance(o._value, backend.ndarray)  # never a numpy scalar


# ---- (c) float64 VJP against central differences --------------------------------------------
def _leaf_paths(args, diff_args) -> list:
    """Positions of the float arrays among the differentiable arguments: (i,) or (i, j) for
    the j-th tensor of a list argument (concat, stack)."""
    paths = []
    for i in diff_args:
        if i >= len(args):
            continue
        a = args[i]
        if isinstance(a, np.ndarray) and a.dtype.kind == "f":
            paths.append((i,))
        elif isinstance(a, (list, tuple)):
            paths += [(i, j) for j, b in enumerate(a)
                      if isinstance(b, np.ndarray) and b.dtype.kind == "f"]
    return paths


def _get(args, path):
    return args[path[0]] if len(path) == 1 else args[path[0]][path[1]]


def _with_leaves(args, paths, values) -> list:
    out = list(args)
    for p in paths:
        if len(p) == 2 and not isinstance(out[p[0]], list):
            out[p[0]] = list(out[p[0]])  # a copy: the cached sample stays as it is
    for p, v in zip(paths, values):
        if len(p) == 1:
            out[p[0]] = v
        else:
            out[p[0]][p[1]] = v
    return out


VJP_CASES = [pytest.param(row.name, i, id=f"{row.name}-{i}")
             for row in OPS if F64 in row.dtypes and row.diff_args
             for i, s in enumerate(samples_of(row.name, "float64"))
             if s.vjp and _leaf_paths(s.args, row.diff_args)]


@pytest.mark.parametrize(("name", "index"), VJP_CASES)
def test_vjp_matches_finite_differences(name, index):
    row, sample, _ = _case(name, "float64", index)
    rng = np.random.default_rng(_seed(name, "vjp", index))
    paths = _leaf_paths(sample.args, row.diff_args)
    x = [_get(sample.args, p) for p in paths]
    v = [rng.standard_normal(a.shape) for a in x]

    def f(values):
        return as_list(row.op(*_with_leaves(sample.args, paths, values), **sample.kwargs))

    u = [rng.standard_normal(tuple(o.shape)) for o in f(x)]
    eps = 1e-6
    plus = f([a + eps * d for a, d in zip(x, v)])
    minus = f([a - eps * d for a, d in zip(x, v)])
    numeric = 0.0
    for uk, p, m in zip(u, plus, minus):
        p, m = to_numpy(p), to_numpy(m)
        same = (p == m) | (np.isnan(p) & np.isnan(m))  # constant inf/NaN (max/mean of nothing)
        with np.errstate(invalid="ignore"):
            numeric += float(np.vdot(uk, np.where(same, 0.0, p - m) / (2 * eps)))

    sources = [tf.convert_to_tensor(a) for a in x]
    with tf.GradientTape() as tape:
        tape.watch(sources)
        outs = f(sources)
    grads = tape.gradient(outs, sources, output_gradients=u)
    analytic = 0.0
    for g, a, d in zip(grads, x, v):
        if g is None:
            continue
        if isinstance(g, tf.IndexedSlices):  # a row gather's gradient, as TF's: densified
            assert tuple(g.dense_shape.numpy()) == a.shape
            g = tf.convert_to_tensor(g)
        assert tuple(g.shape) == a.shape and g.dtype == F64
        analytic += float(np.vdot(to_numpy(g), d))
    assert analytic == pytest.approx(numeric, rel=1e-5, abs=1e-7), sample.desc


# ---- (d) error inputs ----------------------------------------------------------------------------
ERROR_CASES = [pytest.param(row.name, i, id=f"{row.name}-{i}")
               for row in OPS for i, _ in enumerate(row.error_inputs())]


@pytest.mark.parametrize(("name", "index"), ERROR_CASES)
def test_error_input_raises(name, index):
    row = OPS_BY_NAME[name]
    e = list(row.error_inputs())[index]
    with pytest.raises(e.exc, match=e.match):
        row.op(*e.args, **e.kwargs)


# ---- (e) CPU against GPU ------------------------------------------------------------------------
def _on(xp, row, sample):
    previous = tf.backend_name()
    tf.set_backend("cpu" if xp is np else "gpu")
    try:
        outs = run(row, sample, xp)
        return [(tuple(o.shape), o.dtype, to_numpy(o)) for o in outs]
    finally:
        tf.set_backend(previous)


@pytest.mark.gpu
@pytest.mark.parametrize(("name", "dtype", "index"), CASES)
def test_cpu_matches_gpu(name, dtype, index):
    cupy = cupy_if_gpu()
    if cupy is None:
        pytest.skip("needs cupy and a CUDA GPU")
    row, sample, d = _case(name, dtype, index)
    cpu = _on(np, row, sample)
    gpu = _on(cupy, row, sample)
    assert len(cpu) == len(gpu)
    rtol, atol = tolerance(row, d, row.expected_dtype(sample, d))
    for (cs, cd, cv), (gs, gd, gv) in zip(cpu, gpu):
        assert cs == gs and cd == gd, sample.desc
        assert_values(gv, cv, rtol, atol, sample.desc)
