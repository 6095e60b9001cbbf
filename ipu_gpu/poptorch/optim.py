"""``poptorch.optim``: PopTorch's optimizers and the checks PopTorch applies to any optimizer
given to a training model.

PopTorch never runs an optimizer's Python ``step``: it hands the hyper-parameters to PopART,
whose update rules run on the device. This module holds those rules (``apply_update``, which
the training model calls once per weight update, after the gradients have been reduced and
divided by ``loss_scaling``; for SGD without momentum on float32 weights, PopART's SGD0, the
division is folded into the learning rate's scalar instead: ``grad_reduction``).

``max_grad_norm`` (``apply_update(..., clip=True)``) is PopART's ``ClipWeightGradientsByNorm``
(run after the optimizer decompositions): every weight's clip input ``u`` is multiplied by
``max / max(max, sqrt(sum |u|^2))`` over all weights (not torch's ``max / (norm + 1e-6)``),
where ``u`` is what enters the weight's update:

* SGD0 (no momentum): the accumulated gradient, loss-scaled and unnormalised
  (``clip_sums_by_global_norm``); where the reduction has already divided it (float16
  weights or accumulator, Running mean, stochastic rounding) the threshold is divided by
  ``ls * af * rf`` instead (``clip_scale``).
* SGD1/SGD2 (momentum, combined/separate): the velocity after this step's gradient, as
  stored (times ``velocity_scaling``, ``loss_scaling`` for the separate variant), into the
  ``SGD1VarUpdate`` only: the weight's step is clipped, the velocity kept is not. With
  Nesterov the emulator clips its update term (not checked against PopART).
* Adam/AdamW: the unscaled gradient entering ``accl1``/``accl2`` (``gradUnscale`` precedes
  them), plus ``wd * w`` under Adam's L2 decay (``regularizeL2`` too), so both moments see
  the clipped gradient.
* LAMB and RMSprop: PopTorch gives them no ``max_grad_norm``.

The update rules:

* SGD (PopART's ``SGD``): ``w -= lr * (1 - dampening) * (g + wd * w)`` without momentum; with
  momentum the velocity starts at zero (so, unlike ``torch.optim.SGD``, dampening applies
  from the first step), kept in one of two layouts. The *separate* variant (default,
  ``use_combined_accum=False``) stores ``v`` scaled by ``loss_scaling`` in
  ``velocity_accum_type``; the *combined* variant stores ``v`` scaled by ``velocity_scaling``
  in the weight's dtype and pre-computes ``momentum * v + (1 - dampening) * wd * w`` right
  after each update, so a hyper-parameter changed with ``setOptimizer`` takes full effect one
  step later (PopART's "lagged update"). Both equal ``torch.optim.SGD`` in exact arithmetic
  when ``dampening == 0``.
* Adam / AdamW (PopART's ``Adam``, L2 / decoupled decay): ``torch.optim.Adam``/``AdamW``'s
  arithmetic, with the moments stored in ``first/second_order_momentum_accum_type``;
  ``AdamW(bias_correction=False)`` still corrects the bias, as PopTorch does.
* LAMB (PopART's ``Lamb``/``LambNoBias``): Adam's moments, ``upd = m / (sqrt(v) + eps) +
  wd * w`` (bias-corrected unless ``bias_correction=False``) and
  ``w -= lr * min(|w|, max_weight_norm) / |upd| * upd`` (the ratio is 1 when either norm is 0).
* RMSprop (PopART's ``Adaptive``): ``torch.optim.RMSprop``, or TensorFlow's RMSProp with
  ``use_tf_variant=True``.

The ``poptorch.optim`` classes' own ``step()`` runs the same rules. Arguments PopART has no
counterpart for (``maximize``, ``foreach``, ``capturable``, ``differentiable``, ``fused``)
are accepted and passed to torch's constructor but do not change the device update.
``accum_type`` (the gradient accumulator's dtype) is recorded; it selects the Running mean
reduction (``select_mean_reduction_strategy``). RMSprop's moment dtypes are recorded only.

Also here, for the training model: the supported-type check (``check_supported``), the
constant/variable attribute rules (``VariableAttributes``, ``describe``,
``check_constant_attributes``, PopART's messages), the one-time warning about unexpected
attributes (``AttributeTracker``), the hyper-parameters the device holds
(``hyperparameters``) and the IPU optimizer state (``state_dict()`` with
``ipu_state``/``ipu_param`` once ``bind_parameter_names`` has named the weights).
"""

from __future__ import annotations

import copy
import math
import weakref
from typing import Any

import numpy as np
import torch

from .errors import Error
from .fused_sgd import sgd_step, sgd_steps, takes as takes_sgd_step
from .log_level import logger

__all__ = ["LAMB", "SGD", "Adam", "AdamW", "AttributeTracker", "Optimizer", "RMSprop",
           "VariableAttributes", "apply_update", "bind_parameter_names",
           "check_constant_attributes", "check_supported", "describe", "hyperparameters",
           "select_mean_reduction_strategy"]

_FP16_MAX = 65500.0
_ACCUM_ERROR = "Accumulation types must be either torch.float32 or torch.float16"
# PopTorch's ``_OptimizerType`` members, in its order (the unsupported-type message lists
# them as Python < 3.11 prints IntEnum members).
_TYPES = ("SGD1", "SGD2", "ADAM", "ADAMW", "ADAMW_NO_BIAS", "RMSPROP", "RMSPROP_CENTERED",
          "LAMB", "LAMB_NO_BIAS")
# optimizer -> {parameter: name}, set by bind_parameter_names (kept off the optimizer so
# PopTorch's unexpected-attribute check does not see it).
_BOUND_NAMES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_UNSUPPORTED = ("Unsupported optimizer type. Types supported "
                + ", ".join(f"_OptimizerType.{t}" for t in _TYPES))


class VariableAttributes:
    """Which attributes of a ``poptorch.optim`` optimizer are variable (can be changed with
    ``setOptimizer`` after compilation) and which are constant (compiled into the program).
    Reached through ``opt.variable_attrs``."""

    def __init__(self, variable_attributes: list[str], allowed_attributes: list[str]) -> None:
        self._variable_attributes = list(variable_attributes)
        self._allowed_attributes = list(allowed_attributes)

    def isConstant(self, attr: str) -> bool:  # noqa: N802 - PopTorch's name
        """True if ``attr`` is constant."""
        return attr not in self._variable_attributes

    def markAsConstant(self, attr: str) -> None:  # noqa: N802
        """Make ``attr`` constant (before the model is compiled).

        Raises:
          AssertionError: ``attr`` is not an attribute of this optimizer."""
        self._check(attr)
        self._variable_attributes = [a for a in self._variable_attributes if a != attr]

    def markAsVariable(self, attr: str) -> None:  # noqa: N802
        """Make ``attr`` variable (before the model is compiled).

        Raises:
          AssertionError: ``attr`` is not an attribute of this optimizer."""
        self._check(attr)
        self._variable_attributes.append(attr)

    def _check(self, attr):
        if attr not in self._allowed_attributes:
            raise AssertionError(f"Unknown attribute {attr}, allowed values: "
                                 f"{self._allowed_attributes}")


