"""``tensorflow.python.ipu.pipelining_ops`` (also ``ipu.ops.pipelining_ops``): pipelined
execution of a model split into computational stages, with Graphcore's API, defaults and
errors (tf_ipu_semantics.md section 12).

What runs (Graphcore's reference model, ``pipelining_test_util._cpu_with_grad_accum``): each
of the ``repeat_count`` executions zeroes the gradient accumulators, then for each of the
``gradient_accumulation_count`` micro-batches runs every stage in order on the next infeed
element (stage 0 gets ``inputs`` then the element; stage k the previous stage's outputs as
a list: a tuple/list is spread, one tensor or a dict is one argument) and, when training,
accumulates the gradients of the ``optimizer_function``'s loss (SUM ``acc + g``, MEAN
``acc + g / GA``, RUNNING_MEAN ``acc * n/(n+1) + g/(n+1)``) with the weights of the step;
after the micro-batches the optimizer applies the accumulated gradients once. The three
schedules only order this work differently on the IPUs, so they give the same numbers here;
the schedule still sets the pipeline-depth rule (``gradient_accumulation_count`` a multiple
of, and at least, the schedule's overlap: Grouped the stages of the schedule, forward and
backward when training; Interleaved the non-overlapping rotations of the stage-to-IPU
mapping; Sequential 1), checked when the pipeline runs, as the IPU checks it when it
compiles (FailedPreconditionError). Recomputation, the Poplar options of stages and the
offloading options change memory and speed only: validated, then accepted.

Outfeed: inference enqueues the last stage's outputs once per micro-batch; training enqueues
the last stage's unmasked outputs (``outfeed_mask``: True is *not* enqueued) as a list, or
the loss with ``outfeed_loss``; ``accumulate_outfeed`` sums them over the micro-batches and
enqueues once per execution.

Replication: a pipeline takes the IPUs of its device mapping (rounded up to a power of two),
so the device runs ``num_ipus // that`` replicas (``program_shards``); each replica runs the
pipeline on its own infeed elements. Gradients cross the replicas only as the optimizer
makes them: ``CrossReplicaOptimizer`` averages them, a Keras optimizer under an
``IPUStrategy`` sums them (its ``all_reduce``); a plain ``tf.train`` optimizer lets the
replicas diverge, as on the IPU.

In a TF1 graph the pipeline is traced once (``pipelining_graph``) and runs at each
``Session.run`` of the program; elsewhere it runs when called.

Decisions: ``batch_serialization_iterations`` is validated as Graphcore validates it and
the execution takes ``gradient_accumulation_count`` micro-batches either way (with the
SUM reduction it requires, the accumulated gradient does not depend on how they are
grouped).
"""

from __future__ import annotations

import enum
import sys

import numpy as np

from ..core import nest
from ..core.tensor import Tensor
from ..emulation import engine
from ..errors import FailedPreconditionError
from . import program_shards
from .gradient_accumulation import GradientAccumulationReductionMethod

__all__ = ["OptimizerFunctionOutput", "PipelineSchedule", "PipelineStageOptions",
           "RecomputationMode", "pipeline", "recomputation_checkpoint"]


class PipelineSchedule(enum.IntEnum):
    """How stages are interleaved on the IPUs serving the pipeline. Grouped: the forward
    passes are grouped together and the backward passes together. Interleaved: a backward
    pass runs whenever a forward pass has produced activations. Sequential: scheduled as a
    sharded model (a debug mode)."""

    Grouped = 0
    Interleaved = 1
    Sequential = 2


class RecomputationMode(enum.Enum):
    """The recomputation implementation of a training pipeline (when recomputation is
    enabled): Auto, RecomputeThenBackpropagate or RecomputeAndBackpropagateInterleaved."""

    Auto = 0
    RecomputeThenBackpropagate = 1
    RecomputeAndBackpropagateInterleaved = 2


def _is_tensor(x) -> bool:
    graph = sys.modules.get("ipu_gpu.graph")
    return isinstance(x, Tensor) or (graph is not None and isinstance(x, graph.GraphTensor))


def _is_keras_optimizer(opt) -> bool:
    keras_opt = sys.modules.get("ipu_gpu.keras.optimizers.optimizer_v2")
    return keras_opt is not None and isinstance(opt, keras_opt.OptimizerV2)


