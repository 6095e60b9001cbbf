"""``Session``: runs parts of a TF1 graph (``core.py``) by calling its ops eagerly.

``run(fetches, feed_dict)`` evaluates what the fetches need, each node once per run, in
dependency order (control inputs first), with the placeholders' values from ``feed_dict``.
The whole run records on one persistent GradientTape, so a ``gradients`` node (``tf.
gradients``, an optimizer's ``minimize``) differentiates the very forward values this run
computed: the numbers the eager tape gives, and a random op's draw shared by the forward and
backward of the run.
"""

from __future__ import annotations

import collections
import threading

import numpy as np

from ..core import nest
from ..core.tape import GradientTape
from ..core.tensor import Tensor, Variable
from ..errors import InvalidArgumentError
from .core import Graph, GraphTensor, Operation, eager_scope, get_default_graph, pushed

__all__ = ["InteractiveSession", "Session", "default_session"]

_local = threading.local()


def default_session():
    """The session of the innermost ``with session:`` / ``as_default()`` block, or the last
    InteractiveSession.

    Raises:
      ValueError: there is none (TF's message)."""
    stack = getattr(_local, "stack", None)
    if stack:
        return stack[-1]
    if _Interactive.current is not None:
        return _Interactive.current
    raise ValueError("Cannot evaluate tensor using `eval()`: No default session is registered. "
                     "Use `with sess.as_default()` or pass an explicit session to "
                     "`eval(session=sess)`")


class Session:
    """A TF1 session over ``graph`` (default: the default graph). ``target``, ``config``
    (``ConfigProto``), ``options`` and ``run_metadata`` are accepted and change nothing."""

    def __init__(self, target="", graph=None, config=None):
        self.graph = graph if graph is not None else get_default_graph()
        self._closed = False

    # ---- context ----------------------------------------------------------------------------
    def as_default(self):
        """Make this session the default session (``eval``/``run`` without one) inside the
        block."""
        return pushed(_local, self)

    def __enter__(self):
        self._default = pushed(_local, self)
        self._default.__enter__()
        return self

    def __exit__(self, *exc):
        self._default.__exit__(None, None, None)
        self.close()

    def close(self) -> None:
        self._closed = True

    # ---- run --------------------------------------------------------------------------------
    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """The values of ``fetches`` (a graph tensor, an operation, their names, eager
        tensors, or nested lists, tuples, namedtuples and dicts of them) in one run of the
        graph, with ``feed_dict`` giving placeholders (or any graph tensor) values.
        Operations fetch None.

        Raises:
          RuntimeError: the session is closed.
          InvalidArgumentError: a placeholder the fetches need is not fed.
          ValueError: a fetch of another graph, a fed value of the wrong shape.
          FailedPreconditionError: a variable read before its initializer ran.
        """
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        values = self._feeds(feed_dict or {})
        resolved = nest.map_structure(self._resolve, fetches)
        needs_tape = _needs_tape(nest.flatten(resolved) if not isinstance(resolved, (
            GraphTensor, Operation)) else [resolved])
        run = _Run(values, self.graph)
        with eager_scope():  # the graph runs: what its nodes call is computed, not recorded
            return self._evaluate(run, resolved, values, needs_tape)

    def _evaluate(self, run, resolved, values, needs_tape):
        if needs_tape:
            with GradientTape(persistent=True) as tape:
                for v in values.values():  # d/d(fed value): tf.gradients w.r.t. a placeholder
                    tape.watch(v)
                run.tape = tape
                out = nest.map_structure(run.fetch, resolved)
        else:
            out = nest.map_structure(run.fetch, resolved)
        return out

    def _resolve(self, fetch):
        if isinstance(fetch, str):
            return (self.graph.get_tensor_by_name(fetch) if ":" in fetch
                    else self.graph.get_operation_by_name(fetch))
        if isinstance(fetch, (GraphTensor, Operation)):
            if fetch.graph is not self.graph:
                raise ValueError(f"Tensor {fetch.name} is not an element of this graph.")
            return fetch
        if isinstance(fetch, (Tensor, np.ndarray, int, float, bool)) or fetch is None:
            return fetch
        if getattr(type(fetch), "_ipu_operation", False):  # an eager IPU op (feed initializer)
            return None
        raise TypeError(f"Fetch argument {fetch!r} has invalid type {type(fetch)}, must be a "
                        "string or Tensor. (Can not convert a "
                        f"{type(fetch).__name__} into a Tensor or Operation.)")

    def _feeds(self, feed_dict) -> dict:
        from ..core.convert import convert_to_tensor

        values = {}
        for key, value in feed_dict.items():
            t = self.graph.get_tensor_by_name(key) if isinstance(key, str) else key
            if not isinstance(t, GraphTensor):
                raise TypeError(f"Cannot interpret feed_dict key as Tensor: {key!r}")
            v = convert_to_tensor(np.asarray(value, dtype=t._dtype)
                                  if not isinstance(value, Tensor) else value)
            if not t.shape.is_compatible_with(list(v.shape)):
                raise ValueError(f"Cannot feed value of shape {tuple(v.shape)} for Tensor "
                                 f"{t.name}, which has shape {t.shape}")
            values[t] = v
        return values

    def partial_run(self, *args, **kwargs):
        raise NotImplementedError("Session.partial_run is not emulated: run the fetches "
                                  "together in one Session.run")