_POPTORCH_ATTRS = ("variable_attrs", "loss_scaling", "use_combined_accum", "accum_type",
                   "velocity_accum_type", "first_order_momentum_accum_type",
                   "second_order_momentum_accum_type", "max_grad_norm", "bias_correction",
                   "use_tf_variant", "max_weight_norm")


def _explicit(local_vars: dict) -> tuple[dict, list[str]]:
    """The constructor's arguments given a value (not None): PopTorch makes those variable."""
    given = {k: v for k, v in local_vars.items()
             if k not in ("self", "params") and not k.startswith("__") and v is not None}
    return given, ["params", *given]


def _accum_type(dtype, default=torch.float32):
    dtype = default if dtype is None else dtype
    if dtype not in (torch.float16, torch.float32):
        raise AssertionError(_ACCUM_ERROR)
    return dtype


class Optimizer:
    """What every ``poptorch.optim`` optimizer adds to its ``torch.optim`` parent: the
    IPU-side state in ``state_dict()`` and ``variable_attrs``."""

    # PopTorch's attribute lists: global variables, attributes torch's class lacks, and the
    # per-group hyper-parameters.
    _child_vars = ["loss_scaling"]
    _child_only: list[str] = []
    _group_vars: list[str] = []

    def _poptorch_setup(self, variables, loss_scaling, **accum_types):
        self.loss_scaling = 1.0 if loss_scaling is None else loss_scaling
        for name, dtype in accum_types.items():
            setattr(self, name, _accum_type(dtype))
        self.variable_attrs = VariableAttributes(variables,
                                                 list(self.defaults) + self._child_vars)

    # -- state --------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """torch's state dict plus ``ipu_state`` (the optimizer's state tensors) and
        ``ipu_param`` (its hyper-parameter tensors), named as PopART names them; both are
        None until the optimizer has been used by a compiled training model."""
        torch_state = torch.optim.Optimizer.state_dict(self)
        names = _BOUND_NAMES.get(self)
        if names is None:
            return {"ipu_state": None, "ipu_param": None, **torch_state}
        return {"ipu_state": _ipu_state(self, names), "ipu_param": _ipu_param(self, names),
                **torch_state}

    def load_state_dict(self, state_dict: dict) -> None:
        """Load a state returned by a ``poptorch.optim`` optimizer's ``state_dict()``.

        Raises:
          RuntimeError: the state is empty, or it is not an IPU optimizer state (a
            ``torch.optim`` state dict)."""
        if not state_dict:
            raise RuntimeError("Cannot load optimizer state dictionary because it is empty.")
        if "ipu_state" not in state_dict or "ipu_param" not in state_dict:
            raise RuntimeError("Only IPU optimizer states can be loaded onto the IPU.")
        torch_part = {k: v for k, v in state_dict.items() if k not in ("ipu_state", "ipu_param")}
        torch.optim.Optimizer.load_state_dict(self, torch_part)
        names = _BOUND_NAMES.get(self)
        if names is not None and state_dict["ipu_state"]:
            _load_ipu_state(self, names, state_dict["ipu_state"])

    def __getstate__(self) -> dict:
        # torch keeps only defaults/state/param_groups (not, say, an LR scheduler's patched
        # step); PopTorch's attributes must survive copy.copy / pickling too.
        state = torch.optim.Optimizer.__getstate__(self)
        state.update({k: v for k, v in self.__dict__.items() if k in _POPTORCH_ATTRS})
        return state


class SGD(Optimizer, torch.optim.SGD):
    """Stochastic gradient descent with optional momentum (``torch.optim.SGD``'s arguments;
    ``lr`` is required), plus ``loss_scaling``, ``velocity_scaling`` (combined variant only),
    ``use_combined_accum`` (False: separate accumulator and velocity tensors; True: one
    combined tensor), ``accum_type`` / ``velocity_accum_type`` (float16 or float32; the
    velocity of the separate variant is stored in ``velocity_accum_type``) and
    ``max_grad_norm`` (global-norm gradient clipping). See the module doc for the arithmetic.

    Raises:
      AssertionError: an accumulation type other than float16/float32."""

    _child_only = ["loss_scaling", "velocity_scaling", "use_combined_accum", "accum_type",
                   "velocity_accum_type", "max_grad_norm"]
    _group_vars = ["lr", "momentum", "dampening", "weight_decay", "nesterov",
                   "velocity_scaling"]

    def __init__(self, params, lr: float, momentum=None, dampening=None, weight_decay=None,
                 nesterov=None, maximize=None, foreach=None, differentiable=None,
                 loss_scaling=None, velocity_scaling=None, use_combined_accum=None,
                 accum_type=None, velocity_accum_type=None, max_grad_norm=None) -> None:
        given, variables = _explicit(locals())
        torch.optim.SGD.__init__(self, params, **{k: v for k, v in given.items()
                                                  if k not in self._child_only})
        self.use_combined_accum = bool(use_combined_accum)
        if velocity_scaling is None:
            velocity_scaling = 1.0
        elif not self.use_combined_accum:
            logger.warning("velocity_scaling value ignored when using the separate variant "
                           "(use_combined_accum=False). In future, this will lead to an "
                           "error. Please update your code.")
        if self.use_combined_accum:
            self.defaults["velocity_scaling"] = velocity_scaling
            for group in self.param_groups:
                group.setdefault("velocity_scaling", velocity_scaling)
        self.max_grad_norm = float("inf") if max_grad_norm is None else max_grad_norm
        self._poptorch_setup(variables, loss_scaling, accum_type=accum_type,
                             velocity_accum_type=velocity_accum_type)

    @torch.no_grad()
    def step(self, closure=None):
        """One update with PopART's SGD arithmetic (see the module doc)."""
        return _with_closure(closure, lambda: _sgd_update(self))


class Adam(Optimizer, torch.optim.Adam):
    """Adam (``torch.optim.Adam``'s arguments and arithmetic, L2 weight decay) plus
    ``loss_scaling``, ``accum_type``, ``first_order_momentum_accum_type`` /
    ``second_order_momentum_accum_type`` (the dtypes the moments are stored in) and
    ``max_grad_norm``.

    Raises:
      AssertionError: an accumulation type other than float16/float32.
      ValueError: ``amsgrad=True`` (when the optimizer is given to a model)."""

    _child_only = ["loss_scaling", "accum_type", "first_order_momentum_accum_type",
                   "second_order_momentum_accum_type", "max_grad_norm"]
    _group_vars = ["lr", "betas", "eps", "weight_decay", "amsgrad"]
    _decoupled = False

    def __init__(self, params, lr=None, betas=None, eps=None, weight_decay=None, amsgrad=None,
                 foreach=None, maximize=None, capturable=None, differentiable=None, fused=None,
                 loss_scaling=None, accum_type=None, first_order_momentum_accum_type=None,
                 second_order_momentum_accum_type=None, max_grad_norm=None) -> None:
        given, variables = _explicit(locals())
        torch.optim.Adam.__init__(self, params, **{k: v for k, v in given.items()
                                                   if k not in self._child_only})
        self.max_grad_norm = float("inf") if max_grad_norm is None else max_grad_norm
        self._poptorch_setup(variables, loss_scaling, accum_type=accum_type,
                             first_order_momentum_accum_type=first_order_momentum_accum_type,
                             second_order_momentum_accum_type=second_order_momentum_accum_type)

    @torch.no_grad()
    def step(self, closure=None):
        """One update: torch's Adam arithmetic, the moments kept in their accumulation
        types."""
        return _with_closure(closure, lambda: _adam_family_update(self))


