"""Estimator.export_saved_model (tf.estimator and IPUEstimator) and tf.estimator.export: a
timestamped SavedModel of the PREDICT graph on the serving receiver, with the trained
checkpoint's weights, loads with tf.compat.v1.saved_model.loader into a fresh graph (and
TF 2's load) and gives the numpy model's predictions; export_outputs' signatures; TF's
errors."""

import os

import numpy as np
import pytest

import ipu_gpu.compat.v1 as tf
from ipu_gpu import estimator as est
from ipu_gpu.estimator import export
from ipu_gpu.ipu import config as ipu_config
from ipu_gpu.ipu import ipu_estimator, ipu_run_config

D, K, LR = 3, 2, 0.5
RNG = np.random.default_rng(11)
X = RNG.standard_normal((32, D)).astype(np.float32)
Y = (X @ np.array([1.0, -1.0, 0.5]) > 0).astype(np.int32)
W0 = (RNG.standard_normal((D, K)) * 0.2).astype(np.float32)


def _model_fn(features, labels, mode, params):
    if isinstance(features, dict):
        features = features["x"]
    w = tf.get_variable("w", [D, K], initializer=tf.constant_initializer(W0))
    b = tf.get_variable("b", [K], initializer=tf.zeros_initializer())
    logits = tf.matmul(features, w) + b
    if mode == est.ModeKeys.PREDICT:
        preds = {"class": tf.argmax(logits, -1), "logits": logits}
        outputs = params.get("export_outputs")
        return est.EstimatorSpec(mode, predictions=preds,
                                 export_outputs=outputs(preds) if outputs else None)
    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    step = None if params.get("ipu") else tf.train.get_global_step()  # the IPU's counts
    train = tf.train.GradientDescentOptimizer(LR).minimize(loss, global_step=step)
    return est.EstimatorSpec(mode, loss=loss, train_op=train)


def _input():
    return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).repeat().batch(4, drop_remainder=True)


def _load(path):
    g = tf.Graph()
    sess = tf.Session(graph=g)
    with g.as_default():
        meta = tf.saved_model.loader.load(sess, [tf.saved_model.tag_constants.SERVING], path)
    return sess, meta


def test_export_saved_model_of_a_trained_estimator(tmp_path):
    e = est.Estimator(_model_fn, model_dir=str(tmp_path / "model"), params={})
    with pytest.raises(ValueError, match="Couldn't find trained model at"):
        e.export_saved_model(str(tmp_path / "export"),
                             export.build_raw_serving_input_receiver_fn(
                                 {"x": tf.placeholder(tf.float32, [None, D])}))
    e.train(_input, steps=3)
    w, b = e.get_variable_value("w"), e.get_variable_value("b")
    assert not np.allclose(w, W0)
    with tf.Graph().as_default():
        receiver_fn = export.build_raw_serving_input_receiver_fn(
            {"x": tf.placeholder(tf.float32, [7, D], name="x")})
    (tmp_path / "extra.txt").write_text("vocabulary")
    path = e.export_saved_model(str(tmp_path / "export"), receiver_fn,
                                assets_extra={"sub/extra.txt": str(tmp_path / "extra.txt")})
    assert isinstance(path, bytes)
    path = path.decode()
    assert os.path.dirname(path) == str(tmp_path / "export")
    assert os.path.basename(path).isdigit()
    assert os.listdir(tmp_path / "export") == [os.path.basename(path)]  # no temp dir left
    assert (tmp_path / "export" / os.path.basename(path) / "assets.extra" / "sub" /
            "extra.txt").read_text() == "vocabulary"
    sess, meta = _load(path)
    sig = meta.signature_def["serving_default"]
    assert sorted(sig.outputs) == ["class", "logits"]
    assert sig.inputs["x"].name == "x:0"
    assert [d.size for d in sig.inputs["x"].tensor_shape.dim] == [-1, D]  # batch: default
    out = sess.run({k: i.name for k, i in sig.outputs.items()}, {sig.inputs["x"].name: X})
    np.testing.assert_allclose(out["logits"], X @ w + b, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(out["class"], np.argmax(X @ w + b, -1))
    sess.close()
    import ipu_gpu

    loaded = ipu_gpu.saved_model.load(path)
    got = loaded.signatures["serving_default"](x=X[:2])
    np.testing.assert_allclose(got["logits"].numpy(), X[:2] @ w + b, rtol=1e-5, atol=1e-6)
    second = e.export_saved_model(str(tmp_path / "export"), receiver_fn).decode()
    assert second != path and int(os.path.basename(second)) > int(os.path.basename(path))


def test_export_outputs_become_signatures(tmp_path):
    def outputs(preds):
        return {"probs": export.PredictOutput(tf.nn.softmax(preds["logits"])),
                "serving_default": export.PredictOutput(preds["class"]),
                "classify": export.ClassificationOutput(scores=preds["logits"])}

    e = est.Estimator(_model_fn, model_dir=str(tmp_path / "m"),
                      params={"export_outputs": outputs})
    e.train(_input, steps=1)
    w, b = e.get_variable_value("w"), e.get_variable_value("b")

    def receiver_fn():
        x = tf.placeholder(tf.float32, [None, D], name="features")
        return export.TensorServingInputReceiver(x, {"examples": x})

    path = e.export_saved_model(str(tmp_path / "x"), receiver_fn).decode()
    sess, meta = _load(path)
    assert sorted(meta.signature_def) == ["probs", "serving_default"]  # classify: no strings
    default = meta.signature_def["serving_default"]
    assert list(default.inputs) == ["examples"] and list(default.outputs) == ["output"]
    logits = X @ w + b
    np.testing.assert_array_equal(
        sess.run(default.outputs["output"].name, {"features:0": X}), np.argmax(logits, -1))
    probs = sess.run(meta.signature_def["probs"].outputs["output"].name, {"features:0": X})
    e_ = np.exp(logits - logits.max(-1, keepdims=True))
    np.testing.assert_allclose(probs, e_ / e_.sum(-1, keepdims=True), rtol=1e-5)
    sess.close()


def test_receivers_and_export_outputs_errors():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, D])
        with pytest.raises(ValueError, match="features must be defined"):
            export.ServingInputReceiver(None, {"x": x})
        with pytest.raises(ValueError, match="receiver_tensors must be defined"):
            export.ServingInputReceiver({"x": x}, None)
        with pytest.raises(ValueError, match="receiver_tensor keys must be string"):
            export.ServingInputReceiver({"x": x}, {1: x})
        with pytest.raises(ValueError, match="feature x must be a Tensor"):
            export.ServingInputReceiver({"x": np.zeros(2)}, {"x": x})
        r = export.ServingInputReceiver(x, x)
        assert list(r.features) == ["feature"] and list(r.receiver_tensors) == ["input"]
        with pytest.raises(ValueError, match="Multiple export_outputs were provided"):
            export.export_outputs_for_predict({"a": export.PredictOutput(x),
                                               "b": export.PredictOutput(x)}, x)
        with pytest.raises(ValueError, match="must be ExportOutput objects"):
            export.export_outputs_for_predict({"a": x}, x)
        one = export.export_outputs_for_predict({"a": export.PredictOutput(x)}, x)
        assert one["serving_default"] is one["a"]
        with pytest.raises(ValueError, match="At least one of scores and classes"):
            export.ClassificationOutput()
    e = est.Estimator(_model_fn, params={})
    with pytest.raises(ValueError, match="An input_receiver_fn must be defined."):
        e.export_saved_model("/nonexistent", None)


