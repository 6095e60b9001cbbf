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
from ..emulation import engine
from ..emulation import observe as _observe
from ..errors import InvalidArgumentError
from .core import Graph, GraphTensor, Operation, eager_scope, get_default_graph, pushed
from .plan import Plan

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
        self._partial_runs: dict[str, _PartialRun] = {}
        self._partial_counter = 0
        self._plans: dict = {}  # fetch signature -> (needs a tape, a Plan per fetch)

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
        flat = nest.flatten(resolved)
        key = _plan_key(flat, values, self.graph)
        cached = self._plans.get(key) if key is not None else None
        needs_tape = (cached[0] if cached is not None else _needs_tape(flat))
        run = _Run(values, self.graph)
        with eager_scope():  # the graph runs: what its nodes call is computed, not recorded
            if needs_tape:
                with GradientTape(persistent=True) as tape:
                    for v in values.values():  # d/d(fed value): tf.gradients w.r.t. a fed
                        tape.watch(v)          # placeholder
                    run.tape = tape
                    out = self._fetch_all(run, flat, key, cached, needs_tape)
            else:
                out = self._fetch_all(run, flat, key, cached, needs_tape)
        if _observe.observer is not None:  # ipu-gpu run --report
            _observe.observer.fetched(flat, out)
        return nest.pack_sequence_as(resolved, out)

    def _fetch_all(self, run, flat, key, cached, needs_tape) -> list:
        """The fetches' values, each fetch's operations computed before it is read (a fetch
        read before a later fetch's update sees the value before it): by the cached plans
        of this fetch signature, else by walking the graph, recording the plans."""
        if cached is not None:
            if needs_tape and cached[2] is not None:
                run.replay = _feed_replay_key(cached[2], run.values)
            out = []
            for plan, f in zip(cached[1], flat):
                plan.run(run)
                out.append(run.fetched(f))
            return out
        if key is None:
            return [run.fetch(f) for f in flat]
        plans, out = [], []
        for f in flat:
            run.order = []
            out.append(run.fetch(f))
            plans.append(Plan(run.order))
        if len(self._plans) >= _MAX_PLANS:
            self._plans.clear()
        self._plans[key] = (needs_tape, plans, _replay_token(plans))
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

    # ---- partial runs -----------------------------------------------------------------------
    def partial_run_setup(self, fetches, feeds=None):
        """Set up a partial run (TF 1.x's experimental API): ``fetches`` (as ``run`` takes
        them; operations among them are targets, run as soon as the feeds they need have been
        fed) and ``feeds`` (a graph tensor, a tensor name, or a list of them) are every value
        the later ``partial_run`` calls may fetch and feed.

        Returns:
          A handle (a string) for ``partial_run``.

        Raises:
          RuntimeError: the session is closed, or its graph is empty.
          TypeError, ValueError: a feed is not a tensor of this graph ("Cannot interpret
            feed_list key as Tensor: ...").
          InvalidArgumentError: a tensor both fed and fetched.
        """
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        if not self.graph._ops:
            raise RuntimeError("The Session graph is empty. Add operations to the graph "
                               "before calling run().")
        feeds = [] if feeds is None else feeds
        feed_list = list(dict.fromkeys(
            self._feed_key(f) for f in (feeds if isinstance(feeds, (list, tuple)) else [feeds])))
        tensors, targets = _split_fetches(nest.map_structure(self._resolve, fetches))
        fed = set(feed_list)
        for t in tensors:
            if t in fed:
                raise InvalidArgumentError(f"{t.name} is both fed and fetched.")
        handle = (f"{','.join(t.name for t in feed_list)}->{','.join(t.name for t in tensors)}"
                  f"/{','.join(op.name for op in targets)}/1/;{self._partial_counter}")
        self._partial_counter += 1
        state = _PartialRun(self.graph, feed_list, tensors, targets)
        self._partial_runs[handle] = state
        with eager_scope():
            self._partial_step(handle, state, lambda: None)
        return handle

    def partial_run(self, handle, fetches, feed_dict=None):
        """Continue the partial run ``handle``: feed ``feed_dict`` and return the values of
        ``fetches``, which may be computed from everything fed so far in this partial run.
        Each node is computed once per partial run (values persist between the calls); the
        partial run ends when every declared feed has been fed and every declared fetch
        fetched, or when a node fails.

        Raises:
          RuntimeError: the session is closed; an operation among ``fetches``
            ("partial_run() requires empty target_list.").
          ValueError: a fed value of the wrong shape.
          InvalidArgumentError: an unknown or finished handle ("Must run 'setup' before
            performing partial runs!"), a feed or fetch not declared in
            ``partial_run_setup`` or already fed or fetched, a fetch that needs a declared
            feed not fed yet, a placeholder neither declared nor fed.
        """
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        values = self._feeds(feed_dict or {})
        resolved = nest.map_structure(self._resolve, fetches)
        tensors, targets = _split_fetches(resolved)
        if targets:
            raise RuntimeError("partial_run() requires empty target_list.")
        state = self._partial_runs.get(handle) if isinstance(handle, str) else None
        if state is None:
            raise InvalidArgumentError("Must run 'setup' before performing partial runs!")
        for t in values:
            if t not in state.fed:
                raise InvalidArgumentError(f"The feed {t.name} was not specified in "
                                           "partial_run_setup.")
            if state.fed[t]:
                raise InvalidArgumentError(f"The feed {t.name} has already been fed.")
        for t in tensors:
            if t not in state.fetched:
                raise InvalidArgumentError(f"The fetch {t.name} was not specified in "
                                           "partial_run_setup.")
            if state.fetched[t]:
                raise InvalidArgumentError(f"The fetch {t.name} has already been fetched.")
        pending = {t for t, done in state.fed.items() if not done and t not in values}
        missing = _pending_input(tensors, pending)
        if missing is not None:
            raise InvalidArgumentError(f"Fetch {missing.name} can't be computed from the feeds "
                                       "that have been fed so far.")

        def step():
            state.run.values.update(values)
            if state.tape is not None:
                for v in values.values():
                    state.tape.watch(v)
            for t in values:
                state.fed[t] = True
            return nest.map_structure(state.run.fetch, resolved)
        with eager_scope():
            out = self._partial_step(handle, state, step)
        for t in tensors:
            state.fetched[t] = True
        if all(state.fed.values()) and all(state.fetched.values()):
            del self._partial_runs[handle]
        return out

    def _partial_step(self, handle, state, step):
        """``step()``, then the targets the feeds now allow, on the partial run's tape; a
        failure ends the partial run (TF forgets the handle)."""
        try:
            if state.tape is None:
                out = step()
                state.run_ready_targets()
            else:
                with state.tape:
                    out = step()
                    state.run_ready_targets()
        except BaseException:
            self._partial_runs.pop(handle, None)
            raise
        return out

    def _feed_key(self, feed) -> GraphTensor:
        """A ``partial_run_setup`` feed as a graph tensor of this graph (TF's errors)."""
        prefix = "Cannot interpret feed_list key as Tensor: "
        if isinstance(feed, str):
            if ":" not in feed and feed in self.graph._by_name:
                raise ValueError(f"{prefix}The name '{feed}' refers to an Operation, not a "
                                 "Tensor. Tensor names must be of the form "
                                 "\"<op_name>:<output_index>\".")
            try:
                return self.graph.get_tensor_by_name(feed)
            except (KeyError, ValueError) as e:
                raise type(e)(prefix + str(e.args[0])) from None
        if isinstance(feed, GraphTensor):
            if feed.graph is not self.graph:
                raise ValueError(f"{prefix}Tensor {feed.name} is not an element of this "
                                 "graph.")
            return feed
        kind = "Operation" if isinstance(feed, Operation) else type(feed).__name__
        raise TypeError(f"{prefix}Can not convert a {kind} into a Tensor.")


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




