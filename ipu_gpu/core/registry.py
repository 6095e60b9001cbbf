"""The op registry: one definition per op (check, forward, backward), one dispatch path.

``register`` returns an ``Op``; calling it converts the inputs to arrays,
refuses mixed host/device inputs, runs ``check`` (shapes and dtypes only, so
no device sync), picks the kernel module from the array type, runs
``forward`` and records the call on any GradientTape that watches an input.

An allocation failure inside ``forward`` (an allocator's MemoryError, numpy's "array is too
big") becomes TF's ResourceExhaustedError naming the op ("OOM when allocating tensor with
shape[...] and type float on CPU"); ops that know their output size before allocating call
``check_allocation`` first (see ``host_memory_bytes``).
"""

from __future__ import annotations

import os
import sys

import numpy as np

from ..errors import ResourceExhaustedError
from . import backend, tape
from .convert import to_array
from .tensor import Tensor, Variable, wrap

REGISTRY: dict = {}  # op name -> Op


class Op:
    """A registered op. ``op(*inputs, **static)`` returns Tensors."""

    __slots__ = ("name", "args", "check", "forward", "backward", "family", "twice_differentiable",
                 "scalars_follow", "partial_backward", "_kernel_modules")

    def __init__(self, name, args, check, forward, backward, family, twice_differentiable,
                 scalars_follow, partial_backward=False):
        self.name = name
        self.args = args
        self.check = check
        self.forward = forward
        self.backward = backward
        self.family = family
        self.twice_differentiable = twice_differentiable
        self.scalars_follow = scalars_follow
        self.partial_backward = partial_backward
        self._kernel_modules = {}

    def _arg(self, j: int) -> str:
        if j < len(self.args) - 1 or not self.args[-1].endswith("..."):
            return self.args[j]
        return f"{self.args[-1][:-3]}[{j - len(self.args) + 1}]"

    def kernels(self, xp):
        """The kernel module of this op's family for arrays of ``xp`` (None if it has none)."""
        if self.family is None:
            return None
        k = self._kernel_modules.get(xp)
        if k is None:
            try:
                k = self._kernel_modules[xp] = backend.kernels_for(self.family, xp)
            except ModuleNotFoundError as e:
                side = "cpu" if xp is np else "gpu"
                if e.name != f"ipu_gpu.kernels.{self.family}_{side}":
                    raise
                raise TypeError(f"{self.name}: inputs must be numpy arrays (this op has no "
                                f"{side.upper()} kernels yet; use IPU_GPU_BACKEND=cpu), got "
                                f"{xp.__name__} arrays") from None
        return k

    def __call__(self, *inputs, **static):
        n = len(inputs)
        arrays = [None] * n
        ids = [0] * n  # node 0: a value no tape can watch
        anchor = None
        pending = raw = False
        for j, x in enumerate(inputs):
            tx = type(x)
            if tx is Tensor:
                a = x._value
                ids[j] = x._id
            elif tx is Variable or isinstance(x, Tensor):
                if tape._local.tapes and isinstance(x, Variable):
                    tape.variable_accessed(x)
                a = x._value
                ids[j] = x._id
            elif tx is np.ndarray or backend.is_cupy_array(x):
                a = to_array(x, arg=self._arg(j), op=self.name)
                raw = True
            else:
                pending = True
                continue
            arrays[j] = a
            if anchor is None:
                anchor = a
            elif type(a) is not type(anchor):
                raise TypeError(f"{self.name}: {self._arg(j)} must be on the same device as the "
                                f"other inputs (mixed numpy and cupy arrays)")
        xp = np if anchor is None or type(anchor) is np.ndarray else sys.modules["cupy"]
        if raw and self.scalars_follow:
            anchor = _follow_first_tensor(inputs, arrays, anchor)
        if pending:
            follow = anchor.dtype if (self.scalars_follow and anchor is not None) else None
            target_xp = xp if anchor is not None else None
            for j, x in enumerate(inputs):
                if arrays[j] is None:
                    a = _convert_value(x, follow, self._arg(j), self.name, target_xp)
                    arrays[j] = a
            if anchor is None:
                xp = backend.xp_of(arrays[0]) if n else backend.default_xp()
        self.check(*arrays, **static)
        try:
            outputs, residuals = self.forward(self.kernels(xp), xp, *arrays, **static)
        except (MemoryError, ValueError) as e:
            err = allocation_failure(self.name, e, xp)
            if err is None:
                raise
            raise err from e
        multi = type(outputs) in (tuple, list)
        outs = outputs if multi else (outputs,)
        if xp is np:  # numpy reductions return scalars, not 0-d arrays
            outs = [o if type(o) is np.ndarray else np.asarray(o) for o in outs]
        out_tensors = [wrap(o) for o in outs]
        if self.backward is not None and tape._local.tapes:
            tape.record(self, ids, arrays, [t._id for t in out_tensors], outs, residuals,
                        static, xp)
        if multi:
            return type(outputs)(out_tensors)
        return out_tensors[0]


