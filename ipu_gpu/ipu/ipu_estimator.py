"""``tensorflow.python.ipu.ipu_estimator``: ``IPUEstimator`` and ``IPUEstimatorSpec``.

As Graphcore's: the estimator wraps the user's ``model_fn`` in one that calls ``input_fn``
itself, feeds its dataset through an ``IPUInfeedQueue``, and compiles (``ipu_compiler``, on
``/device:IPU:<ordinal>``) a ``loops.repeat`` of ``iterations_per_loop`` calls of the
``model_fn``; each ``Session.run`` runs that loop on every replica and a host hook advances
the global step by ``iterations_per_loop``. Training reports the loop's mean loss (the mean
over replicas too, when ``iterations_per_loop > 1``; replica 0's loss when it is 1);
evaluation sends the metrics' update values (or ``eval_metrics``' tensors) through an
outfeed; prediction sends the predictions through an outfeed and yields them one example
at a time. ``host_call`` tensors come back through an outfeed (replica 0's values) and the
host function runs after the loop in the same ``Session.run``.

``IPURunConfig.num_shards`` only sizes the device (``num_replicas * num_shards`` IPUs): as
in the SDK, a replica takes the IPUs of its highest ``ipu_shard`` index (rounded up to a
power of two; one without sharding takes one), so a ``model_fn`` that does not shard runs
``num_replicas * num_shards`` replicas.
"""

from __future__ import annotations

import collections
import itertools

from ..estimator import estimator as estimator_lib
from ..estimator import model_fn as model_fn_lib
from ..estimator.hooks import SessionRunHook
from ..estimator.model_fn import EstimatorSpec, ModeKeys
from . import ipu_run_config

__all__ = ["IPUEstimator", "IPUEstimatorSpec"]

_INITIAL_LOSS = 0.0
_INPUT_FN_KEY = "input_fn"
_BATCH_SIZE_KEY = "batch_size"
_RESERVED_PARAMS_KEYS = [_INPUT_FN_KEY]


def _validate_function_call_spec(call_spec, name, allow_dict_arg=False):
    if call_spec is None:
        return
    if not isinstance(call_spec, tuple):
        raise TypeError(f"`{name}` must be a tuple")
    if len(call_spec) != 2:
        raise ValueError(f"`{name}` must have two elements")
    if not callable(call_spec[0]):
        raise TypeError(f"first element in `{name}` must be callable")
    allowed = (list, dict) if allow_dict_arg else (list,)
    if not isinstance(call_spec[1], allowed):
        raise TypeError(f"second element in `{name}` must be a "
                        f"{' or '.join(t.__name__ for t in allowed)}")


class IPUEstimatorSpec(collections.namedtuple("IPUEstimatorSpec", [
        "mode", "predictions", "loss", "train_op", "eval_metric_ops", "eval_metrics",
        "host_call", "training_hooks", "evaluation_hooks", "prediction_hooks"])):
    """Ops and objects returned from a ``model_fn`` and passed to ``IPUEstimator``: an
    ``EstimatorSpec`` plus ``eval_metrics`` (``(fn, tensors)``: ``fn`` runs on the host on
    the tensors every iteration enqueued, returning metrics) and ``host_call`` (``(fn,
    [tensors])``: ``fn`` runs on the host after each training step).

    Raises:
      ValueError/TypeError: as ``EstimatorSpec``; a malformed ``host_call``/``eval_metrics``
        (Graphcore's messages)."""

    def __new__(cls, mode, predictions=None, loss=None, train_op=None, eval_metric_ops=None,
                eval_metrics=None, host_call=None, training_hooks=None, evaluation_hooks=None,
                prediction_hooks=None):
        train_op = model_fn_lib.validate_train_op(train_op, mode)
        loss = model_fn_lib.validate_loss(loss, mode)
        predictions = model_fn_lib.validate_predictions(predictions, mode)
        training_hooks = model_fn_lib.validate_hooks(training_hooks)
        evaluation_hooks = model_fn_lib.validate_hooks(evaluation_hooks)
        prediction_hooks = model_fn_lib.validate_hooks(prediction_hooks)
        eval_metric_ops = model_fn_lib.validate_eval_metric_ops(eval_metric_ops)
        _validate_function_call_spec(host_call, "host_call")
        _validate_function_call_spec(eval_metrics, "eval_metrics", allow_dict_arg=True)
        return super().__new__(cls, mode, predictions, loss, train_op, eval_metric_ops,
                               eval_metrics, host_call, training_hooks, evaluation_hooks,
                               prediction_hooks)


