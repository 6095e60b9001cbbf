"""tf.function (eager, with TF's binding of input_signature), concrete functions, tracing
counts, py_function and numpy_function: against real TensorFlow where it runs the same case."""

from __future__ import annotations

import re

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu.core.spec import TensorSpec
from ipu_gpu.errors import InvalidArgumentError
from ipu_gpu.function import ConcreteFunction, Function, function, numpy_function, py_function


def _binding_reason(err) -> str:
    """The reason inside TF's "Binding inputs to tf.function failed due to `...`" text."""
    m = re.search(r"failed due to `(.*?)`\. Received", str(err), re.S)
    assert m, str(err)
    return m.group(1)


def _outcome(call):
    try:
        return "ok", np.asarray(call())
    except Exception as e:  # noqa: BLE001 - the kind of failure is what is compared
        return type(e).__name__, None


# ---- tf.function ---------------------------------------------------------------------------


def test_decorator_forms_and_methods():
    @function
    def plain(x):
        return x * 2

    @function(jit_compile=True)
    def jitted(x):
        return x + 1

    assert isinstance(plain, Function) and plain.__name__ == "plain"
    assert float(plain(tf.constant(3.0))) == 6.0
    assert float(jitted(1.0)) == 2.0
    assert float(function(lambda x: x - 1)(tf.constant(1.0))) == 0.0
    assert float(function(experimental_compile=True)(lambda: tf.constant(5.0))()) == 5.0

    class Model:
        def __init__(self, k):
            self.k = k

        @function
        def scale(self, x):
            return x * self.k

    a, b = Model(3.0), Model(4.0)
    assert float(a.scale(tf.constant(2.0))) == 6.0 and float(b.scale(tf.constant(2.0))) == 8.0
    assert a.scale is a.scale and a.scale is not b.scale  # one Function per instance
    assert a.scale.python_function is Model.__dict__["scale"].python_function
    assert isinstance(Model.scale, Function)


def test_python_control_flow_runs_eagerly():
    calls = []

    @function
    def total(n):
        calls.append(1)  # a Python side effect runs on every call (eager)
        s = tf.constant(0)
        for i in tf.range(n):
            s += i
        if s > 5:
            s = s * 2
        return s

    assert int(total(tf.constant(5))) == 20
    assert int(total(tf.constant(3))) == 3
    assert len(calls) == 2


def test_argument_errors(real_tf):
    with pytest.raises(TypeError, match="not a callable object"):
        function(3)
    with pytest.raises(ValueError, match="Cannot specify both 'experimental_compile' and "
                                         "'jit_compile'"):
        function(lambda x: x, experimental_compile=True, jit_compile=True)
    with pytest.raises(TypeError, match="input_signature must be either a tuple or a list"):
        function(lambda x: x, input_signature=TensorSpec([2]))
    with pytest.raises(TypeError, match="possibly nested sequence of TensorSpec objects, got "
                                        r"invalid args \[3\]"):
        function(lambda x: x, input_signature=[3])

    @function(input_signature=[TensorSpec([2])])
    def two(x, y):
        return x

    with pytest.raises(TypeError, match="input_signature missing type constraint for y"):
        two(tf.ones(2), tf.ones(2))
    # the same refusals in TF
    with pytest.raises(ValueError):
        real_tf.function(lambda x: x, experimental_compile=True, jit_compile=True)
    with pytest.raises(TypeError):
        real_tf.function(lambda x: x, input_signature=real_tf.TensorSpec([2]))


@pytest.mark.parametrize("value", [
    "ones_3x2", "ones_3x3", "int_3x2", "float64_numpy", "list", "vector", "scalar_int",
])
def test_input_signature_binding_matches_tf(real_tf, value):
    def make(t):
        return {
            "ones_3x2": lambda: t.ones([3, 2]),
            "ones_3x3": lambda: t.ones([3, 3]),
            "int_3x2": lambda: t.ones([3, 2], t.int32),
            "float64_numpy": lambda: np.ones((3, 2)),
            "list": lambda: [[1.0, 2.0]],
            "vector": lambda: t.ones([2]),
            "scalar_int": lambda: 3,
        }[value]()

    ours = function(lambda x: x * 2, input_signature=[TensorSpec([None, 2], tf.float32)])
    theirs = real_tf.function(lambda x: x * 2,
                              input_signature=[real_tf.TensorSpec([None, 2], real_tf.float32)])
    got, want = _outcome(lambda: ours(make(tf))), _outcome(lambda: theirs(make(real_tf)))
    assert got[0] == want[0]
    if got[0] == "ok":
        np.testing.assert_array_equal(got[1], want[1])
        assert got[1].dtype == want[1].dtype


