"""ipu_gpu.data (tf.data) against plain-Python/numpy references and against the real tf.data:
element values, element_spec shapes and dtypes, cardinality, errors; shuffle semantics and
determinism; prefetch threads; TF1 iterators; TensorShape/TensorSpec semantics."""

from __future__ import annotations

import gc
import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest

import ipu_gpu
import ipu_gpu.data as idata
from ipu_gpu import errors
from ipu_gpu.core import spec as ispec
from ipu_gpu import errors as io_errors

G = np.random.default_rng(20260)
X = G.standard_normal((11, 3))  # float64
Y = G.integers(-5, 5, 11).astype(np.int32)
W = G.integers(0, 100, (11, 2, 2)).astype(np.uint8)


def ours():
    return SimpleNamespace(data=idata, tf=ipu_gpu, TensorSpec=ispec.TensorSpec,
                           string=ispec.string, int32=np.dtype(np.int32),
                           int64=np.dtype(np.int64), float32=np.dtype(np.float32))


def theirs(tf):
    return SimpleNamespace(data=tf.data, tf=tf, TensorSpec=tf.TensorSpec, string=tf.string,
                           int32=tf.int32, int64=tf.int64, float32=tf.float32)


def _ragged():
    return [[1], [1, 2, 3], [], [4, 5], [6]]


