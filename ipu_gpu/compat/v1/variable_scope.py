"""TF1's ``variable_scope`` / ``get_variable``, the ``*_initializer`` factories and the
``tf.layers`` functions built on them (``dense``, ``flatten``, ``dropout``).

``get_variable(name)`` finds or makes the variable ``<scope>/<name>`` of the default graph
(``tf.compat.v1.Variable``: a graph variable in graph mode); eagerly (TF 2) that of the
current ``EagerVariableStore``, or a new variable outside every store, as TF 2. Reuse follows
TF: making a
variable that exists raises ValueError unless the scope reuses (``reuse=True`` or
``AUTO_REUSE``), and ``reuse=True`` for one that does not exist raises ValueError. Without an
initializer a float variable starts from ``glorot_uniform_initializer()``, an integer one
from zeros, as in TF. In a graph an initializer is a node run by the variable's initializer,
so each run of ``global_variables_initializer()`` draws new values, as in TF; a ``regularizer``
(here or the scope's) adds ``regularizer(variable)`` to REGULARIZATION_LOSSES when the
variable is made. Custom getters follow TF's
protocol and compose across nested scopes; a partitioner makes a ``PartitionedVariable``
(``partitioned_variables.py``).
"""

from __future__ import annotations

import collections.abc
import contextlib
import copy
import functools
import inspect
import threading

import numpy as np

from ...core import dtypes
from ...core.spec import TensorShape

__all__ = ["AUTO_REUSE", "EagerVariableStore", "constant_initializer", "dense", "dropout",
           "flatten", "get_local_variable", "get_variable", "get_variable_scope",
           "glorot_normal_initializer",
           "glorot_uniform_initializer", "ones_initializer", "random_normal_initializer",
           "random_uniform_initializer", "truncated_normal_initializer",
           "variable_scope", "variance_scaling_initializer", "zeros_initializer"]


class _AutoReuse:
    def __repr__(self) -> str:
        return "AUTO_REUSE"


AUTO_REUSE = _AutoReuse()

_local = threading.local()


class VariableScope:
    """One level of variable scope: its full name, reuse, default initializer and dtype,
    partitioner and custom getter."""

    def __init__(self, name: str, reuse=None, initializer=None, dtype=None, partitioner=None,
                 custom_getter=None, regularizer=None):
        self.name = name
        self.regularizer = regularizer
        self.reuse = reuse
        self.initializer = initializer
        self.dtype = dtype
        self.partitioner = partitioner
        self.custom_getter = custom_getter

    @property
    def original_name_scope(self) -> str:
        return self.name + "/" if self.name else ""

    def reuse_variables(self) -> None:
        self.reuse = True

    def set_partitioner(self, partitioner) -> None:
        self.partitioner = partitioner

    def set_custom_getter(self, custom_getter) -> None:
        self.custom_getter = custom_getter


def _stack() -> list:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = [VariableScope("")]
    return stack


def get_variable_scope() -> VariableScope:
    """The current variable scope."""
    return _stack()[-1]


@contextlib.contextmanager
def variable_scope(name_or_scope=None, default_name=None, values=None, initializer=None,
                   regularizer=None, caching_device=None, partitioner=None,
                   custom_getter=None, reuse=None, dtype=None, use_resource=None,
                   constraint=None, auxiliary_name_scope=True):
    """A scope for ``get_variable`` names (``outer/inner/var``), reuse and default
    initializer; reuse is inherited (once True, inner scopes reuse too).

    ``partitioner`` becomes the default of ``get_variable`` in the scope and inner scopes.
    ``custom_getter(getter, name, *args, **kwargs)`` is called by ``get_variable`` with the
    getter it stands in front of: a custom getter of an enclosing scope (scopes' getters
    compose, the innermost called first) or the true getter.

    Raises:
      ValueError: neither ``name_or_scope`` nor ``default_name``."""
    outer = get_variable_scope()
    local = None
    if isinstance(name_or_scope, VariableScope):
        full = name_or_scope.name
        base = name_or_scope
    else:
        if name_or_scope is None and default_name is None:
            raise ValueError("If default_name is None then scope (name_or_scope) must be "
                             "specified.")
        local = name_or_scope if name_or_scope is not None else _unique(outer, default_name)
        full = f"{outer.name}/{local}" if outer.name else local
        base = outer
    inherited = outer.reuse if outer.reuse in (True, AUTO_REUSE) else None
    getter = base.custom_getter
    if custom_getter is not None:
        getter = _wrap_custom_getter(custom_getter, getter)
    scope = VariableScope(full, reuse if reuse is not None else inherited,
                          initializer if initializer is not None else outer.initializer,
                          dtype if dtype is not None else outer.dtype,
                          partitioner if partitioner is not None else base.partitioner,
                          getter, regularizer if regularizer is not None else base.regularizer)
    _stack().append(scope)
    # the ops made in the scope are named <scope>/... too (TF's auxiliary name scope)
    op_scope = local if auxiliary_name_scope and not isinstance(
        name_or_scope, VariableScope) else None
    try:
        with _graph_name_scope(op_scope):
            yield scope
    finally:
        _stack().pop()


