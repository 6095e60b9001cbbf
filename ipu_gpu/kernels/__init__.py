"""Pure compute kernels: ``<family>_cpu`` (Numba/numpy) and ``<family>_gpu`` (CuPy) twins with
the same function names and signatures. Arrays in, preallocated arrays out. Nothing here is
imported, and so nothing is compiled, until an op needs it."""

import os as _os
import sys as _sys


def _after_fork_in_child():
    # A parent that started Numba's threads through its own code, before any kernel imported
    # _threads (whose hook does the same): its forked child still gets the serial twins.
    # Numba is imported here only where it is loaded already.
    parallel = _sys.modules.get("numba.np.ufunc.parallel")
    if parallel is not None and getattr(parallel, "_is_initialized", False):
        from . import _threads

        _threads.serialize_forked_child()


_os.register_at_fork(after_in_child=_after_fork_in_child)