def test_binding_messages_match_tf(real_tf):
    sig = [TensorSpec([None, 2], tf.float32)]
    ours = function(lambda x: x, input_signature=sig)
    theirs = real_tf.function(lambda x: x,
                              input_signature=[real_tf.TensorSpec([None, 2], real_tf.float32)])
    for make in (lambda t: (t.ones([3, 3]),), lambda t: (t.ones([1, 2]), t.ones([1, 2])),
                 lambda t: (t.ones([3, 2], t.int32),)):
        with pytest.raises(TypeError) as mine:
            ours(*make(tf))
        with pytest.raises(TypeError) as tf_err:
            theirs(*make(real_tf))
        assert _binding_reason(mine.value) == _binding_reason(tf_err.value)
        assert str(mine.value).endswith("for signature: (x: TensorSpec(shape=(None, 2), "
                                        "dtype=tf.float32, name=None)).")
    assert float(ours(x=tf.ones([1, 2]))[0, 0]) == 1.0  # by keyword
    with pytest.raises(TypeError, match="Cannot convert 'a' to EagerTensor of dtype float"):
        function(lambda x: x, input_signature=[TensorSpec([], tf.float32)])("a")


def test_nested_signature_and_variables():
    @function(input_signature=[(TensorSpec([2], name="a"), TensorSpec([], tf.int32))])
    def f(p):
        return p[0] * tf.cast(p[1], tf.float32)

    np.testing.assert_array_equal(f((tf.ones(2), tf.constant(3))), [3.0, 3.0])
    np.testing.assert_array_equal(f([tf.ones(2), tf.constant(3)]), [3.0, 3.0])  # TF 2.6: a list
    with pytest.raises(TypeError, match="to have length of 2"):
        f((tf.ones(2),))
    sig = f.get_concrete_function().structured_input_signature
    assert sig == (((TensorSpec([2], tf.float32, "a"), TensorSpec([], tf.int32, "p_1")),), {})

    v = tf.Variable([1.0, 2.0])

    @function(input_signature=[TensorSpec([2], tf.float32)])
    def g(x):
        return x * x

    with tf.GradientTape() as tape:
        y = tf.reduce_sum(g(v))  # the variable is read, and the read stays on the tape
    np.testing.assert_array_equal(tape.gradient(y, v), [2.0, 4.0])


def test_tracing_count_matches_tf(real_tf):
    def body(x, n=2):
        return x * n

    ours, theirs = function(body), real_tf.function(body)
    calls = [lambda t: (1.0,), lambda t: (2.0,), lambda t: (t.constant(1.0),),
             lambda t: (t.constant(2.0),), lambda t: (t.constant([1.0]),),
             lambda t: (t.constant(1.0), 3), lambda t: (t.constant(4.0),)]
    for make in calls:
        ours(*make(tf))
        theirs(*make(real_tf))
        assert ours.experimental_get_tracing_count() == theirs.experimental_get_tracing_count()

    sig = function(lambda x: x, input_signature=[TensorSpec([None])])
    assert sig.experimental_get_tracing_count() == 0
    for n in (1, 2, 3):
        sig(tf.ones([n]))
    assert sig.experimental_get_tracing_count() == 1


def test_reduce_retracing_generalises_shapes(real_tf):
    ours = function(lambda x: x, reduce_retracing=True)
    theirs = real_tf.function(lambda x: x, reduce_retracing=True)
    for n in (1, 2, 3, 4):
        ours(tf.ones([n]))
        theirs(real_tf.ones([n]))
    assert ours.experimental_get_tracing_count() == theirs.experimental_get_tracing_count()
    relaxed = function(lambda x: x, experimental_relax_shapes=True)
    for n in (1, 2, 3):
        relaxed(tf.ones([n]))
    assert relaxed.experimental_get_tracing_count() == 2