def _is_optimizer(opt) -> bool:
    return _is_keras_optimizer(opt) or (callable(getattr(opt, "apply_gradients", None))
                                        and callable(getattr(opt, "compute_gradients", None)))


class OptimizerFunctionOutput:
    """A helper class used for returning a structured output from an optimizer_function in
    a pipeline.

    Args:
      opt: an optimizer (``tf.compat.v1.train`` or Keras ``OptimizerV2``) used to make the
        backward pass and the weight update.
      loss: the loss passed to the optimizer when computing gradients.
      compute_gradients_args, compute_gradients_kwargs: more arguments for
        ``compute_gradients`` (not with an ``OptimizerV2``).
      apply_gradients_args, apply_gradients_kwargs: more arguments for ``apply_gradients``.
      variables: the variables to differentiate with respect to (``OptimizerV2`` only).
      tape: a ``GradientTape`` whose watched variables are differentiated (``OptimizerV2``
        only, not with ``variables``).

    Raises:
      TypeError, ValueError: Graphcore's messages for values of the wrong kind.
    """

    def __init__(self, opt, loss, compute_gradients_args=None, compute_gradients_kwargs=None,
                 apply_gradients_args=None, apply_gradients_kwargs=None, variables=None,
                 tape=None):
        self.opt = opt
        self.loss = loss
        self.compute_gradients_args = compute_gradients_args if compute_gradients_args \
            else tuple()
        self.compute_gradients_kwargs = compute_gradients_kwargs if compute_gradients_kwargs \
            else dict()
        self.apply_gradients_args = apply_gradients_args if apply_gradients_args else tuple()
        self.apply_gradients_kwargs = apply_gradients_kwargs if apply_gradients_kwargs \
            else dict()
        self._tape = None
        self.variables = variables if variables else tuple()
        self.tape = tape

    @property
    def opt(self):
        return self._opt

    @opt.setter
    def opt(self, value):
        if not _is_optimizer(value):
            raise TypeError("OptimizerFunctionOutput.opt must be a TensorFlow Optimizer or "
                            "Keras OptimizerV2 object.")
        self._opt = value

    @property
    def loss(self):
        return self._loss

    @loss.setter
    def loss(self, value):
        if not _is_tensor(value):
            raise TypeError("OptimizerFunctionOutput.loss must be a TensorFlow Tensor object.")
        self._loss = value

    @property
    def compute_gradients_args(self):
        return self._compute_gradients_args

    @compute_gradients_args.setter
    def compute_gradients_args(self, value):
        if not isinstance(value, tuple):
            raise TypeError("OptimizerFunctionOutput.compute_gradients_args must be a tuple.")
        if value and _is_keras_optimizer(self.opt):
            raise ValueError("OptimizerFunctionOutput.compute_gradients_args may not be used "
                             "with OptimizerV2 instances.")
        self._compute_gradients_args = value

    @property
    def compute_gradients_kwargs(self):
        return self._compute_gradients_kwargs

    @compute_gradients_kwargs.setter
    def compute_gradients_kwargs(self, value):
        if not isinstance(value, dict):
            raise TypeError("OptimizerFunctionOutput.compute_gradients_kwargs must be a dict.")
        if value and _is_keras_optimizer(self.opt):
            raise ValueError("OptimizerFunctionOutput.compute_gradients_kwargs may not be used "
                             "with OptimizerV2 instances.")
        self._compute_gradients_kwargs = value

    @property
    def apply_gradients_args(self):
        return self._apply_gradients_args

    @apply_gradients_args.setter
    def apply_gradients_args(self, value):
        if not isinstance(value, tuple):
            raise TypeError("OptimizerFunctionOutput.apply_gradients_args must be a tuple.")
        self._apply_gradients_args = value

    @property
    def apply_gradients_kwargs(self):
        return self._apply_gradients_kwargs

    @apply_gradients_kwargs.setter
    def apply_gradients_kwargs(self, value):
        if not isinstance(value, dict):
            raise TypeError("OptimizerFunctionOutput.apply_gradients_kwargs must be a dict.")
        self._apply_gradients_kwargs = value

    @property
    def variables(self):
        return self._variables

    @variables.setter
    def variables(self, value):
        if not isinstance(value, (tuple, list)):
            raise TypeError("OptimizerFunctionOutput.variables must be a tuple or list.")
        if value and not _is_keras_optimizer(self.opt):
            raise ValueError("OptimizerFunctionOutput.variables may only be used with "
                             "OptimizerV2.")
        if self._tape:
            raise ValueError("OptimizerFunctionOutput.variables must be empty when "
                             "OptimizerFunctionOutput.tape is used.")
        self._variables = value

    @property
    def tape(self):
        return self._tape

    @tape.setter
    def tape(self, value):
        from ..core.tape import GradientTape

        if value and not isinstance(value, GradientTape):
            raise TypeError("OptimizerFunctionOutput.tape must be a GradientTape.")
        if value and not _is_keras_optimizer(self.opt):
            raise ValueError("OptimizerFunctionOutput.tape may only be used with OptimizerV2.")
        if value and self.variables:
            raise ValueError("OptimizerFunctionOutput.tape may not be used when "
                             "OptimizerFunctionOutput.variables is nonempty.")
        self._tape = value


