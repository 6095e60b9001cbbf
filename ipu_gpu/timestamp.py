"""``tf.timestamp``: the time the op runs, in seconds since the Unix epoch."""

from __future__ import annotations

import time

import numpy as np

__all__ = ["timestamp"]


def _now():
    from .core.tensor import Tensor

    # TF's Timestamp kernel: Env::NowMicros() / 1e6, a float64 scalar
    return Tensor(np.float64(time.time_ns() // 1000) / 1.0e6)


def timestamp(name=None):
    """A float64 scalar Tensor: seconds since the Unix epoch, to the microsecond, when the op
    runs. In a TF1 graph it is a node (TF's stateful ``Timestamp`` op) that reads the clock at
    every ``Session.run``; eagerly (and in functions, which ipu_gpu runs eagerly) it reads it
    at the call."""
    from .graph import core as graph

    if graph.building():
        now = _now()
        op = graph.add_node(graph.get_default_graph(), "Timestamp", name or "Timestamp", [],
                            _now, [(now.dtype, list(now.shape))])
        return op.outputs[0]
    return _now()