def _split_fetches(resolved) -> tuple[list, list]:
    """(the distinct graph tensors, the distinct operations) among resolved fetches."""
    flat = [resolved] if isinstance(resolved, (GraphTensor, Operation)) else nest.flatten(
        resolved)
    tensors = [f for f in flat if isinstance(f, GraphTensor)]
    ops = [f for f in flat if isinstance(f, Operation)]
    return list(dict.fromkeys(tensors)), list(dict.fromkeys(ops))


def _pending_input(roots, pending: set):
    """The first tensor of ``pending`` among the inputs of ``roots`` (graph tensors or
    operations) and of their ancestors, in TF's order (``DirectSession::CheckFetch``: a
    depth-first walk over every ancestor, not stopping at fed tensors), or None."""
    if not pending:
        return None
    stack = [r.op if isinstance(r, GraphTensor) else r for r in roots]
    visited = {id(op) for op in stack}
    while stack:
        op = stack.pop()
        for t in op.inputs:
            if t in pending:
                return t
            if id(t.op) not in visited:
                visited.add(id(t.op))
                stack.append(t.op)
        for dep in op.control_inputs:
            if id(dep) not in visited:
                visited.add(id(dep))
                stack.append(dep)
    return None


class _PartialRun:
    """The state of one partial run: one ``_Run`` (so each node is computed once across the
    calls), which declared feeds have been fed and declared fetches fetched, the targets not
    run yet, and the run's tape when something in it differentiates."""

    def __init__(self, graph, feeds: list, fetches: list, targets: list):
        self.run = _Run({}, graph)
        self.fed = dict.fromkeys(feeds, False)
        self.fetched = dict.fromkeys(fetches, False)
        self.targets = list(targets)
        self.tape = (GradientTape(persistent=True) if _needs_tape([*fetches, *targets])
                     else None)
        self.run.tape = self.tape

    def run_ready_targets(self) -> None:
        """Run the targets that need no declared feed still unfed (TF's executor runs a node
        as soon as its inputs are available)."""
        pending = {t for t, done in self.fed.items() if not done}
        for op in list(self.targets):
            if _pending_input([op], pending) is None:
                self.run.compute(op)
                self.targets.remove(op)


