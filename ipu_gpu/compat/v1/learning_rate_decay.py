"""TF 1.15's ``tf.compat.v1.train`` learning-rate decays of a global step.

Each is TF's formula (``learning_rate_schedule.py``, which the TF1 functions wrap), computed
in float32 from the step cast to float32. In a graph (TF1 programs) the result is a tensor
computed from ``global_step`` each run; executing eagerly it is a function of no arguments
giving the current rate, as TF 1.15 returns eagerly (so the rate follows a changing
``global_step`` variable).
"""

from __future__ import annotations

import functools
import math

__all__ = ["cosine_decay", "cosine_decay_restarts", "exponential_decay", "inverse_time_decay",
           "linear_cosine_decay", "natural_exp_decay", "noisy_linear_cosine_decay",
           "piecewise_constant", "polynomial_decay"]


def _core():
    import ipu_gpu

    return ipu_gpu


def _schedule(name, global_step, compute):
    """``compute()`` in a graph, ``compute`` itself eagerly (TF 1.15's legacy wrappers).

    Raises:
      ValueError: ``global_step`` is None (TF's message)."""
    from ... import graph

    if global_step is None:
        raise ValueError(f"global_step is required for {name}.")
    if graph.core.building() or isinstance(global_step, graph.GraphTensor):
        return compute()
    return compute


def _cos(x):
    """cos of a float32 scalar rate term (ipu_gpu has no registered cos op; a rate needs no
    gradient): a node computing it per run on a graph tensor, else at once."""
    import numpy as np

    from ... import graph
    from ...core.convert import convert_to_tensor

    if isinstance(x, graph.GraphTensor):
        return graph.core.add_node(x.graph, "Cos", "Cos", [x], _cos,
                                   [(x._dtype, x.shape.as_list())]).outputs[0]
    a = convert_to_tensor(x).numpy()  # syncs device
    return convert_to_tensor(np.cos(a).astype(a.dtype))


def _step(global_step):
    core = _core()
    return core.cast(global_step, core.float32)


def _decay_ratio(global_step, decay_steps, staircase):
    """``global_step / decay_steps`` in float32, floored when ``staircase``."""
    p = _step(global_step) / float(decay_steps)
    return _core().floor(p) if staircase else p


def _lr(learning_rate):
    core = _core()
    return core.cast(learning_rate, core.float32) if hasattr(learning_rate, "dtype") else \
        core.constant(float(learning_rate), core.float32)


def exponential_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                      name=None):
    """``learning_rate * decay_rate ^ (global_step / decay_steps)`` (the exponent floored
    when ``staircase``)."""
    from ...graph import optimizers

    return _schedule("exponential_decay", global_step, functools.partial(
        optimizers.exponential_decay, learning_rate, global_step, decay_steps, decay_rate,
        staircase))


def piecewise_constant(x, boundaries, values, name=None):
    """``values[i]`` for ``boundaries[i-1] < x <= boundaries[i]`` (see
    ``graph.optimizers.piecewise_constant``)."""
    from ...graph import optimizers

    if len(values) != len(boundaries) + 1:
        raise ValueError("The length of boundaries should be 1 less than the length of "
                         "values")
    return _schedule("piecewise_constant", x, functools.partial(
        optimizers.piecewise_constant, x, boundaries, values))


def polynomial_decay(learning_rate, global_step, decay_steps, end_learning_rate=0.0001,
                     power=1.0, cycle=False, name=None):
    """``(learning_rate - end_learning_rate) * (1 - step / decay_steps) ^ power +
    end_learning_rate`` with ``step = min(global_step, decay_steps)``; with ``cycle`` the
    decay restarts, ``decay_steps`` multiplied by ``ceil(global_step / decay_steps)`` (1 at
    step 0)."""
    def compute():
        core = _core()
        lr, end = _lr(learning_rate), core.constant(float(end_learning_rate), core.float32)
        step = _step(global_step)
        steps = core.constant(float(decay_steps), core.float32)
        if cycle:
            multiplier = core.where(core.equal(step, 0.0), core.constant(1.0),
                                    core.math.ceil(step / steps))
            steps = steps * multiplier
        else:
            step = core.minimum(step, steps)
        p = step / steps
        return (lr - end) * core.pow(1.0 - p, float(power)) + end
    return _schedule("polynomial_decay", global_step, compute)