# name -> (recipe(E) -> dataset, reference elements or None)
CASES = {
    "slices_tuple": (lambda E: E.data.Dataset.from_tensor_slices((X, Y)),
                     [(X[i], Y[i]) for i in range(11)]),
    "slices_dict": (lambda E: E.data.Dataset.from_tensor_slices({"b": X, "a": W}),
                    [{"b": X[i], "a": W[i]} for i in range(11)]),
    "slices_nested": (lambda E: E.data.Dataset.from_tensor_slices((X, {"y": Y, "w": W})),
                      [(X[i], {"y": Y[i], "w": W[i]}) for i in range(11)]),
    "slices_pylist": (lambda E: E.data.Dataset.from_tensor_slices([1, 2, 3]),
                      [np.int32(1), np.int32(2), np.int32(3)]),
    "slices_list_of_tuples": (lambda E: E.data.Dataset.from_tensor_slices([(1, 2), (3, 4)]),
                              [np.array([1, 2], np.int32), np.array([3, 4], np.int32)]),
    "slices_floats": (lambda E: E.data.Dataset.from_tensor_slices([0.5, 1.5]),
                      [np.float32(0.5), np.float32(1.5)]),
    "slices_strings": (lambda E: E.data.Dataset.from_tensor_slices(["a", "bc", ""]),
                       [b"a", b"bc", b""]),
    "slices_empty": (lambda E: E.data.Dataset.from_tensor_slices(np.zeros((0, 2))), []),
    "from_tensors": (lambda E: E.data.Dataset.from_tensors((X, [1, 2])),
                     [(X, np.array([1, 2], np.int32))]),
    "range": (lambda E: E.data.Dataset.range(5), [np.int64(i) for i in range(5)]),
    "range_step": (lambda E: E.data.Dataset.range(2, 10, 3), [np.int64(i) for i in (2, 5, 8)]),
    "range_negative": (lambda E: E.data.Dataset.range(5, 0, -2),
                       [np.int64(i) for i in (5, 3, 1)]),
    "range_empty": (lambda E: E.data.Dataset.range(0), []),
    "range_int32": (lambda E: E.data.Dataset.range(3, output_type=E.int32),
                    [np.int32(i) for i in range(3)]),
    "batch_keep": (lambda E: E.data.Dataset.from_tensor_slices((X, Y)).batch(4),
                   [(X[i:i + 4], Y[i:i + 4]) for i in range(0, 11, 4)]),
    "batch_drop": (lambda E: E.data.Dataset.from_tensor_slices((X, Y)).batch(4, True),
                   [(X[i:i + 4], Y[i:i + 4]) for i in range(0, 8, 4)]),
    "batch_larger_keep": (lambda E: E.data.Dataset.from_tensor_slices(X).batch(20), [X]),
    "batch_larger_drop": (lambda E: E.data.Dataset.from_tensor_slices(X).batch(20, True), []),
    "batch_empty": (lambda E: E.data.Dataset.range(0).batch(2), []),
    "batch_strings": (lambda E: E.data.Dataset.from_tensor_slices(["a", "b", "c"]).batch(2),
                      [np.array([b"a", b"b"], object), np.array([b"c"], object)]),
    "batch_generic_path": (lambda E: E.data.Dataset.from_tensor_slices(X).map(
        lambda x: x * 2.0).batch(3), [2.0 * X[i:i + 3] for i in range(0, 11, 3)]),
    "batch_of_batch": (lambda E: E.data.Dataset.range(12).batch(3).batch(2, True),
                       [np.arange(6).reshape(2, 3), np.arange(6, 12).reshape(2, 3)]),
    "padded_batch": (lambda E: E.data.Dataset.from_generator(
        _ragged, output_signature=E.TensorSpec([None], E.int32)).padded_batch(2),
        [np.array([[1, 0, 0], [1, 2, 3]], np.int32), np.array([[0, 0], [4, 5]], np.int32),
         np.array([[6]], np.int32)]),
    "padded_batch_shapes": (lambda E: E.data.Dataset.from_generator(
        _ragged, output_signature=E.TensorSpec([None], E.int32)).padded_batch(
        3, padded_shapes=[4], padding_values=np.int32(-1), drop_remainder=True),
        [np.array([[1, -1, -1, -1], [1, 2, 3, -1], [-1, -1, -1, -1]], np.int32)]),
    "padded_batch_strings": (lambda E: E.data.Dataset.from_tensor_slices(
        [["a"], ["b"]]).padded_batch(2, padded_shapes=[3]),
        [np.array([[b"a", b"", b""], [b"b", b"", b""]], object)]),
    "unbatch": (lambda E: E.data.Dataset.from_tensors((W[:3], Y[:3])).unbatch(),
                [(W[i], Y[i]) for i in range(3)]),
    "unbatch_of_batch": (lambda E: E.data.Dataset.range(7).batch(3).unbatch(),
                         [np.int64(i) for i in range(7)]),
    "repeat_0": (lambda E: E.data.Dataset.range(3).repeat(0), []),
    "repeat_2": (lambda E: E.data.Dataset.range(3).repeat(2),
                 [np.int64(i) for i in (0, 1, 2, 0, 1, 2)]),
    "repeat_forever_take": (lambda E: E.data.Dataset.range(3).repeat().take(7),
                            [np.int64(i % 3) for i in range(7)]),
    "repeat_empty_forever": (lambda E: E.data.Dataset.range(0).repeat(), []),
    "repeat_then_batch": (lambda E: E.data.Dataset.range(5).repeat(2).batch(4),
                          [np.array([0, 1, 2, 3]), np.array([4, 0, 1, 2]), np.array([3, 4])]),
    "take_minus1": (lambda E: E.data.Dataset.range(3).take(-1), [np.int64(i) for i in range(3)]),
    "take_0": (lambda E: E.data.Dataset.range(3).take(0), []),
    "take_more": (lambda E: E.data.Dataset.range(3).take(100), [np.int64(i) for i in range(3)]),
    "take_generic": (lambda E: E.data.Dataset.range(9).filter(lambda x: x % 2 == 0).take(2),
                     [np.int64(0), np.int64(2)]),
    "skip_minus1": (lambda E: E.data.Dataset.range(3).skip(-1), []),
    "skip_2": (lambda E: E.data.Dataset.range(5).skip(2), [np.int64(i) for i in (2, 3, 4)]),
    "skip_generic": (lambda E: E.data.Dataset.range(6).map(lambda x: x + 1).skip(4),
                     [np.int64(5), np.int64(6)]),
    "shard": (lambda E: E.data.Dataset.range(10).shard(3, 1),
              [np.int64(i) for i in (1, 4, 7)]),
    "shard_generic": (lambda E: E.data.Dataset.range(10).map(lambda x: x).shard(4, 3),
                      [np.int64(3), np.int64(7)]),
    "concatenate": (lambda E: E.data.Dataset.from_tensor_slices(X[:2]).concatenate(
        E.data.Dataset.from_tensor_slices(X[5:7])), [X[0], X[1], X[5], X[6]]),
    "enumerate": (lambda E: E.data.Dataset.from_tensor_slices(Y[:3]).enumerate(start=5),
                  [(np.int64(5 + i), Y[i]) for i in range(3)]),
    "zip": (lambda E: E.data.Dataset.zip((E.data.Dataset.range(3), {
        "x": E.data.Dataset.from_tensor_slices(X)})),
        [(np.int64(i), {"x": X[i]}) for i in range(3)]),
    "zip_varargs": (lambda E: E.data.Dataset.zip(E.data.Dataset.range(2),
                                                 E.data.Dataset.range(5, 9)),
                    [(np.int64(0), np.int64(5)), (np.int64(1), np.int64(6))]),
    "map_tuple": (lambda E: E.data.Dataset.from_tensor_slices((X, Y)).map(
        lambda x, y: (x * 2.0, E.tf.cast(y, E.float32))),
        [(2.0 * X[i], np.float32(Y[i])) for i in range(11)]),
    "map_list_becomes_tuple": (lambda E: E.data.Dataset.range(3).map(lambda x: [x, x + 1]),
                               [(np.int64(i), np.int64(i + 1)) for i in range(3)]),
    "map_dict": (lambda E: E.data.Dataset.from_tensor_slices({"a": Y}).map(
        lambda d: {"twice": d["a"] * 2, "same": d["a"]}),
        [{"twice": 2 * Y[i], "same": Y[i]} for i in range(11)]),
    "map_python_float": (lambda E: E.data.Dataset.range(2).map(lambda x: 1.5),
                         [np.float32(1.5)] * 2),
    "map_batched": (lambda E: E.data.Dataset.range(10).batch(3).map(lambda x: x * 2),
                    [2 * np.arange(i, min(i + 3, 10)) for i in range(0, 10, 3)]),
    "map_parallel": (lambda E: E.data.Dataset.range(40).map(lambda x: x * 3,
                                                            num_parallel_calls=3),
                     [np.int64(3 * i) for i in range(40)]),
    "map_autotune": (lambda E: E.data.Dataset.range(5).map(
        lambda x: x - 1, num_parallel_calls=E.data.AUTOTUNE),
        [np.int64(i - 1) for i in range(5)]),
    "filter": (lambda E: E.data.Dataset.from_tensor_slices(Y).filter(lambda y: y > 0),
               [v for v in Y if v > 0]),
    "flat_map": (lambda E: E.data.Dataset.range(4).flat_map(
        lambda x: E.data.Dataset.range(x)), [np.int64(j) for i in range(4) for j in range(i)]),
    "interleave": (lambda E: E.data.Dataset.range(1, 6).interleave(
        lambda x: E.data.Dataset.from_tensors(x).repeat(x), cycle_length=2, block_length=2),
        [np.int64(v) for v in (1, 2, 2, 3, 3, 3, 4, 4, 5, 5, 4, 4, 5, 5, 5)]),
    "interleave_3_1": (lambda E: E.data.Dataset.range(4).interleave(
        lambda x: E.data.Dataset.range(10 * x, 10 * x + x), cycle_length=3), None),
    "cache_repeat": (lambda E: E.data.Dataset.range(3).cache().repeat(2),
                     [np.int64(i) for i in (0, 1, 2, 0, 1, 2)]),
    "cache_generic": (lambda E: E.data.Dataset.range(3).map(lambda x: x * 2).cache().repeat(2),
                      [np.int64(i) for i in (0, 2, 4, 0, 2, 4)]),
    "prefetch": (lambda E: E.data.Dataset.from_tensor_slices(X).prefetch(2), list(X)),
    "prefetch_0": (lambda E: E.data.Dataset.range(3).prefetch(0),
                   [np.int64(i) for i in range(3)]),
    "prefetch_autotune_batch": (lambda E: E.data.Dataset.from_tensor_slices(W).batch(
        5).prefetch(E.data.AUTOTUNE), [W[i:i + 5] for i in range(0, 11, 5)]),
    "apply": (lambda E: E.data.Dataset.range(5).apply(lambda d: d.skip(3)),
              [np.int64(3), np.int64(4)]),
    "with_options": (lambda E: E.data.Dataset.range(2).with_options(E.data.Options()),
                     [np.int64(0), np.int64(1)]),
    "generator_types": (lambda E: E.data.Dataset.from_generator(
        lambda: iter([(1, [2.0, 3.0]), (4, [5.0, 6.0])]), output_types=(E.int32, E.float32),
        output_shapes=((), (2,))),
        [(np.int32(1), np.array([2, 3], np.float32)), (np.int32(4), np.array([5, 6],
                                                                            np.float32))]),
    "generator_signature_dict": (lambda E: E.data.Dataset.from_generator(
        lambda: ({"a": np.full(2, i, np.float32)} for i in range(3)),
        output_signature={"a": E.TensorSpec([2], E.float32)}),
        [{"a": np.full(2, i, np.float32)} for i in range(3)]),
    "generator_args": (lambda E: E.data.Dataset.from_generator(
        lambda n: iter(range(n)), output_types=E.int64, args=(3,)),
        [np.int64(i) for i in range(3)]),
}


