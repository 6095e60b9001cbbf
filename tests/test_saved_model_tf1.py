"""TF 1's SavedModel API (tf.compat.v1.saved_model) in ipu_gpu's format: a graph saved from
one Session loads into a fresh Graph/Session (and a fresh process) with its variables restored
and gives the same fetches by tensor name as before and as real TensorFlow's compat.v1 given
the same weights; retraining the loaded graph equals real TF; builder and loader errors are
TF's; TF 2's load runs a TF 1 signature."""

import os
import subprocess
import sys

import numpy as np
import pytest

from ipu_gpu.compat import v1 as tf
from ipu_gpu.errors import FailedPreconditionError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
W1 = np.float32([[0.5, -1.0, 0.25], [1.5, 0.75, -0.5]])
B1 = np.float32([0.1, -0.2, 0.3])
W2 = np.float32([[1.0], [-2.0], [0.5]])
X = np.float32([[1.0, 2.0], [-1.0, 0.5], [0.0, -3.0]])


def _numpy_net(x):
    return np.maximum(x @ W1 + B1, 0) @ W2


def _build(v1):
    """The same small graph in ipu_gpu or real TF's compat.v1 (``v1``)."""
    x = v1.placeholder(np.float32, [None, 2], name="x")
    w1 = v1.get_variable("w1", initializer=W1)
    b1 = v1.get_variable("b1", initializer=B1)
    w2 = v1.get_variable("w2", initializer=W2)
    h = v1.nn.relu(v1.matmul(x, w1) + b1, name="hidden")
    y = v1.identity(v1.matmul(h, w2), name="y")
    return x, y


def _save(v1, d):
    with v1.Graph().as_default(), v1.Session() as sess:
        x, y = _build(v1)
        sess.run(v1.global_variables_initializer())
        v1.saved_model.simple_save(sess, d, {"x": x}, {"y": y})
        return sess.run(y, {x: X})


def test_simple_save_loads_into_a_fresh_graph_as_real_tf(tmp_path, real_tf):
    before = _save(tf, str(tmp_path / "ours"))
    np.testing.assert_allclose(before, _numpy_net(X), rtol=1e-6)
    results = {}
    for name, v1 in (("ours", tf), ("tf", real_tf.compat.v1)):
        if name == "tf":
            _save(v1, str(tmp_path / "tf"))
        with v1.Graph().as_default() as g, v1.Session() as sess:
            meta = v1.saved_model.loader.load(sess, [v1.saved_model.tag_constants.SERVING],
                                              str(tmp_path / name))
            sig = meta.signature_def["serving_default"]
            assert sig.method_name == "tensorflow/serving/predict"
            assert (sig.inputs["x"].name, sig.outputs["y"].name) == ("x:0", "y:0")
            assert sig.inputs["x"].dtype == 1
            assert [d.size for d in sig.outputs["y"].tensor_shape.dim] == [-1, 1]
            assert list(meta.meta_info_def.tags) == ["serve"]
            results[name] = sess.run("y:0", {"x:0": X})
            hidden = sess.run(g.get_tensor_by_name("hidden:0"), {"x:0": X})
            assert sorted(v.name for v in v1.trainable_variables()) == ["b1:0", "w1:0", "w2:0"]
            np.testing.assert_allclose(sess.run(v1.trainable_variables()[0]), W1)
            y = v1.saved_model.utils.get_tensor_from_tensor_info(sig.outputs["y"])
            assert y is g.get_tensor_by_name("y:0")
        np.testing.assert_allclose(hidden, np.maximum(X @ W1 + B1, 0), rtol=1e-6)
    np.testing.assert_allclose(results["ours"], before, rtol=0, atol=0)
    np.testing.assert_allclose(results["ours"], results["tf"], rtol=1e-6)


def test_retraining_the_loaded_graph_equals_real_tf(tmp_path, real_tf):
    losses = {}
    for name, v1 in (("ours", tf), ("tf", real_tf.compat.v1)):
        d = str(tmp_path / name)
        _save(v1, d)
        with v1.Graph().as_default() as g, v1.Session() as sess:
            v1.saved_model.loader.load(sess, ["serve"], d)
            y = g.get_tensor_by_name("y:0")
            loss = v1.reduce_mean(v1.square(y - 1.0))
            opt = v1.train.GradientDescentOptimizer(0.1)
            step = opt.minimize(loss, var_list=v1.trainable_variables())
            losses[name] = [sess.run([loss, step], {"x:0": X})[0] for _ in range(3)]
            losses[name].append(sess.run(v1.trainable_variables()[2]))
    for a, b in zip(losses["ours"], losses["tf"]):
        np.testing.assert_allclose(a, b, rtol=1e-5)


