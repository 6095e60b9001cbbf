"""ipu.application_compile_op and ipu.embedded_runtime: executables compiled from a loop over
an infeed, run one batch per call against numpy references; engine restarts, threads, fresh
processes, Graphcore's errors; the TF1 program through `ipu-gpu run`."""

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu import errors
from ipu_gpu.ipu import (application_compile_op, embedded_runtime, ipu_infeed_queue,
                         ipu_outfeed_queue, loops)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
W = np.arange(6, dtype=np.float32).reshape(3, 2) / 4 - 0.5


def _mlp_program(w, iterations=4, outfeed_dict=True):
    ds = tf.data.Dataset.from_tensors(np.zeros(3, np.float32)).repeat()
    infeed = ipu_infeed_queue.IPUInfeedQueue(ds)
    outfeed = ipu_outfeed_queue.IPUOutfeedQueue()

    def body(x):
        y = tf.nn.relu(tf.matmul(tf.expand_dims(x, 0), w) + 0.25)
        return outfeed.enqueue({"y": y, "s": tf.reduce_sum(y)} if outfeed_dict else y)

    return lambda: loops.repeat(iterations, body, [], infeed)


def _ref(x, w):
    y = np.maximum(x[None] @ w + 0.25, 0)
    return y, y.sum()


def test_call_matches_numpy_and_variables_freeze(tmp_path):
    w = tf.Variable(W)
    path = str(tmp_path / "app.poplar_exec")
    out = application_compile_op.experimental_application_compile_op(
        _mlp_program(w), output_path=path, freeze_variables=True)
    assert out.numpy() == path.encode()
    w.assign(W * 0)  # frozen: the executable keeps the compile-time values
    ctx = embedded_runtime.embedded_runtime_start(path, [], "t_freeze")
    assert ctx.start_op() is None and ctx.name() == "t_freeze"
    assert [t.name for t in ctx.signature().streamed_outputs] == ["s", "y"]
    assert ctx.output_types() == [np.float32, np.float32]
    rng = np.random.default_rng(0)
    for _ in range(6):  # past the 4 iterations: the engine restarts
        x = rng.standard_normal(3).astype(np.float32)
        s, y = embedded_runtime.embedded_runtime_call([x], ctx)
        ry, rs = _ref(x, W)
        np.testing.assert_allclose(y.numpy(), ry, rtol=1e-6)
        np.testing.assert_allclose(s.numpy(), rs, rtol=1e-6)


def test_unfrozen_variables_are_startup_inputs(tmp_path):
    w = tf.Variable(W, name="w")
    path = str(tmp_path / "app.poplar_exec")
    application_compile_op.experimental_application_compile_op(
        _mlp_program(w, outfeed_dict=False), output_path=path)
    with pytest.raises(Exception, match="expects 1 inputs, but 0 were provided"):
        embedded_runtime.embedded_runtime_start(path, [], "t_vars")
    with pytest.raises(Exception, match="Failed to find input tensor with name 'w'"):
        embedded_runtime.embedded_runtime_start(path, {"v": W}, "t_vars")
    ctx = embedded_runtime.embedded_runtime_start(path, {"w": W * 2}, "t_vars")
    x = np.ones(3, np.float32)
    (y,) = embedded_runtime.embedded_runtime_call([x], ctx)
    np.testing.assert_allclose(y.numpy(), _ref(x, W * 2)[0], rtol=1e-6)


def test_loop_carried_values_restart_after_iterations(tmp_path):
    ds = tf.data.Dataset.from_tensors(np.zeros(2, np.float32)).repeat()
    infeed = ipu_infeed_queue.IPUInfeedQueue(ds)
    outfeed = ipu_outfeed_queue.IPUOutfeedQueue()

    def body(total, x):
        total = total + x
        return total, outfeed.enqueue(total)

    path = str(tmp_path / "acc.poplar_exec")
    application_compile_op.experimental_application_compile_op(
        lambda: loops.repeat(3, body, [tf.zeros([2])], infeed), output_path=path)
    ctx = embedded_runtime.embedded_runtime_start(path, [], "t_carry")
    got = [embedded_runtime.embedded_runtime_call([np.full(2, i, np.float32)], ctx)[0].numpy()
           for i in range(1, 8)]
    want = [1, 3, 6, 4, 9, 15, 7]  # running sums, restarted every 3 calls
    np.testing.assert_array_equal(np.array(got)[:, 0], want)