def _assert_same(got, want, where="element"):
    if isinstance(want, dict):
        assert isinstance(got, dict) and list(got) == list(want), f"{where}: {got!r} {want!r}"
        for k in want:
            _assert_same(got[k], want[k], f"{where}[{k!r}]")
    elif isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), f"{where}: {got!r} {want!r}"
        for i, (g, w) in enumerate(zip(got, want)):
            _assert_same(g, w, f"{where}[{i}]")
    elif isinstance(want, bytes):
        assert got == want, where
    else:
        g, w = np.asarray(got), np.asarray(want)
        assert g.shape == w.shape, f"{where}: shape {g.shape} != {w.shape}"
        assert g.dtype == w.dtype, f"{where}: dtype {g.dtype} != {w.dtype}"
        if g.dtype == object:
            assert g.tolist() == w.tolist(), where
        else:
            np.testing.assert_array_equal(g, w, err_msg=where)


def _assert_same_list(got, want):
    assert len(got) == len(want), f"{len(got)} elements != {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        _assert_same(g, w, f"element {i}")


def _spec_key(spec):
    """A comparable form of a (TF or ours) element_spec: (shape list or None, dtype name)."""
    if isinstance(spec, dict):
        return {k: _spec_key(v) for k, v in spec.items()}
    if isinstance(spec, tuple):
        return tuple(_spec_key(s) for s in spec)
    shape = None if spec.shape.rank is None else list(spec.shape.as_list())
    d = spec.dtype
    name = "string" if d == np.dtype(object) or getattr(d, "name", "") == "string" else d.name
    return shape, name


def _card(ds) -> int:
    return int(np.asarray(ds.cardinality()))


# ---- against the references -----------------------------------------------------------------
@pytest.mark.parametrize("name", [n for n, (_, ref) in CASES.items() if ref is not None])
def test_against_reference(name):
    recipe, ref = CASES[name]
    ds = recipe(ours())
    _assert_same_list(list(ds.as_numpy_iterator()), ref)
    _assert_same_list(list(ds.as_numpy_iterator()), ref)  # a second iteration, same elements


# ---- against real tf.data -------------------------------------------------------------------
@pytest.mark.parametrize("name", list(CASES))
def test_against_tensorflow(name, real_tf):
    recipe = CASES[name][0]
    mine, tfs = recipe(ours()), recipe(theirs(real_tf))
    assert _spec_key(mine.element_spec) == _spec_key(tfs.element_spec)
    assert _card(mine) == int(tfs.cardinality().numpy())
    _assert_same_list(list(mine.as_numpy_iterator()), list(tfs.as_numpy_iterator()))


CARDINALITY_CASES = {
    "unbatch_unknown_batch": lambda E: E.data.Dataset.from_tensor_slices(X).batch(2).unbatch(),
    "unbatch_known_batch": lambda E: E.data.Dataset.from_tensor_slices(X).batch(
        2, True).unbatch(),
    "unbatch_infinite": lambda E: E.data.Dataset.from_tensor_slices(W).repeat().unbatch(),
    "take_unknown_0": lambda E: E.data.Dataset.range(5).filter(lambda x: True).take(0),
    "take_infinite": lambda E: E.data.Dataset.range(5).repeat().take(3),
    "take_minus5": lambda E: E.data.Dataset.range(3).take(-5),
    "skip_infinite": lambda E: E.data.Dataset.range(5).repeat().skip(-1),
    "repeat_0_unknown": lambda E: E.data.Dataset.range(5).filter(lambda x: True).repeat(0),
    "repeat_unknown": lambda E: E.data.Dataset.range(5).filter(lambda x: True).repeat(),
    "zip_unknown": lambda E: E.data.Dataset.zip((E.data.Dataset.range(5).filter(
        lambda x: True), E.data.Dataset.range(3))),
    "zip_infinite": lambda E: E.data.Dataset.zip((E.data.Dataset.range(5).repeat(),
                                                  E.data.Dataset.range(3))),
    "concat_infinite": lambda E: E.data.Dataset.range(5).filter(lambda x: True).concatenate(
        E.data.Dataset.range(3).repeat()),
    "shard_each": lambda E: E.data.Dataset.range(7).shard(3, 2),
    "batch_infinite": lambda E: E.data.Dataset.range(7).repeat().batch(2),
    "padded_batch": lambda E: E.data.Dataset.range(7).padded_batch(3),
    "shuffle_infinite": lambda E: E.data.Dataset.range(3).repeat().shuffle(2),
    "enumerate": lambda E: E.data.Dataset.range(7).enumerate(),
    "generator": lambda E: E.data.Dataset.from_generator(lambda: iter([1]),
                                                         output_types=E.int32),
    "map": lambda E: E.data.Dataset.range(7).map(lambda x: x),
    "range_huge": lambda E: E.data.Dataset.range(2**40).take(2),
}


