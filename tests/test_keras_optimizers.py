"""ipu_gpu.keras.optimizers against tf-keras's Keras 2 optimizers (``tf_keras.optimizers.legacy``).

Each comparison starts both sides from the same float32 variables and feeds them the same
gradient sequence for several steps; variables and every optimizer weight (iterations, slots,
Nadam's momentum cache, in Keras's order) must then agree to float32 tolerance. TensorFlow is
imported only through the ``real_tf`` fixture; these tests skip without tf-keras.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import pytest

import ipu_gpu
from ipu_gpu.keras import optimizers
from ipu_gpu.keras.optimizers import schedules

STEPS = 4
SHAPES = [(3, 4), (4,), ()]
RTOL, ATOL = 2e-5, 1e-6


@pytest.fixture(scope="module")
def tf_keras(real_tf):
    """tf-keras (the Keras 2 oracle), imported after TensorFlow's fixture set it up."""
    return pytest.importorskip("tf_keras")


def _problem(seed, dtype=np.float32, shapes=SHAPES):
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(s).astype(dtype) for s in shapes]
    grads = [[rng.standard_normal(s).astype(dtype) for s in shapes] for _ in range(STEPS)]
    return init, grads


def _run_ours(opt, init, grads, steps=STEPS):
    variables = [ipu_gpu.Variable(v, name=f"w{i}") for i, v in enumerate(init)]
    for step in grads[:steps]:
        opt.apply_gradients(zip([ipu_gpu.constant(g) for g in step], variables))
    return [v.numpy() for v in variables], opt.get_weights()


def _run_theirs(real_tf, opt, init, grads, steps=STEPS):
    variables = [real_tf.Variable(v, name=f"w{i}") for i, v in enumerate(init)]
    for step in grads[:steps]:
        opt.apply_gradients(zip([real_tf.constant(g) for g in step], variables))
    weights = opt.get_weights() if hasattr(opt, "get_weights") else None  # not the new AdamW
    return [v.numpy() for v in variables], weights


def _assert_same(ours, theirs, rtol=RTOL, atol=ATOL):
    (our_vars, our_weights), (their_vars, their_weights) = ours, theirs
    assert len(our_weights) == len(their_weights)
    for a, b in zip(our_vars, their_vars):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    for a, b in zip(our_weights, their_weights):
        assert np.shape(a) == np.shape(b)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


CONFIGS = [
    ("SGD", {}),
    ("SGD", {"learning_rate": 0.1, "momentum": 0.9}),
    ("SGD", {"learning_rate": 0.1, "momentum": 0.9, "nesterov": True}),
    ("Adam", {"learning_rate": 0.1}),
    ("Adam", {"learning_rate": 0.1, "amsgrad": True, "beta_1": 0.5}),
    ("RMSprop", {"learning_rate": 0.05}),
    ("RMSprop", {"learning_rate": 0.05, "centered": True}),
    ("RMSprop", {"learning_rate": 0.05, "momentum": 0.5}),
    ("RMSprop", {"learning_rate": 0.05, "momentum": 0.5, "centered": True, "rho": 0.8}),
    ("Adagrad", {"learning_rate": 0.1, "initial_accumulator_value": 0.5}),
    ("Adadelta", {"learning_rate": 1.0, "rho": 0.9}),
    ("Adamax", {"learning_rate": 0.1}),
    ("Nadam", {"learning_rate": 0.1}),
    ("SGD", {"learning_rate": 0.1, "momentum": 0.5, "decay": 0.1}),
    ("Adam", {"learning_rate": 0.1, "decay": 0.5, "epsilon": 1e-3}),
]


@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=lambda x: str(x))
def test_matches_keras_legacy(tf_keras, real_tf, name, kwargs):
    init, grads = _problem(1)
    ours = _run_ours(getattr(optimizers, name)(**kwargs), init, grads)
    theirs = _run_theirs(real_tf, getattr(tf_keras.optimizers.legacy, name)(**kwargs), init,
                         grads)
    _assert_same(ours, theirs)


