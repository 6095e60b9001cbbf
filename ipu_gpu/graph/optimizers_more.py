"""More of TF1's ``tf.train`` optimizers, in TF 1.15's kernel arithmetic (``training_ops``):
``AdadeltaOptimizer``, ``FtrlOptimizer``, ``ProximalGradientDescentOptimizer`` and
``ProximalAdagradOptimizer``. They share ``optimizers._Optimizer`` (graph nodes calling
``_eager_update``; slots made at ``apply_gradients`` as TF names them)."""

from __future__ import annotations

from .optimizers import _lr, _one_minus, _Optimizer

__all__ = ["AdadeltaOptimizer", "FtrlOptimizer", "ProximalAdagradOptimizer",
           "ProximalGradientDescentOptimizer"]


class AdadeltaOptimizer(_Optimizer):
    """``tf.compat.v1.train.AdadeltaOptimizer``: accum = rho accum + (1 - rho) g²;
    update = sqrt(accum_update + eps) / sqrt(accum + eps) g; var -= lr update;
    accum_update = rho accum_update + (1 - rho) update²."""

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-08, use_locking=False,
                 name="Adadelta"):
        super().__init__(use_locking, name)
        self._lr, self._rho, self._eps = learning_rate, rho, epsilon

    def _slot_specs(self):
        return [("accum", 0.0, self._name), ("accum_update", 0.0, self._name)]

    def _eager_update(self, v, g):
        import ipu_gpu as core

        accum, accum_update = self._slot(v, "accum", 0.0), self._slot(v, "accum_update", 0.0)
        rho = self._rho
        accum.assign(accum.read_value() * rho + g * g * _one_minus(rho, g))
        update = (core.sqrt(accum_update.read_value() + self._eps)
                  * core.math.rsqrt(accum.read_value() + self._eps) * g)
        v.assign_sub(update * _lr(self._lr, v))
        accum_update.assign(accum_update.read_value() * rho + update * update * _one_minus(rho, g))


def _shrunk(core, prox, threshold, denominator):
    """TF's proximal step: sign(prox) max(|prox| - threshold, 0) / denominator."""
    return core.sign(prox) * core.maximum(core.abs(prox) - threshold, 0.0) / denominator


class ProximalGradientDescentOptimizer(_Optimizer):
    """``tf.compat.v1.train.ProximalGradientDescentOptimizer``: prox = var - lr g;
    var = sign(prox) max(|prox| - lr l1, 0) / (1 + lr l2) (without l1: prox / (1 + lr l2))."""

    def __init__(self, learning_rate, l1_regularization_strength=0.0,
                 l2_regularization_strength=0.0, use_locking=False,
                 name="ProximalGradientDescent"):
        super().__init__(use_locking, name)
        self._lr = learning_rate
        self._l1, self._l2 = l1_regularization_strength, l2_regularization_strength

    def _eager_update(self, v, g):
        import ipu_gpu as core

        lr = _lr(self._lr, v)
        prox = v.read_value() - g * lr
        denominator = 1.0 + lr * self._l2
        if self._l1 > 0:
            v.assign(_shrunk(core, prox, lr * self._l1, denominator))
        else:
            v.assign(prox / denominator)


class ProximalAdagradOptimizer(_Optimizer):
    """``tf.compat.v1.train.ProximalAdagradOptimizer``: accum += g²; a = lr / sqrt(accum);
    prox = var - a g; var = sign(prox) max(|prox| - a l1, 0) / (1 + a l2)."""

    def __init__(self, learning_rate, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking=False, name="ProximalAdagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value must be positive: "
                             f"{initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._lr, self._init = learning_rate, initial_accumulator_value
        self._l1, self._l2 = l1_regularization_strength, l2_regularization_strength

    def _slot_specs(self):
        return [("accumulator", self._init, self._name)]

    def _eager_update(self, v, g):
        import ipu_gpu as core

        accum = self._slot(v, "accumulator", self._init)
        accum.assign(accum.read_value() + g * g)
        rate = _lr(self._lr, v) * core.math.rsqrt(accum.read_value())
        prox = v.read_value() - g * rate
        denominator = 1.0 + self._l2 * rate
        if self._l1 > 0:
            v.assign(_shrunk(core, prox, rate * self._l1, denominator))
        else:
            v.assign(prox / denominator)


class FtrlOptimizer(_Optimizer):
    """``tf.compat.v1.train.FtrlOptimizer`` (FTRL-Proximal): with n = accum + g² and
    p = -learning_rate_power, linear += g - (n^p - accum^p) / lr var; var = (l1 sign(linear)
    - linear) / (n^p / lr + 2 l2) where |linear| > l1, else 0; accum = n. With
    ``l2_shrinkage_regularization_strength`` s, linear takes g + 2 s var (TF's FtrlV2);
    ``beta`` adds beta / (2 lr) to l2 (TF 2's compat argument).

    Raises:
      ValueError: a negative accumulator or regularization strength, a positive
        ``learning_rate_power`` (TF's messages)."""

    def __init__(self, learning_rate, learning_rate_power=-0.5, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking=False, name="Ftrl", accum_name=None, linear_name=None,
                 l2_shrinkage_regularization_strength=0.0, beta=None):
        for value, text in ((initial_accumulator_value, "initial_accumulator_value"),
                            (l1_regularization_strength, "l1_regularization_strength"),
                            (l2_regularization_strength, "l2_regularization_strength"),
                            (l2_shrinkage_regularization_strength,
                             "l2_shrinkage_regularization_strength")):
            if value < 0.0:
                raise ValueError(f"{text} {value:f} needs to be positive or zero")
        if learning_rate_power > 0.0:
            raise ValueError(f"learning_rate_power {learning_rate_power:f} needs to be "
                             "negative or zero")
        super().__init__(use_locking, name)
        self._lr, self._power, self._init = learning_rate, learning_rate_power, \
            initial_accumulator_value
        self._l1, self._l2 = l1_regularization_strength, l2_regularization_strength
        self._shrinkage, self._beta = l2_shrinkage_regularization_strength, beta or 0.0
        self._accum_name, self._linear_name = accum_name or name, linear_name or name

    def _slot_specs(self):
        return [("accum", self._init, self._accum_name),
                ("linear", 0.0, self._linear_name)]

    def _eager_update(self, v, g):
        import ipu_gpu as core

        accum, linear = self._slot(v, "accum", self._init), self._slot(v, "linear", 0.0)
        lr = _lr(self._lr, v)
        l2 = self._l2 + self._beta / (2.0 * lr)
        var, old = v.read_value(), accum.read_value()
        new = old + g * g
        grad = g + 2.0 * self._shrinkage * var if self._shrinkage > 0.0 else g
        if self._power == -0.5:
            new_p, old_p = core.sqrt(new), core.sqrt(old)
        else:
            new_p, old_p = core.pow(new, -self._power), core.pow(old, -self._power)
        linear.assign(linear.read_value() + (grad - (new_p - old_p) / lr * var))
        lin = linear.read_value()
        pre_shrink = (self._l1 * core.sign(lin) - lin) / (new_p / lr + 2.0 * l2)
        v.assign(core.where(core.abs(lin) > self._l1, pre_shrink, core.zeros_like(pre_shrink)))
        accum.assign(new)
