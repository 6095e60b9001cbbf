"""Issue 16's callbacks in ``fit`` against tf-keras (the Keras 2 oracle): the same model, the
same initial weights and data, trained by both with the same callbacks, give the same History,
weights, progress lines and files (ReduceLROnPlateau, LearningRateScheduler, EarlyStopping with
restore_best_weights, CSVLogger, ModelCheckpoint with HDF5 paths, TerminateOnNaN); the
TensorBoard callback writes event files TensorFlow's own reader parses, with tf-keras's tags
and steps (tf-keras cannot be run here for those: tensorboard is not installed).

TensorFlow is imported only through the ``real_tf`` fixture; these tests skip without tf-keras.
"""

from __future__ import annotations

import contextlib
import csv
import glob
import io
import os
import re
import warnings

import numpy as np
import pytest
from progress_text import assert_same_lines

import ipu_gpu.keras as ours


@pytest.fixture(scope="module")
def tfk(real_tf):
    """tf-keras, imported after TensorFlow's fixture set it up."""
    return pytest.importorskip("tf_keras")


_rng = np.random.default_rng(0)
X = _rng.standard_normal((64, 5)).astype(np.float32)
Y = _rng.integers(0, 3, 64)
XV = _rng.standard_normal((16, 5)).astype(np.float32)
YV = _rng.integers(0, 3, 16)


def _model(lib):
    L = lib.layers
    return lib.Sequential([L.Dense(8, activation="relu", input_shape=(5,)), L.Dense(3)])


def _fit(lib, tfk, callbacks, weights, epochs=6, lr=0.5):
    """(model, History, stdout) of a verbose=2 fit with ``callbacks``."""
    model = _model(lib)
    model.set_weights(weights)
    optimizer = (tfk.optimizers.legacy.SGD if lib is tfk else ours.optimizers.SGD)(lr)
    model.compile(optimizer=optimizer, metrics=["accuracy"],
                  loss=lib.losses.SparseCategoricalCrossentropy(from_logits=True))
    out = io.StringIO()
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # tf-keras: HDF5 is a legacy format
        history = model.fit(X, Y, batch_size=16, epochs=epochs, validation_data=(XV, YV),
                            shuffle=False, verbose=2, callbacks=callbacks)
    return model, history, out.getvalue()


def _lines(text):
    """Progress text without timings and temporary directories."""
    text = re.sub(r"\d+(\.\d+)?m?s(/step)?", "T", text)
    return re.sub(r"/\S*/", "DIR/", text).splitlines()


def _weights(tfk):
    tfk.utils.set_random_seed(0)  # the same initial weights whichever tests ran before
    return _model(tfk).get_weights()


def _assert_same_run(a, b, atol=2e-6):
    (model_a, hist_a, out_a), (model_b, hist_b, out_b) = a, b
    assert sorted(hist_a.history) == sorted(hist_b.history)
    assert hist_a.epoch == hist_b.epoch
    for key, values in hist_b.history.items():
        np.testing.assert_allclose(hist_a.history[key], values, rtol=1e-5, atol=atol,
                                   err_msg=key)
    for wa, wb in zip(model_a.get_weights(), model_b.get_weights()):
        np.testing.assert_allclose(wa, wb, rtol=1e-5, atol=atol)
    assert_same_lines(_lines(out_a), _lines(out_b))


def _read_csv(path):
    with open(path, newline="") as f:
        return list(csv.reader(f, delimiter=";"))


CALLBACKS = {
    "ReduceLROnPlateau": lambda lib, d: [lib.callbacks.ReduceLROnPlateau(
        monitor="val_loss", factor=0.5, patience=1, min_delta=1e-2, cooldown=1, verbose=1)],
    "ReduceLROnPlateau-max": lambda lib, d: [lib.callbacks.ReduceLROnPlateau(
        monitor="val_accuracy", factor=0.2, patience=0, min_lr=0.05, verbose=1)],
    "LearningRateScheduler": lambda lib, d: [lib.callbacks.LearningRateScheduler(
        lambda epoch, lr: lr * 0.7 if epoch > 1 else lr, verbose=1)],
    "EarlyStopping-restore": lambda lib, d: [lib.callbacks.EarlyStopping(
        monitor="val_loss", patience=1, restore_best_weights=True, verbose=1)],
    "EarlyStopping-baseline": lambda lib, d: [lib.callbacks.EarlyStopping(
        monitor="val_accuracy", patience=2, baseline=0.6, restore_best_weights=True,
        verbose=1, start_from_epoch=1)],
    "CSVLogger": lambda lib, d: [lib.callbacks.CSVLogger(os.path.join(d, "log.csv"),
                                                          separator=";")],
    "LambdaCallback": lambda lib, d: [lib.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: print("end", epoch, sorted(logs)))],
}


@pytest.mark.parametrize("name", sorted(CALLBACKS))
def test_callback_in_fit_matches_tf_keras(tfk, tmp_path, name):
    weights = _weights(tfk)
    runs, files = [], []
    for lib in (ours, tfk):
        directory = tmp_path / lib.__name__.replace(".", "_")
        directory.mkdir()
        runs.append(_fit(lib, tfk, CALLBACKS[name](lib, str(directory)), weights))
        files.append(directory / "log.csv")
    _assert_same_run(*runs)
    if name == "CSVLogger":
        mine, theirs = (_read_csv(f) for f in files)
        assert mine[0] == theirs[0] == ["epoch", "accuracy", "loss", "val_accuracy",
                                        "val_loss"]
        np.testing.assert_allclose(np.array(mine[1:], float), np.array(theirs[1:], float),
                                   rtol=1e-6)


