"""``tensorflow.python.ipu.ipu_pipeline_estimator``: ``IPUPipelineEstimator`` and
``IPUPipelineEstimatorSpec``, Graphcore's: the ``model_fn`` (no ``features``/``labels``
arguments) returns the computational stages, and the estimator runs them as a
``pipelining_ops.pipeline`` over the input_fn's infeed, ``iterations_per_loop /
gradient_accumulation_count`` pipeline executions (weight updates) per ``Session.run``.
Training outfeeds the loss accumulated over each execution's micro-batches and reports
its mean divided by ``gradient_accumulation_count``; evaluation outfeeds the last stage's
outputs to ``eval_metrics_fn`` on the host (its ``loss`` entry, typically the outfed losses,
is the loss: their mean over all the runs); prediction outfeeds the last stage's outputs
(a dict, or exactly one tensor)."""

from __future__ import annotations

import collections

from ..estimator import estimator as estimator_lib
from ..estimator import model_fn as model_fn_lib
from ..estimator.model_fn import ModeKeys
from . import ipu_estimator

__all__ = ["IPUPipelineEstimator", "IPUPipelineEstimatorSpec"]


class IPUPipelineEstimatorSpec(collections.namedtuple("IPUPipelineEstimatorSpec", [
        "mode", "computational_stages", "gradient_accumulation_count", "eval_metrics_fn",
        "optimizer_function", "device_mapping", "loss_accumulator_dtype", "training_hooks",
        "evaluation_hooks", "prediction_hooks", "pipeline_op_kwargs"])):
    """Ops and objects returned from a ``model_fn`` and passed to ``IPUPipelineEstimator``:
    TRAIN needs ``optimizer_function``, EVAL ``eval_metrics_fn``; every mode needs
    ``gradient_accumulation_count``; the remaining keyword arguments go to ``pipeline()``.

    Raises:
      ValueError: a missing required argument, or ``accumulate_outfeed`` among the pipeline
        arguments (the estimator accumulates the loss with it)."""

    def __new__(cls, mode, computational_stages, gradient_accumulation_count=None,
                eval_metrics_fn=None, optimizer_function=None, device_mapping=None,
                loss_accumulator_dtype=None, training_hooks=None, evaluation_hooks=None,
                prediction_hooks=None, **pipeline_op_kwargs):
        if mode == ModeKeys.TRAIN and not optimizer_function:
            raise ValueError("`IPUPipelineEstimatorSpec` must contain `optimizer_function` "
                             "when training")
        if mode == ModeKeys.EVAL and not eval_metrics_fn:
            raise ValueError("`IPUPipelineEstimatorSpec` must contain `eval_metrics_fn` when "
                             "evaluating")
        if not gradient_accumulation_count:
            raise ValueError("`IPUPipelineEstimatorSpec` must contain "
                             "`gradient_accumulation_count`")
        if "accumulate_outfeed" in pipeline_op_kwargs:
            raise ValueError("The `accumulate_outfeed` pipeline keyword argument cannot be "
                             "passed to the `IPUPipelineEstimatorSpec`.")
        return super().__new__(
            cls, mode, computational_stages, gradient_accumulation_count, eval_metrics_fn,
            optimizer_function, device_mapping, loss_accumulator_dtype,
            model_fn_lib.validate_hooks(training_hooks),
            model_fn_lib.validate_hooks(evaluation_hooks),
            model_fn_lib.validate_hooks(prediction_hooks), pipeline_op_kwargs)


