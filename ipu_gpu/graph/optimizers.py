"""TF1's ``tf.train`` optimizers on graphs: ``GradientDescentOptimizer``,
``MomentumOptimizer``, ``AdamOptimizer``, ``RMSPropOptimizer``, ``AdagradOptimizer``, in
TF 1.15's arithmetic (its ``training_ops`` kernels).

``minimize`` = ``compute_gradients`` (a ``gradients`` node) + ``apply_gradients``: one node
per variable calling ``_eager_update(variable, gradient)`` on the run's eager values (which
the ``ipu.optimizers`` accumulation wrappers call too), grouped, then ``_finish`` (Adam's
beta powers) once per step.

Slots are made as TF 1.15 makes them, at ``apply_gradients``: graph variables named
``<var>/<optimizer name>`` (``_1``, ``_2`` for a second and third slot), in the global
variables (so ``global_variables_initializer``, ``Saver`` and exports see them), with
non-slot variables (Adam's ``beta1_power``/``beta2_power``) made before them. Each update
node takes its slots as inputs, so the run binds the slots' eager (per-replica) variables
before ``_eager_update`` reads them. Outside a graph, slots are eager variables made on
first use.
"""

from __future__ import annotations

import contextlib
import threading

from ..core import backend
from ..core import tape as tape_module
from ..core.convert import convert_to_tensor
from ..core.indexed_slices import IndexedSlices
from ..core.tensor import Tensor, Variable
from ..ops._util import quiet
from .core import GraphTensor, Operation, add_node, building
from .nodes import GraphVariable, _graph_for, gradients, group, trainable_variables
from .optimizer_strategy import all_reduce_gradients, eager_gradients, scale_loss

__all__ = ["AdagradOptimizer", "AdamOptimizer", "GradientDescentOptimizer",
           "MomentumOptimizer", "RMSPropOptimizer"]


