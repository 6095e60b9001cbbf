"""The Keras 2 optimizer base class (``OptimizerV2``, tf-keras's ``optimizers.legacy``).

One step (``apply_gradients``):

1. the pairs with a None gradient are dropped (Keras's warning; ValueError if none is left);
2. ``iterations`` (an int64 Variable), the hyperparameters (float32 Variables, so callbacks
   can ``assign`` them) and, for variables seen for the first time, the slot variables
   (``_create_slots``) are made;
3. ``_prepare`` computes the per-step coefficients once per (device, dtype) of the variables:
   the learning rate (a schedule is called with ``iterations`` cast to that dtype, then the
   legacy ``decay``), bias corrections, ... as Python floats holding values of that dtype,
   computed in that dtype as the TF kernels do;
4. the gradients are summed over replicas (only under a ``tf.distribute`` strategy), then
   clipped (``clipvalue``, ``clipnorm``, ``global_clipnorm``, then ``gradient_transformers``);
5. ``_resource_apply_dense(grad, var, apply_state)`` updates each variable and its slots
   with core ops and the variables' own ``assign``/``assign_add``/``assign_sub`` (in place
   where nothing else holds the buffer); a variable's ``constraint``, if it has one, follows.
   A sparse gradient (an ``IndexedSlices``: the gradient of an embedding lookup) goes to
   ``_resource_apply_sparse_duplicate_indices``, which sums the values of repeated indices
   (``_deduplicate_indexed_slices``) and calls ``_resource_apply_sparse(values, var,
   unique_indices, apply_state)``: each optimizer's Keras 2 sparse arithmetic, which moves
   only the rows in the batch (or, for Adam and Nadam, decays the moments of all rows), as
   TF's ResourceSparseApply kernels and ``_resource_scatter_add``/``_update`` do. A sparse
   gradient for a variable with a ``constraint`` is Keras's RuntimeError;
6. ``iterations`` is incremented; it is returned.

Subclasses written for Keras 2 (``_create_slots``, ``_prepare_local``,
``_resource_apply_dense``, ``_set_hyper``/``_get_hyper``, ``add_slot``/``get_slot``) work
unchanged: ``_get_hyper`` and ``_decayed_lr`` return Tensors as in Keras, and the
coefficients in ``apply_state`` are Python floats, which ops accept wherever Keras passes
scalar Tensors.
"""

from __future__ import annotations

import inspect
import re
import sys
import warnings

import numpy as np

from ... import distribute
from ...errors import InvalidArgumentError
from ...core import backend, nest
from ...core.dtypes import as_dtype
from ...core.indexed_slices import IndexedSlices
from ...core.tape import GradientTape
from ...core.tensor import Tensor, Variable
from ...core.convert import constant, convert_to_tensor
from ...ops.creation import ones_like, zeros_like
from ...ops.math import cast
from ...ops.math_extra import unsorted_segment_sum
from . import schedules, utils

_ALLOWED_KWARGS = {"clipnorm", "clipvalue", "lr", "decay", "global_clipnorm"}
_VALID_DTYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


def _to_snake_case(name: str) -> str:
    s = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    s = re.sub(r"([a-z])([A-Z])", r"\1_\2", s).lower()
    return s if s[0] != "_" else "private" + s


def _base_name(var) -> str:
    name = getattr(var, "name", None) or "Variable:0"
    return name[:-2] if name.endswith(":0") else name


def _clipping(name: str, make_fn, doc: str) -> property:
    """The property ``name``: setting it (None: no clipping) also makes ``_<name>_fn`` with
    ``make_fn(value)``."""

    def get(self):
        return getattr(self, f"_{name}")

    def set_(self, val):
        self._clip_setter_check(name, val)
        setattr(self, f"_{name}", val)
        setattr(self, f"_{name}_fn", make_fn(val))

    return property(get, set_, doc=doc)