def test_builder_meta_graphs_main_op_and_import_scope(tmp_path, real_tf):
    d = str(tmp_path / "b")
    with tf.Graph().as_default(), tf.Session() as sess:
        x, y = _build(tf)
        c = tf.constant(np.float32([2.0]), name="two")
        z = tf.multiply(y, c, name="z")
        sess.run(tf.global_variables_initializer())
        b = tf.saved_model.builder.SavedModelBuilder(d)
        info = tf.saved_model.utils.build_tensor_info
        sig = tf.saved_model.signature_def_utils.build_signature_def(
            {"in": info(x)}, {"out": info(z)},
            tf.saved_model.signature_constants.PREDICT_METHOD_NAME)
        assert tf.saved_model.signature_def_utils.is_valid_signature(sig)
        b.add_meta_graph_and_variables(sess, [tf.saved_model.tag_constants.TRAINING],
                                       signature_def_map={"double": sig},
                                       main_op=tf.tables_initializer())
        with pytest.raises(AssertionError, match="has already been saved"):
            b.add_meta_graph_and_variables(sess, ["train"])
        sess.run(tf.trainable_variables()[2].assign(W2 * 10))  # not saved: values are kept
        b.add_meta_graph(["serve", "gpu"], signature_def_map={
            "serving_default": tf.saved_model.predict_signature_def({"x": x}, {"y": y})})
        path = b.save()
    assert path == os.path.join(d, "saved_model.json").encode()
    assert tf.saved_model.maybe_saved_model_directory(d)
    with tf.Graph().as_default() as g, tf.Session() as sess:
        meta = tf.saved_model.loader.load(sess, ["train"], d, import_scope="imported")
        out = meta.signature_def["double"].outputs["out"]
        got = sess.run(tf.saved_model.utils.get_tensor_from_tensor_info(
            out, import_scope="imported"), {"imported/x:0": X})
        np.testing.assert_allclose(got, 2 * _numpy_net(X), rtol=1e-6)
        assert g.get_operation_by_name("imported/two").type == "Const"
    with tf.Graph().as_default(), tf.Session() as sess:
        tf.saved_model.load(sess, ["gpu", "serve"], d)  # a tag set, in any order
        np.testing.assert_allclose(sess.run("y:0", {"x:0": X}), _numpy_net(X), rtol=1e-6)
        with pytest.raises(RuntimeError, match=r"MetaGraphDef associated with tags 'foo' "
                           r"could not be found in SavedModel, with available tags "
                           r"'\[\{'train'\}, \{'.*'\}\]'"):
            tf.saved_model.loader.load(sess, ["foo"], d)


def test_errors_as_tf(tmp_path, real_tf):
    d = tmp_path / "full"
    d.mkdir()
    (d / "f").write_text("x")
    for v1 in (tf, real_tf.compat.v1):
        with pytest.raises(AssertionError, match="already exists, and isn't empty"):
            v1.saved_model.builder.SavedModelBuilder(str(d))
        b = v1.saved_model.builder.SavedModelBuilder(str(tmp_path / "new"))
        with pytest.raises(AssertionError, match="has not been saved yet. Please invoke "
                           r"`add_meta_graph_and_variables\(\)` first."):
            b.add_meta_graph(["serve"])
        with v1.Graph().as_default(), v1.Session() as sess:
            with pytest.raises(OSError, match=r"SavedModel file does not exist at: .*nope"):
                v1.saved_model.loader.load(sess, ["serve"], str(tmp_path / "nope"))
            x = v1.placeholder(np.float32, [2], name="x")
            with pytest.raises(ValueError, match="Prediction `inputs` cannot be None or empty"):
                v1.saved_model.predict_signature_def({}, {"x": x})
            with pytest.raises(ValueError, match="Prediction `outputs` cannot be None or"):
                v1.saved_model.predict_signature_def({"x": x}, None)
            v = v1.Variable(np.float32([1, 2]), name="v")
            with pytest.raises(v1.errors.FailedPreconditionError if v1 is not tf
                               else FailedPreconditionError):
                v1.saved_model.simple_save(sess, str(tmp_path / f"u{id(v1)}"), {"x": x},
                                           {"y": x * v})


def test_signature_needing_an_unwritable_node_is_refused(tmp_path):
    with tf.Graph().as_default(), tf.Session() as sess:
        x = tf.placeholder(tf.float32, [2], name="x")
        w = tf.Variable(np.float32([1, 2]), name="w")
        g = tf.gradients(tf.reduce_sum(x * w), w)[0]
        sess.run(tf.global_variables_initializer())
        with pytest.raises(ValueError, match="cannot save this graph"):
            tf.saved_model.simple_save(sess, str(tmp_path / "g"), {"x": x}, {"g": g})
        with pytest.raises(RuntimeError, match="not supported in Eager mode"):
            tf.saved_model.utils.build_tensor_info(np.zeros(2))