def test_ipu_estimator_exports_its_model_fn_on_the_host(tmp_path, fresh_ipu_system):
    cfg = ipu_config.IPUConfig()
    cfg.auto_select_ipus = 1
    run = ipu_run_config.IPURunConfig(iterations_per_loop=2, ipu_options=cfg)
    config = ipu_run_config.RunConfig(ipu_run_config=run, model_dir=str(tmp_path / "ipu"),
                                      log_step_count_steps=None)
    e = ipu_estimator.IPUEstimator(_model_fn, config=config, params={"ipu": True})
    e.train(_input, steps=4)
    w, b = e.get_variable_value("w"), e.get_variable_value("b")
    with tf.Graph().as_default():
        receiver_fn = export.build_raw_serving_input_receiver_fn(
            {"x": tf.placeholder(tf.float32, [None, D], name="x")}, default_batch_size=4)
    path = e.export_saved_model(str(tmp_path / "export"), receiver_fn).decode()
    sess, meta = _load(path)
    sig = meta.signature_def["serving_default"]
    assert [d.size for d in sig.inputs["x"].tensor_shape.dim] == [4, D]
    got = sess.run(sig.outputs["logits"].name, {"x:0": X[:4]})
    np.testing.assert_allclose(got, X[:4] @ w + b, rtol=1e-5, atol=1e-6)
    sess.close()


def _supervised_model_fn(features, labels, mode, params):
    x = features["x"] if isinstance(features, dict) else features
    w = tf.get_variable("w", [D, K], initializer=tf.constant_initializer(W0))
    b = tf.get_variable("b", [K], initializer=tf.zeros_initializer())
    logits = tf.matmul(x, w) + b
    if mode == est.ModeKeys.PREDICT:
        return est.EstimatorSpec(mode, predictions={"logits": logits})
    y = labels["label"] if isinstance(labels, dict) else labels
    loss = tf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
    metrics = {"accuracy": tf.metrics.accuracy(y, tf.argmax(logits, -1))}
    if mode == est.ModeKeys.EVAL:
        return est.EstimatorSpec(mode, loss=loss, eval_metric_ops=metrics,
                                 predictions={"logits": logits})
    train = tf.train.GradientDescentOptimizer(LR).minimize(
        loss, global_step=tf.train.get_global_step())
    return est.EstimatorSpec(mode, loss=loss, train_op=train, predictions=logits)