def _graph_name_scope(name):
    from ... import graph

    return graph.get_default_graph().name_scope(name) if name else contextlib.nullcontext()


def _wrap_custom_getter(custom_getter, outer_getter):
    """``custom_getter`` in front of ``outer_getter`` (TF's composition: the new getter's
    ``getter`` argument calls the outer one, whose ``getter`` is the true getter)."""
    if outer_getter is None:
        return custom_getter

    def wrapped(getter, *args, **kwargs):
        return custom_getter(functools.partial(outer_getter, getter), *args, **kwargs)
    return wrapped


def _unique(outer: VariableScope, base: str) -> str:
    counts = _store("_default_scope_names")  # per graph, as TF's name scopes are
    key = (outer.name, base)
    n = counts.get(key, 0)
    counts[key] = n + 1
    return base if n == 0 else f"{base}_{n}"


class EagerVariableStore:
    """TF's ``EagerVariableStore``: eagerly (TF 2, outside a graph) ``get_variable`` shares
    variables by name only inside ``as_default()`` of a store, where it returns the store's
    variable of that name or makes it (reuse is ``AUTO_REUSE`` eagerly, as in TF); outside
    every store each call makes a new variable. A ``make_template`` template, a ``tf.layers``
    layer object and each ``tf.function`` hold one (the function's stands for TF's single
    trace: the variables its first call makes are those of later calls)."""

    def __init__(self):
        self._kinds: dict = {}

    def _kind(self, kind: str) -> dict:
        return self._kinds.setdefault(kind, {})

    @contextlib.contextmanager
    def as_default(self):
        """Inside the block eager ``get_variable`` calls use this store."""
        stack = _eager_stores()
        stack.append(self)
        try:
            yield self
        finally:
            stack.pop()

    def variables(self) -> list:
        """The store's variables, sorted by name (TF's order)."""
        return sorted(self._kind("_named_variables").values(), key=lambda v: v.name)

    def trainable_variables(self) -> list:
        return [v for v in self.variables() if getattr(v, "trainable", True)]

    def non_trainable_variables(self) -> list:
        return [v for v in self.variables() if not getattr(v, "trainable", True)]


def _eager_stores() -> list:
    stack = getattr(_local, "eager_stores", None)
    if stack is None:
        stack = _local.eager_stores = []
    return stack


def _eagerly() -> bool:
    from ... import graph

    return not graph.core.building()


def owned_store(owner) -> contextlib.AbstractContextManager:
    """``owner``'s ``EagerVariableStore`` made the default when calls run eagerly (a template,
    a ``tf.layers`` object, a ``tf.function``), made on first use; else nothing."""
    if not _eagerly():
        return contextlib.nullcontext()
    store = owner.__dict__.get("_eager_variable_store")
    if store is None:
        store = owner.__dict__["_eager_variable_store"] = EagerVariableStore()
    return store.as_default()


# counters of default names: per graph eagerly too (``tmpl``, ``tmpl_1``, as TF names them)
_NAME_COUNTERS = ("_default_scope_names", "_layer_object_names")


# replicas of an IPU program run in threads: one of them makes a shared store's variable
_EAGER_LOCK = threading.RLock()