def test_concrete_functions_match_tf(real_tf):
    def body(x, n=2):
        return x * n

    ours, theirs = function(body), real_tf.function(body)
    cf = ours.get_concrete_function(tf.constant(3.0), n=3)
    tcf = theirs.get_concrete_function(real_tf.constant(3.0), n=3)
    assert isinstance(cf, ConcreteFunction)
    (spec, lit), kw = cf.structured_input_signature
    (tspec, tlit), tkw = tcf.structured_input_signature
    assert repr(spec) == repr(tspec) and lit == tlit == 3 and kw == tkw == {}
    assert float(cf(tf.constant(5.0))) == float(tcf(real_tf.constant(5.0))) == 15.0
    with pytest.raises(TypeError, match=r"Can not cast 4 to Literal\[3\]"):
        cf(tf.constant(5.0), n=4)
    with pytest.raises(InvalidArgumentError, match="expected to be a float tensor but is a "
                                                   "double tensor"):
        cf(tf.constant(5.0, tf.float64))
    with pytest.raises(real_tf.errors.InvalidArgumentError, match="expected to be a float "
                                                                  "tensor but is a double"):
        tcf(real_tf.constant(5.0, real_tf.float64))
    with pytest.raises(TypeError, match="missing a required argument: 'x'"):
        ours.get_concrete_function()
    with pytest.raises(TypeError, match="missing a required argument: 'x'"):
        theirs.get_concrete_function()

    spec_cf = ours.get_concrete_function(TensorSpec([None], tf.float32))
    assert repr(spec_cf.structured_input_signature[0][0]) == \
        "TensorSpec(shape=(None,), dtype=tf.float32, name='x')"
    np.testing.assert_array_equal(spec_cf(tf.ones([3])), [2.0, 2.0, 2.0])

    sig = function(body, input_signature=[TensorSpec([None, 2], tf.float32)])
    tsig = real_tf.function(body, input_signature=[real_tf.TensorSpec([None, 2],
                                                                       real_tf.float32)])
    assert repr(sig.get_concrete_function().structured_input_signature) == \
        repr(tsig.get_concrete_function().structured_input_signature)
    np.testing.assert_array_equal(sig.get_concrete_function()(tf.ones([1, 2])), [[2.0, 2.0]])


# ---- py_function / numpy_function ----------------------------------------------------------

PY_CASES = [
    ("double", lambda t: (lambda x: x * 2, [t.constant(1.0)], t.float32)),
    ("list_tout", lambda t: (lambda x: x * 2, [t.constant(1.0)], [t.float32])),
    ("pair", lambda t: (lambda x: (x, x), [t.constant(1.0)], [t.float32, t.float32])),
    ("tensor_wrong_dtype", lambda t: (lambda x: x * 2, [t.constant(1.0)], t.float64)),
    ("numpy_converted", lambda t: (lambda x: np.float64(2.0), [t.constant(1.0)], t.float32)),
    ("int_to_float", lambda t: (lambda x: 2, [t.constant(1.0)], t.float32)),
    ("float_to_int", lambda t: (lambda x: 2.5, [t.constant(1.0)], t.int32)),
    ("none", lambda t: (lambda x: None, [t.constant(1.0)], [])),
    ("extra_dropped", lambda t: (lambda x: (x, x), [t.constant(1.0)], t.float32)),
    ("too_few", lambda t: (lambda x: (x,), [t.constant(1.0)], [t.float32, t.float32])),
    ("no_inputs", lambda t: (lambda: 7, [], t.int32)),
    ("python_input", lambda t: (lambda x: x + 1.0, [2.0], t.float32)),
]


@pytest.mark.parametrize("case", [c[1] for c in PY_CASES], ids=[c[0] for c in PY_CASES])
def test_py_function_matches_tf(real_tf, case):
    got = _outcome(lambda: py_function(*case(tf)))
    want = _outcome(lambda: real_tf.py_function(*case(real_tf)))
    want_kind = "InvalidArgumentError" if want[0] == "InvalidArgumentError" else want[0]
    assert got[0] == want_kind
    if got[0] == "ok":
        np.testing.assert_array_equal(got[1], want[1])
        assert got[1].dtype == want[1].dtype


def test_py_function_errors_and_decorator():
    with pytest.raises(TypeError, match="Missing required argument: 'Tout'"):
        py_function(lambda x: x, [1.0])
    with pytest.raises(InvalidArgumentError, match="returns 1 values, but expects to see 2"):
        py_function(lambda x: x, [1.0], [tf.float32, tf.float32])
    with pytest.raises(ZeroDivisionError):  # TF wraps it in UnknownError
        py_function(lambda x: 1 / 0, [1.0], tf.float32)

    @py_function(Tout=tf.float32)
    def halve(x):
        return x / 2

    assert float(halve(tf.constant(3.0))) == 1.5
    seen = []
    py_function(lambda x: seen.append(type(x)) or x, [tf.Variable(1.0)], tf.float32)
    assert seen == [tf.Tensor]  # a Variable arrives as a Tensor, as TF's EagerTensor