_MAX_PLANS = 64  # fetch signatures a session keeps plans for


def _plan_key(flat, values, graph):
    """The signature a run's plans are cached under: the fetches, the fed tensors and the
    graph's size (operations are only ever added: a larger graph may have new control
    dependencies); None when a fetch is not a graph tensor or operation."""
    for f in flat:
        if not isinstance(f, (GraphTensor, Operation)):
            return None
    return (tuple(flat), frozenset(values), len(graph._ops))


def _replay_token(plans: list):
    """An object naming this fetch signature's plans when their replay, on a fresh tape,
    records the same ops wired the same way up to the last gradients node (``Plan.
    tape_stable`` for its plan, ``records_fixed`` for the plans before it); else None."""
    last = max((j for j, p in enumerate(plans) if p.gradients), default=-1)
    if last < 0 or not plans[last].tape_stable:
        return None
    if not all(p.records_fixed for p in plans[:last]):
        return None
    return plans[0]


def _feed_replay_key(token, values: dict):
    """The replay key (``backward.gradient``) of a run of the plans named ``token`` fed
    ``values``: the token and each fed tensor's dtype, when the fed values are distinct
    plain Tensors (the run's tape watches each; which are the same object, or a variable,
    changes the records); else None."""
    fed = list(values.values())
    if len({id(v) for v in fed}) != len(fed):
        return None
    for v in fed:
        if type(v) is not Tensor:
            return None
    return token, tuple([(t, v._value.dtype) for t, v in values.items()])


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

    __slots__ = ("values", "done", "graph", "tape", "order", "replay")

    def __init__(self, values: dict, graph: Graph, order: list | None = None,
                 copy: bool = True):
        self.values = dict(values) if copy else values
        self.done = set()
        self.graph = graph
        self.tape = None
        self.order = order  # when a list, the operations computed are appended in order
        # the replay key of the plans replayed on this run's fresh tape (program._replay_key,
        # _feed_replay_key): a gradients node's backward plan is then found without the
        # tape's signature
        self.replay = None

    def value(self, t: GraphTensor):
        """The raw value (a Tensor, a Variable) of ``t`` in this run."""
        if t not in self.values:
            self.compute(t.op)
        return self.values[t]

    def fetched(self, f):
        """The value of the fetch ``f`` (a graph tensor or operation) once computed."""
        if isinstance(f, Operation):
            return None
        return _numpy(self.values[f])

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
            shard = getattr(node, "shard", None)
            if shard is None:
                outs = node.compute(_RunValues(self))
            else:  # built under ipu_shard: its tensors go to that IPU (as the plans run it)
                with engine.on_shard(shard):
                    outs = node.compute(_RunValues(self))
            for t, v in zip(node.outputs, outs):
                self.values[t] = v
            self.done.add(id(node))
            if self.order is not None:
                self.order.append(node)



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
        a = v.numpy()  # a scalar string gives its bytes
        return a[()] if type(a) is np.ndarray and a.ndim == 0 else a  # a numpy scalar, as TF
    if isinstance(v, list):
        return [_numpy(x) for x in v]
    return v
