"""tf.string tensors: conversion, the ops TF defines for strings, and refusals (vs real TF)."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu import errors

rtf = None  # real TensorFlow, set by the fixture below


@pytest.fixture(autouse=True, scope="module")
def _oracle(real_tf):
    global rtf
    rtf = real_tf

S = np.array([b"a", b"bc", b"", "é".encode()], dtype=object)


def _same(ours, theirs):
    a, b = np.asarray(ours), np.asarray(theirs)
    assert a.shape == b.shape
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("value", [
    "a", b"\xff\x00", "é", ["a", "b"], [["a", b"b"], ["", "xyz"]], [], [[]],
    np.array(["a", "bc"]), np.array([b"a", b"bc"]), np.array([b"x", "y"], dtype=object),
])
def test_constant_and_numpy_match_tf(value):
    kwargs = {"dtype": tf.string} if isinstance(value, list) and not np.size(value) else {}
    rkw = {"dtype": rtf.string} if kwargs else {}
    ours, theirs = tf.constant(value, **kwargs), rtf.constant(value, **rkw)
    assert ours.dtype == tf.string
    assert tuple(ours.shape) == tuple(theirs.shape)
    on, tn = ours.numpy(), theirs.numpy()
    if isinstance(tn, bytes):
        assert type(on) is bytes and on == tn
    else:
        _same(on, tn)
    _same(tf.convert_to_tensor(value, **kwargs).numpy(), tn)


def test_repr_and_dtype_names():
    t = tf.constant(["a"])
    assert "dtype=string" in repr(t)
    assert tf.as_dtype("string") is tf.string
    assert tf.constant("x", dtype="string").numpy() == b"x"


@pytest.mark.parametrize(("value", "dtype", "exc"), [
    (1, tf.string, TypeError), ("a", tf.float32, TypeError), ([1.5], tf.string, TypeError),
])
def test_conversion_between_numbers_and_strings_refused(value, dtype, exc):
    with pytest.raises(exc):
        tf.constant(value, dtype=dtype)
    with pytest.raises(exc):
        rtf.constant(value, dtype=rtf.as_dtype(dtype.name if dtype != tf.string else "string"))


def test_mixed_and_ragged_lists_refused():
    with pytest.raises(ValueError, match="mixed types"):
        tf.constant(["a", 1])
    with pytest.raises(ValueError, match="non-rectangular"):
        tf.constant([["a"], ["b", "c"]])


_CASES = {
    "identity": lambda m, s: m.identity(s),
    "reshape": lambda m, s: m.reshape(s, [2, 2]),
    "gather": lambda m, s: m.gather(s, [3, 0, 0]),
    "concat": lambda m, s: m.concat([s, s[:1]], 0),
    "stack": lambda m, s: m.stack([s, s], axis=1),
    "where": lambda m, s: m.where([True, False, True, False], s, m.reverse(s, [0])),
    "equal": lambda m, s: m.equal(s, "a"),
    "equal_t": lambda m, s: m.equal(s, m.reverse(s, [0])),
    "not_equal": lambda m, s: m.not_equal(s, ["a", "b", "", "x"]),
    "add": lambda m, s: m.add(s, "!"),
    "add_op": lambda m, s: s + s,
    "tile": lambda m, s: m.tile(s, [2]),
    "transpose": lambda m, s: m.transpose(m.reshape(s, [2, 2])),
    "getitem": lambda m, s: s[1],
    "slice": lambda m, s: s[1:3],
    "zeros_like": lambda m, s: m.zeros_like(s),
    "zeros": lambda m, s: m.zeros([2, 1], m.string),
    "fill": lambda m, s: m.fill([2], "x"),
    "unique": lambda m, s: m.unique(m.concat([s, s], 0))[0],
    "unique_idx": lambda m, s: m.unique(m.concat([s, s], 0))[1],
    "expand_dims": lambda m, s: m.expand_dims(s, 0),
    "squeeze": lambda m, s: m.squeeze(m.reshape(s, [1, 4])),
    "shape": lambda m, s: m.shape(s),
    "size": lambda m, s: m.size(s),
    "cast_same": lambda m, s: m.cast(s, m.string),
    "boolean_mask": lambda m, s: m.boolean_mask(s, [True, False, False, True]),
}


@pytest.mark.parametrize("name", sorted(_CASES))
def test_string_ops_match_tf(name):
    fn = _CASES[name]
    _same(fn(tf, tf.constant(S)).numpy(), fn(rtf, rtf.constant(S)).numpy())


def _tf_error(fn, *args):
    with pytest.raises(Exception) as info:
        fn(*args)
    return info.type


@pytest.mark.parametrize("name", ["exp", "reduce_sum", "maximum", "multiply", "less", "argmax",
                                  "sort", "ones_like", "matmul", "square"])
def test_numeric_ops_refuse_strings_as_tf(name):
    def call(m):
        s = m.constant([["a", "b"]])
        f = getattr(m, name, None) or getattr(m.math, name)
        if name in ("maximum", "multiply", "less", "matmul"):
            return f(s, s)
        return f(s)

    assert issubclass(_tf_error(call, rtf), rtf.errors.InvalidArgumentError)
    with pytest.raises(errors.InvalidArgumentError, match="Value for attr 'T' of string"):
        call(tf)


def test_python_string_into_numeric_op_refused():
    with pytest.raises(errors.InvalidArgumentError, match="Value for attr 'T' of string"):
        tf.exp("a")
    with pytest.raises(TypeError):  # TF: InvalidArgumentError (AddV2 wants a float)
        tf.add(tf.constant(1.0), tf.constant("a"))
    with pytest.raises(TypeError):
        tf.constant("a") + 1


def test_cast_between_strings_and_numbers_unimplemented():
    for value, dtype in (("1", tf.float32), (1.0, tf.string), (3, tf.string)):
        with pytest.raises(errors.UnimplementedError, match="Cast .* is not supported"):
            tf.cast(tf.constant(value), dtype)
        with pytest.raises(rtf.errors.UnimplementedError):
            rtf.cast(rtf.constant(value), rtf.as_dtype("string" if dtype == tf.string
                                                        else dtype.name))


def test_string_tensors_stay_on_the_host():
    t = tf.constant(["a"])
    assert type(t._value) is np.ndarray
    assert t.device.endswith("CPU:0")


def test_dataset_of_strings_and_map():
    ds = tf.data.Dataset.from_tensor_slices(["a", "bb", ""]).map(lambda s: s + "!")
    rds = rtf.data.Dataset.from_tensor_slices(["a", "bb", ""]).map(lambda s: s + "!")
    assert [x.numpy() for x in ds] == [x.numpy() for x in rds] == [b"a!", b"bb!", b"!"]


def test_py_function_returning_strings():
    def upper(x):
        return np.array([v.upper() for v in x.numpy()], dtype=object)

    out = tf.py_function(upper, [tf.constant(["ab", "c"])], Tout=tf.string)
    ref = rtf.py_function(upper, [rtf.constant(["ab", "c"])], Tout=rtf.string)
    _same(out.numpy(), ref.numpy())


def test_string_op_inside_ipu_program_refused():
    from ipu_gpu import ipu

    cfg = ipu.config.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()
    strategy = ipu.ipu_strategy.IPUStrategy()

    def step():
        return tf.identity(tf.constant(["a"]))

    with strategy.scope():
        with pytest.raises(errors.InvalidArgumentError, match="XLA_IPU_JIT"):
            strategy.run(step)


def test_infeed_of_strings_refused_as_graphcore():
    from ipu_gpu import ipu

    ds = tf.data.Dataset.from_tensor_slices(["a", "bb"]).batch(1, drop_remainder=True)
    # Graphcore names the dtype "string"; ipu_gpu's check sees only numpy's object dtype
    with pytest.raises(TypeError, match="Unsupported datatype (string|object) on index 0"):
        ipu.ipu_infeed_queue.IPUInfeedQueue(ds)


def test_summary_text_of_a_string_tensor(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        assert tf.summary.text("note", tf.constant("héllo"), step=0)
        assert tf.summary.text("notes", tf.constant(["a", "b"]), step=1)
    writer.flush()
    data = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert "héllo".encode() in data


def test_numpy_function_and_print_with_scalar_strings(capsys):
    def upper(x):  # TF passes a 0-d object array
        return np.array(x.item().upper(), object)

    out = tf.numpy_function(upper, [tf.constant("ab")], tf.string)
    ref = rtf.numpy_function(upper, [rtf.constant("ab")], rtf.string)
    assert out.numpy() == ref.numpy() == b"AB"
    both = tf.numpy_function(lambda x: np.array([b"q", b"r\x00"], object), [tf.constant("a")],
                             tf.string)
    np.testing.assert_array_equal(both.numpy(), np.array([b"q", b"r\x00"], object))
    with pytest.raises(errors.InvalidArgumentError, match="is double, but expects string"):
        tf.numpy_function(lambda x: 1.5, [tf.constant("a")], tf.string)
    tf.print(tf.constant("hi"), tf.constant(["a", "b"]))
    assert capsys.readouterr().err.strip() == '"hi" ["a" "b"]'


def test_scalar_string_ops_and_string_variables():
    for ours, theirs in ((tf.constant("a") + "b", rtf.constant("a") + "b"),
                         (tf.where(True, tf.constant("x"), "y"), rtf.where(True, "x", "y")),
                         (tf.identity(tf.constant("é")), rtf.identity(rtf.constant("é")))):
        assert ours.dtype == tf.string and ours.numpy() == theirs.numpy()
    v, rv = tf.Variable("abc"), rtf.Variable("abc")
    v.assign("x")
    rv.assign("x")
    assert (v + "!").numpy() == (rv + "!").numpy() == b"x!"
    assert tf.Variable(["a", "b"]).dtype == tf.string


def test_strings_stay_on_the_host_on_every_backend(backend):
    """On the GPU backend too, string tensors and what string ops compute from them are host
    arrays (strings never reach a device)."""
    t = tf.constant(["a", "bc"])
    for out in (t, tf.identity(t), tf.equal(t, "a"), tf.strings.length(t), tf.zeros([2], tf.string),
                tf.constant("x")):
        assert type(out._value) is np.ndarray
    assert type(tf.constant([1.0])._value) is backend.ndarray  # numbers follow the backend