def _store(kind: str = "_named_variables") -> dict:
    from ... import graph

    if kind not in _NAME_COUNTERS and _eagerly():
        stores = _eager_stores()
        return stores[-1]._kind(kind) if stores else {}  # no store: nothing is shared
    g = graph.get_default_graph()
    store = getattr(g, kind, None)
    if store is None:
        store = {}
        setattr(g, kind, store)
    return store


def get_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                 trainable=None, collections=None, caching_device=None, partitioner=None,
                 validate_shape=True, use_resource=None, custom_getter=None, constraint=None,
                 synchronization=None, aggregation=None):
    """The variable ``<scope>/<name>``, made (with ``initializer``, a Tensor/array value or an
    initializer object) or reused as the scope allows.

    With a ``partitioner`` (here or the scope's) and a shape of rank 1 or more, the variable
    is a ``PartitionedVariable``: ``partitioner(shape=, dtype=)`` gives the number of shards
    along each axis (one axis at most above 1), the shards are the variables
    ``<name>/part_<i>`` (the first ``size % n`` one row longer), each initialized with its
    slice of the full value (an initializer object draws the full variable's values once).
    With a ``custom_getter`` (here, else the scope's) the variable is what
    ``custom_getter(getter=, name=, shape=, dtype=, initializer=, regularizer=, reuse=,
    trainable=, collections=, caching_device=, partitioner=, validate_shape=,
    use_resource=, synchronization=, aggregation=)`` returns (``constraint=`` too when it
    takes it), ``getter`` being the true getter with those parameters.

    Raises:
      ValueError: the variable exists and the scope does not reuse; ``reuse=True`` and it
        does not exist; no shape for an initializer that needs one; an initial value with
        a ``shape`` given; a custom getter or partitioner that is not callable; a partition
        TF refuses (TF's messages)."""
    scope = get_variable_scope()
    if partitioner is None:
        partitioner = scope.partitioner
    if custom_getter is None:
        custom_getter = scope.custom_getter
    full = f"{scope.name}/{name}" if scope.name else name
    if initializer is not None and not callable(initializer):
        dtype = _constant_dtype(initializer, dtype)
    kwargs = dict(
        shape=shape,
        dtype=dtypes.as_dtype(dtype if dtype is not None else (scope.dtype or np.float32),
                              "get_variable: dtype"),
        initializer=initializer if initializer is not None else scope.initializer,
        regularizer=regularizer if regularizer is not None else scope.regularizer,
        reuse=AUTO_REUSE if _eagerly() else scope.reuse if scope.reuse is not None else False,
        trainable=True if trainable is None else trainable, collections=collections,
        caching_device=caching_device, partitioner=partitioner, validate_shape=validate_shape,
        use_resource=use_resource, synchronization=synchronization, aggregation=aggregation)
    with _EAGER_LOCK if _eager_stores() else contextlib.nullcontext():
        if custom_getter is None:
            return _true_getter(full, constraint=constraint, **kwargs)
        if not callable(custom_getter):
            raise ValueError(f"Passed a custom_getter which is not callable: {custom_getter}")
        if _takes(custom_getter, "constraint"):
            kwargs["constraint"] = constraint
        return custom_getter(getter=_true_getter, name=full, **kwargs)


def _constant_dtype(initializer, dtype):
    """The dtype of a variable made from the constant ``initializer``: the value's own (TF's
    conversion: a Python int is int32, a float float32), which an explicit ``dtype`` must
    equal (TF's ValueError)."""
    from ... import graph
    from ...core.convert import convert_to_tensor

    if isinstance(initializer, graph.GraphTensor):
        own = initializer.dtype
    else:
        own = dtypes.as_dtype(convert_to_tensor(initializer).dtype)
    if dtype is not None and dtypes.as_dtype(dtype) != own:
        raise ValueError(f"Initializer type '{_repr_dtype(own)}' and explicit dtype "
                         f"'{_repr_dtype(dtypes.as_dtype(dtype))}' don't match.")
    return own


def _repr_dtype(d) -> str:
    return f"<dtype: '{getattr(d, 'name', d)}'>"