class AdamW(Optimizer, torch.optim.AdamW):
    """AdamW (``torch.optim.AdamW``'s arguments and arithmetic, decoupled weight decay) plus
    ``loss_scaling``, ``bias_correction``, the accumulation types and ``max_grad_norm``.
    ``bias_correction=False`` is accepted and ignored: PopTorch maps it to the bias-corrected
    update.

    Raises:
      AssertionError: an accumulation type other than float16/float32.
      ValueError: ``amsgrad=True`` (when the optimizer is given to a model)."""

    _child_only = ["loss_scaling", "bias_correction", "accum_type",
                   "first_order_momentum_accum_type", "second_order_momentum_accum_type",
                   "max_grad_norm"]
    _group_vars = ["lr", "betas", "weight_decay", "eps", "amsgrad"]
    _decoupled = True

    def __init__(self, params, lr=None, betas=None, eps=None, weight_decay=None, amsgrad=None,
                 maximize=None, foreach=None, capturable=None, differentiable=None, fused=None,
                 loss_scaling=None, bias_correction=None, accum_type=None,
                 first_order_momentum_accum_type=None, second_order_momentum_accum_type=None,
                 max_grad_norm=None) -> None:
        given, variables = _explicit(locals())
        torch.optim.AdamW.__init__(self, params, **{k: v for k, v in given.items()
                                                    if k not in self._child_only})
        self.bias_correction = True if bias_correction is None else bias_correction
        self.max_grad_norm = float("inf") if max_grad_norm is None else max_grad_norm
        self._poptorch_setup(variables, loss_scaling, accum_type=accum_type,
                             first_order_momentum_accum_type=first_order_momentum_accum_type,
                             second_order_momentum_accum_type=second_order_momentum_accum_type)

    @torch.no_grad()
    def step(self, closure=None):
        """One update: torch's AdamW arithmetic, the moments kept in their accumulation
        types."""
        return _with_closure(closure, lambda: _adam_family_update(self))


class RMSprop(Optimizer, torch.optim.RMSprop):
    """RMSprop (``torch.optim.RMSprop``'s arguments and arithmetic, L2 weight decay) plus
    ``loss_scaling``, the accumulation types (recorded: the update is computed in float32)
    and ``use_tf_variant``.

    ``use_tf_variant=True`` gives TensorFlow's RMSProp instead, as PopTorch documents it: the
    mean-square accumulator starts at ones, ``eps`` is added inside the square root, and the
    learning rate is folded into the momentum buffer (``mom = momentum * mom + lr * g /
    sqrt(ms + eps)``; ``w -= mom``), centred as TF centres it.

    Raises:
      AssertionError: an accumulation type other than float16/float32."""

    _child_only = ["loss_scaling", "accum_type", "first_order_momentum_accum_type",
                   "second_order_momentum_accum_type", "use_tf_variant"]
    _group_vars = ["lr", "momentum", "weight_decay", "alpha", "eps", "centered"]

    def __init__(self, params, lr=None, alpha=None, eps=None, weight_decay=None, momentum=None,
                 centered=None, foreach=None, maximize=None, differentiable=None,
                 loss_scaling=None, accum_type=None, first_order_momentum_accum_type=None,
                 second_order_momentum_accum_type=None, use_tf_variant=None) -> None:
        given, variables = _explicit(locals())
        torch.optim.RMSprop.__init__(self, params, **{k: v for k, v in given.items()
                                                      if k not in self._child_only})
        self.use_tf_variant = bool(use_tf_variant)
        self._poptorch_setup(variables, loss_scaling, accum_type=accum_type,
                             first_order_momentum_accum_type=first_order_momentum_accum_type,
                             second_order_momentum_accum_type=second_order_momentum_accum_type)

    @torch.no_grad()
    def step(self, closure=None):
        """One update: PyTorch's RMSprop, or TensorFlow's with ``use_tf_variant``."""
        if not self.use_tf_variant:
            return torch.optim.RMSprop.step(self, closure)
        return _with_closure(closure, lambda: _tf_rmsprop_update(self))


class LAMB(Optimizer, torch.optim.Optimizer):
    """Layer-wise Adaptive Moments (You et al. 2019, "Large Batch Optimization for Deep
    Learning: Training BERT in 76 minutes") as PopTorch defines it: Adam's moments,
    ``upd = m_hat / (sqrt(v_hat) + eps) + weight_decay * w`` and
    ``w -= lr * min(|w|, max_weight_norm) / |upd| * upd`` (ratio 1 when either norm is 0).

    Defaults: ``lr=1e-3``, ``betas=(0.9, 0.999)``, ``eps=1e-8``, ``weight_decay=1e-2``,
    ``bias_correction=True`` (False: PopART's LambNoBias, ``m`` and ``v`` used uncorrected),
    ``max_weight_norm=None`` meaning 65500 (float16's largest value, what PopTorch stores for
    None; it documents None as disabling the clamp). ``max_weight_norm`` can be set per
    parameter group.

    Raises:
      AssertionError: an accumulation type other than float16/float32."""

    _child_only = ["loss_scaling", "bias_correction", "accum_type",
                   "first_order_momentum_accum_type", "second_order_momentum_accum_type"]
    _group_vars = ["lr", "weight_decay", "betas", "eps", "max_weight_norm"]
    _decoupled = True

    def __init__(self, params, lr=None, betas=None, eps=None, weight_decay=None,
                 bias_correction=None, loss_scaling=None, max_weight_norm=None,
                 accum_type=None, first_order_momentum_accum_type=None,
                 second_order_momentum_accum_type=None) -> None:
        _, variables = _explicit(locals())
        max_weight_norm = _FP16_MAX if max_weight_norm is None else max_weight_norm
        defaults = {"lr": 1e-3 if lr is None else lr,
                    "betas": (0.9, 0.999) if betas is None else betas,
                    "eps": 1e-8 if eps is None else eps,
                    "weight_decay": 1e-2 if weight_decay is None else weight_decay,
                    "max_weight_norm": max_weight_norm}
        torch.optim.Optimizer.__init__(self, params, defaults)
        self.bias_correction = True if bias_correction is None else bias_correction
        self.max_weight_norm = max_weight_norm
        self._poptorch_setup(variables, loss_scaling, accum_type=accum_type,
                             first_order_momentum_accum_type=first_order_momentum_accum_type,
                             second_order_momentum_accum_type=second_order_momentum_accum_type)

    @torch.no_grad()
    def step(self, closure=None):
        """One LAMB update (see the class doc)."""
        return _with_closure(closure, lambda: _adam_family_update(self))


# ---- the device's update rules ---------------------------------------------------------
def _with_closure(closure, update):
    loss = None
    if closure is not None:
        with torch.enable_grad():
            loss = closure()
    update()
    return loss