def test_fresh_process_and_tf2_load(tmp_path):
    d = str(tmp_path / "m")
    want = _save(tf, d)
    np.save(tmp_path / "x.npy", X)
    code = ("import numpy as np\n"
            "from ipu_gpu.compat import v1 as tf\n"
            "with tf.Graph().as_default(), tf.Session() as s:\n"
            f"    tf.saved_model.loader.load(s, ['serve'], {d!r})\n"
            f"    x = np.load({str(tmp_path / 'x.npy')!r})\n"
            "    print(repr(s.run('y:0', {'x:0': x}).tolist()))\n")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.float32(eval(r.stdout)), want)
    import ipu_gpu

    loaded = ipu_gpu.saved_model.load(d)
    out = loaded.signatures["serving_default"](x=X)
    np.testing.assert_array_equal(out["y"].numpy(), want)
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        loaded.signatures["serving_default"](x=X, z=X)


def test_defaults_assignments_and_main_op_round_trip(tmp_path, real_tf):
    """A placeholder_with_default input, a main op assigning a variable (run by the loader
    after the restore) and an assign_add fetched by name, as real TF."""
    results = {}
    for name, v1 in (("ours", tf), ("tf", real_tf.compat.v1)):
        d = str(tmp_path / name)
        with v1.Graph().as_default(), v1.Session() as sess:
            x = v1.placeholder_with_default(np.float32([1, 2]), [2], name="x")
            w = v1.Variable(np.float32([3, 4]), name="w")
            count = v1.Variable(np.float32(0), name="count", trainable=False,
                                use_resource=False)
            y = v1.multiply(x, w, name="y")
            v1.assign_add(count, 1.0, name="bump")
            reset = v1.group(v1.assign(count, 10.0), name="reset")
            sess.run(v1.global_variables_initializer())
            v1.saved_model.simple_save(sess, d, {"x": x}, {"y": y}, legacy_init_op=reset)
        with v1.Graph().as_default() as g, v1.Session() as sess:
            v1.saved_model.loader.load(sess, ["serve"], d)
            results[name] = [sess.run("y:0"), sess.run("y:0", {"x:0": [2, 2]}),
                             sess.run(g.get_tensor_by_name("bump:0")),
                             sess.run(g.get_tensor_by_name("bump:0"))]
    for a, b in zip(results["ours"], results["tf"]):
        np.testing.assert_allclose(a, b)
    np.testing.assert_allclose(results["ours"][2:], [11.0, 12.0])


def test_tf_layers_cnn_and_keras_layer_round_trip(tmp_path):
    """conv2d, max_pooling2d, batch_normalization (inference), dropout, dense, one_hot and a
    Keras layer called on graph tensors (its variables are not the graph's own): the reloaded
    graph gives exactly the saved session's values; no training ops are written, the
    optimizer's slot variables are."""
    from ipu_gpu import keras

    xv = np.random.RandomState(0).randn(2, 8, 8, 1).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        tf.set_random_seed(1)
        x = tf.placeholder(tf.float32, [None, 8, 8, 1], name="x")
        h = tf.layers.conv2d(x, 4, 3, padding="same", activation=tf.nn.relu)
        h = tf.layers.max_pooling2d(h, 2, 2)
        h = tf.layers.batch_normalization(h, training=False)
        h = tf.layers.dropout(tf.layers.flatten(h), 0.5, training=False)
        logits = tf.layers.dense(h, 3)
        cls = tf.argmax(tf.nn.softmax(logits), -1, name="cls")
        k = keras.layers.Dense(2, name="head")(logits)
        r = tf.cast(tf.one_hot(cls, 3), tf.float32) + tf.constant(1.0, name="one")
        tf.train.AdamOptimizer().minimize(tf.reduce_sum(k))
        sess.run(tf.global_variables_initializer())
        want = sess.run([logits, cls, k, r], {x: xv})
        tf.saved_model.simple_save(sess, str(tmp_path / "cnn"), {"x": x},
                                   {"logits": logits, "cls": cls, "k": k, "r": r})
    with tf.Graph().as_default() as g, tf.Session() as sess:
        meta = tf.saved_model.loader.load(sess, ["serve"], str(tmp_path / "cnn"))
        outputs = meta.signature_def["serving_default"].outputs
        got = sess.run([outputs[n].name for n in ("logits", "cls", "k", "r")], {"x:0": xv})
        # the optimizer's update is not written; its variables are, as TF saves every
        # global variable: 8 of tf.layers, the Keras kernel and bias, Adam's m and v of
        # the 8 trainable ones, and the two beta powers
        assert not [op.name for op in g.get_operations() if op.name.startswith("Adam")]
        names = [v.name for v in tf.global_variables()]
        assert len(names) == 28 and "head/kernel/Adam_1:0" in names
        assert "beta1_power:0" in names
    for a, b in zip(want, got):
        np.testing.assert_array_equal(a, b)


