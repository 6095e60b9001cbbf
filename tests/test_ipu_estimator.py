"""IPUEstimator, IPUEstimatorSpec, IPURunConfig/RunConfig and IPULoggingTensorHook (Graphcore's
ipu_estimator API, issue 17) against a numpy softmax regression: per-step losses and weights
of training (one replica and replicated with CrossReplicaOptimizer, which equals the combined
batch), checkpoint resumption, evaluation metrics, predictions, host_call and eval_metrics
on the host, and the documented errors."""

import numpy as np
import pytest

import ipu_gpu.compat.v1 as tf
from ipu_gpu import estimator as est
from ipu_gpu.ipu import config as ipu_config
from ipu_gpu.ipu import ipu_estimator, ipu_run_config, optimizers
from ipu_gpu.ipu import scopes as ipu_scopes
from ipu_gpu.ipu.ipu_session_run_hooks import IPULoggingTensorHook

D, K, LR = 3, 2, 0.5
RNG = np.random.default_rng(7)
X = RNG.standard_normal((64, D)).astype(np.float32)
Y = (X @ np.array([1.0, -1.0, 0.5]) > 0).astype(np.int32)
W0 = (RNG.standard_normal((D, K)) * 0.2).astype(np.float32)


def _softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _numpy_training(steps, batch, w=None, b=None):
    """Plain gradient descent of the mean softmax cross entropy, batch after batch of X
    (repeated); returns (per-step losses, w, b)."""
    w = W0.astype(np.float64) if w is None else w
    b = np.zeros(K) if b is None else b
    losses = []
    for step in range(steps):
        idx = np.arange(step * batch, (step + 1) * batch) % len(X)
        x, y = X[idx].astype(np.float64), Y[idx]
        p = _softmax(x @ w + b)
        losses.append(-np.mean(np.log(p[np.arange(batch), y])))
        g = (p - np.eye(K)[y]) / batch
        w, b = w - LR * x.T @ g, b - LR * g.sum(0)
    return np.array(losses), w, b


def _logits(features):
    w = tf.get_variable("w", [D, K], initializer=tf.constant_initializer(W0))
    b = tf.get_variable("b", [K], initializer=tf.zeros_initializer())
    return tf.matmul(features, w) + b


def _make_model_fn(logged, replicas=1, spec_class=None):
    def model_fn(features, labels, mode, params):
        logits = _logits(features)
        if mode == tf.estimator.ModeKeys.PREDICT:
            return tf.estimator.EstimatorSpec(mode, predictions={
                "class": tf.argmax(logits, -1), "logits": logits})
        loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
        if mode == tf.estimator.ModeKeys.EVAL:
            return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={
                "accuracy": tf.metrics.accuracy(labels, tf.argmax(logits, -1))})
        hook = IPULoggingTensorHook(every_n_iter=1, formatter=lambda v: logged.append(
            np.asarray(v["loss"])) or "", logging_mode=IPULoggingTensorHook.LoggingMode.ALL)
        opt = tf.train.GradientDescentOptimizer(params["lr"])
        if replicas > 1:
            opt = optimizers.CrossReplicaOptimizer(opt)
        train = tf.group([opt.minimize(loss), hook.log({"loss": loss})])
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train,
                                          training_hooks=[hook])
    return model_fn


def _estimator(model_fn, model_dir, iterations=2, replicas=1, shards=1, **kwargs):
    cfg = ipu_config.IPUConfig()
    cfg.auto_select_ipus = replicas * shards
    run = ipu_run_config.IPURunConfig(iterations_per_loop=iterations, num_replicas=replicas,
                                      num_shards=shards, ipu_options=cfg)
    config = ipu_run_config.RunConfig(ipu_run_config=run, model_dir=str(model_dir),
                                      log_step_count_steps=None)
    return ipu_estimator.IPUEstimator(model_fn, config=config, params={"lr": LR}, **kwargs)


def _train_input(batch):
    return lambda: tf.data.Dataset.from_tensor_slices((X, Y)).repeat().batch(
        batch, drop_remainder=True)