def _max_grad_norm(opt):
    """The optimizer's ``max_grad_norm`` for global-norm clipping, None when it is off."""
    norm = getattr(opt, "max_grad_norm", None)
    return None if norm is None or norm == float("inf") else float(norm)


def clip_factor(tensors, max_norm: float):
    """PopART's ``ClipWeightGradientsByNorm`` factor for the tensors it clips:
    ``max_norm / max(max_norm, sqrt(sum |t|^2))``, the norm taken over every weight's tensor
    (``ReduceSumSquare`` per weight, their ``Sum``, ``Sqrt``) in the tensors' dtype; a 0-dim
    tensor, or None when there is nothing to clip. float16 tensors are squared and summed
    in float32 (the IPU's reductions keep float32 partials), the factor rounded to float16."""
    if not tensors:
        return None
    dtype = tensors[0].dtype
    wide = [t.float() for t in tensors] if dtype == torch.float16 else tensors
    squares = [torch.sum(t * t) for t in wide]
    total = squares[0]
    for sq in squares[1:]:
        total = total + sq
    norm = torch.sqrt(total)
    clip = torch.tensor(max_norm, dtype=norm.dtype, device=norm.device)
    return (clip / torch.maximum(norm, clip)).to(dtype)


def clip_sums_by_global_norm(grads, max_norm: float) -> None:
    """``ClipWeightGradientsByNorm`` on the gradients entering SGD0's update (the
    unnormalised, loss-scaled sums), in place: ``g *= clip_factor(grads, max_norm)``."""
    factor = clip_factor(grads, max_norm)
    if factor is not None:
        torch._foreach_mul_(grads, factor)


def _storage(accum_dtype, p):
    """The dtype a state tensor is kept in: float16 when asked for, else the weight's."""
    return torch.float16 if accum_dtype == torch.float16 else p.dtype


def _momentum_is_constant(opt) -> bool:
    attrs = getattr(opt, "variable_attrs", None)
    if attrs is not None:
        return attrs.isConstant("momentum")
    return all(g["momentum"] == 0 for g in opt.param_groups) and opt.defaults["momentum"] == 0


def _sgd_update(opt, grad_divisor=None, max_norm=None, clip_scale=None):
    """PopART's SGD (sgd.hpp): SGD0 without momentum, SGD1 combined, SGD2 separate.
    ``grad_divisor`` (``GradientReduction.finish(..., fold=True)``): the gradients are the
    unnormalised sums, and SGD0 folds ``1 / grad_divisor`` into its scalar as PopART's
    ``SGD0VarUpdateOpx`` does: ``w *= wdsf0`` (weight decay only), then ``w -= slr0 * g``
    with ``wdsf0 = 1 - lr * (1 - dampening) * wd`` and ``slr0 = (lr * (1 - dampening)) /
    grad_divisor`` in float32 (``WeightDecayScaleFactor0Helper``,
    ``ScaledLearningRate0Helper``); a group with momentum gets its gradients scaled first, as
    the reduction does when it does not fold. ``max_norm``: ``ClipWeightGradientsByNorm``
    on what enters each ``SGD0VarUpdate``/``SGD1VarUpdate`` (SGD0: the gradient sum, in
    place; gradients already divided by ``clip_scale`` are measured as times it;
    SGD1/SGD2: the velocity after this step's gradient, the weight's step only: the velocity
    kept for the next step is not clipped)."""
    combined = bool(getattr(opt, "use_combined_accum", False))
    loss_scaling = float(getattr(opt, "loss_scaling", 1.0) or 1.0)
    velocity_dtype = getattr(opt, "velocity_accum_type", torch.float32)
    no_velocity = _momentum_is_constant(opt) and opt.defaults["momentum"] == 0
    if max_norm is not None and no_velocity:
        if grad_divisor is None and clip_scale:  # max / max(max, s * n) = m' / max(m', n)
            max_norm = float(np.float32(max_norm) / np.float32(clip_scale))
        clip_sums_by_global_norm([p.grad for group in opt.param_groups if group["momentum"] == 0
                                  for p in group["params"] if p.grad is not None], max_norm)
    steps = []  # (weight, what enters its var update, lr / vs, after) of the velocity groups
    for group in opt.param_groups:
        lr, mm, dm = group["lr"], group["momentum"], group["dampening"]
        wd, nesterov = group["weight_decay"], group["nesterov"]
        sgd0 = no_velocity and mm == 0
        folded = grad_divisor is not None and sgd0
        if grad_divisor is not None and not folded:
            grads = [p.grad for p in group["params"] if p.grad is not None]
            scale = float(np.float32(1.0) / np.float32(grad_divisor))
            if grads and scale != 1.0:
                torch._foreach_mul_(grads, scale)
        # w -= step * g for the group's weights at once: one pass each where fused_sgd
        # takes them, else the two ops (foreach)
        exact, exact_grads, rest, rest_grads = [], [], [], []
        step = scaled_learning_rate0(lr, dm, grad_divisor) if folded else lr * (1 - dm)
        decay = _weight_decay_scale_factor0(lr, dm, wd) if folded and wd != 0 else None
        one_pass = type(step) in (float, int)
        for p in group["params"]:
            if p.grad is None:
                continue
            g = p.grad
            if sgd0:
                # without weight decay ``g + 0 * w`` is ``g`` bit for bit (for finite w):
                # skipping it saves two weight-sized temporaries per update
                if decay is not None:
                    p.mul_(decay)
                    if not sgd_step(p, g, step):
                        p.sub_(step * g)
                elif wd != 0:
                    p.sub_(step * (g + wd * p))
                elif one_pass and takes_sgd_step(p, g):
                    exact.append(p)
                    exact_grads.append(g)
                elif g.layout != torch.strided:
                    p.sub_(step * g)
                else:
                    rest.append(p)
                    rest_grads.append(g)
                continue
            state = opt.state[p]
            if combined:
                vs = float(group.get("velocity_scaling", 1.0))
                if "combined_velocity" not in state:
                    state["combined_velocity"] = (1 - dm) * wd * vs * p.detach().clone()
                v = state["combined_velocity"]
                v.add_(g, alpha=(1 - dm) * vs)
                update = vs * (g + wd * p) + mm * v if nesterov else v
                after = (v, mm, (1 - dm) * wd * vs)
            else:
                vs = loss_scaling
                if "velocity" not in state:
                    state["velocity"] = torch.zeros_like(p, dtype=_storage(velocity_dtype, p))
                d = g + wd * p
                v = state["velocity"].to(p.dtype) * mm + (1 - dm) * vs * d
                state["velocity"].copy_(v)
                v = state["velocity"].to(p.dtype)
                update = vs * d + mm * v if nesterov else v
                after = None
            steps.append((p, update, lr / vs, after))
        sgd_steps(exact, exact_grads, step)
        if rest:
            # the same two roundings as p.sub_(step * g) per weight, in two calls in all
            torch._foreach_sub_(rest, torch._foreach_mul(rest_grads, step))
    factor = None if max_norm is None else clip_factor([u for _, u, _, _ in steps], max_norm)
    for p, update, alpha, after in steps:
        p.sub_(update if factor is None else update * factor, alpha=alpha)
        if after is not None:  # the combined velocity's lagged part, from the new weight
            v, mm, swd = after
            v.mul_(mm).add_(p, alpha=swd)


