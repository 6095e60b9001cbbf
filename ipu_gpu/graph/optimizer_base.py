"""``tf.compat.v1.train.Optimizer``: the base class TF1 programs subclass for their own
optimizers (LAMB, LARS, ...), with TF 1.15's protocol.

``apply_gradients`` builds the update in the graph as TF does: ``_create_slots(var_list)``,
``_prepare()``, then one update per (gradient, variable) from ``_resource_apply_dense(grad,
var)`` (resource variables, the IPU idiom ``use_resource=True``; used whenever the subclass
defines it) or ``_apply_dense(grad, var)``, then ``_finish(update_ops, name)`` (a ``group``)
and, with ``global_step``, its increment after the updates. The slot helpers
(``_zeros_slot``, ``_get_or_make_slot``, ``_get_or_make_slot_with_initializer``, ``get_slot``,
``get_slot_names``) and the non-slot variables (``_create_non_slot_variable``,
``_get_non_slot_variable``) make graph variables that ``global_variables_initializer``
initializes. Sparse gradients are given to the dense hooks densified. Executing eagerly,
``compute_gradients`` takes a callable loss and ``apply_gradients`` runs the step at once;
under a strategy the gradients are summed over the replicas (``optimizer_strategy``).
"""

from __future__ import annotations

import threading

from .core import GraphTensor, building
from .nodes import _graph_for, gradients, group, make_variable
from .optimizer_strategy import all_reduce_gradients, eager_gradients, scale_loss
from .nodes import trainable_variables as _trainable_variables
from .program import control_dependencies

__all__ = ["Optimizer"]