def get_local_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                       trainable=False, collections=None, caching_device=None,
                       partitioner=None, validate_shape=True, use_resource=None,
                       custom_getter=None, constraint=None, synchronization=None,
                       aggregation=None):
    """``get_variable`` of a variable in LOCAL_VARIABLES (and ``collections``), never
    trainable (TF 1.15 ignores ``trainable``)."""
    collections = [*(collections or []), "local_variables"]
    return get_variable(name, shape=shape, dtype=dtype, initializer=initializer,
                        regularizer=regularizer, trainable=False, collections=collections,
                        caching_device=caching_device, partitioner=partitioner,
                        validate_shape=validate_shape, use_resource=use_resource,
                        custom_getter=custom_getter, constraint=constraint,
                        synchronization=synchronization, aggregation=aggregation)


def _takes(fn, argument: str) -> bool:
    """Whether ``fn`` takes the keyword ``argument`` (by name or through ``**kwargs``)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == argument or p.kind is p.VAR_KEYWORD for p in params)


def _true_getter(name, shape=None, dtype=np.float32, initializer=None, regularizer=None,
                 reuse=None, trainable=None, collections=None, caching_device=None,
                 partitioner=None, validate_shape=True, use_resource=None, constraint=None,
                 synchronization=None, aggregation=None):
    """The getter custom getters call: gets or makes the variable ``name`` (a full name)."""
    d = dtypes.as_dtype(dtype, "get_variable: dtype")
    trainable = True if trainable is None else trainable
    scalar = isinstance(shape, (list, tuple)) and not shape
    if partitioner is not None and not scalar:
        if not callable(partitioner):
            raise ValueError(f"Partitioner must be callable, but received: {partitioner}")
        return _get_partitioned_variable(name, partitioner, shape, d, initializer, reuse,
                                         trainable)
    if f"{name}/part_0" in _store():
        raise ValueError(f"No partitioner was provided, but a partitioned version of the "
                         f"variable was found: {name}/part_0. Perhaps a variable of the same "
                         "name was already created with partitioning?")
    return _get_single_variable(name, shape, d, initializer, reuse, trainable, regularizer,
                                collections)


def _get_single_variable(name, shape, dtype, initializer, reuse, trainable, regularizer=None,
                         collections=None):
    from . import Variable

    store = _store()
    existing = store.get(name)
    if existing is not None:
        if not reuse:
            raise ValueError(f"Variable {name} already exists, disallowed. Did you mean to set "
                             "reuse=True or reuse=tf.AUTO_REUSE in VarScope?")
        if shape is not None and not TensorShape(shape).is_compatible_with(
                TensorShape(list(existing.shape))):
            raise ValueError(f"Trying to share variable {name}, but specified shape "
                             f"{TensorShape(shape)} and found shape "
                             f"{TensorShape(list(existing.shape))}.")
        return existing
    if reuse is True:
        raise ValueError(f"Variable {name} does not exist, or was not created with "
                         "tf.get_variable(). Did you mean to set reuse=tf.AUTO_REUSE in "
                         "VarScope?")
    with _absolute_names():  # ``name`` is the full name: no name scope in front of it
        value = _initial_value(name, initializer, shape, dtype)
        var = Variable(value, trainable=trainable, name=name, dtype=dtype,
                       collections=collections)
        store[name] = var
        if regularizer is not None:
            _add_regularization_loss(name, var, regularizer)
    return var


@contextlib.contextmanager
def _absolute_names():
    """Inside the block the default graph's name scope is the root (TF's get_variable names
    ignore name scopes) and no control dependency applies (TF makes variables and their
    initializers in an init scope)."""
    from ... import graph

    g = graph.get_default_graph()
    saved, g._scope = g._scope, []
    control, g._control = g._control, []
    try:
        yield
    finally:
        g._scope, g._control = saved, control


def _add_regularization_loss(name, var, regularizer) -> None:
    """TF's ``_get_single_variable``: ``regularizer(var)``, made in the name scope
    ``<name>/Regularizer/``, joins REGULARIZATION_LOSSES unless it is None."""
    from ... import graph

    with graph.get_default_graph().name_scope(f"{name}/Regularizer"):
        loss = regularizer(var)
    if loss is not None:
        graph.get_default_graph().add_to_collection("regularization_losses", loss)


def _get_partitioned_variable(name, partitioner, shape, dtype, initializer, reuse,
                              trainable):
    """TF's ``_VariableStore._get_partitioned_variable``: the partitioned variable ``name``,
    made of shards ``name/part_<i>`` or reused."""
    from . import partitioned_variables

    store, partitioned = _store(), _store("_partitioned_variables")
    if name in store:
        raise ValueError(f"A partitioner was provided, but an unpartitioned version of the "
                         f"variable was found: {name}.  Perhaps a variable of the same name "
                         "was already created without partitioning?")
    shape = TensorShape(shape)
    if _is_tensor(initializer):
        shape = shape.merge_with(TensorShape(list(initializer.shape)))
    partitions = _call_partitioner(partitioner, shape, dtype) if (
        not reuse or partitioner) else None
    existing = partitioned.get(name)
    if existing is not None:
        if reuse is False:
            raise ValueError(f"Partitioned variable with name {name} already exists. Did you "
                             "mean to set reuse=True or reuse=tf.AUTO_REUSE in VarScope?")
        if not shape.is_compatible_with(existing.get_shape()):
            raise ValueError(f"Trying to reuse partitioned variable {name}, but specified "
                             f"shape {shape} and found shape {existing.get_shape()}.")
        if dtype != existing.dtype:
            raise ValueError(f"Trying to reuse partitioned variable {name}, but specified "
                             f"dtype {dtype.name} and found dtype {existing.dtype.name}.")
        if partitions is not None and existing._get_partitions() != partitions:
            raise ValueError(f"Trying to reuse partitioned variable {name}, but specified "
                             f"partitions {partitions} and found partitions "
                             f"{existing._get_partitions()}.")
        return existing
    if reuse is True:
        raise ValueError(f"PartitionedVariable {name} does not exist, or was not created "
                         "with tf.get_variable(). Did you mean to set reuse=False or "
                         "reuse=tf.AUTO_REUSE in VarScope?")
    axis, n = next(((i, p) for i, p in enumerate(partitions) if p > 1), (0, 1))
    if f"{name}/part_0" in store:
        if f"{name}/part_{n - 1}" not in store:
            raise ValueError(f"Partitioner returned a different partitioning than what was "
                             f"already found.  Partitioner returned {n} shards, and shard "
                             f"{name}/part_0 was found, but {name}/part_{n - 1} was not.")
        if f"{name}/part_{n}" in store:
            raise ValueError(f"Partitioner returned a different partitioning than what was "
                             f"already found.  Partitioner returned {n} shards, and shard "
                             f"{name}/part_0 was found, but so was the extra shard "
                             f"{name}/part_{n}.")
    full_shape = shape.as_list()
    values = _shard_values(name, initializer, full_shape, dtype, axis, n)
    shards, offsets = [], []
    for i, (offset, value) in enumerate(values):
        shards.append(_get_single_variable(f"{name}/part_{i}", None, dtype, value, reuse,
                                           trainable))
        offsets.append(offset)
    var = partitioned_variables.make(name, full_shape, dtype, shards, partitions, offsets)
    partitioned[name] = var
    return var


def _call_partitioner(partitioner, shape, dtype) -> list:
    """``partitioner(shape=, dtype=)``, checked as TF checks it."""
    if not shape.is_fully_defined():
        raise ValueError(f"Shape of a new partitioned variable must be fully defined, but "
                         f"instead was {_shape_text(shape)}.")
    if shape.rank < 1:
        raise ValueError(f"A partitioned Variable must have rank at least 1, shape: {shape}")
    slicing = partitioner(shape=shape, dtype=dtype)
    if not isinstance(slicing, collections.abc.Sequence):
        raise ValueError(f"Partitioner must return a sequence, but saw: {slicing}")
    if len(slicing) != shape.rank:
        raise ValueError(f"Partitioner returned a partition list that does not match the "
                         f"Variable's rank: {slicing} vs. {shape}")
    if any(p < 1 for p in slicing):
        raise ValueError(f"Partitioner returned zero partitions for some axes: {slicing}")
    if sum(p > 1 for p in slicing) > 1:
        raise ValueError(f"Can only slice a variable along one dimension: shape: {shape}, "
                         f"partitioning: {slicing}")
    return list(slicing)


def _shape_text(shape) -> str:
    return "<unknown>" if shape.rank is None else str(shape)


def _shard_values(name, initializer, full_shape, dtype, axis, n) -> list:
    """[(offset, initial value or initializer)] per shard: ``n`` slices along ``axis``, the
    first ``size % n`` one longer (TF's ``_iter_slices``)."""
    import ipu_gpu as core

    from ...keras.initializers import Initializer
    from .partitioned_variables import PartitionInfo

    if initializer is None:
        initializer = (glorot_uniform_initializer() if dtype.kind == "f"
                       else zeros_initializer())
    size, extra = divmod(full_shape[axis], n)
    pieces, start = [], 0
    for i in range(n):
        shard = list(full_shape)
        shard[axis] = size + (i < extra)
        offset = [0] * len(full_shape)
        offset[axis] = start
        pieces.append((offset, shard))
        start += shard[axis]
    if isinstance(initializer, Initializer):
        # Keras-style initializers (TF1's factories here) draw the whole variable once, so
        # fan-based scales use the full shape, as TF1's partition-aware initializers do
        initializer = _fresh(initializer)(full_shape, dtype=dtype)
    if callable(initializer):
        if _takes(initializer, "partition_info"):  # TF's protocol for sharded initializers
            return [(offset, initializer(shard, dtype=dtype,
                                         partition_info=PartitionInfo(full_shape, offset)))
                    for offset, shard in pieces]
        return [(offset, initializer(shard, dtype=dtype)) for offset, shard in pieces]
    value = initializer if _is_tensor(initializer) else np.asarray(initializer, dtype=dtype)
    if list(value.shape) != list(full_shape):
        raise ValueError(f"Initializer of {name} has shape {list(value.shape)}, the "
                         f"partitioned variable's shape is {full_shape}")
    return [(offset, core.slice(value, offset, shard)) for offset, shard in pieces]


def _is_tensor(value) -> bool:
    from ...core.tensor import Tensor
    from ...graph import GraphTensor

    return isinstance(value, (Tensor, GraphTensor))


def _is_graph_tensor(value) -> bool:
    from ...graph import GraphTensor

    return isinstance(value, GraphTensor)


def _initial_value(name, init, shape, dtype):
    if init is not None and not callable(init):
        if shape is not None:
            raise ValueError("If initializer is a constant, do not specify shape.")
        return init if _is_graph_tensor(init) else np.asarray(init, dtype=dtype)
    if shape is None:
        raise ValueError(f"Shape of a new variable ({name}) must be fully defined, but "
                         "instead was <unknown>.")
    shape = [int(s) for s in shape]
    if init is None:
        init = glorot_uniform_initializer() if dtype.kind == "f" else zeros_initializer()
    return _drawn_when_run(name, init, shape, dtype)


def _drawn_when_run(name, init, shape, dtype):
    """``init(shape, dtype=)``: in a graph, the output of a node calling it each time it
    runs, so every run of the variable's initializer draws afresh, as TF's initializer ops
    do; eagerly, the value at once."""
    from ... import graph

    if not graph.core.building():
        return _fresh(init)(shape, dtype=dtype)
    g = graph.get_default_graph()
    value = _fresh(init)(shape, dtype=dtype)  # checks the initializer, as TF builds its op
    return graph.core.add_node(g, "Initializer", f"{name}/Initializer", [],
                               lambda: _fresh(init)(shape, dtype=dtype),
                               [(value.dtype, list(value.shape))]).outputs[0]


def _fresh(init):
    """``init`` as TF1's initializers behave: an unseeded random one draws anew on each call
    (a copy that has not picked its seed yet; the Keras 2 initializers the factories make
    pick one seed on their first call and repeat its values after)."""
    from ...keras.initializers import _RandomInitializer

    if isinstance(init, _RandomInitializer) and init.seed is None:
        init = copy.copy(init)
        init.__dict__.pop("_seed", None)
        init.__dict__.pop("_used", None)
    return init


# ---- TF1's initializer factories (the Keras 2 initializers TF aliases them to) ------------
def _keras(name, **kwargs):
    from ...keras import initializers

    return getattr(initializers, name)(**kwargs)


def zeros_initializer(dtype=np.float32):
    return _keras("Zeros")


def ones_initializer(dtype=np.float32):
    return _keras("Ones")


def constant_initializer(value=0, dtype=np.float32, verify_shape=False):
    return _keras("Constant", value=value)


def random_normal_initializer(mean=0.0, stddev=1.0, seed=None, dtype=np.float32):
    return _keras("RandomNormal", mean=mean, stddev=stddev, seed=seed)


def random_uniform_initializer(minval=0.0, maxval=None, seed=None, dtype=np.float32):
    return _keras("RandomUniform", minval=minval, maxval=1.0 if maxval is None else maxval,
                  seed=seed)


def truncated_normal_initializer(mean=0.0, stddev=1.0, seed=None, dtype=np.float32):
    return _keras("TruncatedNormal", mean=mean, stddev=stddev, seed=seed)


def glorot_uniform_initializer(seed=None, dtype=np.float32):
    return _keras("GlorotUniform", seed=seed)


def glorot_normal_initializer(seed=None, dtype=np.float32):
    return _keras("GlorotNormal", seed=seed)


def variance_scaling_initializer(scale=1.0, mode="fan_in", distribution="truncated_normal",
                                 seed=None, dtype=np.float32):
    return _keras("VarianceScaling", scale=scale, mode=mode, distribution=distribution,
                  seed=seed)


# ---- tf.layers ----------------------------------------------------------------------------
def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None,
          bias_initializer=None, kernel_regularizer=None, bias_regularizer=None,
          activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
          trainable=True, name=None, reuse=None):
    """``tf.layers.dense``: ``activation(inputs @ kernel + bias)`` with the variables
    ``<name>/kernel`` and ``<name>/bias`` (name default ``dense``, made unique); the
    regularizers' losses join REGULARIZATION_LOSSES."""
    import ipu_gpu as core

    in_dim = int(inputs.shape[-1])
    with variable_scope(name, default_name="dense", reuse=reuse):
        kernel = get_variable("kernel", [in_dim, units], initializer=kernel_initializer,
                              regularizer=kernel_regularizer, trainable=trainable)
        out = core.matmul(inputs, kernel) if len(inputs.shape) == 2 else _over_last_axis(
            core, inputs, kernel)
        if use_bias:
            bias = get_variable("bias", [units], trainable=trainable,
                                regularizer=bias_regularizer,
                                initializer=bias_initializer or zeros_initializer())
            out = core.nn.bias_add(out, bias)
        out = activation(out) if activation is not None else out
        if activity_regularizer is not None:  # the activity loss per example, as TF's Layer
            from ... import graph

            loss = activity_regularizer(out)
            loss = loss / core.cast(core.shape(out)[0], loss.dtype)
            graph.get_default_graph().add_to_collection("regularization_losses", loss)
    return out


