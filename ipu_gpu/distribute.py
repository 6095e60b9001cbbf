"""``tf.distribute``: strategies, replica contexts and all-reduce, as IPU programs see them.

The model is TensorFlow's: each thread has a stack of strategy scopes. Outside any scope the
*default strategy* is current and code runs in its *default replica context*
(``replica_id_in_sync_group`` 0, ``num_replicas_in_sync`` 1, ``in_cross_replica_context()``
False). ``Strategy.scope()`` enters the cross-replica context (``get_replica_context()`` is
None); ``Strategy.run(fn)`` calls ``fn`` in a replica context.

Inside an emulated IPU program (``ipu_compiler.compile``, ``loops``: ``emulation.context``
is not None) a replica context's ``all_reduce`` is a cross-replica collective over the
program's replicas (``ops.collectives``: SUM is ``cross_replica_sum``, MEAN
``cross_replica_mean``, reduced in replica order), while ``replica_id_in_sync_group`` stays 0
and ``num_replicas_in_sync`` 1. That is what Graphcore's ``IPUStrategy`` does (its
``_call_for_each_replica`` enters ``ReplicaContext(strategy, replica_id_in_sync_group=0)`` and
its ``_reduce_to`` calls ``cross_replica_sum``/``cross_replica_mean`` on the IPU): to
TensorFlow the whole replicated program is one replica, and the IPU replicas are below it.
Use ``ipu.replication_ops.replication_index()`` and the IPUConfig's replica count for the
replica's own index and the count, as IPU programs do. In host code (and in
``outside_compilation``) all_reduce is the identity, as on one replica.

Threads: the scope stack is per thread, as in TensorFlow (a thread started inside a scope
does not see it). A strategy whose replicas run on other threads (an ``IPUStrategy`` running
its program on the emulated IPUs' worker threads) enters its scope and its replica context
in each of them: override ``StrategyExtended._call_for_each_replica``; ``scope()`` and
``ReplicaContext`` are context managers usable on any thread.
"""

from __future__ import annotations

import contextlib
import enum
import sys
import threading

from .core import nest
from .core.convert import constant, convert_to_tensor
from .emulation import context as _context
from .emulation import placement as _placement

__all__ = ["InputContext", "ReduceOp", "ReplicaContext", "Strategy", "StrategyExtended",
           "experimental_set_strategy", "get_replica_context", "get_strategy", "has_strategy",
           "in_cross_replica_context"]


class ReduceOp(enum.Enum):
    """How values of different replicas are combined (``SUM`` or ``MEAN``)."""

    SUM = "SUM"
    MEAN = "MEAN"

    @staticmethod
    def from_variable_aggregation(aggregation) -> ReduceOp:
        """The ReduceOp of a ``tf.VariableAggregation`` (SUM or MEAN)."""
        name = getattr(aggregation, "name", aggregation)
        try:
            return ReduceOp(str(name).upper())
        except ValueError:
            raise ValueError(f"Could not convert from `tf.VariableAggregation` "
                             f"{aggregation} to`tf.distribute.ReduceOp` type") from None


def _reduce_op(reduce_op) -> ReduceOp:
    if isinstance(reduce_op, ReduceOp):
        return reduce_op
    if isinstance(reduce_op, str):
        return ReduceOp(reduce_op.upper())
    return ReduceOp(reduce_op)


