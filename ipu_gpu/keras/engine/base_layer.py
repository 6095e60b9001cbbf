"""``Layer``: the Keras 2 layer (``tf_keras/src/engine/base_layer.py``), on ipu_gpu Tensors.

A layer creates its weights in ``build(input_shape)`` (called once, by the first
``__call__``, with the inputs' ``TensorShape``) and computes in ``call``; gradients come from
the ipu_gpu tape recording the ops ``call`` runs. ``__call__`` also checks ``input_spec``,
casts floating inputs to the layer's compute dtype, resolves ``training`` (explicit value,
else the enclosing layer's, else the learning phase when one is set, else ``call``'s default),
passes and computes masks, and adds activity-regularization losses. Called on KerasTensors it
records a functional-graph node instead (``symbolic.functional_call``).

Sub-layers are found, as Keras tracks them, among the layer's attributes: layers held
directly or in lists, tuples and dicts (looked up at each use, so layers appended to a list
later count). Variables assigned as attributes are tracked as weights.
"""

from __future__ import annotations

import sys

import functools
import inspect
import itertools
import threading

import numpy as np

from ... import ops as _ops  # noqa: F401  # registers every op
from ...core import nest
from ...core.convert import convert_to_tensor
from ...core.spec import TensorShape, as_shape
from ...core.tensor import Tensor, Variable
from ...ops import array as _array
from ...ops import math as _m
from .. import backend
from . import call_context, pipelining, policy
from .call_context import _CONTEXT, get_mask, set_mask
from .input_spec import InputSpec, assert_input_compatibility
from .keras_tensor import KerasTensor

_ALLOWED_KWARGS = {"input_dim", "input_shape", "batch_input_shape", "batch_size", "weights",
                   "activity_regularizer", "autocast", "implementation"}
_ADD_WEIGHT_KWARGS = ("autocast", "collections", "experimental_autocast", "caching_device",
                      "getter", "layout", "experimental_enable_variable_lifting")
# Bookkeeping attributes never searched for sub-layers.
_UNTRACKED = frozenset({"_inbound_nodes_value", "_outbound_nodes_value", "_thread_local",
                        "_trainable_weights", "_non_trainable_weights", "_metrics",
                        "_callable_losses", "_losses", "_input_spec", "_call_spec",
                        "_init_args", "_build_input_shape", "_dtype_policy",
                        "_layer_attrs"})
_BUILD_LOCK = threading.RLock()  # replicas (threads) may call an unbuilt layer at once
_GENERATIONS = itertools.count(1).__next__  # one per outermost layer call


class KerasVariable(Variable):
    """A layer weight: an ipu_gpu Variable that also carries its ``constraint`` (applied by
    optimizers after each update) and its ``regularizer``."""

    __slots__ = ("_constraint", "_regularizer")
    _reads_cast = False  # True for AutoCastVariable (found without a failed lookup per op)

    def __init__(self, initial_value, trainable=True, name=None, dtype=None, constraint=None,
                 regularizer=None):
        super().__init__(initial_value, trainable=trainable, name=name, dtype=dtype)
        self._constraint = constraint
        self._regularizer = regularizer

    @property
    def constraint(self):
        return self._constraint

    @property
    def regularizer(self):
        return self._regularizer

    # In a layer's call while a TF1 graph is built, an assignment is a graph op (see
    # ``_graph_assignment``); elsewhere it happens at once.
    def assign(self, value, use_locking=None, name=None, read_value=True):
        op = _graph_assignment(self, "assign", value, name)
        return super().assign(value, use_locking, name, read_value) if op is None else op

    def assign_add(self, delta, use_locking=None, name=None, read_value=True):
        op = _graph_assignment(self, "assign_add", delta, name)
        return super().assign_add(delta, use_locking, name, read_value) if op is None else op

    def assign_sub(self, delta, use_locking=None, name=None, read_value=True):
        op = _graph_assignment(self, "assign_sub", delta, name)
        return super().assign_sub(delta, use_locking, name, read_value) if op is None else op


def _graph_building() -> bool:
    """Whether a TF1 graph is being built (ops on graph tensors and variables make nodes)."""
    core = sys.modules.get("ipu_gpu.graph.core")
    return core is not None and core.building()


_ASSIGN_OPS = {"assign": "AssignVariableOp", "assign_add": "AssignAddVariableOp",
               "assign_sub": "AssignSubVariableOp"}


def _graph_assignment(var, how, value, name):
    """Inside a layer's ``call`` while a TF1 graph is built (a stateful RNN's new states, an
    update a custom layer adds with ``add_update``): the graph op making the assignment in
    each run that runs it, as tf_keras's in a ``compat.v1`` graph; its output is the new
    value. None elsewhere (the assignment happens at once)."""
    if _CONTEXT.layer is None or not _graph_building():
        return None
    core = sys.modules["ipu_gpu.graph.core"]
    assign = getattr(Variable, how)

    def run(v):
        assign(var, v)
        return var.read_value()
    return core.add_node(core.get_default_graph(), _ASSIGN_OPS[how], name or _ASSIGN_OPS[how],
                         [value], run, [(np.dtype(var.dtype), var.shape)])


def _is_metric(obj) -> bool:
    return callable(getattr(obj, "update_state", None)) and callable(getattr(obj, "result",
                                                                             None))


def _walk(value, depth=0):
    """The leaves of lists, tuples and dicts (insertion order), not descending into layers."""
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _walk(item, depth + 1)
    elif isinstance(value, dict) and depth < 8:
        for item in value.values():
            yield from _walk(item, depth + 1)
    else:
        yield value


def _shape_of(x) -> TensorShape:
    """The TensorShape of a tensor (KerasTensor, Tensor, array) or of a shape."""
    shape = getattr(x, "shape", x)
    if isinstance(shape, TensorShape) and not isinstance(shape, tuple):
        return shape
    return TensorShape(list(shape))