class PipelineStageOptions:
    """Poplar compilation options (such as ``availableMemoryProportion``) for the
    convolutions, matmuls and slices of one pipeline stage (forward, backward or weight
    update). They tune memory and speed on an IPU; the emulator keeps them unused.

    Raises:
      TypeError: an option set that is not a dictionary (Graphcore's messages).
    """

    def __init__(self, convolution_options=None, matmul_options=None, slice_options=None):
        convolution_options = convolution_options if convolution_options else {}
        if not isinstance(convolution_options, dict):
            raise TypeError("PipelineStageOptions.convolution_options must be dictionary.")
        matmul_options = matmul_options if matmul_options else {}
        if not isinstance(matmul_options, dict):
            raise TypeError("PipelineStageOptions.matmul_options must be dictionary.")
        slice_options = slice_options if slice_options else {}
        if not isinstance(slice_options, dict):
            raise TypeError("PipelineStageOptions.slice_options must be dictionary.")
        self._proto = {"convolution_options": {str(k): str(v) for k, v in
                                               convolution_options.items()},
                       "matmul_options": {str(k): str(v) for k, v in matmul_options.items()},
                       "slice_options": {str(k): str(v) for k, v in slice_options.items()}}

    def get_proto(self) -> dict:
        """The options as ``{"convolution_options": {...}, "matmul_options": {...},
        "slice_options": {...}}`` (option names and values as strings)."""
        return {k: dict(v) for k, v in self._proto.items()}


def recomputation_checkpoint(tensors, name=None):
    """Marks values of a pipeline stage not to be recomputed (kept in memory instead); the
    values are unchanged.

    Returns:
      A tensor or a structure of tensors matching ``tensors``.
    """
    from ..ops.math import identity

    return nest.map_structure(lambda t: identity(t), tensors)


# ---- validation -------------------------------------------------------------------------------
def _to_flat_list(xs) -> list:
    if isinstance(xs, (list, tuple, range)):
        return [y for x in xs for y in _to_flat_list(x)]
    return [xs]


def _convert_to_list(xs) -> list:
    return list(xs) if isinstance(xs, (list, tuple)) else [xs]


def _validate_stage_options(options, n_stages, name) -> None:
    if options is None:
        return
    if not isinstance(options, (list, tuple)):
        raise TypeError(f"{name} must be a list or a tuple of PipelineStageOptions objects.")
    if len(options) != n_stages:
        raise ValueError(f"{name} must be a list or a tuple of PipelineStageOptions objects of "
                         f"length {n_stages} (same number as the number of computational "
                         f"stages) but is {len(options)}.")
    for o in options:
        if not isinstance(o, PipelineStageOptions):
            raise TypeError(f"Expected all elements of {name} to be of type "
                            f"PipelineStageOptions, but got {o} instead.")