# ---- the hooks the estimator installs -------------------------------------------------------
class _IPUConfigureIPUSystemHook(SessionRunHook):
    def __init__(self, run_config):
        self._run_config = run_config

    def begin(self):
        from ..emulation import system

        options = self._run_config.ipu_options
        if options is not None:
            options.configure_ipu_system()
        elif not system.is_configured():
            from .config import IPUConfig

            options = IPUConfig()
            options.auto_select_ipus = 1
            options.configure_ipu_system()


class _IPUInfeedLifecycleHook(SessionRunHook):
    def __init__(self, infeed):
        self._infeed = infeed

    def after_create_session(self, session, coord):
        session.run(self._infeed.initializer)

    def end(self, session):
        session.run(self._infeed.deleter)


class _IPUGlobalStepCounterAndStopHook(SessionRunHook):
    """Advances the global step by ``iterations_per_loop`` after each run (the IPU ran that
    many steps) and stops at ``final_step`` (``num_steps`` after the session's start)."""

    def __init__(self, iterations_per_loop, num_steps, final_step):
        if num_steps is None and final_step is None:
            raise ValueError("One of `num_steps` or `final_step` must be specified.")
        if num_steps is not None and final_step is not None:
            raise ValueError("Only one of `num_steps` or `final_step` can be specified.")
        self._iterations_per_loop = iterations_per_loop
        self._num_steps, self._final_step = num_steps, final_step

    def begin(self):
        from ..graph.optimizers import get_global_step

        self._global_step = get_global_step()
        self._increment = self._global_step.assign_add(self._iterations_per_loop)

    def after_create_session(self, session, coord):
        step = int(session.run(self._global_step))
        if self._final_step is None:
            self._final_step = step + self._num_steps

    def after_run(self, run_context, run_values):
        step = int(run_context.session.run(self._increment))
        if step >= self._final_step:
            run_context.request_stop()


# ---- the wrapped model_fn ---------------------------------------------------------------------
def _unpack_features_and_labels(args, kwargs):
    if args and kwargs:
        raise ValueError("Invalid dataset with both tuple and keywords")
    if not args and not kwargs:
        raise ValueError("Invalid dataset with neither tuple nor keywords")
    if kwargs:
        return kwargs, None
    if len(args) == 1:
        return args[0], None
    if len(args) == 2:
        return args[0], args[1]
    raise ValueError(f"Invalid dataset tuple, expected 1 or 2 elements, got {len(args)}")


def _body_arguments(inputs):
    if isinstance(inputs, dict):
        return [], inputs
    if isinstance(inputs, (list, tuple)):
        return list(inputs), {}
    return [inputs], {}


def _graph_ops():
    from ..graph.core import get_default_graph

    return get_default_graph().get_operations()


def _validate_global_step_not_incremented():
    for op in _graph_ops():
        if op.type == "AssignAdd" and op.inputs and "global_step" in op.inputs[0].name:
            raise ValueError(
                "Illegal increment of the `global_step` variable in the `model_fn`. This is "
                "usually caused by passing it as an argument to the `Optimizer.minimize()` "
                "function. Please remove this argument as the IPUEstimator itself is "
                "responsible for incrementing it.")


def _validate_replicated_training_graph():
    if any(op.type in ("cross_replica_sum", "cross_replica_mean") for op in _graph_ops()):
        return
    raise ValueError("This is not a valid replicated training graph because no "
                     "IpuCrossReplicaSum or IpuCrossReplicaMeanoperations were found. Did you "
                     "remember to use the "
                     "`tensorflow.python.ipu.optimizers.CrossReplicaOptimizer`?")


def _extract_metric_values(eval_dict):
    values = {}
    for name, (_, update_op) in sorted(eval_dict.items()):
        model_fn_lib.check_is_tensor(update_op, "update_op")
        values[name] = update_op
    return values


