"""tf.compat.v1.train.Optimizer subclassed as TF1 programs do (_create_slots, _prepare,
_resource_apply_dense / _apply_dense, _finish, slot and non-slot variables): the same class
body trains as in real TF1 graph mode."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as tf
import ipu_gpu.compat.v1 as v1


def _optimizer_classes(tf_mod, c):
    class MomentumByHand(c.train.Optimizer):
        """Momentum on resource variables, with a slot and a prepared learning rate."""

        def __init__(self, lr, momentum, name="MomentumByHand"):
            super().__init__(False, name)
            self._lr, self._momentum = lr, momentum

        def _create_slots(self, var_list):
            for v in var_list:
                self._zeros_slot(v, "m", self._name)

        def _prepare(self):
            self._lr_t = tf_mod.convert_to_tensor(self._lr, name="lr")

        def _resource_apply_dense(self, grad, var):
            m = self.get_slot(var, "m")
            m_t = m.assign(m * self._momentum + grad)
            return var.assign_sub(self._lr_t * m_t)

    class DecayedSGD(c.train.Optimizer):
        """SGD whose rate decays by a non-slot counter updated in _finish (_apply_dense)."""

        def __init__(self, lr, name="DecayedSGD"):
            super().__init__(False, name)
            self._lr = lr

        def _create_slots(self, var_list):
            self._create_non_slot_variable(1.0, "scale", var_list[0])

        def _apply_dense(self, grad, var):
            scale = self._get_non_slot_variable("scale", graph=c.get_default_graph())
            return var.assign_sub(grad * (self._lr * scale))

        def _resource_apply_dense(self, grad, var):
            return self._apply_dense(grad, var)

        def _finish(self, update_ops, name_scope):
            scale = self._get_non_slot_variable("scale", graph=c.get_default_graph())
            with c.control_dependencies(update_ops):
                return c.assign(scale, scale * 0.5)

    return MomentumByHand, DecayedSGD


def _train(tf_mod, c, which, steps=5):
    g = c.Graph()
    with g.as_default():
        x = c.placeholder(tf_mod.float32, [None, 3])
        y = c.placeholder(tf_mod.float32, [None, 1])
        w = c.get_variable("w", initializer=np.full((3, 1), 0.1, np.float32),
                           use_resource=True)
        b = c.get_variable("b", initializer=np.zeros((1,), np.float32), use_resource=True)
        loss = tf_mod.reduce_mean(tf_mod.square(tf_mod.matmul(x, w) + b - y))
        step_var = c.train.get_or_create_global_step()
        cls = _optimizer_classes(tf_mod, c)[which]
        opt = cls(0.1, 0.9) if which == 0 else cls(0.1)
        train = opt.minimize(loss, global_step=step_var)
        rng = np.random.default_rng(1)
        with c.Session(graph=g) as sess:
            sess.run(c.global_variables_initializer())
            losses = [sess.run([train, loss], {
                x: rng.standard_normal((4, 3)).astype(np.float32),
                y: np.ones((4, 1), np.float32)})[1] for _ in range(steps)]
            return (sess.run(w), sess.run(b), int(sess.run(step_var)), opt.get_slot_names(),
                    losses)


@pytest.mark.parametrize("which", [0, 1])
def test_subclassed_optimizer_equals_real_tensorflow(real_tf, which):
    ours = _train(tf, v1, which)
    theirs = _train(real_tf, real_tf.compat.v1, which)
    for a, b in zip(ours[:2], theirs[:2]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert ours[2:4] == theirs[2:4]
    np.testing.assert_allclose(ours[4], theirs[4], rtol=1e-6)


def test_momentum_by_hand_against_numpy():
    w, b, steps, slots, _ = _train(tf, v1, 0, steps=3)
    rng = np.random.default_rng(1)
    wr, br = np.full((3, 1), 0.1), np.zeros(1)
    mw, mb = np.zeros_like(wr), np.zeros_like(br)
    for _ in range(3):
        x = rng.standard_normal((4, 3)).astype(np.float32).astype(np.float64)
        r = x @ wr + br - 1.0
        gw, gb = x.T @ r * (2 / 4), np.array([r.sum() * 2 / 4])
        mw, mb = mw * 0.9 + gw, mb * 0.9 + gb
        wr, br = wr - 0.1 * mw, br - 0.1 * mb
    np.testing.assert_allclose(w, wr, rtol=1e-5)
    np.testing.assert_allclose(b, br, rtol=1e-5, atol=1e-6)
    assert (steps, slots) == (3, ["m"])


def test_optimizer_errors():
    with pytest.raises(ValueError, match="Must specify the optimizer name"):
        v1.train.Optimizer(False, "")
    with v1.Graph().as_default():
        a = v1.get_variable("a", [1])
        unrelated = v1.get_variable("u", [1])
        loss = tf.reduce_sum(a * 2.0)
        opt = _optimizer_classes(tf, v1)[0](0.1, 0.9)
        with pytest.raises(ValueError, match="No gradients provided for any variable"):
            opt.minimize(loss, var_list=[unrelated])
        with pytest.raises(ValueError, match="No variables to optimize"):
            opt.compute_gradients(loss, var_list=[])

        class Incomplete(v1.train.Optimizer):
            pass
        with pytest.raises(NotImplementedError):  # TF raises it for a missing update hook
            Incomplete(False, "x").minimize(loss)


def test_custom_optimizer_under_ipu_optimizers_through_ipu_gpu_run(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}

    def weights(program, *args):
        r = subprocess.run([sys.executable, "-m", "ipu_gpu.cli", "run",
                            str(root / "tests" / "programs" / program), "--replicas", "2",
                            *args],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        return r.stdout.strip().splitlines()[-1]
    assert weights("tf1_custom_optimizer.py") == weights("tf1_replication.py")
    # the accumulation wrapper applies the subclass's update at run time (_eager_apply)
    accumulated = ("--gradient-accumulation", "2")
    assert weights("tf1_custom_optimizer.py", *accumulated) == \
        weights("tf1_replication.py", *accumulated)