def natural_exp_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                      name=None):
    """``learning_rate * exp(-decay_rate * global_step / decay_steps)`` (the ratio floored
    when ``staircase``)."""
    def compute():
        core = _core()
        rate = core.exp(-core.constant(float(decay_rate), core.float32))
        return _lr(learning_rate) * core.pow(rate, _decay_ratio(global_step, decay_steps,
                                                                staircase))
    return _schedule("natural_exp_decay", global_step, compute)


def inverse_time_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                       name=None):
    """``learning_rate / (1 + decay_rate * global_step / decay_steps)`` (the ratio floored
    when ``staircase``)."""
    def compute():
        p = _decay_ratio(global_step, decay_steps, staircase)
        return _lr(learning_rate) / (1.0 + float(decay_rate) * p)
    return _schedule("inverse_time_decay", global_step, compute)


def cosine_decay(learning_rate, global_step, decay_steps, alpha=0.0, name=None):
    """``learning_rate * ((1 - alpha) * 0.5 * (1 + cos(pi * step / decay_steps)) + alpha)``
    with ``step = min(global_step, decay_steps)`` (Loshchilov & Hutter, SGDR, 2017)."""
    def compute():
        core = _core()
        steps = float(decay_steps)
        fraction = core.minimum(_step(global_step), steps) / steps
        cosine = 0.5 * (1.0 + _cos(math.pi * fraction))
        return _lr(learning_rate) * ((1.0 - alpha) * cosine + alpha)
    return _schedule("cosine_decay", global_step, compute)


def cosine_decay_restarts(learning_rate, global_step, first_decay_steps, t_mul=2.0,
                          m_mul=1.0, alpha=0.0, name=None):
    """Cosine decay with warm restarts (SGDR): period ``i`` lasts ``first_decay_steps *
    t_mul^i`` steps and starts from ``learning_rate * m_mul^i``."""
    def compute():
        core = _core()
        fraction = _step(global_step) / float(first_decay_steps)
        if float(t_mul) == 1.0:
            i_restart = core.floor(fraction)
            fraction = fraction - i_restart
        else:
            i_restart = core.floor(core.math.log(1.0 - fraction * (1.0 - t_mul))
                                   / math.log(t_mul))
            sum_r = (1.0 - core.pow(float(t_mul), i_restart)) / (1.0 - t_mul)
            fraction = (fraction - sum_r) / core.pow(float(t_mul), i_restart)
        m_fac = core.pow(float(m_mul), i_restart)
        cosine = 0.5 * m_fac * (1.0 + _cos(math.pi * fraction))
        return _lr(learning_rate) * ((1.0 - alpha) * cosine + alpha)
    return _schedule("cosine_decay_restarts", global_step, compute)


def _linear_cosine(learning_rate, global_step, decay_steps, num_periods, alpha, beta, noise):
    core = _core()
    steps = float(decay_steps)
    step = core.minimum(_step(global_step), steps)
    linear = (steps - step) / steps
    if noise is not None:
        linear = linear + noise(step)
    fraction = 2.0 * num_periods * step / steps
    cosine = 0.5 * (1.0 + _cos(math.pi * fraction))
    return _lr(learning_rate) * ((alpha + linear) * cosine + beta)


def linear_cosine_decay(learning_rate, global_step, decay_steps, num_periods=0.5, alpha=0.0,
                        beta=0.001, name=None):
    """``learning_rate * ((alpha + linear) * cosine + beta)``, ``linear = (decay_steps -
    step) / decay_steps``, ``cosine = 0.5 (1 + cos(2 pi num_periods step / decay_steps))``,
    ``step = min(global_step, decay_steps)`` (Bello et al., 2017)."""
    return _schedule("linear_cosine_decay", global_step, functools.partial(
        _linear_cosine, learning_rate, global_step, decay_steps, num_periods, alpha, beta,
        None))


def noisy_linear_cosine_decay(learning_rate, global_step, decay_steps, initial_variance=1.0,
                              variance_decay=0.55, num_periods=0.5, alpha=0.0, beta=0.001,
                              name=None):
    """``linear_cosine_decay`` with normal noise of variance ``initial_variance / (1 +
    step)^variance_decay`` added to its linear part (a new draw each evaluation)."""
    def noise(step):
        core = _core()
        variance = initial_variance / core.pow(1.0 + step, float(variance_decay))
        return core.random.normal([]) * core.sqrt(variance)
    return _schedule("noisy_linear_cosine_decay", global_step, functools.partial(
        _linear_cosine, learning_rate, global_step, decay_steps, num_periods, alpha, beta,
        noise))