def test_training_equals_numpy_and_resumes_from_the_checkpoint(tmp_path, fresh_ipu_system):
    logged = []
    e = _estimator(_make_model_fn(logged), tmp_path, iterations=2)
    e.train(_train_input(4), steps=6)
    want, w, b = _numpy_training(6, 4)
    np.testing.assert_allclose(np.concatenate(logged), want, rtol=1e-5, atol=1e-6)
    assert [a.shape for a in logged] == [(2,)] * 3  # every loss of each 2-iteration loop
    np.testing.assert_allclose(e.get_variable_value("w"), w, rtol=1e-5, atol=1e-6)
    assert e.get_variable_value("global_step") == 6
    assert e.get_variable_names() == ["b", "global_step", "w"]
    assert e.latest_checkpoint() == str(tmp_path / "model.ckpt-6")
    # a second call continues from the checkpoint (the input_fn starts again)
    logged.clear()
    e.train(_train_input(4), steps=4)
    want2, w2, _ = _numpy_training(4, 4, w, b)
    np.testing.assert_allclose(np.concatenate(logged), want2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(e.get_variable_value("w"), w2, rtol=1e-5, atol=1e-6)
    assert e.get_variable_value("global_step") == 10
    logged.clear()
    e.train(_train_input(4), max_steps=10)  # already there: nothing runs
    assert logged == [] and e.get_variable_value("global_step") == 10
    e.train(_train_input(4), max_steps=12)
    assert len(np.concatenate(logged)) == 2 and e.get_variable_value("global_step") == 12


@pytest.mark.parametrize("replicas", [2, 4])
def test_replicated_training_equals_the_combined_batch(tmp_path, fresh_ipu_system, replicas):
    logged = []
    e = _estimator(_make_model_fn(logged, replicas), tmp_path, iterations=2, replicas=replicas)
    e.train(_train_input(4), steps=4)
    want, w, _ = _numpy_training(4, 4 * replicas)
    got = np.concatenate(logged)
    assert got.shape == (4, replicas)  # [iterations, replicas] per loop, ALL mode
    np.testing.assert_allclose(got.mean(axis=1), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(e.get_variable_value("w"), w, rtol=1e-5, atol=1e-6)
    assert e.get_variable_value("global_step") == 4


def _make_sharded_model_fn(logged, replicas):
    """The softmax regression over two shards: the matmul on IPU 0, the bias on IPU 1."""
    def model_fn(features, labels, mode, params):
        w = tf.get_variable("w", [D, K], initializer=tf.constant_initializer(W0))
        b = tf.get_variable("b", [K], initializer=tf.zeros_initializer())
        with ipu_scopes.ipu_shard(0):
            z = tf.matmul(features, w)
        with ipu_scopes.ipu_shard(1):
            logits = z + b
            loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
        hook = IPULoggingTensorHook(every_n_iter=1, formatter=lambda v: logged.append(
            np.asarray(v["loss"])) or "", logging_mode=IPULoggingTensorHook.LoggingMode.ALL)
        opt = optimizers.ShardedOptimizer(tf.train.GradientDescentOptimizer(params["lr"]))
        if replicas > 1:
            opt = optimizers.CrossReplicaOptimizer(opt)
        train = tf.group([opt.minimize(loss), hook.log({"loss": loss})])
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train,
                                          training_hooks=[hook])
    return model_fn


@pytest.mark.parametrize("replicas", [1, 2])
def test_a_model_on_two_shards_takes_two_ipus_per_replica(tmp_path, fresh_ipu_system,
                                                          replicas):
    """ipu_shard(0)/(1): 2 IPUs per replica, so 2 shards on 2 IPUs are one replica and on
    4 IPUs two (the SDK's testShardedAndReplicatedTraining configuration)."""
    logged = []
    e = _estimator(_make_sharded_model_fn(logged, replicas), tmp_path, iterations=2,
                   replicas=replicas, shards=2)
    e.train(_train_input(4), steps=2)
    want, w, _ = _numpy_training(2, 4 * replicas)
    got = np.concatenate(logged)
    assert got.shape == ((2,) if replicas == 1 else (2, replicas))
    np.testing.assert_allclose(got.reshape(2, -1).mean(axis=1), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(e.get_variable_value("w"), w, rtol=1e-5, atol=1e-6)


def test_num_shards_does_not_shard_a_model_that_does_not(tmp_path, fresh_ipu_system):
    """The SDK's compiler gives a replica the IPUs of its ipu_shard indices, not
    IPURunConfig.num_shards: an unsharded model on num_replicas=1, num_shards=2 (2 IPUs)
    runs 2 replicas, each on its own batches (replica r takes batches r, r + 2, ...); with
    a plain optimizer they diverge and the host sees replica 0's weights."""
    logged = []
    e = _estimator(_make_model_fn(logged), tmp_path, iterations=2, replicas=1, shards=2)
    e.train(_train_input(4), steps=2)
    got = np.concatenate(logged)
    assert got.shape == (2, 2)  # (iterations, runtime replicas)
    # replica r trains on the batches r, r + 2 of the 4-example batches of X
    for r in range(2):
        w, b, losses = W0.astype(np.float64), np.zeros(K), []
        for i in range(2):
            idx = np.arange(4) + 4 * (2 * i + r)
            x, y = X[idx].astype(np.float64), Y[idx]
            p = _softmax(x @ w + b)
            losses.append(-np.mean(np.log(p[np.arange(4), y])))
            g = (p - np.eye(K)[y]) / 4
            w, b = w - LR * x.T @ g, b - LR * g.sum(0)
        np.testing.assert_allclose(got[:, r], losses, rtol=1e-5, atol=1e-6)
        if r == 0:
            np.testing.assert_allclose(e.get_variable_value("w"), w, rtol=1e-5, atol=1e-6)


def test_evaluate_and_predict_use_the_trained_weights(tmp_path, fresh_ipu_system):
    e = _estimator(_make_model_fn([]), tmp_path, iterations=2)
    e.train(_train_input(8), steps=4)
    _, w, b = _numpy_training(4, 8)
    test_input = lambda: tf.data.Dataset.from_tensor_slices((X, Y)).batch(  # noqa: E731
        8, drop_remainder=True)
    metrics = e.evaluate(test_input, steps=8)
    logits = X.astype(np.float64) @ w + b
    p = _softmax(logits)
    assert set(metrics) == {"accuracy", "loss", "global_step"}
    assert metrics["global_step"] == 4
    np.testing.assert_allclose(metrics["loss"], -np.mean(np.log(p[np.arange(64), Y])),
                               rtol=1e-5)
    np.testing.assert_allclose(metrics["accuracy"], np.mean(logits.argmax(1) == Y), rtol=1e-6)
    preds = list(e.predict(lambda: tf.data.Dataset.from_tensor_slices(X).batch(
        8, drop_remainder=True), num_predictions=20))
    assert len(preds) == 20 and set(preds[0]) == {"class", "logits"}
    np.testing.assert_allclose(np.stack([q["logits"] for q in preds]), logits[:20],
                               rtol=1e-5, atol=1e-6)
    assert [int(q["class"]) for q in preds] == list(logits[:20].argmax(1))
    only = next(iter(e.predict(lambda: tf.data.Dataset.from_tensor_slices(X).batch(
        8, drop_remainder=True), predict_keys=["class"])))
    assert set(only) == {"class"}
    # without num_predictions the loop runs on past the input: the IPU's fatal error
    from ipu_gpu.errors import OutOfRangeError

    endless = e.predict(lambda: tf.data.Dataset.from_tensor_slices(X[:40]).batch(
        8, drop_remainder=True))
    assert len([next(endless) for _ in range(32)]) == 32  # two loops of 2 batches
    with pytest.raises(OutOfRangeError):
        next(endless)
    with pytest.raises(ValueError, match="is not fully defined"):  # the IPU infeed's rule
        next(iter(e.predict(lambda: tf.data.Dataset.from_tensor_slices(X).batch(8))))


def test_host_call_and_eval_metrics_run_on_the_host(tmp_path, fresh_ipu_system):
    """host_call (iterations_per_loop 1): the gradients come to the host, which applies
    them; eval_metrics: the host computes the metrics from every outfed tensor."""
    def model_fn(features, labels, mode, params):
        logits = _logits(features)
        loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
        if mode == tf.estimator.ModeKeys.EVAL:
            def metrics_fn(labels, logits):
                return {"mean_label": tf.metrics.mean(tf.cast(labels, tf.float32)),
                        "accuracy": tf.metrics.accuracy(labels, tf.argmax(logits, -1))}
            return ipu_estimator.IPUEstimatorSpec(mode, loss=loss,
                                                  eval_metrics=(metrics_fn, [labels, logits]))
        opt = tf.train.GradientDescentOptimizer(LR)
        pairs = opt.compute_gradients(loss)
        variables = [v for _, v in pairs]

        def host_fn(*grads):
            return opt.apply_gradients(zip(grads, variables))
        return ipu_estimator.IPUEstimatorSpec(mode, loss=loss, train_op=tf.identity(loss),
                                              host_call=(host_fn, [g for g, _ in pairs]))

    e = _estimator(model_fn, tmp_path, iterations=1)
    e.train(_train_input(4), steps=3)
    _, w, b = _numpy_training(3, 4)
    np.testing.assert_allclose(e.get_variable_value("w"), w, rtol=1e-5, atol=1e-6)
    metrics = e.evaluate(lambda: tf.data.Dataset.from_tensor_slices((X, Y)).batch(
        16, drop_remainder=True), steps=4)
    logits = X.astype(np.float64) @ w + b
    np.testing.assert_allclose(metrics["mean_label"], Y.mean(), rtol=1e-6)
    np.testing.assert_allclose(metrics["accuracy"], np.mean(logits.argmax(1) == Y), rtol=1e-6)


def test_plain_estimator_trains_evaluates_and_predicts(tmp_path, caplog):
    def model_fn(features, labels, mode, params):
        logits = _logits(features)
        if mode == est.ModeKeys.PREDICT:
            return est.EstimatorSpec(mode, predictions=logits)
        loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
        if mode == est.ModeKeys.EVAL:
            return est.EstimatorSpec(mode, loss=loss)
        train = tf.train.GradientDescentOptimizer(params["lr"]).minimize(
            loss, global_step=tf.train.get_global_step())
        return est.EstimatorSpec(mode, loss=loss, train_op=train)

    e = est.Estimator(model_fn, model_dir=str(tmp_path), params={"lr": LR},
                      config=est.RunConfig(save_checkpoints_steps=2, log_step_count_steps=2))
    caplog.set_level("INFO", logger="tensorflow")
    e.train(_train_input(4), steps=5)
    logged = [r.getMessage() for r in caplog.records]
    assert sum(m.startswith("loss = ") for m in logged) == 3  # runs 1, 3 and 5
    assert any(m.startswith("global_step/sec: ") for m in logged)
    assert "Saving checkpoints for 4 into " + str(tmp_path / "model.ckpt") + "." in logged
    _, w, b = _numpy_training(5, 4)
    np.testing.assert_allclose(e.get_variable_value("w"), w, rtol=1e-5, atol=1e-6)
    assert sorted(p.name for p in tmp_path.glob("model.ckpt-*")) == [
        f"model.ckpt-{s}.npz" for s in (0, 2, 4, 5)]
    metrics = e.evaluate(lambda: tf.data.Dataset.from_tensor_slices((X, Y)).batch(16))
    p = _softmax(X.astype(np.float64) @ w + b)
    np.testing.assert_allclose(metrics["loss"], -np.mean(np.log(p[np.arange(64), Y])),
                               rtol=1e-5)
    preds = list(e.predict(lambda: tf.data.Dataset.from_tensor_slices(X).batch(10)))
    assert len(preds) == 64  # to the end of the input
    np.testing.assert_allclose(np.stack(preds), X @ w + b, rtol=1e-5, atol=1e-6)


def test_replicated_prediction_yields_each_replicas_value(tmp_path, fresh_ipu_system):
    """Graphcore's flattening: the loop's iterations, then one more level (here the
    replicas); with yield_single_examples=False an iteration's replicas come together."""
    def model_fn(features, mode):
        return tf.estimator.EstimatorSpec(mode, predictions=tf.reduce_max(features))

    def input_fn():
        return tf.data.Dataset.from_tensor_slices(
            np.array([[1.0], [3.0], [5.0], [3.0], [7.0], [3.0], [9.0], [3.0]],
                     np.float32)).batch(2, drop_remainder=True)
    cfg = ipu_config.IPUConfig()
    cfg.auto_select_ipus = 4
    e = ipu_estimator.IPUEstimator(model_fn, config=ipu_run_config.RunConfig(
        ipu_run_config=ipu_run_config.IPURunConfig(num_replicas=4, ipu_options=cfg),
        model_dir=str(tmp_path)))
    outputs = e.predict(input_fn, yield_single_examples=True)
    assert [float(next(outputs)) for _ in range(4)] == [3.0, 5.0, 7.0, 9.0]
    outputs = e.predict(input_fn, yield_single_examples=False)
    np.testing.assert_array_equal(next(outputs), [3.0, 5.0, 7.0, 9.0])


# ---- errors ----------------------------------------------------------------------------------
def test_steps_must_be_a_multiple_of_iterations_per_loop(tmp_path):
    e = _estimator(_make_model_fn([]), tmp_path, iterations=3)
    with pytest.raises(ValueError, match=r"steps \(1\) must be a multiple of "
                                         r"iterations_per_loop \(3\)"):
        e.train(input_fn=lambda: None, steps=1)
    with pytest.raises(ValueError, match="must be a multiple of iterations_per_loop"):
        e.evaluate(input_fn=lambda: None, steps=2)
    with pytest.raises(ValueError, match="Can not provide both steps and max_steps"):
        e.train(input_fn=lambda: None, steps=3, max_steps=6)


def test_run_config_errors():
    with pytest.raises(ValueError, match="requires more than one device, but `ipu_options` "
                                         "is None"):
        ipu_run_config.IPURunConfig(num_replicas=2)
    cfg = ipu_config.IPUConfig()
    cfg.auto_select_ipus = 4
    with pytest.raises(ValueError, match=r"configured with 2 devices \(2 replicas times 1 "
                                         r"shards\), but `ipu_options` configured with 4"):
        ipu_run_config.IPURunConfig(num_replicas=2, ipu_options=cfg)
    with pytest.raises(TypeError, match="ipu_options must be an IPUConfig instance"):
        ipu_run_config.IPURunConfig(ipu_options={"auto_select_ipus": 1})
    assert ipu_run_config.IPURunConfig(num_replicas=2, num_shards=2,
                                       ipu_options=cfg).num_shards == 2
    with pytest.raises(ValueError, match="Can not provide both save_checkpoints_steps"):
        ipu_run_config.RunConfig(save_checkpoints_steps=1, save_checkpoints_secs=1)
    rc = ipu_run_config.RunConfig()
    assert (rc.save_checkpoints_secs, rc.save_checkpoints_steps, rc.keep_checkpoint_max,
            rc.log_step_count_steps) == (600, None, 5, 100)
    assert rc.ipu_run_config == ipu_run_config.IPURunConfig()


def test_estimator_argument_errors(tmp_path):
    model_fn = _make_model_fn([])
    with pytest.raises(ValueError, match="`config` must be provided with type "
                                         "`ipu_run_config.RunConfig`"):
        ipu_estimator.IPUEstimator(model_fn, config=tf.estimator.RunConfig())
    config = ipu_run_config.RunConfig(model_dir=str(tmp_path))
    with pytest.raises(ValueError, match="reserved keys"):
        ipu_estimator.IPUEstimator(model_fn, config=config, params={"input_fn": 1})
    with pytest.raises(ValueError, match="must include features argument"):
        ipu_estimator.IPUEstimator(lambda x, mode: None, config=config)
    with pytest.raises(ValueError, match="train_batch_size \\(got 3\\) must be divisible"):
        cfg = ipu_config.IPUConfig()
        cfg.auto_select_ipus = 2
        ipu_estimator.IPUEstimator(model_fn, config=ipu_run_config.RunConfig(
            ipu_run_config=ipu_run_config.IPURunConfig(num_replicas=2, ipu_options=cfg)),
            train_batch_size=3)


def test_model_fn_errors(tmp_path, fresh_ipu_system):
    def incrementing(features, labels, mode, params):
        loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=_logits(features))
        train = tf.train.GradientDescentOptimizer(LR).minimize(
            loss, global_step=tf.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train)
    with pytest.raises(ValueError, match="Illegal increment of the `global_step`"):
        _estimator(incrementing, tmp_path / "a").train(_train_input(4), steps=2)

    def not_replicated(features, labels, mode, params):
        loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=_logits(features))
        train = tf.train.GradientDescentOptimizer(LR).minimize(loss)
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train)
    with pytest.raises(ValueError, match="not a valid replicated training graph"):
        _estimator(not_replicated, tmp_path / "b", replicas=2).train(_train_input(4), steps=2)
    with pytest.raises(ValueError, match="One of `num_steps` or `final_step` must be"):
        _estimator(not_replicated, tmp_path / "c").evaluate(_train_input(4))
    with pytest.raises(ValueError, match="input_fn must return Dataset"):
        _estimator(not_replicated, tmp_path / "d").train(lambda: (X, Y), steps=2)

    def host_call_in_a_loop(features, labels, mode, params):
        loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=_logits(features))
        return ipu_estimator.IPUEstimatorSpec(mode, loss=loss, train_op=tf.identity(loss),
                                              host_call=(lambda x: tf.no_op(), [loss]))
    with pytest.raises(ValueError, match="host_call is not allowed for iterations_per_loop"):
        _estimator(host_call_in_a_loop, tmp_path / "e").train(_train_input(4), steps=2)