# ---- out of memory ------------------------------------------------------------------------
_TF_TYPE_NAMES = {"float16": "half", "float32": "float", "float64": "double"}
_ALLOCATOR_MODULES = ("numpy", "cupy", "cupy_backends")
# numpy's ValueErrors for an array whose byte size overflows its index type
_NUMPY_SIZE_ERRORS = ("array is too big", "Maximum allowed size exceeded")
_host_memory = []  # [bytes or None], filled on first use


def _device(xp) -> str:
    return "CPU" if xp is np else "GPU"


def format_bytes(n: int) -> str:
    """``n`` bytes for people: "512 B", "3.64 TiB"."""
    if n < 1024:
        return f"{n} B"
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        n /= 1024
        if n < 1024 or unit == "EiB":
            return f"{n:.2f} {unit}"
    raise AssertionError  # unreachable


def oom_error(op: str, shape, dtype, xp, detail: str = "") -> ResourceExhaustedError:
    """TF's out-of-memory error for a tensor of ``shape`` and ``dtype``: "<op>: OOM when
    allocating tensor with shape[2,3] and type float on CPU" (TF's type names)."""
    name = np.dtype(dtype).name
    return ResourceExhaustedError(
        f"{op}: OOM when allocating tensor with shape[{','.join(str(int(d)) for d in shape)}] "
        f"and type {_TF_TYPE_NAMES.get(name, name)} on {_device(xp)}{detail}")


def allocation_failure(op: str, error: Exception, xp) -> ResourceExhaustedError | None:
    """The ResourceExhaustedError for a MemoryError an allocator raised (numpy's "Unable to
    allocate", cupy's OutOfMemoryError, Numba's or Python's plain MemoryError) or for numpy's
    ValueError for a size beyond its address arithmetic ("array is too big"); None for any
    other error, such as the emulated IPU's GraphMemoryAllocationError (a MemoryError that is
    a documented error of its own and passes through unchanged)."""
    t = type(error)
    if t is ValueError:
        if not str(error).startswith(_NUMPY_SIZE_ERRORS):
            return None
    elif t is not MemoryError and t.__module__.partition(".")[0] not in _ALLOCATOR_MODULES:
        return None
    shape, dtype = getattr(error, "shape", None), getattr(error, "dtype", None)
    if t.__module__.startswith("numpy"):
        xp = np
    if shape is not None and dtype is not None:
        n = int(np.prod(shape, dtype=object)) * np.dtype(dtype).itemsize
        return oom_error(op, shape, dtype, xp, f" ({format_bytes(n)})")
    return ResourceExhaustedError(f"{op}: OOM when allocating a tensor on {_device(xp)}: "
                                  f"{error}")


def host_memory_bytes() -> int | None:
    """Physical memory plus swap (None where it cannot be read): the most Linux lets one
    allocation reserve under its default overcommit heuristic. ``check_allocation`` refuses
    host arrays larger than this up front, so that an impossible output fails promptly the
    same way whatever the overcommit setting (with overcommit always on, numpy would reserve
    8 TB of address space and the process would be killed while writing it)."""
    if not _host_memory:
        try:
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (AttributeError, ValueError, OSError):
            total = None
        if total is not None:
            try:
                with open("/proc/meminfo") as f:
                    for line in f:
                        if line.startswith("SwapTotal:"):
                            total += int(line.split()[1]) * 1024
            except (OSError, ValueError, IndexError):
                pass
        _host_memory.append(total)
    return _host_memory[0]


def check_allocation(op: str, xp, shape, dtype, note: str = "") -> None:
    """Raise ResourceExhaustedError if a host (numpy) array of ``shape`` and ``dtype`` is
    larger than ``host_memory_bytes()``; ``note`` (say, which argument sets the shape) goes
    into the message. GPU allocations are left to cupy, which refuses promptly."""
    if xp is not np:
        return
    limit = host_memory_bytes()
    n = np.dtype(dtype).itemsize
    for d in shape:
        n *= int(d)
    if limit is not None and n > limit:
        note = f"{note}; " if note else ""
        raise oom_error(op, shape, dtype, xp, f" ({note}{format_bytes(n)}; the host has "
                                              f"{format_bytes(limit)})")