@pytest.mark.parametrize("clip", [{"clipnorm": 0.5}, {"clipvalue": 0.3},
                                  {"global_clipnorm": 0.7},
                                  {"clipnorm": 0.5, "clipvalue": 0.2}], ids=str)
@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop"])
def test_clipping_matches_keras(tf_keras, real_tf, name, clip):
    init, grads = _problem(2)
    kwargs = {"learning_rate": 0.1, **clip}
    ours = _run_ours(getattr(optimizers, name)(**kwargs), init, grads)
    theirs = _run_theirs(real_tf, getattr(tf_keras.optimizers.legacy, name)(**kwargs), init,
                         grads)
    _assert_same(ours, theirs)


def test_global_clipnorm_of_zero_gradients_and_infinite_norm():
    v = ipu_gpu.Variable([1.0, 2.0])
    optimizers.SGD(1.0, global_clipnorm=1.0).apply_gradients([(ipu_gpu.zeros([2]), v)])
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])  # a zero norm clips nothing
    optimizers.SGD(1.0, clipnorm=1.0).apply_gradients([(ipu_gpu.zeros([2]), v)])
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
    optimizers.SGD(1.0, global_clipnorm=1.0).apply_gradients(
        [(ipu_gpu.constant([np.inf, 1.0]), v)])
    assert np.isnan(v.numpy()).all()  # TF: every value NaN when the norm is not finite


SCHEDULES = [
    ("ExponentialDecay", dict(initial_learning_rate=0.1, decay_steps=2, decay_rate=0.5)),
    ("ExponentialDecay", dict(initial_learning_rate=0.1, decay_steps=2, decay_rate=0.5,
                              staircase=True)),
    ("PiecewiseConstantDecay", dict(boundaries=[1, 2], values=[0.1, 0.05, 0.01])),
    ("PolynomialDecay", dict(initial_learning_rate=0.1, decay_steps=3, power=2.0)),
    ("PolynomialDecay", dict(initial_learning_rate=0.1, decay_steps=2, cycle=True,
                             end_learning_rate=0.01)),
    ("CosineDecay", dict(initial_learning_rate=0.1, decay_steps=3, alpha=0.1)),
    ("CosineDecay", dict(initial_learning_rate=0.1, decay_steps=3, warmup_target=0.2,
                         warmup_steps=2)),
    ("InverseTimeDecay", dict(initial_learning_rate=0.1, decay_steps=1, decay_rate=0.5)),
    ("InverseTimeDecay", dict(initial_learning_rate=0.1, decay_steps=2, decay_rate=0.5,
                              staircase=True)),
    ("CosineDecayRestarts", dict(initial_learning_rate=0.1, first_decay_steps=2)),
    ("CosineDecayRestarts", dict(initial_learning_rate=0.1, first_decay_steps=2, t_mul=1.0,
                                 m_mul=0.5, alpha=0.1)),
]


@pytest.mark.parametrize("name,kwargs", SCHEDULES, ids=str)
def test_schedule_values_match_keras(tf_keras, real_tf, name, kwargs):
    ours = getattr(schedules, name)(**kwargs)
    theirs = getattr(tf_keras.optimizers.schedules, name)(**kwargs)
    for step in [0, 1, 2, 3, 5, 8, 13]:
        for dtype in ("float32", "int64"):
            a = ours(ipu_gpu.constant(step, dtype=dtype))
            b = theirs(real_tf.constant(step, dtype=dtype))
            assert a.dtype == np.dtype(b.dtype.as_numpy_dtype)
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-9)
    assert ours.get_config() == theirs.get_config()
    legacy = tf_keras.optimizers.schedules.serialize(theirs, use_legacy_format=True)
    assert schedules.serialize(ours) == legacy
    again = schedules.deserialize(schedules.serialize(ours))
    assert type(again) is type(ours) and again.get_config() == ours.get_config()
    new_form = tf_keras.optimizers.schedules.serialize(theirs)  # "module", "registered_name"
    assert schedules.deserialize(new_form).get_config() == ours.get_config()