def test_py_function_gradients_match_tf(real_tf):
    def grads(t, make_tape):
        x = t.constant(3.0)
        w = t.Variable(2.0)
        with make_tape(persistent=True) as tape:
            tape.watch(x)
            y = t.py_function(lambda a, b: a * a * b, [x, w], t.float32)
            z = t.py_function(lambda a: a * w, [x], t.float32)  # w captured, not an input
            u = t.py_function(lambda a: (a * a, a), [x], [t.float32, t.float32])
        out = [tape.gradient(y, [x, w]), tape.gradient(z, [x, w]), tape.gradient(u, x)]
        return [[None if g is None else float(g) for g in row] if isinstance(row, list)
                else float(row) for row in out]

    ours = grads(_TfShim, tf.GradientTape)
    theirs = grads(real_tf, real_tf.GradientTape)
    assert ours == theirs == [[12.0, 9.0], [2.0, None], 7.0]


class _TfShim:
    """ipu_gpu with py_function under TF's name, for the shared gradient test body."""

    constant = staticmethod(tf.constant)
    Variable = tf.Variable
    float32 = tf.float32
    py_function = staticmethod(py_function)


def test_py_function_nested_in_a_tape_that_is_not_watching():
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        y = py_function(lambda a: a * a, [x], tf.float32)  # x unwatched: no gradient
    assert tape.gradient(y, x) is None
    assert float(y) == 4.0


NUMPY_CASES = [
    ("double", lambda t: (lambda x: x * 2, t.float32)),
    ("float64_result", lambda t: (lambda x: np.float64(x) * 2, t.float32)),
    ("python_float", lambda t: (lambda x: 2.0, t.float32)),
    ("python_float_f64", lambda t: (lambda x: 2.0, t.float64)),
    ("python_int", lambda t: (lambda x: 2, t.int32)),
    ("python_int_i64", lambda t: (lambda x: 2, t.int64)),
    ("bool", lambda t: (lambda x: True, t.bool)),
    ("pair_single", lambda t: (lambda x: (x, x), t.float32)),
    ("one_for_two", lambda t: (lambda x: x, [t.float32, t.float32])),
    ("list_pair", lambda t: (lambda x: [x, x], [t.float32, t.float32])),
    ("half_for_float", lambda t: (lambda x: np.ones(3, np.float16), t.float32)),
    ("vector", lambda t: (lambda x: np.ones(3, np.float32), t.float32)),
]


@pytest.mark.parametrize("case", [c[1] for c in NUMPY_CASES], ids=[c[0] for c in NUMPY_CASES])
def test_numpy_function_matches_tf_pyfunc_kernel(real_tf, case):
    """numpy_function checks results as TF's PyFunc kernel (graph mode; TF 2.6 eager too)."""
    f, tout = case(tf)
    got = _outcome(lambda: numpy_function(f, [tf.constant(1.0)], tout))
    tf_f, tf_tout = case(real_tf)

    @real_tf.function
    def graph(x):
        return real_tf.numpy_function(tf_f, [x], tf_tout)

    want = _outcome(lambda: graph(real_tf.constant(1.0)))
    assert got[0] == want[0]
    if got[0] == "ok":
        np.testing.assert_array_equal(got[1], want[1])
        assert got[1].dtype == want[1].dtype


def test_numpy_function_messages_and_no_gradient():
    seen = []
    out = numpy_function(lambda a: seen.append((type(a), a.flags.writeable)) or a * 2,
                         [tf.constant([1.0, 2.0])], tf.float32)
    assert seen == [(np.ndarray, True)]
    np.testing.assert_array_equal(out, [2.0, 4.0])
    with pytest.raises(InvalidArgumentError, match=r"0-th value returned by pyfunc_\d+ is "
                                                   "double, but expects float"):
        numpy_function(lambda a: 2.0, [1.0], tf.float32)
    with pytest.raises(InvalidArgumentError, match=r"pyfunc_\d+ returns 2 values, but expects "
                                                   "to see 1 values."):
        numpy_function(lambda a: (a, a), [1.0], tf.float32)
    assert numpy_function(lambda a: None, [1.0], []) is None
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = numpy_function(lambda a: a * a, [x], tf.float32)
    assert tape.gradient(y, x) is None
    with pytest.raises(TypeError, match="Missing required argument: 'Tout'"):
        numpy_function(lambda a: a, [1.0])

    @numpy_function(Tout=tf.float32)
    def twice(a):
        return a * 2

    assert float(twice(tf.constant(1.5))) == 3.0