class _ModelFnWrapper:
    """Builds the training, evaluation and prediction loops around the user's model_fn and
    the host side that reads their results."""

    def __init__(self, model_fn, config, params, infeed_queue, outfeed_queue):
        self._model_fn, self._config, self._params = model_fn, config, params
        self._infeed_queue, self._outfeed_queue = infeed_queue, outfeed_queue
        run = config.ipu_run_config
        self._iterations_per_loop = run.iterations_per_loop
        self._replication_factor = run.num_replicas
        self.captured_hooks = []
        self._host_call_fn = None
        self._host_call_feed = None
        self._eval_metrics_fn = None

    @staticmethod
    def need_outfeed(mode):
        return mode != ModeKeys.TRAIN

    def _loop_replica_mean(self, loop_sum):
        if self._replication_factor == 1:
            return loop_sum / self._iterations_per_loop
        from ..ops.collectives import cross_replica_sum

        return cross_replica_sum(loop_sum) / (self._iterations_per_loop *
                                              self._replication_factor)

    def _capture_hooks(self, hooks):
        if hooks:
            self.captured_hooks = list(hooks)

    def _capture_host_call(self, host_call):
        from .ipu_outfeed_queue import IPUOutfeedMode, IPUOutfeedQueue

        fn, tensors = host_call
        for t in tensors:
            model_fn_lib.check_is_tensor_or_operation(t, "`host_call` argument")
        self._host_call_fn = fn
        self._host_call_feed = IPUOutfeedQueue(outfeed_mode=IPUOutfeedMode.LAST)
        return self._host_call_feed.enqueue(list(tensors))

    def _call_model_fn(self, features, labels, mode):
        spec = estimator_lib.call_with_taken_args(
            self._model_fn, mode, self._params, self._config,
            **estimator_lib.model_fn_inputs(self._model_fn, features, labels))
        if not isinstance(spec, (IPUEstimatorSpec, EstimatorSpec)):
            raise ValueError("`model_fn` must return IPUEstimatorSpec or EstimatorSpec")
        return spec

    # training
    def create_training_loop(self):
        import ipu_gpu as core

        from ..graph.program import control_dependencies
        from . import loops

        def training_step(total_loss, *args, **kwargs):
            features, labels = _unpack_features_and_labels(args, kwargs)
            spec = self._call_model_fn(features, labels, ModeKeys.TRAIN)
            if spec.loss is None:
                raise ValueError("EstimatorSpec must contain loss when training")
            if spec.train_op is None:
                raise ValueError("EstimatorSpec must contain train_op when training")
            self._capture_hooks(spec.training_hooks)
            deps = [spec.train_op]
            if isinstance(spec, IPUEstimatorSpec) and spec.host_call is not None:
                if self._iterations_per_loop > 1:
                    raise ValueError("host_call is not allowed for iterations_per_loop > 1")
                deps.append(self._capture_host_call(spec.host_call))
            with control_dependencies(deps):
                total_loss = total_loss + core.cast(spec.loss, core.float32)
            _validate_global_step_not_incremented()
            if self._replication_factor > 1:
                _validate_replicated_training_graph()
            return total_loss

        def training_loop():
            total = loops.repeat(self._iterations_per_loop, training_step,
                                 inputs=[_INITIAL_LOSS], infeed_queue=self._infeed_queue)
            if self._iterations_per_loop == 1:
                return total  # Graphcore's loop-free step: this replica's loss
            return self._loop_replica_mean(total)
        return training_loop

    def get_training_loss_and_op(self, compiled):
        loss = compiled[0]
        if self._host_call_fn is None:
            return loss, loss
        from ..graph.program import control_dependencies

        with control_dependencies([loss]):
            received = self._host_call_feed.dequeue()
        if self._replication_factor > 1:
            received = [t[0] for t in received]
        train_op = self._host_call_fn(*received)
        model_fn_lib.check_is_tensor_or_operation(train_op, "`host_call` return value")
        return loss, train_op

    # evaluation
    def create_evaluation_loop(self):
        import ipu_gpu as core

        from . import loops

        def evaluation_step(total_loss, *args, **kwargs):
            features, labels = _unpack_features_and_labels(args, kwargs)
            spec = self._call_model_fn(features, labels, ModeKeys.EVAL)
            if spec.loss is None:
                raise ValueError("EstimatorSpec must contain loss when evaluating")
            eval_metric_ops = spec.eval_metric_ops
            eval_metrics = getattr(spec, "eval_metrics", None)
            if not eval_metric_ops and not eval_metrics:
                raise ValueError("EstimatorSpec must contain either eval_metric_ops or "
                                 "eval_metrics when evaluating")
            if eval_metric_ops and eval_metrics:
                raise ValueError("EstimatorSpec cannot contain both eval_metric_ops and "
                                 "eval_metrics")
            self._capture_hooks(spec.evaluation_hooks)
            if eval_metric_ops:
                values = _extract_metric_values(eval_metric_ops)
            else:
                self._eval_metrics_fn, values = eval_metrics
            total_loss = total_loss + core.cast(spec.loss, core.float32)
            return total_loss, self._outfeed_queue.enqueue(values)

        def evaluation_loop():
            total = loops.repeat(self._iterations_per_loop, evaluation_step,
                                 inputs=[_INITIAL_LOSS], infeed_queue=self._infeed_queue)
            return self._loop_replica_mean(total)
        return evaluation_loop

    def get_evaluation_loss_and_metrics(self, compiled):
        import ipu_gpu as core

        from ..graph.nodes import no_op
        from ..graph.program import control_dependencies

        loss = compiled[0]
        if self._eval_metrics_fn is not None:
            with control_dependencies(compiled):
                inputs = self._outfeed_queue.dequeue(wait_for_completion=True)
            args, kwargs = _body_arguments(inputs)
            return loss, self._eval_metrics_fn(*args, **kwargs)
        metrics = self._outfeed_queue.dequeue(wait_for_completion=True)
        # the last enqueued value is the metric accumulated so far; mean over replicas
        return loss, {name: (core.reduce_mean(value[-1]), no_op())
                      for name, value in metrics.items()}

    # prediction
    def create_prediction_loop(self):
        from . import loops

        def prediction_step(*args, **kwargs):
            features, _ = _unpack_features_and_labels(args, kwargs)
            spec = self._call_model_fn(features, None, ModeKeys.PREDICT)
            if spec.predictions is None:
                raise ValueError("EstimatorSpec must contain predictions when predicting")
            self._capture_hooks(spec.prediction_hooks)
            return self._outfeed_queue.enqueue(spec.predictions)

        def prediction_loop():
            return loops.repeat(self._iterations_per_loop, prediction_step,
                                infeed_queue=self._infeed_queue)
        return prediction_loop

    def get_predictions(self, compiled):
        from ..graph.program import control_dependencies

        with control_dependencies([compiled]):
            return self._outfeed_queue.dequeue(wait_for_completion=True)