class OptimizerV2:
    """Base class of the Keras 2 optimizers; subclass it as Keras's ``OptimizerV2``.

    Args:
      name: the optimizer's name (prefix of its variables' names).
      gradient_aggregator: ``fn(grads_and_vars) -> grads_and_vars`` summing gradients over
        replicas (default: the replica context's all-reduce under a strategy).
      gradient_transformers: functions of ``grads_and_vars`` applied after aggregation.
      **kwargs: ``clipnorm``, ``clipvalue``, ``global_clipnorm``, ``decay`` (the legacy
        ``lr / (1 + decay * iterations)``) and the deprecated ``lr``.

    Raises:
      TypeError: an unknown keyword argument.
      ValueError: a negative keyword value, or both ``clipnorm`` and ``global_clipnorm``.
    """

    _HAS_AGGREGATE_GRAD = True

    def __init__(self, name, gradient_aggregator=None, gradient_transformers=None, **kwargs):
        for k in kwargs:
            if k not in _ALLOWED_KWARGS:
                raise TypeError(f"Unexpected keyword argument passed to optimizer: {k}. "
                                f"Allowed kwargs are {_ALLOWED_KWARGS}.")
            value = kwargs[k]
            if isinstance(value, (int, float, np.number)) and value < 0:
                raise ValueError(f"Expected {k} >= 0, received: {value}")
            if k == "lr":
                warnings.warn("The `lr` argument is deprecated, use `learning_rate` instead.",
                              stacklevel=3)
        self._use_locking = True
        self._init_set_name(name)
        self._hyper = {}
        self._slots = {}  # id(var) -> {slot name: Variable}
        self._slot_owners = {}  # id(var) -> var: keeps the id from being reused
        self._slot_names = []
        self._weights = []
        self._iterations = None
        decay = kwargs.pop("decay", 0.0)
        if decay < 0.0:
            raise ValueError(f"decay cannot be less than 0. Received: decay={decay}.")
        self._initial_decay = decay
        self._hypers_created = False
        self.gradient_aggregator = (utils.all_reduce_sum_gradients
                                    if gradient_aggregator is None else gradient_aggregator)
        self.gradient_transformers = list(gradient_transformers or [])
        self.clipnorm = kwargs.pop("clipnorm", None)
        self.global_clipnorm = kwargs.pop("global_clipnorm", None)
        if self.clipnorm is not None and self.global_clipnorm is not None:
            raise ValueError("Cannot accept both `clipnorm` and `global_clipnorm`. Received: "
                             f"`clipnorm`={self.clipnorm}, "
                             f"`global_clipnorm`={self.global_clipnorm}.")
        self.clipvalue = kwargs.pop("clipvalue", None)

    def _init_set_name(self, name):
        if not name:  # Keras's unique names (keras.backend's counters, clear_session resets)
            from .. import backend

            name = backend.unique_object_name(_to_snake_case(type(self).__name__),
                                              zero_based=True)
        self._name = name

    # ---- clipping ----
    def _clip_setter_check(self, arg, val):
        if val is not None and self.gradient_transformers:
            raise ValueError(f"`{arg}` cannot be set when `gradient_transformers` is set. "
                             "Instead, use the `gradient_transformers` to specify clipping and "
                             f"other transformations. Received: val={val}, "
                             f"gradient_transformers={self.gradient_transformers}.")

    clipnorm = _clipping("clipnorm", utils.make_gradient_clipnorm_fn,
                         "float or None: clip each gradient to this norm.")
    global_clipnorm = _clipping("global_clipnorm", utils.make_global_gradient_clipnorm_fn,
                                "float or None: clip all gradients together to this global "
                                "norm.")
    clipvalue = _clipping("clipvalue", utils.make_gradient_clipvalue_fn,
                          "float or None: clip each gradient element to "
                          "[-clipvalue, clipvalue].")

    # ---- the gradient pipeline ----
    def _transform_loss(self, loss):
        return loss

    def _get_gradients(self, tape, loss, var_list, grad_loss=None):
        grads = tape.gradient(loss, var_list, grad_loss)
        return list(zip(grads, var_list))

    def _transform_unaggregated_gradients(self, grads_and_vars):
        return grads_and_vars

    def _aggregate_gradients(self, grads_and_vars):
        return self.gradient_aggregator(grads_and_vars)

    def _transform_gradients(self, grads_and_vars):
        if self._clipvalue is not None:
            grads_and_vars = self._clipvalue_fn(grads_and_vars)
        if self._clipnorm is not None:
            grads_and_vars = self._clipnorm_fn(grads_and_vars)
        if self._global_clipnorm is not None:
            grads_and_vars = self._global_clipnorm_fn(grads_and_vars)
        for fn in self.gradient_transformers:
            grads_and_vars = fn(grads_and_vars)
        return grads_and_vars

    def minimize(self, loss, var_list, grad_loss=None, name=None, tape=None):
        """Minimize ``loss`` by updating ``var_list``: ``_compute_gradients`` then
        ``apply_gradients``.

        Args:
          loss: a callable taking no arguments and returning the loss, or a Tensor (then
            ``tape``, the GradientTape that computed it, is required).
          var_list: the Variables (a list, tuple or nested structure), or a callable
            returning them (for variables made when ``loss`` first runs).
          grad_loss: optional cotangent of ``loss``.
          name: unused (Keras's op name).
          tape: the GradientTape that recorded a Tensor ``loss``.

        Returns:
          ``iterations``, incremented.

        Raises:
          ValueError: a Tensor loss without ``tape``; no gradient for any variable.
        """
        grads_and_vars = self._compute_gradients(loss, var_list=var_list, grad_loss=grad_loss,
                                                 tape=tape)
        return self.apply_gradients(grads_and_vars, name=name)

    def _compute_gradients(self, loss, var_list, grad_loss=None, tape=None):
        if not callable(loss) and tape is None:
            raise ValueError("`tape` is required when a `Tensor` loss is passed. "
                             f"Received: loss={loss}, tape={tape}.")
        tape = tape if tape is not None else GradientTape()
        if callable(loss):
            with tape:
                if not callable(var_list):  # graph variables: tf.gradients needs no watch
                    tape.watch([v for v in nest.flatten(var_list) if not _graph_tensors([v])])
                loss = loss()
                if callable(var_list):
                    var_list = var_list()
        if type(self)._transform_loss is not OptimizerV2._transform_loss:
            with tape:  # a loss-scaling subclass: the tape must record the scaling
                loss = self._transform_loss(loss)
        var_list = nest.flatten(var_list)
        if _graph_tensors([loss]):  # a TF1 graph: tf.gradients, as TF's graph mode
            from ...graph import keras_optimizer

            grads_and_vars = keras_optimizer.compute_gradients(loss, var_list, grad_loss)
        else:
            grads_and_vars = self._get_gradients(tape, loss, var_list, grad_loss)
        self._assert_valid_dtypes([v for g, v in grads_and_vars if g is not None])
        return grads_and_vars

    def apply_gradients(self, grads_and_vars, name=None, experimental_aggregate_gradients=True):
        """Apply gradients to variables (the second part of ``minimize``).

        Args:
          grads_and_vars: (gradient, variable) pairs; None gradients are skipped with a
            warning.
          name: unused (Keras's op name).
          experimental_aggregate_gradients: sum the gradients over replicas first (under a
            ``tf.distribute`` strategy); False when the caller has done it.

        Returns:
          ``iterations`` after its increment, or None when ``grads_and_vars`` is empty
          (Keras's no-op).

        Raises:
          ValueError: every gradient is None.
          RuntimeError: called in a cross-replica context.
          NotImplementedError: a variable is not a Variable.
          InvalidArgumentError: a gradient of another shape than its variable.
          TypeError: a gradient of another dtype than its variable.
        """
        grads_and_vars = utils.filter_empty_gradients(grads_and_vars)
        if _graph_tensors([g for g, _ in grads_and_vars]):  # a TF1 graph: one operation
            from ...graph import keras_optimizer

            return keras_optimizer.apply_gradients(self, grads_and_vars, name,
                                                   experimental_aggregate_gradients)
        var_list = [v for _, v in grads_and_vars]
        self._create_all_weights(var_list)
        if not grads_and_vars:
            return None
        if distribute.in_cross_replica_context():
            raise RuntimeError("`apply_gradients() cannot be called in cross-replica context. "
                               "Use `tf.distribute.Strategy.run` to enter replica context. For "
                               "more information, please see the docstring of "
                               "`tf.distribute.get_replica_context`.")
        apply_state = self._prepare(var_list)
        if experimental_aggregate_gradients:
            grads_and_vars = self._transform_unaggregated_gradients(grads_and_vars)
            grads_and_vars = self._aggregate_gradients(grads_and_vars)
        grads_and_vars = self._transform_gradients(grads_and_vars)
        return self._distributed_apply(distribute.get_strategy(), grads_and_vars, name,
                                       apply_state)

    def _distributed_apply(self, distribution, grads_and_vars, name, apply_state):
        apply_dense = self._resource_apply_dense
        pass_state = self._takes_apply_state()
        for grad, var in grads_and_vars:
            if not isinstance(var, Variable):
                raise NotImplementedError(f"Updating a `Tensor` is not implemented. Received: "
                                          f"var={var}.")
            sparse = isinstance(grad, IndexedSlices)
            if not sparse and not isinstance(grad, Tensor):
                grad = convert_to_tensor(grad)
            shape = grad.shape if not sparse else grad.shape.as_list()
            if shape != var.shape:  # ops would broadcast it silently
                raise InvalidArgumentError(
                    f"apply_gradients: the gradient of {var.name} must have the variable's "
                    f"shape {list(var.shape)}, got {list(shape)}")
            if grad.dtype != var.dtype:
                raise TypeError(f"apply_gradients: the gradient of {var.name} must have the "
                                f"variable's dtype {var.dtype.name}, got {grad.dtype.name}")
            constraint = getattr(var, "constraint", None)
            if sparse:
                if constraint is not None:
                    raise RuntimeError(f"Cannot use a constraint function on a sparse variable. "
                                       f"Received: grad={grad}, var.constraint={constraint}.")
                kwargs = ({"apply_state": apply_state}
                          if self._takes_apply_state("_resource_apply_sparse") else {})
                self._resource_apply_sparse_duplicate_indices(grad.values, var, grad.indices,
                                                              **kwargs)
                continue
            if pass_state:
                apply_dense(grad, var, apply_state=apply_state)
            else:
                apply_dense(grad, var)
            if constraint is not None:
                var.assign(constraint(var))
        return self.iterations.assign_add(1)

    @classmethod
    def _takes_apply_state(cls, method: str = "_resource_apply_dense") -> bool:
        """Whether the subclass's ``method`` takes ``apply_state`` (Keras passes it only
        then)."""
        key = f"_apply_state_arg{method}"
        takes = cls.__dict__.get(key)
        if takes is None:
            params = inspect.signature(getattr(cls, method)).parameters
            takes = "apply_state" in params
            setattr(cls, key, takes)
        return takes

    # ---- hyperparameters ----
    def _set_hyper(self, name, value):
        """Set hyperparameter ``name`` (a number, callable, Tensor or schedule); once it is a
        Variable, a new number is assigned into it."""
        if name not in self._hyper:
            self._hyper[name] = value
            return
        prev = self._hyper[name]
        if (callable(prev) or isinstance(prev, (int, float, schedules.LearningRateSchedule))
                or (isinstance(prev, Tensor) and not isinstance(prev, Variable))
                or isinstance(value, schedules.LearningRateSchedule)):
            self._hyper[name] = value
        else:
            prev.assign(value)

    def _set_hypers(self, learning_rate, **hypers):
        """Set ``learning_rate``, ``decay`` (the legacy decay given to the base) and
        ``hypers``, as each Keras 2 optimizer's constructor does."""
        self._set_hyper("learning_rate", learning_rate)
        self._set_hyper("decay", self._initial_decay)
        for name, value in hypers.items():
            self._set_hyper(name, value)

    def _get_hyper(self, name, dtype=None):
        """The hyperparameter: a schedule as is, a callable's value, else the value (a
        Variable once created), cast to ``dtype`` if given."""
        if not self._hypers_created:
            self._create_hypers()
        value = self._hyper[name]
        if isinstance(value, schedules.LearningRateSchedule):
            return value
        if callable(value):
            value = value()
        if dtype:
            return cast(value, dtype)
        return value

    def _hyper_float(self, name, dtype) -> float:
        """The hyperparameter's value as ``dtype`` holds it, as a Python float (the form ops
        take fastest). Reading a GPU Variable syncs the device."""
        value = self._hyper[name]
        if callable(value) and not isinstance(value, schedules.LearningRateSchedule):
            value = value()
        return float(dtype.type(float(value)))  # syncs device

    def _create_hypers(self):
        if self._hypers_created:
            return
        for name, value in sorted(self._hyper.items()):
            if isinstance(value, Tensor) or callable(value) or _graph_tensors([value]):
                continue
            self._hyper[name] = self.add_weight(name, shape=[], trainable=False,
                                                initializer=value)
        self._hypers_created = True

    def __getattr__(self, name):
        # only reached when normal lookup fails: hyperparameters (and ``lr``) read as Keras
        if name == "_hyper" or name.startswith("__"):
            raise AttributeError(name)
        hyper = self.__dict__.get("_hyper")
        if name == "lr":
            name = "learning_rate"
        if hyper is not None and name in hyper:
            return self._get_hyper(name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        if name == "lr":
            name = "learning_rate"
        hyper = self.__dict__.get("_hyper")
        if hyper is not None and name in hyper:
            self._set_hyper(name, value)
        else:
            object.__setattr__(self, name, value)

    def __dir__(self):
        result = set(super().__dir__())
        hyper = self.__dict__.get("_hyper", {})
        result |= hyper.keys()
        if "learning_rate" in hyper:
            result.add("lr")
        return sorted(result)

    @property
    def iterations(self) -> Variable:
        """The int64 Variable counting the steps this optimizer has run."""
        if self._iterations is None:
            self._iterations = self.add_weight("iter", shape=[], dtype="int64", trainable=False)
            self._weights.append(self._iterations)
        return self._iterations

    @iterations.setter
    def iterations(self, variable):
        if self._iterations is not None:
            raise RuntimeError("Cannot set `iterations` to a new Variable after the Optimizer "
                               "weights have been created. Here it is attempting to set "
                               f"`iterations` to {variable}.")
        self._iterations = variable
        self._weights.append(variable)

    def _decayed_lr_float(self, dtype) -> float:
        """The learning rate for this step in ``dtype`` (schedule, then legacy decay)."""
        lr = self._hyper["learning_rate"]
        t = dtype.type
        if isinstance(lr, schedules.LearningRateSchedule):
            lr_t = t(float(lr(cast(self.iterations, dtype))))  # syncs device
        else:
            lr_t = t(self._hyper_float("learning_rate", dtype))
        if self._initial_decay > 0.0:
            lr_t = lr_t / (t(1) + t(self._initial_decay) * t(int(self.iterations)))
        return float(lr_t)

    def _decayed_lr(self, var_dtype):
        """The learning rate for this step as a Tensor of ``var_dtype`` (Keras's API)."""
        if not self._hypers_created:
            self._create_hypers()
        dtype = as_dtype(var_dtype, "_decayed_lr: var_dtype")
        return constant(self._decayed_lr_float(dtype), dtype=dtype)

    # ---- per-step coefficients ----
    def _prepare(self, var_list) -> dict:
        keys = {(v.device, v.dtype) for v in var_list}
        apply_state = {}
        for key in keys:
            apply_state[key] = {}
            self._prepare_local(key[0], key[1], apply_state)
        return apply_state

    def _prepare_local(self, var_device, var_dtype, apply_state):
        if "learning_rate" in self._hyper:
            apply_state[(var_device, var_dtype)]["lr_t"] = self._decayed_lr_float(var_dtype)

    def _fallback_apply_state(self, var_device, var_dtype) -> dict:
        apply_state = {(var_device, var_dtype): {}}
        self._prepare_local(var_device, var_dtype, apply_state)
        return apply_state[(var_device, var_dtype)]

    def _coefficients(self, var, apply_state) -> dict:
        key = (var.device, var.dtype)
        return (apply_state or {}).get(key) or self._fallback_apply_state(*key)

    # ---- weights and slots ----
    def _create_all_weights(self, var_list):
        _ = self.iterations
        self._create_hypers()
        slots = self._slots
        new = [v for v in var_list if id(v) not in slots]
        if new:
            self._create_slots(new)
            for v in new:
                slots.setdefault(id(v), {})
                self._slot_owners[id(v)] = v

    def _create_slots(self, var_list):
        pass

    def _add_slots(self, var_list, *slot_names, initializer="zeros"):
        """``add_slot`` for each slot name in turn, over all of ``var_list`` (so the slot
        variables come in Keras's order in ``weights``)."""
        for slot_name in slot_names:
            for var in var_list:
                self.add_slot(var, slot_name, initializer)

    def add_slot(self, var, slot_name, initializer="zeros", shape=None) -> Variable:
        """The slot variable ``slot_name`` of ``var``, made (non-trainable, var's dtype and
        device, named ``<var>/<slot>``) on first request. ``initializer``: "zeros", "ones",
        a number, a callable ``(shape, dtype)`` or an initial value."""
        if slot_name not in self._slot_names:
            self._slot_names.append(slot_name)
        key = id(var)
        slot_dict = self._slots.setdefault(key, {})
        self._slot_owners[key] = var
        weight = slot_dict.get(slot_name)
        if weight is None:
            value = _initial_value(initializer, var, shape)
            weight = _graph_weight(value, False, var.dtype,
                                   f"{self._name}/{_base_name(var)}/{slot_name}")
            if weight is None:
                weight = Variable(value, trainable=False, dtype=var.dtype,
                                  name=f"{_base_name(var)}/{slot_name}")
            slot_dict[slot_name] = weight
            self._weights.append(weight)
        return weight

    def get_slot(self, var, slot_name) -> Variable:
        """The slot variable ``slot_name`` of ``var`` (KeyError if there is none)."""
        return self._slots[id(var)][slot_name]

    def get_slot_names(self) -> list:
        """The names of this optimizer's slots, in the order they were first made."""
        return self._slot_names

    def add_weight(self, name, shape, dtype=None, initializer="zeros", trainable=None,
                   synchronization=None, aggregation=None) -> Variable:
        """A scalar or tensor Variable of this optimizer (float32 unless ``dtype``), named
        ``<optimizer>/<name>``; not added to ``weights`` (Keras adds iterations and slots)."""
        dtype = np.dtype(np.float32) if dtype is None else as_dtype(dtype, "add_weight: dtype")
        value = _initial_value(initializer, None, tuple(shape), dtype)
        weight = _graph_weight(value, bool(trainable), dtype, f"{self._name}/{name}")
        if weight is not None:
            return weight
        return Variable(value, trainable=bool(trainable), dtype=dtype,
                        name=f"{self._name}/{name}")

    def variables(self) -> list:
        """The optimizer's variables in the order they were made (iterations first)."""
        return self._weights

    @property
    def weights(self) -> list:
        """The optimizer's variables in the order they were made (iterations first)."""
        return self._weights

    def get_weights(self) -> list:
        """The values of ``weights`` as numpy arrays."""
        return [w.numpy() for w in self._weights]

    def set_weights(self, weights):
        """Set ``weights`` from numpy arrays (the order of ``get_weights``).

        Raises:
          ValueError: a different number of arrays, or an array of another shape.
        """
        params = self._weights
        if len(params) != len(weights):
            raise ValueError(f"You called `set_weights(weights)` on optimizer {self._name} "
                             f"with a  weight list of length {len(weights)}, but the optimizer "
                             f"was expecting {len(params)} weights. Provided weights: "
                             f"{str(weights)[:50]}...")
        for p, w in zip(params, weights):
            w = np.asarray(w)
            if tuple(p.shape) != tuple(w.shape):
                raise ValueError(f"Optimizer weight shape {tuple(p.shape)} not compatible with "
                                 f"provided weight shape {tuple(w.shape)}.")
        for p, w in zip(params, weights):
            p.assign(constant(np.asarray(w), dtype=p.dtype))  # on the current backend

    # ---- config ----
    def get_config(self) -> dict:
        """The constructor arguments (the hyperparameters' current values)."""
        config = {"name": self._name}
        if self.clipnorm is not None:
            config["clipnorm"] = self.clipnorm
        if self.clipvalue is not None:
            config["clipvalue"] = self.clipvalue
        if self.global_clipnorm is not None:
            config["global_clipnorm"] = self.global_clipnorm
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """An optimizer from ``get_config``'s dict (``lr`` read as ``learning_rate``; a dict
        learning rate is a serialized schedule)."""
        config = dict(config)
        if "lr" in config:
            config["learning_rate"] = config.pop("lr")
        if isinstance(config.get("learning_rate"), dict):
            config["learning_rate"] = schedules.deserialize(config["learning_rate"],
                                                            custom_objects=custom_objects)
        return cls(**config)

    def _hyper_config(self, *names) -> dict:
        """``learning_rate``, ``decay`` and the hyperparameters ``names`` for ``get_config``,
        in Keras's order."""
        config = {"learning_rate": self._serialize_hyperparameter("learning_rate"),
                  "decay": self._initial_decay}
        config.update((name, self._serialize_hyperparameter(name)) for name in names)
        return config

    def _serialize_hyperparameter(self, name):
        value = self._hyper[name]
        if isinstance(value, schedules.LearningRateSchedule):
            return schedules.serialize(value)
        if callable(value):
            return value()
        if isinstance(value, Tensor):
            return value.numpy()[()]
        return value

    def get_gradients(self, loss, params) -> list:
        """The gradients of the graph tensor ``loss`` for ``params`` (``tf.gradients``;
        Keras's legacy graph-mode API).

        Raises:
          RuntimeError: ``loss`` is no graph tensor (eager execution, TF's message).
          ValueError: a parameter has no gradient (Keras's message)."""
        from ...graph import keras_optimizer

        return keras_optimizer.get_gradients(loss, params)

    def get_updates(self, loss, params) -> list:
        """``[apply_gradients(zip(get_gradients(loss, params), params))]``: the update
        operation of a TF1 graph (Keras's legacy graph-mode API)."""
        grads = self.get_gradients(loss, params)
        grads_and_vars = list(zip(grads, params))
        self._assert_valid_dtypes([v for g, v in grads_and_vars if g is not None])
        return [self.apply_gradients(grads_and_vars)]

    def _assert_valid_dtypes(self, tensors):
        for t in tensors:
            if t.dtype not in _VALID_DTYPES:
                raise ValueError(f"Invalid type {t.dtype.name} for {getattr(t, 'name', t)}, "
                                 f"expected: {[d.name for d in _VALID_DTYPES]}.")

    def _resource_apply_dense(self, grad, handle, apply_state):
        raise NotImplementedError("`_resource_apply_dense` must be implemented in subclasses.")

    def _resource_apply_sparse_duplicate_indices(self, grad, handle, indices, **kwargs):
        """Apply the sparse gradient ``grad`` (rows at ``indices``, which may repeat) to
        ``handle``: the rows of repeated indices summed, then ``_resource_apply_sparse``.
        Optimizers that deal with repeated indices themselves override it."""
        summed_grad, unique_indices = _deduplicate_indexed_slices(grad, indices)
        return self._resource_apply_sparse(summed_grad, handle, unique_indices, **kwargs)

    def _resource_apply_sparse(self, grad, handle, indices, apply_state):
        raise NotImplementedError("`_resource_apply_sparse` Must be implemented in subclasses.")

    def _resource_scatter_add(self, x, i, v):
        """``x[i] += v`` for the rows ``i`` of the Variable ``x``; returns ``x``'s value."""
        return x.scatter_add(IndexedSlices(v, i)).read_value()

    def _resource_scatter_update(self, x, i, v):
        """``x[i] = v`` for the rows ``i`` of the Variable ``x``; returns ``x``'s value."""
        return x.scatter_update(IndexedSlices(v, i)).read_value()


def _graph_tensors(values) -> bool:
    """Whether any of ``values`` is a TF1 graph tensor (none exist before the graph package is
    imported)."""
    core = sys.modules.get("ipu_gpu.graph.core")
    return core is not None and any(isinstance(x, core.GraphTensor) for x in values)


def _graph_weight(value, trainable, dtype, name):
    """A graph variable when ``apply_gradients`` makes the weights of a TF1 graph, else None."""
    graph = sys.modules.get("ipu_gpu.graph.keras_optimizer")
    return None if graph is None else graph.new_weight(value, trainable, dtype, name)


def _deduplicate_indexed_slices(values, indices):
    """``(summed_values, unique_indices)``: the rows of ``values`` summed per index, in index
    order, the unique indices in the order of their first occurrence (TF's ``unique``)."""
    ids = indices._value if isinstance(indices, Tensor) else np.asarray(indices)
    ids = ids.reshape(-1)
    xp = backend.xp_of(ids)
    uniq, first, inverse = xp.unique(ids, return_index=True, return_inverse=True)
    order = xp.argsort(first)  # first positions are distinct: any sort is stable
    rank = xp.empty_like(order)
    rank[order] = xp.arange(order.shape[0], dtype=order.dtype)
    positions = rank[inverse.reshape(-1)]
    summed = unsorted_segment_sum(values, positions, int(uniq.shape[0]))  # syncs device
    return summed, Tensor(uniq[order])


def uses_momentum(momentum) -> bool:
    """Whether a ``momentum`` argument asks for a momentum slot (a Tensor, a callable or a
    number > 0), as SGD and RMSprop decide.

    Raises:
      ValueError: a number outside [0, 1].
    """
    uses = isinstance(momentum, Tensor) or callable(momentum) or momentum > 0
    if isinstance(momentum, (int, float)) and (momentum < 0 or momentum > 1):
        raise ValueError("`momentum` must be between [0, 1]. Received: "
                         f"momentum={momentum} (of type {type(momentum)}).")
    return uses


def with_iterations(optimizer_weights, weights):
    """``weights`` with a 0 prepended when they are one short of ``optimizer_weights``:
    Keras 1 optimizers saved no ``iterations``."""
    if len(optimizer_weights) == len(weights) + 1:
        return [0, *weights]
    return weights


def _initial_value(initializer, var, shape, dtype=None):
    """The initial value of a slot (``var``'s shape, dtype and device unless ``shape``) or of
    an optimizer weight (on the current backend)."""
    dtype = var.dtype if dtype is None else dtype
    like = var if shape is None and var is not None else None
    shape = tuple(var.shape) if shape is None else tuple(shape)
    if isinstance(initializer, str):
        key = initializer.lower()
        if key in ("zeros", "ones"):
            if like is not None:
                return zeros_like(like) if key == "zeros" else ones_like(like)
            initializer = 0 if key == "zeros" else 1
        else:
            from ... import keras

            initializer = keras.initializers.get(initializer)  # the layers' initializers
    if isinstance(initializer, (bool, int, float, np.number)):
        if like is not None:
            return ones_like(like) * float(initializer)
        if not shape:
            return initializer  # a Python number: the Variable converts it to dtype
        return constant(np.full(shape, initializer, dtype=dtype))
    if callable(initializer):
        return initializer(shape=shape, dtype=dtype)
    return initializer


_OPTIMIZER_CPU = []  # kernels.optimizer_cpu, imported on first use (Numba loads then)


def _optimizer_cpu():
    if not _OPTIMIZER_CPU:
        from ...kernels import optimizer_cpu

        _OPTIMIZER_CPU.append(optimizer_cpu)
    return _OPTIMIZER_CPU[0]


def fused_cpu_update(kernel_name, grad, variables, coefficients, *static) -> bool:
    """Update ``variables`` (the variable, then its slots) with the one-pass CPU kernel
    ``kernels.optimizer_cpu.<kernel_name>(*buffers, g, coef, *static)``, ``coef`` being
    ``coefficients`` in the variables' dtype. Each buffer is written in place where
    ``Variable._buffer_for_update`` allows, else a fresh one is written and then installed.
    Returns False, with nothing done, unless the gradient and every variable hold numpy
    C-contiguous float32/float64 arrays of one dtype and shape (cupy, float16 and the rest
    take the ops)."""
    g = getattr(grad, "_value", None)
    if g is None:
        return False
    k = _optimizer_cpu()
    if not k.fits(g, *[x._value for x in variables]):
        return False
    buffers = [x._buffer_for_update() for x in variables]
    getattr(k, kernel_name)(*[b.reshape(-1) for b in buffers], g.reshape(-1),
                            np.array(coefficients, dtype=g.dtype), *static)
    for x, b in zip(variables, buffers):
        x._install_buffer(b)
    return True


Optimizer = OptimizerV2
