"""``tensorflow.python.ipu.internal_ops`` (also ``ipu.ops.internal_ops``): Graphcore utility
operations: ``print_tensor`` and the tile-mapping copies ``remap`` / ``remap_deduce``.

``print_tensor`` writes ``<name>: <values>`` to standard error when it runs: at once when
executing eagerly, and, in a TF1 graph, each time the returned operation runs (fetched by
``Session.run``, returned from an ``ipu_compiler.compile`` computation or used as a control
dependency). Poplar's exact print layout is not documented; the values are printed in full as
``tf.print`` formats them. ``remap`` and ``remap_deduce`` change only where a tensor lives on
the IPU's tiles, so they return a copy.
"""

from __future__ import annotations

import logging
import sys

from ipu_gpu import graph
from ipu_gpu.core import dtypes
from ipu_gpu.core.convert import convert_to_tensor
from ipu_gpu.graph import GraphTensor
from ipu_gpu.ops import math as math_ops
from ipu_gpu.printing import format_tensor

__all__ = ["print_tensor", "remap", "remap_deduce"]

_PRINTABLE = (dtypes.float16, dtypes.float32, dtypes.int32)


def _write(value, name: str) -> None:
    title = f"{name}: " if name else ""
    sys.stderr.write(f"{title}{format_tensor(value, summarize=-1)}\n")


def print_tensor(input, name=""):  # noqa: A002 - Graphcore's name
    """Print ``input`` to standard error.

    Args:
      input: the tensor to print (float16, float32 or int32).
      name: optional op name, printed as the title.

    Returns:
      In a TF1 graph, an operation that prints when it runs; executing eagerly, None (the
      tensor is printed at once).

    Raises:
      TypeError: a tensor of another dtype (TF's allowed-values error).
    """
    symbolic = isinstance(input, GraphTensor)
    d = dtypes.as_dtype(input.dtype if symbolic else convert_to_tensor(input).dtype,
                        "print_tensor: input")
    if d not in _PRINTABLE:
        raise TypeError(f"Value passed to parameter 'input' has DataType {d.name} not in list "
                        "of allowed values: float16, float32, int32")
    if symbolic or graph.core.building():
        def run(value):
            _write(value, name)
            return []

        g = input.graph if symbolic else graph.get_default_graph()
        return graph.core.add_node(g, "IpuPrintTensor", name or "IpuPrintTensor", [input], run,
                                   [])
    _write(convert_to_tensor(input), name)
    return None


def remap(x, name=None):
    """Clone ``x`` and map it linearly across the IPU's tiles: a copy here."""
    logging.getLogger("tensorflow").warning("remap is a Graphcore internal op")
    return math_ops.identity(x)


def remap_deduce(x, name=None):
    """Clone ``x``, deducing its tile mapping from its input: a copy here."""
    return math_ops.identity(x)