@pytest.mark.parametrize("name,kwargs", SCHEDULES[::2], ids=str)
@pytest.mark.parametrize("opt", [("SGD", {"momentum": 0.9}), ("Adam", {})], ids=str)
def test_optimizers_follow_schedules(tf_keras, real_tf, name, kwargs, opt):
    init, grads = _problem(3)
    opt_name, opt_kwargs = opt
    ours = _run_ours(getattr(optimizers, opt_name)(
        learning_rate=getattr(schedules, name)(**kwargs), **opt_kwargs), init, grads)
    theirs = _run_theirs(real_tf, getattr(tf_keras.optimizers.legacy, opt_name)(
        learning_rate=getattr(tf_keras.optimizers.schedules, name)(**kwargs), **opt_kwargs),
        init, grads)
    _assert_same(ours, theirs)


def test_custom_schedule_subclass(tf_keras, real_tf):
    class Halving(schedules.LearningRateSchedule):
        def __call__(self, step):
            return 0.2 * ipu_gpu.pow(0.5, step)

        def get_config(self):
            return {}

    class TFHalving(tf_keras.optimizers.schedules.LearningRateSchedule):
        def __call__(self, step):
            return 0.2 * real_tf.pow(0.5, step)

        def get_config(self):
            return {}

    init, grads = _problem(4)
    ours = _run_ours(optimizers.SGD(Halving()), init, grads)
    theirs = _run_theirs(real_tf, tf_keras.optimizers.legacy.SGD(TFHalving()), init, grads)
    _assert_same(ours, theirs)
    with pytest.raises(NotImplementedError, match="must override `__call__"):
        schedules.LearningRateSchedule()(0)


def test_adamw_matches_tf_keras_adamw(tf_keras, real_tf):
    init, grads = _problem(5)
    kwargs = dict(learning_rate=0.1, weight_decay=0.05)
    opt = optimizers.AdamW(**kwargs)
    ours_vars, _ = _run_ours(opt, init, grads)
    theirs_opt = tf_keras.optimizers.AdamW(jit_compile=False, **kwargs)
    theirs_vars, _ = _run_theirs(real_tf, theirs_opt, init, grads)
    for a, b in zip(ours_vars, theirs_vars):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)


def test_adamw_exclusions():
    w = ipu_gpu.Variable([1.0, 1.0], name="dense/kernel")
    b = ipu_gpu.Variable([1.0, 1.0], name="dense/bias")
    opt = optimizers.AdamW(learning_rate=0.5, weight_decay=0.1)
    opt.exclude_from_weight_decay(var_names=["bias"])
    zero = ipu_gpu.zeros([2])
    opt.apply_gradients([(zero, w), (zero, b)])
    np.testing.assert_allclose(w.numpy(), [0.95, 0.95], rtol=1e-6)  # decayed, no Adam step
    np.testing.assert_array_equal(b.numpy(), [1.0, 1.0])
    with pytest.raises(ValueError, match="before the optimizer is built"):
        opt.exclude_from_weight_decay(var_list=[w])
    with pytest.raises(ValueError, match="Missing value of `weight_decay`"):
        optimizers.AdamW(weight_decay=None)