def _augment_model_fn(model_fn, wrapper_class, ipu_device):
    """The model_fn the base Estimator calls: it builds the input feed, the compiled loop of
    the user's model_fn and the host side, and returns a plain EstimatorSpec."""

    def _model_fn(features, labels, mode, config, params):
        del features, labels  # the input_fn is called here instead
        from ..data import Dataset
        from . import ipu_compiler
        from .ipu_infeed_queue import IPUInfeedQueue
        from .ipu_outfeed_queue import IPUOutfeedMode, IPUOutfeedQueue
        from .scopes import ipu_scope

        run = config.ipu_run_config
        dataset = estimator_lib.call_input_fn(params[_INPUT_FN_KEY], mode, params, config)
        if not isinstance(dataset, Dataset):
            raise ValueError("input_fn must return Dataset")
        hooks = [_IPUConfigureIPUSystemHook(run)]
        infeed = IPUInfeedQueue(dataset, prefetch_depth=run.prefetch_depth)
        hooks.append(_IPUInfeedLifecycleHook(infeed))
        outfeed = IPUOutfeedQueue(outfeed_mode=IPUOutfeedMode.ALL) \
            if wrapper_class.need_outfeed(mode) else None
        wrapped = wrapper_class(model_fn, config, params, infeed, outfeed)
        if mode == ModeKeys.TRAIN:
            loop = wrapped.create_training_loop()
        elif mode == ModeKeys.EVAL:
            loop = wrapped.create_evaluation_loop()
        elif mode == ModeKeys.PREDICT:
            loop = wrapped.create_prediction_loop()
        else:
            raise ValueError(f"Unknown mode: {mode}")
        with ipu_scope(ipu_device):
            compiled = ipu_compiler.compile(loop)
        if run.compile_summary:
            raise NotImplementedError(
                "Generating compilation summaries for the IPUEstimator through "
                "IPURunConfig.compile_summary is deprecated, is non-functional and will be "
                "removed in a future release. Use the PopVision suite of analysis tools to "
                "profile IPU programs.")
        hooks.extend(wrapped.captured_hooks)
        if mode == ModeKeys.TRAIN:
            loss, train_op = wrapped.get_training_loss_and_op(compiled)
            return EstimatorSpec(mode, loss=loss, train_op=train_op, training_hooks=hooks)
        if mode == ModeKeys.PREDICT:
            return EstimatorSpec(mode, predictions=wrapped.get_predictions(compiled),
                                 prediction_hooks=hooks)
        loss, metric_ops = wrapped.get_evaluation_loss_and_metrics(compiled)
        return EstimatorSpec(mode, loss=loss, eval_metric_ops=metric_ops,
                             evaluation_hooks=hooks)

    _model_fn.user_model_fn = model_fn  # what export_saved_model builds on the host
    return _model_fn


