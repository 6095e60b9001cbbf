"""``poptorch.optim``: PopTorch's optimizers are PyTorch's (``SGD``, ``Adam``, ``AdamW``,
``RMSprop``; PopTorch claims the same numbers) with PopTorch's extra attributes accepted and
validated: ``loss_scaling`` (the loss is multiplied by it before the backward pass and the
gradients divided by it before the step), ``max_grad_norm`` (global-norm clipping, as
``torch.nn.utils.clip_grad_norm_``), and the accumulator-type and velocity options, which
change precision on an IPU only (recorded here)."""

from __future__ import annotations

import torch

__all__ = ["Adam", "AdamW", "Optimizer", "RMSprop", "SGD"]

_ACCUM_TYPES = (torch.float16, torch.float32, None)


class Optimizer:
    """The PopTorch part of an optimizer: ``loss_scaling``, ``max_grad_norm`` and the
    accumulator dtypes."""

    def _poptorch_init(self, loss_scaling, max_grad_norm, **accum_types):
        for name, dtype in accum_types.items():
            if dtype not in _ACCUM_TYPES:
                raise AssertionError(f"{name} must be one of torch.float16 or torch.float32")
        self.loss_scaling = 1.0 if loss_scaling is None else float(loss_scaling)
        self.max_grad_norm = max_grad_norm
        self.accum_types = accum_types


def _max_grad_norm(opt):
    norm = getattr(opt, "max_grad_norm", None)
    return None if norm is None or norm == float("inf") else float(norm)


def _no_amsgrad(amsgrad):
    if amsgrad:
        raise ValueError("Only non-amsgrad Adam/AdamW optimizers are supported.")


class SGD(torch.optim.SGD, Optimizer):
    """``torch.optim.SGD`` with PopTorch's attributes (``use_combined_accum``,
    ``velocity_scaling`` for the combined variant)."""

    def __init__(self, params, lr=0.01, momentum=None, dampening=None, weight_decay=None,
                 nesterov=None, maximize=None, foreach=None, differentiable=None,
                 loss_scaling=None, velocity_scaling=None, use_combined_accum=None,
                 max_grad_norm=None, accum_type=None, velocity_accum_type=None):
        super().__init__(params, lr=lr, momentum=momentum or 0.0,
                         dampening=dampening or 0.0, weight_decay=weight_decay or 0.0,
                         nesterov=bool(nesterov))
        self._poptorch_init(loss_scaling, max_grad_norm, accum_type=accum_type,
                            velocity_accum_type=velocity_accum_type)
        self.velocity_scaling = velocity_scaling
        self.use_combined_accum = bool(use_combined_accum)


class Adam(torch.optim.Adam, Optimizer):
    """``torch.optim.Adam`` (L2 weight decay) with PopTorch's attributes.

    Raises:
      ValueError: ``amsgrad=True`` (PopTorch's message)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 amsgrad=False, foreach=None, maximize=None, capturable=None,
                 differentiable=None, fused=None, loss_scaling=None, accum_type=None,
                 first_order_momentum_accum_type=None,
                 second_order_momentum_accum_type=None, max_grad_norm=None):
        _no_amsgrad(amsgrad)
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
        self._poptorch_init(loss_scaling, max_grad_norm, accum_type=accum_type,
                            first_order_momentum_accum_type=first_order_momentum_accum_type,
                            second_order_momentum_accum_type=second_order_momentum_accum_type)


class AdamW(torch.optim.AdamW, Optimizer):
    """``torch.optim.AdamW`` (decoupled weight decay) with PopTorch's attributes;
    ``bias_correction=False`` is accepted and ignored, as PopTorch does.

    Raises:
      ValueError: ``amsgrad=True`` (PopTorch's message)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, foreach=None, maximize=None, capturable=None,
                 differentiable=None, fused=None, loss_scaling=None, bias_correction=True,
                 accum_type=None, first_order_momentum_accum_type=None,
                 second_order_momentum_accum_type=None, max_grad_norm=None):
        _no_amsgrad(amsgrad)
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
        self._poptorch_init(loss_scaling, max_grad_norm, accum_type=accum_type,
                            first_order_momentum_accum_type=first_order_momentum_accum_type,
                            second_order_momentum_accum_type=second_order_momentum_accum_type)
        self.bias_correction = bias_correction


class RMSprop(torch.optim.RMSprop, Optimizer):
    """``torch.optim.RMSprop`` (L2 weight decay) with PopTorch's attributes.

    ``use_tf_variant=True`` gives TensorFlow's RMSProp instead, as PopTorch documents it: the
    mean-square accumulator starts at ones, ``eps`` is added inside the square root, and the
    learning rate is folded into the momentum buffer (``mom = momentum * mom + lr * g /
    sqrt(ms + eps)``; ``w -= mom``), centred as TF centres it."""

    def __init__(self, params, lr=0.01, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0,
                 centered=False, foreach=None, maximize=None, differentiable=None,
                 loss_scaling=None, accum_type=None, first_order_momentum_accum_type=None,
                 second_order_momentum_accum_type=None, use_tf_variant=False):
        super().__init__(params, lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                         momentum=momentum, centered=centered)
        self._poptorch_init(loss_scaling, None, accum_type=accum_type,
                            first_order_momentum_accum_type=first_order_momentum_accum_type,
                            second_order_momentum_accum_type=second_order_momentum_accum_type)
        self.use_tf_variant = bool(use_tf_variant)

    @torch.no_grad()
    def step(self, closure=None):
        """One update: PyTorch's RMSprop, or TensorFlow's with ``use_tf_variant``."""
        if not self.use_tf_variant:
            return super().step(closure)
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for param in group["params"]:
                if param.grad is not None:
                    _tf_rmsprop_update(param, self.state[param], group)
        return loss


def _tf_rmsprop_update(param, state, group):
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
