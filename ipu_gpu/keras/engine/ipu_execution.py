"""Keras ``fit``/``evaluate``/``predict`` as programs on the emulated IPU device: Graphcore's
Keras extensions (``keras/ipu/extensions/extensions_base.py``) for a model that runs under an
``IPUStrategy`` created with ``enable_keras_extensions=True`` (the default).

One execution of ``steps_per_execution`` steps is one program (``IPUStrategy``'s
``_call_for_each_replica``: ``emulation/engine.run`` on the strategy's device). The host sees
the metrics and calls the batch callbacks only between programs. The replication factor is
the device's IPU count (an unpipelined model is one shard). Each replica runs
``steps // R`` steps of the epoch; at step k replica r takes data element ``k * R + r``
(consecutive elements to consecutive replicas, as an ``IPUInfeedQueue`` feeds them). The
elements come through an infeed that reads ``set_infeed_queue_options(prefetch_depth=...)``
elements ahead of the device while each program runs (``feeds.py``, which also checks the
infeed's and outfeed's options as Graphcore's Keras and the queue constructors do).

A training step per replica: forward with ``training=True``, compiled loss plus
``model.losses``, gradients, then every replica all-reduces (SUMS, as Keras's optimizer does
under IPUStrategy: ``cross_replica_sum``; the loss is not divided by R) and applies the
update to its own copy of the weights and optimizer slots (every replica holds one, as on an
IPU: ``core/tensor.py``'s per-replica variables; the host sees replica 0's). With
``set_gradient_accumulation_options(gradient_accumulation_steps_per_replica=N)`` each replica
accumulates N steps of gradients (SUM, MEAN or RUNNING_MEAN, Graphcore's
``GradientAccumulationOptimizerV2``) and the update, with its all-reduce, happens once per N
steps; ``steps_per_execution`` must be a multiple of N (Graphcore's RuntimeError).

Metrics: every replica updates its own copy of the metric state (per-replica variables); at
the end of an execution each replica reads its results and the host's logs are their
reduction by ``set_replication_options(replicated_metric_reduction_method=...)``: NONE
(Graphcore's default) the last replica's (the outfeed's ``[-1]``), SUM and MEAN over the
replicas, LIST every replica's value in replica order. The metric objects on the host hold
replica 0's state.

Pipelined models train as their unpipelined twins with the pipeline's gradient accumulation
(``pipelining.py``); their stages only set the IPUs a replica takes, and the accumulation
(fit) or ``steps_per_execution`` (evaluate, predict) must fill the schedule as on an IPU
(``pipelining.check_pipeline``: FailedPreconditionError when the pipeline compiles). A layer
that assigns its own variables in ``call`` (BatchNormalization's moving statistics) updates
its replica's copy, as on an IPU. Not emulated: asynchronous callbacks (accepted; callbacks
run between programs anyway).
"""

from __future__ import annotations

import logging

import numpy as np

from ...core import nest
from ...core.convert import convert_to_tensor
from ...core.indexed_slices import IndexedSlices
from ...core.tape import GradientTape
from ...ipu.gradient_accumulation import GradientAccumulationReductionMethod
from . import call_context, data_adapter, pipeline_stages

__all__ = ["GradientAccumulationReductionMethod", "IPUOptions", "runner_for"]

_log = logging.getLogger("ipu_gpu.keras")


_METRIC_REDUCTIONS = ("NONE", "LIST", "SUM", "MEAN")


