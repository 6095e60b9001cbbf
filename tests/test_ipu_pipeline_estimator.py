"""IPUPipelineEstimator and IPUPipelineEstimatorSpec (Graphcore's ipu_pipeline_estimator,
issue 17) against a numpy softmax regression split into two pipeline stages: training
(gradients of the gradient_accumulation_count micro-batches summed, one update per
pipeline execution; replicated with CrossReplicaOptimizer), evaluation through
eval_metrics_fn, prediction, and Graphcore's errors."""

import numpy as np
import pytest

import ipu_gpu.compat.v1 as tf
from ipu_gpu.ipu import config as ipu_config
from ipu_gpu.ipu import ipu_pipeline_estimator as pe
from ipu_gpu.ipu import ipu_run_config, optimizers, pipelining_ops

D, K, LR, GA = 3, 2, 0.5, 4
RNG = np.random.default_rng(3)
X = RNG.standard_normal((64, D)).astype(np.float32)
Y = (X @ np.array([1.0, -1.0, 0.5]) > 0).astype(np.int32)
W0 = (RNG.standard_normal((D, K)) * 0.2).astype(np.float32)


def _softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _numpy_pipeline_training(executions, batch, replicas=1):
    """Each execution: the gradients of GA * replicas consecutive batches at the same
    weights, summed over the micro-batches and averaged over the replicas."""
    w = W0.astype(np.float64)
    per_update = GA * replicas
    for ex in range(executions):
        g = 0
        for j in range(per_update):
            idx = np.arange((ex * per_update + j) * batch,
                            (ex * per_update + j + 1) * batch) % len(X)
            x, y = X[idx].astype(np.float64), Y[idx]
            g = g + x.T @ ((_softmax(x @ w) - np.eye(K)[y]) / batch)
        w = w - LR * g / replicas
    return w


def _model_fn(replicas=1, **spec_kwargs):
    def model_fn(mode, params):
        def stage1(features, labels=None):
            w = tf.get_variable("w", [D, K], initializer=tf.constant_initializer(W0))
            logits = tf.matmul(features, w)
            return logits if labels is None else (logits, labels)

        def stage2(logits, labels=None):
            if labels is None:
                return {"logits": logits}
            loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
            if mode == tf.estimator.ModeKeys.EVAL:
                return loss, tf.argmax(logits, -1), labels
            return loss

        def optimizer_function(loss):
            opt = tf.train.GradientDescentOptimizer(params["lr"])
            if replicas > 1:
                opt = optimizers.CrossReplicaOptimizer(opt)
            return pipelining_ops.OptimizerFunctionOutput(opt, loss)

        def eval_metrics_fn(loss, predictions, labels):
            return {"loss": loss, "accuracy": tf.metrics.accuracy(labels, predictions)}

        kwargs = dict(computational_stages=[stage1, stage2], gradient_accumulation_count=GA,
                      optimizer_function=optimizer_function, eval_metrics_fn=eval_metrics_fn)
        kwargs.update(spec_kwargs)
        return pe.IPUPipelineEstimatorSpec(mode, **kwargs)
    return model_fn


def _estimator(model_fn, model_dir, iterations=8, replicas=1, shards=2):
    cfg = ipu_config.IPUConfig()
    cfg.auto_select_ipus = replicas * shards
    run = ipu_run_config.IPURunConfig(iterations_per_loop=iterations, num_replicas=replicas,
                                      num_shards=shards, ipu_options=cfg)
    return pe.IPUPipelineEstimator(model_fn, config=ipu_run_config.RunConfig(
        ipu_run_config=run, model_dir=str(model_dir), log_step_count_steps=None),
        params={"lr": LR})


def _input(batch, repeat=True):
    ds = tf.data.Dataset.from_tensor_slices((X, Y))
    return lambda: (ds.repeat() if repeat else ds).batch(batch, drop_remainder=True)


