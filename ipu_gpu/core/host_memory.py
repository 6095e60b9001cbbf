"""Host memory as a device pool: keep freed arrays' pages in the process instead of handing
them back to the kernel after every op.

An eager training step allocates and frees the same few megabytes of activations and
gradients on every step. glibc serves blocks of 128 KiB and more with fresh ``mmap`` pages (or
trims the top of its heap on every free), so every step pays a page fault and a page clear
per 4 KiB it touches: about 1,000 faults (1-2 ms) in a step of the 784-512-512-10 MLP at
batch 256, a third of its GEMM time. Raising glibc's mmap and trim thresholds (``mallopt``)
makes freed blocks stay in the heap for reuse, as a GPU allocator keeps its pool: the next
step gets warm pages. Blocks above 32 MiB still come straight from the kernel (glibc's
limit), and the memory stays inside the process until it exits.

``IPU_GPU_HOST_ALLOCATOR=system`` leaves glibc's defaults alone. Elsewhere than glibc this
does nothing.
"""

from __future__ import annotations

import os
import sys

# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # glibc's largest (HEAP_MAX_SIZE / 2 on 64-bit)
TRIM_THRESHOLD = 1 << 30

_state = {"pooled": None}


def pool_host_memory() -> bool:
    """Ask glibc to keep freed blocks below 32 MiB for reuse (once per process). Returns
    whether the pool is on."""
    if _state["pooled"] is not None:
        return _state["pooled"]
    pooled = False
    if (os.environ.get("IPU_GPU_HOST_ALLOCATOR", "pool").lower() != "system"
            and sys.platform.startswith("linux")):
        try:
            import ctypes

            mallopt = ctypes.CDLL(None).mallopt
            pooled = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                          and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
        except (OSError, AttributeError):  # not glibc (musl has no mallopt)
            pooled = False
    _state["pooled"] = pooled
    return pooled