def validate_schedule_options(pipeline_schedule=None, recomputation_mode=None,
                              forward_propagation_stages_poplar_options=None,
                              backward_propagation_stages_poplar_options=None,
                              weight_update_poplar_options=None, n_stages=None) -> None:
    """Graphcore's checks of the schedule, recomputation mode and stage options (also used
    by Keras's ``set_pipelining_options``; the stage counts only when ``n_stages`` is known).

    Raises:
      TypeError, ValueError: Graphcore's messages."""
    if pipeline_schedule is not None and not isinstance(pipeline_schedule, PipelineSchedule):
        raise TypeError("The given pipeline_schedule is not a member of the PipelineSchedule "
                        "enumeration.")
    if recomputation_mode is not None and not isinstance(recomputation_mode,
                                                         RecomputationMode):
        raise TypeError("The given recomputation_mode is not a member of the "
                        "RecomputationMode enumeration.")
    for options, name in ((forward_propagation_stages_poplar_options,
                           "forward_propagation_stages_poplar_options"),
                          (backward_propagation_stages_poplar_options,
                           "backward_propagation_stages_poplar_options")):
        if options is not None and n_stages is None:
            n = len(options) if isinstance(options, (list, tuple)) else 0
            _validate_stage_options(options, n, name)
        else:
            _validate_stage_options(options, n_stages, name)
    if weight_update_poplar_options is not None and not isinstance(
            weight_update_poplar_options, PipelineStageOptions):
        raise TypeError(f"weight_update_poplar_options to be of type PipelineStageOptions, "
                        f"but got {weight_update_poplar_options} instead.")


def _overlap_length(schedule, device_mapping, training: bool) -> int:
    """The pipeline-depth unit of a schedule (Graphcore's ``ScheduleOffsets``)."""
    forward = [tuple(_to_flat_list(d)) if isinstance(d, (list, tuple)) else d
               for d in device_mapping]
    mapping = forward + list(reversed(forward)) if training else forward
    if schedule == PipelineSchedule.Grouped:
        return len(mapping)
    if schedule == PipelineSchedule.Sequential:
        return 1
    accepted = [0]
    n = len(mapping)
    for i in range(1, n):
        rotated = mapping[i:] + mapping[:i]
        if all(all(a != b for a, b in zip(mapping[k:] + mapping[:k], rotated))
               for k in accepted):
            accepted.append(i)
    return len(accepted)


def check_depth(ga: int, overlap: int) -> None:
    """Raises FailedPreconditionError (the IPU's messages) when ``ga`` micro-batches do not
    fill the schedule."""
    if ga % overlap:
        raise FailedPreconditionError(
            f"The pipeline depth of the pipeline must be a multiple of {overlap}, "
            f"but it is {ga}.")
    if ga < overlap:
        raise FailedPreconditionError(
            f"The pipeline depth of the pipeline must be at least {overlap}, but "
            f"it is {ga}.")