def test_minimize_with_loss_callable(tf_keras, real_tf):
    x = np.linspace(-1.0, 1.0, 8, dtype=np.float32).reshape(4, 2)
    y = np.array([0.5, -1.0, 2.0, 0.0], np.float32)
    w0 = np.array([0.3, -0.2], np.float32)

    w = ipu_gpu.Variable(w0)
    opt = optimizers.Adam(0.1)
    for _ in range(STEPS):
        opt.minimize(lambda: ipu_gpu.reduce_mean(
            ipu_gpu.square(ipu_gpu.reduce_sum(x * w, axis=1) - y)), var_list=[w])
    tw = real_tf.Variable(w0)
    topt = tf_keras.optimizers.legacy.Adam(0.1)
    for _ in range(STEPS):
        topt.minimize(lambda: real_tf.reduce_mean(
            real_tf.square(real_tf.reduce_sum(x * tw, axis=1) - y)), var_list=[tw])
    np.testing.assert_allclose(w.numpy(), tw.numpy(), rtol=RTOL, atol=ATOL)
    assert int(opt.iterations) == STEPS


def test_minimize_with_tensor_loss_and_tape_and_callable_var_list():
    w = ipu_gpu.Variable([1.0, -1.0])
    opt = optimizers.SGD(0.5)
    with ipu_gpu.GradientTape() as tape:
        loss = ipu_gpu.reduce_sum(w * w)
    opt.minimize(loss, var_list=[w], tape=tape)
    np.testing.assert_allclose(w.numpy(), [0.0, 0.0])
    made = []

    def var_list():
        return made

    def loss_fn():
        if not made:
            made.append(ipu_gpu.Variable([2.0]))
        return ipu_gpu.reduce_sum(made[0] * 3.0)

    opt.minimize(loss_fn, var_list)
    np.testing.assert_allclose(made[0].numpy(), [0.5])
    with pytest.raises(ValueError, match="`tape` is required when a `Tensor` loss is passed"):
        opt.minimize(loss, var_list=[w])


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_other_float_dtypes_match_keras(tf_keras, real_tf, dtype):
    init, grads = _problem(6, dtype=dtype)
    for name, kwargs in [("Adam", {"learning_rate": 0.1}), ("SGD", {"momentum": 0.9}),
                         ("RMSprop", {"momentum": 0.5})]:
        ours = _run_ours(getattr(optimizers, name)(**kwargs), init, grads)
        theirs = _run_theirs(real_tf, getattr(tf_keras.optimizers.legacy, name)(**kwargs),
                             init, grads)
        for a, b in zip(ours[0], theirs[0]):
            assert a.dtype == b.dtype == dtype
        tol = dict(rtol=3e-3, atol=3e-3) if dtype == np.float16 else dict(rtol=1e-12, atol=0)
        _assert_same(ours, theirs, **tol)


def test_state_api_and_hyperparameters(tf_keras):
    v = ipu_gpu.Variable(np.ones((2, 3), np.float32), name="dense/kernel")
    opt = optimizers.Adam(learning_rate=0.01)
    assert opt.get_slot_names() == [] and opt.weights == []
    opt.apply_gradients([(ipu_gpu.ones((2, 3)), v)])
    assert opt.get_slot_names() == ["m", "v"]
    m = opt.get_slot(v, "m")
    assert isinstance(m, ipu_gpu.Variable) and not m.trainable and m.name == "dense/kernel/m:0"
    assert opt.iterations.dtype == np.int64 and int(opt.iterations) == 1
    assert [w.name for w in opt.variables()] == ["Adam/iter:0", "dense/kernel/m:0",
                                                 "dense/kernel/v:0"]
    # hyperparameters are float32 Variables that can be read, set and assigned
    assert isinstance(opt.learning_rate, ipu_gpu.Variable)
    assert opt.lr is opt.learning_rate
    opt.lr = 0.5
    assert float(opt.learning_rate) == 0.5
    opt.learning_rate.assign(0.25)
    assert float(opt.lr) == 0.25 and opt.get_config()["learning_rate"] == np.float32(0.25)
    opt.beta_1 = 0.8
    assert float(opt.beta_1) == np.float32(0.8)
    weights = opt.get_weights()
    other = optimizers.Adam()
    other.apply_gradients([(ipu_gpu.zeros((2, 3)), ipu_gpu.Variable(np.ones((2, 3),
                                                                            np.float32)))])
    other.set_weights(weights)
    for a, b in zip(other.get_weights(), weights):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="with a  weight list of length 1"):
        other.set_weights(weights[:1])
    with pytest.raises(ValueError, match=r"Optimizer weight shape \(2, 3\) not compatible"):
        other.set_weights([weights[0], np.zeros(3), weights[2]])
    with pytest.raises(RuntimeError, match="Cannot set `iterations`"):
        opt.iterations = ipu_gpu.Variable(0)
    with pytest.raises(KeyError):
        opt.get_slot(v, "vhat")
    with pytest.raises(AttributeError, match="no attribute 'beta_3'"):
        _ = opt.beta_3
    # a schedule replaces the learning-rate Variable
    opt.learning_rate = schedules.ExponentialDecay(0.1, 10, 0.5)
    assert isinstance(opt.lr, schedules.ExponentialDecay)