@pytest.mark.parametrize("name", list(CARDINALITY_CASES))
def test_cardinality_against_tensorflow(name, real_tf):
    recipe = CARDINALITY_CASES[name]
    mine, tfs = recipe(ours()), recipe(theirs(real_tf))
    assert _card(mine) == int(tfs.cardinality().numpy())
    assert _spec_key(mine.element_spec) == _spec_key(tfs.element_spec)


def test_cardinality_constants(real_tf):
    assert idata.INFINITE_CARDINALITY == real_tf.data.INFINITE_CARDINALITY == -1
    assert idata.UNKNOWN_CARDINALITY == real_tf.data.UNKNOWN_CARDINALITY == -2
    assert idata.experimental.INFINITE_CARDINALITY == -1
    assert idata.experimental.UNKNOWN_CARDINALITY == -2
    assert idata.AUTOTUNE == idata.experimental.AUTOTUNE == real_tf.data.AUTOTUNE
    ds = idata.Dataset.range(4)
    assert int(idata.experimental.cardinality(ds)) == 4 and len(ds) == 4
    with pytest.raises(TypeError, match="infinite"):
        len(ds.repeat())
    with pytest.raises(TypeError, match="unknown"):
        len(ds.filter(lambda x: True))


SPEC_CASES = {
    "batch_drop_known": lambda E: E.data.Dataset.from_tensor_slices(W).batch(4, True),
    "batch_keep_none": lambda E: E.data.Dataset.from_tensor_slices(W).batch(4),
    "map_after_batch_keeps_none": lambda E: E.data.Dataset.from_tensor_slices(W).batch(4).map(
        lambda w: E.tf.cast(w, E.float32) / 255.0),
    "map_after_batch_drop": lambda E: E.data.Dataset.from_tensor_slices(W).batch(4, True).map(
        lambda w: E.tf.reduce_sum(E.tf.cast(w, E.float32), axis=0)),
    "padded_none": lambda E: E.data.Dataset.from_tensor_slices(X).padded_batch(
        2, padded_shapes=[5]),
    "generator_unknown_rank": lambda E: E.data.Dataset.from_generator(
        lambda: iter([]), output_types=E.int32),
    "generator_shapes": lambda E: E.data.Dataset.from_generator(
        lambda: iter([]), output_types=(E.int32, E.int32), output_shapes=([2, None], [])),
    "concat_relaxes": lambda E: E.data.Dataset.from_tensor_slices(np.zeros((2, 3))).concatenate(
        E.data.Dataset.from_tensor_slices(np.zeros((2, 4)))),
    "unbatch_of_none": lambda E: E.data.Dataset.range(4).batch(2).unbatch(),
    "textline_like_strings": lambda E: E.data.Dataset.from_tensor_slices(["x"]).batch(1),
    "zip_dict": lambda E: E.data.Dataset.zip({"a": E.data.Dataset.range(2),
                                              "b": E.data.Dataset.from_tensors(X)}),
    "enumerate_batch": lambda E: E.data.Dataset.range(5).batch(2).enumerate(),
    "interleave_spec": lambda E: E.data.Dataset.range(3).interleave(
        lambda x: E.data.Dataset.from_tensors(X).map(lambda v: v * 1.0), cycle_length=1),
}


@pytest.mark.parametrize("name", list(SPEC_CASES))
def test_element_spec_against_tensorflow(name, real_tf):
    recipe = SPEC_CASES[name]
    assert _spec_key(recipe(ours()).element_spec) == _spec_key(
        recipe(theirs(real_tf)).element_spec)