class _Optimizer:
    """The part of TF1's ``tf.train.Optimizer`` the subclasses share."""

    def __init__(self, use_locking, name):
        self._name = name
        self._slots: dict = {}  # (slot name, id(eager variable)) -> Variable
        self._graph_slots: dict = {}  # (slot name, id(graph variable)) -> GraphVariable
        self._non_slots: dict = {}  # graph -> [GraphVariable] (TF's non-slot variables)
        self._primaries: dict = {}  # id(variable) -> the variable with graph slots
        self._lock = threading.Lock()  # replicas (threads) make each slot once

    def compute_gradients(self, loss, var_list=None, gate_gradients=1,
                          aggregation_method=None, colocate_gradients_with_ops=False,
                          grad_loss=None):
        """[(gradient, variable)] of ``loss`` for ``var_list`` (default: the trainable
        variables; eagerly, those a callable ``loss`` reads). Under a strategy with several
        replicas in sync the loss is divided by their number, as TF 1.15 does.

        Raises:
          ValueError: no variables to optimize (TF's message).
          RuntimeError: a ``loss`` that is no function while executing eagerly (TF's
            message)."""
        if not building():
            return eager_gradients(loss, var_list, grad_loss)
        if callable(loss):
            loss = loss()
        if var_list is None:
            var_list = trainable_variables()
        var_list = list(var_list)
        if not var_list:
            raise ValueError("No variables to optimize.")
        grads = gradients(scale_loss(loss), var_list, grad_ys=grad_loss)
        return list(zip(grads, var_list))

    def apply_gradients(self, grads_and_vars, global_step=None, name=None) -> Operation:
        """An operation applying every (gradient, variable) pair's update, then incrementing
        ``global_step``.

        Raises:
          ValueError: no pair has a gradient (TF's message)."""
        grads_and_vars = list(grads_and_vars)
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        if not pairs:
            raise ValueError(f"No gradients provided for any variable: "
                             f"{[getattr(v, 'name', v) for _, v in grads_and_vars]}.")
        pairs = all_reduce_gradients(pairs)
        if not building() and not any(isinstance(x, GraphTensor) for pair in pairs
                                      for x in pair):
            return self._apply_now(pairs, global_step)
        graph = _graph_for([g for g, _ in pairs], [v for _, v in pairs])
        lr = self._lr if isinstance(getattr(self, "_lr", None), GraphTensor) else None
        self._create_graph_slots(graph, [v for _, v in pairs])

        def update(var, grad, lr_value, *state):  # flat inputs: a plan calls it by position
            if state:
                self._bind(var, state)
            if isinstance(grad, IndexedSlices):  # applied dense (TF 1 applies it sparsely)
                grad = convert_to_tensor(grad)
            # no tape records the update's arithmetic: TF's apply ops have no gradient, and
            # the run's tape (a body's gradients node differentiates it) would keep every
            # operand of every update alive until the run ends
            local = tape_module._local
            tapes, local.tapes = local.tapes, []
            try:
                if lr is None:
                    self._eager_update(var, grad)
                else:
                    with learning_rate_value(lr_value):
                        self._eager_update(var, grad)
            finally:
                local.tapes = tapes
            return []
        updates = [add_node(graph, "ApplyGradient", "update",
                            [v, g, lr, *self._graph_state(graph, v)], update, [])
                   for g, v in pairs]
        op = group(*updates, name=name or self._name)
        finish = self._finish_node(graph, op)
        if finish is not None:
            op = group(op, finish, name=name or self._name)
        if global_step is not None and hasattr(global_step, "assign_add"):
            step = global_step.assign_add(1)
            if isinstance(step, Operation) or hasattr(step, "op"):
                op = group(op, step, name=name or self._name)
        return op

    def _apply_now(self, pairs, global_step):
        """``apply_gradients`` executing eagerly: the updates run now (TF 2's eager
        ``tf.compat.v1.train`` optimizers); returns None as TF's eager ``group``."""
        for g, v in pairs:
            if isinstance(g, IndexedSlices):
                g = convert_to_tensor(g)
            self._eager_update(v, g)
        self._finish_eagerly()
        if global_step is not None:
            global_step.assign_add(1)
        return None

    def _finish_eagerly(self) -> None:
        """What ``_finish_node`` does once per step (nothing by default)."""

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=1,
                 aggregation_method=None, colocate_gradients_with_ops=False, name=None,
                 grad_loss=None) -> Operation:
        """``apply_gradients(compute_gradients(loss, var_list))``."""
        return self.apply_gradients(self.compute_gradients(loss, var_list,
                                                           grad_loss=grad_loss),
                                    global_step=global_step, name=name)

    # ---- slots ----------------------------------------------------------------------------
    def _slot_specs(self) -> list:
        """[(slot name, initial fill, op name)] in TF's creation order (none by default)."""
        return []

    def _non_slot_specs(self) -> list:
        """[(name, initial float32 value)] of the variables kept once per graph."""
        return []

    def _bind_non_slots(self, variables) -> None:
        """Takes the run's eager values of the non-slot variables."""

    def _create_graph_slots(self, graph, var_list) -> None:
        """TF's ``_create_slots``: the non-slot variables (once per graph), then each graph
        variable's slots, as graph variables in the global variables."""
        import numpy as np

        if graph not in self._non_slots:
            self._non_slots[graph] = [
                GraphVariable(graph, np.float32(value), trainable=False, name=name)
                for name, value in self._non_slot_specs()]
        for var in var_list:  # graph variables, or a Keras layer's eager ones
            if not isinstance(var, (GraphVariable, Variable)):
                continue
            dtype = np.dtype(getattr(var.dtype, "as_numpy_dtype", var.dtype))
            shape = list(var.shape)
            name = var.op.name if isinstance(var, GraphVariable) else \
                str(var.name).rsplit(":", 1)[0]
            if None in shape:
                raise ValueError(f"Cannot create slots of {name}: its shape {shape} is not "
                                 f"fully defined")
            self._primaries[id(var)] = var  # kept alive: its id keys its slots
            for slot, fill, op_name in self._slot_specs():
                if (slot, id(var)) not in self._graph_slots:
                    self._graph_slots[(slot, id(var))] = GraphVariable(
                        graph, np.full(shape, fill, dtype=dtype), trainable=False,
                        name=f"{name}/{op_name}")

    def _graph_state(self, graph, var) -> list:
        """The graph variables an update of ``var`` reads besides ``var``: its slots, then
        the non-slot variables."""
        slots = [self._graph_slots[(slot, id(var))] for slot, _, _ in self._slot_specs()
                 if (slot, id(var)) in self._graph_slots]
        return slots + self._non_slots.get(graph, [])

    def _bind(self, var, state) -> None:
        """Makes ``_slot`` find the run's eager slot variables of the eager ``var``."""
        if not state:
            return
        layout = self.__dict__.get("_layout")
        if layout is None:  # (slot names, number of non-slot variables), fixed per optimizer
            layout = self._layout = ([slot for slot, _, _ in self._slot_specs()],
                                     len(self._non_slot_specs()))
        names, non_slots = layout
        n = len(state) - non_slots
        key = id(var)
        for slot, value in zip(names[:n], state[:n]):
            self._slots[(slot, key)] = value
        if non_slots:
            self._bind_non_slots(state[n:])

    def variables(self) -> list:
        """The optimizer's slot and non-slot variables of the default graph, sorted by name
        (TF's order)."""
        from .core import get_default_graph

        graph = get_default_graph()
        found = [v for v in self._graph_slots.values() if v.graph is graph]
        found += self._non_slots.get(graph, [])
        if not found:
            found = list(self._slots.values())
            return found
        return sorted(found, key=lambda v: v.name)

    def _slot(self, v, name, fill):
        key = (name, id(v))
        slot = self._slots.get(key)
        if slot is None:
            with self._lock:
                slot = self._slots.get(key)
                if slot is None:
                    from ..ops.creation import fill as fill_op

                    value = v.read_value()
                    slot = self._slots[key] = Variable(
                        fill_op(list(value.shape), _const(fill, value)), trainable=False)
        return slot

    def get_slot_names(self) -> list:
        """The names of the slots this optimizer made, sorted."""
        return sorted({name for name, _ in self._slots} | {name for name, _ in
                                                            self._graph_slots})

    def get_slot(self, var, name):
        """The slot ``name`` made for ``var`` (a graph variable's slot is a graph variable),
        or None."""
        found = self._graph_slots.get((name, id(var)))
        return found if found is not None else self._slots.get((name, id(var)))

    def _finish_node(self, graph, after):
        return None

    def _eager_update(self, v, g):
        raise NotImplementedError