class InteractiveSession(Session):
    """A session that makes itself the default session on creation (``tf.
    InteractiveSession``)."""

    def __init__(self, target="", graph=None, config=None):
        super().__init__(target, graph, config)
        _Interactive.current = self

    def close(self) -> None:
        super().close()
        if _Interactive.current is self:
            _Interactive.current = None


class _Interactive:
    current = None




def _needs_tape(fetches) -> bool:
    """Whether the fetches depend on a gradients node (then the run records a tape)."""
    seen, todo = set(), [f.op if isinstance(f, GraphTensor) else f for f in fetches
                         if isinstance(f, (GraphTensor, Operation))]
    while todo:
        op = todo.pop()
        if id(op) in seen:
            continue
        seen.add(id(op))
        if getattr(op, "needs_tape", False):
            return True
        todo.extend(t.op for t in op.inputs)
        todo.extend(op.control_inputs)
    return False


class _Run:
    """One run: each operation computed once, its outputs by graph tensor."""

    def __init__(self, values: dict, graph: Graph, order: list | None = None):
        self.values = dict(values)
        self.done = set()
        self.graph = graph
        self.tape = None
        self.order = order  # when a list, the operations computed are appended in order

    def value(self, t: GraphTensor):
        """The raw value (a Tensor, a Variable) of ``t`` in this run."""
        if t not in self.values:
            self.compute(t.op)
        return self.values[t]

    def fetch(self, f):
        if isinstance(f, Operation):
            self.compute(f)
            return None
        if isinstance(f, GraphTensor):
            if f not in self.values:
                self.compute(f.op)
            return _numpy(self.values[f])
        if isinstance(f, Tensor):
            return _numpy(f.read_value() if isinstance(f, Variable) else f)
        return f

    def compute(self, op: Operation) -> None:
        # iterative depth-first order: deep graphs (long loops of ops) need no recursion
        stack = [(op, False)]
        while stack:
            node, expanded = stack.pop()
            if id(node) in self.done:
                continue
            if all(t in self.values for t in node.outputs) and node.outputs:
                self.done.add(id(node))
                continue
            deps = [t.op for t in node.inputs if t not in self.values] + node.control_inputs
            deps = [d for d in deps if id(d) not in self.done]
            if deps and not expanded:
                stack.append((node, True))
                stack.extend((d, False) for d in reversed(deps))
                continue
            outs = node.compute(_RunValues(self))
            for t, v in zip(node.outputs, outs):
                self.values[t] = v
            self.done.add(id(node))
            if self.order is not None:
                self.order.append(node)

    def replay(self, order) -> None:
        """Compute ``order``'s operations one after the other: the order an earlier ``compute``
        recorded from values with the same graph tensors present (the depth-first walk then
        visits the same operations), without walking the graph again."""
        values, view = self.values, _RunValues(self)
        for node in order:
            outs = node.compute(view)
            for t, v in zip(node.outputs, outs):
                values[t] = v


class _RunValues(collections.abc.Mapping):
    """The values a node's compute reads: graph tensors of the run, and the run itself
    (``run``: gradients nodes use its tape)."""

    def __init__(self, run):
        self.run = run

    def __getitem__(self, t):
        try:
            return self.run.values[t]
        except KeyError:
            placeholder = getattr(t.op, "placeholder", False)
            if placeholder:
                raise InvalidArgumentError(
                    f"You must feed a value for placeholder tensor '{t.op.name}' with dtype "
                    f"{t.dtype.name} and shape {t.shape}") from None
            raise

    def __iter__(self):
        return iter(self.run.values)

    def __len__(self):
        return len(self.run.values)


def _numpy(v):
    if isinstance(v, Tensor):
        a = v.numpy()
        return a[()] if a.ndim == 0 else a  # a scalar fetches as a numpy scalar, as in TF
    if isinstance(v, list):
        return [_numpy(x) for x in v]
    return v