@pytest.mark.parametrize("replicas", [1, 2])
def test_pipelined_training_equals_numpy(tmp_path, fresh_ipu_system, replicas):
    e = _estimator(_model_fn(replicas), tmp_path, replicas=replicas)
    e.train(_input(4), steps=16)  # 2 runs of 8 iterations: 2 executions of GA 4 each
    np.testing.assert_allclose(e.get_variable_value("w"),
                               _numpy_pipeline_training(4, 4, replicas), rtol=1e-5, atol=1e-6)
    assert e.get_variable_value("global_step") == 16


def test_pipelined_evaluate_and_predict(tmp_path, fresh_ipu_system):
    e = _estimator(_model_fn(), tmp_path)
    e.train(_input(4), steps=8)
    w = _numpy_pipeline_training(2, 4)
    metrics = e.evaluate(_input(4, repeat=False), steps=16)
    logits = X.astype(np.float64) @ w
    p = _softmax(logits)
    np.testing.assert_allclose(metrics["loss"], -np.mean(np.log(p[np.arange(64), Y])),
                               rtol=1e-5)
    np.testing.assert_allclose(metrics["accuracy"], np.mean(logits.argmax(1) == Y), rtol=1e-6)
    assert metrics["global_step"] == 8
    preds = list(e.predict(lambda: tf.data.Dataset.from_tensor_slices(X).batch(
        4, drop_remainder=True), num_predictions=12))
    np.testing.assert_allclose(np.stack([q["logits"] for q in preds]), logits[:12],
                               rtol=1e-5, atol=1e-6)


def test_pipeline_spec_errors():
    train, ev = tf.estimator.ModeKeys.TRAIN, tf.estimator.ModeKeys.EVAL
    with pytest.raises(ValueError, match="must contain `optimizer_function` when training"):
        pe.IPUPipelineEstimatorSpec(train, [len], gradient_accumulation_count=4)
    with pytest.raises(ValueError, match="must contain `eval_metrics_fn` when evaluating"):
        pe.IPUPipelineEstimatorSpec(ev, [len], gradient_accumulation_count=4)
    with pytest.raises(ValueError, match="must contain `gradient_accumulation_count`"):
        pe.IPUPipelineEstimatorSpec(ev, [len], eval_metrics_fn=len)
    with pytest.raises(ValueError, match="`accumulate_outfeed` pipeline keyword argument"):
        pe.IPUPipelineEstimatorSpec(ev, [len], gradient_accumulation_count=4,
                                    eval_metrics_fn=len, accumulate_outfeed=True)
    spec = pe.IPUPipelineEstimatorSpec(ev, [len], gradient_accumulation_count=4,
                                       eval_metrics_fn=len, pipeline_schedule=1)
    assert spec.pipeline_op_kwargs == {"pipeline_schedule": 1}


def test_pipeline_estimator_errors(tmp_path, fresh_ipu_system):
    with pytest.raises(ValueError, match="cannot be less than `gradient_accumulation_count`"):
        _estimator(_model_fn(), tmp_path / "a", iterations=2).train(_input(4), steps=2)
    with pytest.raises(ValueError, match=r"\(got 6\) must be divisible by "
                                         r"`gradient_accumulation_count` \(got 4\)"):
        _estimator(_model_fn(), tmp_path / "b", iterations=6).train(_input(4), steps=6)
    with pytest.raises(ValueError, match="This pipeline requires 2 devices, but "
                                         "`IPURunConfig.num_shards` was set to 4"):
        _estimator(_model_fn(), tmp_path / "c", shards=4).train(_input(4), steps=8)
    with pytest.raises(ValueError, match="must not have `features` or `labels` arguments"):
        _estimator(lambda features, mode: None, tmp_path / "d").train(_input(4), steps=8)
    with pytest.raises(TypeError, match="must return `IPUPipelineEstimatorSpec`"):
        _estimator(lambda mode, params: tf.estimator.EstimatorSpec(
            tf.estimator.ModeKeys.PREDICT, predictions=tf.constant(1.0)),
            tmp_path / "e").train(_input(4), steps=8)
    with pytest.raises(ValueError, match="steps \\(4\\) must be a multiple of "
                                         "iterations_per_loop \\(8\\)"):
        _estimator(_model_fn(), tmp_path / "f").train(_input(4), steps=4)