class InputContext:
    """Where an input pipeline runs: ``num_input_pipelines``, ``input_pipeline_id`` and
    ``num_replicas_in_sync``, given to ``distribute_datasets_from_function``'s function."""

    def __init__(self, num_input_pipelines=1, input_pipeline_id=0, num_replicas_in_sync=1):
        """Initializes an InputContext object.

        Args:
          num_input_pipelines: the number of input pipelines in a cluster.
          input_pipeline_id: the current input pipeline id, should be an int in
            [0,`num_input_pipelines`).
          num_replicas_in_sync: the number of replicas that are in sync.
        """
        self._num_input_pipelines = num_input_pipelines
        self._input_pipeline_id = input_pipeline_id
        self._num_replicas_in_sync = num_replicas_in_sync

    @property
    def num_replicas_in_sync(self):
        """Returns the number of compute replicas in sync."""
        return self._num_replicas_in_sync

    @property
    def input_pipeline_id(self):
        """Returns the input pipeline ID."""
        return self._input_pipeline_id

    @property
    def num_input_pipelines(self):
        """Returns the number of input pipelines."""
        return self._num_input_pipelines

    def get_per_replica_batch_size(self, global_batch_size):
        """Returns the per-replica batch size.

        Raises:
          ValueError: if ``global_batch_size`` is not divisible by ``num_replicas_in_sync``.
        """
        if global_batch_size % self._num_replicas_in_sync != 0:
            raise ValueError(f"The `global_batch_size` {global_batch_size} is not divisible by "
                             f"`num_replicas_in_sync` {self._num_replicas_in_sync} ")
        return global_batch_size // self._num_replicas_in_sync

    def __str__(self) -> str:
        return (f"tf.distribute.InputContext(input pipeline id {self._input_pipeline_id}, "
                f"total: {self._num_input_pipelines})")


# ---- the per-thread stack ----------------------------------------------------------------


class _Local(threading.local):
    def __init__(self):
        # (strategy, replica context or None for cross-replica); the bottom is the default
        self.stack: list = []
        self.set_strategy = None  # the scope experimental_set_strategy entered


_LOCAL = _Local()


def _top():
    stack = _LOCAL.stack
    return stack[-1] if stack else (_DEFAULT_STRATEGY, _DEFAULT_REPLICA_CONTEXT)


@contextlib.contextmanager
def _entered(strategy, replica_context):
    stack = _LOCAL.stack
    stack.append((strategy, replica_context))
    depth = len(stack)
    try:
        yield
    finally:
        del stack[depth - 1:]


def as_tensor(value):
    """``value`` as a tensor: eager and graph tensors as they are, a list holding graph
    tensors stacked, anything else converted (``convert_to_tensor``)."""
    from .core.tensor import Tensor
    from .graph.core import GraphTensor

    if isinstance(value, (Tensor, GraphTensor)):
        return value
    if isinstance(value, (list, tuple)) and any(isinstance(v, GraphTensor)
                                                for v in nest.flatten(list(value))):
        from .ops.shape import stack

        return stack([as_tensor(v) for v in value])
    return convert_to_tensor(value)


def _on_ipu() -> bool:
    """Running in an emulated IPU program, or building a TF1 graph (whose collective nodes
    reduce over the replicas where an IPU program runs them and are the identity on the
    host), not in an outside-compilation scope."""
    if _placement.current().outside_compilation is not None:
        return False
    if _context.current() is not None:
        return True
    graph = sys.modules.get("ipu_gpu.graph")
    return graph is not None and graph.core.building()


# ---- strategies --------------------------------------------------------------------------


class StrategyExtended:
    """What a strategy does, for strategy implementers (``strategy.extended``). The base
    class is one replica on this thread; all-reduce is the identity on the host and a
    cross-replica collective inside an emulated IPU program (module docstring)."""

    def __init__(self, container_strategy):
        self._container_strategy_ref = container_strategy

    def _container_strategy(self):
        return self._container_strategy_ref

    @property
    def _num_replicas_in_sync(self) -> int:
        return 1

    def _call_for_each_replica(self, fn, args, kwargs):
        with ReplicaContext(self._container_strategy(), replica_id_in_sync_group=0):
            return fn(*args, **kwargs)

    def _reduce_to(self, reduce_op: ReduceOp, value):
        """Reduce one Tensor over the replicas (Graphcore's IPUExtendedV1._reduce_to: the
        collectives on the IPU, the value itself elsewhere)."""
        if not _on_ipu():
            return value
        from .ops import collectives  # the ops layer registers them; loaded with ipu_gpu

        if reduce_op is ReduceOp.MEAN:
            return collectives.cross_replica_mean(value)
        return collectives.cross_replica_sum(value)

    @property
    def worker_devices(self) -> tuple:
        return ("/job:localhost/replica:0/task:0/device:CPU:0",)

    @property
    def parameter_devices(self) -> tuple:
        return self.worker_devices

    def value_container(self, value):
        return value