def test_spec_errors():
    loss = tf.constant(1.0)
    with pytest.raises(ValueError, match="Missing loss"):
        tf.estimator.EstimatorSpec(tf.estimator.ModeKeys.TRAIN, train_op=tf.no_op())
    with pytest.raises(ValueError, match="Missing train_op"):
        tf.estimator.EstimatorSpec(tf.estimator.ModeKeys.TRAIN, loss=loss)
    with pytest.raises(ValueError, match="Missing predictions"):
        tf.estimator.EstimatorSpec(tf.estimator.ModeKeys.PREDICT)
    with pytest.raises(ValueError, match="Loss must be scalar"):
        tf.estimator.EstimatorSpec(tf.estimator.ModeKeys.EVAL, loss=tf.constant([1.0, 2.0]))
    with pytest.raises(TypeError, match="All hooks must be SessionRunHook instances"):
        tf.estimator.EstimatorSpec(tf.estimator.ModeKeys.EVAL, loss=loss,
                                   evaluation_hooks=[object()])
    spec = ipu_estimator.IPUEstimatorSpec
    with pytest.raises(TypeError, match="`host_call` must be a tuple"):
        spec(tf.estimator.ModeKeys.EVAL, loss=loss, host_call=[len, []])
    with pytest.raises(ValueError, match="`host_call` must have two elements"):
        spec(tf.estimator.ModeKeys.EVAL, loss=loss, host_call=(len,))
    with pytest.raises(TypeError, match="second element in `host_call` must be a list"):
        spec(tf.estimator.ModeKeys.EVAL, loss=loss, host_call=(len, {}))
    with pytest.raises(TypeError, match="first element in `eval_metrics` must be callable"):
        spec(tf.estimator.ModeKeys.EVAL, loss=loss, eval_metrics=(1, {}))
    assert spec(tf.estimator.ModeKeys.EVAL, loss=loss, eval_metrics=(len, {})).loss is loss


