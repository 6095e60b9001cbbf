"""Numba threading set-up shared by the CPU kernels (imported lazily, by kernels only).

Forked children. Numba's 'omp' layer on GNU OpenMP terminates a forked child that launches a
parallel region once the parent has started the layer ("fork() called from a process already
using GNU OpenMP, this is unsafe": the parent's OpenMP threads do not exist in the child, so
the region would hang): a tf.data or DataLoader worker forked after the parent ran a kernel.
In such a child every ``parallel=True`` kernel of this package is replaced, in its module, by
a serial twin: the same Python function compiled without ``parallel`` (its ``prange`` loops run
in order on the calling thread, so kernels whose parallel loops own their outputs give the
same bits), compiled on its first call in the child (Numba's disk cache then serves later
children). Kernel modules imported in the child get their twins as they load. The package
(``kernels/__init__``) registers the same hook at ``import ipu_gpu``, for a parent that started
Numba's threads with its own code before any kernel imported this module. The parent pays
nothing per call: the kernels it calls are Numba's own dispatchers, untouched.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
import types

import numba
from numba.core.registry import CPUDispatcher

from . import _cache_deps

_cache_deps.install()  # before any kernel importing this module is decorated

# Replicas run kernels from several Python threads; Numba's default fallback layer
# ('workqueue') is not thread-safe, so ask for a thread-safe one (omp or tbb) unless the
# user chose a layer explicitly.
if "NUMBA_THREADING_LAYER" not in os.environ:
    numba.config.THREADING_LAYER = "threadsafe"

_PACKAGE = __name__.rpartition(".")[0]
TWIN_SUFFIX = "_serial_twin"
_twins: dict = {}  # id(parallel dispatcher) -> (that dispatcher, its serial twin)
_serial_in_child = False


def num_threads() -> int:
    """Numba's thread count, read outside jitted code (inside, it would defeat caching)."""
    return numba.get_num_threads()


def serial_only() -> bool:
    """Whether this process is a forked child in which parallel kernels run as serial twins."""
    return _serial_in_child


def is_parallel_kernel(value) -> bool:
    """Whether ``value`` is a Numba CPU dispatcher compiled with ``parallel=True``."""
    return isinstance(value, CPUDispatcher) and bool(value.targetoptions.get("parallel"))


def serial_twin(dispatcher):
    """``dispatcher``'s Python function jitted with its options less ``parallel`` (cached on
    disk where it is), under its own qualified name: Numba keys a cached kernel by name and
    signature, not by its options, so the twin must not share the parallel kernel's entry."""
    known = _twins.get(id(dispatcher))
    if known is not None and known[0] is dispatcher:
        return known[1]
    f = dispatcher.py_func
    g = types.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__, f.__closure__)
    g.__qualname__ = f.__qualname__ + TWIN_SUFFIX
    g.__module__, g.__doc__, g.__kwdefaults__ = f.__module__, f.__doc__, f.__kwdefaults__
    options = {k: v for k, v in dispatcher.targetoptions.items() if k != "parallel"}
    twin = numba.jit(**options)(g)
    if type(dispatcher._cache).__name__ != "NullCache":
        twin.enable_caching()
    _twins[id(dispatcher)] = (dispatcher, twin)
    return twin


def _make_serial(module) -> None:
    names = vars(module)
    for name, value in list(names.items()):
        if is_parallel_kernel(value):
            names[name] = serial_twin(value)


def _gnu_openmp_started() -> bool:
    """Whether Numba's threading layer was started in this process on GNU OpenMP."""
    parallel = sys.modules.get("numba.np.ufunc.parallel")
    if parallel is None or not getattr(parallel, "_is_initialized", False):
        return False
    try:
        if numba.threading_layer() != "omp":
            return False
    except ValueError:
        return False
    omppool = sys.modules.get("numba.np.ufunc.omppool")
    return getattr(omppool, "openmp_vendor", "GNU") == "GNU"


class _SerialOnImport:
    """A meta path finder (installed in such a child only) that gives the kernel modules
    imported there their serial twins as they load."""

    @staticmethod
    def find_spec(fullname, path, target=None):
        if not fullname.startswith(_PACKAGE + ".") or path is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module):
            run(module)
            _make_serial(module)

        loader.exec_module = exec_module  # this spec's own loader instance
        return spec


def serialize_forked_child() -> None:
    """In a forked child of a process whose GNU OpenMP layer started (else nothing): every
    parallel kernel of the package, loaded now or later, becomes its serial twin. Runs at
    fork (this module's hook, and the package's for children whose parent started Numba's
    threads before importing this module); a second call does nothing."""
    global _serial_in_child
    if _serial_in_child or not _gnu_openmp_started():
        return
    _serial_in_child = True
    for name, module in list(sys.modules.items()):
        if name.startswith(_PACKAGE + ".") and module is not None:
            _make_serial(module)
    sys.meta_path.insert(0, _SerialOnImport)


os.register_at_fork(after_in_child=serialize_forked_child)
