"""PopTorch's tensor ops (``poptorch.nop``, ``recomputationCheckpoint``, ``dynamic_slice``,
``serializedMatMul``, ...) and the compiler hints that change no number (``MultiConv``,
``NameScope``, ``set_available_memory``), on PyTorch.

On an IPU the hints steer PopART's scheduler and planner; here they are validated as PopTorch
validates them, recorded, and the tensors pass through unchanged. ``serializedMatMul``
computes its product in ``factor`` pieces, so a float16 product over the reducing dimension
rounds as the IPU's does (float32 partials with ``keep_precision``)."""

from __future__ import annotations

import torch

from .enums import MatMulSerializationMode, MultiConvPlanType
from .errors import Error

__all__ = ["MultiConv", "NameScope", "dynamic_slice", "dynamic_update", "nop",
           "recomputationCheckpoint", "serializedMatMul", "set_available_memory"]


def _require_tensor(value, message):
    if not isinstance(value, torch.Tensor):
        raise Error(message)


def _require_int(value, what):
    if not isinstance(value, int) or isinstance(value, bool):
        raise Error(f"{what} must be an integer.")


def nop(tensor):
    """An identity PopART never optimises away; returns ``tensor``'s values."""
    _require_tensor(tensor, f"nop must take a torch.tensor argument. {type(tensor)} is not "
                            "supported.")
    return tensor.clone()


def recomputationCheckpoint(*tensors):  # noqa: N802 - PopTorch's name
    """Mark ``tensors`` (or one list/tuple of them) as recomputation checkpoints; returns
    them unchanged: one tensor alone, else a tuple (a list for a list argument).

    Raises:
      ValueError: an argument that is not a tensor."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return type(tensors[0])(_checkpointed(tensors[0]))
    out = _checkpointed(tensors)
    return out[0] if len(out) == 1 else tuple(out)


def _checkpointed(tensors):
    if not all(isinstance(t, torch.Tensor) for t in tensors):
        raise ValueError("All inputs must be tensors")
    return [t.clone() for t in tensors]


def set_available_memory(tensor, available_memory_proportion):
    """Hint the planner's temporary-memory proportion for the op that made ``tensor``;
    returns ``tensor``'s values."""
    _require_tensor(tensor, "You may only set available memory for torch.tensor values. "
                            f"{type(tensor)} is not supported.")
    return tensor.clone()


def _start_index(start, op):
    _require_tensor(start, f"Slice start argument to {op} must be a torch.tensor. "
                           f"{type(start)} is not supported.")
    if start.dtype not in (torch.int16, torch.int32, torch.int64) or start.numel() != 1:
        raise Error(f"Slice start argument to {op} must be one integer, got a "
                    f"{start.dtype} tensor of shape {tuple(start.shape)}.")
    return int(start.reshape(()).item())


def _check_slice(tensor, dim, size):
    if not -tensor.dim() <= dim < max(tensor.dim(), 1):
        raise Error(f"Dimension out of range (expected to be in range of "
                    f"[{-tensor.dim()}, {tensor.dim() - 1}], but got {dim})")
    extent = tensor.shape[dim]
    if size == 0:
        raise Error("The start and end of a slice must be different.")
    if size < 0:
        raise Error("Taking a slice of a tensor with the end less than the start is not "
                    "supported.")
    if extent % size:
        raise Error(f"The size of the slice ({size}) must be a factor of the slicing "
                    f"dimension ({extent}).")


def dynamic_slice(tensor, dim, start, size, step):
    """``tensor[start : start + size : step]`` along ``dim``, ``start`` a runtime integer
    tensor; ``size`` and ``step`` constants (``size`` a factor of the dimension)."""
    _require_tensor(tensor, f"dynamic_slice must take a torch.tensor input. {type(tensor)} is "
                            "not supported.")
    _require_int(dim, "Dimension")
    begin = _start_index(start, "dynamic_slice")
    _require_int(size, "Size")
    _require_int(step, "Step")
    _check_slice(tensor, dim, size)
    if step <= 0:
        raise Error(f"Step must be positive, got {step}.")
    index = [slice(None)] * tensor.dim()
    index[dim] = slice(begin, begin + size, step)
    return tensor[tuple(index)].clone()


def dynamic_update(input, src, dim, start, size):  # noqa: A002 - PopTorch's name
    """``input`` with ``src`` written into ``[start, start + size)`` along ``dim``."""
    _require_tensor(input, f"dynamic_update must take a torch.tensor input. {type(input)} is "
                           "not supported.")
    _require_int(dim, "Dimension")
    begin = _start_index(start, "dynamic_update")
    _require_tensor(src, "Src argument to dynamic_update must be a torch.tensor. "
                         f"{type(src)} is not supported.")
    _require_int(size, "Size")
    if input.dim() != src.dim():
        raise Error("input and src tensors must have same dimensionality. "
                    f"({input.dim()}) vs ({src.dim()})")
    if input.dtype != src.dtype:
        raise Error(f"input and src tensor must have same dtype. ({input.dtype} vs "
                    f"{src.dtype})")
    _check_slice(input, dim, size)
    return torch.slice_scatter(input, src, dim=dim, start=begin, end=begin + size)


