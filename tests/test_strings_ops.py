"""tf.strings against real TensorFlow on random and edge inputs (empty strings, unicode,
empty tensors), and a plain Python reference where TF is absent."""

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

_ALPHABET = ["a", "B", " ", "\t", "é", "ß", "z", ",", "!", "1", "0", ".", "-", "\n", "中"]


def _random_strings(seed, n=24):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        k = int(rng.integers(0, 8))
        out.append("".join(rng.choice(_ALPHABET, size=k)))
    return out + ["", " ", "  a  b  ", "Ünïcödé TEXT"]


INPUTS = [_random_strings(0), _random_strings(1), [], [["ab", ""], ["C d", "é"]]]


def _t(m, value):
    return m.constant(value, dtype=m.string)


def _same(ours, theirs):
    o = ours.numpy() if hasattr(ours, "numpy") else ours
    t = theirs.numpy() if hasattr(theirs, "numpy") else theirs
    if isinstance(t, bytes):
        assert o == t
        return
    o, t = np.asarray(o), np.asarray(t)
    assert o.shape == t.shape and o.dtype == t.dtype, (o.dtype, t.dtype, o.shape, t.shape)
    np.testing.assert_array_equal(o, t)


ELEMENTWISE = {
    "length": lambda m, x: m.strings.length(x),
    "length_utf8": lambda m, x: m.strings.length(x, unit="UTF8_CHAR"),
    "lower": lambda m, x: m.strings.lower(x),
    "lower_utf8": lambda m, x: m.strings.lower(x, encoding="utf-8"),
    "upper": lambda m, x: m.strings.upper(x),
    "upper_utf8": lambda m, x: m.strings.upper(x, encoding="utf-8"),
    "strip": lambda m, x: m.strings.strip(x),
    "join": lambda m, x: m.strings.join([x, "|", x], separator="-"),
    "reduce_join": lambda m, x: m.strings.reduce_join(x, separator=","),
    "reduce_join_0": lambda m, x: m.strings.reduce_join(x, axis=0, keepdims=True),
    "reduce_join_last": lambda m, x: m.strings.reduce_join(x, axis=-1, separator=" "),
    "substr": lambda m, x: m.strings.substr(x, 0, 2),
    "substr_utf8": lambda m, x: m.strings.substr(x, 0, 3, unit="UTF8_CHAR"),
    "regex_replace": lambda m, x: m.strings.regex_replace(x, "[a-z]+", "<\\0>"),
    "regex_replace_first": lambda m, x: m.strings.regex_replace(x, "(\\s)(\\S)", "\\2\\1",
                                                                replace_global=False),
    "regex_punct": lambda m, x: m.strings.regex_replace(
        x, "[!\"#$%&()\\*\\+,-\\./:;<=>?@\\[\\\\\\]^_`{|}~']", ""),
    "regex_full_match": lambda m, x: m.strings.regex_full_match(x, "[a-zA-Z ]*"),
    "hash_fast": lambda m, x: m.strings.to_hash_bucket_fast(x, 97),
    "hash_strong": lambda m, x: m.strings.to_hash_bucket_strong(x, 1000, [7, 123456789]),
    "equal_upper": lambda m, x: m.equal(m.strings.upper(x), x),
}


@pytest.mark.parametrize("value", range(len(INPUTS)))
@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_matches_tf(name, value):
    fn = ELEMENTWISE[name]
    _same(fn(tf, _t(tf, INPUTS[value])), fn(rtf, _t(rtf, INPUTS[value])))


def test_scalar_inputs():
    _same(tf.strings.length("héllo"), rtf.strings.length("héllo"))
    _same(tf.strings.reduce_join(["a", "b"]), rtf.strings.reduce_join(["a", "b"]))
    _same(tf.strings.upper("x"), rtf.strings.upper("x"))


@pytest.mark.parametrize("kwargs", [{}, {"sep": ","}, {"sep": " "}, {"maxsplit": 1},
                                    {"sep": ",", "maxsplit": 2}])