class _Config:
    """The validated arguments of one ``pipeline`` call."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    @property
    def training(self) -> bool:
        return self.optimizer_function is not None

    @property
    def shards(self) -> int:
        return program_shards.ipus_per_replica(max(_to_flat_list(list(self.device_mapping))))

    @property
    def overlap(self) -> int:
        return _overlap_length(self.pipeline_schedule, self.device_mapping, self.training)

    def acc_dtype(self, var):
        """The gradient accumulator's dtype for ``var``."""
        spec = self.gradient_accumulation_dtype
        if spec is None:
            return var.dtype
        return spec(var) if callable(spec) and not hasattr(spec, "as_numpy_dtype") else spec

    def outfeed_dtype(self, t):
        spec = self.accumulate_outfeed_dtype
        if spec is None:
            return t.dtype
        return spec(t) if callable(spec) and not hasattr(spec, "as_numpy_dtype") else spec

    def scales(self, n: int, ga: int):
        """(accumulator scale, gradient scale) of micro-batch ``n`` (None: 1)."""
        m = self.reduction_method
        if m is GradientAccumulationReductionMethod.MEAN:
            return None, np.float32(1.0) / np.float32(ga)
        if m is GradientAccumulationReductionMethod.RUNNING_MEAN:
            inv = np.float32(1.0) / (np.float32(n) + np.float32(1.0))
            return np.float32(n) * inv, inv
        return None, None

    def stage_args(self, element):
        """(args, kwargs) of stage 0 for an infeed element (None: no infeed)."""
        args = list(self.inputs)
        if element is None:
            return args, {}
        if isinstance(element, dict) and all(isinstance(k, str) for k in element):
            return args, dict(element)
        return args + _convert_to_list(element), {}

    def stage_shard(self, i: int) -> int:
        """The replica's IPU (shard) stage ``i`` runs on."""
        d = self.device_mapping[i]
        return d if isinstance(d, int) else _to_flat_list([d])[0]

    def run_stages(self, args, kwargs):
        """The stages in order, each charging its IPU (``engine.stage``)."""
        outputs = None
        for i, stage in enumerate(self.computational_stages):
            with engine.stage(self.stage_shard(i), i):
                if isinstance(stage, list):
                    outputs = _to_flat_list([f(*args, **kwargs) for f in stage])
                else:
                    outputs = stage(*args, **kwargs)
            if i < len(self.computational_stages) - 1:
                args, kwargs = _convert_to_list(outputs), {}
        return outputs

    def optimizer_output(self, outputs):
        opt_fn = self.optimizer_function(*_convert_to_list(outputs))
        if not isinstance(opt_fn, OptimizerFunctionOutput):
            raise TypeError(f"optimizer_function must return an OptimizerFunctionOutput, got "
                            f"{type(opt_fn).__name__}")
        return opt_fn

    def outfeed_value(self, outputs, loss):
        """What one micro-batch enqueues (None: nothing), having checked the outfeed
        arguments against the outputs (Graphcore's errors)."""
        if self.training:
            if self.outfeed_loss:
                if self.outfeed_queue is None:
                    raise ValueError("An outfeed_queue must be provided when outfeed_loss is "
                                     "True")
                return loss
            outs = [] if outputs is None else _convert_to_list(outputs)
            if not outs:
                return None
            mask = self.outfeed_mask if self.outfeed_mask else [False] * len(outs)
            if len(outs) != len(mask):
                raise ValueError(f"The last computational stage has {len(outs)} outputs, but "
                                 f"the `outfeed_mask` has elements {len(mask)} - these need to "
                                 "match in size.")
            unmasked = [t for m, t in zip(mask, outs) if not m]
            if not unmasked:
                return None
            self._need_outfeed(unmasked)
            return unmasked
        if outputs is None or engine.is_operation(outputs) or (
                isinstance(outputs, (list, tuple)) and not outputs):
            return None
        self._need_outfeed(_convert_to_list(outputs))
        if self.accumulate_outfeed:
            return _convert_to_list(outputs)
        return outputs if isinstance(outputs, dict) or _is_tensor(outputs) \
            else _convert_to_list(outputs)

    def _need_outfeed(self, outs) -> None:
        if self.outfeed_queue is None:
            raise ValueError(f"The last computational stage has tensor outputs: "
                             f"{', '.join(str(t) for t in outs)}, but no outfeed_queue has "
                             "been provided.")