def _one_minus(x, like) -> float:
    """``1 - x`` in ``like``'s dtype, as TF's kernels compute ``T(1) - beta``."""
    import numpy as np

    dtype = np.dtype(getattr(like.dtype, "as_numpy_dtype", like.dtype))
    if dtype.kind != "f":
        return 1.0 - x
    return float(np.asarray(1, dtype) - np.asarray(x, dtype))


def _const(value, like):
    import numpy as np

    return np.asarray(value, dtype=like.dtype)


_run = threading.local()  # .lr: a graph-tensor learning rate's value in the running update


@contextlib.contextmanager
def learning_rate_value(value):
    """Inside the block, an optimizer whose learning rate is a graph tensor (a decayed rate)
    reads ``value``, the tensor's value in the running step."""
    previous = getattr(_run, "lr", None)
    _run.lr = value
    try:
        yield
    finally:
        _run.lr = previous


def _lr(lr, v):
    if isinstance(lr, GraphTensor):
        value = getattr(_run, "lr", None)
        if value is None:
            raise RuntimeError("a graph-tensor learning rate is read outside its optimizer's "
                               "update")
        return value
    return lr if isinstance(lr, Tensor) else float(lr)


class GradientDescentOptimizer(_Optimizer):
    """``tf.compat.v1.train.GradientDescentOptimizer``: var -= learning_rate * grad."""

    def __init__(self, learning_rate, use_locking=False, name="GradientDescent"):
        super().__init__(use_locking, name)
        self._lr = learning_rate

    def _eager_update(self, v, g):
        lr = _lr(self._lr, v)
        if type(lr) is float and type(g) is Tensor:  # TF's ApplyGradientDescent kernel:
            a = g._value                               # lr * grad is no tensor of its own
            if a.dtype.kind == "f" and a.dtype == v.dtype:
                xp = backend.xp_of(a)
                with quiet(xp):
                    delta = xp.asarray(xp.multiply(a, xp.asarray(lr, dtype=a.dtype)))
                if type(v) is Variable and _same_kind(delta, v):
                    v._update(delta, "subtract")  # assign_sub, its checks passed
                else:
                    v.assign_sub(delta)
                return
        v.assign_sub(g * lr)