def test_logging_hook_errors():
    with pytest.raises(ValueError, match="Cannot provide both every_n_iter and every_n_secs"):
        IPULoggingTensorHook(every_n_iter=1, every_n_secs=1)
    with pytest.raises(ValueError, match="Either every_n_iter, every_n_secs or at_end"):
        IPULoggingTensorHook()
    hook = IPULoggingTensorHook(at_end=True)
    with pytest.raises(RuntimeError, match="Did you forget to call the log function"):
        hook.begin()


def test_reset_ipu_seed_before_configuration_seeds_the_next_system(fresh_ipu_system):
    """Graphcore's estimator tutorial seeds the IPU before the estimator configures it."""
    from ipu_gpu.emulation import system
    from ipu_gpu.ipu import utils

    utils.reset_ipu_seed(42)
    utils.reset_ipu_seed(7, device="/device:IPU:1", experimental_identical_replicas=True)
    cfg = ipu_config.IPUConfig()
    cfg.auto_select_ipus = [1, 1]
    cfg.configure_ipu_system()
    d0, d1 = system.current_system().devices
    assert (d0.seed, d0.identical_replicas, d1.seed, d1.identical_replicas) == (
        42, False, 7, True)
    cfg.configure_ipu_system()  # applied once: a later configuration starts unseeded
    assert system.current_system().devices[0].seed != 42