def pipeline(computational_stages, gradient_accumulation_count=None,
             gradient_accumulation_dtype=None, gradient_accumulation_for_captured_grads=True,
             repeat_count=1, batch_serialization_iterations=1, inputs=None, infeed_queue=None,
             outfeed_queue=None, optimizer_function=None, device_mapping=None,
             pipeline_schedule=None, recomputation_mode=None,
             forward_propagation_stages_poplar_options=None,
             backward_propagation_stages_poplar_options=None,
             weight_update_poplar_options=None, offload_weight_update_variables=None,
             replicated_optimizer_state_sharding=False, offload_activations=None,
             offload_gradient_accumulation_buffers=None, replicated_weight_sharding=None,
             offload_weights=None, continuous_weight_updates=False, outfeed_loss=False,
             accumulate_outfeed=False, accumulate_outfeed_dtype=None, outfeed_mask=None,
             reduction_method=GradientAccumulationReductionMethod.SUM, name=None):
    """Sets up a series of computational stages, where the outputs of one stage are the
    inputs to the next one (see the module docstring for what runs).

    Args:
      computational_stages: a list of Python functions (or lists of functions run on the
        same inputs, their outputs concatenated), one per stage.
      gradient_accumulation_count: the number of micro-batches of one pipeline execution
        (each stage runs that many times; the gradients of that many are accumulated).
      gradient_accumulation_dtype: the accumulators' dtype: None (the variable's), a DType,
        or a callable taking the variable and returning a DType.
      repeat_count: the number of times the pipeline executes.
      batch_serialization_iterations: Sequential schedule only (see the module docstring).
      inputs: arguments passed to the first stage, before the infeed element.
      infeed_queue: an IPUInfeedQueue dequeued once per micro-batch for the first stage.
      outfeed_queue: an IPUOutfeedQueue, required if the last stage has outputs.
      optimizer_function: takes the last stage's outputs and returns an
        ``OptimizerFunctionOutput``; makes the pipeline train.
      device_mapping: the IPU of each stage (default ``0, 1, ...``; all 0 with batch
        serialization).
      pipeline_schedule: a ``PipelineSchedule`` (default Grouped; Sequential with batch
        serialization).
      recomputation_mode: a ``RecomputationMode`` (default Auto).
      forward_propagation_stages_poplar_options, backward_propagation_stages_poplar_options:
        one ``PipelineStageOptions`` per stage.
      weight_update_poplar_options: a ``PipelineStageOptions``.
      offload_weight_update_variables, replicated_optimizer_state_sharding,
        offload_activations, offload_gradient_accumulation_buffers,
        replicated_weight_sharding, offload_weights, gradient_accumulation_for_captured_grads:
        memory placement options, accepted.
      continuous_weight_updates: unimplemented in Graphcore's SDK (NotImplementedError).
      outfeed_loss: enqueue the loss instead of the last stage's outputs.
      accumulate_outfeed: sum the enqueued values over the micro-batches, enqueue once per
        execution (the outfeed must be in ALL mode).
      accumulate_outfeed_dtype: the outfeed accumulators' dtype (as
        ``gradient_accumulation_dtype``).
      outfeed_mask: one boolean per output of the last stage; True outputs are not enqueued.
      reduction_method: SUM (default), MEAN or RUNNING_MEAN (or their names).
      name: name of this pipeline.

    Returns:
      An ``Operation`` that executes the pipeline (in a TF1 graph, a graph operation).

    Raises:
      ValueError, TypeError, NotImplementedError: Graphcore's checks and messages.
      FailedPreconditionError: when it runs, a ``gradient_accumulation_count`` that does not
        fill the schedule.
    """
    from .ipu_infeed_queue import IPUInfeedQueue
    from .ipu_outfeed_queue import IPUOutfeedMode, IPUOutfeedQueue

    name = name if name else "pipeline"
    if gradient_accumulation_count is None:
        raise ValueError("gradient_accumulation_count must be specified.")
    if isinstance(gradient_accumulation_count, int):
        if gradient_accumulation_count < 0:
            raise ValueError("gradient_accumulation_count must be >= 0.")
        if gradient_accumulation_count > np.iinfo(np.int32).max:
            raise ValueError("gradient_accumulation_count must be < max int32.")
    if optimizer_function is not None:
        reduction_method = GradientAccumulationReductionMethod.parse(reduction_method)
    if reduction_method != GradientAccumulationReductionMethod.SUM and \
            batch_serialization_iterations != 1:
        raise ValueError("batch_serialization_iterations != 1 is only supported when "
                         "reduction_method is GradientAccumulationReductionMethod.SUM")
    inputs = [] if inputs is None else _convert_to_list(inputs)
    inputs = [_input_tensor(x) for x in inputs]
    if continuous_weight_updates:
        raise NotImplementedError("Continuous weight updates are currently not supported.")
    if pipeline_schedule is None:
        pipeline_schedule = (PipelineSchedule.Sequential if batch_serialization_iterations > 1
                             else PipelineSchedule.Grouped)
    if not isinstance(pipeline_schedule, PipelineSchedule):
        raise TypeError("The given pipeline_schedule is not a member of the PipelineSchedule "
                        "enumeration.")
    if batch_serialization_iterations > 1 and pipeline_schedule != PipelineSchedule.Sequential:
        raise NotImplementedError("Batch serialization is only supported with the "
                                  "`Sequential` schedule.")
    if recomputation_mode is None:
        recomputation_mode = RecomputationMode.Auto
    if not isinstance(recomputation_mode, RecomputationMode):
        raise TypeError("The given recomputation_mode is not a member of the "
                        "RecomputationMode enumeration.")
    if not isinstance(computational_stages, (list, tuple)):  # (TF reaches len() first)
        raise TypeError("computational_stages argument needs to be a list or a tuple.")
    if device_mapping is None:
        device_mapping = ([0] * len(computational_stages) if batch_serialization_iterations > 1
                          else list(range(len(computational_stages))))
    if infeed_queue and not isinstance(infeed_queue, IPUInfeedQueue):
        raise TypeError("infeed_queue is not an instance of ipu_infeed_queue.IPUInfeedQueue")
    if outfeed_queue and not isinstance(outfeed_queue, IPUOutfeedQueue):
        raise TypeError("outfeed_queue is not an instance of "
                        "ipu_outfeed_queue.IPUOutfeedQueue")
    if len(computational_stages) < 2:
        raise ValueError("Pipeline requires at least two computational stages.")
    if not isinstance(device_mapping, (list, tuple)):
        raise TypeError("device_mapping argument needs to be a list or a tuple.")
    if len(device_mapping) != len(computational_stages):
        raise ValueError(f"Each stage must be mapped to an IPU: {len(device_mapping)} mappings "
                         f"!= {len(computational_stages)} stages")
    flat_mapping = _to_flat_list(list(device_mapping))
    if pipeline_schedule == PipelineSchedule.Interleaved and optimizer_function and \
            len(flat_mapping) != len(set(flat_mapping)):
        raise NotImplementedError(
            "The pipelining schedule 'Interleaved' does not currently support multiple "
            "pipeline stages on the same device for training graphs. Please use a different "
            "pipeline schedule.")
    if pipeline_schedule == PipelineSchedule.Sequential and batch_serialization_iterations > 1 \
            and len(set(flat_mapping)) != 1:
        raise NotImplementedError("When using batch serialization, all the pipeline stages "
                                  "need to be mapped to a single IPU.")
    n = len(computational_stages)
    _validate_stage_options(forward_propagation_stages_poplar_options, n,
                            "forward_propagation_stages_poplar_options")
    if optimizer_function:
        _validate_stage_options(backward_propagation_stages_poplar_options, n,
                                "backward_propagation_stages_poplar_options")
        validate_schedule_options(weight_update_poplar_options=weight_update_poplar_options)
    if outfeed_mask and not optimizer_function:
        raise ValueError("An optimizer_function must be provided when outfeed_mask is set.")
    if outfeed_loss and not optimizer_function:
        raise ValueError("An optimizer_function must be provided when outfeed_loss is True.")
    if outfeed_loss and outfeed_mask:
        raise ValueError("Only one of `outfeed_loss` and `outfeed_mask` can be set.")
    if accumulate_outfeed:
        if not outfeed_queue:
            raise ValueError("An outfeed_queue must be provided when accumulate_outfeed is "
                             "True.")
        if outfeed_queue.outfeed_mode != IPUOutfeedMode.ALL:
            raise ValueError("To accumulate the outfeed, it must be in IPUOutfeedMode ALL.")
    if isinstance(repeat_count, bool) or not hasattr(repeat_count, "__index__") or \
            int(repeat_count) < 0:
        raise ValueError(f"repeat_count must be a non-negative int, got {repeat_count!r}")
    cfg = _Config(computational_stages=list(computational_stages),
                  gradient_accumulation_count=gradient_accumulation_count,
                  gradient_accumulation_dtype=gradient_accumulation_dtype,
                  repeat_count=int(repeat_count), inputs=inputs, infeed_queue=infeed_queue,
                  outfeed_queue=outfeed_queue, optimizer_function=optimizer_function,
                  device_mapping=list(device_mapping), pipeline_schedule=pipeline_schedule,
                  recomputation_mode=recomputation_mode, outfeed_loss=bool(outfeed_loss),
                  accumulate_outfeed=bool(accumulate_outfeed),
                  accumulate_outfeed_dtype=accumulate_outfeed_dtype,
                  outfeed_mask=list(outfeed_mask) if outfeed_mask else None,
                  reduction_method=GradientAccumulationReductionMethod.parse(reduction_method),
                  name=name)
    program_shards.require(cfg.shards)
    if _graph_mode(inputs, gradient_accumulation_count):
        from . import pipelining_graph

        return pipelining_graph.traced_pipeline(cfg)
    from . import pipelining_eager

    pipelining_eager.run(cfg, _ga_value(gradient_accumulation_count))
    return engine.Operation(name)


def _input_tensor(x):
    if _is_tensor(x):
        return x
    from ..core.convert import convert_to_tensor

    return convert_to_tensor(x)


def _ga_value(ga) -> int:
    value = ga.numpy() if hasattr(ga, "numpy") else ga
    return int(np.asarray(value))


def _graph_mode(inputs, ga) -> bool:
    graph = sys.modules.get("ipu_gpu.graph")
    if graph is None:
        return False
    return graph.core.building() or graph.program.is_symbolic([*inputs, ga])
