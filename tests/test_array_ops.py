"""The array ops (ipu_gpu/ops/array.py) against the real TensorFlow (CPU): every op-table row
of tests/opdb_array.py (values, dtypes, gradients), strided_slice over many random mask
combinations (values, shapes, which specs are refused, gradients), Tensor.__getitem__ against
TF's indexing and our strided_slice, the pad modes, tile, linspace and second derivatives.
TF is imported only through the ``real_tf`` fixture and these tests skip without it."""

from __future__ import annotations

import functools
import types

import numpy as np
import pytest
from test_opdb import _leaf_paths, _with_leaves, samples_of, to_numpy  # loads opdb first

from opdb_array import ROWS, spec  # noqa: I001  # after opdb, which imports it

import ipu_gpu as tf
from ipu_gpu.errors import InvalidArgumentError
from ipu_gpu.ops import array

ROWS_BY_NAME = {row.name: row for row in ROWS}
TOL = {np.dtype("float16"): 1e-3, np.dtype("float32"): 1e-6, np.dtype("float64"): 1e-12}


def _tf_fn(real_tf, name):
    return functools.reduce(getattr, ROWS_BY_NAME[name].tf_name.split("."), real_tf)


def _tf_kwargs(real_tf, kwargs):
    """numpy dtypes as TF dtypes (TF's eager size reads ``out_type.as_numpy_dtype``)."""
    return {k: real_tf.as_dtype(v) if isinstance(v, np.dtype) else v for k, v in kwargs.items()}


