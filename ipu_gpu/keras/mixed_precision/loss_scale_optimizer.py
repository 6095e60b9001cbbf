"""``LossScaleOptimizer``: Keras 2's loss scaling around an OptimizerV2
(``tf_keras/src/mixed_precision/loss_scale_optimizer.py``, the class for the legacy
optimizers, which are ipu_gpu's).

The loss is multiplied by the loss scale before differentiation and the gradients divided by
it after, so float16 gradients that would underflow survive. With a dynamic scale (the
default: 2**15 to start) a step whose gradients hold an inf or NaN is skipped (only
``iterations`` advances) and the scale halves, never below 1; after ``dynamic_growth_steps``
(2000) finite steps in a row it doubles, unless doubling overflows float32. ``Model.compile``
wraps its optimizer in one under the ``mixed_float16`` policy, as Keras 2 does.
"""

from __future__ import annotations

import numpy as np

from ...core import backend as _array_backend
from ...core.convert import convert_to_tensor
from ...core.indexed_slices import IndexedSlices
from ...core.tensor import Tensor, Variable
from ...ops import math as _m
from ... import distribute
from ..optimizers import utils as _utils
from ..optimizers.optimizer_v2 import OptimizerV2

_DEFAULT_INITIAL_SCALE = 2**15
_DEFAULT_GROWTH_STEPS = 2000


class _DynamicLossScaleState:
    """The dynamic loss scale: ``current_loss_scale`` (float32) and ``good_steps`` (int64, the
    finite steps since the scale last changed)."""

    def __init__(self, initial_loss_scale, growth_steps, multiplier):
        self.initial_loss_scale = float(initial_loss_scale)
        self.growth_steps = int(growth_steps)
        self.multiplier = float(multiplier)
        self.current_loss_scale = Variable(np.float32(self.initial_loss_scale), trainable=False,
                                           name="current_loss_scale", dtype="float32")
        self.counter = Variable(np.int64(0), trainable=False, name="good_steps",
                                dtype="int64")

    def __call__(self) -> Tensor:
        return convert_to_tensor(self.current_loss_scale)

    def update(self, grads) -> bool:
        """Move the scale after a step whose (all-reduced, unscaled) gradients are ``grads``;
        returns whether the step should be applied (every gradient finite)."""
        finite = _is_all_finite(grads)
        scale = float(np.asarray(self.current_loss_scale))
        if finite:
            if int(np.asarray(self.counter)) + 1 >= self.growth_steps:
                new = np.float32(scale * self.multiplier)
                if np.isfinite(new):
                    self.current_loss_scale.assign(new)
                self.counter.assign(np.int64(0))
            else:
                self.counter.assign_add(np.int64(1))
        else:
            self.counter.assign(np.int64(0))
            self.current_loss_scale.assign(np.float32(max(scale / self.multiplier, 1.0)))
        return finite


def _is_all_finite(grads) -> bool:
    for g in grads:
        if g is None:
            continue
        if isinstance(g, IndexedSlices):  # its dense value, as TF's is_finite converts it
            g = convert_to_tensor(g)
        value = g._value if isinstance(g, Tensor) else g
        xp = _array_backend.xp_of(value)
        if not bool(xp.isfinite(value).all()):  # syncs device
            return False
    return True


def _multiply_gradient(g, scale):
    """``g * scale``, an IndexedSlices staying one (its values scaled), as Keras's."""
    scale = _m.cast(scale, g.dtype)
    if isinstance(g, IndexedSlices):
        return IndexedSlices(g.values * scale, g.indices, g.dense_shape)
    return convert_to_tensor(g) * scale


