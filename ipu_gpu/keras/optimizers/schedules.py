"""``keras.optimizers.schedules``: learning rates as functions of the optimizer step.

A schedule is called with the step (the optimizer passes its ``iterations`` cast to the
variables' dtype, as Keras 2's OptimizerV2 does) and returns a scalar Tensor in the dtype of
``initial_learning_rate`` (float32 for a Python float). The built-in schedules compute on
the host in numpy, in that dtype: they are scalar arithmetic evaluated once a step, and the
core has no ``cos`` op yet. ``serialize`` writes Keras 2's ``{"class_name", "config"}``
form; ``deserialize`` also reads tf-keras's newer form (``module``/``registered_name``).
"""

from __future__ import annotations

import math

import numpy as np

from ... import constant, convert_to_tensor
from ...core.tensor import Tensor


class LearningRateSchedule:
    """The base class of learning rate schedules: subclasses define ``__call__(step)``
    (returning the learning rate, a scalar Tensor or number) and ``get_config``."""

    def __call__(self, step):
        raise NotImplementedError(f"Learning rate schedule '{self.__class__.__name__}' "
                                  "must override `__call__(self, step)`.")

    def get_config(self) -> dict:
        raise NotImplementedError(f"Learning rate schedule '{self.__class__.__name__}' "
                                  "must override `get_config()` in order to be serializable.")

    @classmethod
    def from_config(cls, config: dict):
        """A schedule from the dict ``get_config`` returned."""
        return cls(**config)


def _lr_dtype(initial_learning_rate) -> np.dtype:
    """The dtype TF's ``convert_to_tensor(initial_learning_rate)`` gives (float32 for a Python
    number); the schedule computes in it."""
    dtype = convert_to_tensor(initial_learning_rate).dtype
    return dtype if dtype.kind == "f" else np.dtype(np.float32)


def _host(value, dtype) -> np.ndarray:
    """``value`` (a number, numpy array or Tensor: syncs device) as a host array of dtype."""
    return np.asarray(value).astype(dtype)


def _result(value, dtype) -> Tensor:
    return constant(np.asarray(value, dtype=dtype))


class _ConfiguredSchedule(LearningRateSchedule):
    """A schedule whose config is the attributes named in ``_CONFIG``, in that order."""

    _CONFIG: tuple = ()

    def get_config(self) -> dict:
        return {key: getattr(self, key) for key in self._CONFIG}


class _StaircaseDecay(_ConfiguredSchedule):
    """The decay of ``initial_learning_rate`` by ``decay_rate`` over
    ``p = step / decay_steps``, ``p`` floored when ``staircase``; subclasses give the
    formula (``_decayed``)."""

    _CONFIG = ("initial_learning_rate", "decay_steps", "decay_rate", "staircase", "name")

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False,
                 name=None):
        super().__init__()
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.decay_rate = decay_rate
        self.staircase = staircase
        self.name = name

    def __call__(self, step):
        d = _lr_dtype(self.initial_learning_rate)
        p = _host(step, d) / _host(self.decay_steps, d)
        if self.staircase:
            p = np.floor(p)
        initial = _host(self.initial_learning_rate, d)
        return _result(self._decayed(initial, _host(self.decay_rate, d), p, d), d)

    def _decayed(self, initial, rate, p, dtype):
        raise NotImplementedError


class ExponentialDecay(_StaircaseDecay):
    """``initial_learning_rate * decay_rate ** (step / decay_steps)``, the exponent floored
    when ``staircase``."""

    def _decayed(self, initial, rate, p, dtype):
        return initial * np.power(rate, p)


