"""``ipu.optimizers.GradientAccumulationOptimizerV2`` and
``CrossReplicaGradientAccumulationOptimizerV2`` for the TF1 graph optimizers
(``ipu_gpu.graph``), with Graphcore's arithmetic (tf_ipu_semantics.md section 13):

every step each replica adds its gradients into accumulators (SUM ``acc += g``, MEAN
``acc += g / N``, RUNNING_MEAN ``acc = acc * n / (n + 1) + g / (n + 1)``, n the step within
the N); after N steps the wrapped optimizer applies the accumulated gradients once (the
cross-replica version averages them across the replicas first) and the accumulators start
again. Accumulators and the step count are per-replica variables, as on the IPU.
"""

from __future__ import annotations

import threading

from ...core.tensor import Variable
from ...graph.core import add_node
from ...graph.nodes import _graph_for
from ...ops.collectives import cross_replica_mean
from ..gradient_accumulation import GradientAccumulationReductionMethod
from .cross_replica_optimizer import CrossReplicaOptimizer

__all__ = ["CrossReplicaGradientAccumulationOptimizerV2", "GradientAccumulationOptimizerV2"]


class GradientAccumulationOptimizerV2:
    """An optimizer that accumulates gradients over ``num_mini_batches`` steps and applies
    them with ``opt`` once per ``num_mini_batches`` steps.

    Args:
      opt: the optimizer to apply the accumulated gradients with (a
        ``tf.compat.v1.train`` optimizer, or a ``CrossReplicaOptimizer`` of one).
      num_mini_batches: steps per update (>= 1).
      offload_weight_update_variables, replicated_optimizer_state_sharding: memory
        placement options; accepted, they change no number.
      dtype: the accumulators' dtype (None: the variable's).
      reduction_method: SUM (default), MEAN or RUNNING_MEAN (or their names).
      name: the operations' name prefix.

    Raises:
      ValueError: ``num_mini_batches`` < 1; an unknown reduction method.
    """

    def __init__(self, opt, num_mini_batches, offload_weight_update_variables=None,
                 replicated_optimizer_state_sharding=False, dtype=None,
                 reduction_method=GradientAccumulationReductionMethod.SUM,
                 name="GradientAccumulationOptimizerV2"):
        if num_mini_batches < 1:
            raise ValueError("num mini batches must be >= 1")
        self._cross_replica = isinstance(opt, CrossReplicaOptimizer)
        self._opt = opt._opt if self._cross_replica else opt
        self._n = int(num_mini_batches)
        self._dtype = dtype
        self._method = GradientAccumulationReductionMethod.parse(reduction_method)
        self._name = name

    def compute_gradients(self, loss, var_list=None, **kwargs):
        """The wrapped optimizer's local (gradient, variable) pairs."""
        return self._opt.compute_gradients(loss, var_list=var_list, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """An operation that accumulates ``grads_and_vars`` and, every ``num_mini_batches``-th
        run, applies the accumulated gradients."""
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        if not pairs:
            raise ValueError("No gradients provided for any variable.")
        graph = _graph_for([g for g, _ in pairs], [v for _, v in pairs])
        state = {"count": None, "acc": {}}
        n, method, opt, cross = self._n, self._method, self._opt, self._cross_replica
        lock = threading.Lock()  # replicas (threads) make the shared state objects once

        from ...graph.core import GraphTensor
        from ...graph.optimizers import learning_rate_value
        from ...graph.optimizer_base import apply_eagerly

        lr = getattr(opt, "_lr", None)
        lr = lr if isinstance(lr, GraphTensor) else None
        # the wrapped tf.train optimizer's slots are graph variables made now, as TF makes
        # them (saved and restored with the model); the run binds their values
        create = getattr(opt, "_create_graph_slots", None)
        if create is not None:
            create(graph, [v for _, v in pairs])
        states = [opt._graph_state(graph, v) if create is not None else []
                  for _, v in pairs]

        def step(grads, variables, lr_value, states):
            with lock:
                if state["count"] is None:
                    state["count"] = Variable(0, trainable=False)
                for v in variables:
                    if id(v) not in state["acc"]:
                        state["acc"][id(v)] = Variable(self._zeros_for(v), trainable=False)
            count = state["count"]
            micro = int(count.numpy()) % n
            for g, v in zip(grads, variables):
                acc = state["acc"][id(v)]
                g = _cast(g, acc.dtype)
                if method is GradientAccumulationReductionMethod.MEAN:
                    acc.assign(acc.read_value() + g * (1.0 / n))
                elif method is GradientAccumulationReductionMethod.RUNNING_MEAN:
                    keep = micro / (micro + 1.0)
                    acc.assign(acc.read_value() * keep + g * (1.0 / (micro + 1.0)))
                else:
                    acc.assign(acc.read_value() + g)
            count.assign_add(1)
            if micro == n - 1:
                totals = []
                for v in variables:
                    total = _cast(state["acc"][id(v)].read_value(), v.dtype)
                    totals.append(cross_replica_mean(total) if cross else total)
                if create is not None:
                    for v, slots in zip(variables, states):
                        opt._bind(v, slots)
                with learning_rate_value(lr_value):
                    apply_eagerly(opt, list(zip(totals, variables)))
                for v in variables:
                    acc = state["acc"][id(v)]
                    acc.assign(acc.read_value() * 0.0)
            return []

        grads = [g for g, _ in pairs]
        variables = [v for _, v in pairs]
        return add_node(graph, "GradientAccumulation", name or self._name,
                        [grads, variables, lr, states], step, [])

    def _zeros_for(self, v):
        from ...ops.creation import zeros_like

        zeros = zeros_like(v.read_value())
        return zeros if self._dtype is None else _cast(zeros, self._dtype)

    def minimize(self, loss, global_step=None, var_list=None, name=None, **kwargs):
        return self.apply_gradients(self.compute_gradients(loss, var_list=var_list, **kwargs),
                                    global_step=global_step, name=name)


def _cast(x, dtype):
    from ...ops.math import cast

    return x if x.dtype == dtype else cast(x, dtype)


class CrossReplicaGradientAccumulationOptimizerV2(GradientAccumulationOptimizerV2):
    """``GradientAccumulationOptimizerV2(CrossReplicaOptimizer(opt), ...)``: each replica
    accumulates locally; the accumulated gradients are averaged across the replicas at the
    update."""

    def __init__(self, opt, num_mini_batches, offload_weight_update_variables=None,
                 replicated_optimizer_state_sharding=False, dtype=None,
                 reduction_method=GradientAccumulationReductionMethod.SUM,
                 name="CrossReplicaGradientAccumulationOptimizerV2"):
        super().__init__(CrossReplicaOptimizer(opt), num_mini_batches,
                         offload_weight_update_variables, replicated_optimizer_state_sharding,
                         dtype, reduction_method, name)