def _input_shapes(inputs):
    """The structure of TensorShapes ``build`` receives."""
    if any(hasattr(x, "shape") for x in nest.flatten(inputs)):
        return nest.map_structure(_shape_of, inputs)
    return inputs


class Layer:
    """The base class of all layers (``tf.keras.layers.Layer``).

    Args:
      trainable: whether the layer's weights are updated by training.
      name: the layer's name (default: the snake-case class name, made unique).
      dtype: the dtype or ``Policy`` of weights and computations (default: floatx()).
      dynamic: accepted for compatibility (every layer runs eagerly).
      **kwargs: ``input_shape``, ``batch_input_shape``, ``input_dim``, ``batch_size``
        (the input a Sequential model starts from), ``weights`` (set at build),
        ``activity_regularizer``, ``autocast``.
    """

    # Built-in layers whose compute_output_shape/compute_output_signature are exact set this,
    # so calling them on KerasTensors needs no trial run of ``call``.
    _shape_inference = False
    # numpy arrays and Python numbers passed as inputs become Tensors (op layers keep them,
    # so a Python scalar takes the other operand's dtype).
    _convert_input_args = True
    # The output is in the compute dtype even for integer inputs (Embedding, Rescaling);
    # otherwise integer inputs keep their dtype through the layer.
    _float_output = False

    def __new__(cls, *args, **kwargs):
        instance = super().__new__(cls)
        try:  # the constructor's arguments, for the default get_config
            bound = inspect.signature(cls.__init__).bind_partial(None, *args, **kwargs)
            init_args = dict(bound.arguments)
            init_args.pop(next(iter(init_args)), None)  # self
            for key, value in list(init_args.items()):
                if key == "kwargs" and isinstance(value, dict):
                    init_args.pop(key)
                    init_args.update(value)
        except TypeError:
            init_args = None
        object.__setattr__(instance, "_init_args", init_args)
        return instance

    def __init__(self, trainable=True, name=None, dtype=None, dynamic=False, **kwargs):
        for kwarg in kwargs:
            if kwarg not in _ALLOWED_KWARGS:
                raise TypeError("Keyword argument not understood:", kwarg)
        if not isinstance(trainable, bool):
            raise TypeError(f"Expected `trainable` argument to be a boolean, but got: "
                            f"{trainable}")
        if not isinstance(dynamic, bool):
            raise TypeError(f"Expected `dynamic` argument to be a boolean, but got: {dynamic}")
        self._trainable = trainable
        self._stateful = False
        self.built = False
        self._input_spec = None
        self._build_input_shape = None
        self._supports_masking = type(self).compute_mask is not Layer.compute_mask
        self._init_set_name(name)
        from .. import regularizers

        self._activity_regularizer = regularizers.get(kwargs.pop("activity_regularizer", None))
        if not hasattr(self, "_trainable_weights"):
            self._trainable_weights = []
        if not hasattr(self, "_non_trainable_weights"):
            self._non_trainable_weights = []
        self._thread_local = threading.local()
        self._callable_losses = []
        self._losses = []
        self._metrics = []
        self._metrics_lock = threading.Lock()
        self._set_dtype_policy(dtype)
        self._autocast = kwargs.get("autocast", True)
        self._inbound_nodes_value = []
        self._outbound_nodes_value = []
        self._dynamic = dynamic
        self._call_spec = call_context.call_spec(self)
        if "input_dim" in kwargs and "input_shape" not in kwargs:
            kwargs["input_shape"] = (kwargs["input_dim"],)
        if "input_shape" in kwargs or "batch_input_shape" in kwargs:
            if "batch_input_shape" in kwargs:
                batch_input_shape = tuple(kwargs["batch_input_shape"])
            else:
                batch_input_shape = ((kwargs.get("batch_size"),)
                                     + tuple(as_shape(kwargs["input_shape"]).as_list()))
            self._batch_input_shape = batch_input_shape
        self._initial_weights = kwargs.get("weights", None)
        stage = pipelining.current_stage()
        if stage is not None:  # made in a PipelineStage scope (Graphcore's Keras)
            self._pipeline_stage = stage

    # ---- subclass API ------------------------------------------------------------------------
    def build(self, input_shape) -> None:
        """Create the layer's weights (subclasses override); marks the layer built."""
        self._build_input_shape = input_shape
        self.built = True

    def call(self, inputs, *args, **kwargs):
        """The layer's computation (subclasses override); the identity here."""
        return inputs

    def compute_mask(self, inputs, mask=None):
        """The output mask: the input mask when the layer supports masking, else None.

        Raises:
          TypeError: a mask given to a layer that does not support masking.
        """
        if not self._supports_masking:
            if any(m is not None for m in nest.flatten(mask)):
                raise TypeError(f"Layer {self.name} does not support masking, but was passed "
                                f"an input_mask: {mask}")
            return None
        return mask

    def compute_output_shape(self, input_shape):
        """The output shape(s) for ``input_shape``. The default builds the layer and runs
        ``call`` on stand-in values (batch sizes 2 and 3 for unknown dimensions)."""
        from . import symbolic

        shapes = nest.map_structure(as_shape, _as_shape_structure(input_shape))
        specs = nest.map_structure(lambda s: KerasTensor(s, self.compute_dtype or "float32"),
                                   shapes)
        with call_context.name_scope(self._name):
            self._maybe_build(specs)
        outputs, _ = symbolic.probe(self, specs, (), {}, None)
        return nest.map_structure(lambda t: t.shape, outputs)

    def compute_output_signature(self, input_signature):
        """The output TensorSpec(s) for input TensorSpec(s): ``compute_output_shape`` with the
        compute dtype (the input's when the layer has none or the input is not floating)."""
        from ...core.spec import TensorSpec

        input_shape = nest.map_structure(lambda s: s.shape, input_signature)
        output_shape = self.compute_output_shape(input_shape)
        dtype = self.compute_dtype
        first = nest.flatten(input_signature)[0].dtype
        if dtype is None or (np.dtype(first).kind != "f" and not self._float_output):
            dtype = first  # integer inputs are not cast: most layers keep their dtype
        return nest.map_structure(lambda s: TensorSpec(s, dtype), _as_shape_structure(
            output_shape))

    def get_config(self) -> dict:
        """The layer's constructor arguments (``from_config`` rebuilds it without weights).

        Raises:
          NotImplementedError: a subclass whose constructor takes arguments that do not
            serialize, without its own ``get_config``.
        """
        config = {"name": self.name, "trainable": self.trainable,
                  "dtype": policy.serialize(self._dtype_policy)}
        if hasattr(self, "_batch_input_shape"):
            config["batch_input_shape"] = self._batch_input_shape
        if type(self).get_config is not Layer.get_config:
            return config
        extra = {k: v for k, v in (self._init_args or {}).items() if k not in config
                 and k not in _ALLOWED_KWARGS and k not in ("name", "trainable", "dtype")}
        if all(_serializable(v) for v in extra.values()):
            config.update(extra)
            return config
        raise NotImplementedError(  # Keras's own error for this case, word for word
            f"\nLayer {type(self).__name__} was created by passing\nnon-serializable argument "
            "values in `__init__()`,\nand therefore the layer must override `get_config()` "
            "in\norder to be serializable. Please implement `get_config()`.\n\nExample:\n\n"
            "class CustomLayer(keras.layers.Layer):\n    def __init__(self, arg1, arg2, "
            "**kwargs):\n        super().__init__(**kwargs)\n        self.arg1 = arg1\n"
            "        self.arg2 = arg2\n\n    def get_config(self):\n        config = "
            "super().get_config()\n        config.update({\n            \"arg1\": self.arg1,"
            "\n            \"arg2\": self.arg2,\n        })\n        return config")

    @classmethod
    def from_config(cls, config):
        """A new layer from ``get_config``'s dict.

        Raises:
          TypeError: the constructor refuses the config (Keras's message).
        """
        try:
            return cls(**config)
        except Exception as e:
            raise TypeError(f"Error when deserializing class '{cls.__name__}' using "
                            f"config={config}.\n\nException encountered: {e}") from e

    # ---- calling -----------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        """Build if needed, check the inputs, run ``call`` (see the module docstring).

        Raises:
          RuntimeError: ``super().__init__()`` was not called.
          ValueError, TypeError: inputs that break ``input_spec``.
        """
        spec = self.__dict__.get("_call_spec")
        if spec is None:
            raise RuntimeError("You must call `super().__init__()` in the layer constructor.")
        if len(args) == 1 and not kwargs and type(args[0]) is Tensor:
            inputs, args = args[0], ()  # the common case: one eager tensor
        else:
            inputs, args, kwargs = spec.split_out_first_arg(args, kwargs)
            if _has_keras_tensor(inputs, args, kwargs):
                from . import symbolic

                return symbolic.functional_call(self, inputs, args, kwargs)
            if self._convert_input_args:
                inputs = _convert_inputs(inputs)
            training = kwargs.get("training")
            if training is None and spec.expects_training_arg:
                if spec.arg_was_passed("training", args, kwargs):
                    training = spec.get_arg_value("training", args, kwargs)  # positional
                elif backend.is_graph_tensor(_CONTEXT.training):
                    training = _CONTEXT.training  # a model's layers see its training tensor
            if backend.is_graph_tensor(training) and not self._takes_training_tensor():
                return self._call_per_training_tensor(inputs, args, kwargs, training)
        if self._supports_masking or spec.expects_mask_arg:
            input_masks, implicit = self._get_input_masks(inputs, args, kwargs)
            if spec.expects_mask_arg and implicit:
                kwargs = dict(kwargs)
                kwargs["mask"] = input_masks
        else:
            input_masks = None
        ctx = _CONTEXT
        if spec.expects_training_arg or "training" in kwargs:
            args, kwargs, training = self._resolve_training(args, kwargs, ctx)
        else:
            training = ctx.training
        saved = ctx.layer, ctx.training, ctx.generation
        # losses added by this call (and nested ones) belong to its generation: older ones
        # are dropped when read, as Keras clears them at each outermost call
        generation = ctx.generation if saved[0] is not None else _GENERATIONS()
        self._thread_local.generation = generation
        ctx.layer, ctx.training, ctx.generation = self, training, generation
        ctx.scopes.append(self._name)
        try:
            input_spec = self.input_spec
            if input_spec is not None:
                assert_input_compatibility(input_spec, inputs, self._name)
            if not self.built:
                self._maybe_build(inputs)
            if self._autocast:
                inputs = self._maybe_cast_inputs(inputs)
            outputs = self.call(inputs, *args, **kwargs)
            if self._activity_regularizer:
                self._handle_activity_regularization(inputs, outputs)
            if self._supports_masking and (
                    input_masks is not None
                    or type(self).compute_mask is not Layer.compute_mask):
                self._set_mask_metadata(inputs, outputs, input_masks)
        finally:
            ctx.scopes.pop()
            ctx.layer, ctx.training, ctx.generation = saved
        return outputs

    # True where ``call`` takes a bool graph tensor as ``training`` itself (tf_keras's
    # smart_cond inside the call): models pass it down, BatchNormalization conds its statistics
    _handles_training_tensor = False
    # True where the training call makes update ops (BatchNormalization's moving statistics)
    _updates_in_training = False

    def _takes_training_tensor(self) -> bool:
        """Whether ``call`` is given a bool graph ``training`` as it is, as tf_keras gives it
        to every call: layers handling it themselves, and layers holding one whose training
        call makes update ops (a cond branch would hide them); the others are a cond of
        their training and inference calls."""
        return self._handles_training_tensor or any(
            layer._updates_in_training for layer in self._flatten_layers(include_self=False))

    def _call_per_training_tensor(self, inputs, args, kwargs, training):
        """``training`` given as a TF1 bool tensor (an ``is_training`` placeholder): the
        layer called in training and in inference mode, a graph cond picking one in each
        run (TF-Keras's smart_cond). The update ops each call makes (``add_update``) run
        only in the runs of its mode (``graph_updates``)."""
        from .graph_updates import Branch

        program = sys.modules["ipu_gpu.graph.program"]
        spec = self._call_spec
        branches = {}

        def branch(flag):
            def call():
                a, kw = spec.set_arg_value("training", flag, args, kwargs)
                with Branch(self, training.graph) as branches[flag]:
                    return self(inputs, *a, **kw)
            return call
        outputs = program.cond(training, branch(True), branch(False))
        for flag, made in branches.items():
            made.gate(training, flag)
        return outputs

    def _resolve_training(self, args, kwargs, ctx, symbolic=False):
        """Keras's rule for ``training``: the value passed, else the enclosing call's, else
        the learning phase when set, else ``call``'s default. Returns (args, kwargs, the value
        nested calls see, whether the framework filled it in)."""
        spec = self._call_spec
        value = None
        passed = spec.arg_was_passed("training", args, kwargs)
        if spec.expects_training_arg:
            if passed:
                value = spec.get_arg_value("training", args, kwargs)
            filled = False
            if value is None:
                if ctx.training is not None:
                    value = ctx.training
                elif backend.global_learning_phase_is_set():
                    value = bool(backend.learning_phase())
                else:
                    value = spec.default("training")
                args, kwargs = spec.set_arg_value("training", value, args, kwargs)
                filled = True
            if symbolic:
                return args, kwargs, value, filled
        else:
            if "training" in kwargs:
                kwargs = dict(kwargs)
                value = kwargs.pop("training")
            if value is None:
                value = ctx.training
            if symbolic:
                return args, kwargs, value, False
        return args, kwargs, value

    def _get_input_masks(self, inputs, args, kwargs):
        """(masks, implicit): the ``mask`` argument passed, else the masks attached to the
        inputs (implicit), else None."""
        spec = self._call_spec
        if not self._supports_masking and not spec.expects_mask_arg:
            return None, False
        if spec.arg_was_passed("mask", args, kwargs):
            return spec.get_arg_value("mask", args, kwargs), False
        if type(inputs) is Tensor:
            mask = get_mask(inputs)
            return mask, mask is not None
        flat = nest.flatten(inputs)
        masks = [get_mask(t) for t in flat]
        if all(m is None for m in masks):
            return None, False
        return nest.pack_sequence_as(inputs, masks), True

    def _set_mask_metadata(self, inputs, outputs, previous_mask) -> None:
        flat_outputs = nest.flatten(outputs)
        if getattr(self, "_compute_output_and_mask_jointly", False) or all(
                get_mask(x) is not None for x in flat_outputs):
            return
        output_masks = self.compute_mask(inputs, previous_mask)
        if output_masks is None:
            return
        for tensor, mask in zip(flat_outputs, nest.flatten(output_masks)):
            set_mask(tensor, mask)

    def _maybe_build(self, inputs) -> None:
        if not self.built:
            with _BUILD_LOCK:
                if not self.built:
                    assert_input_compatibility(self.input_spec, inputs, self.name)
                    flat = nest.flatten(inputs)
                    if flat and self._dtype_policy.compute_dtype is None:
                        self._set_dtype_policy(np.dtype(flat[0].dtype).name)
                    input_shapes = _input_shapes(inputs)
                    if type(self).build is not Layer.build:
                        self.build(input_shapes)
                    Layer.build(self, input_shapes)
        if self._initial_weights is not None:
            weights, self._initial_weights = self._initial_weights, None
            self.set_weights(weights)

    def _maybe_cast_inputs(self, inputs):
        compute = self.compute_dtype
        if compute is None:
            return inputs
        compute = self._dtype_policy._compute_np
        if compute.kind != "f":
            return inputs
        if type(inputs) is Tensor:  # the common case
            d = inputs._value.dtype
            if d is compute or d == compute or d.kind != "f":
                return inputs

        def cast(x):
            if isinstance(x, Tensor) and x.dtype.kind == "f" and x.dtype != compute:
                return _m.cast(x, compute)
            return x

        if isinstance(inputs, Tensor):
            return cast(inputs)
        return nest.map_structure(cast, inputs)

    def _handle_activity_regularization(self, inputs, outputs) -> None:
        for output in nest.flatten(outputs):
            loss = backend.as_tensor(self._activity_regularizer(output))
            batch = output.shape[0] if output.ndim else 0
            if batch is None:  # a TF1 graph tensor's batch: its size in the run
                batch = _m.cast(_array.shape(output)[0], loss.dtype)  # an empty batch's loss is 0
                self.add_loss(loss / _m.maximum(batch, backend._constant_like(1, batch)))
                continue
            # divide_no_nan by the batch size, as Keras
            self.add_loss(loss / backend._constant_like(batch, loss) if batch else loss * 0)

    # ---- weights -----------------------------------------------------------------------------
    def add_weight(self, name=None, shape=None, dtype=None, initializer=None, regularizer=None,
                   trainable=None, constraint=None, use_resource=None, synchronization=None,
                   aggregation=None, **kwargs):
        """Create a weight (a ``KerasVariable``) and track it.

        Args:
          name: the weight's name (the variable is named ``<layer scopes>/<name>:0``).
          shape: its shape (default: a scalar).
          dtype: its dtype (default: the layer's).
          initializer: an initializer, its name or a callable ``(shape, dtype)``; default
            ``glorot_uniform`` for floats, ``zeros`` for ints and bools.
          regularizer: adds ``regularizer(weight)`` to ``losses``.
          trainable: default True; ``synchronization="ON_READ"`` implies False.
          constraint: stored as ``variable.constraint`` for optimizers to apply.
          use_resource, synchronization, aggregation: accepted for compatibility.

        Raises:
          TypeError: an unknown keyword argument.
          ValueError: ``trainable=True`` with ON_READ synchronization; no initializer for a
            dtype that is neither float, int nor bool.
        """
        from .. import constraints as constraints_mod
        from .. import initializers as initializers_mod
        from .. import regularizers as regularizers_mod

        if shape is None:
            shape = ()
        kwargs.pop("partitioner", None)
        for kwarg in kwargs:
            if kwarg not in _ADD_WEIGHT_KWARGS:
                raise TypeError("Unknown keyword argument:", kwarg)
        if dtype is None:
            dtype = self.dtype or backend.floatx()
        dtype = np.dtype(getattr(dtype, "name", dtype))
        if self._dtype_policy.variable_dtype is None:
            self._set_dtype_policy(dtype.name)
        autocast = kwargs.pop("autocast", None)
        if autocast is None:
            autocast = kwargs.pop("experimental_autocast", True)
        initializer = initializers_mod.get(initializer)
        regularizer = regularizers_mod.get(regularizer)
        constraint = constraints_mod.get(constraint)
        if "ON_READ" in str(getattr(synchronization, "name", synchronization)).upper():
            if trainable:
                raise ValueError("Synchronization value can be set to "
                                 "VariableSynchronization.ON_READ only for non-trainable "
                                 "variables. You have specified trainable=True and "
                                 "synchronization=VariableSynchronization.ON_READ.")
            trainable = False
        elif trainable is None:
            trainable = True
        if initializer is None:
            if dtype.kind == "f":
                initializer = initializers_mod.get("glorot_uniform")
            elif dtype.kind in "iub":
                initializer = initializers_mod.get("zeros")
            else:
                raise ValueError(f"An initializer for variable {name} of type {dtype} is "
                                 f"required for layer {self.name}. Received: {initializer}.")
        dims = tuple(as_shape(shape).as_list())
        value = _eager_initial_value(initializer, dims, dtype)
        variable_class = KerasVariable
        policy_ = self._dtype_policy
        if autocast and dtype.kind == "f" and policy_.compute_dtype != policy_.variable_dtype:
            from .autocast_variable import AutoCastVariable  # reads in the compute dtype

            variable_class = AutoCastVariable
        variable = variable_class(value, trainable=bool(trainable),
                                 name=call_context.scoped_name(name or "Variable"),
                                 dtype=dtype, constraint=constraint, regularizer=regularizer)
        if tuple(variable.shape) != dims:
            raise ValueError(f"Layer {self.name}: the initializer of weight {name!r} returned "
                             f"shape {tuple(variable.shape)}, expected {dims}")
        if regularizer is not None:
            self._handle_weight_regularization(variable.name[:variable.name.find(":")],
                                               variable, regularizer)
        (self._trainable_weights if trainable else self._non_trainable_weights).append(variable)
        _join_graph_collections(variable, trainable)
        restoring = sys.modules.get("ipu_gpu.object_checkpoint")
        if restoring is not None:  # a tf.train.Checkpoint restore waiting for this weight
            restoring.variable_created()
        return variable

    def add_variable(self, *args, **kwargs):
        """Deprecated alias of ``add_weight``."""
        return self.add_weight(*args, **kwargs)

    def _handle_weight_regularization(self, name, variable, regularizer) -> None:
        self.add_loss(functools.partial(regularizer, variable))

    @property
    def trainable_weights(self) -> list:
        """The trainable variables of this layer and its sub-layers ([] when frozen)."""
        if not self.trainable:
            return []
        children = [w for layer in self._direct_sublayers() for w in layer.trainable_weights]
        return _dedup(self._trainable_weights + children)

    @property
    def non_trainable_weights(self) -> list:
        """The non-trainable variables (all of them when the layer is frozen)."""
        if self.trainable:
            children = [w for layer in self._direct_sublayers()
                        for w in layer.non_trainable_weights]
            weights = self._non_trainable_weights + children
        else:
            children = [w for layer in self._direct_sublayers() for w in layer.weights]
            weights = self._trainable_weights + self._non_trainable_weights + children
        return _dedup(weights)

    @property
    def weights(self) -> list:
        """All variables: trainable first, then non-trainable."""
        return self.trainable_weights + self.non_trainable_weights

    variables = weights
    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights

    def get_weights(self) -> list:
        """The weights' values as numpy arrays, in ``weights`` order."""
        return [w.numpy() for w in self.weights]

    def set_weights(self, weights) -> None:
        """Set the weights from arrays in ``weights`` order.

        Raises:
          ValueError: a wrong number of arrays or an incompatible shape (Keras's messages).
        """
        params = self.weights
        if len(params) != len(weights):
            raise ValueError(f'You called `set_weights(weights)` on layer "{self.name}" with a '
                             f"weight list of length {len(weights)}, but the layer was "
                             f"expecting {len(params)} weights. Provided weights: "
                             f"{str(weights)[:50]}...")
        pairs = []
        for param, weight in zip(params, weights):
            weight_shape = tuple(weight.shape) if hasattr(weight, "shape") else ()
            ref_shape = TensorShape(list(param.shape))
            if not ref_shape.is_compatible_with(weight_shape):
                raise ValueError(f"Layer {self.name} weight shape {ref_shape} is not compatible "
                                 f"with provided weight shape {weight_shape}.")
            pairs.append((param, weight))
        for param, weight in pairs:
            value = np.asarray(weight, dtype=param.dtype).reshape(param.shape)
            param.assign(backend._device_array(value, param))
        for layer in self._flatten_layers():
            layer.finalize_state()

    def finalize_state(self) -> None:
        """Called after ``set_weights``: layers with derived state refresh it here."""

    def count_params(self) -> int:
        """The number of scalars in the weights.

        Raises:
          ValueError: the layer is not built.
        """
        if not self.built:
            raise ValueError(f"You tried to call `count_params` on layer {self.name}, but the "
                             f"layer isn't built. You can build it manually via: "
                             f"`{self.name}.build(batch_input_shape)`.")
        return int(sum(int(np.prod(w.shape, dtype=np.int64)) for w in self.weights))

    # ---- losses, metrics, updates ------------------------------------------------------------
    @property
    def _eager_losses(self) -> list:
        """The losses ``add_loss`` recorded during this layer's last call (this thread)."""
        local = self._thread_local
        generation = getattr(local, "loss_generation", None)
        if generation is None or generation < getattr(local, "generation", 0):
            return []
        return local.eager_losses

    def _clear_losses(self) -> None:
        for layer in self._flatten_layers():
            layer._thread_local.loss_generation = None

    @property
    def losses(self) -> list:
        """Losses added with ``add_loss`` during the last call (this layer and its
        sub-layers), then the regularization losses, computed now (so a tape sees them)."""
        collected = []
        reference = getattr(self._thread_local, "generation", 0)
        for layer in self._flatten_layers():
            local = layer._thread_local
            generation = getattr(local, "loss_generation", None)
            if (generation is not None and generation >= reference
                    and generation >= getattr(local, "generation", 0) and local.eager_losses):
                collected.extend(local.eager_losses)
            else:
                collected.extend(layer._losses)
            for fn in layer._callable_losses:
                loss = fn()
                if loss is not None:
                    collected.append(loss)
        return collected

    def add_loss(self, losses, **kwargs) -> None:
        """Add loss tensors (inside ``call``), zero-argument callables (anywhere) or symbolic
        KerasTensors (functional construction).

        Raises:
          ValueError: an eager tensor outside a call (Keras's message).
          TypeError: unknown keyword arguments.
        """
        kwargs.pop("inputs", None)
        if kwargs:
            raise TypeError(f"Unknown keyword arguments: {kwargs.keys()}")
        ctx = call_context.context()
        if ctx.probing:
            return  # a trial run of call for shapes: its losses are not the model's
        eager, symbolic = [], []
        for loss in nest.flatten(losses):
            if callable(loss):
                self._callable_losses.append(functools.partial(_call_loss, loss))
                continue
            if loss is None:
                continue
            if isinstance(loss, KerasTensor):
                symbolic.append(loss)
            elif backend.is_graph_tensor(loss):  # a TF1 graph's: the layer keeps the tensor
                self._losses.append(loss)
            else:
                if not isinstance(loss, Tensor):
                    loss = convert_to_tensor(np.asarray(loss, dtype=backend.floatx()))
                eager.append(loss)
        if eager:
            if ctx.layer is None:
                raise ValueError("Expected a symbolic Tensors or a callable for the loss "
                                 "value. Please wrap your loss computation in a zero argument "
                                 "`lambda`.")
            local = self._thread_local
            if getattr(local, "loss_generation", None) != ctx.generation:
                local.eager_losses, local.loss_generation = [], ctx.generation
            local.eager_losses.extend(eager)
        if symbolic and getattr(self, "_is_graph_network", False):
            for loss in symbolic:  # the model computes it each call
                self._graph_network_add_loss(loss)
        else:
            self._losses.extend(symbolic)  # Keras keeps a layer's as they are

    @property
    def metrics(self) -> list:
        """The metric objects attached to this layer and its sub-layers."""
        collected = []
        for layer in self._flatten_layers():
            with layer._metrics_lock:
                collected.extend(layer._metrics)
        return collected

    def add_metric(self, value, name=None, **kwargs) -> None:
        """Track the mean of ``value`` as a metric called ``name`` (inside ``call``). On a
        functional model, a symbolic ``value`` computed from the model's inputs becomes part
        of the model (an ``AddMetric`` layer), updated on each call, ``fit`` and
        ``evaluate`` step.

        Raises:
          ValueError: no name; an eager value outside a call. TypeError: unknown kwargs.
        """
        if len(kwargs) > 1 or (kwargs and next(iter(kwargs)) != "aggregation"):
            raise TypeError(f"Unknown keyword arguments: {kwargs.keys()}. Expected "
                            "`aggregation`.")
        ctx = call_context.context()
        if ctx.probing:
            return
        if name is None:
            raise ValueError("Please provide a name for your metric like "
                             "`self.add_metric(tf.reduce_sum(inputs), name='mean_activation')`")
        if ctx.layer is None and not isinstance(value, KerasTensor):
            raise ValueError("Expected a symbolic Tensor for the metric value, received: "
                             f"{value}")
        if isinstance(value, KerasTensor):
            if getattr(self, "_is_graph_network", False):  # the model computes it each call
                self._graph_network_add_metric(value, "mean", name)
                return
            # a layer given a symbolic tensor outside a call: Keras calls the metric on it,
            # which records a node and leaves its state unchanged
            with self._metrics_lock:
                if not any(m.name == name for m in self._metrics):
                    self._metrics.append(_mean_metric(name, value.dtype))
            return
        with self._metrics_lock:
            match = [m for m in self._metrics if m.name == name]
            if match:
                metric = match[0]
            else:
                metric = _mean_metric(name, getattr(value, "dtype", None))
                self._metrics.append(metric)
        metric.update_state(value)

    def add_update(self, updates) -> None:
        """Run zero-argument callables (updates already happened eagerly otherwise); keep
        TF1 graph update ops (run when fetched: ``updates``)."""
        for update in nest.flatten(updates):
            if callable(update):
                update()
            elif update is not None:
                if backend.is_graph_tensor(update):
                    update = update.op  # as tf_keras: layer.updates holds operations
                graph_updates = self.__dict__.get("_graph_updates")
                if graph_updates is None:
                    graph_updates = []
                    object.__setattr__(self, "_graph_updates", graph_updates)
                graph_updates.append(update)

    @property
    def updates(self) -> list:
        """The TF1 graph update ops of this layer and its sublayers that are trainable or
        stateful (BatchNormalization's moving statistics, made when called on graph tensors
        in training), as Keras's ``layer.updates``; eager updates happen at once."""
        return [u for layer in self._flatten_layers() if layer.trainable or layer.stateful
                for u in layer.__dict__.get("_graph_updates", ())]

    # ---- attributes and tracking -------------------------------------------------------------
    def __setattr__(self, name, value):
        if name.startswith("__") or hasattr(type(self), name) or name in _UNTRACKED:
            object.__setattr__(self, name, value)
            return
        holders = self.__dict__.get("_layer_attrs")
        if holders is None:
            holders = set()
            object.__setattr__(self, "_layer_attrs", holders)
        if isinstance(value, (Layer, list, tuple, dict)):
            holders.add(name)  # may hold sub-layers: searched by _direct_sublayers
        else:
            holders.discard(name)
        for leaf in _walk(value):
            if isinstance(leaf, Variable):
                trainable = self.__dict__.get("_trainable_weights")
                frozen = self.__dict__.get("_non_trainable_weights")
                if trainable is None:
                    trainable = []
                    object.__setattr__(self, "_trainable_weights", trainable)
                if frozen is None:
                    frozen = []
                    object.__setattr__(self, "_non_trainable_weights", frozen)
                target = trainable if leaf.trainable else frozen
                if not any(leaf is w for w in target):
                    target.append(leaf)
            elif (_is_metric(leaf) and not isinstance(leaf, type)
                  and "_metrics" in self.__dict__):
                if not any(leaf is m for m in self._metrics):
                    self._metrics.append(leaf)
        object.__setattr__(self, name, value)

    def _direct_sublayers(self) -> list:
        found, seen = [], {id(self)}
        holders = self.__dict__.get("_layer_attrs", ())
        for key, value in self.__dict__.items():
            if key not in holders:
                continue
            for leaf in _walk(value):
                if isinstance(leaf, Layer) and not _is_metric(leaf) and id(leaf) not in seen:
                    seen.add(id(leaf))
                    found.append(leaf)
        return found

    def _flatten_layers(self, recursive=True, include_self=True):
        """This layer (first) and its sub-layers, depth-first in attribute order."""
        if include_self:
            yield self
        seen = {id(self)}
        stack = list(reversed(self._direct_sublayers()))
        while stack:
            layer = stack.pop()
            if id(layer) in seen:
                continue
            seen.add(id(layer))
            yield layer
            if recursive:
                stack.extend(reversed(layer._direct_sublayers()))

    @property
    def submodules(self) -> list:
        return list(self._flatten_layers(include_self=False))

    # ---- properties --------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    def _init_set_name(self, name) -> None:
        from .serialization import to_snake_case

        if name is None:
            self._name = backend.unique_object_name(to_snake_case(type(self).__name__),
                                                    zero_based=True)
        elif isinstance(name, str):
            backend.observe_object_name(name)
            self._name = name
        else:
            raise TypeError(f"Expected `name` argument to be a string, but got: {name}")

    @property
    def trainable(self) -> bool:
        return self._trainable

    @trainable.setter
    def trainable(self, value) -> None:
        """Set ``trainable`` on this layer and all its sub-layers."""
        for layer in self._flatten_layers():
            layer._trainable = value

    @property
    def dynamic(self) -> bool:
        return any(layer._dynamic for layer in self._flatten_layers())

    @property
    def stateful(self) -> bool:
        return any(layer._stateful for layer in self._flatten_layers())

    @stateful.setter
    def stateful(self, value) -> None:
        self._stateful = value

    @property
    def supports_masking(self) -> bool:
        return self._supports_masking

    @supports_masking.setter
    def supports_masking(self, value) -> None:
        self._supports_masking = value

    @property
    def activity_regularizer(self):
        return self._activity_regularizer

    @activity_regularizer.setter
    def activity_regularizer(self, regularizer) -> None:
        self._activity_regularizer = regularizer

    @property
    def input_spec(self):
        """The ``InputSpec`` (or structure of them) inputs are checked against."""
        return self._input_spec

    @input_spec.setter
    def input_spec(self, value) -> None:
        for v in nest.flatten(value):
            if v is not None and not isinstance(v, InputSpec):
                raise TypeError(f"Layer input_spec must be an instance of InputSpec. Got: {v}")
        self._input_spec = value

    # dtypes: a Policy holds the variable dtype and the compute dtype (the same unless mixed)
    def _set_dtype_policy(self, dtype) -> None:
        if isinstance(dtype, policy.Policy):
            new = dtype
        elif isinstance(dtype, dict):
            new = policy.deserialize(dtype)
        elif dtype is None:
            new = policy.global_policy()
        else:
            new = policy.Policy(np.dtype(getattr(dtype, "name", dtype)).name
                                if not isinstance(dtype, str) else dtype)
        if new.compute_dtype == "bfloat16":
            # numpy, Numba and the emulated IPU (float16/float32 only) have no bfloat16
            raise NotImplementedError(f"Layer {getattr(self, '_name', '')}: policy "
                                      f"{new.name!r} computes in bfloat16, which ipu_gpu does "
                                      "not support (the IPU has no bfloat16 either); use "
                                      "'mixed_float16'")
        self._dtype_policy = new

    @property
    def dtype(self):
        """The variables' dtype name (``"float32"``)."""
        return self._dtype_policy.variable_dtype

    @property
    def dtype_policy(self) -> policy.Policy:
        return self._dtype_policy

    @property
    def compute_dtype(self):
        return self._dtype_policy.compute_dtype

    @property
    def variable_dtype(self):
        return self._dtype_policy.variable_dtype

    # ---- the functional graph ----------------------------------------------------------------
    @property
    def _inbound_nodes(self) -> list:
        return self._inbound_nodes_value

    @property
    def _outbound_nodes(self) -> list:
        return self._outbound_nodes_value

    inbound_nodes = _inbound_nodes
    outbound_nodes = _outbound_nodes

    def _node_attribute(self, node_index, attr, what):
        if not self._inbound_nodes:
            raise RuntimeError(f"The layer {self.name} has never been called and thus has no "
                               f"defined {what}.")
        if not len(self._inbound_nodes) > node_index:
            raise ValueError(f"Asked to get {what} at node {node_index}, but the layer has only "
                             f"{len(self._inbound_nodes)} inbound nodes.")
        values = getattr(self._inbound_nodes[node_index], attr)
        if isinstance(values, list) and len(values) == 1:
            return values[0]
        return values

    def get_input_at(self, node_index):
        return self._node_attribute(node_index, "input_tensors", "input")

    def get_output_at(self, node_index):
        return self._node_attribute(node_index, "output_tensors", "output")

    def get_input_shape_at(self, node_index):
        return self._node_attribute(node_index, "input_shapes", "input shape")

    def get_output_shape_at(self, node_index):
        return self._node_attribute(node_index, "output_shapes", "output shape")

    @property
    def input(self):
        """The input KerasTensor(s) of the layer's single call.

        Raises:
          AttributeError: the layer was never called on KerasTensors.
        """
        if not self._inbound_nodes:
            raise AttributeError(f"Layer {self.name} is not connected, no input to return.")
        return self._node_attribute(0, "input_tensors", "input")

    @property
    def output(self):
        if not self._inbound_nodes:
            raise AttributeError(f"Layer {self.name} has no inbound nodes.")
        return self._node_attribute(0, "output_tensors", "output")

    @property
    def input_shape(self):
        if not self._inbound_nodes:
            raise AttributeError(f'The layer "{self.name}" has never been called and thus has '
                                 "no defined input shape. Note that the `input_shape` property "
                                 "is only available for Functional and Sequential models.")
        shapes = {str(node.input_shapes) for node in self._inbound_nodes}
        if len(shapes) == 1:
            return self._inbound_nodes[0].input_shapes
        raise AttributeError(f'The layer "{self.name}" has multiple inbound nodes, with '
                             'different input shapes. Hence the notion of "input shape" is '
                             "ill-defined for the layer. Use `get_input_shape_at(node_index)` "
                             "instead.")

    @property
    def output_shape(self):
        if not self._inbound_nodes:
            raise AttributeError(f'The layer "{self.name}" has never been called and thus has '
                                 "no defined output shape.")
        shapes = {str(node.output_shapes) for node in self._inbound_nodes}
        if len(shapes) == 1:
            return self._inbound_nodes[0].output_shapes
        raise AttributeError(f'The layer "{self.name}" has multiple inbound nodes, with '
                             'different output shapes. Hence the notion of "output shape" is '
                             "ill-defined for the layer. Use `get_output_shape_at(node_index)` "
                             "instead.")


# ---- helpers -----------------------------------------------------------------------------------
def _call_loss(fn):
    loss = fn()
    if loss is None:
        return None
    if backend.is_graph_tensor(loss):  # a TF1 graph's (a regularizer of a weight)
        return loss
    return loss if isinstance(loss, Tensor) else convert_to_tensor(
        np.asarray(loss, dtype=backend.floatx()))


def _dedup(weights: list) -> list:
    out, seen = [], set()
    for w in weights:
        if id(w) not in seen:
            seen.add(id(w))
            out.append(w)
    return out


def _serializable(value) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_serializable(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _serializable(v) for k, v in value.items())
    return False


def _has_keras_tensor(inputs, args, kwargs) -> bool:
    if isinstance(inputs, KerasTensor):
        return True
    return any(isinstance(x, KerasTensor) for x in nest.flatten([inputs, list(args),
                                                                  list(kwargs.values())]))


def _convert_inputs(inputs):
    """numpy arrays and Python numbers among the inputs become Tensors, as in Keras."""
    if isinstance(inputs, Tensor):
        return inputs
    flat = nest.flatten(inputs)
    if not any(isinstance(x, (np.ndarray, float, int, np.generic)) and not isinstance(x, bool)
               for x in flat):
        return inputs
    return nest.pack_sequence_as(inputs, [
        convert_to_tensor(x) if isinstance(x, (np.ndarray, float, int, np.generic))
        and not isinstance(x, bool) else x for x in flat])


def _as_shape_structure(shape):
    """A shape, or a structure of shapes, with each shape as a TensorShape (a tuple or list
    of ints/None is one shape)."""
    if isinstance(shape, TensorShape) and not isinstance(shape, tuple):
        return shape
    if isinstance(shape, (list, tuple)) and all(d is None or isinstance(d, (int, np.integer))
                                                for d in shape):
        return TensorShape(list(shape))
    if isinstance(shape, dict):
        return {k: _as_shape_structure(v) for k, v in shape.items()}
    if isinstance(shape, (list, tuple)):
        return type(shape)(_as_shape_structure(s) for s in shape)
    return as_shape(shape)


class _MeanMetric:
    """The running mean ``add_metric`` keeps when keras.metrics is not available."""

    def __init__(self, name, dtype=None):
        self.name = name
        self.dtype = dtype
        self.reset_state()

    def reset_state(self):
        self._total, self._count = 0.0, 0

    def update_state(self, value):
        value = np.asarray(value, dtype=np.float64)
        self._total += float(value.sum())
        self._count += int(value.size)

    def result(self):
        return convert_to_tensor(np.asarray(self._total / max(self._count, 1), np.float32))


def _mean_metric(name, dtype):
    try:
        from ..metrics import Mean
    except ImportError:
        return _MeanMetric(name, dtype)
    return Mean(name=name, dtype=dtype)


def _join_graph_collections(variable, trainable) -> None:
    """While a TF1 graph is built, a new weight joins the graph's global (and trainable)
    variables, as TF 1.15's Keras adds it to the collections (``minimize(loss)`` finds it)."""
    graph = sys.modules.get("ipu_gpu.graph")
    if graph is None or not graph.core.building():
        return
    g = graph.core.get_default_graph()
    g.add_to_collection(graph.nodes.GLOBAL_VARIABLES, variable)
    if trainable:
        g.add_to_collection(graph.nodes.TRAINABLE_VARIABLES, variable)


def _eager_initial_value(initializer, dims, dtype):
    """The initializer's value, computed now even while a TF1 graph is being built (a Keras
    weight is an eager variable the graph's nodes read)."""
    graph = sys.modules.get("ipu_gpu.graph")
    if graph is None:
        return initializer(dims, dtype=dtype)
    with graph.core.eager_scope():
        return initializer(dims, dtype=dtype)
