"""ipu.pipelining_ops (Graphcore's pipeline): TF1 graph-mode and TF2 (IPUStrategy) pipelines
against a float64 numpy model of Graphcore's reference semantics
(``pipelining_test_util._cpu_with_grad_accum``: GA micro-batches on the step's weights,
the accumulated gradient applied once per execution), the three schedules, the reduction
methods, the outfeed contents, replication, and Graphcore's errors."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as v1
from ipu_gpu import errors
from ipu_gpu.ipu import (ipu_compiler, ipu_infeed_queue, ipu_outfeed_queue, optimizers,
                         pipelining_ops, scopes)
from ipu_gpu.ipu.gradient_accumulation import GradientAccumulationReductionMethod as RM
from ipu_gpu.ipu.pipelining_ops import PipelineSchedule

RNG = np.random.default_rng(21)
X_ALL = RNG.standard_normal((512, 5)).astype(np.float32)
Y_ALL = (X_ALL @ np.array([1.0, -2.0, 0.5, 0.0, 3.0], np.float32))[:, None]
W1 = (RNG.standard_normal((5, 3)) * 0.5).astype(np.float32)
W2 = (RNG.standard_normal((3, 1)) * 0.5).astype(np.float32)
BATCH = 4


def _grads(x, y, w1, w2):
    """(loss, dW1, dW2) of mean((relu(x W1) W2 - y)^2) in float64."""
    pre = x @ w1
    h = np.maximum(pre, 0.0)
    err = h @ w2 - y
    loss = np.mean(err ** 2)
    d = 2.0 * err / err.size
    dw2 = h.T @ d
    dw1 = x.T @ ((d @ w2.T) * (pre > 0))
    return loss, dw1, dw2


def _reference(batches, lr, ga, repeat, method=RM.SUM, executions=1):
    """Per-micro-batch losses and final weights of Graphcore's pipeline semantics."""
    w1, w2 = W1.astype(np.float64), W2.astype(np.float64)
    losses = []
    it = iter(batches)
    for _ in range(executions * repeat):
        acc1, acc2 = np.zeros_like(w1), np.zeros_like(w2)
        for n in range(ga):
            x, y = next(it)
            loss, g1, g2 = _grads(x.astype(np.float64), y.astype(np.float64), w1, w2)
            losses.append(loss)
            if method is RM.SUM:
                acc1, acc2 = acc1 + g1, acc2 + g2
            elif method is RM.MEAN:
                acc1, acc2 = acc1 + g1 / ga, acc2 + g2 / ga
            else:
                acc1 = acc1 * n / (n + 1) + g1 / (n + 1)
                acc2 = acc2 * n / (n + 1) + g2 / (n + 1)
        w1, w2 = w1 - lr * acc1, w2 - lr * acc2
    return np.array(losses), w1, w2


