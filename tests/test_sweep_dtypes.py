"""tf.float32, tf.int32, ... as TF's DType objects (issue 17 sweep): min/max/limits, size,
the is_* predicates, enums, repr/str and comparisons against the real TensorFlow; numpy
still takes them; tf.bfloat16 exists as a dtype but no tensor can have it (the IPU has no
bfloat16)."""

import pickle

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as tf1

NAMES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool",
         "bfloat16"]


def _describe(d):
    out = {}
    for attr in ("name", "min", "max", "limits", "size", "is_floating", "is_integer",
                 "is_unsigned", "is_bool", "as_datatype_enum", "is_numpy_compatible"):
        try:
            value = getattr(d, attr)
        except (TypeError, ValueError) as e:
            value = (type(e).__name__, str(e))
        out[attr] = value
    out["repr"], out["str"] = repr(d), str(d)
    return out


@pytest.mark.parametrize("name", NAMES)
def test_dtype_objects_match_real_tensorflow(name, real_tf):
    got, want = _describe(getattr(ig, name)), _describe(getattr(real_tf, name))
    if name == "bfloat16":  # TF's bfloat16 is numpy-compatible through ml_dtypes
        assert got.pop("is_numpy_compatible") is False
        want.pop("is_numpy_compatible")
    for key in want:
        if key in ("min", "max") and not isinstance(want[key], tuple):
            assert float(got[key]) == float(want[key]), key
        else:
            assert got[key] == want[key], key
    assert getattr(tf1, name) is getattr(ig, name)
    assert getattr(ig.dtypes, name) is getattr(ig, name)


@pytest.mark.parametrize("name", [n for n in NAMES if n != "bfloat16"])
def test_numpy_and_tensors_take_them(name):
    d = getattr(ig, name)
    assert np.dtype(d) == np.dtype(name) and np.zeros(2, d).dtype == np.dtype(name)
    t = ig.zeros([2], d)
    assert t.dtype == d and d == t.dtype and hash(d) == hash(np.dtype(name))
    assert {np.dtype(name): 1}[d] == 1
    assert d == name and d != "float8" and d is not None and d != None  # noqa: E711
    assert d.as_numpy_dtype is np.dtype(name).type
    assert isinstance(d, ig.DType) and isinstance(t.dtype, ig.DType)
    assert d.base_dtype is d and d.real_dtype is d and d.is_compatible_with(name)
    assert pickle.loads(pickle.dumps(d)) is d
    assert d.kind == np.dtype(name).kind and d.itemsize == np.dtype(name).itemsize


def test_the_common_uses():
    seed = ig.random.uniform([3], minval=0, maxval=ig.int32.max, dtype=ig.int32, seed=1)
    assert seed.dtype == ig.int32 and (seed.numpy() >= 0).all()
    x = ig.constant([1.0, -2.0])
    np.testing.assert_array_equal(ig.clip_by_value(x, ig.float32.min, 0.0).numpy(),
                                  [0.0, -2.0])
    assert ig.half is ig.float16 and ig.double is ig.float64
    assert tf1.DType(1) is ig.float32 and tf1.DType(14) is ig.bfloat16
    assert ig.as_dtype("int32") is ig.int32 and ig.dtypes.as_dtype(np.uint8).max == 255
    assert ig.as_dtype(float) is ig.float32 and ig.as_dtype("bfloat16") is ig.bfloat16
    assert ig.as_dtype("string") is ig.string


def test_bfloat16_is_a_name_only(real_tf):
    assert ig.bfloat16 == "bfloat16" and ig.bfloat16 != ig.float16
    assert ig.bfloat16.is_floating and ig.bfloat16.size == 2
    with pytest.raises(TypeError, match="bfloat16"):
        ig.cast(ig.constant([1.0]), ig.bfloat16)
    with pytest.raises(TypeError, match="has no bfloat16"):
        np.zeros(2, ig.bfloat16)
    assert ig.keras.mixed_precision.Policy("mixed_bfloat16").compute_dtype == "bfloat16"
