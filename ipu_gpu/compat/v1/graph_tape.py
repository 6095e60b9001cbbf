"""``tf.compat.v1.GradientTape``: the eager tape, which in a TF1 graph (targets that are graph
tensors, as TF 1.15's tape records graph ops) gives ``tf.gradients``'s symbolic gradients,
so TF1 programs that train with a tape inside ``ipu_compiler.compile`` (Graphcore's PopDist
and Keras-in-TF1 examples) build the same gradient nodes ``Optimizer.minimize`` would.

Difference: in a graph every source gets its gradient, watched or not (TF's tape gives None
for a tensor it did not watch; variables, the sources programs pass, are watched either
way)."""

from __future__ import annotations

from ...core import nest
from ...core.tape import GradientTape as _EagerTape
from ...core.tape import UnconnectedGradients
from ...graph import core as _graph_core

__all__ = ["GradientTape"]


class GradientTape(_EagerTape):
    """Records operations for automatic differentiation (``tf.GradientTape``); in a TF1
    graph, ``gradient`` returns graph tensors computed when a Session runs them."""

    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=UnconnectedGradients.NONE):
        """Gradients of ``target`` with respect to ``sources``, in the structure of
        ``sources`` (see ``tf.GradientTape.gradient``).

        Raises:
          RuntimeError: a non-persistent tape asked twice (TF's message).
        """
        flat_targets = nest.flatten(target)
        if not any(isinstance(t, _graph_core.GraphTensor) for t in flat_targets):
            return super().gradient(target, sources, output_gradients, unconnected_gradients)
        if not self._persistent:
            if getattr(self, "_graph_gradient_taken", False):
                raise RuntimeError("A non-persistent GradientTape can only be used to compute "
                                   "one set of gradients (or jacobians)")
            self._graph_gradient_taken = True
        from ... import graph as _graph

        flat_sources = nest.flatten(sources)
        seeds = None if output_gradients is None else nest.flatten(output_gradients)
        grads = _graph.gradients(flat_targets, flat_sources, grad_ys=seeds,
                                 unconnected_gradients=getattr(unconnected_gradients, "value",
                                                               unconnected_gradients))
        return nest.pack_sequence_as(sources, grads)