def test_config_round_trip_matches_keras(tf_keras):
    for name, kwargs in CONFIGS + [("SGD", {"clipnorm": 1.0}), ("Adam", {"clipvalue": 0.5}),
                                   ("RMSprop", {"global_clipnorm": 2.0})]:
        ours = getattr(optimizers, name)(**kwargs).get_config()
        theirs = getattr(tf_keras.optimizers.legacy, name)(**kwargs).get_config()
        theirs.pop("is_legacy_optimizer", None)
        assert ours.keys() == theirs.keys(), name
        for k in ours:
            assert ours[k] == pytest.approx(theirs[k]), (name, k)
        again = getattr(optimizers, name).from_config(ours)
        assert again.get_config() == ours
    lr = schedules.PolynomialDecay(0.1, 5)
    config = optimizers.SGD(lr).get_config()
    assert config["learning_rate"] == {"class_name": "PolynomialDecay",
                                       "config": lr.get_config()}
    assert isinstance(optimizers.SGD.from_config(config).lr, schedules.PolynomialDecay)
    assert float(optimizers.SGD.from_config({"lr": 0.3}).learning_rate) == np.float32(0.3)


def test_get_serialize_deserialize():
    for name, cls in [("sgd", optimizers.SGD), ("adam", optimizers.Adam),
                      ("RMSprop", optimizers.RMSprop), ("adagrad", optimizers.Adagrad),
                      ("adadelta", optimizers.Adadelta), ("adamax", optimizers.Adamax),
                      ("nadam", optimizers.Nadam), ("adamw", optimizers.AdamW),
                      ("Adam", optimizers.Adam)]:
        assert type(optimizers.get(name)) is cls
    opt = optimizers.RMSprop(0.3, momentum=0.2)
    assert optimizers.get(opt) is opt
    again = optimizers.get(optimizers.serialize(opt))
    assert type(again) is optimizers.RMSprop and again.get_config() == opt.get_config()
    assert optimizers.legacy.Adam is optimizers.Adam and optimizers.Optimizer is \
        optimizers.legacy.Optimizer
    unnamed = optimizers.SGD(name=None).get_config()["name"]
    assert unnamed.startswith("sgd") and unnamed != optimizers.SGD(name=None)._name
    with pytest.raises(ValueError, match="Unknown optimizer: 'nope'"):
        optimizers.get("nope")
    with pytest.raises(ValueError, match="Could not interpret optimizer identifier: 42"):
        optimizers.get(42)


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the exception itself is the result
        return e
    raise AssertionError("no error raised")


@pytest.mark.parametrize("case", [
    lambda o: o.SGD(foo=1),
    lambda o: o.SGD(clipnorm=-1.0),
    lambda o: o.Adam(clipnorm=1.0, global_clipnorm=1.0),
    lambda o: o.SGD(momentum=1.5),
    lambda o: o.RMSprop(momentum=-0.1),
    lambda o: o.Adagrad(initial_accumulator_value=-1.0),
    lambda o: o.SGD(decay=-1.0),
], ids=["unknown_kwarg", "negative_clipnorm", "clipnorm_and_global", "sgd_momentum",
        "rmsprop_momentum", "adagrad_initial", "negative_decay"])