class PiecewiseConstantDecay(_ConfiguredSchedule):
    """``values[0]`` up to and including ``boundaries[0]``, ``values[i]`` for steps in
    ``(boundaries[i-1], boundaries[i]]``, ``values[-1]`` beyond the last boundary.

    Raises:
      ValueError: ``len(boundaries) != len(values) - 1`` (Keras's message).
    """

    _CONFIG = ("boundaries", "values", "name")

    def __init__(self, boundaries, values, name=None):
        super().__init__()
        if len(boundaries) != len(values) - 1:
            raise ValueError(
                "The length of boundaries should be 1 less than the length of values. "
                f"Received: boundaries={boundaries} of length {len(boundaries)}, and "
                f"values={values} of length {len(values)}.")
        self.boundaries = boundaries
        self.values = values
        self.name = name

    def __call__(self, step):
        x = np.asarray(step)
        if x.ndim != 0:
            raise ValueError(f"PiecewiseConstantDecay: step must be a scalar, got shape "
                             f"{list(x.shape)}")
        bounds = np.asarray([np.asarray(b) for b in self.boundaries]).astype(x.dtype)
        i = int(np.searchsorted(bounds, x, side="left"))  # bounds[i-1] < x <= bounds[i]
        return convert_to_tensor(self.values[i])


class PolynomialDecay(_ConfiguredSchedule):
    """``(initial - end) * (1 - step / decay_steps) ** power + end``: the step stops at
    ``decay_steps``, or with ``cycle`` the decay restarts with ``decay_steps`` multiplied by
    ``ceil(step / decay_steps)``."""

    _CONFIG = ("initial_learning_rate", "decay_steps", "end_learning_rate", "power", "cycle",
               "name")

    def __init__(self, initial_learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0,
                 cycle=False, name=None):
        super().__init__()
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.end_learning_rate = end_learning_rate
        self.power = power
        self.cycle = cycle
        self.name = name

    def __call__(self, step):
        d = _lr_dtype(self.initial_learning_rate)
        initial = _host(self.initial_learning_rate, d)
        end = _host(self.end_learning_rate, d)
        s = _host(step, d)
        steps = _host(self.decay_steps, d)
        if self.cycle:
            steps = steps * np.where(s == 0, d.type(1), np.ceil(s / steps))
        else:
            s = np.minimum(s, steps)
        p = s / steps
        return _result((initial - end) * np.power(d.type(1) - p, _host(self.power, d)) + end, d)


class InverseTimeDecay(_StaircaseDecay):
    """``initial_learning_rate / (1 + decay_rate * step / decay_steps)``, the ratio floored
    when ``staircase``."""

    def _decayed(self, initial, rate, p, dtype):
        return initial / (dtype.type(1) + rate * p)


def _cosine(fraction, alpha, dtype):
    decayed = dtype.type(0.5) * (dtype.type(1) + np.cos(dtype.type(math.pi) * fraction))
    return dtype.type(1 - alpha) * decayed + dtype.type(alpha)


class CosineDecay(_ConfiguredSchedule):
    """Cosine decay (Loshchilov & Hutter 2017, SGDR without restarts) from
    ``initial_learning_rate`` to ``alpha * initial_learning_rate`` over ``decay_steps``.
    With ``warmup_target``, a linear warm-up from ``initial_learning_rate`` to
    ``warmup_target`` over ``warmup_steps`` comes first and the decay starts from the
    target (tf-keras 2.13 and later)."""

    _CONFIG = ("initial_learning_rate", "decay_steps", "alpha", "name", "warmup_target",
               "warmup_steps")

    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0, name=None,
                 warmup_target=None, warmup_steps=0):
        super().__init__()
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.alpha = alpha
        self.name = name
        self.warmup_steps = warmup_steps
        self.warmup_target = warmup_target

    def __call__(self, step):
        d = _lr_dtype(self.initial_learning_rate)
        initial = _host(self.initial_learning_rate, d)
        steps = _host(self.decay_steps, d)
        s = _host(step, d)
        if self.warmup_target is None:
            s = np.minimum(s, steps)
            return _result(initial * _cosine(s / steps, self.alpha, d), d)
        target = _host(self.warmup_target, d)
        warmup = _host(self.warmup_steps, d)
        s = np.minimum(s, steps + warmup)
        warm = (target - initial) * (s / warmup) + initial
        decay = target * _cosine((s - warmup) / steps, self.alpha, d)
        with np.errstate(all="ignore"):  # the branch not taken may divide by zero
            return _result(np.where(s < warmup, warm, decay), d)