class MomentumOptimizer(_Optimizer):
    """``tf.compat.v1.train.MomentumOptimizer``: accum = momentum * accum + grad;
    var -= lr * accum (nesterov: var -= lr * (grad + momentum * accum))."""

    def __init__(self, learning_rate, momentum, use_locking=False, name="Momentum",
                 use_nesterov=False):
        super().__init__(use_locking, name)
        self._lr, self._momentum, self._nesterov = learning_rate, momentum, use_nesterov

    def _slot_specs(self):
        return [("momentum", 0.0, self._name)]

    def _eager_update(self, v, g):
        accum = self._slot(v, "momentum", 0.0)
        accum.assign(accum.read_value() * self._momentum + g)
        lr = _lr(self._lr, v)
        if self._nesterov:  # TF's kernel: var -= grad * lr + accum * momentum * lr
            v.assign_sub(g * lr + accum.read_value() * self._momentum * lr)
        else:
            v.assign_sub(accum.read_value() * lr)


class AdamOptimizer(_Optimizer):
    """``tf.compat.v1.train.AdamOptimizer``: m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g²,
    var -= lr sqrt(1 - b2^t) / (1 - b1^t) m / (sqrt(v) + epsilon); the beta powers advance
    once per step, after every variable's update."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08,
                 use_locking=False, name="Adam"):
        super().__init__(use_locking, name)
        self._lr, self._b1, self._b2, self._eps = learning_rate, beta1, beta2, epsilon
        self._powers = None

    def _slot_specs(self):
        return [("m", 0.0, self._name), ("v", 0.0, self._name)]

    def _non_slot_specs(self):
        return [("beta1_power", self._b1), ("beta2_power", self._b2)]

    def _bind_non_slots(self, variables):
        self._powers = tuple(variables)

    def _beta_powers(self, like):
        if self._powers is None:
            with self._lock:
                if self._powers is None:
                    self._powers = (Variable(_const(self._b1, like), trainable=False),
                                    Variable(_const(self._b2, like), trainable=False))
        return self._powers

    def _eager_update(self, v, g):
        import ipu_gpu as core

        value = v.read_value()
        b1_power, b2_power = (_cast_to(p.read_value(), value.dtype)
                              for p in self._beta_powers(value))
        m, s = self._slot(v, "m", 0.0), self._slot(v, "v", 0.0)
        lr = _lr(self._lr, v) * core.sqrt(1.0 - b2_power) / (1.0 - b1_power)
        # TF's kernel: m += (g - m)(1 - b1); v += (g² - v)(1 - b2)
        m.assign(m.read_value() + (g - m.read_value()) * _one_minus(self._b1, g))
        s.assign(s.read_value() + (g * g - s.read_value()) * _one_minus(self._b2, g))
        v.assign_sub(lr * m.read_value() / (core.sqrt(s.read_value()) + self._eps))

    def _finish_eagerly(self):
        if self._powers is not None:
            b1_power, b2_power = self._powers
            b1_power.assign(b1_power.read_value() * self._b1)
            b2_power.assign(b2_power.read_value() * self._b2)

    def _finish_node(self, graph, after):
        def finish(powers):
            if powers:
                self._bind_non_slots(powers)
            self._finish_eagerly()
            return []
        return add_node(graph, "AdamFinish", "Adam_finish", [self._non_slots.get(graph, [])],
                        finish, [], control_inputs=[after])


def _same_kind(delta, v) -> bool:
    """Whether ``delta`` is an array of ``v``'s type, dtype and shape (holds no reference to
    ``v``'s buffer after it returns, so ``_update`` may still update it in place)."""
    value = v._value
    return type(delta) is type(value) and delta.dtype == value.dtype and \
        delta.shape == value.shape


def _cast_to(x, dtype):
    from ..ops.math import cast

    return x if x.dtype == dtype else cast(x, dtype)