def test_split_ragged_matches_tf(kwargs):
    data = ["a b  c", "", " d ", "x,y,,z", ",", "é ß,中"]
    ours, theirs = tf.strings.split(data, **kwargs), rtf.strings.split(data, **kwargs)
    assert ours.to_list() == theirs.to_list()
    assert ours.shape.as_list() == theirs.shape.as_list()
    _same(ours.row_splits, theirs.row_splits)
    _same(ours.to_tensor(), theirs.to_tensor())
    _same(ours.to_tensor(default_value="?"), theirs.to_tensor(default_value="?"))
    _same(ours.to_tensor(shape=[4, 2]), theirs.to_tensor(shape=[4, 2]))
    _same(tf.strings.split("a b c", **kwargs), rtf.strings.split("a b c", **kwargs))


def test_substr_negative_and_out_of_range():
    _same(tf.strings.substr(["hello", "hi"], -2, 5), rtf.strings.substr(["hello", "hi"], -2, 5))
    _same(tf.strings.substr(["hello", "hi"], [1, 2], [9, 1]),
          rtf.strings.substr(["hello", "hi"], [1, 2], [9, 1]))
    with pytest.raises(errors.InvalidArgumentError, match="pos 5 out of range"):
        tf.strings.substr(["hi"], 5, 1)
    with pytest.raises(rtf.errors.InvalidArgumentError):
        rtf.strings.substr(["hi"], 5, 1)


@pytest.mark.parametrize(("data", "dtype"), [
    (["1.5", " 2", "1e3", "inf", "-nan", "0x10", "-0", "3.4e39"], "float32"),
    (["1.5", "1e-300", "-2.25"], "float64"),
    (["12", "-3", " 7 ", "2147483647"], "int32"),
    (["9223372036854775807", "-1"], "int64"),
])
def test_to_number_matches_tf(data, dtype):
    ours = tf.strings.to_number(data, getattr(tf, dtype))
    theirs = rtf.strings.to_number(data, getattr(rtf, dtype))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert ours.dtype == theirs.dtype.as_numpy_dtype


@pytest.mark.parametrize(("data", "dtype"), [(["1.5"], "int32"), (["abc"], "float32"),
                                             (["1_0"], "int32"), ([""], "float32"),
                                             (["2147483648"], "int32")])
def test_to_number_refuses_as_tf(data, dtype):
    with pytest.raises(errors.InvalidArgumentError, match="could not correctly convert"):
        tf.strings.to_number(data, getattr(tf, dtype))
    with pytest.raises(rtf.errors.InvalidArgumentError):
        rtf.strings.to_number(data, getattr(rtf, dtype))


@pytest.mark.parametrize(("value", "kwargs"), [
    ([1.5, 1e10, -0.0, float("nan"), float("inf"), 1e-7, -2.5], {}),
    ([1.2345, 100.0], {"precision": 2}),
    ([1.2345, 1e-9], {"shortest": True}),
    ([1.2345, -3e20], {"scientific": True}),
    ([1.5], {"width": 12, "fill": "0"}),
    ([1, -20, 0], {}),
    ([12, -3], {"width": 5, "fill": "0"}),
    ([12], {"width": 5}),
    ([True, False], {}),
])
def test_as_string_matches_tf(value, kwargs):
    _same(tf.strings.as_string(value, **kwargs), rtf.strings.as_string(value, **kwargs))


def test_as_string_float64_and_int64():
    v = np.array([1 / 3, 2.0 ** 60])
    _same(tf.strings.as_string(v), rtf.strings.as_string(v))
    v = np.array([2 ** 40, -(2 ** 62)], np.int64)
    _same(tf.strings.as_string(v), rtf.strings.as_string(v))


def test_format_matches_tf():
    args = ("x={} y={} z={}", (1, tf.constant([1.5, 2.0]), tf.constant("s")))
    rargs = ("x={} y={} z={}", (1, rtf.constant([1.5, 2.0]), rtf.constant("s")))
    _same(tf.strings.format(*args), rtf.strings.format(*rargs))


def test_hash_buckets_equal_tf_on_edge_strings():
    data = ["", "a", "hello world", "x" * 100, "é" * 33, "0123456789abcdef" * 5]
    _same(tf.strings.to_hash_bucket_fast(data, 2 ** 40),
          rtf.strings.to_hash_bucket_fast(data, 2 ** 40))
    _same(tf.strings.to_hash_bucket_strong(data, 7, [0, 0]),
          rtf.strings.to_hash_bucket_strong(data, 7, [0, 0]))


