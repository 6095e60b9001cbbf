"""What running Graphcore's TF1 tutorials (``tutorials/tensorflow1/basics``, the
``replication`` feature example) through ``ipu-gpu run`` needed: TF 1.15 recognised in a
program importing ``tensorflow.compat.v1`` that runs a Session without a graph of its own,
Keras's ``Sequential`` running a layer added twice once, and ``tf.compat``'s text helpers.
The program below is written in the style of those tutorials, not copied from them."""

import gzip
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu import aliases
from ipu_gpu import keras as ours_keras

ROOT = Path(__file__).resolve().parents[1]


# ---- TF version of a program ----------------------------------------------------------------
@pytest.mark.parametrize(("source", "version"), [
    ("import tensorflow.compat.v1 as tf\nwith tf.Session() as s:\n    pass\n", 1),
    ("import tensorflow.compat.v1 as tf\nx = tf.placeholder(tf.float32)\n", 1),
    ("from tensorflow.compat import v1 as tf\ns = tf.InteractiveSession()\n", 1),
    ("import tensorflow.compat.v1 as v1\nimport tensorflow as tf\nv1.Session()\n", 1),
    # a TF 2 program building its own graph for a compat.v1 Session stays TF 2
    ("import tensorflow as tf\nimport tensorflow.compat.v1 as v1\n"
     "with tf.Graph().as_default():\n    v1.Session()\n", 2),
    ("import tensorflow.compat.v1 as tf\nx = tf.constant(1.0)\n", 2),
    ("import tensorflow as tf\ns = tf.compat.v1.Session\n", 2),
])
def test_detect_tf_version_of_compat_v1_programs(source, version):
    assert aliases.detect_tf_version(source) == version


# ---- Sequential with a layer added twice --------------------------------------------------------
def _twice_model(keras_mod):
    conv = keras_mod.layers.Conv2D(4, 3, padding="same", activation="relu")
    return keras_mod.Sequential([keras_mod.layers.Reshape((6, 6, 1)), conv, conv,
                                keras_mod.layers.Flatten(), keras_mod.layers.Dense(3)])


def test_sequential_runs_a_layer_added_twice_once_as_keras():
    real_keras = pytest.importorskip("tf_keras")
    x = np.random.default_rng(0).standard_normal((2, 6, 6)).astype(np.float32)
    ours, theirs = _twice_model(ours_keras), _twice_model(real_keras)
    ours(x)
    theirs(x)
    assert [type(layer).__name__ for layer in ours.layers] == \
        [type(layer).__name__ for layer in theirs.layers] == \
        ["Reshape", "Conv2D", "Flatten", "Dense"]
    assert [c["class_name"] for c in ours.get_config()["layers"]] == \
        [c["class_name"] for c in theirs.get_config()["layers"]]
    ours.set_weights(theirs.get_weights())
    np.testing.assert_allclose(ours(x).numpy(), theirs(x).numpy(), rtol=1e-5, atol=1e-6)


# ---- tf.compat text helpers -------------------------------------------------------------------
def _text_results(compat):
    out = []
    for fn, arg in [(compat.as_bytes, "é"), (compat.as_bytes, bytearray(b"x")),
                    (compat.as_bytes, 3), (compat.as_text, b"\xc3\xa9"), (compat.as_text, 3),
                    (compat.as_text, bytearray(b"x")), (compat.as_str, "s"),
                    (compat.as_str_any, 5), (compat.path_to_str, Path("/a/b"))]:
        try:
            out.append(fn(arg))
        except TypeError as e:
            out.append(str(e))
    out.append(compat.as_bytes("é", encoding="latin-1"))
    return out


def test_compat_text_helpers_match_tensorflow():
    real = pytest.importorskip("tensorflow")
    assert _text_results(tf.compat) == _text_results(real.compat)
    assert tf.compat.v1.compat is tf.compat
    assert aliases.resolve("tensorflow.compat.as_bytes")[0]


# ---- a TF1 tutorial-style program through `ipu-gpu run` -----------------------------------------
_PROGRAM = textwrap.dedent("""\
    import tensorflow.compat.v1 as tf
    from tensorflow.python import ipu

    (x_train, y_train), _ = tf.keras.datasets.fashion_mnist.load_data()
    x_train = x_train.astype("float32") / 255
    y_train = y_train.astype("int32")
    ds = tf.data.Dataset.from_tensor_slices((x_train, y_train)).repeat().batch(
        16, drop_remainder=True)
    it = ds.make_initializable_iterator()

    conv = tf.keras.layers.Conv2D(4, (3, 3), padding="same", activation=tf.nn.relu)
    model = tf.keras.Sequential([tf.keras.layers.Reshape((28, 28, 1)), conv, conv,
                                 tf.keras.layers.Flatten(), tf.keras.layers.Dense(10)])

    cfg = ipu.config.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()

    def body(x, y):
        loss = tf.losses.sparse_softmax_cross_entropy(labels=y, logits=model(x, training=True))
        return [loss, tf.train.AdamOptimizer(0.01).minimize(loss=loss)]

    x, y = it.get_next()
    with ipu.scopes.ipu_scope("/device:IPU:0"):
        step = ipu.ipu_compiler.compile(body, inputs=[x, y])

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(it.initializer)
        for epoch in range(2):
            total = 0.0
            for _ in range(len(x_train) // 16):
                total += sess.run(step)[0]
            print("loss", total / (len(x_train) // 16))
    print("layers", len(model.layers))
    """)


def _write_idx(path, array):
    header = bytes([0, 0, 8, array.ndim]) + b"".join(d.to_bytes(4, "big") for d in array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.tobytes())


def _fake_fashion_mnist(keras_home: Path, n_train=160):
    """A learnable stand-in in the Keras cache layout: class c lights rows 2c+3..2c+6."""
    folder = keras_home / "datasets" / "fashion-mnist"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for prefix, n in (("train", n_train), ("t10k", 16)):
        y = rng.integers(0, 10, n).astype(np.uint8)
        x = rng.integers(0, 60, (n, 28, 28)).astype(np.uint8)
        for i, c in enumerate(y):
            x[i, 2 * c + 3: 2 * c + 7, 4:24] = 200
        _write_idx(folder / f"{prefix}-labels-idx1-ubyte.gz", y)
        _write_idx(folder / f"{prefix}-images-idx3-ubyte.gz", x)


def test_tf1_tutorial_style_program_runs_without_flags(tmp_path):
    assert aliases.detect_tf_version(_PROGRAM) == 1
    _fake_fashion_mnist(tmp_path / "keras")
    (tmp_path / "prog.py").write_text(_PROGRAM)
    env = {k: v for k, v in os.environ.items()
           if k not in ("IPU_GPU_BACKEND", "IPU_GPU_NUM_IPUS", "TF_POPLAR_FLAGS",
                        "IPU_GPU_REPORT_DIR")}
    env.update(PYTHONPATH=str(ROOT), KERAS_HOME=str(tmp_path / "keras"), OMP_NUM_THREADS="1")
    r = subprocess.run([sys.executable, "-m", "ipu_gpu.cli", "run", "--backend", "cpu",
                        "prog.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    losses = [float(line.split()[1]) for line in r.stdout.splitlines()
              if line.startswith("loss ")]
    assert len(losses) == 2 and losses[1] < 0.5 * losses[0], r.stdout
    assert "layers 4" in r.stdout