def _calc_batch_size(global_batch_size, num_workers, num_replicas, name):
    if global_batch_size is None:
        return None
    if global_batch_size < 1:
        raise ValueError(f"{name} (got {global_batch_size}) must be positive")
    batch_size, remainder = divmod(global_batch_size, num_workers * num_replicas)
    if remainder != 0:
        raise ValueError(f"{name} (got {global_batch_size}) must be divisible by "
                         f"num_workers * num_replicas ({num_workers} * {num_replicas})")
    return batch_size


class _IPUEstimatorBase(estimator_lib.Estimator):
    """What the IPU estimators share: the config and params checks, the step arithmetic,
    the batch sizes and the prediction flattening. A loop that runs past the end of its
    input raises ``OutOfRangeError`` (the IPU's fatal error), also in ``predict`` without
    ``num_predictions``."""

    _stop_at_end_of_input = False

    def __init__(self, model_fn, model_dir=None, config=None, params=None,
                 warm_start_from=None, train_batch_size=None, eval_batch_size=None,
                 predict_batch_size=None):
        if config is None or not isinstance(config, ipu_run_config.RunConfig):
            raise ValueError("`config` must be provided with type `ipu_run_config.RunConfig`")
        if params is not None and not isinstance(params, dict):
            raise ValueError("`params` is expected to be of type `dict`")
        if params is not None and any(k in params for k in _RESERVED_PARAMS_KEYS):
            raise ValueError(f"{_RESERVED_PARAMS_KEYS} are reserved keys but existed in "
                             f"params {params}.")
        self._any_batch_size_provided = any(b is not None for b in (
            train_batch_size, eval_batch_size, predict_batch_size))
        if self._any_batch_size_provided and params is not None and _BATCH_SIZE_KEY in params:
            raise ValueError(f"{_BATCH_SIZE_KEY} cannot be passed in params when a batch size "
                             f"argument is passed")
        replicas = config.ipu_run_config.num_replicas
        self._batch_size_for_train = _calc_batch_size(train_batch_size, 1, replicas,
                                                      "train_batch_size")
        self._batch_size_for_eval = _calc_batch_size(eval_batch_size, 1, replicas,
                                                     "eval_batch_size")
        self._batch_size_for_predict = _calc_batch_size(predict_batch_size, 1, replicas,
                                                        "predict_batch_size")
        super().__init__(model_fn=model_fn, model_dir=model_dir, config=config, params=params,
                         warm_start_from=warm_start_from)

    @property
    def params(self):
        return self._params  # the wrapped model_fn reads the input_fn from it

    def _setup_params(self, input_fn, batch_size):
        self._params[_INPUT_FN_KEY] = input_fn
        if self._any_batch_size_provided:
            if batch_size is not None:
                if "params" not in estimator_lib.fn_args(input_fn):
                    raise ValueError(f"input_fn must have params argument to receive "
                                     f"params['{_BATCH_SIZE_KEY}']")
                self._params[_BATCH_SIZE_KEY] = batch_size
            else:
                self._params.pop(_BATCH_SIZE_KEY, None)

    def _validate_steps(self, steps):
        iterations_per_loop = self.config.ipu_run_config.iterations_per_loop
        if steps is not None and steps % iterations_per_loop != 0:
            raise ValueError(f"steps ({steps}) must be a multiple of iterations_per_loop "
                             f"({iterations_per_loop})")

    def _get_features_and_labels_from_input_fn(self, input_fn, mode):
        return None, None, []

    def _convert_train_steps_to_hooks(self, steps, max_steps):
        return [_IPUGlobalStepCounterAndStopHook(
            self._config.ipu_run_config.iterations_per_loop, steps, max_steps)]

    def _convert_eval_steps_to_hooks(self, steps):
        return self._convert_train_steps_to_hooks(steps, max_steps=None)

    def train(self, input_fn, hooks=None, steps=None, max_steps=None, saving_listeners=None):
        """Trains for ``steps`` more steps or up to global step ``max_steps`` (one of them
        is needed); returns self.

        Raises:
          ValueError: ``steps`` not a multiple of ``iterations_per_loop``; neither or both
            of ``steps``/``max_steps``."""
        self._validate_steps(steps)
        self._setup_params(input_fn, self._batch_size_for_train)
        return super().train(input_fn=input_fn, hooks=hooks, steps=steps,
                             max_steps=max_steps, saving_listeners=saving_listeners)

    def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None, name=None):
        """Evaluates ``steps`` batches (needed: the IPU loop cannot stop at the end of the
        input) from the newest checkpoint; returns the metrics, ``loss`` and
        ``global_step``.

        Raises:
          ValueError: ``steps`` missing or not a multiple of ``iterations_per_loop``."""
        self._validate_steps(steps)
        self._setup_params(input_fn, self._batch_size_for_eval)
        return super().evaluate(input_fn=input_fn, hooks=hooks, steps=steps,
                                checkpoint_path=checkpoint_path, name=name)

    def predict(self, input_fn, predict_keys=None, hooks=None, checkpoint_path=None,
                yield_single_examples=True, num_predictions=None):
        """Yields predictions one example at a time (the loop's iterations and the batch
        flattened), ``num_predictions`` of them when given, else as long as the input
        lasts."""
        self._setup_params(input_fn, self._batch_size_for_predict)
        predictions = super().predict(input_fn=input_fn, predict_keys=predict_keys,
                                      hooks=hooks, checkpoint_path=checkpoint_path,
                                      yield_single_examples=yield_single_examples)
        return itertools.islice(_flatten_predictions(predictions), num_predictions)


