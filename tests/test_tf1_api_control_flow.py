"""tf.compat.v1.case (TF 1.15's semantics: first true predicate wins, the last function as
a guarded default, exclusive checks) and tf.Assert in graphs, against real TF1 graph mode."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as core
import ipu_gpu.compat.v1 as v1
from ipu_gpu.errors import InvalidArgumentError


def _cases(c, f32):
    """Results (value or error text) of three case constructions fed several x."""
    g = c.Graph()
    with g.as_default():
        x = c.placeholder(np.int32, [])
        y = c.placeholder(f32, [2])
        no_default = c.case([(x < 0, lambda: y * 2.0), (x > 5, lambda: y + 1.0)])
        one_pair = c.case([(x < 0, lambda: y)])  # y made before: no guard, as in TF
        one_built = c.case([(x < 0, lambda: y * 1.0)])
        exclusive = c.case([(x < 3, lambda: y * 3.0), (x < 5, lambda: y * 4.0)],
                           default=lambda: y * 0.0, exclusive=True)
        ordered = c.case([(x < 3, lambda: y * 3.0), (x < 5, lambda: y * 4.0)],
                         default=lambda: y * 0.0)
        out = {}
        with c.Session(graph=g) as sess:
            for tname, t in [("no_default", no_default), ("one_pair", one_pair),
                             ("one_built", one_built),
                             ("exclusive", exclusive), ("ordered", ordered)]:
                for xv in (-1, 2, 4, 7):
                    try:
                        out[tname, xv] = sess.run(t, {x: xv, y: [1.0, 2.0]})
                    except Exception as e:  # noqa: BLE001 - TF's and ours compared
                        out[tname, xv] = (type(e).__name__, _assert_text(str(e)))
        return out


def _assert_text(message: str) -> str:
    """The "assertion failed: ..." line of a run's error (TF adds graph decorations)."""
    line = next(ln for ln in message.splitlines() if "assertion failed" in ln)
    return line[line.index("assertion failed"):]


def _names_neutral(value):
    # the exclusive message names the predicate tensors; graph op names differ
    if isinstance(value, tuple):
        return value[0], value[1].split(" (")[0], value[1].rsplit("] ", 1)[-1]
    return value


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_case_equals_real_tensorflow(real_tf):
    ours = _cases(v1, np.float32)
    theirs = _cases(real_tf.compat.v1, np.float32)
    assert ours.keys() == theirs.keys()
    for key in ours:
        a, b = _names_neutral(ours[key]), _names_neutral(theirs[key])
        if isinstance(b, tuple):
            assert a == b, key
        else:
            np.testing.assert_array_equal(a, b, err_msg=str(key))


def test_case_messages():
    out = _cases(v1, np.float32)
    assert out["no_default", 2] == (
        "InvalidArgumentError",
        "assertion failed: [Input error: None of conditions evaluated as True:] [0 0]")
    np.testing.assert_array_equal(out["one_pair", 2], [1.0, 2.0])
    assert out["one_built", 2] == (
        "InvalidArgumentError",
        "assertion failed: [Input error: None of conditions evaluated as True:] [0]")
    kind, text = out["exclusive", 2]
    assert kind == "InvalidArgumentError"
    assert text.startswith("assertion failed: [Input error: exclusive=True: more than 1 "
                           "conditions (")
    assert text.endswith("evaluated as True:] [1 1]")
    np.testing.assert_array_equal(out["ordered", 2], [3.0, 6.0])  # the first true one wins


def test_case_guard_attaches_to_what_the_default_builds():
    """As TF 1.15: the default's assertion is a control dependency of the nodes its function
    makes (a constant included), not of a tensor made before."""
    with v1.Graph().as_default():
        x = v1.placeholder(np.int32, [])
        outer = v1.placeholder(np.float32, [])
        built = v1.case([(x < 0, lambda: outer), (x > 0, lambda: v1.constant(5.0))])
        passed = v1.case([(x < 0, lambda: outer)])
        with v1.Session() as sess:
            assert sess.run(built, {x: 1, outer: 3.0}) == 5.0
            with pytest.raises(InvalidArgumentError, match="None of conditions"):
                sess.run(built, {x: 0, outer: 3.0})
            assert sess.run(passed, {x: 0, outer: 3.0}) == 3.0


def test_case_gradient_through_the_taken_branch():
    with v1.Graph().as_default():
        x = v1.placeholder(np.int32, [])
        w = v1.Variable(np.float32(2.0))
        r = v1.case([(x < 0, lambda: w * w), (x >= 0, lambda: w * 3.0)])
        (g,) = v1.gradients(r, [w])
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            assert sess.run(g, {x: -1}) == pytest.approx(4.0)
            assert sess.run(g, {x: 1}) == pytest.approx(3.0)


def test_case_argument_errors():
    with v1.Graph().as_default():
        p = v1.placeholder(np.bool_, [])
        with pytest.raises(TypeError, match="fns must be a list, tuple, or dict"):
            v1.case("pairs")
        with pytest.raises(TypeError, match="Each entry in pred_fn_pairs must be a 2-tuple"):
            v1.case([p])
        with pytest.raises(TypeError, match="pred must be a Tensor, got: True"):
            v1.case([(True, lambda: 1.0)])
        with pytest.raises(TypeError, match="pred must be Tensor of type bool"):
            v1.case([(v1.placeholder(np.int32, []), lambda: 1.0)])
        with pytest.raises(TypeError, match="must be callable"):
            v1.case([(p, 3.0)])


def test_case_dict_in_a_graph_is_ordered_by_predicate_name():
    with v1.Graph().as_default():
        x = v1.placeholder(np.int32, [])
        a, b = x > 0, x > 1  # both true for x = 2: the one whose name sorts first wins
        r = v1.case({b: lambda: v1.constant(2), a: lambda: v1.constant(1)},
                    default=lambda: v1.constant(0))
        first = 1 if a.name < b.name else 2
        with v1.Session() as sess:
            assert sess.run(r, {x: 2}) == first
            assert sess.run(r, {x: 0}) == 0


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_case_eagerly_equals_real_tensorflow(real_tf):
    assert int(v1.case([(core.constant(True), lambda: core.constant(1))])) == 1
    with pytest.raises(InvalidArgumentError) as ours:
        v1.case([(core.constant(False), lambda: core.constant(1))])
    with pytest.raises(real_tf.errors.InvalidArgumentError) as theirs:
        real_tf.compat.v1.case([(real_tf.constant(False), lambda: real_tf.constant(1))])
    assert str(ours.value) == theirs.value.message


def test_graph_assert_fails_the_run_that_executes_it():
    with v1.Graph().as_default():
        x = v1.placeholder(np.float32, [4])
        check = v1.Assert(v1.reduce_all(x > 0), ["x must be positive:", x], summarize=2)
        with v1.control_dependencies([check]):
            y = v1.identity(x * 2.0)
        with v1.Session() as sess:
            np.testing.assert_array_equal(sess.run(y, {x: np.ones(4)}), 2 * np.ones(4))
            with pytest.raises(InvalidArgumentError) as err:
                sess.run(y, {x: [1.0, -1.0, 2.0, 3.0]})
    assert str(err.value) == "assertion failed: [x must be positive:] [1 -1...]"  # TF's text