def test_constructor_errors_match_keras(tf_keras, case):
    ours = _error(lambda: case(optimizers))
    theirs = _error(lambda: case(tf_keras.optimizers.legacy))
    assert type(ours) is type(theirs)
    assert str(ours).split(" Allowed")[0] == str(theirs).split(" Allowed")[0]


def test_nadam_refuses_a_schedule(tf_keras):
    ours = _error(lambda: optimizers.Nadam(schedules.ExponentialDecay(0.1, 1, 0.5)))
    theirs = _error(lambda: tf_keras.optimizers.legacy.Nadam(
        tf_keras.optimizers.schedules.ExponentialDecay(0.1, 1, 0.5)))
    assert type(ours) is type(theirs) and str(ours) == str(theirs)


def test_none_gradients(caplog):
    a, b = ipu_gpu.Variable([1.0], name="a"), ipu_gpu.Variable([1.0], name="b")
    opt = optimizers.SGD(1.0)
    with caplog.at_level(logging.WARNING, logger="tensorflow"):
        opt.apply_gradients([(None, a), (ipu_gpu.constant([1.0]), b)])
    assert "Gradients do not exist for variables ['a:0']" in caplog.text
    assert a.numpy()[0] == 1.0 and b.numpy()[0] == 0.0
    with pytest.raises(ValueError, match=r"No gradients provided for any variable: \(\['a:0', "
                                         r"'b:0'\],\)"):
        opt.apply_gradients([(None, a), (None, b)])
    assert opt.apply_gradients([]) is None and int(opt.iterations) == 1
    with pytest.raises(NotImplementedError, match="Updating a `Tensor` is not implemented"):
        opt.apply_gradients([(ipu_gpu.constant([1.0]), ipu_gpu.constant([1.0]))])


def test_gradients_of_another_shape_or_dtype(tf_keras, real_tf):
    v = ipu_gpu.Variable(np.ones((2, 3), np.float32), name="kernel")
    opt = optimizers.Adam()
    with pytest.raises(ipu_gpu.errors.InvalidArgumentError,
                       match=r"gradient of kernel:0 must have the variable's shape \[2, 3\], "
                             r"got \[3\]"):
        opt.apply_gradients([(ipu_gpu.ones([3]), v)])
    with pytest.raises(TypeError, match="gradient of kernel:0 must have the variable's dtype "
                                        "float32, got float64"):
        opt.apply_gradients([(np.ones((2, 3)), v)])
    opt.apply_gradients([(np.ones((2, 3), np.float32), v)])  # arrays are gradients too
    tv = real_tf.Variable(np.ones((2, 3), np.float32))
    with pytest.raises(real_tf.errors.InvalidArgumentError):  # TF refuses the shape too
        tf_keras.optimizers.legacy.Adam().apply_gradients([(real_tf.ones([3]), tv)])


def test_lr_keyword_is_deprecated():
    with pytest.warns(UserWarning, match="The `lr` argument is deprecated"):
        opt = optimizers.SGD(lr=0.5)
    assert float(opt.learning_rate) == 0.5


def test_constraint_is_applied_after_the_update():
    class Clipped(ipu_gpu.Variable):
        __slots__ = ()
        constraint = staticmethod(lambda w: ipu_gpu.clip_by_value(w, -1.0, 1.0))

    v = Clipped([0.5, 0.9])
    optimizers.SGD(1.0).apply_gradients([(ipu_gpu.constant([1.0, -1.0]), v)])
    np.testing.assert_allclose(v.numpy(), [-0.5, 1.0])