def scaled_learning_rate0(lr: float, dampening: float, divisor: float) -> float:
    """PopART's SGD0 scalar ``(lr * (1 - dp)) / (ls * af * rf)`` in C++ float
    (``divisor`` is ``ls * af * rf``, already a float32 value)."""
    key = (lr, dampening, divisor)
    value = _SLR0.get(key)
    if value is None:
        f = np.float32
        value = float((f(lr) * (f(1.0) - f(dampening))) / f(divisor))
        if len(_SLR0) > 64:
            _SLR0.clear()
        _SLR0[key] = value
    return value


_SLR0 = {}  # scaled_learning_rate0's values (numpy scalar arithmetic costs microseconds)


def _weight_decay_scale_factor0(lr: float, dampening: float, wd: float) -> float:
    """PopART's SGD0 weight-decay factor ``1 - lr * (1 - dp) * wd`` in C++ float."""
    f = np.float32
    return float(f(1.0) - (f(lr) * (f(1.0) - f(dampening))) * f(wd))


def folds_gradient_scale(optimizer) -> bool:
    """Whether the update can take unnormalised gradients (``apply_update``'s
    ``grad_divisor``): PopTorch's SGD types, whose update is PopART's SGD0 (no momentum)."""
    return (isinstance(optimizer, torch.optim.SGD) and _momentum_is_constant(optimizer)
            and optimizer.defaults["momentum"] == 0)


def _adam_family_update(opt, max_norm=None):
    """PopART's Adam (Adam with L2 or decoupled decay) and Lamb/LambNoBias. ``max_norm``:
    ``ClipWeightGradientsByNorm`` on what enters ``accl1``/``accl2``: the unscaled gradient
    (``gradUnscale`` precedes them), plus ``wd * w`` under L2 decay (``regularizeL2`` too)."""
    lamb = isinstance(opt, LAMB)
    decoupled = getattr(opt, "_decoupled", isinstance(opt, torch.optim.AdamW))
    bias_correction = getattr(opt, "bias_correction", True) if lamb else True
    m_dtype = getattr(opt, "first_order_momentum_accum_type", torch.float32)
    v_dtype = getattr(opt, "second_order_momentum_accum_type", torch.float32)
    inputs = {}
    for group in opt.param_groups:
        wd = group["weight_decay"]
        for p in group["params"]:
            if p.grad is not None:
                inputs[p] = p.grad + wd * p if not decoupled and wd else p.grad
    factor = None if max_norm is None else clip_factor(list(inputs.values()), max_norm)
    for group in opt.param_groups:
        beta1, beta2 = group["betas"]
        lr, eps, wd = group["lr"], group["eps"], group["weight_decay"]
        for p in group["params"]:
            if p.grad is None:
                continue
            g = inputs[p] if factor is None else inputs[p] * factor
            state = opt.state[p]
            if not state:
                state["step"] = torch.zeros((), dtype=torch.float32)
                state["exp_avg"] = torch.zeros_like(p, dtype=_storage(m_dtype, p))
                state["exp_avg_sq"] = torch.zeros_like(p, dtype=_storage(v_dtype, p))
            state["step"] += 1
            t = float(state["step"])
            m = state["exp_avg"].to(p.dtype) * beta1 + (1 - beta1) * g
            v = state["exp_avg_sq"].to(p.dtype) * beta2 + (1 - beta2) * g * g
            state["exp_avg"].copy_(m)
            state["exp_avg_sq"].copy_(v)
            m, v = state["exp_avg"].to(p.dtype), state["exp_avg_sq"].to(p.dtype)
            if bias_correction:
                m = m / (1 - beta1 ** t)
                v = v / (1 - beta2 ** t)
            update = m / (v.sqrt() + eps)
            if decoupled:
                update = update + wd * p
            if not lamb:
                p.sub_(update, alpha=lr)
                continue
            w_norm = p.norm()
            max_norm = group.get("max_weight_norm", _FP16_MAX)
            if max_norm is not None:
                w_norm = w_norm.clamp(max=max_norm)
            u_norm = update.norm()
            trust = 1.0 if w_norm == 0 or u_norm == 0 else float(w_norm / u_norm)
            p.sub_(update, alpha=lr * trust)


def _tf_rmsprop_update(opt):
    for group in opt.param_groups:
        for param in group["params"]:
            if param.grad is not None:
                _tf_rmsprop_param(param, opt.state[param], group)


def _tf_rmsprop_param(param, state, group):
    grad = param.grad
    if group["weight_decay"]:
        grad = grad.add(param, alpha=group["weight_decay"])
    if not state:
        state["step"] = torch.zeros(())
        state["square_avg"] = torch.ones_like(param)
        state["momentum_buffer"] = torch.zeros_like(param)
        if group["centered"]:
            state["grad_avg"] = torch.zeros_like(param)
    state["step"] += 1
    rho = group["alpha"]
    square_avg = state["square_avg"]
    square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
    denominator = square_avg
    if group["centered"]:
        grad_avg = state["grad_avg"]
        grad_avg.mul_(rho).add_(grad, alpha=1 - rho)
        denominator = square_avg - grad_avg * grad_avg
    scaled = grad * group["lr"] / torch.sqrt(denominator + group["eps"])
    buffer = state["momentum_buffer"]
    buffer.mul_(group["momentum"]).add_(scaled)
    param.sub_(buffer)


_GLOBAL_HYPER = ("loss_scaling", "max_grad_norm", "velocity_scaling", "use_tf_variant",
                 "bias_correction", "max_weight_norm")


def hyperparameters(optimizer) -> dict:
    """A copy of the hyper-parameters the device holds for ``optimizer``: each parameter
    group's values (not its parameters) and the global attributes (``loss_scaling``,
    ``max_grad_norm``, ...). PopTorch uploads them when the model compiles and on
    ``setOptimizer``; host-side edits in between do not reach the device. Pass it to
    ``apply_update`` to update with those values."""
    return {"groups": [{k: copy.deepcopy(v) for k, v in group.items() if k != "params"}
                       for group in optimizer.param_groups],
            "attributes": {k: copy.deepcopy(getattr(optimizer, k)) for k in _GLOBAL_HYPER
                           if hasattr(optimizer, k)}}


_MISSING = object()
_SCALARS = (int, bool, str, type(None))


def _same(a, b) -> bool:
    """Whether writing ``b`` over ``a`` would change nothing the update reads (scalars and
    tuples of them, equal in type and value, zeros in sign; anything else counts as new)."""
    t = type(a)
    if t is not type(b):
        return False
    if t is float:
        return a == b and (a != 0.0 or math.copysign(1.0, a) == math.copysign(1.0, b))
    if t in _SCALARS:
        return a == b
    if t is tuple:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return False