class _ModelFnPipelineWrapper:
    """Builds the training, evaluation and prediction pipelines from the user's model_fn
    and the host side that reads their outfeed."""

    def __init__(self, model_fn, config, params, infeed_queue, outfeed_queue):
        self._model_fn, self._config, self._params = model_fn, config, params
        self._infeed_queue, self._outfeed_queue = infeed_queue, outfeed_queue
        self._eval_metrics_fn = None
        self._gradient_accumulation_count = None
        self.captured_hooks = []

    @staticmethod
    def need_outfeed(mode):
        return True

    def _calc_repeat_count(self, spec):
        ipl = self._config.ipu_run_config.iterations_per_loop
        ga = spec.gradient_accumulation_count
        if ipl < ga:
            raise ValueError(f"`IPURunConfig.iterations_per_loop` (got {ipl}) cannot be less "
                             f"than `gradient_accumulation_count` (got {ga})")
        repeat_count, remainder = divmod(ipl, ga)
        if remainder:
            raise ValueError(f"`IPURunConfig.iterations_per_loop` (got {ipl}) must be "
                             f"divisible by `gradient_accumulation_count` (got {ga})")
        return repeat_count

    def _pipeline(self, mode, **kwargs):
        from . import pipelining_ops

        spec = self._call_model_fn(mode)
        hooks = {ModeKeys.TRAIN: spec.training_hooks, ModeKeys.EVAL: spec.evaluation_hooks,
                 ModeKeys.PREDICT: spec.prediction_hooks}[mode]
        if hooks:
            self.captured_hooks = list(hooks)
        return spec, lambda **more: pipelining_ops.pipeline(
            infeed_queue=self._infeed_queue, outfeed_queue=self._outfeed_queue,
            computational_stages=spec.computational_stages,
            gradient_accumulation_count=spec.gradient_accumulation_count,
            repeat_count=self._calc_repeat_count(spec), device_mapping=spec.device_mapping,
            **more, **spec.pipeline_op_kwargs)

    def create_training_loop(self):
        def training_pipeline():
            spec, run = self._pipeline(ModeKeys.TRAIN)
            self._gradient_accumulation_count = spec.gradient_accumulation_count
            return run(optimizer_function=spec.optimizer_function, outfeed_loss=True,
                       accumulate_outfeed=True,
                       accumulate_outfeed_dtype=spec.loss_accumulator_dtype,
                       name="ipu_pipeline_estimator_train")
        return training_pipeline

    def get_training_loss_and_op(self, compiled):
        import ipu_gpu as core

        from ..graph.program import control_dependencies

        with control_dependencies([compiled]):
            loss = self._outfeed_queue.dequeue(wait_for_completion=True)
        # the loss was summed over each execution's micro-batches
        loss = core.reduce_mean(core.cast(loss, core.float32)) / \
            self._gradient_accumulation_count
        return loss, compiled

    def create_evaluation_loop(self):
        def evaluation_pipeline():
            spec, run = self._pipeline(ModeKeys.EVAL)
            self._eval_metrics_fn = spec.eval_metrics_fn
            return run(accumulate_outfeed=False, name="ipu_pipeline_estimator_eval")
        return evaluation_pipeline

    def get_evaluation_loss_and_metrics(self, compiled):
        from ..graph.program import control_dependencies

        with control_dependencies([compiled]):
            inputs = self._outfeed_queue.dequeue(wait_for_completion=True)
        args, kwargs = ipu_estimator._body_arguments(inputs)
        metrics = self._eval_metrics_fn(*args, **kwargs)
        if not isinstance(metrics, dict):
            raise TypeError(f"The `eval_metrics_fn` must return a dict, but got "
                            f"{type(metrics)}.")
        if model_fn_lib.LOSS_METRIC_KEY not in metrics:
            raise KeyError(f"The dict returned from `eval_metrics_fn` must contain "
                           f"'{model_fn_lib.LOSS_METRIC_KEY}'.")
        metrics = dict(metrics)
        loss = metrics.pop(model_fn_lib.LOSS_METRIC_KEY)
        if model_fn_lib.is_tensor(loss) and loss.shape.rank != 0:
            import ipu_gpu as core

            loss = core.reduce_mean(loss)  # the run's micro-batch losses, weighted equally
        return loss, metrics

    def create_prediction_loop(self):
        def prediction_pipeline():
            _, run = self._pipeline(ModeKeys.PREDICT)
            return run(accumulate_outfeed=False, name="ipu_pipeline_estimator_predict")
        return prediction_pipeline

    def get_predictions(self, compiled):
        from ..graph.program import control_dependencies

        with control_dependencies([compiled]):
            predictions = self._outfeed_queue.dequeue(wait_for_completion=True)
        if isinstance(predictions, dict):
            return predictions
        predictions = list(predictions) if isinstance(predictions, (list, tuple)) \
            else [predictions]
        if len(predictions) != 1:
            raise ValueError(f"The last computational stage must return exactly one "
                             f"prediction tensor, but got {len(predictions)}")
        return predictions[0]

    def _call_model_fn(self, mode):
        args = estimator_lib.fn_args(self._model_fn)
        if "features" in args or "labels" in args:
            raise ValueError("The `model_fn` used with `IPUPipelineEstimator` must not have "
                             "`features` or `labels` arguments. They are instead passed to "
                             "the first pipeline stage function.")
        spec = estimator_lib.call_with_taken_args(self._model_fn, mode, self._params,
                                                  self._config)
        if not isinstance(spec, IPUPipelineEstimatorSpec):
            raise TypeError("The `model_fn` used with `IPUPipelineEstimator` must return "
                            "`IPUPipelineEstimatorSpec`.")
        if spec.device_mapping is not None:
            needed = len(set(spec.device_mapping))
        else:
            needed = len(spec.computational_stages)
        shards = self._config.ipu_run_config.num_shards
        if needed not in range(int(shards / 2) + 1, shards + 1):
            raise ValueError(f"This pipeline requires {needed} devices, but "
                             f"`IPURunConfig.num_shards` was set to {shards} "
                             f"(num_shards/2 < pipeline_devices <= num_shards).")
        return spec


class IPUPipelineEstimator(ipu_estimator._IPUEstimatorBase):
    """Estimator for pipelining on IPUs: the ``model_fn`` returns an
    ``IPUPipelineEstimatorSpec``; each replica takes ``gradient_accumulation_count``
    batches per weight update (wrap the optimizer in ``CrossReplicaOptimizer`` to average
    the replicas' gradients). See the module docstring.

    Raises:
      ValueError: as ``IPUEstimator``; at ``train``/``evaluate``/``predict``, an
        ``iterations_per_loop`` not a multiple of ``gradient_accumulation_count`` or a
        pipeline needing a device count that ``num_shards`` does not give."""

    def __init__(self, model_fn, model_dir=None, config=None, params=None,
                 warm_start_from=None):
        if config is None or not isinstance(config, ipu_estimator.ipu_run_config.RunConfig):
            raise ValueError("`config` must be provided with type `ipu_run_config.RunConfig`")
        ipu_device = f"/device:IPU:{config.ipu_run_config.ordinal}"
        super().__init__(model_fn=ipu_estimator._augment_model_fn(
            model_fn, _ModelFnPipelineWrapper, ipu_device), model_dir=model_dir,
            config=config, params=params, warm_start_from=warm_start_from)
