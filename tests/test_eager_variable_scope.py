"""``tf.compat.v1.get_variable`` / ``variable_scope`` / ``make_template`` in TF 2 eager mode,
against real TensorFlow 2 eager: outside an ``EagerVariableStore`` every call makes a new
variable; inside one, variables are shared by name (reuse is AUTO_REUSE eagerly); templates,
tf.layers objects and tf.functions keep theirs across calls."""

from __future__ import annotations

import sys

import numpy as np

import ipu_gpu as ig
import ipu_gpu.compat.v1 as v1

_vs = sys.modules["ipu_gpu.compat.v1.variable_scope"]


def _store_class(tf):
    if tf is ig:
        return _vs.EagerVariableStore
    from tensorflow.python.ops.variable_scope import EagerVariableStore

    return EagerVariableStore


def _scenario(tf):
    """What get_variable gives eagerly, in a form both libraries produce."""
    c = tf.compat.v1
    out = {}
    a = c.get_variable("w", [2], initializer=c.ones_initializer())
    b = c.get_variable("w", [2], initializer=c.zeros_initializer())
    out["no_store"] = (a is b, a.name, b.name, a.numpy().tolist(), b.numpy().tolist())
    with c.variable_scope("s", reuse=True):  # eagerly no ValueError: a new variable
        out["reuse_true_missing"] = c.get_variable("w", [2]).name
    with c.variable_scope("t", reuse=c.AUTO_REUSE):
        out["auto_reuse"] = c.get_variable("w", [1]) is c.get_variable("w", [1])
    store = _store_class(tf)()
    with store.as_default():
        i = c.get_variable("k", [2], initializer=c.constant_initializer(3.0))
        j = c.get_variable("k", [2])
        with c.variable_scope("q"):
            c.get_variable("a", [1], trainable=False)
    with store.as_default():
        again = c.get_variable("k", [2])
        with c.variable_scope("", reuse=True):
            root = c.get_variable("k", [2])
    out["store"] = (i is j, again is i, root is i, j.numpy().tolist(),
                    [v.name for v in store.variables()],
                    [v.name for v in store.trainable_variables()],
                    [v.name for v in store.non_trainable_variables()])
    t = c.make_template("eager_scope_tpl", lambda x: x * c.get_variable(
        "v", [1], initializer=c.constant_initializer(2.0)))
    first, second = t(tf.constant(2.0)), t(tf.constant(3.0))
    t.variables[0].assign([5.0])
    third = t(tf.constant(1.0))
    out["template"] = (first.numpy().tolist(), second.numpy().tolist(),
                       third.numpy().tolist(), [v.name for v in t.variables],
                       [v.name for v in t.trainable_variables])
    t2 = c.make_template("eager_scope_tpl", lambda x: x * c.get_variable("v", [1]))
    t2(tf.constant(1.0))
    out["template_names"] = [v.name for v in t2.variables]
    return out


def test_eager_get_variable_matches_tf2(real_tf):
    assert _scenario(ig) == _scenario(real_tf)


def test_tf_function_makes_its_variables_on_the_first_call():
    """TF traces the function once: the variable of its first call is that of every later
    call ([2.], [3.], [4.] in a fresh TF 2.x process; real TF is not asked here because
    its tf.function + get_variable depends on the compat.v1 state other tests leave)."""
    @ig.function
    def step(x):
        w = v1.get_variable("fw", [1], initializer=v1.ones_initializer())
        w.assign_add([1.0])
        return x * w
    assert [step(ig.constant(1.0)).numpy().tolist() for _ in range(3)] == [[2.0], [3.0], [4.0]]


def test_tf_layers_object_keeps_its_variables_eagerly():
    d = v1.layers.Dense(2, kernel_initializer=v1.ones_initializer())
    x = ig.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    first = d(x).numpy()
    d.kernel.assign(np.full((3, 2), 0.5, np.float32))
    second = d(x).numpy()
    assert len(d.variables) == 2
    np.testing.assert_allclose(first, np.arange(6).reshape(2, 3) @ np.ones((3, 2)))
    np.testing.assert_allclose(second, np.arange(6).reshape(2, 3) @ np.full((3, 2), 0.5))


def test_store_shares_across_gradient_steps():
    """A training loop over a store: the same variable each step, so SGD moves it as numpy's
    reference does."""
    store = _vs.EagerVariableStore()
    x = np.array([[1.0, 2.0]], np.float32)
    ref = np.array([[0.5], [-0.5]], np.float32)
    for _ in range(3):
        with store.as_default(), ig.GradientTape() as tape:
            w = v1.get_variable("w", initializer=np.array([[0.5], [-0.5]], np.float32))
            loss = ig.reduce_sum(ig.matmul(ig.constant(x), w) ** 2)
        g = tape.gradient(loss, w)
        w.assign_sub(0.1 * g)
        ref = ref - 0.1 * 2 * x.T @ (x @ ref)
    np.testing.assert_allclose(store.variables()[0].numpy(), ref, rtol=1e-6)
    assert len(store.variables()) == 1


def test_graph_mode_keeps_graph_rules():
    import pytest

    with v1.Graph().as_default():
        v1.get_variable("w", [1])
        with pytest.raises(ValueError, match="already exists"):
            v1.get_variable("w", [1])


def test_replicas_of_a_strategy_run_share_the_functions_variable(fresh_ipu_system):
    """Under IPUStrategy each replica calls the tf.function: its first call makes the
    variable once (TF traces the function once), every replica reads it."""
    from conftest import configure_ipus

    from ipu_gpu.ipu.ipu_strategy import IPUStrategy

    configure_ipus(2)
    strategy = IPUStrategy()

    @ig.function
    def step():
        w = v1.get_variable("replica_w", initializer=np.array([2.0], np.float32))
        return w * 3.0

    with strategy.scope():
        for _ in range(2):
            out = strategy.run(step)
            np.testing.assert_allclose(np.asarray(out), [6.0])
    assert len(step._eager_variable_store.variables()) == 1