def test_tf1_sparse_softmax_cross_entropy_squeezes_column_labels(real_tf):
    """The estimator tutorial's labels are [batch, 1]: tf.losses squeezes them, as TF."""
    logits = RNG.standard_normal((6, 4)).astype(np.float32)
    labels = RNG.integers(0, 4, (6, 1)).astype(np.int32)
    got = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    want = real_tf.compat.v1.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    np.testing.assert_allclose(np.asarray(got), want.numpy(), rtol=1e-6)
    with tf.Graph().as_default():
        y = tf.placeholder(tf.int32, [None, 1])
        loss = tf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run(loss, {y: labels}), want.numpy(), rtol=1e-6)


def test_tf1_accuracy_squeezes_column_labels(real_tf):
    """tf.metrics.accuracy of [batch, 1] labels against [batch] predictions (the estimator
    tutorial's evaluation) compares them element by element, as TF."""
    labels = np.array([[0], [1], [1], [2]], np.int32)
    predictions = np.array([0, 1, 2, 2], np.int64)
    r = real_tf.compat.v1
    with real_tf.Graph().as_default():
        _, update = r.metrics.accuracy(labels=r.constant(labels), predictions=predictions)
        with r.Session() as sess:
            sess.run(r.local_variables_initializer())
            want = sess.run(update)
    with tf.Graph().as_default():
        y = tf.placeholder(tf.int32, [None, 1])
        _, update = tf.metrics.accuracy(labels=y, predictions=predictions)
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            got = sess.run(update, {y: labels})
    assert want == got == 0.75


