"""``keras.Model``: compile, the training loop (``fit``/``evaluate``/``predict`` and the
``*_on_batch`` methods), weights, ``summary``, HDF5 weight and model files, and Graphcore's
IPU methods (gradient accumulation, pipelining options, pipeline stage assignments).

The loop is Keras 2's (tf_keras ``engine/training.py``): per epoch the metrics are reset,
``steps_per_execution`` steps run between two visits of the host (one
``on_train_batch_begin``/``on_train_batch_end`` pair per execution, the end hook receiving the
execution's last step index and the metrics so far), validation runs through ``evaluate`` with
the same CallbackList, and ``History`` is returned. Each step runs the overridable
``train_step``/``test_step``/``predict_step`` (Keras 2.6's: rank-1 inputs become ``[n, 1]``,
forward under ``GradientTape`` with ``training=True``, compiled loss plus ``model.losses``,
``optimizer.minimize``, compiled metrics, ``{name: result}`` of ``model.metrics``).

Where the model belongs to an ``IPUStrategy`` (built in its ``scope()``, or trained inside it)
each execution is one program on the emulated IPU device instead (``ipu_execution.py``), with
Graphcore's data rules, replication, gradient accumulation and pipelining
(``pipelining.py``). ``Model(inputs, outputs)`` is
a functional model (``functional.py``); ``Sequential`` is in ``sequential.py``.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import os
import warnings

import numpy as np

from ... import distribute
from ...core import nest
from ...core.tape import GradientTape
from ...core.tensor import Tensor
from ...emulation import observe as _observe
from .. import callbacks as callbacks_module
from . import call_context, compile_utils, data_adapter, policy
from .base_layer import Layer, _dedup

__all__ = ["Model"]

_log = logging.getLogger("ipu_gpu.keras")

_MODEL_KWARGS = {"trainable", "dtype", "dynamic", "name", "autocast", "inputs", "outputs"}
_COMPILE_KWARGS = {"experimental_steps_per_execution", "cloning",
                   "experimental_run_tf_function", "distribute", "target_tensors",
                   "sample_weight_mode", "pss_evaluation_shards"}


class _Counter:
    """A step counter callbacks read (``model._train_counter``): an int that converts to a
    numpy scalar, like the int64 Variable Keras keeps."""

    __slots__ = ("value",)

    def __init__(self):
        self.value = 0

    def assign(self, value):
        self.value = int(value)

    def assign_add(self, value):
        self.value += int(value)

    def numpy(self):
        return np.int64(self.value)

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.value, dtype=dtype or np.int64)

    def __int__(self):
        return self.value

    __index__ = __int__

    def __repr__(self) -> str:
        return f"<step counter {self.value}>"


def _is_functional_init(args, kwargs) -> bool:
    return (len(args) == 2 or (len(args) == 1 and "outputs" in kwargs)
            or ("inputs" in kwargs and "outputs" in kwargs))


def _inject_functional(cls):
    """Put Functional in place of Model among ``cls``'s bases (a subclass of Model calling
    ``super().__init__(inputs, outputs)``), as Keras's ``inject_functional_model_class``."""
    from .functional import Functional

    if cls is Model:
        return Functional
    if cls is object or issubclass(cls, Functional):
        return cls
    cls.__bases__ = tuple(_inject_functional(base) for base in cls.__bases__)
    return cls


def flatten_metrics_in_order(logs, metrics_names):
    """The values of ``logs`` in ``metrics_names`` order, then the other keys sorted; one
    value alone is returned bare."""
    results = [logs[name] for name in metrics_names if name in logs]
    results += [logs[key] for key in sorted(logs) if key not in metrics_names]
    return results[0] if len(results) == 1 else results


def concat_outputs(batches):
    """The per-batch outputs (one structure each) concatenated along the batch axis."""
    flats = [nest.flatten(b) for b in batches]
    merged = [_concat([f[i] for f in flats]) for i in range(len(flats[0]))]
    return nest.pack_sequence_as(batches[0], merged)


def _concat(parts):
    if isinstance(parts[0], np.ndarray):
        if parts[0].ndim == 0:
            return np.stack(parts)
        return np.concatenate(parts)
    return parts