def _as_list(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _assert_same(ours, theirs, what):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.shape == theirs.shape, what
    assert ours.dtype == theirs.dtype, what
    if ours.dtype.kind == "f":
        tol = TOL[ours.dtype]
        np.testing.assert_allclose(ours.astype(np.float64), theirs.astype(np.float64),
                                   rtol=tol, atol=tol, err_msg=what)
    else:
        np.testing.assert_array_equal(ours, theirs, err_msg=what)


# ---- every op-table row against TF ---------------------------------------------------------------
ROW_CASES = [pytest.param(row.name, d.name, i, id=f"{row.name}-{d.name}-{i}")
             for row in ROWS for d in row.dtypes for i in range(len(samples_of(row.name, d.name)))]


@pytest.mark.parametrize(("name", "dtype", "index"), ROW_CASES)
def test_row_matches_tensorflow(name, dtype, index, real_tf):
    sample = samples_of(name, dtype)[index]
    ours = [to_numpy(o) for o in _as_list(ROWS_BY_NAME[name].op(*sample.args, **sample.kwargs))]
    theirs = [np.asarray(t) for t in _as_list(_tf_fn(real_tf, name)(
        *sample.args, **_tf_kwargs(real_tf, sample.kwargs)))]
    assert len(ours) == len(theirs), sample.desc
    for k, (o, t) in enumerate(zip(ours, theirs)):
        _assert_same(o, t, f"{name} {sample.desc}: output {k}")


GRAD_CASES = [pytest.param(row.name, i, id=f"{row.name}-{i}")
              for row in ROWS if row.diff_args and np.dtype("float64") in row.dtypes
              for i, s in enumerate(samples_of(row.name, "float64"))
              if s.vjp and _leaf_paths(s.args, row.diff_args)]


@pytest.mark.parametrize(("name", "index"), GRAD_CASES)
def test_row_gradient_matches_tensorflow(name, index, real_tf):
    row = ROWS_BY_NAME[name]
    sample = samples_of(name, "float64")[index]
    rng = np.random.default_rng(index)
    paths = _leaf_paths(sample.args, row.diff_args)
    x = [sample.args[p[0]] if len(p) == 1 else sample.args[p[0]][p[1]] for p in paths]

    sources = [tf.convert_to_tensor(a) for a in x]
    with tf.GradientTape() as tape:
        tape.watch(sources)
        outs = _as_list(row.op(*_with_leaves(sample.args, paths, sources), **sample.kwargs))
    u = [rng.standard_normal(tuple(o.shape)) for o in outs]
    ours = tape.gradient(outs, sources, output_gradients=u)

    theirs_src = [real_tf.constant(a) for a in x]
    with real_tf.GradientTape() as ttape:
        ttape.watch(theirs_src)
        touts = _as_list(_tf_fn(real_tf, name)(*_with_leaves(sample.args, paths, theirs_src),
                                               **_tf_kwargs(real_tf, sample.kwargs)))
    theirs = ttape.gradient(touts, theirs_src, output_gradients=[real_tf.constant(a) for a in u],
                            unconnected_gradients="zero")
    for k, (g, t) in enumerate(zip(ours, theirs)):
        g = np.zeros_like(x[k]) if g is None else to_numpy(g)
        _assert_same(g, np.asarray(t), f"{name} {sample.desc}: gradient {k}")


# ---- strided_slice: random specs and masks -------------------------------------------------------
def _random_spec(rng):
    rank = int(rng.integers(0, 4))
    shape = tuple(int(d) for d in rng.integers(0, 5, rank))
    n = int(rng.integers(0, 5))
    begin = rng.integers(-6, 7, n)
    end = rng.integers(-6, 7, n)
    strides = rng.choice([-3, -2, -1, 1, 1, 2, 3], n)
    if n and rng.random() < 0.05:
        strides[rng.integers(n)] = 0

    def bits(p):
        return int(sum(1 << i for i in range(n + 1) if rng.random() < p))

    ellipsis = 0
    if n and rng.random() < 0.4:
        ellipsis = 1 << int(rng.integers(n))
        if rng.random() < 0.1:
            ellipsis |= 1 << int(rng.integers(n + 1))
    masks = dict(begin_mask=bits(0.3), end_mask=bits(0.3), ellipsis_mask=ellipsis,
                 new_axis_mask=bits(0.2), shrink_axis_mask=bits(0.2))
    return shape, (begin.astype(np.int32), end.astype(np.int32), strides.astype(np.int32)), masks


@pytest.mark.parametrize("seed", range(8))
def test_strided_slice_random_masks_match_tensorflow(seed, real_tf):
    """Values, shapes, refusals (InvalidArgumentError on both sides) and gradients of
    strided_slice over random begin/end/strides and all five masks, on inputs of rank 0-3
    with sizes 0-4 (empty and length-1 dimensions included)."""
    rng = np.random.default_rng(1000 + seed)
    checked = refused = 0
    for case in range(150):
        shape, args, masks = _random_spec(rng)
        x = rng.standard_normal(shape)
        what = f"case {case}: shape {shape}, spec {[a.tolist() for a in args]}, {masks}"
        try:
            theirs = np.asarray(real_tf.strided_slice(x, *args, **masks))
        except real_tf.errors.InvalidArgumentError:
            with pytest.raises(InvalidArgumentError):
                array.strided_slice(x, *args, **masks)
            refused += 1
            continue
        xt = tf.convert_to_tensor(x)
        with tf.GradientTape() as tape:
            tape.watch(xt)
            out = array.strided_slice(xt, *args, **masks)
        _assert_same(to_numpy(out), theirs, what)
        u = rng.standard_normal(theirs.shape)
        g = to_numpy(tape.gradient(out, xt, output_gradients=u))
        xs = real_tf.constant(x)
        with real_tf.GradientTape() as ttape:
            ttape.watch(xs)
            tout = real_tf.strided_slice(xs, *args, **masks)
        _assert_same(g, np.asarray(ttape.gradient(tout, xs, output_gradients=u)), what)
        checked += 1
    assert checked > 40 and refused > 10  # both kinds of spec were exercised


# ---- Tensor.__getitem__ against TF's indexing and our strided_slice ------------------------------
def _random_key(rng, shape):
    parts = []
    dims = list(shape)
    for _ in range(int(rng.integers(0, len(shape) + 2))):
        r = rng.random()
        d = dims.pop(0) if dims else 3
        if r < 0.25:
            parts.append(int(rng.integers(-d, d)) if d else 0)
        elif r < 0.4:
            parts.append(None)
            dims.insert(0, d)
        elif r < 0.5 and Ellipsis not in parts:
            parts.append(Ellipsis)
            dims = dims[-int(rng.integers(0, len(dims) + 1)):] if dims else []
        else:
            def bound():
                return None if rng.random() < 0.3 else int(rng.integers(-6, 7))
            step = None if rng.random() < 0.4 else int(rng.choice([-3, -2, -1, 1, 2, 3]))
            parts.append(slice(bound(), bound(), step))
    return tuple(parts)


def _tf_error_class(real_tf, err):
    """The ipu_gpu class for an error TF raised: InvalidArgumentError, else the same builtin."""
    if isinstance(err, real_tf.errors.InvalidArgumentError):
        return InvalidArgumentError
    return type(err)


@pytest.mark.parametrize("seed", range(4))
def test_getitem_matches_tensorflow_and_strided_slice(seed, real_tf):
    """For basic keys (ints, slices, None, one ...): ``array.tensor_getitem`` gives TF's
    values, gradients and error classes, and today's ``Tensor.__getitem__`` (numpy indexing,
    ops/indexing.py) TF's values and gradients, and a ValueError where TF refuses the key."""
    rng = np.random.default_rng(2000 + seed)
    checked = 0
    for case in range(150):
        shape = tuple(int(d) for d in rng.integers(1, 5, int(rng.integers(1, 4))))
        x = rng.standard_normal(shape)
        key = _random_key(rng, shape)
        what = f"case {case}: shape {shape}, key {key!r}"
        try:
            theirs = np.asarray(real_tf.constant(x)[key])
        except (real_tf.errors.InvalidArgumentError, ValueError, TypeError) as err:
            with pytest.raises(_tf_error_class(real_tf, err)):
                array.tensor_getitem(x, key)
            with pytest.raises(ValueError):
                tf.convert_to_tensor(x)[key]
            continue
        xt = tf.convert_to_tensor(x)
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(xt)
            ours = xt[key]
            tf_style = array.tensor_getitem(xt, key)
        _assert_same(to_numpy(ours), theirs, what)
        _assert_same(to_numpy(tf_style), theirs, what)
        args, masks = spec(key)
        _assert_same(to_numpy(array.strided_slice(x, *args, **masks)), theirs, what)
        u = rng.standard_normal(theirs.shape)
        xs = real_tf.constant(x)
        with real_tf.GradientTape() as ttape:
            ttape.watch(xs)
            tout = xs[key]
        want = np.asarray(ttape.gradient(tout, xs, output_gradients=u))
        _assert_same(to_numpy(tape.gradient(ours, xt, output_gradients=u)), want, what)
        _assert_same(to_numpy(tape.gradient(tf_style, xt, output_gradients=u)), want, what)
        checked += 1
    assert checked > 80


GETITEM_KEYS = [
    [0, 1], [1], [-1, slice(None, None, -1)], [Ellipsis, 0], (), 1, np.int64(1),
    slice(None, None, -2), (None, 1, Ellipsis, None), [0, 1, 2], 5, (0, 3), [Ellipsis, Ellipsis],
    slice(None, None, 0), 1.5, (slice(0.5, None),), True, np.asarray([True, False]),
    (slice(None), slice(None), 0),
]


@pytest.mark.parametrize("key", GETITEM_KEYS, ids=repr)
def test_tensor_getitem_matches_tensorflow(key, real_tf):
    """``array.tensor_getitem``: TF's answer for list keys (a tuple), 0-d integer Tensors,
    bool masks, and TF's error classes for the keys TF refuses."""
    x = np.arange(6.0).reshape(2, 3)
    try:
        theirs = np.asarray(real_tf.constant(x)[key])
    except (real_tf.errors.InvalidArgumentError, ValueError, TypeError) as err:
        with pytest.raises(_tf_error_class(real_tf, err)):
            array.tensor_getitem(x, key)
        return
    _assert_same(to_numpy(array.tensor_getitem(x, key)), theirs, repr(key))
    if isinstance(key, int) and not isinstance(key, bool):
        index = tf.constant(np.int32(key))  # a 0-d int Tensor indexes like the int
        _assert_same(to_numpy(array.tensor_getitem(x, index)), theirs, "Tensor index")


@pytest.mark.xfail(strict=True, reason="Tensor.__getitem__ (ops/indexing.py) indexes with a "
                                       "Python list numpy's way (rows 0 and 1); TF reads the "
                                       "list as the tuple x[0, 1]; array.tensor_getitem does")
def test_getitem_list_key_is_a_tuple_as_in_tensorflow(real_tf):
    x = np.arange(6.0).reshape(2, 3)
    theirs = np.asarray(real_tf.constant(x)[[0, 1]])
    _assert_same(to_numpy(tf.convert_to_tensor(x)[[0, 1]]), theirs, "x[[0, 1]]")


def test_tensor_getitem_keeps_numpy_advanced_indexing():
    """Integer arrays inside a tuple key (TF: TypeError) still index numpy's way."""
    x = np.arange(12.0).reshape(3, 4)
    key = (np.asarray([2, 0, 2]), slice(1, 3))
    np.testing.assert_array_equal(to_numpy(array.tensor_getitem(x, key)), x[key])
    np.testing.assert_array_equal(to_numpy(array.tensor_getitem(x, (slice(None), [3, 3]))),
                                  x[:, [3, 3]])


# ---- pad modes, tile, linspace -------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["CONSTANT", "REFLECT", "SYMMETRIC"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_pad_modes_match_tensorflow(mode, dtype, real_tf):
    """Random shapes and paddings up to each mode's limit: values and the gradient (TF's
    PadGrad / MirrorPadGrad)."""
    rng = np.random.default_rng(len(mode) + len(dtype))
    for case in range(40):
        shape = tuple(int(d) for d in rng.integers(1, 5, int(rng.integers(1, 4))))
        x = rng.standard_normal(shape).astype(dtype)
        limit = {"CONSTANT": 4, "REFLECT": 0, "SYMMETRIC": 1}[mode]
        paddings = [[int(rng.integers(0, d + limit if mode != "CONSTANT" else limit + 1))
                     for _ in range(2)] for d in shape]
        cv = float(rng.standard_normal())
        kw = {"constant_values": cv} if mode == "CONSTANT" else {}
        what = f"case {case}: {mode} {shape} {paddings}"
        xt = tf.convert_to_tensor(x)
        with tf.GradientTape() as tape:
            tape.watch(xt)
            ours = array.pad(xt, paddings, mode, **kw)
        xs = real_tf.constant(x)
        with real_tf.GradientTape() as ttape:
            ttape.watch(xs)
            theirs = real_tf.pad(xs, paddings, mode, **kw)
        _assert_same(to_numpy(ours), np.asarray(theirs), what)
        u = rng.standard_normal(theirs.shape).astype(dtype)
        _assert_same(to_numpy(tape.gradient(ours, xt, output_gradients=u)),
                     np.asarray(ttape.gradient(theirs, xs, output_gradients=u)), what)


def test_pad_refusals_match_tensorflow(real_tf):
    """Paddings at and past each mode's limit: refused by both or by neither."""
    x = np.zeros((2, 3), np.float32)
    for mode in ("REFLECT", "SYMMETRIC", "CONSTANT"):
        for before in range(5):
            for after in (0, 2, 3):
                paddings = [[before, 0], [0, after]]
                try:
                    real_tf.pad(x, paddings, mode)
                except real_tf.errors.InvalidArgumentError:
                    with pytest.raises(InvalidArgumentError):
                        array.pad(x, paddings, mode)
                else:
                    array.pad(x, paddings, mode)


def test_tile_gradients_match_tensorflow(real_tf):
    rng = np.random.default_rng(7)
    for case in range(40):
        shape = tuple(int(d) for d in rng.integers(0, 4, int(rng.integers(0, 4))))
        multiples = [int(m) for m in rng.integers(0, 4, len(shape))]
        x = rng.standard_normal(shape)
        xt = tf.convert_to_tensor(x)
        with tf.GradientTape() as tape:
            tape.watch(xt)
            ours = array.tile(xt, multiples)
        xs = real_tf.constant(x)
        with real_tf.GradientTape() as ttape:
            ttape.watch(xs)
            theirs = real_tf.tile(xs, np.asarray(multiples, np.int32))
        what = f"case {case}: {shape} x {multiples}"
        _assert_same(to_numpy(ours), np.asarray(theirs), what)
        u = rng.standard_normal(theirs.shape)
        _assert_same(to_numpy(tape.gradient(ours, xt, output_gradients=u)),
                     np.asarray(ttape.gradient(theirs, xs, output_gradients=u)), what)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "int64"])