def test_custom_subclass_keras2_protocol():
    class SignSGD(optimizers.Optimizer):
        def __init__(self, learning_rate=0.1, name="SignSGD", **kwargs):
            super().__init__(name, **kwargs)
            self._set_hyper("learning_rate", learning_rate)

        def _create_slots(self, var_list):
            for v in var_list:
                self.add_slot(v, "last")

        def _resource_apply_dense(self, grad, var, apply_state=None):
            coefficients = ((apply_state or {}).get((var.device, var.dtype))
                            or self._fallback_apply_state(var.device, var.dtype))
            self.get_slot(var, "last").assign(grad)
            lr = self._get_hyper("learning_rate", var.dtype)
            assert float(lr) == float(coefficients["lr_t"])
            return var.assign_sub(coefficients["lr_t"] * ipu_gpu.sign(grad))

        def get_config(self):
            return {**super().get_config(), "learning_rate":
                    self._serialize_hyperparameter("learning_rate")}

    v = ipu_gpu.Variable([1.0, 1.0])
    opt = SignSGD(0.25)
    opt.apply_gradients([(ipu_gpu.constant([3.0, -0.5]), v)])
    np.testing.assert_allclose(v.numpy(), [0.75, 1.25])
    np.testing.assert_allclose(opt.get_slot(v, "last").numpy(), [3.0, -0.5])
    assert float(opt._decayed_lr(np.float32)) == 0.25


def test_update_is_in_place_and_earlier_reads_stay_unchanged():
    v = ipu_gpu.Variable(np.ones(4, np.float32))
    opt = optimizers.Adam(0.1)
    opt.apply_gradients([(ipu_gpu.ones([4]), v)])
    before = v.read_value()
    snapshot = before.numpy()
    opt.apply_gradients([(ipu_gpu.ones([4]), v)])
    np.testing.assert_array_equal(before.numpy(), snapshot)
    assert not np.array_equal(v.numpy(), snapshot)


def test_adam_step_overhead_is_small():
    """A smoke bound on the Python cost of an Adam step (10 variables): generous, so a
    loaded CI machine passes; the report's figure comes from a quiet run."""
    variables = [ipu_gpu.Variable(np.ones((8, 8), np.float32)) for _ in range(10)]
    grads = [ipu_gpu.ones((8, 8)) * 0.1 for _ in variables]
    opt = optimizers.Adam()
    pairs = list(zip(grads, variables))
    opt.apply_gradients(pairs)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(20):
            opt.apply_gradients(pairs)
        best = min(best, (time.perf_counter() - t0) / 20 / len(variables))
    assert best < 2e-3  # seconds per variable per step


def test_apply_gradients_under_a_strategy():
    from ipu_gpu import distribute

    strategy = distribute.Strategy.__new__(distribute.Strategy)
    distribute.Strategy.__init__(strategy, distribute.StrategyExtended(strategy))
    v = ipu_gpu.Variable([1.0])
    opt = optimizers.SGD(0.5)
    with strategy.scope():
        with pytest.raises(RuntimeError, match="cannot be called in cross-replica context"):
            opt.apply_gradients([(ipu_gpu.constant([1.0]), v)])
        strategy.run(lambda: opt.apply_gradients([(ipu_gpu.constant([1.0]), v)]))
    np.testing.assert_allclose(v.numpy(), [0.5])  # one replica: the all-reduce is the identity


def _on_cpu(fn):
    previous = ipu_gpu.backend_name()
    ipu_gpu.set_backend("cpu")
    try:
        return fn()
    finally:
        ipu_gpu.set_backend(previous)


@pytest.mark.parametrize("name,kwargs", [
    ("Adam", {"learning_rate": schedules.CosineDecay(0.1, 3)}),
    ("Nadam", {}), ("SGD", {"momentum": 0.9, "global_clipnorm": 0.5})],
    ids=["Adam-CosineDecay", "Nadam", "SGD-momentum-clipnorm"])  # stable ids: pytest-xdist