def test_keras_loss_functions_on_graph_tensors(real_tf):
    """Graphcore's TF2 pipeline-estimator tutorial calls tf.keras.losses functions on the
    stages' graph tensors: the graph's values equal real TensorFlow's."""
    from ipu_gpu import keras

    logits = RNG.standard_normal((6, 4)).astype(np.float32)
    labels = RNG.integers(0, 4, 6).astype(np.int32)
    want_sparse = real_tf.keras.losses.sparse_categorical_crossentropy(
        labels, logits, from_logits=True).numpy()
    want_mse = np.mean((logits - logits[:, :1]) ** 2, axis=-1)  # Keras: mean over the last axis
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 4])
        y = tf.placeholder(tf.int32, [None])
        sparse = keras.losses.sparse_categorical_crossentropy(y, x, from_logits=True)
        mse = keras.losses.mean_squared_error(x[:, :1], x)
        with tf.Session() as sess:
            got_sparse, got_mse = sess.run([sparse, mse], {x: logits, y: labels})
    np.testing.assert_allclose(got_sparse, want_sparse, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_mse, want_mse, rtol=1e-5, atol=1e-6)


def test_user_hooks_and_saving_listeners(tmp_path, fresh_ipu_system):
    """tf.train.SessionRunHook subclasses see every Session.run (one per loop of
    iterations_per_loop steps) and may fetch tensors; CheckpointSaverListeners see each
    checkpoint (at the start and the end with the default 600 seconds)."""
    events = []

    class Hook(tf.train.SessionRunHook):
        def begin(self):
            self._step = tf.train.get_global_step()
            events.append("begin")

        def after_create_session(self, session, coord):
            events.append("created")

        def before_run(self, run_context):
            return tf.train.SessionRunArgs(self._step)

        def after_run(self, run_context, run_values):
            events.append(int(run_values.results))

        def end(self, session):
            events.append("end")

    class Listener(tf.train.CheckpointSaverListener):
        def after_save(self, session, global_step_value):
            events.append(f"saved {global_step_value}")

    e = _estimator(_make_model_fn([]), tmp_path, iterations=2)
    e.train(_train_input(4), steps=6, hooks=[Hook()], saving_listeners=[Listener()])
    # the global step read in a run is the one before that run's 2 steps
    assert events == ["begin", "created", "saved 0", 0, 2, 4, "end", "saved 6"]
    with pytest.raises(TypeError, match="Hooks must be a SessionRunHook"):
        e.train(_train_input(4), steps=2, hooks=[object()])