def test_linspace_matches_tensorflow_bitwise(dtype, real_tf):
    """TF's formula (start + i * delta in the output dtype, stop exact) to the last bit, for
    long ranges where the rounding of every step shows."""
    rng = np.random.default_rng(3)
    for num in (0, 1, 2, 3, 50, 1001):
        lo, hi = rng.uniform(-100, 100, 2)
        start, stop = np.asarray([lo, hi]).astype(dtype), np.asarray([hi, lo]).astype(dtype)
        ours = to_numpy(array.linspace(start, stop, num, axis=-1))
        theirs = np.asarray(real_tf.linspace(start, stop, num, axis=-1))
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        np.testing.assert_array_equal(ours, theirs, err_msg=f"num {num}")


# ---- second derivatives --------------------------------------------------------------------------
# ipu_gpu's array ops beside reduce_sum, shaped like TF's top level (the façade exports them)
LIB = types.SimpleNamespace(reduce_sum=tf.reduce_sum, **{n: getattr(array, n)
                                                        for n in array.__all__})
SECOND_ORDER = {
    "tile": lambda lib, x: lib.tile(x, [2, 3]),
    "pad": lambda lib, x: lib.pad(x, [[1, 2], [0, 1]], constant_values=0.5),
    "pad_reflect": lambda lib, x: lib.pad(x, [[2, 1], [1, 3]], "REFLECT"),
    "pad_symmetric": lambda lib, x: lib.pad(x, [[3, 0], [2, 4]], "SYMMETRIC"),
    "slice": lambda lib, x: lib.slice(x, [1, 1], [2, -1]),
    "strided_slice": lambda lib, x: lib.strided_slice(x, [3, 0, 0], [0, 0, 5], [-1, 1, 2],
                                                      end_mask=2, new_axis_mask=2),
    "unstack": lambda lib, x: lib.unstack(x, axis=1)[2],
    "broadcast_to": lambda lib, x: lib.broadcast_to(x, [2, 4, 5]),
    "reverse": lambda lib, x: lib.reverse(x, [0, -1]),
    "roll": lambda lib, x: lib.roll(x, [2, -1], [0, 1]),
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_second_derivatives_match_tensorflow(name, real_tf):
    """d/dx <v, d/dx sum(w * f(x)**2)> through nested tapes, against TF's."""
    rng = np.random.default_rng(len(name))
    fn = SECOND_ORDER[name]
    x = rng.standard_normal((4, 5))
    w = rng.standard_normal(tuple(fn(LIB, tf.convert_to_tensor(x)).shape))
    v = rng.standard_normal(x.shape)

    def hvp(lib, tape_cls, xv):
        with tape_cls() as outer:
            outer.watch(xv)
            with tape_cls() as inner:
                inner.watch(xv)
                y = lib.reduce_sum(w * fn(lib, xv) ** 2)
            g = inner.gradient(y, xv)
            z = lib.reduce_sum(g * v)
        return outer.gradient(z, xv)

    ours = hvp(LIB, tf.GradientTape, tf.convert_to_tensor(x))
    theirs = hvp(real_tf, real_tf.GradientTape, real_tf.constant(x))
    _assert_same(to_numpy(ours), np.asarray(theirs), name)