class Model(Layer):
    """A model grouping layers into an object with training/inference features
    (``tf.keras.Model``).

    Three ways: ``Model(inputs, outputs)`` (functional), subclassing with layers as attributes
    and the forward pass in ``call``, and ``Sequential``.

    Args:
      inputs: the input(s) of a functional model (``keras.Input`` KerasTensors).
      outputs: the output(s) of a functional model.
      name: String, the name of the model.
      trainable, dtype, dynamic, autocast: as ``Layer``.
    """

    def __new__(cls, *args, **kwargs):
        if _is_functional_init(args, kwargs) and cls is Model:
            from .functional import Functional

            return Functional.__new__(Functional, *args, **kwargs)
        return super().__new__(cls, *args, **kwargs)

    def __init__(self, *args, **kwargs):
        if _is_functional_init(args, kwargs):
            from .functional import Functional

            if not isinstance(self, Functional):
                _inject_functional(type(self))
            Functional.__init__(self, *args, **kwargs)
            return
        for kwarg in kwargs:
            if kwarg not in _MODEL_KWARGS:
                raise TypeError("Keyword argument not understood:", kwarg)
        if args:
            raise TypeError(f"Model.__init__: unexpected positional arguments {args}; a "
                            "functional model takes `inputs` and `outputs`")
        if "inputs" in kwargs or "outputs" in kwargs:
            raise ValueError("If you want to construct a functional model, both the `inputs` "
                             "and `outputs` arguments must be provided.")
        layer_kwargs = {k: v for k, v in kwargs.items() if k in ("trainable", "dtype",
                                                                 "dynamic", "name")}
        super().__init__(**layer_kwargs)
        if "autocast" in kwargs:
            self._autocast = kwargs["autocast"]
        self._init_model_state()

    def _init_model_state(self):
        set_ = object.__setattr__
        set_(self, "_is_graph_network", getattr(self, "_is_graph_network", False))
        if not hasattr(self, "inputs"):
            set_(self, "inputs", None)
            set_(self, "outputs", None)
            set_(self, "input_names", None)
            set_(self, "output_names", None)
        set_(self, "_is_compiled", False)
        set_(self, "optimizer", None)
        set_(self, "compiled_loss", None)
        set_(self, "compiled_metrics", None)
        set_(self, "loss", None)
        set_(self, "_run_eagerly", None)
        set_(self, "_steps_per_execution", 1)
        set_(self, "_jit_compile", None)
        set_(self, "stop_training", False)
        set_(self, "history", None)
        set_(self, "train_function", None)
        set_(self, "test_function", None)
        set_(self, "predict_function", None)
        set_(self, "_train_counter", _Counter())
        set_(self, "_test_counter", _Counter())
        set_(self, "_predict_counter", _Counter())
        set_(self, "_distribution_strategy",
             distribute.get_strategy() if distribute.has_strategy() else None)
        from .ipu_execution import IPUOptions

        set_(self, "_ipu_options", IPUOptions())

    # ---- layers and weights --------------------------------------------------------------
    def _tracked_layers(self) -> list:
        """The model's direct layers in Keras's order (attribute order when subclassed)."""
        return self._direct_sublayers()

    @property
    def layers(self) -> list:
        return list(self._tracked_layers())

    def get_layer(self, name=None, index=None):
        """Retrieves a layer based on either its name (unique) or index (bottom-up).

        Raises:
          ValueError: both or neither given, an index out of range or an unknown name.
        """
        if index is not None and name is not None:
            raise ValueError(f"Provide only a layer name or a layer index. Received: "
                             f"index={index}, name={name}.")
        if index is not None:
            if len(self.layers) <= index:
                raise ValueError(f"Was asked to retrieve layer at index {index} but model only "
                                 f"has {len(self.layers)} layers.")
            return self.layers[index]
        if name is not None:
            for layer in self.layers:
                if layer.name == name:
                    return layer
            raise ValueError(f"No such layer: {name}. Existing layers are: "
                             f"{list(layer.name for layer in self.layers)}.")
        raise ValueError("Provide either a layer name or layer index at `get_layer`.")

    def _assert_weights_created(self):
        if ("build" in type(self).__dict__ and type(self) is not Model and not self.built
                and not self.dynamic):
            raise ValueError(f"Weights for model {self.name} have not yet been created. "
                             "Weights are created when the Model is first called on inputs or "
                             "`build()` is called with an `input_shape`.")

    @property
    def trainable_weights(self) -> list:
        """The trainable weights, layer by layer, then the model's own."""
        self._assert_weights_created()
        if not self.trainable:
            return []
        weights = [w for layer in self._tracked_layers() for w in layer.trainable_weights]
        return _dedup(weights + self._trainable_weights)

    @property
    def non_trainable_weights(self) -> list:
        self._assert_weights_created()
        layers = self._tracked_layers()
        if self.trainable:
            weights = [w for layer in layers for w in layer.non_trainable_weights]
            return _dedup(weights + self._non_trainable_weights)
        trainable = [w for layer in layers for w in layer.trainable_weights]
        frozen = [w for layer in layers for w in layer.non_trainable_weights]
        return _dedup(trainable + self._trainable_weights + frozen
                      + self._non_trainable_weights)

    @property
    def weights(self) -> list:
        """All weights, grouped by layer (each layer's trainable then non-trainable), then the
        model's own: Keras's order, which ``get_weights``/``set_weights`` follow."""
        self._assert_weights_created()
        weights = [w for layer in self._tracked_layers() for w in layer.weights]
        return _dedup(weights + self._trainable_weights + self._non_trainable_weights)

    variables = weights
    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights

    def build(self, input_shape):
        """Builds the model from an input shape (a subclassed model runs ``call`` once on
        zeros of that shape, unknown dimensions 1).

        Raises:
          ValueError: no or a malformed shape, or ``call`` needing other arguments (Keras's
            messages).
        """
        if self._is_graph_network:
            Layer.build(self, input_shape)
            return
        if input_shape is None:
            raise ValueError("Input shape must be defined when calling `build()` on a `Model` "
                             "subclass.")
        from ...core.spec import TensorShape

        if not isinstance(input_shape, (tuple, list, TensorShape, dict)):
            raise ValueError("Specified input shape is not one of the valid types. Please "
                             "specify a batch input shape of type tuple or list of input "
                             f"shapes. User provided input type: {type(input_shape)}.")
        if input_shape and not self.inputs:
            x = _zeros_like_shapes(input_shape)
            spec = self._call_spec
            kwargs = {}
            extra = [a for a in spec.arg_names[1:] if a not in spec.defaults]
            for arg in extra:
                if arg == "training":
                    kwargs["training"] = False
                else:
                    raise ValueError(
                        "Currently, you cannot build your model if it has positional or "
                        "keyword arguments that are not inputs to the model, but are required "
                        "for its `call()` method. Instead, in order to instantiate and build "
                        "your model, `call()` your model on real tensor data with all expected "
                        "call arguments. The argument for `call()` can be a single list/tuple "
                        "that contains multiple inputs.")
            if len(spec.arg_names) < 1:
                raise ValueError("You can only call `build()` on a model if its `call()` method "
                                 "accepts an `inputs` argument.")
            try:
                with call_context.enter(self, False, probing=True), \
                        call_context.name_scope(self.name):
                    self.call(x, **kwargs)
            except (ValueError, TypeError) as e:
                raise ValueError(
                    "You cannot build your model by calling `build` if your layers do not "
                    "support float type inputs. Instead, in order to instantiate and build "
                    "your model, call your model on real tensor data (of the correct dtype).\n"
                    f"\nThe actual error from `call` is: {e}.") from e
        Layer.build(self, input_shape)

    def call(self, inputs, training=None, mask=None):
        """The forward pass (subclasses override).

        Raises:
          NotImplementedError: not overridden (Keras's message).
        """
        raise NotImplementedError("Unimplemented `tf.keras.Model.call()`: if you intend to "
                                  "create a `Model` with the Functional API, please provide "
                                  "`inputs` and `outputs` arguments. Otherwise, subclass `Model` "
                                  "with an overridden `call()` method.")

    # ---- compile -------------------------------------------------------------------------
    def compile(self, optimizer="rmsprop", loss=None, metrics=None, loss_weights=None,
                weighted_metrics=None, run_eagerly=None, steps_per_execution=None,
                jit_compile=None, **kwargs):
        """Configures the model for training.

        Args:
          optimizer: String (name of optimizer) or optimizer instance.
          loss: Loss function: a name, a function ``fn(y_true, y_pred)``, a ``Loss``, or a
            list/dict of them (one per output).
          metrics: List of metrics to be evaluated by the model during training and testing
            (names such as ``'accuracy'``, functions, ``Metric`` objects; a dict or list of
            lists for several outputs).
          loss_weights: scalar coefficients weighting the loss contributions of the outputs
            (a list or a dict keyed by output name).
          weighted_metrics: metrics updated with ``sample_weight``/``class_weight``.
          run_eagerly: accepted (every step runs eagerly); True is refused under
            ``IPUStrategy`` at ``fit``, as Graphcore's extensions refuse it.
          steps_per_execution: the number of batches to run during each execution, between
            two visits of the host (callbacks, progress bar).
          jit_compile: accepted, no effect.

        Raises:
          TypeError: unknown keyword arguments (Keras's message).
          ValueError: ``steps_per_execution`` not a positive integer.
        """
        unknown = set(kwargs) - _COMPILE_KWARGS
        if unknown:
            raise TypeError(f"Invalid keyword argument(s) in `compile()`: {(unknown,)}. Valid "
                            'keyword arguments include "cloning", '
                            '"experimental_run_tf_function", "distribute", "target_tensors", '
                            'or "sample_weight_mode".')
        if kwargs.get("target_tensors") is not None:
            raise ValueError("target_tensors argument is not supported when executing eagerly.")
        if "experimental_steps_per_execution" in kwargs:
            _log.warning("The argument `steps_per_execution` is no longer experimental. Pass "
                         "`steps_per_execution` instead of `experimental_steps_per_execution`.")
            if not steps_per_execution:
                steps_per_execution = kwargs["experimental_steps_per_execution"]
        if kwargs.get("distribute") is not None:
            raise ValueError("`distribute` argument in compile is not available in TF 2.0. "
                             "Please create the model under the `strategy.scope()`.")
        spe = 1 if steps_per_execution is None else steps_per_execution
        if isinstance(spe, bool) or not isinstance(spe, (int, np.integer)) or spe < 1:
            raise ValueError(f"compile: steps_per_execution must be a positive integer, got "
                             f"{steps_per_execution!r}")
        set_ = object.__setattr__
        set_(self, "optimizer", nest.map_structure(self._get_optimizer, optimizer)
             if isinstance(optimizer, (list, tuple)) else self._get_optimizer(optimizer))
        set_(self, "compiled_loss", loss if isinstance(loss, compile_utils.LossesContainer)
             else compile_utils.LossesContainer(loss, loss_weights,
                                                output_names=self.output_names))
        set_(self, "compiled_metrics", compile_utils.MetricsContainer(
            metrics, weighted_metrics, output_names=self.output_names))
        set_(self, "_run_eagerly", run_eagerly)
        set_(self, "_jit_compile", jit_compile)
        set_(self, "_steps_per_execution", int(spe))
        set_(self, "loss", loss or {})
        set_(self, "_is_compiled", True)
        self._reset_compile_cache()

    def _reset_compile_cache(self):
        object.__setattr__(self, "train_function", None)
        object.__setattr__(self, "test_function", None)
        object.__setattr__(self, "predict_function", None)
        self._ipu_options.reset()

    def _assert_compile_was_called(self):
        if not self._is_compiled:
            raise RuntimeError("You must compile your model before training/testing. Use "
                               "`model.compile(optimizer, loss)`.")

    @property
    def metrics(self) -> list:
        """The model's metrics: the compiled loss's (``loss``, per-output losses), the
        compiled metrics, then metrics added by layers (each after the first call)."""
        metrics = []
        if self._is_compiled:
            if self.compiled_loss is not None:
                metrics += self.compiled_loss.metrics
            if self.compiled_metrics is not None:
                metrics += self.compiled_metrics.metrics
        for layer in self._flatten_layers():
            with layer._metrics_lock:
                metrics.extend(layer._metrics)
        return metrics

    @property
    def metrics_names(self) -> list:
        return [m.name for m in self.metrics]

    def reset_metrics(self):
        """Resets the state of all the metrics in the model."""
        for m in self.metrics:
            m.reset_state()

    @property
    def distribute_strategy(self):
        """The strategy the model was created under, else the current one."""
        return self._distribution_strategy or distribute.get_strategy()

    @property
    def run_eagerly(self) -> bool:
        return bool(self._run_eagerly)

    @run_eagerly.setter
    def run_eagerly(self, value):
        object.__setattr__(self, "_run_eagerly", value)

    @property
    def steps_per_execution(self) -> int:
        return self._steps_per_execution

    @property
    def jit_compile(self):
        return self._jit_compile

    # ---- the steps -----------------------------------------------------------------------
    def _validate_target_and_loss(self, y, loss):
        if self.loss and y is None:
            raise ValueError(f"Target data is missing. Your model was compiled with "
                             f"loss={self.loss}, and therefore expects target data to be "
                             "provided in `fit()`.")
        if loss is None:
            raise ValueError("No loss found. You may have forgotten to provide a `loss` "
                             "argument in the `compile()` method.")

    def _get_optimizer(self, optimizer):
        """The optimizer ``optimizer`` names, in a LossScaleOptimizer under the
        ``mixed_float16`` policy (Keras 2: loss scaling is needed for float16 to converge)."""
        from .. import optimizers
        from ..mixed_precision.loss_scale_optimizer import LossScaleOptimizer

        optimizer = optimizers.get(optimizer)
        if isinstance(self._dtype_policy, policy.PolicyV1):  # the deprecated experimental one
            loss_scale = self._dtype_policy.loss_scale
        else:
            loss_scale = "dynamic" if self._dtype_policy.name == "mixed_float16" else None
        if loss_scale is not None and not isinstance(optimizer, LossScaleOptimizer):
            optimizer = (LossScaleOptimizer(optimizer) if loss_scale == "dynamic" else
                         LossScaleOptimizer(optimizer, dynamic=False, initial_scale=loss_scale))
        return optimizer

    def train_step(self, data):
        """One training step: forward with ``training=True``, loss, ``optimizer.minimize``,
        metrics. Override to customise ``fit``.

        Returns:
          A dict of metric names to values (``{m.name: m.result()}``).
        """
        data = data_adapter.expand_1d(data)
        x, y, sample_weight = data_adapter.unpack_x_y_sample_weight(data)
        with GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(x, y, y_pred, sample_weight)
        self._validate_target_and_loss(y, loss)
        self.optimizer.minimize(loss, self.trainable_variables, tape=tape)
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None):
        """The compiled loss plus the model's regularization losses (updates the loss
        metrics)."""
        del x
        return self.compiled_loss(y, y_pred, sample_weight, regularization_losses=self.losses)

    def compute_metrics(self, x, y, y_pred, sample_weight):
        """Updates the compiled metrics; returns ``get_metrics_result()``."""
        del x
        self.compiled_metrics.update_state(y, y_pred, sample_weight)
        return self.get_metrics_result()

    def get_metrics_result(self) -> dict:
        """``{name: result}`` of every metric (a dict result is merged in)."""
        out = {}
        for metric in self.metrics:
            result = metric.result()
            if isinstance(result, dict):
                out.update(result)
            else:
                out[metric.name] = result
        return out

    def test_step(self, data):
        """One evaluation step: forward with ``training=False``, loss and metrics."""
        data = data_adapter.expand_1d(data)
        x, y, sample_weight = data_adapter.unpack_x_y_sample_weight(data)
        y_pred = self(x, training=False)
        self.compute_loss(x, y, y_pred, sample_weight)
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def predict_step(self, data):
        """One inference step: ``self(x, training=False)``."""
        x, _, _ = data_adapter.unpack_x_y_sample_weight(data)
        return self(x, training=False)

    def _step_function(self, step, counter):
        """``fn(iterator, steps, done)``: run ``steps`` steps of ``step`` on the host in the
        strategy's replica context, return the last step's outputs; ``done[0]`` counts the
        steps run (read when the data runs out mid-execution)."""
        strategy = self.distribute_strategy

        def run(iterator, steps, done):
            outputs = None
            for _ in range(steps):
                data = next(iterator)
                if strategy is distribute._DEFAULT_STRATEGY:
                    outputs = step(data)
                else:
                    outputs = strategy.extended._call_for_each_replica(step, (data,), {})
                counter.assign_add(1)
                done[0] += 1
            return outputs

        return run

    def make_train_function(self, force=False):
        """The function ``fit`` calls once per execution: ``fn(iterator, steps, done)``."""
        if self.train_function is None or force:
            object.__setattr__(self, "train_function",
                               self._step_function(self.train_step, self._train_counter))
        return self.train_function

    def make_test_function(self, force=False):
        if self.test_function is None or force:
            object.__setattr__(self, "test_function",
                               self._step_function(self.test_step, self._test_counter))
        return self.test_function

    def make_predict_function(self, force=False):
        if self.predict_function is None or force:
            step = self._step_function(self.predict_step, self._predict_counter)

            def predict_function(iterator, steps, done):
                outputs = []
                for _ in range(steps):
                    one = [0]
                    out = step(iterator, 1, one)
                    done[0] += one[0]
                    outputs.append(nest.map_structure(_numpy, out))
                return concat_outputs(outputs)

            object.__setattr__(self, "predict_function", predict_function)
        return self.predict_function

    # ---- executions: host or IPU ---------------------------------------------------------
    def _ipu_runner(self, mode, x=None):
        """The IPU program runner when the model runs under an IPUStrategy with Keras
        extensions, else None. An unbuilt subclassed model is first traced on symbolic
        inputs of ``x``'s shapes and dtypes (Graphcore's ``_build_with_dtypes``), so
        ``PipelineStage`` scopes in its ``call`` pipeline it."""
        from . import pipelining
        from .ipu_execution import _ipu_strategy, runner_for

        if (x is not None and not self._is_graph_network and not self.built
                and _ipu_strategy(self) is not None):
            pipelining.trace_for_data(self, x)
        return runner_for(self, mode)

    def _run_execution(self, fn, iterator, steps, handler):
        done = [0]
        try:
            return fn(iterator, steps, done)
        except StopIteration:
            handler.mark_steps_done(done[0])
            raise

    # ---- fit -----------------------------------------------------------------------------
    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None,
            validation_split=0.0, validation_data=None, shuffle=True, class_weight=None,
            sample_weight=None, initial_epoch=0, steps_per_epoch=None, validation_steps=None,
            validation_batch_size=None, validation_freq=1, max_queue_size=10, workers=1,
            use_multiprocessing=False):
        """Trains the model for a fixed number of epochs (dataset iterations).

        Args:
          x: Input data: numpy arrays or Tensors (or lists/dicts of them for several
            inputs), an ``ipu_gpu.data.Dataset`` of ``(inputs, targets)`` or
            ``(inputs, targets, sample_weights)``, or a generator of them.
          y: Target data, like ``x`` (not with a dataset or generator).
          batch_size: samples per gradient update (default 32; not with a dataset).
          epochs: the index of the epoch to stop after.
          verbose: 'auto' (1), 0 silent, 1 progress bar, 2 one line per epoch.
          callbacks: list of ``keras.callbacks.Callback`` instances.
          validation_split: fraction of the (array) training data to hold out for
            validation, taken from the end.
          validation_data: ``(x_val, y_val)``, ``(x_val, y_val, val_sample_weights)`` or a
            dataset, evaluated at the end of each epoch.
          shuffle: shuffle array data before each epoch (``'batch'``: in batch-sized chunks).
          class_weight: dict mapping class indices to a weight for the loss.
          sample_weight: weights for the training samples.
          initial_epoch: epoch at which to start training.
          steps_per_epoch: steps (batches) before declaring one epoch finished.
          validation_steps: steps of validation data per validation.
          validation_batch_size: batch size of the validation data.
          validation_freq: run validation every this many epochs (int) or at these epochs
            (list, 1-based).
          max_queue_size, workers, use_multiprocessing: accepted, unused.

        Returns:
          A ``History`` object: ``history.history`` holds the epoch values of the loss and
          metrics (``val_`` ones too).

        Raises:
          RuntimeError: the model was never compiled.
          ValueError: mismatched or empty data, and Graphcore's rules under IPUStrategy.
        """
        self._assert_compile_was_called()
        verbose = 1 if verbose == "auto" else verbose
        if validation_split and validation_data is None:
            (x, y, sample_weight), validation_data = data_adapter.train_validation_split(
                (x, y, sample_weight), validation_split=validation_split)
        if validation_data:
            val_x, val_y, val_sample_weight = data_adapter.unpack_x_y_sample_weight(
                validation_data)
        runner = self._ipu_runner("fit", x)
        with self.distribute_strategy.scope(), _feeding(runner):
            handler = data_adapter.DataHandler(
                x=x, y=y, sample_weight=sample_weight, batch_size=batch_size,
                steps_per_epoch=steps_per_epoch, initial_epoch=initial_epoch, epochs=epochs,
                shuffle=shuffle, class_weight=class_weight,
                steps_per_execution=self._steps_per_execution,
                replicas=None if runner is None else runner.replication_factor)
            if runner is not None:
                runner.prepare(handler)
            if not isinstance(callbacks, callbacks_module.CallbackList):
                callbacks = callbacks_module.CallbackList(
                    callbacks, add_history=True, add_progbar=verbose != 0, model=self,
                    verbose=verbose, epochs=epochs, steps=handler.inferred_steps)
            self.stop_training = False
            train_function = (self.make_train_function() if runner is None
                              else runner.function)
            self._train_counter.assign(0)
            callbacks.on_train_begin()
            training_logs = None
            logs = None
            for epoch, iterator in _epochs(handler, runner):
                self.reset_metrics()
                if runner is not None:
                    runner.samples = 0
                callbacks.on_epoch_begin(epoch)
                with handler.catch_stop_iteration():
                    for step, n in handler.steps():
                        callbacks.on_train_batch_begin(step)
                        logs = self._run_execution(train_function, iterator, n, handler)
                        if _observe.observer is not None:  # ipu-gpu run --report
                            _observe.observer.keras_execution(logs, n, runner, step)
                        callbacks.on_train_batch_end(step + handler.step_increment, logs)
                        if self.stop_training:
                            break
                logs = callbacks_module.sync_logs(logs) if logs is not None else None
                if logs is None:
                    raise ValueError("Unexpected result of `train_function` (Empty logs). This "
                                     "could be due to issues in input pipeline that resulted "
                                     "in an empty dataset. Otherwise, please use "
                                     "`Model.compile(..., run_eagerly=True)`, or "
                                     "`tf.config.run_functions_eagerly(True)` for more "
                                     "information of where went wrong, or file a issue/bug to "
                                     "`tf.keras`.")
                logs = self._validate_and_get_metrics_result(logs)
                epoch_logs = copy.copy(logs)
                if validation_data and self._should_eval(epoch, validation_freq):
                    val_logs = self.evaluate(
                        x=val_x, y=val_y, sample_weight=val_sample_weight,
                        batch_size=validation_batch_size or batch_size, steps=validation_steps,
                        callbacks=callbacks, return_dict=True)
                    epoch_logs.update({"val_" + name: v for name, v in val_logs.items()})
                if runner is not None and callbacks._progbar is not None:
                    callbacks._progbar.epoch_samples = runner.samples  # for samples/s
                callbacks.on_epoch_end(epoch, epoch_logs)
                training_logs = epoch_logs
                if self.stop_training:
                    break
            callbacks.on_train_end(logs=training_logs)
            return self.history

    def _validate_and_get_metrics_result(self, logs):
        """The metrics' current results when ``logs`` has the same keys (the last
        execution's logs may predate steps whose data ran out). On an IPUStrategy the last
        execution's logs are kept: they reduce every replica's metrics, while the metric
        objects on the host hold replica 0's."""
        from . import ipu_execution

        if ipu_execution._ipu_strategy(self) is not None:
            return callbacks_module.sync_logs(logs)
        metric_logs = self.get_metrics_result()
        if isinstance(logs, dict) and set(logs) == set(metric_logs):
            return callbacks_module.sync_logs(metric_logs)
        return logs

    @staticmethod
    def _should_eval(epoch, validation_freq) -> bool:
        epoch = epoch + 1  # one-index the user-facing epoch
        if isinstance(validation_freq, int):
            return epoch % validation_freq == 0
        if isinstance(validation_freq, list):
            return epoch in validation_freq
        raise ValueError(f"Expected `validation_freq` to be a list or int. Received: "
                         f"validation_freq={validation_freq} of the type "
                         f"{type(validation_freq)}.")

    # ---- evaluate ------------------------------------------------------------------------
    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None,
                 steps=None, callbacks=None, max_queue_size=10, workers=1,
                 use_multiprocessing=False, return_dict=False, **kwargs):
        """Returns the loss value & metrics values for the model in test mode.

        Args: as ``fit`` (``steps``: batches before declaring the evaluation round
          finished); ``return_dict``: a ``{name: value}`` dict instead of a list.

        Returns:
          The scalar test loss (one output, no metrics) or the list of scalars in
          ``model.metrics_names`` order, or a dict with ``return_dict``.

        Raises:
          RuntimeError: the model was never compiled.
          TypeError: unknown keyword arguments.
        """
        self._assert_compile_was_called()
        kwargs.pop("_use_cached_eval_dataset", None)
        if kwargs:
            raise TypeError(f"Invalid keyword arguments: {list(kwargs.keys())}")
        verbose = 1 if verbose == "auto" else verbose
        runner = self._ipu_runner("evaluate", x)
        with self.distribute_strategy.scope(), _feeding(runner):
            handler = data_adapter.DataHandler(
                x=x, y=y, sample_weight=sample_weight, batch_size=batch_size,
                steps_per_epoch=steps, initial_epoch=0, epochs=1,
                steps_per_execution=self._steps_per_execution,
                replicas=None if runner is None else runner.replication_factor)
            if runner is not None:
                runner.prepare(handler)
            if not isinstance(callbacks, callbacks_module.CallbackList):
                callbacks = callbacks_module.CallbackList(
                    callbacks, add_history=True, add_progbar=verbose != 0, model=self,
                    verbose=verbose, epochs=1, steps=handler.inferred_steps)
            logs = {}
            test_function = self.make_test_function() if runner is None else runner.function
            self._test_counter.assign(0)
            callbacks.on_test_begin()
            for _, iterator in _epochs(handler, runner):
                self.reset_metrics()
                with handler.catch_stop_iteration():
                    for step, n in handler.steps():
                        callbacks.on_test_batch_begin(step)
                        logs = self._run_execution(test_function, iterator, n, handler)
                        callbacks.on_test_batch_end(step + handler.step_increment, logs)
            logs = self._validate_and_get_metrics_result(callbacks_module.sync_logs(logs))
            callbacks.on_test_end(logs=logs)
            if return_dict:
                return logs
            return flatten_metrics_in_order(logs, self.metrics_names)

    # ---- predict -------------------------------------------------------------------------
    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None,
                max_queue_size=10, workers=1, use_multiprocessing=False):
        """Generates output predictions for the input samples.

        Returns:
          Numpy array(s) of predictions, batches concatenated (the model's output
          structure).

        Raises:
          ValueError: no data, or the outputs of the batches cannot be concatenated.
        """
        verbose = 1 if verbose == "auto" else verbose
        runner = self._ipu_runner("predict", x)
        with self.distribute_strategy.scope(), _feeding(runner):
            handler = data_adapter.DataHandler(
                x=x, batch_size=batch_size, steps_per_epoch=steps, initial_epoch=0, epochs=1,
                steps_per_execution=self._steps_per_execution,
                replicas=None if runner is None else runner.replication_factor)
            if runner is not None:
                runner.prepare(handler)
            if not isinstance(callbacks, callbacks_module.CallbackList):
                callbacks = callbacks_module.CallbackList(
                    callbacks, add_history=True, add_progbar=verbose != 0, model=self,
                    verbose=verbose, epochs=1, steps=handler.inferred_steps)
            predict_function = (self.make_predict_function() if runner is None
                                else runner.function)
            self._predict_counter.assign(0)
            callbacks.on_predict_begin()
            outputs = []
            for _, iterator in _epochs(handler, runner):
                with handler.catch_stop_iteration():
                    for step, n in handler.steps():
                        callbacks.on_predict_batch_begin(step)
                        batch_outputs = self._run_execution(predict_function, iterator, n,
                                                            handler)
                        outputs.append(batch_outputs)
                        callbacks.on_predict_batch_end(step + handler.step_increment,
                                                       {"outputs": batch_outputs})
            if not outputs:
                raise ValueError("Unexpected result of `predict_function` (Empty "
                                 "batch_outputs). Please use `Model.compile(..., "
                                 "run_eagerly=True)`, or `tf.config.run_functions_eagerly(True)` "
                                 "for more information of where went wrong, or file a issue/bug "
                                 "to `tf.keras`.")
            callbacks.on_predict_end()
        return concat_outputs(outputs)

    # ---- single batches ------------------------------------------------------------------
    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None,
                       reset_metrics=True, return_dict=False):
        """Runs a single gradient update on a single batch of data.

        Returns:
          The loss (and metrics) as ``evaluate`` returns them, or a dict.
        """
        self._assert_compile_was_called()
        if reset_metrics:
            self.reset_metrics()
        data = data_adapter.single_batch(x, y, sample_weight, class_weight)
        logs = self._run_single(self.make_train_function(), "fit", data)
        logs = callbacks_module.sync_logs(logs)
        return logs if return_dict else flatten_metrics_in_order(logs, self.metrics_names)

    def test_on_batch(self, x, y=None, sample_weight=None, reset_metrics=True,
                      return_dict=False):
        """Test the model on a single batch of samples."""
        self._assert_compile_was_called()
        if reset_metrics:
            self.reset_metrics()
        data = data_adapter.single_batch(x, y, sample_weight)
        logs = callbacks_module.sync_logs(self._run_single(self.make_test_function(),
                                                           "evaluate", data))
        return logs if return_dict else flatten_metrics_in_order(logs, self.metrics_names)

    def predict_on_batch(self, x):
        """Returns predictions for a single batch of samples (numpy)."""
        data = data_adapter.single_batch(x)
        return self._run_single(self.make_predict_function(), "predict", data)

    def _run_single(self, host_function, mode, data):
        runner = self._ipu_runner(mode)
        with self.distribute_strategy.scope():
            if runner is not None:
                return runner.run_single(data)
            return host_function(iter([data]), 1, [0])

    # ---- deprecated generator methods ----------------------------------------------------
    def fit_generator(self, generator, *args, **kwargs):
        warnings.warn("`Model.fit_generator` is deprecated and will be removed in a future "
                      "version. Please use `Model.fit`, which supports generators.",
                      stacklevel=2)
        return self.fit(generator, *args, **kwargs)

    def evaluate_generator(self, generator, *args, **kwargs):
        warnings.warn("`Model.evaluate_generator` is deprecated and will be removed in a "
                      "future version. Please use `Model.evaluate`, which supports "
                      "generators.", stacklevel=2)
        return self.evaluate(generator, *args, **kwargs)

    def predict_generator(self, generator, *args, **kwargs):
        warnings.warn("`Model.predict_generator` is deprecated and will be removed in a "
                      "future version. Please use `Model.predict`, which supports "
                      "generators.", stacklevel=2)
        return self.predict(generator, *args, **kwargs)

    # ---- Graphcore's IPU extensions ------------------------------------------------------
    def set_gradient_accumulation_options(self, gradient_accumulation_steps_per_replica=None,
                                          gradient_accumulation_reduction_method="sum",
                                          use_v2_gradient_accumulation_optimizer=False,
                                          **gradient_accumulation_optimizer_kwargs):
        """Sets the gradient accumulation options for non-pipelined models trained under
        an IPUStrategy: gradients of ``gradient_accumulation_steps_per_replica`` steps are
        accumulated (SUM, MEAN or RUNNING_MEAN) before each weight update; the update
        happens once per that many steps.

        Raises:
          ValueError, TypeError: Graphcore's messages for bad values.
        """
        self._ipu_options.set_gradient_accumulation(
            gradient_accumulation_steps_per_replica, gradient_accumulation_reduction_method,
            use_v2_gradient_accumulation_optimizer, gradient_accumulation_optimizer_kwargs)

    def set_pipelining_options(self, gradient_accumulation_steps_per_replica=None,
                               device_mapping=None, accumulate_outfeed=None,
                               gradient_accumulation_reduction_method="sum",
                               **pipelining_kwargs):
        """Sets the pipelining options: a pipelined model trains as its unpipelined twin
        accumulating the gradients of ``gradient_accumulation_steps_per_replica`` steps
        (reduced by ``gradient_accumulation_reduction_method``) per weight update; its stages
        (or ``device_mapping``) set the IPUs a replica takes (see ``pipelining``).

        Raises:
          ValueError, TypeError: Graphcore's messages for bad values."""
        self._ipu_options.set_pipelining(gradient_accumulation_steps_per_replica,
                                         device_mapping, accumulate_outfeed,
                                         gradient_accumulation_reduction_method,
                                         pipelining_kwargs)

    def set_pipeline_stage_assignment(self, pipeline_stage_assignment):
        """Sets the pipeline stage of every layer (Sequential: a list of ints or
        ``SequentialLayerPipelineStageAssignment``, one per layer) or of every layer call
        (functional: ``FunctionalLayerPipelineStageAssignment`` objects, in execution order,
        as ``get_pipeline_stage_assignment`` returns them). See ``pipelining`` for how a
        pipelined model trains here.

        A subclassed model takes ``ModelLayerPipelineStageAssignment`` objects for the layer
        calls of its ``call`` (traced on ``keras.Input`` tensors of its build shape) and
        ``NestedModelPipelineStageAssignment`` objects for the models it calls; models
        holding models take the ``*NestedModelPipelineStageAssignment`` of their kind.

        Raises:
          ValueError: an invalid assignment (Graphcore's messages).
          RuntimeError: a subclassed model not built yet (Graphcore's message).
        """
        from . import pipelining

        if self.__class__.__name__ == "Sequential" or _is_sequential(self):
            assignment = pipelining.validate_sequential(self, list(pipeline_stage_assignment)
                                                        if isinstance(pipeline_stage_assignment,
                                                                      list)
                                                        else pipeline_stage_assignment)
        else:
            assignment = pipelining.validate_functional(self, pipeline_stage_assignment)
        self._ipu_options.pipeline_stage_assignment = assignment

    def get_pipeline_stage_assignment(self) -> list:
        """The pipeline stage assignment: the one set, else the stages ``PipelineStage``
        scopes recorded, else one unassigned entry per layer (call), in execution order.

        Raises:
          RuntimeError: a subclassed model not built yet (Graphcore's message)."""
        from . import pipelining

        current = self._ipu_options.pipeline_stage_assignment
        if current:
            return list(current)
        found = pipelining.from_nodes(self)
        return found if found is not None else pipelining.default_assignment(self)

    def reset_pipeline_stage_assignment(self):
        """Resets the pipeline stage assignment so that the model is no longer pipelined."""
        self._ipu_options.pipeline_stage_assignment = None

    @property
    def export_for_ipu_serving(self):
        """``export_for_ipu_serving(export_dir, batch_size=None, output_names=None,
        preprocessing_step=None, preprocessing_step_signature=None, postprocessing_step=None,
        postprocessing_step_signature=None, purge_export_dir=False)``: export the model as a
        SavedModel for TensorFlow Serving (``ipu.serving.export_for_ipu_serving``). As
        Graphcore's, only a model made inside an IPUStrategy (with Keras extensions) has it:
        elsewhere reading it raises AttributeError."""
        import functools

        from ...ipu import serving
        from .ipu_execution import _ipu_strategy

        if _ipu_strategy(self) is None:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute "
                                 "'export_for_ipu_serving'")
        return functools.update_wrapper(functools.partial(serving.export_for_ipu_serving, self),
                                        serving.export_for_ipu_serving)

    def print_pipeline_stage_assignment_summary(self, line_length=None, print_fn=None):
        """Prints a summary of the pipeline stage assignment of the model (Graphcore's
        table)."""
        from . import pipelining

        pipelining.print_summary(self, self.get_pipeline_stage_assignment(), line_length,
                                 print_fn)

    def set_infeed_queue_options(self, **kwargs):
        """Sets the options of the ``IPUInfeedQueue`` that ``fit``/``evaluate``/``predict``
        create under an IPUStrategy (``IPUInfeedQueue(dataset, **kwargs)``): the data is read
        ``prefetch_depth`` elements ahead of the device (``feeds.py``). The constructor checks
        the options when those calls start feeding.

        Raises:
          ValueError: a ``dataset``, ``infeed_spec``, ``element_spec`` or ``_internal_id``
            key (Graphcore's messages)."""
        self._ipu_options.set_feed("infeed", kwargs)

    def set_outfeed_queue_options(self, **kwargs):
        """Sets the options of the ``IPUOutfeedQueue`` that ``fit``/``evaluate``/``predict``
        create under an IPUStrategy (``IPUOutfeedQueue(**kwargs)``, checked when those calls
        start). Keras reads each execution's last results itself, so ``buffer_depth`` and
        ``optimise_latency`` change nothing the host sees.

        Raises:
          ValueError: an ``outfeed_mode`` or ``device_ordinal`` key (Graphcore's
            messages)."""
        self._ipu_options.set_feed("outfeed", kwargs)

    def set_asynchronous_callbacks(self, asynchronous=False):
        """Accepted: callbacks run between executions either way."""
        self._ipu_options.asynchronous_callbacks = bool(asynchronous)

    def set_replication_options(self, replicated_metric_reduction_method="NONE"):
        """How the metrics of the replicas reach the host (``ReplicatedMetricReductionMethod``
        or its name): NONE (the last replica's, Graphcore's default), SUM and MEAN over the
        replicas, LIST every replica's value in replica order.

        Raises:
          ValueError: an unknown method (Graphcore's message)."""
        self._ipu_options.set_replication(replicated_metric_reduction_method)

    # ---- summary, weights files ----------------------------------------------------------
    def summary(self, line_length=None, positions=None, print_fn=None, expand_nested=False,
                show_trainable=False, layer_range=None):
        """Prints a string summary of the network (``utils.layer_utils.print_summary``).

        Raises:
          ValueError: the model is not built (Keras's message).
        """
        if not self.built:
            raise ValueError("This model has not yet been built. Build the model first by "
                             "calling `build()` or by calling the model on a batch of data.")
        from ..utils import layer_utils

        layer_utils.print_summary(self, line_length=line_length, positions=positions,
                                  print_fn=print_fn, expand_nested=expand_nested,
                                  show_trainable=show_trainable, layer_range=layer_range)

    def save_weights(self, filepath, overwrite=True, save_format=None, options=None):
        """Saves all layer weights in Keras 2's HDF5 layout (``utils.hdf5_format``).

        The format follows Keras 2's rule: HDF5 for a name ending in .h5, .hdf5 or .keras (or
        ``save_format='h5'``), else TensorFlow's checkpoint format, of which ipu_gpu writes
        the file layout but not the tensor bundle: the HDF5 weights go to
        ``<filepath>.index`` and the ``checkpoint`` state file beside it names ``filepath``
        as TF writes it, so ``load_weights(filepath)``, ``tf.train.latest_checkpoint`` and
        checks for ``<filepath>.index`` work; real TensorFlow cannot read it.

        Raises:
          ImportError: h5py is not installed.
          ValueError: an unknown ``save_format``; ``save_format='tf'`` with an HDF5 name
            (Keras's messages).
        """
        from ..utils import hdf5_format

        filepath = os.fspath(filepath)
        is_h5 = _is_hdf5_filepath(filepath)
        if save_format is None:
            save_format = "h5" if is_h5 else "tf"
        else:
            user_format = str(save_format).lower().strip()
            if user_format in ("tensorflow", "tf"):
                save_format = "tf"
            elif user_format in ("hdf5", "h5", "keras"):
                save_format = "h5"
            else:
                raise ValueError(f"Unknown format. Received: `save_format`={save_format}. "
                                 "Was expecting one of {'tf', 'h5'}.")
        if save_format == "tf" and is_h5:
            raise ValueError(f'save_weights got save_format="tf"/"tensorflow", but the '
                             f'filepath ("{filepath}") looks like an HDF5 file. Omit the '
                             '".h5"/".keras" when saving in TensorFlow format.')
        if save_format == "h5":
            hdf5_format.save_weights(self, filepath, overwrite=overwrite)
            return
        hdf5_format.save_weights(self, filepath + ".index", overwrite=overwrite)
        directory = os.path.dirname(filepath)
        relative = os.path.relpath(filepath, directory or ".")
        with open(os.path.join(directory, "checkpoint"), "w") as f:  # TF's state file
            f.write(f'model_checkpoint_path: "{relative}"\n'
                    f'all_model_checkpoint_paths: "{relative}"\n')

    def load_weights(self, filepath, by_name=False, skip_mismatch=False, options=None):
        """Loads weights saved in Keras 2's HDF5 layout (by ours or by Keras): in layer order,
        or by layer name with ``by_name``; a TF-format path (``save_weights``) reads its
        ``<filepath>.index``.

        Raises:
          ValueError: layer or weight count mismatches (Keras's messages),
            ``skip_mismatch`` without ``by_name``.
          ImportError: h5py is not installed.
        """
        from ..utils import hdf5_format

        if skip_mismatch and not by_name:
            raise ValueError("When calling model.load_weights, skip_mismatch can only be set "
                             "to True when by_name is True.")
        filepath = os.fspath(filepath)
        if (not _is_hdf5_filepath(filepath) and not os.path.isfile(filepath)
                and os.path.isfile(filepath + ".index")):
            filepath += ".index"
        hdf5_format.load_weights(self, filepath, by_name=by_name, skip_mismatch=skip_mismatch)

    def save(self, filepath, overwrite=True, include_optimizer=True, save_format=None,
             signatures=None, options=None, save_traces=True):
        """Saves a Sequential or functional model (architecture, weights, compile arguments
        and optimizer state) in Keras 2's HDF5 format (``models.saving``), whatever the file
        name: the SavedModel format is not written.

        Raises:
          NotImplementedError: a subclassed model (Keras's HDF5 message).
        """
        from ..models import saving

        saving.save_model(self, filepath, overwrite=overwrite,
                          include_optimizer=include_optimizer)

    def to_json(self, **kwargs) -> str:
        """The model's architecture as Keras 2's JSON (``models.model_from_json`` reads it)."""
        import json

        from ..models import saving

        return json.dumps({"class_name": type(self).__name__ if type(self).__name__ in (
            "Sequential", "Functional") else "Functional" if self._is_graph_network
            else type(self).__name__, "config": self.get_config(),
            "keras_version": "2.6.0", "backend": "tensorflow"},
            default=saving._json_default, **kwargs)

    def reset_states(self):
        for layer in self.layers:
            if hasattr(layer, "reset_states") and getattr(layer, "stateful", False):
                layer.reset_states()

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """A model from its config: a functional model's config (``layers``,
        ``input_layers``, ``output_layers``) rebuilds the graph, as TF-Keras does; any other
        config holds the constructor's keyword arguments."""
        if isinstance(config, dict) and {"layers", "input_layers",
                                         "output_layers"} <= set(config):
            from .functional import Functional

            return Functional.from_config.__func__(cls, config, custom_objects)
        return super().from_config(config)

    def get_config(self) -> dict:
        try:
            return Layer.get_config(self)
        except NotImplementedError:
            _log.warning("Model's `__init__()` arguments contain non-serializable objects. "
                         "Please implement a `get_config()` method in the subclassed Model "
                         "for proper saving and loading. Defaulting to empty config.")
            return {}