# ---- errors ---------------------------------------------------------------------------------
ERROR_CASES = {
    "batch_size_0": lambda E: E.data.Dataset.range(3).batch(0),
    "batch_size_negative": lambda E: E.data.Dataset.range(3).batch(-1),
    "padded_batch_size_0": lambda E: E.data.Dataset.range(3).padded_batch(0),
    "shuffle_buffer_0": lambda E: E.data.Dataset.range(3).shuffle(0),
    "shuffle_buffer_negative": lambda E: E.data.Dataset.range(3).shuffle(-1),
    "shard_0": lambda E: E.data.Dataset.range(3).shard(0, 0),
    "shard_index_high": lambda E: E.data.Dataset.range(3).shard(2, 2),
    "shard_index_negative": lambda E: E.data.Dataset.range(3).shard(2, -1),
    "prefetch_negative": lambda E: E.data.Dataset.range(3).prefetch(-5),
    "map_parallel_0": lambda E: E.data.Dataset.range(3).map(lambda x: x, num_parallel_calls=0),
    "interleave_cycle_0": lambda E: E.data.Dataset.range(3).interleave(
        lambda x: E.data.Dataset.range(x), cycle_length=0),
    "interleave_block_0": lambda E: E.data.Dataset.range(3).interleave(
        lambda x: E.data.Dataset.range(x), block_length=0),
    "range_step_0": lambda E: E.data.Dataset.range(1, 3, 0),
    "range_float": lambda E: E.data.Dataset.range(0.5, 3),
    "take_float": lambda E: E.data.Dataset.range(3).take(1.5),
    "batch_drop_not_bool": lambda E: E.data.Dataset.range(3).batch(2, drop_remainder=1),
    "slices_mismatch": lambda E: E.data.Dataset.from_tensor_slices((np.zeros(3), np.zeros(4))),
    "slices_scalar": lambda E: E.data.Dataset.from_tensor_slices(3),
    "slices_ragged": lambda E: E.data.Dataset.from_tensor_slices([[1, 2], [3]]),
    "slices_none": lambda E: E.data.Dataset.from_tensor_slices(None),
    "unbatch_scalar": lambda E: E.data.Dataset.range(3).unbatch(),
    "unbatch_mismatch": lambda E: E.data.Dataset.from_tensors(
        (np.zeros(3), np.zeros(2))).unbatch(),
    "concat_dtypes": lambda E: E.data.Dataset.range(3).concatenate(
        E.data.Dataset.from_tensor_slices([1.0])),
    "concat_structures": lambda E: E.data.Dataset.range(3).concatenate(
        E.data.Dataset.zip((E.data.Dataset.range(3), E.data.Dataset.range(3)))),
    "zip_not_dataset": lambda E: E.data.Dataset.zip((E.data.Dataset.range(3), 1)),
    "padded_shape_rank": lambda E: E.data.Dataset.from_tensor_slices(
        np.zeros((4, 3))).padded_batch(2, padded_shapes=[5, 2]),
    "padded_shape_small": lambda E: E.data.Dataset.from_tensor_slices(
        np.zeros((4, 3))).padded_batch(2, padded_shapes=[2]),
    "padded_value_dtype": lambda E: E.data.Dataset.from_tensor_slices(
        (np.zeros((4, 3)), np.zeros(4))).padded_batch(2, padded_shapes=([None], []),
                                                      padding_values=(1.0, 2.0)),
    "padded_too_small_runtime": lambda E: E.data.Dataset.from_generator(
        _ragged, output_signature=E.TensorSpec([None], E.int32)).padded_batch(
        2, padded_shapes=[2]),
    "batch_ragged_runtime": lambda E: E.data.Dataset.from_generator(
        _ragged, output_signature=E.TensorSpec([None], E.int32)).batch(2),
    "filter_not_bool": lambda E: E.data.Dataset.range(3).filter(lambda x: x),
    "filter_not_scalar": lambda E: E.data.Dataset.range(3).filter(
        lambda x: E.tf.stack([x > 0, x > 1])),
    "generator_float_for_int": lambda E: E.data.Dataset.from_generator(
        lambda: iter([1.5]), output_types=E.int32),
    "generator_int_for_string": lambda E: E.data.Dataset.from_generator(
        lambda: iter([1]), output_types=E.string),
    "generator_shape": lambda E: E.data.Dataset.from_generator(
        lambda: iter([[1, 2]]), output_types=E.int32, output_shapes=[3]),
    "generator_list_for_tuple": lambda E: E.data.Dataset.from_generator(
        lambda: iter([[1, 2]]), output_types=(E.int32, E.int32)),
    "generator_extra_key": lambda E: E.data.Dataset.from_generator(
        lambda: iter([{"a": 1, "b": 2}]), output_types={"a": E.int32}),
    "generator_both_signatures": lambda E: E.data.Dataset.from_generator(
        lambda: iter([]), output_types=E.int32, output_signature=E.TensorSpec([], E.int32)),
    "generator_no_signature": lambda E: E.data.Dataset.from_generator(lambda: iter([])),
    "generator_signature_not_spec": lambda E: E.data.Dataset.from_generator(
        lambda: iter([]), output_signature=(E.int32,)),
    "get_single_element_many": lambda E: E.data.Dataset.range(3).get_single_element(),
    "get_single_element_none": lambda E: E.data.Dataset.range(0).get_single_element(),
}


def _raise_type(fn):
    try:
        ds = fn()
        if hasattr(ds, "as_numpy_iterator"):
            list(ds.as_numpy_iterator())
    except Exception as e:
        return e
    return None


@pytest.mark.parametrize("name", list(ERROR_CASES))
def test_errors_against_tensorflow(name, real_tf):
    recipe = ERROR_CASES[name]
    mine = _raise_type(lambda: recipe(ours()))
    tfs = _raise_type(lambda: recipe(theirs(real_tf)))
    assert tfs is not None, "TensorFlow accepted it"
    assert mine is not None, f"ipu_gpu accepted it; TF raised {type(tfs).__name__}: {tfs}"
    # same class: TF's error classes map onto ours by name (InvalidArgumentError is also a
    # ValueError here, as the house style asks)
    assert type(mine).__name__ == type(tfs).__name__ or (
        isinstance(tfs, ValueError) and isinstance(mine, ValueError)) or (
        isinstance(tfs, TypeError) and isinstance(mine, TypeError)), (mine, tfs)


def test_error_messages_name_the_argument():
    with pytest.raises(errors.InvalidArgumentError, match="Batch size must be greater"):
        idata.Dataset.range(3).batch(0)
    with pytest.raises(errors.InvalidArgumentError, match="buffer_size"):
        idata.Dataset.range(3).shuffle(0)
    with pytest.raises(errors.InvalidArgumentError, match="buffer_size"):
        idata.Dataset.range(3).prefetch(-3)
    with pytest.raises(errors.InvalidArgumentError, match="num_parallel_calls"):
        idata.Dataset.range(3).map(lambda x: x, num_parallel_calls=-3)
    with pytest.raises(errors.InvalidArgumentError, match="num_shards"):
        idata.Dataset.range(3).shard(0, 0)
    with pytest.raises(TypeError, match="batch_size"):
        idata.Dataset.range(3).batch("4")
    with pytest.raises(TypeError, match="count"):
        idata.Dataset.range(3).repeat(2.0)
    with pytest.raises(AttributeError, match="does not emulate tf.data.Dataset.window"):
        idata.Dataset.range(3).window(2)


# ---- iteration API --------------------------------------------------------------------------
def test_iter_gives_tensors_and_get_next_raises_out_of_range():
    ds = idata.Dataset.from_tensor_slices({"x": X, "y": Y}).batch(4)
    it = iter(ds)
    first = next(it)
    assert isinstance(first["x"], ipu_gpu.Tensor) and isinstance(first["y"], ipu_gpu.Tensor)
    np.testing.assert_array_equal(first["x"].numpy(), X[:4])
    assert it.element_spec == ds.element_spec
    it.get_next()
    it.get_next()
    with pytest.raises(errors.OutOfRangeError, match="End of sequence"):
        it.get_next()
    strings = next(iter(idata.Dataset.from_tensor_slices(["ab"])))
    assert strings.numpy() == b"ab"


