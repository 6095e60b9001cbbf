"""``tf.custom_gradient``: a function whose gradient is the one its author gives.

``f(*args)`` returns ``(outputs, grad_fn)``. The call runs ``f`` and records one op on every
recording tape, from the flattened ``args`` (and the trainable variables ``f`` read that are
not arguments) to fresh copies of the flattened outputs; its backward rule is ``grad_fn``
called on the outputs' cotangents as Tensors. So ``GradientTape``, ``tf.function`` (eager
here) and a TF1 graph's ``tf.gradients`` (whose ``Session.run`` replays the graph on a tape)
all use the user's gradient. With nested tapes ``grad_fn`` runs on Tensors the outer tapes
record, so it can itself be differentiated.

As TensorFlow: ``grad_fn(*dys)`` returns one gradient per flattened positional argument
(a single value when there is one); when ``f`` reads variables, ``grad_fn`` must accept the
keyword ``variables`` (TypeError at the call otherwise) and return ``(input_grads,
variable_grads)`` with one gradient per variable (ValueError otherwise). Keyword arguments
reach ``f`` but get no gradient.

In a TF1 graph the call is one node that runs ``f`` and ``grad_fn`` on each run's values;
graph tensors and variables ``f`` captures from an enclosing scope are inputs of the node too
(``graph/core.record_function``), read in the run: a captured variable is one of the
``variables`` ``grad_fn`` must take (TypeError at graph construction otherwise, as TF); a
captured tensor gets no gradient.
"""

from __future__ import annotations

import functools
import inspect

from ..core import nest, registry, tape
from ..core.convert import convert_to_tensor
from ..core.tensor import Tensor, Variable, wrap

__all__ = ["custom_gradient"]


def _check(*arrays, **static):
    if len(static["outputs"]) == 0:
        raise ValueError("custom_gradient: f must return at least one Tensor, got none")


def _forward(k, xp, *arrays, outputs, grad_fn, n_args, variables):
    # fresh arrays: the outputs must be new nodes, whose only producer is this op
    return [xp.array(o, copy=True) for o in outputs], ()


def _backward(k, xp, residuals, *cots, outputs, grad_fn, n_args, variables):
    raw = not isinstance(cots[0], Tensor)
    dys = [wrap(c) if raw else c for c in cots]
    if variables:
        result = grad_fn(*dys, variables=list(variables))
        if not isinstance(result, (list, tuple)) or len(result) != 2:
            raise ValueError("custom_gradient: grad_fn must return (input_grads, "
                             "variable_grads) when f uses variables")
        input_grads, var_grads = result
        var_grads = list(var_grads)
        if len(var_grads) != len(variables):
            raise ValueError("Must return gradient for each variable from @custom_gradient "
                             "grad_fn.")
    else:
        input_grads, var_grads = grad_fn(*dys), []
    flat = nest.flatten(input_grads)
    if len(flat) != n_args:
        raise ValueError(f"custom_gradient function expected to return {n_args} gradients, "
                         f"but returned {len(flat)} instead.")
    grads = []
    for g in flat + var_grads:
        if g is None:
            grads.append(None)
            continue
        g = g if isinstance(g, Tensor) else convert_to_tensor(g)
        grads.append(g._value if raw else g)
    return grads


_op = registry.register("custom_gradient", args=("inputs...",), check=_check, forward=_forward,
                        backward=_backward, twice_differentiable=True)


def _accepts_variables(fn) -> bool:
    try:
        spec = inspect.getfullargspec(fn)
    except TypeError:
        return True
    return "variables" in spec.args or "variables" in spec.kwonlyargs or spec.varkw is not None


def _call(f, args, kwargs):
    flat_args = [a if isinstance(a, Tensor) else convert_to_tensor(a)
                 for a in nest.flatten(list(args))]
    args = nest.pack_sequence_as(list(args), flat_args) if flat_args else list(args)
    watcher = tape.GradientTape(watch_accessed_variables=True)  # sees the variables f reads
    with watcher:
        result, grad_fn = f(*args, **kwargs)
    arg_ids = {a._id for a in flat_args}
    variables = [v for v in watcher.watched_variables() if v._id not in arg_ids]
    if variables and not _accepts_variables(grad_fn):
        raise TypeError(f"@tf.custom_gradient grad_fn must accept keyword argument "
                        f"'variables', since function uses variables: {variables}")
    flat_out = [o if isinstance(o, Tensor) else convert_to_tensor(o)
                for o in nest.flatten(result)]
    outs = _op(*flat_args, *variables, outputs=tuple(o._value for o in flat_out),
               grad_fn=grad_fn, n_args=len(flat_args), variables=tuple(variables))
    return nest.pack_sequence_as(result, list(outs))


class _Decorated:
    """The decorated function; on a class, a method (``self`` is bound, not differentiated)."""

    def __init__(self, f):
        self._f = f
        functools.update_wrapper(self, f)

    def __call__(self, *args, **kwargs):
        leaves = nest.flatten([list(args), list(kwargs.values())])
        if any(not isinstance(x, (Tensor, Variable)) and type(x).__name__ == "GraphTensor"
               for x in leaves):
            return _graph_call(self._f, args, kwargs)
        return _call(self._f, args, kwargs)

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        return _Decorated(self._f.__get__(instance, owner))


def custom_gradient(f=None):
    """Decorator defining a function with a custom gradient (``tf.custom_gradient``)."""
    if f is None:
        return custom_gradient
    return _Decorated(f)


def _graph_call(f, args, kwargs):
    """One TF1 graph node that runs the decorated call on each run's values (on the run's
    tape, so the graph's gradients use ``grad_fn``)."""
    structure = []

    def flat_call(*a, **k):
        out = _call(f, a, k)
        structure[:] = [out]
        return list(nest.flatten(out))

    flat_call.__name__ = getattr(f, "__name__", "custom_gradient")
    try:
        node = registry.symbolic_call(flat_call, args, kwargs)
    except TypeError as e:
        if "symbolic graph tensor" not in str(e):
            raise
        raise TypeError(f"custom_gradient: in a TF1 graph, {flat_call.__name__} must compute "
                        f"its outputs from its arguments; pass the graph tensors and variables "
                        f"it reads as arguments ({e})") from e
    if node is NotImplemented:
        raise TypeError("custom_gradient: graph tensors of no graph being built")
    flat = node if isinstance(node, list) else [node]
    return nest.pack_sequence_as(structure[0], flat)