def test_loader_refuses_a_tf2_format_saved_model(tmp_path):
    import ipu_gpu

    class Doubler(ipu_gpu.Module):
        @ipu_gpu.function(input_signature=[ipu_gpu.TensorSpec([2], ipu_gpu.float32)])
        def __call__(self, x):
            return x * 2

    ipu_gpu.saved_model.save(Doubler(), str(tmp_path / "v2"))
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(RuntimeError, match="load it with tf.saved_model.load"):
            tf.saved_model.loader.load(sess, ["serve"], str(tmp_path / "v2"))


def test_a_later_meta_graph_restores_variables_by_name(tmp_path, real_tf):
    """add_meta_graph of another graph with a variable of a saved name: loading that meta
    graph gives the value saved by add_meta_graph_and_variables, as real TF."""
    results = {}
    for name, v1 in (("ours", tf), ("tf", real_tf.compat.v1)):
        d = str(tmp_path / name)
        b = v1.saved_model.builder.SavedModelBuilder(d)
        with v1.Graph().as_default(), v1.Session() as sess:
            w = v1.Variable(np.float32([1, 2]), name="w")
            sess.run(w.initializer)
            b.add_meta_graph_and_variables(sess, ["train"])
        with v1.Graph().as_default(), v1.Session() as sess:
            w = v1.Variable(np.float32([5, 5]), name="w")
            y = v1.multiply(w, 3.0, name="y")
            b.add_meta_graph(["serve"], signature_def_map={
                "serving_default": v1.saved_model.predict_signature_def({"w": w}, {"y": y})})
        b.save()
        with v1.Graph().as_default(), v1.Session() as sess:
            v1.saved_model.loader.load(sess, ["serve"], d)
            results[name] = sess.run("y:0")
    np.testing.assert_allclose(results["ours"], results["tf"])
    np.testing.assert_allclose(results["ours"], [3, 6])


def _keras_names_through_save_and_load(c, keras, directory):
    """Two Keras Dense layers saved, loaded into a new graph, a third layer made there and
    the whole saved again and loaded: the global variables' names at each stage."""
    import os

    names = []
    with c.Graph().as_default(), c.Session() as sess:
        x = c.placeholder(c.float32, [None, 3], name="x")
        y = keras.layers.Dense(2)(keras.layers.Dense(4)(x))
        sess.run(c.global_variables_initializer())
        c.saved_model.simple_save(sess, os.path.join(directory, "a"), {"x": x}, {"y": y})
    with c.Graph().as_default() as g, c.Session() as sess:
        c.saved_model.loader.load(sess, ["serve"], os.path.join(directory, "a"))
        names.append(sorted(v.name for v in c.global_variables()))
        x = g.get_tensor_by_name("x:0")
        loaded = {id(v) for v in c.global_variables()}
        out = keras.layers.Dense(2)(x)  # named "dense" again: the loaded graph is new
        new = [v for v in c.global_variables() if id(v) not in loaded]
        sess.run(c.variables_initializer(new))
        c.saved_model.simple_save(sess, os.path.join(directory, "b"), {"x": x}, {"o": out})
    with c.Graph().as_default(), c.Session() as sess:
        c.saved_model.loader.load(sess, ["serve"], os.path.join(directory, "b"))
        names.append(sorted(v.name for v in c.global_variables()))
    return names


def test_keras_layer_variable_names_after_load_are_tfs(real_tf, tf_keras, tmp_path):
    """A Keras layer made in a loaded graph is ``dense`` again (layer names count per
    graph) and its variables, clashing with the loaded ``dense/kernel``, come back from the
    next SavedModel as ``dense/kernel_1``, as in TF 1 graph mode with tf_keras."""
    import ipu_gpu as ig

    ours = _keras_names_through_save_and_load(tf, ig.keras, str(tmp_path / "ours"))
    theirs = _keras_names_through_save_and_load(real_tf.compat.v1, tf_keras,
                                                str(tmp_path / "tf"))
    assert ours == theirs
    assert "dense/kernel_1:0" in ours[1]
