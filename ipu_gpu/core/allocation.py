"""Out of memory as TensorFlow reports it: an allocator's MemoryError (numpy's "Unable to
allocate", cupy's OutOfMemoryError, Numba's) or numpy's "array is too big" becomes
``ResourceExhaustedError`` ("<op>: OOM when allocating tensor with shape[..] and type float on
CPU"), chained from the original. ``Op.__call__`` maps failures of ``forward``;
``AllocationGuard`` does it for code that allocates without an Op; ops that know their output
size first call ``check_allocation``, which refuses a host array larger than RAM + swap."""

from __future__ import annotations

import os

import numpy as np

from ..errors import ResourceExhaustedError

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