def test_as_numpy_iterator_gives_scalars_and_bytes(real_tf):
    mine = list(idata.Dataset.from_tensor_slices((["a", "b"], [[1, 2], [3, 4]]))
                .as_numpy_iterator())
    tfs = list(real_tf.data.Dataset.from_tensor_slices((["a", "b"], [[1, 2], [3, 4]]))
               .as_numpy_iterator())
    assert type(mine[0][0]) is bytes and type(tfs[0][0]) is bytes
    _assert_same_list(mine, tfs)
    assert type(next(idata.Dataset.range(3).as_numpy_iterator())) is np.int64


def test_reduce(real_tf):
    for E in (ours(), theirs(real_tf)):
        total = E.data.Dataset.range(5).reduce(np.int64(0), lambda s, x: s + x)
        assert int(np.asarray(total)) == 10
        pair = E.data.Dataset.range(5).reduce((np.int64(0), 1.0), lambda s, x: (s[0] + x,
                                                                                 s[1] * 2))
        assert int(np.asarray(pair[0])) == 10 and float(np.asarray(pair[1])) == 32.0
        assert np.asarray(pair[1]).dtype == np.float32
    with pytest.raises(TypeError, match="dtypes"):
        idata.Dataset.range(3).reduce(np.int32(0), lambda s, x: x)


def test_get_single_element():
    got = idata.Dataset.from_tensors((X, Y)).get_single_element()
    np.testing.assert_array_equal(got[0].numpy(), X)
    assert idata.experimental.get_single_element(idata.Dataset.range(1)).numpy() == 0


def test_options_merge_and_propagate(real_tf):
    o = idata.Options()
    o.deterministic = False
    o.threading.private_threadpool_size = 4
    o.experimental_distribute.auto_shard_policy = idata.experimental.AutoShardPolicy.OFF
    ds = idata.Dataset.range(3).with_options(o).map(lambda x: x).batch(2)
    got = ds.options()
    assert got.deterministic is False and got.experimental_deterministic is False
    assert got.threading.private_threadpool_size == 4
    assert got.experimental_distribute.auto_shard_policy == idata.experimental.AutoShardPolicy.OFF
    o2 = idata.Options()
    o2.deterministic = True
    assert ds.with_options(o2).options().deterministic is True
    assert ds.with_options(o2).options().threading.private_threadpool_size == 4
    assert idata.Dataset.range(2).options() == idata.Options()
    with pytest.raises(AttributeError, match="Cannot set the property foo on Options"):
        o.foo = 1
    with pytest.raises(TypeError, match='"deterministic" must be of type'):
        o.deterministic = 3
    with pytest.raises(TypeError):
        idata.Dataset.range(2).with_options({"deterministic": True})
    assert int(idata.experimental.AutoShardPolicy.DATA) == int(
        real_tf.data.experimental.AutoShardPolicy.DATA)


def test_tf1_iterators():
    ds = idata.Dataset.range(3)
    one = ds.make_one_shot_iterator()
    assert [int(one.get_next()) for _ in range(3)] == [0, 1, 2]
    with pytest.raises(errors.OutOfRangeError):
        one.get_next()
    init = idata.make_initializable_iterator(ds.map(lambda x: x * 10))
    with pytest.raises(io_errors.FailedPreconditionError, match="not been initialized"):
        init.get_next()
    for _ in range(2):  # each run of the initializer starts again
        init.initializer.run()
        assert [int(init.get_next()) for _ in range(2)] == [0, 10]
    assert init.output_types == np.dtype(np.int64) and init.output_shapes == []
    re = idata.Iterator.from_structure(np.int64, [])
    a, b = idata.Dataset.range(2), idata.Dataset.range(5, 7)
    re.make_initializer(a).run()
    assert int(re.get_next()) == 0
    re.make_initializer(b).run()
    assert [int(v) for v in re] == [5, 6]
    with pytest.raises(TypeError):
        re.make_initializer(idata.Dataset.from_tensors(1.0))
    assert ds.output_types == np.dtype(np.int64) and ds.output_shapes == ispec.TensorShape([])


def test_experimental_transformations():
    ds = idata.Dataset.range(5).apply(idata.experimental.shuffle_and_repeat(10, 2, seed=1))
    got = [int(v) for v in ds.as_numpy_iterator()]
    assert sorted(got) == sorted(list(range(5)) * 2)
    mb = idata.Dataset.range(5).apply(idata.experimental.map_and_batch(lambda x: x + 1, 2))
    _assert_same_list(list(mb.as_numpy_iterator()), [np.array([1, 2]), np.array([3, 4]),
                                                     np.array([5])])
    ok = idata.Dataset.range(3).filter(lambda x: True).apply(
        idata.experimental.assert_cardinality(3))
    assert _card(ok) == 3 and len(list(ok.as_numpy_iterator())) == 3
    bad = idata.Dataset.range(3).apply(idata.experimental.assert_cardinality(2))
    with pytest.raises(io_errors.FailedPreconditionError, match="at least one more"):
        list(bad.as_numpy_iterator())


# ---- shuffle ----------------------------------------------------------------------------------
def _order(ds):
    return [int(v) for v in ds.as_numpy_iterator()]


def test_shuffle_is_a_permutation_and_reproducible_per_seed():
    a = _order(idata.Dataset.range(100).shuffle(10, seed=7))
    b = _order(idata.Dataset.range(100).shuffle(10, seed=7))
    c = _order(idata.Dataset.range(100).shuffle(10, seed=8))
    assert sorted(a) == list(range(100)) and a == b and a != c


def test_shuffle_reshuffles_each_iteration_unless_told_not_to():
    ds = idata.Dataset.range(50).shuffle(50, seed=3)
    first, second = _order(ds), _order(ds)
    assert first != second and sorted(second) == list(range(50))
    fixed = idata.Dataset.range(50).shuffle(50, seed=3, reshuffle_each_iteration=False)
    assert _order(fixed) == _order(fixed)
    epochs = _order(idata.Dataset.range(20).shuffle(20, seed=1).repeat(3))
    assert all(sorted(epochs[i:i + 20]) == list(range(20)) for i in (0, 20, 40))
    assert epochs[:20] != epochs[20:40]
    # a second dataset built the same way starts with the same order (as TF with a seed)
    assert _order(idata.Dataset.range(50).shuffle(50, seed=3)) == first
    # without a seed, two datasets differ
    assert _order(idata.Dataset.range(50).shuffle(50)) != _order(
        idata.Dataset.range(50).shuffle(50))


