"""``tensorflow.python.ipu.scopes``: scoping contexts that place operations on an IPU, a shard
or the host, and set per-operation attributes.

The scopes record their state per thread in ``ipu_gpu.emulation.placement``; the layers that
run operations read it from there. How they map Graphcore's graph attributes:

* ``ipu_scope(device)`` checks ``device`` against the configured system when it is entered
  (the SDK fails later, when the graph runs) and opens a JIT scope, which makes it a
  compilation (XLA) context;
* ``ipu_shard(index)`` records the shard index (an int, or a list of ints as the SDK
  accepts); inside a program (``ipu_compiler.compile``, ``IPUStrategy.run``) it makes a
  replica take the IPUs of the highest index used (+ 1, rounded up to a power of two, as the
  SDK), so the device runs IPUs / shards replicas (``program_shards``; a count that does not
  divide the device's IPUs is the SDK's ``InternalError``), and in a running replica the
  tensors made in the scope are charged to the memory of the shard's IPU (its first index's);
  sharding changes no number;
* ``outside_compilation_scope(name)`` is allowed only inside a compilation context (the
  SDK's ValueError otherwise), cannot nest, and makes the enclosed operations run on the
  host; the name is made unique per thread (``outside``, ``outside_1``, ...);
* ``frontend_attribute``, ``stochastic_rounding`` and ``partials_type`` set frontend
  attributes with Graphcore's names and values (``STOCHASTIC_ROUNDING`` = ``FORCE_ON`` /
  ``FORCE_OFF``, restored to ``NOT_SET``; ``PARTIALS_TYPE`` = ``F16`` / ``F32``, restored to
  ``PRIMITIVE_TYPE_INVALID``); as in the SDK, ``restore_to`` leaves the attribute set to
  that value in the enclosing scope when it was undefined there.
"""

from __future__ import annotations

import sys

import contextlib

import numpy as np

from ..emulation import engine as _engine
from ..emulation import placement as _placement
from ..emulation import system as _system
from . import program_shards as _program_shards

__all__ = ["frontend_attribute", "ipu_jit_scope", "ipu_scope", "ipu_shard",
           "outside_compilation_scope", "partials_type", "stochastic_rounding"]


@contextlib.contextmanager
def ipu_jit_scope(ipu_scope):
    """Provides a scope for compilation of operations.

    If you would like to compile several sets of operations together, then this can provide
    that mechanism.

    Args:
      ipu_scope: A name to differentiate between different JIT scopes

    Returns:
      A context
    """
    with _placement.push(jit_scope=f"jit_scope_ipu_{ipu_scope}", xla_context=True):
        yield


@contextlib.contextmanager
def ipu_scope(device):
    """Provides a scope for placing operations onto a particular IPU/IPU cluster.

    Args:
      device: The name of the TensorFlow device, such as '/device:IPU:0'

    Returns:
      A context

    Raises:
      ValueError: if ``device`` is not an IPU device name or the configured system has no
        such device. RuntimeError: if no IPU system is configured.
    """
    index = _system.parse_device(device)
    graph = sys.modules.get("ipu_gpu.graph")
    if graph is None or not graph.core.building():  # a TF1 graph may be built first
        _system.current_system().device(index)  # raises naming what to configure
    with _placement.push(device=f"/device:IPU:{index}", device_index=index):
        with ipu_jit_scope(0):
            yield


@contextlib.contextmanager
def ipu_shard(index):
    """Control sharding for a set of operations.

    Provides a scope which targets operations onto a particular shard (IPU) of a multi-IPU
    sharded device.

    Args:
      index: The index of the IPU on which to place the enclosed operations.

    Returns:
      A context
    """
    ipus = list(index) if hasattr(index, "__iter__") else [index]
    for i in ipus:
        if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)) or i < 0:
            raise ValueError(f"ipu_shard: index must be a non-negative int or a list of them, "
                             f"got {index!r}")
    shard = tuple(int(i) for i in ipus)
    if shard:
        _program_shards.require(_program_shards.ipus_per_replica(max(shard)))
    on_ipu = _engine.on_shard(shard[0]) if shard else contextlib.nullcontext()
    with _placement.push(shard=shard), on_ipu:
        yield