def _swap_in(optimizer, snapshot) -> list:
    """Put the snapshot's values into the host's groups and attributes where they differ;
    the ``(target, key, old value)`` to put back (an update per step: copying every group
    both ways cost more than the rest of the wrapper's per-step work)."""
    undo = []
    for group, values in zip(optimizer.param_groups, snapshot["groups"]):
        for key, value in values.items():
            old = group.get(key, _MISSING)
            if old is not value and not _same(old, value):
                undo.append((group, key, old))
                group[key] = value
    for name, value in snapshot["attributes"].items():
        old = getattr(optimizer, name, _MISSING)
        if old is not value and not _same(old, value):
            undo.append((optimizer, name, old))
            setattr(optimizer, name, value)
    return undo


def differs(optimizer, snapshot) -> bool:
    """Whether ``apply_update(optimizer, snapshot)`` would update with any value other than
    the host optimizer's own (checked once per call: the updates of a call then skip the
    swap)."""
    for group, values in zip(optimizer.param_groups, snapshot["groups"]):
        for key, value in values.items():
            old = group.get(key, _MISSING)
            if old is not value and not _same(old, value):
                return True
    for name, value in snapshot["attributes"].items():
        old = getattr(optimizer, name, _MISSING)
        if old is not value and not _same(old, value):
            return True
    return False


def _put_back(undo) -> None:
    # as before the update; a value the host did not have stays (as it always did)
    for target, key, old in reversed(undo):
        if old is _MISSING:
            continue
        if isinstance(target, dict):
            target[key] = old
        else:
            setattr(target, key, old)


def apply_update(optimizer, hyperparameters: dict | None = None,
                 grad_divisor: float | None = None, clip: bool = False,
                 clip_scale: float | None = None) -> None:
    """Apply one weight update as the IPU would for ``optimizer`` (its gradients already
    reduced and unscaled), with its current hyper-parameters or those of a
    ``hyperparameters(optimizer)`` snapshot (what the device holds). Like PopTorch, this
    never runs a subclass's own ``step``: the update is the one of the supported type the
    optimizer is (module doc). ``grad_divisor`` (only where ``folds_gradient_scale``): the
    gradients are unnormalised sums to divide by it (see ``_sgd_update``). ``clip``: apply
    ``max_grad_norm`` where PopART's ``ClipWeightGradientsByNorm`` does (module doc);
    ``clip_scale``: what unfolded gradients were divided by (``ls * af * rf``), which SGD0's
    clip input is measured before.

    Raises:
      AssertionError: an unsupported optimizer type (see ``check_supported``)."""
    kind = check_supported(optimizer, warn=False)
    undo = _swap_in(optimizer, hyperparameters) if hyperparameters else ()
    try:
        _update(optimizer, kind, grad_divisor, clip, clip_scale)
    finally:
        _put_back(undo)


def _update(optimizer, kind: str, grad_divisor=None, clip: bool = False,
            clip_scale=None) -> None:
    max_norm = _max_grad_norm(optimizer) if clip else None
    with torch.no_grad():
        if kind in ("SGD1", "SGD2"):
            _sgd_update(optimizer, grad_divisor, max_norm, clip_scale)
        elif kind in ("LAMB", "LAMB_NO_BIAS"):
            _adam_family_update(optimizer, max_norm)
        elif kind.startswith("ADAM"):
            if isinstance(optimizer, Optimizer):
                _adam_family_update(optimizer, max_norm)
            else:
                base = torch.optim.AdamW if kind != "ADAM" else torch.optim.Adam
                base.step(optimizer)
        elif getattr(optimizer, "use_tf_variant", False):
            _tf_rmsprop_update(optimizer)
        else:
            torch.optim.RMSprop.step(optimizer)


# ---- supported types and attribute checks --------------------------------------------
def check_supported(optimizer, warn: bool = True) -> str:
    """PopTorch's name for the optimizer's type (``"SGD1"`` combined SGD, ``"SGD2"``,
    ``"ADAM"``, ``"ADAMW"``, ``"ADAMW_NO_BIAS"``, ``"RMSPROP"``, ``"RMSPROP_CENTERED"``,
    ``"LAMB"``, ``"LAMB_NO_BIAS"``). Accepted: ``torch.optim.{SGD, Adam, AdamW, RMSprop}``
    and ``poptorch.optim.{SGD, Adam, AdamW, RMSprop, LAMB}`` and their subclasses; a subclass
    gets PopTorch's warning (with ``warn``) that its Python code is not run.

    Raises:
      AssertionError: any other optimizer (PopTorch's "Unsupported optimizer type. Types
        supported ..." message), or RMSprop groups disagreeing on ``centered``.
      ValueError: ``amsgrad=True``.
      poptorch.Error: ``max_grad_norm`` is NaN."""
    bases = type(optimizer).__bases__
    if warn and torch.optim.Optimizer not in bases and Optimizer not in bases:
        logger.warning("Optimizer `%s` subclassed from classes in poptorch.optim or "
                       "torch.optim are unlikely to behave as intended. Poptorch does not run "
                       "Python optimizer code directly; but instead uses IPU native optimisers "
                       "implemented in PopART.", type(optimizer).__name__)
    kind = _kind(optimizer)
    if kind is None:
        raise AssertionError(_UNSUPPORTED)
    if kind.startswith("ADAM"):
        for group in optimizer.param_groups:
            if group.get("amsgrad", False):
                raise ValueError("Only non-amsgrad Adam/AdamW optimizers are supported.")
    max_grad_norm = getattr(optimizer, "max_grad_norm", float("inf"))
    if max_grad_norm is not None and math.isnan(max_grad_norm):
        raise Error("Maximum norm of gradients cannot be NaN")
    return kind


def _kind(optimizer):
    if isinstance(optimizer, torch.optim.SGD):
        return "SGD1" if getattr(optimizer, "use_combined_accum", False) else "SGD2"
    if isinstance(optimizer, torch.optim.AdamW):  # before Adam: AdamW subclasses it in torch 2
        if isinstance(optimizer, AdamW) and not getattr(optimizer, "bias_correction", True):
            return "ADAMW_NO_BIAS"
        return "ADAMW"
    if isinstance(optimizer, torch.optim.Adam):
        return "ADAM"
    if isinstance(optimizer, torch.optim.RMSprop):
        centered = optimizer.param_groups[0]["centered"]
        for i, group in enumerate(optimizer.param_groups):
            if group["centered"] != centered:
                raise AssertionError("All parameter groups must have the same value for the "
                                     f"'centered' attribute (Group 0: {centered} / Group {i}: "
                                     f"{group['centered']})")
        return "RMSPROP_CENTERED" if centered else "RMSPROP"
    if isinstance(optimizer, LAMB):
        return "LAMB" if getattr(optimizer, "bias_correction", True) else "LAMB_NO_BIAS"
    return None