class IPUOptions:
    """The IPU options a model keeps (``set_gradient_accumulation_options`` and friends)."""

    def __init__(self):
        self.gradient_accumulation_steps_per_replica = None
        self.gradient_accumulation_reduction_method = GradientAccumulationReductionMethod.SUM
        self.gradient_accumulation_optimizer_kwargs = {}
        self.pipelining_gradient_accumulation_steps_per_replica = None
        self.pipelining_device_mapping = None
        self.pipelining_kwargs = {}
        self.pipeline_stage_assignment = None
        self.infeed_kwargs = {}
        self.outfeed_kwargs = {}
        self.asynchronous_callbacks = False
        self.replicated_metric_reduction_method = "NONE"

    def reset(self):
        """Compiled state is rebuilt at the next run (nothing is cached here)."""

    def set_gradient_accumulation(self, steps, reduction_method, use_v2, optimizer_kwargs):
        method = GradientAccumulationReductionMethod.parse(reduction_method)
        if steps is not None:
            if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
                raise ValueError("Expected `gradient_accumulation_steps_per_replica` to be a "
                                 f"positive integer, but got {steps} instead.")
            self.gradient_accumulation_steps_per_replica = steps
        if "opt" in optimizer_kwargs:
            raise ValueError("Found `opt` key in `gradient_accumulation_optimizer_kwargs`. This "
                             "is not supported as the optimizer which the model has been "
                             "compiled with is automatically wrapped.")
        if "num_mini_batches" in optimizer_kwargs:
            raise ValueError("Found `num_mini_batches` key in "
                             "`gradient_accumulation_optimizer_kwargs`. Set the "
                             "`gradient_accumulation_steps_per_replica` argument to "
                             "`set_gradient_accumulation_options` instead.")
        if "experimental_normalize_gradients" in optimizer_kwargs:
            raise ValueError("Found `experimental_normalize_gradients` argument to "
                             "`set_gradient_accumulation_options`. This argument has now been "
                             "removed, use `gradient_accumulation_reduction_method` instead.")
        self.gradient_accumulation_reduction_method = method
        self.gradient_accumulation_optimizer_kwargs = dict(optimizer_kwargs)

    def set_pipelining(self, steps, device_mapping, accumulate_outfeed, reduction_method,
                       kwargs):
        method = GradientAccumulationReductionMethod.parse(reduction_method)
        if steps is not None:
            if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
                raise ValueError("Expected `gradient_accumulation_steps_per_replica` to be a "
                                 f"positive integer, but got {steps} instead.")
            self.pipelining_gradient_accumulation_steps_per_replica = steps
        if device_mapping is not None:
            if not isinstance(device_mapping, list) or not all(
                    isinstance(x, int) for x in device_mapping):
                raise ValueError("Expected `device_mapping` to be a list of integers.")
            self.pipelining_device_mapping = device_mapping
        from . import pipelining

        self.pipelining_kwargs = pipelining.validate_pipelining_kwargs(kwargs)
        self.gradient_accumulation_reduction_method = method

    def set_feed(self, which, kwargs):
        """Keep the infeed's or outfeed's options after Graphcore's eager checks
        (``feeds.check_*_options``); the queue constructors check the rest at fit time."""
        from . import feeds

        check = feeds.check_infeed_options if which == "infeed" else feeds.check_outfeed_options
        check(kwargs)
        setattr(self, f"{which}_kwargs", dict(kwargs))

    def set_replication(self, method):
        name = getattr(method, "name", method)
        if not isinstance(name, str) or name.upper() not in _METRIC_REDUCTIONS:
            raise ValueError(f"Cannot parse {method} as a ReplicatedMetricReductionMethod. Valid "
                             f"values are: {', '.join(_METRIC_REDUCTIONS)}.")
        self.replicated_metric_reduction_method = name.upper()


def _ipu_strategy(model):
    from ...ipu.ipu_strategy import IPUStrategyV1

    strategy = model.distribute_strategy
    if isinstance(strategy, IPUStrategyV1) and strategy._enable_keras_extensions:
        return strategy
    return None


def _overridden(model, name) -> bool:
    from .training import Model

    return getattr(type(model), name) is not getattr(Model, name)


def _raise_overridden(model, fn_name):
    raise RuntimeError(f"The function `{fn_name}` for the model {model.name} has been "
                       "overridden. This is not supported when using Keras within an "
                       "IPUStrategy. Either remove the override from your model definition or "
                       "set `enable_keras_extensions=False` when creating the IPUStrategy.")


def runner_for(model, mode):
    """A ``Runner`` when ``model`` runs under an IPUStrategy with Keras extensions, else
    None.

    Raises:
      RuntimeError: ``run_eagerly``, or an overridden ``train_step``/``make_*_function``
        (Graphcore's messages).
    """
    strategy = _ipu_strategy(model)
    if strategy is None:
        return None
    if model.run_eagerly:
        raise RuntimeError("Keras models cannot run eagerly when using `IPUStrategy`. Set "
                           "`run_eagerly=False` when calling `compile`.")
    make = {"fit": "make_train_function", "evaluate": "make_test_function",
            "predict": "make_predict_function"}[mode]
    if _overridden(model, make):
        _raise_overridden(model, make)
    if mode == "fit" and _overridden(model, "train_step"):
        _raise_overridden(model, "train_step")
    return Runner(model, strategy, mode)