@pytest.mark.parametrize("buffer_size", [1, 2, 5, 64])
def test_shuffle_buffer_semantics(buffer_size):
    """Output i comes from the first i + buffer_size inputs (it was in the buffer), and a
    buffer of 1 keeps the order; the element and index paths give the same order."""
    n = 40
    fast = _order(idata.Dataset.range(n).shuffle(buffer_size, seed=5))
    slow = _order(idata.Dataset.range(n).map(lambda x: x).shuffle(buffer_size, seed=5))
    assert fast == slow
    for i, v in enumerate(fast):
        assert v < i + buffer_size
    if buffer_size == 1:
        assert fast == list(range(n))


def test_shuffle_is_uniform_enough():
    counts = np.zeros((5, 5))
    ds = idata.Dataset.range(5).shuffle(5, seed=11)
    for _ in range(2000):
        for pos, v in enumerate(_order(ds)):
            counts[pos, v] += 1
    assert np.all(np.abs(counts - 400) < 100), counts


def test_shuffle_then_batch_gathers_from_a_shuffled_order(real_tf):
    ds = idata.Dataset.from_tensor_slices((X, Y)).shuffle(4, seed=2).batch(3)
    got = list(ds.as_numpy_iterator())
    xs = np.concatenate([g[0] for g in got])
    order = [int(np.flatnonzero((X == row).all(axis=1))[0]) for row in xs]
    assert sorted(order) == list(range(11))
    np.testing.assert_array_equal(np.concatenate([g[1] for g in got]), Y[order])
    tfs = real_tf.data.Dataset.from_tensor_slices((X, Y)).shuffle(4, seed=2).batch(3)
    assert _spec_key(ds.element_spec) == _spec_key(tfs.element_spec)
    assert [g[0].shape for g in got] == [g[0].shape for g in tfs.as_numpy_iterator()]


def test_shuffle_unknown_cardinality_buffer_means_everything():
    got = _order(idata.Dataset.range(30).shuffle(idata.UNKNOWN_CARDINALITY, seed=1))
    assert sorted(got) == list(range(30))


def test_cache_replays_the_first_shuffled_order():
    ds = idata.Dataset.range(20).shuffle(20, seed=4).cache()
    first = _order(ds)
    assert _order(ds) == first
    partial = idata.Dataset.range(20).shuffle(20, seed=4).cache()
    next(iter(partial))  # an incomplete first iteration keeps nothing
    assert sorted(_order(partial)) == list(range(20))


def test_file_cache(tmp_path):
    calls = []

    def gen():
        calls.append(1)
        yield from (np.full(2, i, np.float32) for i in range(3))
    path = str(tmp_path / "cache")
    ds = idata.Dataset.from_generator(gen, output_signature=ispec.TensorSpec([2], np.float32))
    cached = ds.cache(path)
    _assert_same_list(list(cached.as_numpy_iterator()), [np.full(2, i, np.float32)
                                                         for i in range(3)])
    _assert_same_list(list(cached.as_numpy_iterator()), [np.full(2, i, np.float32)
                                                         for i in range(3)])
    assert len(calls) == 1
    # a new dataset with the same file reads the cache (as TF reuses its cache files)
    again = ds.cache(path)
    assert len(list(again.as_numpy_iterator())) == 3 and len(calls) == 1
    with pytest.raises(io_errors.NotFoundError):
        list(ds.cache(str(tmp_path / "missing" / "c")).as_numpy_iterator())


# ---- prefetch threads -------------------------------------------------------------------------
def _prefetch_threads() -> int:
    return sum(t.name == "ipu_gpu.data.prefetch" and t.is_alive()
               for t in threading.enumerate())


def _wait_no_prefetch_threads(before: int):
    deadline = time.monotonic() + 10
    while _prefetch_threads() > before and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.01)
    assert _prefetch_threads() == before


def test_prefetch_thread_stops_when_iterator_is_dropped():
    before = _prefetch_threads()
    ds = idata.Dataset.range(10**9).map(lambda x: x).prefetch(3)
    it = iter(ds)
    assert int(next(it)) == 0
    assert _prefetch_threads() == before + 1
    del it
    _wait_no_prefetch_threads(before)
    for x in ds:  # break out of a loop
        if int(x) == 5:
            break
    del x
    _wait_no_prefetch_threads(before)
    nested = idata.Dataset.range(10**9).prefetch(2).map(lambda v: v).prefetch(2)
    it = nested.as_numpy_iterator()
    next(it)
    assert _prefetch_threads() == before + 2
    it.close()
    _wait_no_prefetch_threads(before)


def test_prefetch_thread_ends_with_the_data_and_passes_errors():
    before = _prefetch_threads()
    assert _order(idata.Dataset.range(5).prefetch(1)) == list(range(5))
    _wait_no_prefetch_threads(before)

    def gen():
        yield 1
        raise RuntimeError("boom in the generator")
    ds = idata.Dataset.from_generator(gen, output_types=np.int32).prefetch(4)
    it = ds.as_numpy_iterator()
    assert next(it) == 1
    with pytest.raises(RuntimeError, match="boom"):
        next(it)
    _wait_no_prefetch_threads(before)


def test_prefetch_thread_blocked_on_a_full_buffer_stops():
    before = _prefetch_threads()
    it = iter(idata.Dataset.range(1000).repeat().prefetch(2))
    next(it)
    time.sleep(0.05)  # the producer fills the buffer and waits
    it.close()
    _wait_no_prefetch_threads(before)


def test_parallel_map_keeps_order_and_raises():
    got = _order(idata.Dataset.range(200).map(lambda x: x * 2, num_parallel_calls=4))
    assert got == [2 * i for i in range(200)]

    def bad(x):
        if int(x) == 37:
            raise ValueError("bad element")
        return x
    with pytest.raises(ValueError, match="bad element"):
        list(idata.Dataset.range(100).map(bad, num_parallel_calls=3).as_numpy_iterator())