class AttributeTracker:
    """PopTorch's check for optimizer attributes it does not know: the first optimizer a
    model sees records the attribute names present (on the optimizer, in ``defaults`` and
    in each parameter group); an optimizer given later with names not seen then gets a
    warning, printed once per message, e.g. "Ignoring unexpected optimizer attribute in SGD2
    optimizer: ['lr']" (debug level instead with
    ``Options.relaxOptimizerAttributesChecks()``)."""

    def __init__(self, relax: bool = False) -> None:
        self._log = logger.debug if relax else logger.warning
        self._group, self._optimizer = [], []
        self._recording = True
        self._printed: set[str] = set()

    def check(self, optimizer) -> None:
        """Record (first call) or check (later calls) ``optimizer``'s attribute names."""
        kind = check_supported(optimizer, warn=False)
        self._check(self._group, list(optimizer.defaults), "default group variable", kind)
        names = [k for k in vars(optimizer)
                 if k not in ("defaults", "state", "param_groups", "variable_attrs")]
        self._check(self._optimizer, names, "optimizer attribute", kind)
        for i, group in enumerate(optimizer.param_groups):
            self._check(self._group, [k for k in group if k != "params"],
                        f"group {i} attribute", kind)
        self._recording = False

    def _check(self, expected, provided, what, kind):
        extra = [name for name in provided if name not in expected]
        if self._recording:
            expected += extra
        elif extra:
            message = f"Ignoring unexpected {what} in {kind} optimizer: {extra}"
            if message not in self._printed:
                self._printed.add(message)
                self._log(message)


def select_mean_reduction_strategy(optimizer, options, is_compiled: bool) -> None:
    """PopTorch's rule tying ``accum_type`` to the mean reduction: an optimizer with
    ``accum_type=torch.float16`` (other than the combined SGD variant) needs
    ``MeanReductionStrategy.Running``. Before compilation the training model's options are
    switched to it (even when frozen); afterwards a model compiled with another strategy
    cannot take such an optimizer.

    Raises:
      ValueError: compiled, the strategy is not Running and the optimizer needs it
        (PopTorch's message)."""
    from .enums import MeanReductionStrategy

    if getattr(optimizer, "accum_type", torch.float32) != torch.float16:
        return
    if getattr(optimizer, "use_combined_accum", False):
        return
    training = options.Training
    current = training.meanAccumulationAndReplicationReductionStrategy
    if not is_compiled:
        frozen = bool(getattr(options, "_is_frozen", False))
        options._unfreeze()
        training.setMeanAccumulationAndReplicationReductionStrategy(
            MeanReductionStrategy.Running)
        if frozen:
            options._freeze()
    elif current != MeanReductionStrategy.Running:
        raise ValueError("Invalid optimizer: the new optimizer would require changing "
                         "options.Training.meanAccumulationAndReplicationReductionStrategy to "
                         "poptorch.MeanReductionStrategy.Running but the executable is "
                         "already compiled.")


# PopART's names for each hyper-parameter, in the order its validReplacement checks them,
# and the attribute each comes from.
_CHECKED = {
    "SGD": [("learning rates", "lr"), ("weight decays", "weight_decay"),
            ("momentums", "momentum"), ("velocity scalings", "velocity_scaling"),
            ("nesterov", "nesterov")],
    "Adam": [("learning rates", "lr"), ("weight decays", "weight_decay"),
             ("beta1s", "betas"), ("beta2s", "betas"), ("eps", "eps"),
             ("mwn", "max_weight_norm")],
    "Adaptive": [("learning rates", "lr"), ("weight decays", "weight_decay"),
                 ("alphas", "alpha"), ("momentums", "momentum"), ("eps", "eps")],
}
# torch.optim optimizers: an attribute is constant when it has torch's default value.
_TORCH_CONSTANT = {"weight_decay": lambda v, kind: v == (1e-2 if kind.startswith("ADAMW")
                                                         else 0.0),
                   "momentum": lambda v, kind: v == 0.0,
                   "velocity_scaling": lambda v, kind: v == 1.0,
                   "dampening": lambda v, kind: v == 0.0,
                   "eps": lambda v, kind: v == 1e-8,
                   "max_weight_norm": lambda v, kind: v == _FP16_MAX,
                   "lr": lambda v, kind: False}


def _popart_type(kind):
    if kind.startswith("SGD"):
        return "SGD", ("Combined" if kind == "SGD1" else "Separate"), None
    if kind.startswith("RMSPROP"):
        mode = "CenteredRMSProp" if kind == "RMSPROP_CENTERED" else "RMSProp"
        return "Adaptive", mode, "L2Regularization"
    mode = {"LAMB": "Lamb", "LAMB_NO_BIAS": "LambNoBias"}.get(kind, "Adam")
    return "Adam", mode, "L2Regularization" if kind == "ADAM" else "Decay"


def _value_pair(optimizer, kind, label, attr, values):
    """``(value, is_constant)`` of one hyper-parameter read from ``values`` (a group or
    ``defaults``), as PopTorch's attribute readers produce it."""
    if attr == "velocity_scaling" and kind == "SGD2":  # PopTorch glues it to loss scaling
        return _loss_scaling_pair(optimizer, kind)
    if attr == "max_weight_norm" and kind not in ("LAMB", "LAMB_NO_BIAS"):
        return _FP16_MAX, True  # PopART's default, never set by PopTorch for Adam
    if attr == "betas":
        value = values["betas"][0 if label == "beta1s" else 1]
    else:
        value = values.get(attr, 1.0 if attr == "velocity_scaling" else None)
    attrs = getattr(optimizer, "variable_attrs", None)
    if attrs is not None:
        return float(value), attrs.isConstant(attr)
    if attr in _TORCH_CONSTANT:
        return float(value), _TORCH_CONSTANT[attr](value, kind)
    return float(value), True  # betas, alpha, nesterov: always constant for torch optimizers


def _loss_scaling_pair(optimizer, kind):
    value = float(getattr(optimizer, "loss_scaling", 1.0))
    attrs = getattr(optimizer, "variable_attrs", None)
    return value, (attrs.isConstant("loss_scaling") if attrs is not None else value == 1.0)


def describe(optimizer, parameter_names: dict | None = None) -> dict:
    """A snapshot of what PopTorch compiles for ``optimizer``: its type, PopART optimizer
    and mode, ``max_grad_norm``, accumulation types, and each hyper-parameter as
    ``(value, is_constant)`` for the defaults and for every parameter (named from
    ``parameter_names``, ``{parameter: name}``, else from the optimizer's bound names or
    ``param<k>``). Compare two with ``check_constant_attributes``.

    Constant: for ``poptorch.optim`` optimizers, what ``variable_attrs`` says (attributes not
    passed to the constructor); for ``torch.optim`` ones, attributes at torch's default
    value (``lr`` is always variable; ``betas``, ``alpha`` and ``nesterov`` always constant);
    ``loss_scaling`` of a torch optimizer is constant when it is 1.

    Raises: as ``check_supported``."""
    kind = check_supported(optimizer, warn=False)
    popart_type, mode, decay = _popart_type(kind)
    names = _names(optimizer, parameter_names)
    snapshot: dict[str, Any] = {
        "type": kind, "popart_type": popart_type, "mode": mode, "decay_mode": decay,
        "max_grad_norm": float(getattr(optimizer, "max_grad_norm", float("inf"))),
        "accum_types": {k: getattr(optimizer, k, torch.float32)
                        for k in ("accum_type", "velocity_accum_type",
                                  "first_order_momentum_accum_type",
                                  "second_order_momentum_accum_type")},
        "loss scaling": _loss_scaling_pair(optimizer, kind),
        "values": {}}
    for label, attr in _CHECKED[popart_type]:
        default = _value_pair(optimizer, kind, label, attr, optimizer.defaults)
        specific = {}
        for group in optimizer.param_groups:
            pair = _value_pair(optimizer, kind, label, attr, group)
            for p in group["params"]:
                specific[names[p]] = pair
        snapshot["values"][label] = (default, dict(sorted(specific.items())))
    return snapshot