class Optimizer:
    """Base class for optimizers (``tf.compat.v1.train.Optimizer``).

    Raises:
      ValueError: an empty ``name`` (TF's message)."""

    GATE_NONE, GATE_OP, GATE_GRAPH = 0, 1, 2

    def __init__(self, use_locking, name):
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking
        self._name = name
        self._slots: dict = {}  # slot name -> {id(variable): slot variable}
        self._non_slot_dict: dict = {}
        self._eager_lock = threading.Lock()  # replicas (threads) make the slots once
        self._eager_seen: set = set()  # ids of the eager variables with slots

    def get_name(self) -> str:
        return self._name

    # ---- the public steps -----------------------------------------------------------------
    def compute_gradients(self, loss, var_list=None, gate_gradients=GATE_OP,
                          aggregation_method=None, colocate_gradients_with_ops=False,
                          grad_loss=None):
        """[(gradient, variable)] of ``loss`` for ``var_list`` (default: the trainable
        variables), a None gradient for a variable ``loss`` does not depend on.

        Raises:
          ValueError: no variables to optimize (TF's message)."""
        if not building():
            return eager_gradients(loss, var_list, grad_loss)
        if callable(loss):
            loss = loss()
        var_list = list(_trainable_variables() if var_list is None else var_list)
        if not var_list:
            raise ValueError("No variables to optimize.")
        grads = gradients(scale_loss(loss), var_list, grad_ys=grad_loss)
        return list(zip(grads, var_list))

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """An operation applying the subclass's update to every pair with a gradient, then
        (with ``global_step``) incrementing ``global_step``.

        Raises:
          ValueError: no pair has a gradient (TF's message)."""
        grads_and_vars = list(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("No variables provided.")
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        if not pairs:
            raise ValueError(f"No gradients provided for any variable: "
                             f"{[getattr(v, 'name', v) for _, v in grads_and_vars]}.")
        pairs = all_reduce_gradients(pairs)
        if not building() and not any(isinstance(x, GraphTensor) for pair in pairs
                                      for x in pair):
            self._eager_apply(pairs)  # executing eagerly: the step runs now
            if global_step is not None:
                global_step.assign_add(1)
            return None
        _graph_for([g for g, _ in pairs], [v for _, v in pairs])
        self._create_slots([v for _, v in pairs])
        self._prepare()
        update_ops = [self._update(_dense(g), v) for g, v in pairs]
        apply_updates = self._finish(update_ops, name or self._name)
        if global_step is None:
            return apply_updates
        with control_dependencies([apply_updates]):
            return global_step.assign_add(1)

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=GATE_OP,
                 aggregation_method=None, colocate_gradients_with_ops=False, name=None,
                 grad_loss=None):
        """``apply_gradients(compute_gradients(loss, var_list))``.

        Raises:
          ValueError: no gradient for any variable (TF's message)."""
        pairs = self.compute_gradients(loss, var_list=var_list, grad_loss=grad_loss)
        if all(g is None for g, _ in pairs):
            raise ValueError(f"No gradients provided for any variable, check your graph for "
                             f"ops that do not support gradients, between variables "
                             f"{[str(v) for _, v in pairs]} and loss {loss}.")
        return self.apply_gradients(pairs, global_step=global_step, name=name)

    def _eager_apply(self, pairs) -> None:
        """One step on eager values, at run time (``ipu.optimizers``' accumulation wrappers
        apply the accumulated gradients this way): slots made on first use per variable,
        ``_prepare``, the updates, ``_finish``, as ``apply_gradients`` builds them."""
        with self._eager_lock:
            new = [v for _, v in pairs if id(v) not in self._eager_seen]
            if new:
                self._create_slots(new)
                self._eager_seen.update(id(v) for v in new)
        self._prepare()
        self._finish([self._update(_dense(g), v) for g, v in pairs], self._name)

    def _eager_update(self, v, g) -> None:
        self._eager_apply([(g, v)])

    def _update(self, grad, var):
        own = type(self)
        if own._resource_apply_dense is not Optimizer._resource_apply_dense:
            return self._resource_apply_dense(grad, var)
        return self._apply_dense(grad, var)

    # ---- the subclass's hooks -------------------------------------------------------------
    def _create_slots(self, var_list):
        """Make the slots the update needs (none by default)."""

    def _prepare(self):
        """Make the tensors every update shares, e.g. hyper-parameters (none by default)."""

    def _apply_dense(self, grad, var):
        """The update of a (reference) variable: the subclass defines it."""
        raise NotImplementedError()

    def _resource_apply_dense(self, grad, handle):
        """The update of a resource variable: the subclass defines it."""
        raise NotImplementedError()

    def _apply_sparse(self, grad, var):
        raise NotImplementedError()

    def _resource_apply_sparse(self, grad, handle, indices):
        raise NotImplementedError()

    def _finish(self, update_ops, name_scope):
        """The operation ending a step: by default ``group(*update_ops)``."""
        return group(*update_ops, name=name_scope)

    def _call_if_callable(self, param):
        return param() if callable(param) else param

    # ---- slots ----------------------------------------------------------------------------
    def _slot_dict(self, slot_name) -> dict:
        return self._slots.setdefault(slot_name, {})

    def get_slot_names(self) -> list:
        """The names of the slots this optimizer made, sorted."""
        return sorted(self._slots)

    def get_slot(self, var, name):
        """The slot ``name`` made for ``var``, or None."""
        return self._slots.get(name, {}).get(id(var))

    def _get_or_make_slot(self, var, val, slot_name, op_name):
        """The slot ``slot_name`` of ``var``, made with initial value ``val`` if new."""
        slots = self._slot_dict(slot_name)
        if id(var) not in slots:
            slots[id(var)] = make_variable(val, trainable=False,
                                           name=f"{_op_name(var)}/{op_name}")
        return slots[id(var)]

    def _get_or_make_slot_with_initializer(self, var, initializer, shape, dtype, slot_name,
                                           op_name):
        """The slot ``slot_name`` of ``var``, made from ``initializer(shape, dtype)`` if new."""
        slots = self._slot_dict(slot_name)
        if id(var) not in slots:
            value = initializer(list(shape), dtype=dtype) if callable(initializer) \
                else initializer
            slots[id(var)] = make_variable(value, trainable=False,
                                           name=f"{_op_name(var)}/{op_name}")
        return slots[id(var)]

    def _zeros_slot(self, var, slot_name, op_name):
        """The slot ``slot_name`` of ``var``, zeros of its shape and dtype if new."""
        slots = self._slot_dict(slot_name)
        if id(var) not in slots:
            import numpy as np

            shape = [int(d) for d in var.shape]
            zeros = np.zeros(shape, dtype=np.dtype(var.dtype.as_numpy_dtype
                                                   if hasattr(var.dtype, "as_numpy_dtype")
                                                   else var.dtype))
            slots[id(var)] = make_variable(zeros, trainable=False,
                                           name=f"{_op_name(var)}/{op_name}")
        return slots[id(var)]

    # ---- non-slot variables ---------------------------------------------------------------
    def _create_non_slot_variable(self, initial_value, name, colocate_with):
        """A variable the optimizer keeps once per graph (not per variable), e.g. Adam's beta
        powers, keyed as TF keys it: ``(name, colocate_with.graph)``."""
        key = (name, _graph_key(colocate_with))
        if key not in self._non_slot_dict:
            self._non_slot_dict[key] = make_variable(initial_value, trainable=False,
                                                     name=name)
        return self._non_slot_dict[key]

    def _get_non_slot_variable(self, name, graph=None):
        """The non-slot variable ``name`` of ``graph`` (pass the default graph in graph
        mode, as TF's own optimizers do), or None."""
        return self._non_slot_dict.get((name, graph))

    def _non_slot_variables(self) -> list:
        return list(self._non_slot_dict.values())

    def variables(self) -> list:
        """The optimizer's slot and non-slot variables."""
        slots = [v for per_var in self._slots.values() for v in per_var.values()]
        return slots + self._non_slot_variables()


def _op_name(var) -> str:
    name = getattr(var, "name", "var")
    return name.split(":")[0]


def _graph_key(colocate_with):
    from ..compat.behavior import executing_eagerly

    return None if executing_eagerly() else getattr(colocate_with, "graph", None)


def apply_eagerly(opt, pairs) -> None:
    """Apply [(gradient, variable)] with ``opt`` on eager values at run time: one
    ``_eager_apply`` step for an ``Optimizer`` subclass, else each pair's ``_eager_update``
    and the step's end (Adam's beta powers advance once)."""
    if isinstance(opt, Optimizer):
        opt._eager_apply(pairs)
        return
    for g, v in pairs:
        opt._eager_update(v, g)
    finish = getattr(opt, "_finish_eagerly", None)
    if finish is not None:
        finish()


def _dense(grad):
    from ..core.indexed_slices import IndexedSlices

    if isinstance(grad, IndexedSlices):
        from ..core.convert import convert_to_tensor

        return convert_to_tensor(grad)
    return grad