def test_steps_on_each_backend(backend, name, kwargs):
    """The same steps with the variables, slots and hyperparameters on the backend under test
    (GPU: Variables on the device, schedules and coefficients read back) as on the CPU."""
    init, grads = _problem(7)

    def run():
        opt = getattr(optimizers, name)(**kwargs)
        variables = [ipu_gpu.Variable(ipu_gpu.constant(v)) for v in init]
        for step in grads:
            opt.apply_gradients(zip([ipu_gpu.constant(g) for g in step], variables))
        return [v.numpy() for v in variables], opt.get_weights()

    ours = run()
    assert all(v.device == ipu_gpu.constant(0.0).device for v in
               getattr(optimizers, name)(**kwargs).weights + [ipu_gpu.Variable(1.0)])
    _assert_same(ours, _on_cpu(run), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,kwargs", [
    ("Adam", {"learning_rate": 0.1}), ("Adam", {"learning_rate": 0.1, "decay": 0.5}),
    ("SGD", {"learning_rate": 0.1}), ("SGD", {"learning_rate": 0.1, "momentum": 0.9}),
    ("SGD", {"learning_rate": 0.1, "momentum": 0.9, "nesterov": True})], ids=str)
def test_fused_cpu_update_equals_the_ops(monkeypatch, name, kwargs, dtype):
    """Adam and SGD update numpy float32/float64 variables with one-pass kernels
    (kernels/optimizer_cpu.py): the numbers equal the op expressions' bit for bit, and an
    earlier read of a variable keeps its value."""
    from ipu_gpu.keras.optimizers import adam, sgd

    init, grads = _problem(8, dtype=dtype, shapes=[(5, 7), (7,), (), (3, 1, 2)])
    fused = _run_ours(getattr(optimizers, name)(**kwargs), init, grads)
    for module in (adam, sgd):
        monkeypatch.setattr(module, "fused_cpu_update", lambda *a: False)
    generic = _run_ours(getattr(optimizers, name)(**kwargs), init, grads)
    for a, b in zip(fused[0] + fused[1], generic[0] + generic[1]):
        np.testing.assert_array_equal(a, b)
    monkeypatch.undo()
    v = ipu_gpu.Variable(np.ones((2, 3), dtype))
    opt = getattr(optimizers, name)(**kwargs)
    g = ipu_gpu.constant(np.full((2, 3), 0.5, dtype))
    opt.apply_gradients([(g, v)])
    before = v.read_value()
    snapshot = before.numpy()
    buf_id = id(v._value)
    opt.apply_gradients([(g, v)])
    np.testing.assert_array_equal(before.numpy(), snapshot)
    assert id(v._value) != buf_id and not np.array_equal(v.numpy(), snapshot)
    del before
    buf_id = id(v._value)
    opt.apply_gradients([(g, v)])
    assert id(v._value) == buf_id  # nothing else holds the buffer: updated in place


def test_fused_cpu_update_takes_only_numpy_contiguous_float32_float64():
    from ipu_gpu.keras.optimizers.optimizer_v2 import fused_cpu_update

    v = ipu_gpu.Variable(np.ones(4, np.float16))
    assert not fused_cpu_update("sgd", ipu_gpu.constant(np.ones(4, np.float16)), (v,), (0.1,))
    w = ipu_gpu.Variable(np.ones(4, np.float32))
    strided = ipu_gpu.constant(np.ones(8, np.float32))[::2]
    if not strided._value.flags.c_contiguous:
        assert not fused_cpu_update("sgd", strided, (w,), (0.1,))
    assert not fused_cpu_update("sgd", ipu_gpu.constant(np.ones(4, np.float64)), (w,), (0.1,))
    assert fused_cpu_update("sgd", ipu_gpu.constant(np.ones(4, np.float32)), (w,), (0.5,))
    np.testing.assert_array_equal(w.numpy(), [0.5] * 4)