def test_warm_start_checkpoint_path_and_global_batch_size(tmp_path, fresh_ipu_system):
    """warm_start_from: a new model_dir starts from another's weights (its global step
    from 0); evaluate(checkpoint_path=) reads that checkpoint; train_batch_size gives
    params['batch_size'] = global / replicas to the input_fn."""
    first = _estimator(_make_model_fn([]), tmp_path / "first", iterations=2)
    first.train(_train_input(4), steps=4)
    _, w4, b4 = _numpy_training(4, 4)
    logged = []
    cfg = ipu_config.IPUConfig()
    cfg.auto_select_ipus = 2
    config = ipu_run_config.RunConfig(
        ipu_run_config=ipu_run_config.IPURunConfig(iterations_per_loop=2, num_replicas=2,
                                                   ipu_options=cfg),
        model_dir=str(tmp_path / "second"), log_step_count_steps=None)
    seen = []

    def input_fn(params):
        seen.append(params["batch_size"])
        return _train_input(params["batch_size"])()
    second = ipu_estimator.IPUEstimator(_make_model_fn(logged, replicas=2), config=config,
                                        params={"lr": LR}, train_batch_size=8,
                                        warm_start_from=first.latest_checkpoint())
    second.train(input_fn, steps=2)
    assert seen == [4]
    x = X.astype(np.float64)
    p = _softmax(x[:8] @ w4 + b4)
    np.testing.assert_allclose(logged[0][0].mean(), -np.mean(np.log(p[np.arange(8), Y[:8]])),
                               rtol=1e-5)  # the first step starts from the first's weights
    assert second.get_variable_value("global_step") == 2
    metrics = second.evaluate(_train_input(8), steps=2,
                              checkpoint_path=first.latest_checkpoint())
    assert metrics["global_step"] == 4