def _batches(start=0, stride=1, batch=BATCH):
    """Batches ``start, start + stride, ...`` of the dataset (a replica's share)."""
    i = start
    while True:
        j = i % (len(X_ALL) // batch)
        yield X_ALL[j * batch:(j + 1) * batch], Y_ALL[j * batch:(j + 1) * batch]
        i += stride


def _stages():
    def stage1(lr, x, y):
        w = v1.get_variable("w1", initializer=W1)
        return lr, ig.nn.relu(ig.matmul(x, w)), y

    def stage2(lr, h, y):
        w = v1.get_variable("w2", initializer=W2)
        return lr, ig.reduce_mean((ig.matmul(h, w) - y) ** 2)
    return [stage1, stage2]


def _tf1_pipeline(ipus=2, ga=4, repeat=2, executions=2, lr=0.05, cross_replica=False,
                  stages=None, training=True, outfeed_loss=True, **kwargs):
    """A TF1 program in the style of Graphcore's pipelining tutorial (two stages, the lr
    passed through, the loss outfed); returns (outfed losses per execution, w1, w2)."""
    from conftest import configure_ipus

    from ipu_gpu.emulation import system

    system.reset()
    configure_ipus(ipus)
    ds = ig.data.Dataset.from_tensor_slices((X_ALL, Y_ALL)).batch(BATCH, drop_remainder=True)
    with v1.Graph().as_default():
        infeed = ipu_infeed_queue.IPUInfeedQueue(ds.repeat())
        outfeed = ipu_outfeed_queue.IPUOutfeedQueue()
        queue = kwargs.pop("outfeed_queue", outfeed)

        def optimizer_function(lr, loss):
            opt = v1.train.GradientDescentOptimizer(lr)
            if cross_replica:
                opt = optimizers.CrossReplicaOptimizer(opt)
            return pipelining_ops.OptimizerFunctionOutput(opt, loss)

        def model(lr):
            with v1.variable_scope("FCModel", use_resource=True):
                return pipelining_ops.pipeline(
                    stages or _stages(), gradient_accumulation_count=ga, repeat_count=repeat,
                    inputs=[lr], infeed_queue=infeed, outfeed_queue=queue,
                    optimizer_function=optimizer_function if training else None,
                    outfeed_loss=outfeed_loss, **kwargs)

        lr_holder = v1.placeholder(np.float32, [])
        with scopes.ipu_scope("/device:IPU:0"):
            program = ipu_compiler.compile(model, inputs=[lr_holder])
        dequeue = outfeed.dequeue()
        with v1.Session() as sess:
            sess.run(infeed.initializer)
            sess.run(v1.global_variables_initializer())
            per_run = []
            for _ in range(executions):
                sess.run(program, {lr_holder: lr})
                out = sess.run(dequeue)
                per_run.append(np.asarray(out) if outfeed_loss else out)
            w1, w2 = sess.run(v1.global_variables())
    system.reset()
    return per_run, w1, w2


@pytest.mark.parametrize("method", [RM.SUM, RM.MEAN, RM.RUNNING_MEAN])
def test_tf1_pipeline_trains_as_the_reference(method, fresh_ipu_system):
    """Losses of every micro-batch and the final weights after 2 Session.runs of 2
    executions of 4 micro-batches equal the float64 reference model; the stages are traced
    once, when the graph is built."""
    calls = []
    stages = [lambda *a, f=f, i=i: (calls.append(i), f(*a))[1]
              for i, f in enumerate(_stages())]
    per_run, w1, w2 = _tf1_pipeline(reduction_method=method, stages=stages)
    assert calls == [0, 1]
    losses, r1, r2 = _reference(_batches(), 0.05, 4, 2, method, executions=2)
    assert [p.shape for p in per_run] == [(8,), (8,)]
    np.testing.assert_allclose(np.concatenate(per_run), losses, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(w1, r1, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(w2, r2, rtol=2e-5, atol=1e-6)


def test_tf1_schedules_give_the_same_numbers(fresh_ipu_system):
    runs = [_tf1_pipeline(executions=1, pipeline_schedule=s)
            for s in (PipelineSchedule.Grouped, PipelineSchedule.Interleaved,
                      PipelineSchedule.Sequential)]
    for per_run, w1, w2 in runs[1:]:
        np.testing.assert_array_equal(per_run[0], runs[0][0][0])
        np.testing.assert_array_equal(w1, runs[0][1])
        np.testing.assert_array_equal(w2, runs[0][2])
    losses, r1, _ = _reference(_batches(), 0.05, 4, 2)
    np.testing.assert_allclose(runs[0][0][0], losses, rtol=2e-5, atol=1e-6)


def test_tf1_batch_serialization_runs_the_same_micro_batches(fresh_ipu_system):
    """Sequential with batch_serialization_iterations (all stages on IPU 0, SUM): the
    accumulated gradient of the same GA micro-batches, so the reference's numbers; one IPU
    per replica."""
    per_run, w1, _ = _tf1_pipeline(ipus=1, executions=1, batch_serialization_iterations=2)
    losses, r1, _ = _reference(_batches(), 0.05, 4, 2)
    np.testing.assert_allclose(per_run[0], losses, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(w1, r1, rtol=2e-5, atol=1e-6)


def test_tf1_replicas_average_with_cross_replica_optimizer(fresh_ipu_system):
    """4 IPUs, 2 stages: 2 replicas, each taking every other infeed element; with
    CrossReplicaOptimizer the accumulated gradients are averaged across them, so the
    weights follow the reference on the mean gradient; the outfeed stacks [n, replicas]."""
    per_run, w1, w2 = _tf1_pipeline(ipus=4, cross_replica=True)
    assert per_run[0].shape == (8, 2)
    w1r, w2r = W1.astype(np.float64), W2.astype(np.float64)
    rep = [_batches(0, 2), _batches(1, 2)]
    losses = []
    for _ in range(4):
        acc = [np.zeros_like(w1r), np.zeros_like(w2r)]
        for _ in range(4):
            row = []
            for r in range(2):
                x, y = next(rep[r])
                loss, g1, g2 = _grads(x.astype(np.float64), y.astype(np.float64), w1r, w2r)
                row.append(loss)
                acc = [acc[0] + g1 / 2, acc[1] + g2 / 2]
            losses.append(row)
        w1r, w2r = w1r - 0.05 * acc[0], w2r - 0.05 * acc[1]
    np.testing.assert_allclose(np.concatenate(per_run), losses, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(w1, w1r, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(w2, w2r, rtol=2e-5, atol=1e-6)


def test_tf1_replicas_without_all_reduce_diverge_as_on_the_ipu(fresh_ipu_system):
    """A plain optimizer: each replica updates its own copy from its own elements; the host
    sees replica 0's weights (the reference on elements 0, 2, 4, ...)."""
    per_run, w1, w2 = _tf1_pipeline(ipus=4)
    losses0, r1, r2 = _reference(_batches(0, 2), 0.05, 4, 2, executions=2)
    losses1, _, _ = _reference(_batches(1, 2), 0.05, 4, 2, executions=2)
    got = np.concatenate(per_run)
    np.testing.assert_allclose(got[:, 0], losses0, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(got[:, 1], losses1, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(w1, r1, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(w2, r2, rtol=2e-5, atol=1e-6)


def test_shards_set_the_replication_factor():
    from ipu_gpu.ipu import program_shards

    assert [program_shards.ipus_per_replica(i) for i in range(5)] == [1, 2, 4, 4, 8]


def _forward(x, w1=W1, w2=W2):
    return np.maximum(x.astype(np.float64) @ w1, 0) @ w2


def _inference_stages(last):
    def stage1(lr, x, y):
        w = v1.get_variable("w1", initializer=W1)
        return ig.nn.relu(ig.matmul(x, w)), y

    def stage2(h, y):
        w = v1.get_variable("w2", initializer=W2)
        return last(ig.matmul(h, w), y)
    return [stage1, stage2]


def test_tf1_inference_outfeeds_the_last_stage_per_micro_batch(fresh_ipu_system):
    """No optimizer_function: the last stage's outputs (a tuple: enqueued as a list) once
    per micro-batch, repeat_count * GA entries per run; the weights do not change."""
    per_run, w1, _ = _tf1_pipeline(stages=_inference_stages(lambda p, y: (p, y)),
                                   training=False, outfeed_loss=False, ga=4, repeat=2,
                                   executions=1)
    pred, labels = per_run[0]
    batches = _batches()
    want = [next(batches) for _ in range(8)]
    np.testing.assert_allclose(pred, [_forward(x) for x, _ in want], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(labels, [y for _, y in want])
    np.testing.assert_array_equal(w1, W1)


def test_tf1_inference_single_output_and_accumulated_outfeed(fresh_ipu_system):
    per_run, _, _ = _tf1_pipeline(stages=_inference_stages(lambda p, y: p), training=False,
                                  outfeed_loss=False, ga=4, repeat=2, executions=1)
    batches = _batches()
    want = np.array([_forward(next(batches)[0]) for _ in range(8)])
    np.testing.assert_allclose(per_run[0], want, rtol=1e-5, atol=1e-6)
    per_run, _, _ = _tf1_pipeline(stages=_inference_stages(lambda p, y: p), training=False,
                                  outfeed_loss=False, ga=4, repeat=2, executions=1,
                                  accumulate_outfeed=True)
    (summed,) = per_run[0]  # a list of one accumulated output, once per execution
    np.testing.assert_allclose(summed, want.reshape(2, 4, BATCH, 1).sum(axis=1), rtol=1e-5,
                               atol=1e-5)


def test_tf1_training_outfeeds_outputs_masks_and_accumulates(fresh_ipu_system):
    """Training without outfeed_loss: the last stage's outputs as a list per micro-batch
    (here [lr, loss]); outfeed_mask drops the True ones; accumulate_outfeed with
    outfeed_loss sums the loss over the micro-batches, once per execution."""
    losses, _, _ = _reference(_batches(), 0.05, 4, 2, executions=1)
    per_run, _, _ = _tf1_pipeline(outfeed_loss=False, executions=1)
    lr, loss = per_run[0]
    np.testing.assert_allclose(lr, np.full(8, 0.05, np.float32))
    np.testing.assert_allclose(loss, losses, rtol=2e-5, atol=1e-6)
    per_run, _, _ = _tf1_pipeline(outfeed_loss=False, executions=1,
                                  outfeed_mask=[True, False])
    (loss,) = per_run[0]
    np.testing.assert_allclose(loss, losses, rtol=2e-5, atol=1e-6)
    per_run, _, _ = _tf1_pipeline(executions=1, accumulate_outfeed=True)
    np.testing.assert_allclose(per_run[0], losses.reshape(2, 4).sum(axis=1), rtol=2e-5)
    with pytest.raises(ValueError, match="The last computational stage has 2 outputs, but the "
                       "`outfeed_mask` has elements 1 - these need to match in size."):
        _tf1_pipeline(outfeed_loss=False, executions=1, outfeed_mask=[True])


def test_tf1_outputs_without_outfeed_queue_are_an_error(fresh_ipu_system):
    with pytest.raises(ValueError, match="The last computational stage has tensor outputs: "
                       ".*, but no outfeed_queue has been provided."):
        _tf1_pipeline(outfeed_loss=False, executions=1, outfeed_queue=None)


# ---- Graphcore's errors -----------------------------------------------------------------------
def _stage(*a):
    return a


def _opt_fn(*a):
    return pipelining_ops.OptimizerFunctionOutput(v1.train.GradientDescentOptimizer(0.1),
                                                  ig.constant(1.0))


_OUT = object()  # stands for an outfeed queue
_LAST = object()  # stands for an IPUOutfeedMode.LAST queue


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(gradient_accumulation_count=None), ValueError,
     "gradient_accumulation_count must be specified."),
    (dict(gradient_accumulation_count=-1), ValueError,
     "gradient_accumulation_count must be >= 0."),
    (dict(gradient_accumulation_count=2 ** 31), ValueError,
     "gradient_accumulation_count must be < max int32."),
    (dict(optimizer_function=_opt_fn, reduction_method="max"), ValueError,
     "Cannot parse max as one of GradientAccumulationReductionMethod"),
    (dict(reduction_method=RM.MEAN, batch_serialization_iterations=2), ValueError,
     "batch_serialization_iterations != 1 is only supported when reduction_method is "
     "GradientAccumulationReductionMethod.SUM"),
    (dict(continuous_weight_updates=True), NotImplementedError,
     "Continuous weight updates are currently not supported."),
    (dict(pipeline_schedule=0), TypeError,
     "The given pipeline_schedule is not a member of the PipelineSchedule enumeration."),
    (dict(pipeline_schedule=PipelineSchedule.Grouped, batch_serialization_iterations=2),
     NotImplementedError, "Batch serialization is only supported with the `Sequential` "
     "schedule."),
    (dict(recomputation_mode="Auto"), TypeError,
     "The given recomputation_mode is not a member of the RecomputationMode enumeration."),
    (dict(computational_stages=_stage), TypeError,
     "computational_stages argument needs to be a list or a tuple."),
    (dict(infeed_queue=[1]), TypeError,
     "infeed_queue is not an instance of ipu_infeed_queue.IPUInfeedQueue"),
    (dict(outfeed_queue=[1]), TypeError,
     "outfeed_queue is not an instance of ipu_outfeed_queue.IPUOutfeedQueue"),
    (dict(computational_stages=[_stage]), ValueError,
     "Pipeline requires at least two computational stages."),
    (dict(device_mapping=0), TypeError, "device_mapping argument needs to be a list or a "
     "tuple."),
    (dict(device_mapping=[0]), ValueError, "Each stage must be mapped to an IPU: 1 mappings != "
     "2 stages"),
    (dict(pipeline_schedule=PipelineSchedule.Interleaved, device_mapping=[0, 0],
          optimizer_function=_opt_fn), NotImplementedError,
     "The pipelining schedule 'Interleaved' does not currently support multiple pipeline "
     "stages on the same device for training graphs. Please use a different pipeline "
     "schedule."),
    (dict(batch_serialization_iterations=2, device_mapping=[0, 1]), NotImplementedError,
     "When using batch serialization, all the pipeline stages need to be mapped to a single "
     "IPU."),
    (dict(forward_propagation_stages_poplar_options=pipelining_ops.PipelineStageOptions()),
     TypeError, "forward_propagation_stages_poplar_options must be a list or a tuple of "
     "PipelineStageOptions objects."),
    (dict(forward_propagation_stages_poplar_options=[pipelining_ops.PipelineStageOptions()]),
     ValueError, "forward_propagation_stages_poplar_options must be a list or a tuple of "
     "PipelineStageOptions objects of length 2 (same number as the number of computational "
     "stages) but is 1."),
    (dict(forward_propagation_stages_poplar_options=[1, 2]), TypeError,
     "Expected all elements of forward_propagation_stages_poplar_options to be of type "
     "PipelineStageOptions, but got 1 instead."),
    (dict(optimizer_function=_opt_fn, backward_propagation_stages_poplar_options=[1, 2]),
     TypeError, "Expected all elements of backward_propagation_stages_poplar_options to be "
     "of type PipelineStageOptions, but got 1 instead."),
    (dict(optimizer_function=_opt_fn, weight_update_poplar_options=[]), TypeError,
     "weight_update_poplar_options to be of type PipelineStageOptions, but got [] instead."),
    (dict(outfeed_mask=[True]), ValueError,
     "An optimizer_function must be provided when outfeed_mask is set."),
    (dict(outfeed_loss=True), ValueError,
     "An optimizer_function must be provided when outfeed_loss is True."),
    (dict(optimizer_function=_opt_fn, outfeed_loss=True, outfeed_mask=[True]), ValueError,
     "Only one of `outfeed_loss` and `outfeed_mask` can be set."),
    (dict(accumulate_outfeed=True), ValueError,
     "An outfeed_queue must be provided when accumulate_outfeed is True."),
    (dict(accumulate_outfeed=True, outfeed_queue=_LAST), ValueError,
     "To accumulate the outfeed, it must be in IPUOutfeedMode ALL."),
])
def test_bad_arguments_raise_graphcores_errors(kwargs, error, message):
    args = dict(computational_stages=[_stage, _stage], gradient_accumulation_count=4)
    args.update(kwargs)
    if args.get("outfeed_queue") is _LAST:
        args["outfeed_queue"] = ipu_outfeed_queue.IPUOutfeedQueue(
            outfeed_mode=ipu_outfeed_queue.IPUOutfeedMode.LAST)
    with pytest.raises(error) as info:
        pipelining_ops.pipeline(**args)
    assert message in str(info.value)


def test_optimizer_function_output_checks_its_fields():
    sgd = v1.train.GradientDescentOptimizer(0.1)
    loss = ig.constant(1.0)
    with pytest.raises(TypeError, match="OptimizerFunctionOutput.opt must be a TensorFlow "
                       "Optimizer or Keras OptimizerV2 object."):
        pipelining_ops.OptimizerFunctionOutput(object(), loss)
    with pytest.raises(TypeError, match="OptimizerFunctionOutput.loss must be a TensorFlow "
                       "Tensor object."):
        pipelining_ops.OptimizerFunctionOutput(sgd, 1.0)
    with pytest.raises(TypeError, match="compute_gradients_args must be a tuple"):
        pipelining_ops.OptimizerFunctionOutput(sgd, loss, compute_gradients_args=[1])
    with pytest.raises(TypeError, match="apply_gradients_kwargs must be a dict"):
        pipelining_ops.OptimizerFunctionOutput(sgd, loss, apply_gradients_kwargs=[1])
    with pytest.raises(ValueError, match="variables may only be used with OptimizerV2"):
        pipelining_ops.OptimizerFunctionOutput(sgd, loss, variables=[ig.Variable(1.0)])
    with pytest.raises(TypeError, match="PipelineStageOptions.matmul_options must be "
                       "dictionary."):
        pipelining_ops.PipelineStageOptions(matmul_options=[1])
    opts = pipelining_ops.PipelineStageOptions({"availableMemoryProportion": 0.3})
    assert opts.get_proto()["convolution_options"] == {"availableMemoryProportion": "0.3"}


@pytest.mark.parametrize("schedule, training, stages, ga, message", [
    (PipelineSchedule.Grouped, True, 2, 6, "must be a multiple of 4, but it is 6."),
    (PipelineSchedule.Grouped, False, 3, 4, "must be a multiple of 3, but it is 4."),
    (PipelineSchedule.Grouped, True, 2, 0, "must be at least 4, but it is 0."),
    (PipelineSchedule.Interleaved, False, 3, 10, "must be a multiple of 3, but it is 10."),
    (PipelineSchedule.Interleaved, True, 2, 3, "must be a multiple of 2, but it is 3."),
    (PipelineSchedule.Sequential, True, 2, 0, "must be at least 1, but it is 0."),
])
def test_pipeline_depth_rule_per_schedule(schedule, training, stages, ga, message):
    """Graphcore's pipeline visitor: the depth is a multiple of, and at least, the overlap
    of the schedule (Grouped: all stages of the schedule; Interleaved: non-overlapping
    rotations of the stage-to-IPU mapping; Sequential: 1); FailedPreconditionError."""
    from ipu_gpu.ipu.pipelining_ops import _overlap_length, check_depth

    overlap = _overlap_length(schedule, list(range(stages)), training)
    with pytest.raises(errors.FailedPreconditionError,
                       match="The pipeline depth of the pipeline " + message):
        check_depth(ga, overlap)
    check_depth(overlap * 2, overlap)
    assert _overlap_length(PipelineSchedule.Interleaved, [0, 1, 2, 0, 0, 2, 1, 0], False) == 2


def test_tf1_depth_error_when_the_program_runs(fresh_ipu_system):
    with pytest.raises(errors.FailedPreconditionError,
                       match="must be a multiple of 4, but it is 6."):
        _tf1_pipeline(ga=6, executions=1)


# ---- Graphcore's TF1 pipelining tutorial, run unmodified ----------------------------------
def _mlp_reference(steps, repeat, ga, batch, lr):
    """Per-micro-batch losses of tests/programs/tf1_pipelining.py in float64: Flatten,
    Dense(16, relu), Dense(8, relu) | Dense(4), mean sparse softmax cross-entropy; GA
    micro-batches summed per update."""
    rng = np.random.default_rng(5)
    ws = [rng.uniform(-0.4, 0.4, s).astype(np.float32).astype(np.float64)
          for s in ((16, 16), (16, 8), (8, 4))]
    bs = [np.zeros(w.shape[1]) for w in ws]
    rng = np.random.default_rng(9)
    x_all = rng.uniform(0.0, 1.0, (512, 4, 4)).astype(np.float32)
    y_all = x_all.reshape(512, 16)[:, :4].argmax(axis=1)
    x_all = x_all.reshape(512, 16).astype(np.float64)
    losses, i = [], 0
    for _ in range(steps * repeat):
        gw = [np.zeros_like(w) for w in ws]
        gb = [np.zeros_like(b) for b in bs]
        for _ in range(ga):
            j = i % (512 // batch)
            x, y = x_all[j * batch:(j + 1) * batch], y_all[j * batch:(j + 1) * batch]
            i += 1
            acts, pres = [x], []
            for k, (w, b) in enumerate(zip(ws, bs)):
                pre = acts[-1] @ w + b
                pres.append(pre)
                acts.append(np.maximum(pre, 0) if k < 2 else pre)
            z = acts[-1] - acts[-1].max(axis=1, keepdims=True)
            p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
            losses.append(np.mean(-np.log(p[np.arange(batch), y])))
            d = p.copy()
            d[np.arange(batch), y] -= 1
            d /= batch
            for k in (2, 1, 0):
                gw[k] += acts[k].T @ d
                gb[k] += d.sum(axis=0)
                if k:
                    d = (d @ ws[k].T) * (pres[k - 1] > 0)
        ws = [w - lr * g for w, g in zip(ws, gw)]
        bs = [b - lr * g for b, g in zip(bs, gb)]
    return np.array(losses)


@pytest.mark.parametrize("schedule", [
    "Grouped", pytest.param("Interleaved", marks=pytest.mark.slow),
    pytest.param("Sequential", marks=pytest.mark.slow)])
def test_graphcores_tf1_pipelining_tutorial_runs_unmodified(schedule):
    """tests/programs/tf1_pipelining.py (Graphcore's pipelining example: two stages of Keras
    layers on 2 IPUs, one replica) through ``ipu-gpu run``: the outfed losses of every
    step equal the float64 model of the pipeline's semantics."""
    from test_run import _run

    r = _run("tf1_pipelining.py", "--learning-rate", "0.1", "--steps", "6",
             "--pipeline-schedule", schedule)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 6 and all(f"Step {i}, losses (16,) " in line
                                   for i, line in enumerate(lines))
    got = np.array([float(v) for line in lines
                    for v in line.split("losses (16,) ")[1].split(",")[0].split()])
    np.testing.assert_allclose(got, _mlp_reference(6, 2, 8, 8, 0.1), rtol=2e-5, atol=2e-6)
    assert got[-16:].mean() < got[:16].mean() - 0.02  # it learns


# ---- TF2: a pipeline in a function run by IPUStrategy, Keras optimizers ---------------------
def _tf2_pipeline(ipus=2, ga=4, repeat=2, executions=2, method=RM.SUM):
    from conftest import configure_ipus

    from ipu_gpu import keras
    from ipu_gpu.emulation import system
    from ipu_gpu.ipu import ipu_strategy

    system.reset()
    configure_ipus(ipus)
    ds = ig.data.Dataset.from_tensor_slices((X_ALL, Y_ALL)).batch(BATCH, drop_remainder=True)
    infeed = ipu_infeed_queue.IPUInfeedQueue(ds.repeat())
    outfeed = ipu_outfeed_queue.IPUOutfeedQueue()
    strategy = ipu_strategy.IPUStrategy()
    with strategy.scope():
        w1, w2 = ig.Variable(W1), ig.Variable(W2)
        opt = keras.optimizers.SGD(0.05)

    def stage1(x, y):
        return ig.nn.relu(ig.matmul(x, w1)), y

    def stage2(h, y):
        return ig.reduce_mean((ig.matmul(h, w2) - y) ** 2)

    def optimizer_function(loss):
        return pipelining_ops.OptimizerFunctionOutput(opt, loss, variables=[w1, w2])

    @ig.function
    def step():
        return pipelining_ops.pipeline([stage1, stage2], ga, repeat_count=repeat,
                                       infeed_queue=infeed, outfeed_queue=outfeed,
                                       optimizer_function=optimizer_function,
                                       outfeed_loss=True, reduction_method=method)
    per_run = []
    for _ in range(executions):
        strategy.run(step)
        per_run.append(np.asarray(outfeed.dequeue()))
    weights = w1.numpy(), w2.numpy()
    system.reset()
    return per_run, weights


@pytest.mark.parametrize("method", [RM.SUM, RM.RUNNING_MEAN])
def test_tf2_pipeline_with_keras_optimizer_trains_as_the_reference(method, fresh_ipu_system):
    per_run, (w1, w2) = _tf2_pipeline(method=method)
    losses, r1, r2 = _reference(_batches(), 0.05, 4, 2, method, executions=2)
    np.testing.assert_allclose(np.concatenate(per_run), losses, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(w1, r1, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(w2, r2, rtol=2e-5, atol=1e-6)


def test_tf2_replicated_pipeline_sums_the_replicas_gradients(fresh_ipu_system):
    """4 IPUs, 2 stages: 2 replicas; a Keras optimizer under IPUStrategy sums the replicas'
    accumulated gradients (Graphcore's cross_replica_sum), so each update is the sum over
    both replicas' micro-batches."""
    per_run, (w1, w2) = _tf2_pipeline(ipus=4, executions=1)
    assert per_run[0].shape == (8, 2)
    w1r, w2r = W1.astype(np.float64), W2.astype(np.float64)
    rep = [_batches(0, 2), _batches(1, 2)]
    for _ in range(2):
        acc = [np.zeros_like(w1r), np.zeros_like(w2r)]
        for _ in range(4):
            for r in range(2):
                x, y = next(rep[r])
                _, g1, g2 = _grads(x.astype(np.float64), y.astype(np.float64), w1r, w2r)
                acc = [acc[0] + g1, acc[1] + g2]
        w1r, w2r = w1r - 0.05 * acc[0], w2r - 0.05 * acc[1]
    np.testing.assert_allclose(w1, w1r, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(w2, w2r, rtol=2e-5, atol=1e-6)


def test_eager_pipeline_needs_variables_for_a_keras_optimizer(fresh_ipu_system):
    from conftest import configure_ipus

    from ipu_gpu import keras

    configure_ipus(2)
    v = ig.Variable(1.0)
    opt = keras.optimizers.SGD(0.1)
    outfeed = ipu_outfeed_queue.IPUOutfeedQueue()

    def model():
        return pipelining_ops.pipeline(
            [lambda: v * 2.0, lambda t: t * t], 4, outfeed_queue=outfeed,
            optimizer_function=lambda loss: pipelining_ops.OptimizerFunctionOutput(opt, loss),
            outfeed_loss=True)
    with scopes.ipu_scope("/device:IPU:0"):
        with pytest.raises(RuntimeError, match="No variables to optimize. When using "
                           "OptimzerV2, OptimizerFunctionOutput must contain a list of "
                           "variables or a GradientTape."):
            ipu_compiler.compile(model, [])


# ---- Keras set_pipelining_options takes pipelining_ops' objects --------------------------
def test_keras_set_pipelining_options_takes_schedules_and_stage_options(fresh_ipu_system):
    """The schedule, recomputation mode and stage options are pipeline() arguments Keras
    passes through: accepted, checked as pipeline() checks them, no change to the numbers;
    the keys Keras sets itself are Graphcore's errors."""
    from conftest import configure_ipus

    from ipu_gpu import keras
    from ipu_gpu.ipu.ipu_strategy import IPUStrategy

    configure_ipus(2)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((32, 5)).astype(np.float32)
    y = rng.standard_normal((32, 1)).astype(np.float32)
    weights = None
    results = []
    for extra in ({}, dict(
            pipeline_schedule=PipelineSchedule.Interleaved,
            recomputation_mode=pipelining_ops.RecomputationMode.RecomputeThenBackpropagate,
            forward_propagation_stages_poplar_options=[
                pipelining_ops.PipelineStageOptions({"availableMemoryProportion": "0.3"}),
                pipelining_ops.PipelineStageOptions(matmul_options={"partialsType": "half"})],
            weight_update_poplar_options=pipelining_ops.PipelineStageOptions())):
        with IPUStrategy().scope():
            model = keras.Sequential([keras.layers.Dense(4, activation="relu"),
                                      keras.layers.Dense(1)])
            model.build((None, 5))
            if weights is None:
                weights = model.get_weights()
            model.set_weights(weights)
            model.compile(keras.optimizers.SGD(0.05), "mse", steps_per_execution=4)
            model.set_pipeline_stage_assignment([0, 1])
            model.set_pipelining_options(gradient_accumulation_steps_per_replica=4, **extra)
            model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
            results.append(model.get_weights())
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
    with IPUStrategy().scope():
        with pytest.raises(ValueError, match="Found `repeat_count` key in `pipelining_kwargs`. "
                           "This argument is automatically set by Keras."):
            model.set_pipelining_options(repeat_count=2)
        with pytest.raises(ValueError, match="Found `gradient_accumulation_count` key in "
                           "`pipelining_kwargs`. Set the `gradient_accumulation_steps_per_replica`"
                           " argument to `set_pipelining_options` instead."):
            model.set_pipelining_options(gradient_accumulation_count=2)
        with pytest.raises(ValueError, match="Found `outfeed_mask` key in `pipelining_kwargs`. "
                           "This argument is not compatible with Keras."):
            model.set_pipelining_options(outfeed_mask=[True])
        with pytest.raises(TypeError, match="The given pipeline_schedule is not a member of the "
                           "PipelineSchedule enumeration."):
            model.set_pipelining_options(pipeline_schedule="Grouped")
        with pytest.raises(TypeError, match="Expected all elements of "
                           "forward_propagation_stages_poplar_options to be of type "
                           "PipelineStageOptions"):
            model.set_pipelining_options(forward_propagation_stages_poplar_options=[{}])
        with pytest.raises(TypeError, match="unexpected keyword argument 'no_such_option'"):
            model.set_pipelining_options(no_such_option=1)


def test_tf1_outside_tensors_must_be_pipeline_inputs(fresh_ipu_system):
    """A non-variable tensor made outside the pipeline and used by a stage is TF's
    capture error; passed through ``inputs`` it is fine."""
    from conftest import configure_ipus

    configure_ipus(2)
    with v1.Graph().as_default():
        outfeed = ipu_outfeed_queue.IPUOutfeedQueue()
        scale = v1.placeholder(np.float32, [])

        def model():
            return pipelining_ops.pipeline([lambda: ig.ones([2]) * scale, lambda t: t + 1.0],
                                           2, outfeed_queue=outfeed)
        with scopes.ipu_scope("/device:IPU:0"):
            with pytest.raises(ValueError, match="Trying to capture the tensor .* which is not a "
                               "resource. This tensor needs to be passed as either part of the "
                               "`input` or `infeed_queue` of the pipeline."):
                ipu_compiler.compile(model, [])

            def good(s):
                return pipelining_ops.pipeline([lambda s: ig.ones([2]) * s, lambda t: t + 1.0],
                                               2, inputs=[s], outfeed_queue=outfeed)
            program = ipu_compiler.compile(good, [scale])
        out = outfeed.dequeue()
        with v1.Session() as sess:
            sess.run(program, {scale: 3.0})
            np.testing.assert_array_equal(sess.run(out), np.full((2, 2), 4.0, np.float32))


def test_eager_compile_parallel_stages_dict_elements_and_replicas(fresh_ipu_system):
    """``ipu_compiler.compile`` outside a graph: a dict infeed element is stage 0's keyword
    arguments, a list of functions is one stage (outputs concatenated), the last stage's
    outputs are outfed per micro-batch; on 4 IPUs the 2-stage pipeline runs 2 replicas,
    replica r taking elements r, r + 2, ..."""
    from conftest import configure_ipus

    configure_ipus(4)
    ds = ig.data.Dataset.from_tensor_slices({"a": X_ALL[:16], "b": Y_ALL[:16]}).batch(
        2, drop_remainder=True)
    infeed = ipu_infeed_queue.IPUInfeedQueue(ds)
    outfeed = ipu_outfeed_queue.IPUOutfeedQueue()
    w = ig.Variable(W1)

    def stage0(a, b):
        return ig.matmul(a, w), b

    stage1 = [lambda h, b: ig.reduce_sum(h, axis=1), lambda h, b: b * 2.0]

    def stage2(s, b2):
        return {"s": s, "b2": b2}

    def model():
        return pipelining_ops.pipeline([stage0, stage1, stage2], 4, infeed_queue=infeed,
                                       outfeed_queue=outfeed, device_mapping=[0, 1, 1],
                                       pipeline_schedule=PipelineSchedule.Sequential)
    with scopes.ipu_scope("/device:IPU:0"):
        assert ipu_compiler.compile(model, []).name == "NoOp"
    got = outfeed.dequeue()
    assert got["s"].shape == (4, 2, 2)  # 4 micro-batches, 2 replicas, batch 2
    for n in range(4):
        for r in range(2):
            j = 2 * n + r
            a, b = X_ALL[2 * j:2 * j + 2], Y_ALL[2 * j:2 * j + 2]
            np.testing.assert_allclose(got["s"][n, r], (a @ W1).sum(axis=1), rtol=1e-5)
            np.testing.assert_allclose(got["b2"][n, r], b * 2.0, rtol=1e-6)


def test_accumulator_dtype_and_recomputation_checkpoint(fresh_ipu_system):
    """gradient_accumulation_dtype as a callable is asked once per variable (and its dtype
    reaches apply_gradients: float16 accumulators for float32 variables are a dtype error of
    the optimizer, as TF's docs warn); recomputation_checkpoint is the identity on a
    structure."""
    asked = []

    def dtype_of(var):
        asked.append(tuple(var.shape))
        return ig.float32

    ckpt = pipelining_ops.recomputation_checkpoint({"a": ig.constant([1.0, 2.0]),
                                                    "b": [ig.constant(3)]})
    np.testing.assert_array_equal(ckpt["a"], [1.0, 2.0])
    assert int(ckpt["b"][0]) == 3
    per_run, w1, _ = _tf1_pipeline(executions=1, gradient_accumulation_dtype=dtype_of)
    assert sorted(asked) == [(3, 1), (5, 3)]
    _, r1, _ = _reference(_batches(), 0.05, 4, 2)
    np.testing.assert_allclose(w1, r1, rtol=2e-5, atol=1e-6)
    with pytest.raises(TypeError, match="float16"):
        _tf1_pipeline(executions=1, gradient_accumulation_dtype=ig.float16)


def test_eager_tf1_optimizer_wrappers_match_the_graph(fresh_ipu_system):
    """A tf.compat.v1 optimizer in a pipeline run eagerly (compile outside a graph): with
    CrossReplicaOptimizer the 2 replicas of 4 IPUs average their gradients exactly as the
    graph-mode pipeline does; MapGradientOptimizer maps each micro-batch's gradients."""
    from conftest import configure_ipus

    def run(ipus, wrap):
        configure_ipus(ipus)
        ds = ig.data.Dataset.from_tensor_slices((X_ALL, Y_ALL)).batch(BATCH,
                                                                      drop_remainder=True)
        infeed = ipu_infeed_queue.IPUInfeedQueue(ds.repeat())
        outfeed = ipu_outfeed_queue.IPUOutfeedQueue()
        w1, w2 = ig.Variable(W1), ig.Variable(W2)

        def stage1(lr, x, y):
            return lr, ig.nn.relu(ig.matmul(x, w1)), y

        def stage2(lr, h, y):
            return lr, ig.reduce_mean((ig.matmul(h, w2) - y) ** 2)

        def optimizer_function(lr, loss):
            return pipelining_ops.OptimizerFunctionOutput(
                wrap(v1.train.GradientDescentOptimizer(lr)), loss)

        def model(lr):
            return pipelining_ops.pipeline([stage1, stage2], 4, repeat_count=2, inputs=[lr],
                                           infeed_queue=infeed, outfeed_queue=outfeed,
                                           optimizer_function=optimizer_function,
                                           outfeed_loss=True)
        with scopes.ipu_scope("/device:IPU:0"):
            for _ in range(2):
                ipu_compiler.compile(model, [np.float32(0.05)])
        return np.asarray(outfeed.dequeue()), w1.numpy(), w2.numpy()

    losses, w1, w2 = run(4, optimizers.CrossReplicaOptimizer)
    graph_losses, g1, g2 = _tf1_pipeline(ipus=4, cross_replica=True)
    np.testing.assert_allclose(losses, np.concatenate(graph_losses), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(w1, g1, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(w2, g2, rtol=1e-6, atol=1e-7)

    losses, w1, _ = run(2, lambda opt: optimizers.MapGradientOptimizer(
        opt, lambda g, v: g + 0.1 * v))
    ref1, ref2 = W1.astype(np.float64), W2.astype(np.float64)
    batches = _batches()
    for _ in range(4):
        acc = [np.zeros_like(ref1), np.zeros_like(ref2)]
        for _ in range(4):
            x, y = next(batches)
            _, g1, g2 = _grads(x.astype(np.float64), y.astype(np.float64), ref1, ref2)
            acc = [acc[0] + g1 + 0.1 * ref1, acc[1] + g2 + 0.1 * ref2]
        ref1, ref2 = ref1 - 0.05 * acc[0], ref2 - 0.05 * acc[1]
    np.testing.assert_allclose(w1, ref1, rtol=2e-5, atol=1e-6)


def test_tf1_stage_outfeeds_of_their_own_run_per_micro_batch(fresh_ipu_system):
    """Graphcore's inspecting-tensors example: a stage enqueues its activations to an outfeed
    of its own (its result not used by the stage's outputs): it runs once per micro-batch,
    as the stateful operations of TF's stage functions do."""
    activations = ipu_outfeed_queue.IPUOutfeedQueue()

    def stage1(lr, x, y):
        w = v1.get_variable("w1", initializer=W1)
        h = ig.nn.relu(ig.matmul(x, w))
        activations.enqueue({"dense1": h})
        return lr, h, y

    stages = [stage1, _stages()[1]]
    _, _, _ = _tf1_pipeline(stages=stages, executions=1)
    got = activations.dequeue()["dense1"]
    batches = _batches()
    w1 = W1.astype(np.float64)
    w2 = W2.astype(np.float64)
    want = []
    for _ in range(2):
        acc = [np.zeros_like(w1), np.zeros_like(w2)]
        for _ in range(4):
            x, y = next(batches)
            want.append(np.maximum(x.astype(np.float64) @ w1, 0))
            _, g1, g2 = _grads(x.astype(np.float64), y.astype(np.float64), w1, w2)
            acc = [acc[0] + g1, acc[1] + g2]
        w1, w2 = w1 - 0.05 * acc[0], w2 - 0.05 * acc[1]
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)


def test_tf1_gradient_accumulation_count_fed_at_run_time(fresh_ipu_system):
    """gradient_accumulation_count may be a tensor (Graphcore's TF 2 API): its value at
    each run sets the micro-batches, and the depth rule is checked then."""
    from conftest import configure_ipus

    configure_ipus(2)
    ds = ig.data.Dataset.from_tensor_slices((X_ALL, Y_ALL)).batch(BATCH, drop_remainder=True)
    with v1.Graph().as_default():
        infeed = ipu_infeed_queue.IPUInfeedQueue(ds.repeat())
        outfeed = ipu_outfeed_queue.IPUOutfeedQueue()
        ga = v1.placeholder(np.int32, [])

        def model(ga):
            return pipelining_ops.pipeline(
                _stages(), ga, inputs=[np.float32(0.05)], infeed_queue=infeed,
                outfeed_queue=outfeed, outfeed_loss=True,
                optimizer_function=lambda lr, loss: pipelining_ops.OptimizerFunctionOutput(
                    v1.train.GradientDescentOptimizer(lr), loss))
        with scopes.ipu_scope("/device:IPU:0"):
            program = ipu_compiler.compile(model, [ga])
        dequeue = outfeed.dequeue()
        with v1.Session() as sess:
            sess.run(infeed.initializer)
            sess.run(v1.global_variables_initializer())
            sess.run(program, {ga: 4})
            sess.run(program, {ga: 8})
            losses = sess.run(dequeue)
            with pytest.raises(errors.FailedPreconditionError, match="multiple of 4, but it "
                               "is 6"):
                sess.run(program, {ga: 6})
    want = []
    w1, w2 = W1.astype(np.float64), W2.astype(np.float64)
    batches = _batches()
    for n in (4, 8):
        acc = [np.zeros_like(w1), np.zeros_like(w2)]
        for _ in range(n):
            x, y = next(batches)
            loss, g1, g2 = _grads(x.astype(np.float64), y.astype(np.float64), w1, w2)
            want.append(loss)
            acc = [acc[0] + g1, acc[1] + g2]
        w1, w2 = w1 - 0.05 * acc[0], w2 - 0.05 * acc[1]
    np.testing.assert_allclose(losses, want, rtol=2e-5, atol=1e-6)


def test_tf2_inference_pipeline_outfeeds_a_bare_tensor(fresh_ipu_system):
    """An eager inference pipeline whose last stage returns one Tensor (not a list) enqueues
    it once per micro-batch (was: ``outputs == []`` on a Tensor raised)."""
    from conftest import configure_ipus

    from ipu_gpu.emulation import system
    from ipu_gpu.ipu import ipu_strategy

    system.reset()
    configure_ipus(2)
    ds = ig.data.Dataset.from_tensor_slices((X_ALL, Y_ALL)).batch(BATCH, drop_remainder=True)
    infeed = ipu_infeed_queue.IPUInfeedQueue(ds.repeat())
    outfeed = ipu_outfeed_queue.IPUOutfeedQueue()
    strategy = ipu_strategy.IPUStrategy()
    with strategy.scope():
        w1, w2 = ig.Variable(W1), ig.Variable(W2)

    def stage1(x, y):
        return ig.nn.relu(ig.matmul(x, w1))

    def stage2(h):
        return ig.matmul(h, w2)

    @ig.function
    def step():
        return pipelining_ops.pipeline([stage1, stage2], 4, repeat_count=2, infeed_queue=infeed,
                                       outfeed_queue=outfeed)
    strategy.run(step)
    got = np.asarray(outfeed.dequeue())
    system.reset()
    batches = _batches()
    want = np.array([_forward(next(batches)[0]) for _ in range(8)])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