def test_calls_from_threads_each_get_their_result(tmp_path):
    path = str(tmp_path / "app.poplar_exec")
    application_compile_op.experimental_application_compile_op(
        _mlp_program(tf.Variable(W), outfeed_dict=False), output_path=path,
        freeze_variables=True)
    ctx = embedded_runtime.embedded_runtime_start(path, [], "t_threads")
    results, xs = {}, {i: np.full(3, i / 7, np.float32) for i in range(8)}

    def worker(i):
        results[i] = embedded_runtime.embedded_runtime_call([xs[i]], ctx)[0].numpy()
    threads = [threading.Thread(target=worker, args=(i,)) for i in xs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, x in xs.items():
        np.testing.assert_allclose(results[i], _ref(x, W)[0], rtol=1e-6)


def test_bad_inputs_raise_graphcore_errors(tmp_path):
    path = str(tmp_path / "app.poplar_exec")
    application_compile_op.experimental_application_compile_op(
        _mlp_program(tf.Variable(W)), output_path=path, freeze_variables=True)
    ctx = embedded_runtime.embedded_runtime_start(path, (), "t_errors")
    with pytest.raises(Exception, match="call expects 1 inputs, but 2 were provided"):
        embedded_runtime.embedded_runtime_call([np.zeros(3, np.float32)] * 2, ctx)
    with pytest.raises(Exception, match=r"Mismatched input shape at position 0 \('infeed_0'\)"):
        embedded_runtime.embedded_runtime_call([np.zeros(4, np.float32)], ctx)
    with pytest.raises(TypeError, match="Mismatched input dtype at position 0"):
        embedded_runtime.embedded_runtime_call([np.zeros(3, np.int32)], ctx)
    with pytest.raises(Exception, match="Expected the inputs to be a list"):
        embedded_runtime.embedded_runtime_start(path, np.zeros(3), "t_errors")
    bogus = tmp_path / "bogus.poplar_exec"
    bogus.write_bytes(b"not an executable")
    with pytest.raises(Exception, match="is not a TensorFlow Poplar binary"):
        embedded_runtime.embedded_runtime_start(str(bogus), [], "t_bogus")
    with pytest.raises(NotImplementedError, match="doesn't support stopping"):
        embedded_runtime.embedded_runtime_stop(ctx)


def test_failing_step_raises_internal_error_and_engine_recovers(tmp_path):
    ds = tf.data.Dataset.from_tensors(np.zeros(2, np.float32)).repeat()
    infeed = ipu_infeed_queue.IPUInfeedQueue(ds)
    outfeed = ipu_outfeed_queue.IPUOutfeedQueue()

    def check(x):
        if float(x[0]) < 0:
            raise ValueError("negative input")
        return x * 3

    def body(x):
        return outfeed.enqueue(tf.py_function(check, [x], tf.float32))

    path = str(tmp_path / "py.poplar_exec")
    application_compile_op.experimental_application_compile_op(
        lambda: loops.repeat(5, body, [], infeed), output_path=path)
    ctx = embedded_runtime.embedded_runtime_start(path, [], "t_fail")
    with pytest.raises(errors.InternalError, match="negative input"):
        embedded_runtime.embedded_runtime_call([np.full(2, -1, np.float32)], ctx)
    (y,) = embedded_runtime.embedded_runtime_call([np.full(2, 2, np.float32)], ctx)
    np.testing.assert_array_equal(y.numpy(), [6, 6])
    # a py_function cannot be written to the file: only this process can run it
    code = ("from ipu_gpu.ipu import embedded_runtime as e\n"
            f"e.embedded_runtime_start({path!r}, [], 'other')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300, env={**os.environ, "PYTHONPATH": ROOT})
    assert r.returncode != 0 and "only the process that compiled it" in r.stderr


def test_executable_runs_in_a_fresh_process(tmp_path):
    path = str(tmp_path / "app.poplar_exec")
    application_compile_op.experimental_application_compile_op(
        _mlp_program(tf.Variable(W), outfeed_dict=False), output_path=path,
        freeze_variables=True)
    code = ("import numpy as np\nfrom ipu_gpu.ipu import embedded_runtime as e\n"
            f"c = e.embedded_runtime_start({path!r}, [], 'fresh')\n"
            "print(e.embedded_runtime_call([np.array([1., -2., 3.], np.float32)], c)[0]"
            ".numpy().tolist())\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300, env={**os.environ, "PYTHONPATH": ROOT})
    assert r.returncode == 0, r.stderr
    got = np.array(eval(r.stdout.strip()), np.float32)  # noqa: S307 - a list we printed
    np.testing.assert_allclose(got, _ref(np.array([1, -2, 3], np.float32), W)[0], rtol=1e-6)


@pytest.mark.slow  # the TF1 graph path is also tested by test_tf1_graph_startup_inputs_...
def test_tf1_program_through_ipu_gpu_run(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("IPU_GPU_BACKEND", "TF_POPLAR_FLAGS")}
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-m", "ipu_gpu.cli", "run",
                        os.path.join(ROOT, "tests", "programs", "tf1_embedded_runtime.py"),
                        str(tmp_path)], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert lines[0] == "compiled True"
    w = np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2)
    for i, line in enumerate(lines[1:]):
        k, *vals = line.split()
        x = np.full(3, i - 2, np.float32)
        hidden = np.maximum(x[None] @ w + 0.5, 0)
        assert int(k) == i
        np.testing.assert_allclose(np.array(vals, np.float32),
                                   np.concatenate([hidden.ravel(), hidden.sum(1)]), atol=1e-5)


def test_tf1_graph_startup_inputs_and_unfrozen_graph_variable(tmp_path):
    from ipu_gpu.compat import v1

    path = str(tmp_path / "g.poplar_exec")
    with v1.Graph().as_default():
        w = v1.get_variable("w", initializer=W)
        ds = tf.data.Dataset.from_tensors(np.zeros(3, np.float32)).repeat()
        infeed = ipu_infeed_queue.IPUInfeedQueue(ds)
        outfeed = ipu_outfeed_queue.IPUOutfeedQueue()

        def program(scale):
            return loops.repeat(
                2, lambda x: outfeed.enqueue(tf.matmul(tf.expand_dims(x, 0), w) * scale), [],
                infeed)
        s = v1.placeholder(tf.float32, [])
        compile_op = application_compile_op.experimental_application_compile_op(
            program, inputs=[s], output_path=path)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            assert sess.run(compile_op, {s: 0.0}) == path.encode()
        scale = v1.placeholder(tf.float32, [])
        ctx = embedded_runtime.embedded_runtime_start(path, {"scale": scale, "w": W * 2},
                                                      "t_graph")
        assert [t.name for t in ctx.signature().inputs] == ["scale", "w"]
        x = v1.placeholder(tf.float32, [3])
        (y,) = embedded_runtime.embedded_runtime_call([x], ctx)
        assert y.shape.as_list() == [1, 2]
        with v1.Session() as sess:
            got = sess.run(y, {scale: 3.0, x: np.float32([1, 2, 3])})
    np.testing.assert_allclose(got, np.float32([[1, 2, 3]]) @ (W * 2) * 3, rtol=1e-6)


def test_program_without_loop_or_outfeed(tmp_path):
    from ipu_gpu.compat import v1

    path = str(tmp_path / "square.poplar_exec")
    with v1.Graph().as_default():
        v = v1.placeholder(tf.float32, shape=(2,))
        compile_model = application_compile_op.experimental_application_compile_op(
            lambda x: x * x, inputs=[v], output_path=path)
        with v1.Session() as sess:
            assert sess.run(compile_model, {v: np.zeros(v.shape)}) == path.encode()
    ctx = embedded_runtime.embedded_runtime_start(path, [np.ones(2, np.float32)], "t_square")
    assert ctx.signature().streamed_inputs == [] and ctx.output_types() == []
    assert embedded_runtime.embedded_runtime_call([], ctx) == []


def test_keras_cnn_and_random_op_program_is_written_as_data(tmp_path):
    from ipu_gpu import keras
    from ipu_gpu.saved_model import executable

    model = keras.Sequential([
        keras.layers.Conv2D(3, 3, padding="same", activation="relu", input_shape=(6, 6, 2)),
        keras.layers.MaxPooling2D(2), keras.layers.Flatten(), keras.layers.Dropout(0.5),
        keras.layers.Dense(4)])
    ds = tf.data.Dataset.from_tensors(np.zeros((1, 6, 6, 2), np.float32)).repeat()
    infeed = ipu_infeed_queue.IPUInfeedQueue(ds)
    outfeed = ipu_outfeed_queue.IPUOutfeedQueue()

    def body(x):
        return outfeed.enqueue([tf.nn.softmax(model(x, training=False)),
                                tf.random.uniform([1, 4])])

    path = str(tmp_path / "cnn.poplar_exec")
    application_compile_op.experimental_application_compile_op(
        lambda: loops.repeat(3, body, [], infeed), output_path=path, freeze_variables=True)
    exe = executable.read(path)  # the program rebuilt from the file's JSON and arrays
    assert exe.portable
    assert {"conv2d_bias", "max_pool2d", "softmax", "ipu_gpu.ops.random:uniform"} <= {
        n["target"] for n in exe.header_program["nodes"]}
    x = np.random.default_rng(5).standard_normal((1, 6, 6, 2)).astype(np.float32)
    want = tf.nn.softmax(model(x)).numpy()
    ctx = embedded_runtime.embedded_runtime_start(path, [], "cnn")
    (y, a), (_, b) = (embedded_runtime.embedded_runtime_call([x], ctx) for _ in range(2))
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-5)
    a, b = a.numpy(), b.numpy()
    assert ((0 <= a) & (a < 1)).all() and not np.array_equal(a, b)  # drawn per iteration