_SPLIT_AXIS = {MatMulSerializationMode.InputChannels: -2,
               MatMulSerializationMode.ReducingDim: None,
               MatMulSerializationMode.OutputChannels: -1}


def serializedMatMul(lhs, rhs, mode, factor=0, keep_precision=False):  # noqa: N802
    """``torch.matmul(lhs, rhs)`` computed as ``factor`` smaller products split along
    ``mode``'s dimension (m, n or p of an m×n by n×p product); ``keep_precision`` sums
    float16 partials over the reducing dimension in float32.

    Raises:
      AssertionError: a ``mode``, ``factor`` or ``keep_precision`` of the wrong type.
      poptorch.Error: ``factor`` does not divide the split dimension."""
    assert isinstance(keep_precision, bool)
    assert isinstance(factor, int)
    assert isinstance(mode, MatMulSerializationMode)
    if mode is MatMulSerializationMode.Disabled or factor <= 1 or lhs.dim() < 2 \
            or rhs.dim() < 2:
        return torch.matmul(lhs, rhs)
    if mode is MatMulSerializationMode.ReducingDim:
        extent = lhs.shape[-1]
    else:
        extent = (lhs if mode is MatMulSerializationMode.InputChannels else rhs).shape[
            _SPLIT_AXIS[mode]]
    if extent % factor:
        raise Error(f"The serialisation factor ({factor}) must divide the dimension it "
                    f"splits ({extent}).")
    if mode is MatMulSerializationMode.InputChannels:
        return torch.cat([torch.matmul(part, rhs) for part in lhs.chunk(factor, -2)], -2)
    if mode is MatMulSerializationMode.OutputChannels:
        return torch.cat([torch.matmul(lhs, part) for part in rhs.chunk(factor, -1)], -1)
    wide = keep_precision and lhs.dtype == torch.float16
    total = None
    for left, right in zip(lhs.chunk(factor, -1), rhs.chunk(factor, -2)):
        part = torch.matmul(left, right)
        part = part.float() if wide else part
        total = part if total is None else total + part
    return total.to(lhs.dtype)


def _per_conv(name, value, kind):
    if value is None:
        return None
    if isinstance(value, kind):
        return (value,)
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, kind) for v in value):
        return tuple(value)
    raise AssertionError(f"Invalid {name}!")


class MultiConv:
    """A scope whose data-independent convolutions PopLibs plans as one multi-convolution.
    Its settings (per convolution, or one for all) are validated and kept; the convolutions
    compute what they compute outside it."""

    def __init__(self):
        self.settings = {"available_memory_proportions": None, "partials_types": None,
                         "plan_type": None, "per_conv_reserved_tiles": None,
                         "cycle_back_off": None, "enable_conv_dithering": None}

    def availableMemoryProportions(self, value):  # noqa: N802
        """Each convolution's available memory proportion (a float, or one per conv)."""
        self.settings["available_memory_proportions"] = _per_conv(
            "available memory proportion", value, float)
        return self

    def partialsTypes(self, value):  # noqa: N802
        """Each convolution's partials type: ``torch.float`` or ``torch.half``."""
        values = value if isinstance(value, (list, tuple)) else (value,)
        if any(v not in (torch.float32, torch.float16) for v in values):
            raise ValueError("Invalid partials types. Expecting torch.float or torch.half")
        self.settings["partials_types"] = tuple(values)
        return self

    def enableConvDithering(self, value):  # noqa: N802
        """Per-convolution dithering (a bool, or one per conv)."""
        values = value if isinstance(value, (list, tuple)) else (value,)
        if value is not None and not all(isinstance(v, bool) for v in values):
            raise ValueError("value must be bool or list of bools")
        self.settings["enable_conv_dithering"] = None if value is None else tuple(values)
        return self

    def planType(self, value):  # noqa: N802
        """The execution strategy: a ``poptorch.MultiConvPlanType``."""
        if value is not None and not isinstance(value, MultiConvPlanType):
            raise AssertionError("Invalid plan type!")
        self.settings["plan_type"] = value
        return self

    def perConvReservedTiles(self, value):  # noqa: N802
        """Tiles reserved for each convolution."""
        assert isinstance(value, int)
        self.settings["per_conv_reserved_tiles"] = value
        return self

    def cycleBackOff(self, value):  # noqa: N802
        """The cycle back-off proportion, between 0 and 1."""
        assert isinstance(value, float)
        self.settings["cycle_back_off"] = value
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return False


class NameScope:
    """A scope prefixing the names of the operators created in it; names only."""

    def __init__(self, name):
        assert isinstance(name, str), "Parameter to NameScope must be a string"
        self.name = name

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return False