def _batch_size(element) -> int:
    """The leading dimension of an infeed element's first tensor (1 for scalars)."""
    x, _, _ = data_adapter.unpack_x_y_sample_weight(element)
    for leaf in nest.flatten(x):
        shape = getattr(leaf, "shape", None)
        if shape is not None:
            return int(shape[0]) if len(shape) else 1
    return 1


class Runner:
    """Runs the executions of one ``fit``/``evaluate``/``predict`` call on the device."""

    def __init__(self, model, strategy, mode):
        from . import pipelining

        self.model = model
        self.strategy = strategy
        self.mode = mode
        num_ipus = strategy.extended._device().num_ipus
        options = model._ipu_options
        self.pipeline = (options.pipeline_stage_assignment
                         or pipelining.from_nodes(model, quiet=True))
        per_replica = 1
        if self.pipeline:
            shards = pipelining.shard_count(self.pipeline, options.pipelining_device_mapping)
            per_replica = pipelining.ipus_per_replica(shards)
            if shards > num_ipus:
                raise ValueError(f"Current device has {num_ipus} IPUs attached, however the "
                                 f"current model requires a multiple of {per_replica} IPUs.")
        self.replication_factor = max(1, num_ipus // per_replica)
        self.ipus_per_replica = per_replica
        if self.pipeline:  # each stage's layers charge their IPU
            pipeline_stages.install(model, self.pipeline, options.pipelining_device_mapping)
        else:
            pipeline_stages.uninstall(model)
        self.gradient_accumulation = 1
        self.samples = 0  # samples the executions consumed, over all replicas
        self.counter = {"fit": model._train_counter, "evaluate": model._test_counter,
                        "predict": model._predict_counter}[mode]
        self.infeed = None  # feeds.Infeed of the current data iterator

    # ---- the feeds ---------------------------------------------------------------------
    def epochs(self, handler):
        """``handler.enumerate_epochs()`` fed through an infeed (``feeds.py``): the outfeed's
        and infeed's options are checked by their queue constructors first, as Graphcore's
        Keras makes its queues when the loop starts; one infeed per data iterator. The
        infeed's reader stops when the loop ends, however it ends."""
        from . import feeds

        options = self.model._ipu_options
        feeds.outfeed_for(options.outfeed_kwargs)
        depth = feeds.prefetch_depth_for(options.infeed_kwargs)
        try:
            for epoch, iterator in handler.enumerate_epochs():
                if self.infeed is None or self.infeed.iterator is not iterator:
                    self.close()
                    self.infeed = feeds.Infeed(iterator, depth)
                yield epoch, iterator
        finally:
            self.close()

    def close(self):
        """Stop the infeed's reader, if any."""
        infeed, self.infeed = self.infeed, None
        if infeed is not None:
            infeed.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def prepare(self, handler):
        """Check the execution length against the gradient accumulation (fit) and a
        pipeline's depth against its schedule (``pipelining.check_pipeline``: fit's
        accumulation, or evaluate's and predict's ``steps_per_execution``)."""
        from . import pipelining

        spe = handler.steps_per_execution
        options = self.model._ipu_options
        if self.mode != "fit":
            if self.pipeline:
                pipelining.check_pipeline(self.pipeline, options.pipelining_device_mapping,
                                       options.pipelining_kwargs, spe, training=False)
            return
        mode_message = ""
        if self.pipeline:
            mode_message = "pipelined "
            steps = options.pipelining_gradient_accumulation_steps_per_replica
            if steps is None:
                raise ValueError(
                    "The model which you are attempting to train is pipelined, however "
                    "`gradient_accumulation_steps_per_replica` has not been set through "
                    "`set_pipelining_options()`. You need to set this value as pipelined "
                    "models will perform gradient accumulation when training.")
        else:
            steps = options.gradient_accumulation_steps_per_replica
        if steps is None:
            self.gradient_accumulation = 1
        elif spe % steps != 0:
            raise RuntimeError(
                f"The {mode_message}model has been configured to use gradient accumulation for "
                "training, "
                f"however the current `steps_per_execution` value (set to {spe}) is not "
                "divisible by `gradient_accumulation_steps_per_replica` "
                f"({steps}). You need to adjust either `steps_per_execution` or"
                "`gradient_accumulation_steps_per_replica` to make sure that "
                "`steps_per_execution` is divisible by "
                "`gradient_accumulation_steps_per_replica`.")
        else:
            self.gradient_accumulation = steps
        if self.pipeline:
            pipelining.check_pipeline(self.pipeline, options.pipelining_device_mapping,
                                   options.pipelining_kwargs, steps, training=True)
        r, ga = self.replication_factor, self.gradient_accumulation
        if r > 1 or ga > 1:
            batch = handler.batch_size
            _log.info("Training is%s%s%s, your effective batch size is %s.",
                      " distributed" if r > 1 else " not distributed",
                      f" and accumulating {ga} batches per optimizer step" if ga > 1 else "",
                      f" across {r} replicas" if r > 1 else "",
                      None if batch is None else batch * ga * r)

    # ---- the function the training loop calls ------------------------------------------
    def function(self, iterator, steps, done):
        """One execution: ``steps`` steps on every replica; returns the logs (metrics) or,
        for predict, the outputs of every step and replica in data order."""
        infeed = self.infeed
        if infeed is None or infeed.iterator is not iterator:
            raise RuntimeError("Runner.function: the iterator is not the one `epochs` feeds")
        elements = infeed.take(steps * self.replication_factor)  # the execution's infeed
        self.samples += sum(_batch_size(element) for element in elements)
        self._build_on_host(elements[0])  # before the reader runs beside the host
        infeed.read_ahead()
        try:
            return self._execute(elements, steps, done)
        finally:
            infeed.settle()

    def run_single(self, data):
        """``*_on_batch``: one step, every replica on the same batch."""
        return self._execute([data] * self.replication_factor, 1, [0])

    def _execute(self, elements, steps, done):
        model = self.model
        self._build_on_host(elements[0])
        mode = self.mode
        slots = [None] * (steps * self.replication_factor)
        replica_logs = [None] * self.replication_factor
        if mode == "fit":
            program = self._train_program(elements, steps, replica_logs)
        elif mode == "evaluate":
            program = self._test_program(elements, steps, replica_logs)
        else:
            program = self._predict_program(elements, steps, slots)
        self.strategy.extended._call_for_each_replica(program, (), {},
                                                      num_shards=self.ipus_per_replica)
        self.counter.assign_add(steps)
        done[0] += steps
        if mode == "predict":
            from .training import concat_outputs

            return concat_outputs(slots)
        return _reduce_logs(replica_logs, model._ipu_options.replicated_metric_reduction_method)

    def _build_on_host(self, data):
        """Create the weights (and the optimizer's) on the host before the first program,
        as Graphcore builds the model before compiling it."""
        model = self.model
        if not model.built:
            x, _, _ = data_adapter.unpack_x_y_sample_weight(data_adapter.expand_1d(data))
            with call_context.enter(model, False, probing=True):
                model(x, training=False)
        if self.mode == "fit":
            optimizer = model.optimizer
            create = getattr(optimizer, "_create_all_weights", None)
            if create is not None:
                create(model.trainable_variables)

    # ---- the programs ------------------------------------------------------------------
    def _replica(self):
        from ...emulation import context

        ctx = context.current()
        return ctx.replica_index, ctx.program

    def _train_program(self, elements, steps, replica_logs):
        model, r_count, ga = self.model, self.replication_factor, self.gradient_accumulation
        method = model._ipu_options.gradient_accumulation_reduction_method

        def program():
            r, _ = self._replica()
            accumulated = None
            for k in range(steps):
                accumulated = _train_step(model, elements[k * r_count + r], accumulated,
                                          k % ga, ga, method)
            replica_logs[r] = _metric_values(model)

        return program

    def _test_program(self, elements, steps, replica_logs):
        model, r_count = self.model, self.replication_factor
        custom = _overridden(model, "test_step")

        def program():
            r, _ = self._replica()
            for k in range(steps):
                data = elements[k * r_count + r]
                if custom:
                    model.test_step(data)
                else:
                    _test_step(model, data)
            replica_logs[r] = _metric_values(model)

        return program

    def _predict_program(self, elements, steps, slots):
        model, r_count = self.model, self.replication_factor

        def program():
            r, _ = self._replica()
            for k in range(steps):
                out = model.predict_step(elements[k * r_count + r])
                slots[k * r_count + r] = nest.map_structure(
                    lambda t: t.numpy() if hasattr(t, "numpy") else t, out)  # syncs device

        return program


def _metric_values(model) -> dict:
    """The replica's own metric results as numpy values (its copies of the metric state)."""
    return {k: np.asarray(v.numpy() if hasattr(v, "numpy") else v)  # syncs device
            for k, v in model.get_metrics_result().items()}


def _reduce_logs(replica_logs, method) -> dict:
    """The host's logs of one execution from every replica's metrics, by Graphcore's
    ``ReplicatedMetricReductionMethod``: NONE the last replica's, SUM and MEAN over the
    replicas, LIST every replica's value in replica order."""
    last = replica_logs[-1]
    if method == "NONE" or len(replica_logs) == 1 and method != "LIST":
        return dict(last)
    out = {}
    for key in last:
        values = np.stack([logs[key] for logs in replica_logs])
        if method == "SUM":
            out[key] = values.sum(axis=0, dtype=values.dtype)
        elif method == "MEAN":
            out[key] = values.mean(axis=0, dtype=values.dtype)
        else:
            out[key] = values
    return out


def _accumulate(acc, grads, micro, ga, method):
    if acc is None:
        acc = [None] * len(grads)
    out = []
    for a, g in zip(acc, grads):
        if g is None:
            out.append(a)
            continue
        if isinstance(g, IndexedSlices):  # dense accumulators, as Graphcore's
            g = convert_to_tensor(g)
        if method is GradientAccumulationReductionMethod.MEAN:
            g = g * (1.0 / ga)
        if a is None:  # the first step (RUNNING_MEAN too: acc*0/1 + g/1)
            a = g
        elif method is GradientAccumulationReductionMethod.RUNNING_MEAN:
            a = a * (micro / (micro + 1.0)) + g * (1.0 / (micro + 1.0))
        else:
            a = a + g
        out.append(a)
    return out


def _train_step(model, data, accumulated, micro, ga, method):
    """One step of one replica (see the module docstring); returns the gradient
    accumulators (None after an update)."""
    data = data_adapter.expand_1d(data)
    x, y, sample_weight = data_adapter.unpack_x_y_sample_weight(data)
    with GradientTape() as tape:
        y_pred = model(x, training=True)
        loss = model.compiled_loss(y, y_pred, sample_weight,
                                   regularization_losses=model.losses)
    model._validate_target_and_loss(y, loss)
    optimizer = model.optimizer
    variables = model.trainable_variables
    with pipeline_stages.backward(model):  # a pipelined model: its last stage's IPU
        grads_and_vars = optimizer._compute_gradients(loss, variables, tape=tape)
    model.compiled_metrics.update_state(y, y_pred, sample_weight)
    if ga > 1:
        accumulated = _accumulate(accumulated, [g for g, _ in grads_and_vars], micro, ga,
                                  method)
        if micro < ga - 1:
            return accumulated
        grads_and_vars = list(zip(accumulated, variables))
    grads_and_vars = [(g, v) for g, v in grads_and_vars if g is not None]
    grads_and_vars = optimizer._transform_unaggregated_gradients(grads_and_vars)
    grads_and_vars = optimizer._aggregate_gradients(grads_and_vars)  # cross_replica_sum
    # every replica updates its own copy of the weights (core.tensor's per-replica variables)
    optimizer.apply_gradients(grads_and_vars, experimental_aggregate_gradients=False)
    return None


def _test_step(model, data):
    data = data_adapter.expand_1d(data)
    x, y, sample_weight = data_adapter.unpack_x_y_sample_weight(data)
    y_pred = model(x, training=False)
    model.compiled_loss(y, y_pred, sample_weight, regularization_losses=model.losses)
    model.compiled_metrics.update_state(y, y_pred, sample_weight)