def _feeding(runner):
    """The IPU runner as a context that stops its infeed's reader on exit (a no-op on the
    host path)."""
    return contextlib.nullcontext() if runner is None else runner


def _epochs(handler, runner):
    """The epochs of one loop: the data handler's, fed through the runner's infeed on an
    IPUStrategy."""
    return handler.enumerate_epochs() if runner is None else runner.epochs(handler)


def _is_sequential(model) -> bool:
    from .sequential import Sequential

    return isinstance(model, Sequential)


def _numpy(t):
    if isinstance(t, Tensor):
        return t.numpy()  # syncs device
    return t


def _zeros_like_shapes(input_shape):
    """Zeros Tensors for a (structure of) batch input shape(s), unknown dimensions 1."""
    from ...core.convert import convert_to_tensor
    from ...core.spec import TensorShape
    from .. import backend

    def leaf(shape):
        dims = shape.as_list() if isinstance(shape, TensorShape) else list(shape)
        return convert_to_tensor(np.zeros([1 if d is None else int(d) for d in dims],
                                          dtype=backend.floatx()))

    def is_shape(s):
        return isinstance(s, TensorShape) or (
            isinstance(s, (list, tuple)) and all(d is None or isinstance(d, (int, np.integer))
                                                 for d in s))

    if is_shape(input_shape):
        return leaf(input_shape)
    if isinstance(input_shape, dict):
        return {k: _zeros_like_shapes(v) for k, v in input_shape.items()}
    return [_zeros_like_shapes(s) for s in input_shape]


def _is_hdf5_filepath(filepath: str) -> bool:
    """Keras 2's ``saving_utils.is_hdf5_filepath``."""
    return filepath.endswith((".h5", ".keras", ".hdf5"))