def test_logging_hook_last_mode_and_at_end(tmp_path, fresh_ipu_system):
    """LoggingMode.LAST logs the last enqueued value (every_n_iter=2: the 1st and 3rd run);
    at_end logs once more when training ends; ALL was tested above."""
    seen = []

    def model_fn(features, labels, mode, params):
        loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=_logits(features))
        hook = IPULoggingTensorHook(every_n_iter=2, at_end=True,
                                    formatter=lambda v: seen.append(np.asarray(v["loss"])) or "")
        train = tf.group([tf.train.GradientDescentOptimizer(LR).minimize(loss),
                          hook.log({"loss": loss})])
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train,
                                          training_hooks=[hook])
    e = _estimator(model_fn, tmp_path, iterations=2)
    e.train(_train_input(4), steps=8)
    want, _, _ = _numpy_training(8, 4)
    assert [a.shape for a in seen] == [()] * 3
    np.testing.assert_allclose([float(a) for a in seen], want[[1, 5, 7]], rtol=1e-5)


def test_loss_and_evaluation_summaries_read_by_real_tf(tmp_path, fresh_ipu_system, real_tf):
    """save_summary_steps writes the loop's mean loss at the global step after the loop;
    evaluate writes its scalar metrics to eval_dir(); real TF's summary_iterator reads them."""
    import glob

    cfg = ipu_config.IPUConfig()
    cfg.auto_select_ipus = 1
    config = ipu_run_config.RunConfig(
        ipu_run_config=ipu_run_config.IPURunConfig(iterations_per_loop=2, ipu_options=cfg),
        model_dir=str(tmp_path), log_step_count_steps=None, save_summary_steps=4)
    e = ipu_estimator.IPUEstimator(_make_model_fn([]), config=config, params={"lr": LR})
    e.train(_train_input(4), steps=8)
    metrics = e.evaluate(_train_input(8), steps=2, name="probe")
    assert e.eval_dir("probe") == str(tmp_path / "eval_probe")

    def scalars(directory):
        out = {}
        for path in sorted(glob.glob(f"{directory}/events.out.tfevents.*")):
            for event in real_tf.compat.v1.train.summary_iterator(path):
                for v in event.summary.value:
                    out[(v.tag, event.step)] = v.simple_value
        return out
    want, _, _ = _numpy_training(8, 4)
    got = scalars(tmp_path)
    assert sorted(got) == [("loss", 2), ("loss", 6)]  # every 4 steps from the first loop
    np.testing.assert_allclose(got[("loss", 2)], want[:2].mean(), rtol=1e-5)
    np.testing.assert_allclose(got[("loss", 6)], want[4:6].mean(), rtol=1e-5)
    evaluated = scalars(tmp_path / "eval_probe")
    assert sorted(evaluated) == [("accuracy", 8), ("loss", 8)]
    np.testing.assert_allclose(evaluated[("loss", 8)], metrics["loss"], rtol=1e-6)


def test_compile_summary_raises_graphcores_deprecation_error(tmp_path, fresh_ipu_system):
    """IPURunConfig(compile_summary=True) is non-functional in Graphcore's SDK 3.x: the
    estimator raises its NotImplementedError when it builds the loop."""
    cfg = ipu_config.IPUConfig()
    cfg.auto_select_ipus = 1
    run = ipu_run_config.IPURunConfig(iterations_per_loop=2, ipu_options=cfg,
                                      compile_summary=True)
    e = ipu_estimator.IPUEstimator(_make_model_fn([]), params={"lr": LR},
                                   config=ipu_run_config.RunConfig(ipu_run_config=run,
                                                                   model_dir=str(tmp_path)))
    with pytest.raises(NotImplementedError, match="compilation summaries .* is deprecated"):
        e.train(_train_input(4), steps=2)