def test_terminate_on_nan_matches_tf_keras(tfk):
    """(numpy warns of the overflow where TensorFlow is silent: a gap of the ops, not of the
    callback, silenced here.)"""
    weights = _weights(tfk)
    with np.errstate(over="ignore", invalid="ignore"):
        runs = [_fit(lib, tfk, [lib.callbacks.TerminateOnNaN()], weights, lr=1e30)
                for lib in (ours, tfk)]
    (_, hist_a, out_a), (_, hist_b, out_b) = runs

    def lines(text):  # argmax of NaN logits is a matter of the kernel: accuracy left out
        return [re.sub(r"accuracy: [\d.]+", "accuracy", line) for line in _lines(text)]

    assert hist_a.epoch == hist_b.epoch == [0]
    assert lines(out_a) == lines(out_b)
    assert "Batch 1: Invalid loss, terminating training" in out_a


_CHECKPOINTS = ["w.{epoch:02d}-{val_loss:.3f}.h5", "w.{epoch:02d}.hdf5", "best.h5"]


@pytest.mark.parametrize("pattern", _CHECKPOINTS)
@pytest.mark.parametrize("weights_only", [True, False])
@pytest.mark.parametrize("best_only", [True, False])
def test_model_checkpoint_hdf5_matches_tf_keras(tfk, tmp_path, pattern, weights_only,
                                                best_only):
    weights = _weights(tfk)
    dirs = {}
    runs = []
    for lib in (ours, tfk):
        dirs[lib] = tmp_path / lib.__name__.replace(".", "_")
        cb = lib.callbacks.ModelCheckpoint(str(dirs[lib] / pattern), monitor="val_accuracy",
                                           save_best_only=best_only,
                                           save_weights_only=weights_only, verbose=1)
        runs.append(_fit(lib, tfk, [cb], weights, epochs=4))
    _assert_same_run(*runs)
    names = sorted(os.listdir(dirs[ours]))
    assert names == sorted(os.listdir(dirs[tfk]))
    for name in names:  # each file loads into the other library's model, same weights
        mine, theirs = _model(tfk), _model(ours)
        mine.load_weights(str(dirs[ours] / name))
        theirs.load_weights(str(dirs[tfk] / name))
        for a, b in zip(mine.get_weights(), theirs.get_weights()):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=2e-6)


# ---- TensorBoard ------------------------------------------------------------------------------
def _events(real_tf, directory):
    """{subdirectory: [(step, tag, plugin, value or shape)]} of every event file."""
    from tensorflow.core.util import event_pb2

    out = {}
    for sub in sorted(os.listdir(directory)):
        found = []
        paths = sorted(glob.glob(os.path.join(directory, sub, "events.out.tfevents.*")))
        assert paths, sub
        for path in paths:
            records = [event_pb2.Event.FromString(r.numpy())
                       for r in real_tf.data.TFRecordDataset(path)]
            assert records[0].file_version == "brain.Event:2"
            for event in records[1:]:
                for value in event.summary.value:
                    data = real_tf.make_ndarray(value.tensor)
                    plugin = value.metadata.plugin_data.plugin_name
                    found.append((event.step, value.tag, plugin,
                                  float(data) if plugin == "scalars" else data.shape))
        out[sub] = found
    return out


def test_tensorboard_writes_tf_keras_event_files(real_tf, tfk, tmp_path):
    """Tags and steps as tf-keras 2.21 writes them (its callbacks.py: ``epoch_<metric>`` at
    the epoch, ``batch_<metric>`` at the train counter after the step, validation metrics and
    ``evaluation_<metric>_vs_iterations`` at the optimizer's iterations in ``validation/``,
    ``<weight name with _ for :>/histogram`` per layer weight)."""
    weights = _weights(tfk)
    log_dir = str(tmp_path / "logs")
    model, history, _ = _fit(ours, tfk, [ours.callbacks.TensorBoard(
        log_dir=log_dir, update_freq=2, histogram_freq=2)], weights, epochs=2)
    events = _events(real_tf, log_dir)
    assert sorted(events) == ["train", "validation"]
    steps_per_epoch = 4
    want_train = []
    for epoch in range(2):
        for step in range(2, steps_per_epoch + 1, 2):
            want_train += [(epoch * steps_per_epoch + step, "batch_loss"),
                           (epoch * steps_per_epoch + step, "batch_accuracy")]
        want_train += [(epoch, "epoch_loss"), (epoch, "epoch_accuracy")]
        if epoch == 0:
            want_train += [(0, f"{w.name.replace(':', '_')}/histogram")
                           for layer in model.layers for w in layer.weights]
    assert [(s, t) for s, t, _, _ in events["train"]] == want_train
    train = {(s, t): v for s, t, _, v in events["train"]}
    for epoch in range(2):
        assert train[epoch, "epoch_loss"] == pytest.approx(history.history["loss"][epoch])
    kernel = model.layers[0].weights[0]
    assert train[0, f"{kernel.name.replace(':', '_')}/histogram"] == (30, 3)
    want_val = []
    for epoch in range(2):
        iterations = (epoch + 1) * steps_per_epoch
        want_val += [(iterations, "evaluation_loss_vs_iterations"),
                     (iterations, "evaluation_accuracy_vs_iterations"),
                     (epoch, "epoch_loss"), (epoch, "epoch_accuracy")]
    assert [(s, t) for s, t, _, _ in events["validation"]] == want_val
    val = {(s, t): v for s, t, _, v in events["validation"]}
    assert val[1, "epoch_loss"] == pytest.approx(history.history["val_loss"][1])