class LossScaleOptimizer(OptimizerV2):
    """An optimizer that scales the loss to keep float16 gradients from underflowing.

    Args:
      inner_optimizer: the OptimizerV2 that applies the unscaled gradients.
      dynamic: adjust the scale during training (default True).
      initial_scale: the first loss scale (default 2**15 when dynamic; required otherwise).
      dynamic_growth_steps: finite steps in a row before the scale doubles (default 2000;
        must be None when not dynamic).

    Raises:
      TypeError: ``inner_optimizer`` is not an OptimizerV2, or is a LossScaleOptimizer;
        ``dynamic`` is not a bool.
      ValueError: ``inner_optimizer`` is already wrapped; ``initial_scale`` missing, or
        ``dynamic_growth_steps`` given, with ``dynamic=False``.
    """

    _HAS_AGGREGATE_GRAD = True

    def __init__(self, inner_optimizer, dynamic=True, initial_scale=None,
                 dynamic_growth_steps=None):
        if not isinstance(inner_optimizer, OptimizerV2):
            raise TypeError('"inner_optimizer" must be an instance of '
                            f"`tf.keras.optimizers.Optimizer`, but got: {inner_optimizer}. ")
        if not isinstance(dynamic, bool):
            raise TypeError('"dynamic" argument to LossScaleOptimizer.__init__ must be a bool, '
                            f"but got: {dynamic!r}")
        if isinstance(inner_optimizer, LossScaleOptimizer):
            raise TypeError("LossScaleOptimizer cannot wrap another LossScaleOptimizer, but "
                            f"got: {inner_optimizer}")
        if getattr(inner_optimizer, "_is_wrapped_by_loss_scale_optimizer", False):
            raise ValueError('"inner_optimizer" is already wrapped by a LossScaleOptimizer. An '
                             "optimizer can only be wrapped by a single LossScaleOptimizer")
        set_ = object.__setattr__
        set_(self, "_optimizer", inner_optimizer)
        set_(inner_optimizer, "_is_wrapped_by_loss_scale_optimizer", True)
        if dynamic:
            state = _DynamicLossScaleState(
                _DEFAULT_INITIAL_SCALE if initial_scale is None else initial_scale,
                _DEFAULT_GROWTH_STEPS if dynamic_growth_steps is None else dynamic_growth_steps,
                multiplier=2)
        else:
            if initial_scale is None:
                raise ValueError('"initial_scale" must be specified if "dynamic" is False')
            if dynamic_growth_steps is not None:
                raise ValueError('"dynamic_growth_steps" must be None if "dynamic" is False, '
                                 f"but got: {dynamic_growth_steps}")
            state = float(initial_scale)
        set_(self, "_loss_scale", state)
        set_(self, "_loss_has_been_scaled", False)
        set_(self, "_gradients_have_been_unscaled", False)

    # ---- the loss scale ----
    @property
    def dynamic(self) -> bool:
        return isinstance(self._loss_scale, _DynamicLossScaleState)

    @property
    def loss_scale(self) -> Tensor:
        """The current loss scale, a float32 scalar Tensor."""
        if self.dynamic:
            return self._loss_scale()
        return convert_to_tensor(np.float32(self._loss_scale))

    @property
    def dynamic_counter(self):
        """The int64 Variable counting finite steps since the scale changed (None if fixed)."""
        return self._loss_scale.counter if self.dynamic else None

    @property
    def initial_scale(self) -> float:
        return self._loss_scale.initial_loss_scale if self.dynamic else self._loss_scale

    @property
    def dynamic_growth_steps(self):
        return self._loss_scale.growth_steps if self.dynamic else None

    @property
    def inner_optimizer(self) -> OptimizerV2:
        return self._optimizer

    def get_scaled_loss(self, loss):
        """``loss`` times the loss scale (in the loss's dtype); a callable gives a callable."""
        object.__setattr__(self, "_loss_has_been_scaled", True)
        if callable(loss):
            def new_loss():
                value = loss()
                return value * _m.cast(self.loss_scale, value.dtype)
            return new_loss
        loss = convert_to_tensor(loss)
        return loss * _m.cast(self.loss_scale, loss.dtype)

    def get_unscaled_gradients(self, grads) -> list:
        """Each gradient divided by the loss scale (None stays None)."""
        object.__setattr__(self, "_gradients_have_been_unscaled", True)
        reciprocal = 1.0 / self.loss_scale
        return [None if g is None else _multiply_gradient(g, reciprocal) for g in grads]

    # ---- the gradient pipeline ----
    def _compute_gradients(self, loss, var_list, grad_loss=None, tape=None):
        from ...core.tape import GradientTape

        tape = GradientTape() if tape is None else tape
        with tape:
            loss = self.get_scaled_loss(loss)
        # an overflow of the scaled gradients is expected (the step is then skipped): no
        # numpy warnings for it, as TF gives none
        with np.errstate(over="ignore", invalid="ignore"):
            grads_and_vars = self._optimizer._compute_gradients(loss, var_list, grad_loss,
                                                                tape=tape)
        grads = [g for g, _ in grads_and_vars]
        variables = [v for _, v in grads_and_vars]
        return list(zip(self.get_unscaled_gradients(grads), variables))

    def _transform_unaggregated_gradients(self, grads_and_vars):
        return self._optimizer._transform_unaggregated_gradients(grads_and_vars)

    def _aggregate_gradients(self, grads_and_vars):
        return self._optimizer._aggregate_gradients(grads_and_vars)

    def apply_gradients(self, grads_and_vars, name=None, experimental_aggregate_gradients=True):
        """Apply the (unscaled) gradients with the inner optimizer when all are finite;
        otherwise only advance ``iterations``. A dynamic scale moves either way.

        Raises:
          ValueError: called in a cross-replica context.
        """
        if distribute.in_cross_replica_context():
            raise ValueError("apply_gradients() must be called in a replica context.")
        grads_and_vars = _utils.filter_empty_gradients(grads_and_vars)
        if experimental_aggregate_gradients:
            # aggregated here, so a replica's non-finite gradient skips the step everywhere
            grads_and_vars = self._optimizer._transform_unaggregated_gradients(grads_and_vars)
            grads_and_vars = self._optimizer._aggregate_gradients(grads_and_vars)
        grads_and_vars = tuple(grads_and_vars)
        grads = [g for g, _ in grads_and_vars]
        should_apply = self._loss_scale.update(grads) if self.dynamic else True
        if should_apply:
            return self._optimizer.apply_gradients(list(grads_and_vars), name=name,
                                                   experimental_aggregate_gradients=False)
        return self._optimizer.iterations.assign_add(1)

    # ---- configuration ----
    def get_config(self) -> dict:
        from .. import optimizers

        return {"inner_optimizer": optimizers.serialize(self._optimizer),
                "dynamic": self.dynamic, "initial_scale": self.initial_scale,
                "dynamic_growth_steps": self.dynamic_growth_steps}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from .. import optimizers

        config = dict(config)
        inner = config.pop("inner_optimizer")
        if not isinstance(inner, OptimizerV2):
            inner = optimizers.deserialize(inner, custom_objects=custom_objects)
        return cls(inner, **config)

    # ---- delegation to the inner optimizer ----
    @property
    def iterations(self):
        return self._optimizer.iterations

    @iterations.setter
    def iterations(self, variable):
        self._optimizer.iterations = variable

    @property
    def _name(self):
        return self._optimizer._name

    def get_slot_names(self):
        return self._optimizer.get_slot_names()

    def variables(self):
        return self._optimizer.variables()

    @property
    def weights(self):
        return self._optimizer.weights

    def get_weights(self):
        return self._optimizer.get_weights()

    def set_weights(self, weights):
        return self._optimizer.set_weights(weights)

    def get_slot(self, var, slot_name):
        return self._optimizer.get_slot(var, slot_name)

    def add_slot(self, var, slot_name, initializer="zeros", shape=None):
        return self._optimizer.add_slot(var, slot_name, initializer, shape)

    def _create_all_weights(self, var_list):
        return self._optimizer._create_all_weights(var_list)

    def __getattr__(self, name):
        # learning_rate, lr, clipnorm, the other hyperparameters: the inner optimizer's
        if name.startswith("__") or name == "_optimizer":
            raise AttributeError(name)
        return getattr(self._optimizer, name)

    def __setattr__(self, name, value):
        if name in ("lr", "learning_rate") or name in self._optimizer.__dict__.get("_hyper", {}):
            setattr(self._optimizer, name, value)
        else:
            object.__setattr__(self, name, value)

    def __dir__(self):
        return sorted(set(object.__dir__(self)) | set(dir(self._optimizer)))

    def __repr__(self) -> str:
        return f"<LossScaleOptimizer inner_optimizer={self._optimizer!r}>"


