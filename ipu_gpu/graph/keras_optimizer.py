"""Keras 2 optimizers (``OptimizerV2``) in a TF1 graph, as TF's graph mode builds them.

``apply_gradients`` given graph tensors makes the optimizer's weights once, at graph
construction, as graph variables (``<optimizer>/iter``, the hyperparameters, the slots
``<optimizer>/<variable>/<slot>``) that ``global_variables_initializer`` initializes, and
returns one operation. Each ``Session.run`` of it applies the eager update (the same
``_resource_apply_dense`` code, so the arithmetic is the eager optimizer's) to the run's
values through a twin of the optimizer whose weights are the graph variables' eager values,
and increments ``iterations``. ``minimize`` with a callable loss returning a graph tensor and
``get_gradients``/``get_updates`` differentiate with ``tf.gradients``.
"""

from __future__ import annotations

import contextlib
import copy
import threading

from ..core import nest
from .core import GraphTensor, add_node
from .nodes import GraphVariable, _graph_for, gradients

__all__ = ["apply_gradients", "compute_gradients", "get_gradients", "new_weight", "weights"]

_local = threading.local()  # .graph: the graph whose variables new optimizer weights become


@contextlib.contextmanager
def weights(graph):
    """Inside the block the optimizer's new weights are graph variables of ``graph``."""
    previous = getattr(_local, "graph", None)
    _local.graph = graph
    try:
        yield
    finally:
        _local.graph = previous


def new_weight(value, trainable, dtype, name):
    """A graph variable of the graph ``weights`` set, or None outside that block."""
    graph = getattr(_local, "graph", None)
    if graph is None:
        return None
    return GraphVariable(graph, value, trainable=trainable, name=name, dtype=dtype)


def compute_gradients(loss, var_list, grad_loss=None) -> list:
    """[(gradient, variable)] of the graph-tensor ``loss`` (``tf.gradients``)."""
    var_list = nest.flatten(var_list)
    grad_ys = None if grad_loss is None else [grad_loss]
    return list(zip(gradients([loss], var_list, grad_ys=grad_ys), var_list))


def get_gradients(loss, params) -> list:
    """Keras's ``get_gradients``: ``tf.gradients(loss, params)`` in a graph.

    Raises:
      RuntimeError: ``loss`` is not a graph tensor (TF's eager message).
      ValueError: a parameter has no gradient (Keras's message)."""
    if not isinstance(loss, GraphTensor):
        raise RuntimeError("tf.gradients is not supported when eager execution is enabled. "
                           "Use tf.GradientTape instead.")
    params = nest.flatten(params)
    grads = gradients(loss, params)
    for grad, param in zip(grads, params):
        if grad is None:
            raise ValueError(f"Variable {param} has `None` for gradient. Please make sure that "
                             "all of your ops have a gradient defined (i.e. are "
                             "differentiable). Common ops without gradient: K.argmax, K.round, "
                             "K.eval.")
    return grads


def apply_gradients(optimizer, grads_and_vars, name=None, aggregate=True):
    """The operation applying ``optimizer``'s update to (graph gradient, variable) pairs.

    The weights are made now (graph variables); the operation's run maps every graph
    variable among them to its eager value and calls the eager ``apply_gradients``."""
    from ..keras.optimizers import utils

    pairs = list(utils.filter_empty_gradients(grads_and_vars))
    var_list = [v for _, v in pairs]
    graph = _graph_for([g for g, _ in pairs], var_list)
    with weights(graph):
        optimizer._create_all_weights(var_list)
    if not pairs:
        return None
    state = _graph_state(optimizer, var_list)
    grads = [g for g, _ in pairs]
    lock, twins = threading.Lock(), {}

    def run(*values):
        n = len(pairs)
        run_grads, run_vars, run_state = values[:n], values[n:2 * n], values[2 * n:]
        key = tuple(map(id, (*run_vars, *run_state)))
        twin = twins.get(key)
        if twin is None:
            with lock:  # replicas (threads) make the twin once
                twin = twins.get(key)
                if twin is None:
                    twin = twins[key] = _twin(optimizer, var_list, run_vars,
                                              dict(zip(map(id, state), run_state)))
        twin.apply_gradients(list(zip(run_grads, run_vars)),
                             experimental_aggregate_gradients=aggregate)
        return []
    scope = name or optimizer._name
    return add_node(graph, "AssignAddVariableOp",
                    f"{optimizer._name}/{scope}/AssignAddVariableOp",
                    [*grads, *var_list, *state], run, [])


def _graph_state(optimizer, var_list) -> list:
    """The graph tensors among the optimizer's weights, hyperparameters and the slots of
    ``var_list``: what a run of the update reads."""
    found = [optimizer._iterations, *optimizer._hyper.values(), *optimizer._weights]
    for v in var_list:
        found.extend(optimizer._slots.get(id(v), {}).values())
    out, seen = [], set()
    for x in found:
        if isinstance(x, GraphTensor) and id(x) not in seen:
            seen.add(id(x))
            out.append(x)
    return out


def _twin(optimizer, var_list, run_vars, values):
    """A shallow copy of ``optimizer`` whose weights, hyperparameters and slots are the run's
    values of its graph variables (``values``: id of graph tensor -> its value), keyed by the
    run's variables."""
    def value(x):
        return values.get(id(x), x) if isinstance(x, GraphTensor) else x
    twin = copy.copy(optimizer)
    d = twin.__dict__
    d["_iterations"] = value(optimizer._iterations)
    d["_hyper"] = {k: value(v) for k, v in optimizer._hyper.items()}
    d["_weights"] = [value(w) for w in optimizer._weights]
    d["_hypers_created"] = True
    d["_slots"] = dict(optimizer._slots)
    d["_slot_owners"] = dict(optimizer._slot_owners)
    for v, run_v in zip(var_list, run_vars):
        d["_slots"][id(run_v)] = {k: value(s) for k, s in optimizer._slots.get(id(v),
                                                                               {}).items()}
        d["_slot_owners"][id(run_v)] = run_v
    return twin