class CosineDecayRestarts(LearningRateSchedule):
    """Cosine decay with warm restarts (SGDR, Loshchilov & Hutter 2017): the i-th period
    lasts ``first_decay_steps * t_mul ** i`` steps and starts at ``m_mul ** i`` times the
    initial rate."""

    def __init__(self, initial_learning_rate, first_decay_steps, t_mul=2.0, m_mul=1.0,
                 alpha=0.0, name=None):
        super().__init__()
        self.initial_learning_rate = initial_learning_rate
        self.first_decay_steps = first_decay_steps
        self._t_mul = t_mul
        self._m_mul = m_mul
        self.alpha = alpha
        self.name = name

    def __call__(self, step):
        d = _lr_dtype(self.initial_learning_rate)
        one = d.type(1)
        t_mul = _host(self._t_mul, d)
        fraction = _host(step, d) / _host(self.first_decay_steps, d)
        if t_mul == one:
            restart = np.floor(fraction)
            fraction = fraction - restart
        else:
            restart = np.floor(np.log(one - fraction * (one - t_mul)) / np.log(t_mul))
            done = (one - t_mul ** restart) / (one - t_mul)
            fraction = (fraction - done) / t_mul ** restart
        m_fac = _host(self._m_mul, d) ** restart
        alpha = _host(self.alpha, d)
        cosine = d.type(0.5) * m_fac * (one + np.cos(d.type(math.pi) * fraction))
        return _result(_host(self.initial_learning_rate, d) * ((one - alpha) * cosine + alpha), d)

    def get_config(self) -> dict:
        return {"initial_learning_rate": self.initial_learning_rate,
                "first_decay_steps": self.first_decay_steps, "t_mul": self._t_mul,
                "m_mul": self._m_mul, "alpha": self.alpha, "name": self.name}


_SCHEDULES = {cls.__name__: cls for cls in (
    ExponentialDecay, PiecewiseConstantDecay, PolynomialDecay, InverseTimeDecay, CosineDecay,
    CosineDecayRestarts)}


def serialize(learning_rate_schedule) -> dict:
    """``{"class_name": ..., "config": ...}`` for a schedule (Keras 2's form)."""
    if not isinstance(learning_rate_schedule, LearningRateSchedule):
        raise ValueError(f"serialize: learning_rate_schedule must be a LearningRateSchedule, "
                         f"got {learning_rate_schedule!r}")
    return {"class_name": type(learning_rate_schedule).__name__,
            "config": learning_rate_schedule.get_config()}


def deserialize(config, custom_objects=None) -> LearningRateSchedule:
    """The schedule ``serialize`` described (or a class name in ``custom_objects``).

    Raises:
      ValueError: an unknown class name ("Unknown decay: 'Name'"), or a config that is not a
        dict with ``class_name``.
    """
    if isinstance(config, str):
        config = {"class_name": config, "config": {}}
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"Could not interpret serialized decay: {config}")
    name = config["class_name"]
    cls = (custom_objects or {}).get(name) or _SCHEDULES.get(name)
    if cls is None:
        raise ValueError(f"Unknown decay: '{name}'. Please ensure you are using a "
                         "`keras.utils.custom_object_scope` and that this object is "
                         "included in the scope.")
    return cls.from_config(dict(config.get("config", {})))


__all__ = ["CosineDecay", "CosineDecayRestarts", "ExponentialDecay", "InverseTimeDecay",
           "LearningRateSchedule", "PiecewiseConstantDecay", "PolynomialDecay", "deserialize",
           "serialize"]