# ---- TextLineDataset --------------------------------------------------------------------------
def test_text_line_dataset(tmp_path, real_tf):
    a, b, empty = tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "e.txt"
    a.write_bytes(b"a\r\nb\n\nc\r")
    b.write_bytes("x y\nz\xe9\n".encode())
    empty.write_bytes(b"")
    files = [str(a), str(empty), str(b)]
    for kwargs in ({}, {"num_parallel_reads": 2}):
        mine = idata.TextLineDataset(files, **kwargs)
        tfs = real_tf.data.TextLineDataset(files, **kwargs)
        assert _spec_key(mine.element_spec) == _spec_key(tfs.element_spec)
        assert _card(mine) == int(tfs.cardinality().numpy())
        _assert_same_list(list(mine.as_numpy_iterator()), list(tfs.as_numpy_iterator()))
    names = idata.Dataset.from_tensor_slices([str(b), str(a)])
    assert list(idata.TextLineDataset(names).as_numpy_iterator())[:2] == [b"x y", "z\xe9".encode()]
    with pytest.raises(io_errors.NotFoundError, match="No such file"):
        list(idata.TextLineDataset(str(tmp_path / "missing.txt")).as_numpy_iterator())
    mapped = idata.TextLineDataset(str(a)).map(lambda line: line)
    assert _spec_key(mapped.element_spec) == ([], "string")


# ---- TensorShape / TensorSpec -----------------------------------------------------------------
def test_tensor_shape_semantics(real_tf):
    tf = real_tf
    cases = [[None, 3], [2, 3], [], [4], None]
    for dims in cases:
        mine, theirs_ = ispec.TensorShape(dims), tf.TensorShape(dims)
        assert mine.rank == theirs_.rank and repr(mine) == repr(theirs_)
        assert str(mine) == str(theirs_) and bool(mine) == bool(theirs_)
        assert mine.is_fully_defined() == theirs_.is_fully_defined()
        assert mine.num_elements() == theirs_.num_elements()
        if dims is not None:
            assert mine.as_list() == theirs_.as_list() and len(mine) == len(theirs_)
            assert mine == dims and mine == tuple(dims)
        for other in cases:
            o, to = ispec.TensorShape(other), tf.TensorShape(other)
            assert mine.is_compatible_with(o) == theirs_.is_compatible_with(to)
            assert (mine == o) == (theirs_ == to)
            assert mine.most_specific_compatible_shape(o) == ispec.TensorShape(
                theirs_.most_specific_compatible_shape(to).as_list()
                if theirs_.most_specific_compatible_shape(to).rank is not None else None)
            if theirs_.is_compatible_with(to):
                merged = theirs_.merge_with(to)
                assert mine.merge_with(o) == ispec.TensorShape(
                    merged.as_list() if merged.rank is not None else None)
            else:
                with pytest.raises(ValueError, match="not compatible"):
                    mine.merge_with(o)
    s = ispec.TensorShape([None, 3])
    assert s[0] is None and s[1] == 3 and s[1:] == [3] and s + [5] == [None, 3, 5]
    assert [5] + s == [5, None, 3] and s.dims[1].value == 3
    assert np.zeros(ispec.TensorShape([2, 3])).shape == (2, 3)
    assert ispec.TensorShape(3) == [3] and hash(s) == hash(ispec.TensorShape([None, 3]))
    u = ispec.TensorShape(None)
    for fn, msg in ((lambda: u.as_list(), "as_list"), (lambda: len(u), "length"),
                    (lambda: list(u), "iterate")):
        with pytest.raises(ValueError, match=msg):
            fn()
    with pytest.raises(ValueError, match="must be >= 0"):
        ispec.TensorShape([-1])
    with pytest.raises(TypeError, match="Dimension value must be integer"):
        ispec.TensorShape([2.5])
    with pytest.raises(ValueError, match="must have rank 3"):
        s.with_rank(3)


def test_tensor_spec_semantics(real_tf):
    tf = real_tf
    mine = ispec.TensorSpec([None, 3], np.float32, name="x")
    theirs_ = tf.TensorSpec([None, 3], tf.float32, name="x")
    assert repr(mine) == repr(theirs_)
    assert repr(ispec.TensorSpec([2], ispec.string)) == repr(tf.TensorSpec([2], tf.string))
    assert ispec.TensorSpec([2]).dtype == np.float32
    assert mine == ispec.TensorSpec([None, 3], "float32", name="x") and mine != ispec.TensorSpec(
        [None, 3], np.float32)
    assert ispec.TensorSpec([2], np.int32).is_compatible_with(ispec.TensorSpec([None],
                                                                               np.int32))
    assert ispec.TensorSpec([2], np.int32).is_compatible_with(np.zeros(2, np.int32))
    assert not ispec.TensorSpec([2], np.int32).is_compatible_with(np.zeros(2, np.int64))
    assert ispec.TensorSpec.from_tensor(ipu_gpu.constant([[1.0]])) == ispec.TensorSpec(
        [1, 1], np.float32)
    assert ispec.TensorSpec([2], tf.int64).dtype == np.int64  # a real TF dtype is accepted
    assert ispec.TensorSpec(None).shape.rank is None


def test_map_spec_found_without_running_the_pipeline():
    calls = []

    def f(x):
        calls.append(1)
        return ipu_gpu.cast(x, ipu_gpu.float32)
    ds = idata.Dataset.from_tensor_slices(W).shuffle(5, seed=1).map(f).batch(4)
    spec = ds.element_spec
    assert spec.shape.as_list() == [None, 2, 2] and spec.dtype == np.float32
    assert len(calls) == 1  # one call on the sample element (no unknown dimension to test)
    # no shuffle iteration was used up: the first order is that of a fresh dataset
    fresh = idata.Dataset.from_tensor_slices(W).shuffle(5, seed=1).map(f).batch(4)
    _assert_same_list(list(ds.as_numpy_iterator()), list(fresh.as_numpy_iterator()))