def _flatten_predictions(predictions):
    for nested in predictions:
        if isinstance(nested, dict):
            for i in range(estimator_lib._batch_length(nested)):
                yield {key: value[i] for key, value in nested.items()}
        else:
            yield from nested


class IPUEstimator(_IPUEstimatorBase):
    """Estimator with IPU support: the ``model_fn`` runs in a compiled loop of
    ``iterations_per_loop`` steps on ``num_replicas`` replicas, each replica taking its own
    batch from the ``input_fn``'s dataset (wrap the optimizer in ``CrossReplicaOptimizer``
    to average the gradients). See the module docstring.

    Raises:
      ValueError: ``config`` not an ``ipu_run_config.RunConfig``; ``params`` not a dict or
        holding ``input_fn``; a batch size not divisible by the replicas; the model_fn
        argument checks of ``Estimator``."""

    def __init__(self, model_fn, model_dir=None, config=None, params=None,
                 warm_start_from=None, train_batch_size=None, eval_batch_size=None,
                 predict_batch_size=None):
        estimator_lib._verify_model_fn_args(model_fn, params)
        if config is None or not isinstance(config, ipu_run_config.RunConfig):
            raise ValueError("`config` must be provided with type `ipu_run_config.RunConfig`")
        ipu_device = f"/device:IPU:{config.ipu_run_config.ordinal}"
        super().__init__(model_fn=_augment_model_fn(model_fn, _ModelFnWrapper, ipu_device),
                         model_dir=model_dir, config=config, params=params,
                         warm_start_from=warm_start_from, train_batch_size=train_batch_size,
                         eval_batch_size=eval_batch_size,
                         predict_batch_size=predict_batch_size)