def test_errors():
    with pytest.raises(TypeError):
        tf.strings.length(tf.constant([1]))
    with pytest.raises(TypeError):
        tf.strings.length([1])
    with pytest.raises(ValueError):
        tf.strings.length("a", unit="CHAR")
    with pytest.raises(errors.InvalidArgumentError, match="Invalid pattern"):
        tf.strings.regex_full_match(["a"], "(")
    with pytest.raises(errors.OutOfRangeError, match="Invalid reduction dimension"):
        tf.strings.reduce_join(["a"], axis=1)
    with pytest.raises(rtf.errors.OutOfRangeError):
        rtf.strings.reduce_join(["a"], axis=1)
    with pytest.raises(errors.InvalidArgumentError, match="Input shapes do not match"):
        tf.strings.join([["a", "b"], ["c", "d", "e"]])
    with pytest.raises(rtf.errors.InvalidArgumentError):
        rtf.strings.join([["a", "b"], ["c", "d", "e"]])


def test_ragged_tensor_basics():
    rt = tf.RaggedTensor.from_row_lengths(tf.constant(["a", "b", "c"]), [2, 0, 1])
    ref = rtf.RaggedTensor.from_row_lengths(rtf.constant(["a", "b", "c"]), [2, 0, 1])
    assert rt.to_list() == ref.to_list()
    _same(rt.row_lengths(), ref.row_lengths())
    _same(rt[0], ref[0])
    assert len(rt) == 3
    with pytest.raises(errors.InvalidArgumentError):
        tf.RaggedTensor.from_row_splits(tf.constant([1, 2]), [0, 3])


def test_strings_refused_inside_ipu_program():
    from ipu_gpu import ipu

    cfg = ipu.config.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()
    strategy = ipu.ipu_strategy.IPUStrategy()
    with strategy.scope():
        with pytest.raises(errors.InvalidArgumentError, match="XLA_IPU_JIT: StringLength"):
            strategy.run(lambda: tf.strings.length(["a"]))


def test_ngrams_and_unicode_split_match_tf():
    data = ["a", "b", "c", "d"]
    _same(tf.strings.ngrams(data, 2), rtf.strings.ngrams(data, 2))
    _same(tf.strings.ngrams(data, (1, 3), separator="_"),
          rtf.strings.ngrams(data, (1, 3), separator="_"))
    _same(tf.strings.ngrams(["a"], 2), rtf.strings.ngrams(["a"], 2))
    ragged = tf.strings.split(["a b c", "d", ""])
    rragged = rtf.strings.split(["a b c", "d", ""])
    assert tf.strings.ngrams(ragged, (1, 2)).to_list() == \
        rtf.strings.ngrams(rragged, (1, 2)).to_list()
    with pytest.raises(ValueError, match="greater than 0"):
        tf.strings.ngrams(data, 0)
    words = ["hé中", "", "ab"]
    assert tf.strings.unicode_split(words, "UTF-8").to_list() == \
        rtf.strings.unicode_split(words, "UTF-8").to_list()
    _same(tf.strings.unicode_split("hé", "UTF-8"), rtf.strings.unicode_split("hé", "UTF-8"))


@pytest.mark.parametrize("kwargs", [{}, {"delimiter": ", "}, {"sep": ","}, {"delimiter": ""},
                                    {"delimiter": " ", "skip_empty": False}])
def test_compat_v1_string_split_matches_tf(kwargs):
    data = ["a b,c", "", "d  e", "é,,f"]
    ours = tf.compat.v1.string_split(data, **kwargs)
    theirs = rtf.compat.v1.string_split(data, **kwargs)
    for field in ("indices", "values", "dense_shape"):
        _same(getattr(ours, field), getattr(theirs, field))
    assert tf.compat.v1.string_split(data, result_type="RaggedTensor", **kwargs).to_list() == \
        rtf.compat.v1.string_split(data, result_type="RaggedTensor", **kwargs).to_list()
