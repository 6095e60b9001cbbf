"""tf.debugging: every assertion's outcome and message against real TensorFlow's eager ones
(with TF's ``{{function_node ...}}``/``[Op:...]`` runtime decorations stripped)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu import debugging
from ipu_gpu.errors import InvalidArgumentError


def _message(e) -> str:
    text = getattr(e, "message", None) or str(e)
    text = re.sub(r"^\{\{function_node [^}]*\}\}\s*", "", text)
    return re.sub(r"\s*\[Op:\w+\]( name: \w*)?$", "", text)


def _run(call):
    try:
        return "ok", call()
    except Exception as e:  # noqa: BLE001 - kind and text are compared
        kind = "InvalidArgumentError" if type(e).__name__ == "InvalidArgumentError" \
            else type(e).__name__
        return kind, _message(e)


def _same_as_tf(real_tf, make):
    """Run ``make(t)`` (t = ipu_gpu's or TF's names) on both; compare kind and message."""
    got, want = _run(lambda: make(_Ours)), _run(lambda: make(_Theirs(real_tf)))
    assert got[0] == want[0], (got, want)
    if got[0] != "ok":
        assert got[1] == want[1]
    return got


class _Ours:
    constant = staticmethod(tf.constant)
    ones = staticmethod(tf.ones)
    zeros = staticmethod(tf.zeros)
    range = staticmethod(tf.range)
    float16, float32, float64, int32 = tf.float16, tf.float32, tf.float64, tf.int32
    debugging = debugging


class _Theirs:
    def __init__(self, t):
        self.constant, self.ones, self.zeros, self.range = t.constant, t.ones, t.zeros, t.range
        self.float16, self.float32, self.float64, self.int32 = (t.float16, t.float32,
                                                                 t.float64, t.int32)
        self.debugging = t.debugging


BINARY = [
    ("equal_ok", lambda t: t.debugging.assert_equal(t.constant([1, 2, 3]), t.constant([1, 2, 3]))),
    ("equal_one", lambda t: t.debugging.assert_equal(t.constant([1, 2, 3]),
                                                     t.constant([1, 5, 3]))),
    ("equal_message", lambda t: t.debugging.assert_equal(t.constant([1, 2, 3]),
                                                         t.constant([1, 5, 3]), message="m")),
    ("equal_many", lambda t: t.debugging.assert_equal(t.range(10), t.zeros(10, t.int32))),
    ("equal_summarize", lambda t: t.debugging.assert_equal(t.range(10), t.zeros(10, t.int32),
                                                           summarize=2)),
    ("equal_all", lambda t: t.debugging.assert_equal(t.constant([1.5, 2.25]),
                                                     t.constant([1.5, 2.5]), summarize=-1)),
    ("equal_zero_summary", lambda t: t.debugging.assert_equal(t.constant([1, 2]),
                                                              t.constant([1, 3]), summarize=0)),
    ("equal_2d", lambda t: t.debugging.assert_equal(t.constant([[1, 2], [3, 4]]),
                                                    t.constant([[1, 2], [3, 5]]))),
    ("equal_shapes", lambda t: t.debugging.assert_equal(t.constant([1, 2]),
                                                        t.constant([1, 2, 3]))),
    ("equal_broadcast", lambda t: t.debugging.assert_equal(t.constant([1, 2]),
                                                           t.constant([[1, 2], [1, 3]]))),
    ("equal_dtypes", lambda t: t.debugging.assert_equal(t.constant([1.0]), t.constant([1]))),
    ("equal_python_int", lambda t: t.debugging.assert_equal(t.constant(1.0), 1)),
    ("equal_scalars", lambda t: t.debugging.assert_equal(t.constant(1), 2)),
    ("equal_numpy", lambda t: t.debugging.assert_equal(np.array([1, 2]), np.array([1, 3]))),
    ("equal_bool", lambda t: t.debugging.assert_equal(t.constant([True]),
                                                      t.constant([False]))),
    ("equal_empty", lambda t: t.debugging.assert_equal(t.zeros([0]), t.zeros([0]))),
    ("less", lambda t: t.debugging.assert_less(t.constant([1, 2, 3]), t.constant([2, 2, 4]))),
    ("less_scalar", lambda t: t.debugging.assert_less(t.constant([1.0, 2.0]), 1.5)),
    ("less_ok", lambda t: t.debugging.assert_less(t.constant([1, 2]), 3)),
    ("less_equal", lambda t: t.debugging.assert_less_equal(t.constant([1, 2, 3]), 2)),
    ("greater", lambda t: t.debugging.assert_greater(t.constant([1.0, 2.0, 3.0]),
                                                     t.constant([0.5, 2.5, 4.0]))),
    ("greater_equal", lambda t: t.debugging.assert_greater_equal(t.constant([1, 2]), 2)),
    ("none_equal", lambda t: t.debugging.assert_none_equal(t.constant([1, 2]),
                                                           t.constant([1, 3]))),
]


@pytest.mark.parametrize("make", [c[1] for c in BINARY], ids=[c[0] for c in BINARY])
def test_binary_assertions_match_tf(real_tf, make):
    kind, result = _same_as_tf(real_tf, make)
    if kind == "ok":
        assert result is None


NEAR = [
    ("near_fail", lambda t: t.debugging.assert_near(t.constant([1.0, 2.0]),
                                                    t.constant([1.0, 2.1]))),
    ("near_ok", lambda t: t.debugging.assert_near(t.constant([1.0, 2.0]),
                                                  t.constant([1.0, 2.0000001]))),
    ("near_tolerances", lambda t: t.debugging.assert_near(
        t.constant([1.0, 2.0], t.float64), t.constant([1.0, 2.1], t.float64), rtol=0.01,
        atol=0.01)),
    ("near_message", lambda t: t.debugging.assert_near(t.constant([1.0, 2.0]),
                                                       t.constant([1.0, 2.1]), summarize=1,
                                                       message="m")),
    ("near_scalar", lambda t: t.debugging.assert_near(t.constant(1.0), t.constant(2.0))),
    ("near_python", lambda t: t.debugging.assert_near(t.constant(1.0), 1.0)),
    ("near_half", lambda t: t.debugging.assert_near(t.constant([1.0], t.float16),
                                                    t.constant([1.1], t.float16))),
    ("near_int", lambda t: t.debugging.assert_near(t.constant([1, 2]), t.constant([1, 2]))),
]


@pytest.mark.parametrize("make", [c[1] for c in NEAR], ids=[c[0] for c in NEAR])
def test_assert_near_matches_tf(real_tf, make):
    _same_as_tf(real_tf, make)


RANKS_AND_SHAPES = [
    ("rank_fail", lambda t: t.debugging.assert_rank(t.constant([1, 2]), 2)),
    ("rank_ok", lambda t: t.debugging.assert_rank(t.constant([1, 2]), 1)),
    ("rank_message", lambda t: t.debugging.assert_rank(t.constant([1, 2]), 2, message="r")),
    ("rank_tensor", lambda t: t.debugging.assert_rank(t.constant([1, 2]), t.constant(2))),
    ("rank_vector", lambda t: t.debugging.assert_rank(t.constant([1, 2]), [1])),
    ("rank_float", lambda t: t.debugging.assert_rank(t.constant([1]), 1.0)),
    ("rank_scalar", lambda t: t.debugging.assert_rank(3.0, 0)),
    ("shapes_ok", lambda t: t.debugging.assert_shapes([(t.ones([2, 3]), ("N", "C")),
                                                       (t.ones([2]), ("N",))])),
    ("shapes_symbol", lambda t: t.debugging.assert_shapes([(t.ones([2, 3]), ("N", "C")),
                                                           (t.ones([3]), ("N",))])),
    ("shapes_rank", lambda t: t.debugging.assert_shapes([(t.ones([2, 3]), ("N", "C", "D"))])),
    ("shapes_explicit", lambda t: t.debugging.assert_shapes([(t.ones([2, 3]), (2, 4))])),
    ("shapes_any", lambda t: t.debugging.assert_shapes([(t.ones([2, 3]), (2, None)),
                                                        (t.ones([2, 3]), [2, "."])])),
    ("shapes_dots_symbol", lambda t: t.debugging.assert_shapes([(t.ones([2, 3, 4]),
                                                                 ("...", 4))])),
    ("shapes_star", lambda t: t.debugging.assert_shapes([(t.ones([2, 3, 4]), ("*", 4))])),
    ("shapes_ellipsis", lambda t: t.debugging.assert_shapes([(t.ones([2, 3, 4]), (..., 5))])),
    ("shapes_star_late", lambda t: t.debugging.assert_shapes([(t.ones([2, 3]), ("N", "*"))])),
    ("shapes_scalar", lambda t: t.debugging.assert_shapes([(t.ones([]), ())])),
    ("shapes_empty_spec", lambda t: t.debugging.assert_shapes([(t.ones([2]), ())])),
    ("shapes_string", lambda t: t.debugging.assert_shapes([(t.ones([2]), "N")])),
    ("shapes_same_symbol", lambda t: t.debugging.assert_shapes([(t.ones([2, 3]), ("N", "N"))])),
    ("shapes_message", lambda t: t.debugging.assert_shapes(
        [(t.ones([2, 3]), ("N", "M")), (t.ones([2]), ("M",))], message="msg")),
    ("shapes_rank_in", lambda t: t.debugging.assert_shapes([(t.ones([2, 3]), ("N",))])),
    ("shapes_scalar_size", lambda t: t.debugging.assert_shapes([(t.ones([]), ("N",)),
                                                                (t.ones([2]), ("N",))])),
    ("shapes_not_iterable", lambda t: t.debugging.assert_shapes([(t.ones([2, 3]), 5)])),
    ("shapes_none", lambda t: t.debugging.assert_shapes([(t.ones([2, 3]), None)])),
]


@pytest.mark.parametrize("make", [c[1] for c in RANKS_AND_SHAPES],
                         ids=[c[0] for c in RANKS_AND_SHAPES])
def test_rank_and_shape_assertions_match_tf(real_tf, make):
    _same_as_tf(real_tf, make)


NUMERICS = [
    ("nan", lambda t: t.debugging.check_numerics(t.constant([1.0, np.nan]), "m")),
    ("inf", lambda t: t.debugging.check_numerics(t.constant([1.0, -np.inf]), "m")),
    ("both", lambda t: t.debugging.check_numerics(t.constant([1.0, np.nan, np.inf]), "c")),
    ("int", lambda t: t.debugging.check_numerics(t.constant([1, 2]), "c")),
    ("finite_nan", lambda t: t.debugging.assert_all_finite(t.constant([1.0, np.nan]), "bad")),
    ("finite_numpy", lambda t: t.debugging.assert_all_finite(np.array([1.0, np.inf]), "bad")),
    ("finite_list", lambda t: t.debugging.assert_all_finite([1.0, np.nan], "bad")),
]


@pytest.mark.parametrize("make", [c[1] for c in NUMERICS], ids=[c[0] for c in NUMERICS])
def test_numerics_match_tf(real_tf, make):
    got, want = _run(lambda: make(_Ours)), _run(lambda: make(_Theirs(real_tf)))
    assert got[0] == want[0]
    # TF's dtype refusal carries the NodeDef after the first line
    assert got[1] == want[1].split("\n")[0]


def test_checks_return_the_tensor_and_keep_gradients():
    x = tf.constant([1.0, 2.0])
    assert debugging.check_numerics(x, "m") is x
    np.testing.assert_array_equal(debugging.assert_all_finite(np.ones(2, np.float16), "m"),
                                  [1.0, 1.0])
    v = tf.Variable([3.0])
    with tf.GradientTape() as tape:
        y = debugging.check_numerics(v * v, "m")
    np.testing.assert_array_equal(tape.gradient(y, v), [6.0])
    assert debugging.assert_rank_at_least(x, 1) is None
    with pytest.raises(ValueError, match="Tensor  must have rank at least 2.  Received rank 1"):
        debugging.assert_rank_at_least(x, 2)
    with pytest.raises(ValueError, match=r"must have rank in \(0, 2\)"):
        debugging.assert_rank_in(x, [0, 2])
    with pytest.raises(InvalidArgumentError, match="Expected 'tf.Tensor\\(False, shape=\\(\\), "
                                                   "dtype=bool\\)' to be true. Summarized data: "
                                                   "b'x'\n1.0, 2.0"):
        debugging.Assert(tf.constant(False), ["x", x])
    assert debugging.Assert(True, ["never printed"]) is None


def test_assert_in_an_ipu_program():
    """An assertion inside a compiled program fails the run with the replica noted."""
    from ipu_gpu.emulation import system
    from ipu_gpu.ipu import config, ipu_compiler, scopes

    system.reset()
    try:
        cfg = config.IPUConfig()
        cfg.auto_select_ipus = 1
        cfg.configure_ipu_system()
        with scopes.ipu_scope("/device:IPU:0"):
            with pytest.raises(InvalidArgumentError, match="Condition x < y did not hold"):
                ipu_compiler.compile(lambda x: debugging.assert_less(x, 0.0),
                                     [np.ones(2, np.float32)])
    finally:
        system.reset()


# ---- tf.print ------------------------------------------------------------------------------

PRINT_CASES = [
    ("range10", lambda t: ((t.range(10),), {})),
    ("range6", lambda t: ((t.range(6),), {})),
    ("range7", lambda t: ((t.range(7),), {})),
    ("floats", lambda t: ((t.constant([1.5, 2.0, 3.25, 1e10, 1e-5, -0.0]),), {})),
    ("doubles", lambda t: ((t.constant([1 / 3, 2 / 3, 0.1, 1e16], t.float64),), {})),
    ("halves", lambda t: ((t.constant([1 / 3, 0.1, 65504.0], t.float16),), {})),
    ("float_digits", lambda t: ((t.constant([1e-10, 123456789.0, 0.1, 1e21, 1e-7]),), {})),
    ("specials", lambda t: ((t.constant([np.nan, np.inf, -np.inf]),), {})),
    ("scalar", lambda t: ((t.constant(3.0),), {})),
    ("bools", lambda t: ((t.constant(True), t.constant([True, False])), {})),
    ("ints", lambda t: ((t.constant([1, 2, 3], t.int64), t.constant([255], "uint8"),
                         t.constant([-1], "int8")), {})),
    ("rank3", lambda t: ((t.reshape(t.range(24), [2, 3, 4]),), {})),
    ("rank4", lambda t: ((t.zeros([1, 1, 1, 2]),), {})),
    ("rows", lambda t: ((t.reshape(t.range(100), [10, 10]),), {})),
    ("rows_all", lambda t: ((t.reshape(t.range(100), [10, 10]),), {"summarize": -1})),
    ("rows_one", lambda t: ((t.reshape(t.range(100), [10, 10]),), {"summarize": 1})),
    ("blocks", lambda t: ((t.reshape(t.range(8 * 8 * 8), [8, 8, 8]),), {"summarize": 2})),
    ("empties", lambda t: ((t.constant([]), t.zeros([0, 3]), t.zeros([2, 0])), {})),
    ("empty_all", lambda t: ((t.zeros([2, 0]),), {"summarize": -1})),
    ("summarize0", lambda t: ((t.constant(1.0), t.constant([1.0, 2.0])), {"summarize": 0})),
    ("structures", lambda t: (("a", 1, 2.5, [1, 2], {"b": t.constant(1), "a": 2},
                               (3, t.constant([1, 2]))), {"sep": "|", "end": "$\n"})),
    ("nested", lambda t: (({"k": [t.constant(1), None]}, [t.constant(1.0), "x"]), {})),
    ("python", lambda t: ((np.arange(12), np.float32(1.5), None, True, [[1.0, 2.0]]), {})),
    ("braces", lambda t: (("{}", t.constant(1)), {})),
    ("variable", lambda t: ((t.Variable([1.0, 2.0]),), {})),
    ("nothing", lambda t: ((), {})),
]


@pytest.mark.parametrize("case", [c[1] for c in PRINT_CASES], ids=[c[0] for c in PRINT_CASES])
def test_print_formats_as_tf(real_tf, tmp_path, case):
    from ipu_gpu import printing

    ours, theirs = tmp_path / "ours.txt", tmp_path / "theirs.txt"

    class Ours(_Ours):
        reshape = staticmethod(tf.reshape)
        Variable = tf.Variable
        int64 = tf.int64

    class Theirs(_Theirs):
        def __init__(self, t):
            super().__init__(t)
            self.reshape, self.Variable, self.int64 = t.reshape, t.Variable, t.int64

    args, kwargs = case(Ours)
    printing.print(*args, output_stream=f"file://{ours}", **kwargs)
    args, kwargs = case(Theirs(real_tf))
    real_tf.print(*args, output_stream=f"file://{theirs}", **kwargs)
    assert ours.read_text() == theirs.read_text()


def test_print_streams_and_errors(capsys, caplog, real_tf):
    import io
    import logging
    import sys

    from ipu_gpu import printing

    printing.print(tf.constant([1, 2]), "x")  # default: sys.stderr
    printing.print(tf.constant(1.5), output_stream=sys.stdout, end="")
    out = capsys.readouterr()
    assert out.err == "[1 2] x\n" and out.out == "1.5"
    with caplog.at_level(logging.INFO, logger="tensorflow"):
        printing.print(tf.constant(5), output_stream=real_tf.compat.v1.logging.info)
        printing.print("warned", output_stream=logging.WARNING)
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == \
        [(logging.INFO, "5"), (logging.WARNING, "warned")]
    for bad in (io.StringIO(), "stdout", 7):
        with pytest.raises(ValueError, match="Unsupported output stream, logging level, or "
                                             "file"):
            printing.print(1, output_stream=bad)
    with pytest.raises(ValueError, match="Unsupported output stream"):
        real_tf.print(1, output_stream=io.StringIO())
    with pytest.raises(ValueError, match=r"Unrecognized keyword arguments for tf.print: "
                                         r"\{'bogus': 1\}"):
        printing.print(1, bogus=1)
    assert printing.print("returns") is None
    capsys.readouterr()