def _over_last_axis(core, inputs, kernel):
    """``inputs`` (rank above 2) times ``kernel`` over its last axis (TF's tensordot), as one
    einsum, so a graph infers its shape from the inputs' (batch dimensions unknown)."""
    return core.einsum("...i,ij->...j", inputs, kernel)


def flatten(inputs, name=None, data_format="channels_last"):
    """``tf.layers.flatten``: [batch, ...] -> [batch, prod(...)] (channels first: the
    channels moved last first, as TF's Flatten), its ops in the scope ``name`` (default
    ``flatten``)."""
    import ipu_gpu as core

    with variable_scope(name, default_name="flatten"):
        if data_format == "channels_first" and len(inputs.shape) > 2:
            inputs = core.transpose(inputs, [0, *range(2, len(inputs.shape)), 1])
        dims = [int(d) for d in inputs.shape[1:]]
        return core.reshape(inputs, [-1, int(np.prod(dims))])


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    """``tf.layers.dropout``: dropout at ``rate`` when ``training`` (a bool, or a boolean
    graph tensor deciding in each run, as TF's ``smart_cond``), else the inputs."""
    import ipu_gpu as core
    from ... import graph

    def dropped():
        return core.nn.dropout(inputs, rate=rate, noise_shape=noise_shape, seed=seed)
    with variable_scope(name, default_name="dropout"):
        if isinstance(training, graph.GraphTensor):
            return graph.program.cond(training, dropped, lambda: core.identity(inputs))
        if not training:  # TF's smart_cond: an identity node in a graph
            return core.identity(inputs) if isinstance(inputs, graph.GraphTensor) else inputs
        return dropped()