class Strategy:
    """A state and compute distribution policy on a list of devices
    (``tf.distribute.Strategy``). ``get_strategy()`` returns the default one outside any
    ``scope()``."""

    def __init__(self, extended: StrategyExtended):
        self._extended = extended

    @property
    def extended(self) -> StrategyExtended:
        return self._extended

    @property
    def num_replicas_in_sync(self) -> int:
        """Returns number of replicas over which gradients are aggregated."""
        return self._extended._num_replicas_in_sync

    def scope(self):
        """Context manager to make the strategy current and distribute variables created in
        it. Entering another strategy's scope inside it raises RuntimeError ("Mixing
        different tf.distribute.Strategy objects")."""
        current = get_strategy()
        if current is not self and current is not _DEFAULT_STRATEGY and self is not \
                _DEFAULT_STRATEGY:
            raise RuntimeError(f"Mixing different tf.distribute.Strategy objects: {self} is "
                               f"not {current}")
        if self is _DEFAULT_STRATEGY:
            return contextlib.nullcontext()
        return _entered(self, None)

    def run(self, fn, args=(), kwargs=None, options=None):
        """Invokes ``fn`` on each replica, with the given arguments, in a replica context;
        returns its result."""
        with self.scope():
            return self._extended._call_for_each_replica(fn, tuple(args), dict(kwargs or {}))

    def reduce(self, reduce_op, value, axis):
        """Reduce ``value`` across replicas and, with ``axis``, along that axis of the
        result (SUM: ``reduce_sum``, MEAN: ``reduce_mean``). With one replica and
        ``axis=None`` the value comes back unchanged."""
        op = _reduce_op(reduce_op)
        if axis is None:
            return value
        from .ops import reduction

        fn = reduction.reduce_sum if op is ReduceOp.SUM else reduction.reduce_mean
        return nest.map_structure(lambda v: fn(convert_to_tensor(v), axis=axis), value)

    def experimental_distribute_dataset(self, dataset, options=None):
        """The dataset to iterate in ``run`` (one replica: the dataset itself)."""
        return dataset

    def distribute_datasets_from_function(self, dataset_fn, options=None):
        """``dataset_fn(InputContext)`` with this strategy's pipeline and replica counts."""
        return dataset_fn(InputContext(1, 0, self.num_replicas_in_sync))

    experimental_distribute_datasets_from_function = distribute_datasets_from_function

    def experimental_local_results(self, value) -> tuple:
        """The values of the replicas on this worker: ``(value,)`` for one replica."""
        return (value,)

    def __repr__(self) -> str:
        return f"<ipu_gpu.distribute.{type(self).__name__} object at {id(self):#x}>"


