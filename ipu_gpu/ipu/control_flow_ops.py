"""``tensorflow.python.ipu.control_flow_ops`` (also ``ipu.ops.control_flow_ops``): the
scheduling barrier.

On the IPU ``barrier`` makes everything that uses its outputs wait for all of its inputs.
Here operations run in program order, so the barrier passes its tensors through (an
identity per tensor, gradients included) and only its documented structure matters."""

from __future__ import annotations

from ipu_gpu.core.nest import flatten, pack_sequence_as
from ipu_gpu.ops import math as math_ops

__all__ = ["barrier"]


def barrier(tensors, insert_barrier_for_gradients=False, name=None):
    """Force every tensor of ``tensors`` (a tensor or a structure of them) to be computed
    before any of the returned ones is used.

    Args:
      tensors: a tensor or a structure of tensors.
      insert_barrier_for_gradients: also place a barrier on their gradients (scheduling
        only).
      name: optional op name.

    Returns:
      A tensor or structure of tensors matching ``tensors`` in structure, shapes and
      dtypes.
    """
    return pack_sequence_as(tensors, [math_ops.identity(t) for t in flatten(tensors)])