class RMSPropOptimizer(_Optimizer):
    """``tf.compat.v1.train.RMSPropOptimizer``: ms = decay ms + (1 - decay) g² (ms starts at
    ones), mom = momentum mom + lr g / sqrt(ms + epsilon), var -= mom; centered subtracts
    the squared mean gradient mg = decay mg + (1 - decay) g under the root."""

    def __init__(self, learning_rate, decay=0.9, momentum=0.0, epsilon=1e-10,
                 use_locking=False, centered=False, name="RMSProp"):
        super().__init__(use_locking, name)
        self._lr, self._decay, self._momentum = learning_rate, decay, momentum
        self._eps, self._centered = epsilon, centered

    def _slot_specs(self):
        centered = [("mg", 0.0, self._name)] if self._centered else []
        return [("rms", 1.0, self._name), *centered, ("momentum", 0.0, self._name)]

    def _eager_update(self, v, g):
        import ipu_gpu as core

        ms, mom = self._slot(v, "rms", 1.0), self._slot(v, "momentum", 0.0)
        # TF's kernel: ms += (g² - ms)(1 - decay); mg += (g - mg)(1 - decay)
        ms.assign(ms.read_value() + (g * g - ms.read_value()) * _one_minus(self._decay, g))
        denom = ms.read_value()
        if self._centered:
            mg = self._slot(v, "mg", 0.0)
            mg.assign(mg.read_value() + (g - mg.read_value()) * _one_minus(self._decay, g))
            denom = denom - mg.read_value() * mg.read_value()
        mom.assign(mom.read_value() * self._momentum
                   + g * _lr(self._lr, v) / core.sqrt(denom + self._eps))
        v.assign_sub(mom.read_value())


class AdagradOptimizer(_Optimizer):
    """``tf.compat.v1.train.AdagradOptimizer``: acc += g² (acc starts at
    ``initial_accumulator_value``), var -= lr g / sqrt(acc)."""

    def __init__(self, learning_rate, initial_accumulator_value=0.1, use_locking=False,
                 name="Adagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value must be positive: "
                             f"{initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._lr, self._init = learning_rate, initial_accumulator_value

    def _slot_specs(self):
        return [("accumulator", self._init, self._name)]

    def _eager_update(self, v, g):
        import ipu_gpu as core

        acc = self._slot(v, "accumulator", self._init)
        acc.assign(acc.read_value() + g * g)
        v.assign_sub(g * _lr(self._lr, v) * core.math.rsqrt(acc.read_value()))


# ---- global step and learning-rate decays ---------------------------------------------------
GLOBAL_STEP = "global_step"


def get_or_create_global_step(graph=None):
    """The graph's int64 ``global_step`` variable (made, at 0 and not trainable, on first
    use), which ``minimize(..., global_step=)`` increments once per step."""
    import numpy as np

    from .core import get_default_graph
    from .nodes import make_variable

    graph = graph or get_default_graph()
    found = graph.get_collection(GLOBAL_STEP)
    if found:
        return found[0]
    step = make_variable(np.int64(0), trainable=False, name="global_step")
    graph.add_to_collection(GLOBAL_STEP, step)
    return step


def get_global_step(graph=None):
    """The graph's global step variable, or None."""
    from .core import get_default_graph

    found = (graph or get_default_graph()).get_collection(GLOBAL_STEP)
    return found[0] if found else None


def exponential_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                      name=None):
    """``learning_rate * decay_rate ** (global_step / decay_steps)`` (the exponent floored
    with ``staircase``), in float32 as TF 1.15 computes it.

    Raises:
      ValueError: ``global_step`` is None (TF's message)."""
    import ipu_gpu as core

    if global_step is None:
        raise ValueError("global_step is required for exponential_decay.")
    p = core.cast(global_step, core.float32) / float(decay_steps)
    if staircase:
        p = core.floor(p)
    return float(learning_rate) * core.pow(core.constant(float(decay_rate)), p)


def piecewise_constant(x, boundaries, values, name=None):
    """``values[0]`` while ``x <= boundaries[0]``, ``values[i]`` while
    ``boundaries[i-1] < x <= boundaries[i]``, ``values[-1]`` after the last boundary.

    Raises:
      ValueError: ``len(values) != len(boundaries) + 1`` (TF's message)."""
    import ipu_gpu as core

    if len(values) != len(boundaries) + 1:
        raise ValueError("The length of boundaries should be 1 less than the length of "
                         "values")
    result = core.constant(values[0], dtype=core.float32) + core.cast(x, core.float32) * 0.0
    for b, v in zip(boundaries, values[1:]):
        result = core.where(core.cast(x, core.float32) > float(b),
                            core.constant(v, dtype=core.float32) + result * 0.0, result)
    return result