@contextlib.contextmanager
def outside_compilation_scope(name="outside"):
    """Provides a scope for placing operations on the host, outside the current compilation
    scope. The operations will be placed on the default host device. This allows for
    offloading computations from the IPU to the host, which can be useful for operations
    that are not supported or suitable for execution on the IPU.

    Example:

    .. code-block:: python

      def my_net(a):
        with ipu_scope("/device:IPU:0"):
          b = a * a
          with outside_compilation_scope():
            c = b + 2  # Placed on the host.
          d = b + c
          return d

    Args:
      name: A name for the outside compilation scope.

    Returns:
      A context
    """
    if not isinstance(name, str):
        raise TypeError(f"outside_compilation_scope: name must be a str, got {name!r}")
    current = _placement.current()
    if not current.xla_context:
        raise ValueError("outside_compilation_scope is only allowed in XLA context")
    if current.outside_compilation is not None:
        raise ValueError("Illegal nesting of outside_compilation_scope")
    with _placement.push(outside_compilation=_placement.unique_outside_name(name)):
        yield


@contextlib.contextmanager
def frontend_attribute(attribute_name, attribute_value, restore_to=None):
    """Sets the specified scope attribute to the specified value in the graph.

    Args:
      attribute_name: Name of the attribute.
      attribute_value: Attribute's value as a string.
      restore_to: If at the end of the scope the attribute was to be undefined sets it to
        this value instead.

    Returns:
      A context
    """
    for arg, value in (("attribute_name", attribute_name),
                       ("attribute_value", attribute_value)):
        if not isinstance(value, str):
            raise TypeError(f"frontend_attribute: {arg} must be a str, got {value!r}")
    if restore_to is not None and not isinstance(restore_to, str):
        raise TypeError(f"frontend_attribute: restore_to must be a str or None, got "
                        f"{restore_to!r}")
    saved = dict(_placement.current().frontend_attributes)
    attrs = dict(saved)
    attrs[attribute_name] = attribute_value
    with _placement.push(frontend_attributes=attrs):
        yield
    if restore_to is not None and attribute_name not in saved:
        saved[attribute_name] = restore_to
        _placement.set_in_current(frontend_attributes=saved)


@contextlib.contextmanager
def stochastic_rounding(override):
    """Control stochastic rounding for a set of operations.

    EXPERIMENTAL - there are no guarantees that the stochastic rounding provided will be
    used and therefore this should not be used.

    Args:
      override: if True then stochastic rounding will be used, otherwise it will be
        disabled for this set of operations.

    Returns:
      A context
    """
    with frontend_attribute("STOCHASTIC_ROUNDING", "FORCE_ON" if override else "FORCE_OFF",
                            "NOT_SET"):
        yield


@contextlib.contextmanager
def partials_type(override_type):
    """Override the default type used to store intermediate results by convolution and matrix
    multiply operations.

    EXPERIMENTAL - there are no guarantees that the partials type provided will be used and
    therefore this should not be used.

    Args:
      override_type: Numpy type of the partials (float16 or float32)

    Returns:
      A context
    """
    try:
        dtype = np.dtype(override_type)
    except TypeError:
        raise ValueError(f"Only support float16, float32, provided {override_type!r}") \
            from None
    names = {np.dtype(np.float16): "F16", np.dtype(np.float32): "F32"}
    if dtype not in names:
        raise ValueError(f"Only support float16, float32, provided {dtype}")
    with frontend_attribute("PARTIALS_TYPE", names[dtype], "PRIMITIVE_TYPE_INVALID"):
        yield