class AllocationGuard:
    """``with AllocationGuard(op, xp):`` turns an allocation failure in the block (see
    ``allocation_failure``) into ResourceExhaustedError naming ``op``, as ``Op.__call__`` does
    for ``forward`` (for the creation functions that allocate without an Op)."""

    __slots__ = ("op", "xp")

    def __init__(self, op: str, xp):
        self.op = op
        self.xp = xp

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None and issubclass(exc_type, (MemoryError, ValueError)):
            err = allocation_failure(self.op, exc, self.xp)
            if err is not None:
                raise err from exc
        return False


def _follow_first_tensor(inputs, arrays, anchor):
    """Cast raw numeric arrays to the dtype of the first Tensor input, as TF converts
    non-Tensor operands (``t_f32 * np.ones(3)`` is float32). Returns the new anchor."""
    first = next((x._value for x in inputs if isinstance(x, Tensor)), None)
    if first is None:
        return anchor
    d = first.dtype
    for j, x in enumerate(inputs):
        a = arrays[j]
        if (a is not None and not isinstance(x, Tensor) and a.dtype != d
                and a.dtype.kind in "fiu" and d.kind in "fiu"):
            with np.errstate(all="ignore"):  # out-of-range values wrap, as TF converts
                arrays[j] = a.astype(d)
    return first


def _convert_value(x, follow_dtype, arg, op, xp):
    """Convert a Python value; scalars take ``follow_dtype`` (TF: a Python scalar adopts the
    other operand's dtype) when the value fits it."""
    if follow_dtype is not None and isinstance(x, (bool, int, float, list, tuple, np.generic)):
        natural = to_array(x, arg=arg, op=op, xp=np)
        if natural.dtype.kind == "f" and follow_dtype.kind in "iub":
            raise TypeError(f"{op}: {arg} must be {follow_dtype.name} like the other operand, "
                            f"got a float value")
        if natural.dtype.kind == "b" and follow_dtype.kind != "b":
            raise TypeError(f"{op}: {arg} must be {follow_dtype.name} like the other operand, "
                            f"got a bool value")
        with np.errstate(all="ignore"):  # overflow gives inf, as TF
            # a float converts from the value itself: 0.1 must not pass through float32
            a = (np.asarray(x, dtype=follow_dtype) if natural.dtype.kind == "f"
                 else natural.astype(follow_dtype))
        return a if xp is None or xp is np else xp.asarray(a)
    return to_array(x, arg=arg, op=op, xp=xp)


def register(name: str, *, args: tuple, check, forward, backward=None, family: str | None = None,
             twice_differentiable: bool = False, scalars_follow: bool = False,
             partial_backward: bool = False) -> Op:
    """Define an op once.

    Args:
      name: the public (Graphcore/TF) name, also the registry key.
      args: names of the array inputs, for error messages; a last name ending in "..."
        (``"values..."``) names a variable number of inputs (``values[0]``, ...).
      check: ``check(*arrays, **static)``; raises ValueError/TypeError; reads no data.
      forward: ``forward(k, xp, *arrays, **static) -> (outputs, residuals)``.
      backward: ``backward(k, xp, residuals, *cotangents, **static) -> grads`` (one per
        input, None where there is none); None for ops without a gradient.
      family: kernel family (``ipu_gpu.kernels.<family>_cpu|_gpu``) passed as ``k``.
      twice_differentiable: the backward rule uses only ``xp`` functions and operators
        on residuals that are inputs, outputs or piecewise-constant data, so it can be
        run on Tensors for second derivatives.
      scalars_follow: Python scalars/lists take the dtype of the first array input.
      partial_backward: the tape also passes ``backward`` a keyword ``needed``, one bool per
        input, False where the gradient would be thrown away (the input does not lead to a
        source, or is not floating-point); the rule may return None there and skip its cost
        (matmul: no ``g @ w.T`` for a data batch that is not being differentiated).
    """
    if name in REGISTRY:
        raise ValueError(f"register: op {name!r} is already registered")
    op = Op(name, tuple(args), check, forward, backward, family, twice_differentiable,
            scalars_follow, partial_backward)
    REGISTRY[name] = op
    return op