def test_export_all_saved_models_train_eval_and_predict(tmp_path):
    e = est.Estimator(_supervised_model_fn, model_dir=str(tmp_path / "m"))
    e.train(lambda: tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).repeat().batch(8),
            steps=2)
    w, b = e.get_variable_value("w"), e.get_variable_value("b")
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, D], name="x")
        y = tf.placeholder(tf.int32, [None], name="y")
        supervised = export.build_raw_supervised_input_receiver_fn({"x": x}, y)
        serving = export.build_raw_serving_input_receiver_fn({"x": x})
        with pytest.raises(ValueError, match="must have distinct names"):
            export.build_raw_supervised_input_receiver_fn({"x": x}, {"x": y})
    path = e.experimental_export_all_saved_models(str(tmp_path / "all"), {
        est.ModeKeys.TRAIN: supervised, est.ModeKeys.EVAL: supervised,
        est.ModeKeys.PREDICT: serving}).decode()
    logits = X @ w + b
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    loss = -np.mean(np.log(p[np.arange(len(X)), Y]))
    accuracy = np.mean(np.argmax(logits, -1) == Y)
    for tags, method in ((["train"], "training"), (["eval"], "eval")):
        with tf.Graph().as_default() as g, tf.Session(graph=g) as sess:
            meta = tf.saved_model.loader.load(sess, tags, path)
            sig = meta.signature_def[tags[0]]
            assert sig.method_name == f"tensorflow/supervised/{method}"
            assert sorted(sig.inputs) == ["label", "x"]
            feeds = {sig.inputs["x"].name: X, sig.inputs["label"].name: Y}
            out = sess.run({k: i.name for k, i in sig.outputs.items()}, feeds)
            np.testing.assert_allclose(out["loss"], loss, rtol=1e-5)
            if tags == ["eval"]:
                assert sorted(out) == ["loss", "metrics/accuracy/update_op",
                                       "metrics/accuracy/value", "predictions/logits"]
                np.testing.assert_allclose(out["metrics/accuracy/update_op"], accuracy)
            else:
                np.testing.assert_allclose(out["predictions"], logits, rtol=1e-5, atol=1e-6)
    sess, meta = _load(path)
    got = sess.run(meta.signature_def["serving_default"].outputs["logits"].name, {"x:0": X})
    np.testing.assert_allclose(got, logits, rtol=1e-5, atol=1e-6)
    sess.close()
    with pytest.raises(ValueError, match="An input_receiver_fn must be defined."):
        e.experimental_export_all_saved_models(str(tmp_path / "none"),
                                               {est.ModeKeys.TRAIN: None})


def test_ipu_pipeline_estimator_exports_its_stages_in_order(tmp_path, fresh_ipu_system):
    from ipu_gpu.ipu import ipu_pipeline_estimator as pe
    from ipu_gpu.ipu import pipelining_ops

    def model_fn(mode, params):
        def stage1(features, labels=None):
            w = tf.get_variable("w", [D, K], initializer=tf.constant_initializer(W0))
            logits = tf.matmul(features, w)
            return logits if labels is None else (logits, labels)

        def stage2(logits, labels=None):
            if labels is None:
                return {"logits": logits, "class": tf.argmax(logits, -1)}
            return tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)

        def optimizer_function(loss):
            return pipelining_ops.OptimizerFunctionOutput(
                tf.train.GradientDescentOptimizer(LR), loss)

        return pe.IPUPipelineEstimatorSpec(mode, computational_stages=[stage1, stage2],
                                           gradient_accumulation_count=4,
                                           optimizer_function=optimizer_function)

    cfg = ipu_config.IPUConfig()
    cfg.auto_select_ipus = 2
    run = ipu_run_config.IPURunConfig(iterations_per_loop=4, num_shards=2, ipu_options=cfg)
    e = pe.IPUPipelineEstimator(model_fn, config=ipu_run_config.RunConfig(
        ipu_run_config=run, model_dir=str(tmp_path / "pipe"), log_step_count_steps=None))
    e.train(lambda: tf.data.Dataset.from_tensor_slices((X, Y)).repeat().batch(
        4, drop_remainder=True), steps=4)
    w = e.get_variable_value("w")
    assert not np.allclose(w, W0)

    def receiver_fn():
        x = tf.placeholder(tf.float32, [None, D], name="x")
        return export.TensorServingInputReceiver(x, x)

    path = e.export_saved_model(str(tmp_path / "export"), receiver_fn).decode()
    sess, meta = _load(path)
    sig = meta.signature_def["serving_default"]
    assert sorted(sig.outputs) == ["class", "logits"] and list(sig.inputs) == ["input"]
    got = sess.run({k: i.name for k, i in sig.outputs.items()}, {"x:0": X})
    np.testing.assert_allclose(got["logits"], X @ w, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got["class"], np.argmax(X @ w, -1))
    sess.close()
    with pytest.raises(ValueError, match="exports its PREDICT graph only"):
        e.export_saved_model(str(tmp_path / "t"), receiver_fn,
                             experimental_mode=est.ModeKeys.TRAIN)