class ReplicaContext:
    """The ``tf.distribute.Strategy`` API in a replica (``get_replica_context()``); a context
    manager that makes itself current on the thread that enters it."""

    def __init__(self, strategy, replica_id_in_sync_group=0):
        self._strategy = strategy
        self._replica_id_in_sync_group = replica_id_in_sync_group
        self._entered: list = []

    def __enter__(self):
        cm = _entered(self._strategy, self)
        cm.__enter__()
        self._entered.append(cm)
        return self

    def __exit__(self, *exc):
        return self._entered.pop().__exit__(*exc)

    @property
    def strategy(self):
        return self._strategy

    @property
    def num_replicas_in_sync(self) -> int:
        """Returns number of replicas that are kept in sync."""
        return self._strategy.num_replicas_in_sync

    @property
    def replica_id_in_sync_group(self):
        """The replica's index among the replicas kept in sync: an int32 Tensor (0 under
        an IPU strategy: the IPU replicas are one TensorFlow replica)."""
        rid = self._replica_id_in_sync_group
        if isinstance(rid, int):
            return constant(rid, dtype="int32")
        return rid

    def all_reduce(self, reduce_op, value, options=None):
        """All-reduces ``value`` (a Tensor or a nested structure of them) across replicas:
        the identity on one replica, the cross-replica collective inside an emulated IPU
        program.

        Args:
          reduce_op: a ``ReduceOp`` or its name ("SUM", "MEAN", any case).
          value: the values to reduce.
          options: accepted (``tf.distribute.experimental.CommunicationOptions``).

        Returns:
          The reduced values in the structure of ``value``.

        Raises:
          ValueError: an unknown ``reduce_op`` ("'MAX' is not a valid ReduceOp").
        """
        op = _reduce_op(reduce_op)
        extended = self._strategy.extended

        def reduce_leaf(v):
            if v is None:
                raise ValueError(f"Attempt to convert a value ({v!r}) with an unsupported type "
                                 f"({type(v)}) to a Tensor.")
            return extended._reduce_to(op, as_tensor(v))

        return nest.map_structure(reduce_leaf, value)

    def merge_call(self, merge_fn, args=(), kwargs=None):
        """Calls ``merge_fn(strategy, *args, **kwargs)`` in the cross-replica context."""
        with _entered(self._strategy, None):
            return merge_fn(self._strategy, *args, **(kwargs or {}))

    def __repr__(self) -> str:
        return f"<ipu_gpu.distribute.{type(self).__name__} object at {id(self):#x}>"


class _DefaultReplicaContext(ReplicaContext):
    """The replica context outside any strategy: replica 0 of 1 (a Python int, as TF)."""

    @property
    def replica_id_in_sync_group(self) -> int:
        return 0


class _DefaultDistributionStrategy(Strategy):
    """The strategy current outside any ``scope()``: one replica, no distribution."""


_DEFAULT_STRATEGY = _DefaultDistributionStrategy.__new__(_DefaultDistributionStrategy)
Strategy.__init__(_DEFAULT_STRATEGY, StrategyExtended(_DEFAULT_STRATEGY))
_DEFAULT_REPLICA_CONTEXT = _DefaultReplicaContext(_DEFAULT_STRATEGY, 0)


# ---- the module functions ----------------------------------------------------------------


def get_strategy() -> Strategy:
    """Returns the current ``tf.distribute.Strategy`` object (the default strategy outside
    any ``scope()``)."""
    return _top()[0]


def has_strategy() -> bool:
    """Return if there is a current non-default ``tf.distribute.Strategy``."""
    return get_strategy() is not _DEFAULT_STRATEGY


def in_cross_replica_context() -> bool:
    """Returns True if in a cross-replica context (inside ``strategy.scope()``, outside
    ``strategy.run``)."""
    return _top()[1] is None


def get_replica_context():
    """Returns the current ``tf.distribute.ReplicaContext`` or None (in a cross-replica
    context). Outside any strategy: the default replica context (replica 0 of 1)."""
    return _top()[1]


def experimental_set_strategy(strategy) -> None:
    """Set a ``tf.distribute.Strategy`` as current without ``with strategy.scope()`` (None
    returns to the default strategy)."""
    old = _LOCAL.set_strategy
    if old is not None:
        old.__exit__(None, None, None)
        _LOCAL.set_strategy = None
    if strategy is not None:
        cm = strategy.scope()
        cm.__enter__()
        _LOCAL.set_strategy = cm


from .one_device_strategy import OneDeviceStrategy  # noqa: E402  # issue 17

__all__ += ["OneDeviceStrategy"]