def _names(optimizer, parameter_names):
    bound = parameter_names or _BOUND_NAMES.get(optimizer) or {}
    names, k = {}, 0
    for group in optimizer.param_groups:
        for p in group["params"]:
            names[p] = bound.get(p, f"param{k}")
            k += 1
    return names


def _replace_value(old, new):
    """PopART's OptimizerValue::validReplacement."""
    if old[1] != new[1]:
        return "Can not replace a constant value with a non constant value."
    if old[1] and old[0] != new[0]:
        return "Values are constant but do not match."
    return None


def check_constant_attributes(old, new) -> None:
    """Check that ``new`` can replace ``old`` in a compiled training model (what
    ``setOptimizer`` does): same PopART optimizer and mode, same gradient clipping, and
    every constant hyper-parameter unchanged and still constant. ``old``/``new`` are
    snapshots from ``describe`` (take ``old`` when the model compiles) or optimizers.

    Raises:
      poptorch.Error: PopART's message, e.g. "Problem with momentums. OptimizerValue for
        tensor fc.weight is not a valid replacement.Values are constant but do not
        match."."""
    old = old if isinstance(old, dict) else describe(old)
    new = new if isinstance(new, dict) else describe(new)
    clip_old, clip_new = (math.isfinite(s["max_grad_norm"]) for s in (old, new))
    if clip_old != clip_new:
        raise Error("Clip norm settings do not match.")
    if clip_old and old["max_grad_norm"] != new["max_grad_norm"]:
        raise Error("Clip norm settings at index 0 do not match.")
    if old["popart_type"] != new["popart_type"]:
        raise Error(f"Can not replace optimizer of type {old['popart_type']} with new "
                    f"optimizer of type {new['popart_type']}")
    if old["popart_type"] != "SGD":
        if old["mode"] != new["mode"]:
            raise Error(f"{old['popart_type']} modes do not match")
        if old["decay_mode"] != new["decay_mode"]:
            raise Error("Weight decay modes do not match")
    problem = _replace_value(old["loss scaling"], new["loss scaling"])
    if problem:
        raise Error(f"Problem with loss scaling. {problem}")
    for label, (old_default, old_specific) in old["values"].items():
        new_default, new_specific = new["values"][label]
        problem = _replace_value(old_default, new_default)
        if problem:
            raise Error(f"Problem with {label}. Default value is not a valid replacement. "
                        f"{problem}")
        if len(old_specific) != len(new_specific):
            raise Error(f"Problem with {label}. Replacement OptimizerValueMap has a "
                        "different number of specific tensors.")
        for name, pair in old_specific.items():
            if name not in new_specific:
                raise Error(f"Problem with {label}. Could not find tensor {name} in "
                            "replacement OptimizerValueMap.")
            problem = _replace_value(pair, new_specific[name])
            if problem:
                raise Error(f"Problem with {label}. OptimizerValue for tensor {name} is not "
                            f"a valid replacement.{problem}")
    if old["popart_type"] == "SGD":
        _check_sgd_layout(old, new)


def _check_sgd_layout(old, new):
    def has_velocity(snapshot):
        value, constant = snapshot["values"]["momentums"][0]
        return not constant or value != 0.0

    if has_velocity(old) != has_velocity(new):
        raise Error("this does not require a velocity tensor, but other does.")
    if not has_velocity(old):
        return
    if old["mode"] != new["mode"]:
        raise Error(f"this has SGDAccumulatorAndMomentum {old['mode']}, but other has "
                    f"{new['mode']}")
    if old["mode"] == "Separate":
        for attr, what in (("accum_type", "sgdAccumType"),
                           ("velocity_accum_type", "sgd2Accl1Type")):
            a, b = old["accum_types"][attr], new["accum_types"][attr]
            if a != b:
                raise Error("this has SGDAccumulatorAndMomentum::Separate and "
                            f"{what} {_popart_dtype(a)}, but other has {_popart_dtype(b)}")


def _popart_dtype(dtype):
    return "FLOAT16" if dtype == torch.float16 else "FLOAT"


# ---- IPU optimizer state ---------------------------------------------------------------
# torch state key -> PopART's state tensor prefix.
_STATE_PREFIX = {"exp_avg": "Accl1___", "exp_avg_sq": "Accl2___", "step": "Step___",
                 "square_avg": "Accl1___", "grad_avg": "Accl2___",
                 "momentum_buffer": "Accl3___", "velocity": "Accl1___",
                 "combined_velocity": "Accl___"}


def bind_parameter_names(optimizer, named_parameters) -> None:
    """Give a ``poptorch.optim`` optimizer its model's parameter names (a training model
    does this when it compiles): from then on ``state_dict()`` carries ``ipu_state`` and
    ``ipu_param`` named as on the IPU (``Accl1___fc.weight``,
    ``learningRate___specific___fc.weight``, ``lossScaling_FLOAT``, ...)."""
    _BOUND_NAMES[optimizer] = {p: name for name, p in named_parameters}


def _ipu_state(opt, names):
    from .loss_scaling import FACTORS

    out = {}
    als = FACTORS.get(opt)
    if als is not None:  # PopART's automatic loss scaling variable
        half = als.dtype is not None and np.dtype(als.dtype) == np.float16
        out["lossScaleUpdateFactor"] = torch.tensor(
            als.factor, dtype=torch.float16 if half else torch.float32)
    for group in opt.param_groups:
        for p in group["params"]:
            for key, value in opt.state.get(p, {}).items():
                if key in _STATE_PREFIX and isinstance(value, torch.Tensor):
                    out[_STATE_PREFIX[key] + names.get(p, "")] = value.detach().clone()
    return out


def _ipu_param(opt, names):
    kind = check_supported(opt, warn=False)
    ls = float(getattr(opt, "loss_scaling", 1.0))
    out = {"lossScaling_FLOAT": torch.tensor(ls)}
    for group in opt.param_groups:
        lr, wd = float(group["lr"]), float(group["weight_decay"])
        for p in group["params"]:
            name = names.get(p, "")
            if kind.startswith("SGD"):
                dm = float(group["dampening"])
                out[f"scaledLearningRate0___specific___{name}"] = torch.tensor(lr * (1 - dm) / ls)
                out[f"weightDecayScaleFactor0___specific___{name}"] = torch.tensor(
                    1 - lr * (1 - dm) * wd)
            else:
                out[f"learningRate___specific___{name}"] = torch.tensor(lr)
                out[f"weightDecay___specific___{name}"] = torch.tensor(wd)
    return out


def _load_ipu_state(opt, names, ipu_state):
    by_name = {name: p for p, name in names.items()}
    for key, value in ipu_state.items():
        prefix, _, name = key.partition("___")
        p = by_name.get(name)
        if p is None:
            continue
        for state_key, state_prefix in _STATE_PREFIX.items():
            if state_prefix == prefix + "___" and state_key in opt.state.get(p, {}):
                opt.state[p][state_key].copy_(value)
