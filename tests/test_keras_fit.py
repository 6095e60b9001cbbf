"""Model.fit/evaluate/predict on the host against tf_keras (Keras 2): the same model with the
same initial weights, trained on the same data in the same order, gives the same History,
weights, evaluation and predictions; callbacks see the same hooks and logs; the progress lines
have Keras's form; Keras's errors for bad inputs.

Tolerances: float32 throughout; History values and weights after 3 epochs agree to
rtol 1e-5 / atol 1e-6 (the ops differ from TensorFlow's by a few float32 ulps per step)."""

from __future__ import annotations

import contextlib
import io
import re

import numpy as np
import pytest
from progress_text import assert_same_lines

import ipu_gpu as tf
from ipu_gpu.keras import callbacks as cbks
from ipu_gpu.keras import layers, losses, optimizers
from ipu_gpu.keras.models import Model, Sequential

RTOL, ATOL = 1e-5, 1e-6


@pytest.fixture(scope="module")
def K(real_tf):
    """tf_keras, imported after the real_tf fixture has configured TensorFlow."""
    return pytest.importorskip("tf_keras")


def _data(n=70, features=8, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, features)).astype("float32")
    y = rng.integers(0, classes, size=(n,))
    return x, y


def _mlp(lib, features=8, classes=3):
    L = lib.layers
    return lib.Sequential([L.Dense(16, activation="relu", input_shape=(features,)),
                           L.Dense(classes, activation="softmax")])


def _cnn(lib):
    L = lib.layers
    return lib.Sequential([
        L.Conv2D(4, 3, activation="relu", input_shape=(8, 8, 2)),
        L.MaxPooling2D(2),
        L.Flatten(),
        L.Dense(3),
    ])


class _Ours:
    layers = layers
    Sequential = Sequential


def _keras_optimizer(K, name):
    return {"sgd": K.optimizers.legacy.SGD(learning_rate=0.05),
            "adam": K.optimizers.legacy.Adam(learning_rate=0.01)}[name]


def _our_optimizer(name):
    return {"sgd": optimizers.SGD(learning_rate=0.05),
            "adam": optimizers.Adam(learning_rate=0.01)}[name]


def _close(a, b, rtol=RTOL, atol=ATOL):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                               rtol=rtol, atol=atol)


def _assert_same_history(ours, theirs):
    assert list(ours.history) == list(theirs.history)
    for key in theirs.history:
        assert len(ours.history[key]) == len(theirs.history[key])
        _close(ours.history[key], theirs.history[key])
    assert ours.epoch == theirs.epoch
    assert ours.params == theirs.params


@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_mlp_fit_matches_tf_keras(K, opt):
    x, y = _data()
    ours, theirs = _mlp(_Ours), _mlp(K)
    theirs.set_weights(ours.get_weights())
    ours.compile(_our_optimizer(opt), "sparse_categorical_crossentropy", metrics=["accuracy"])
    theirs.compile(_keras_optimizer(K, opt), "sparse_categorical_crossentropy",
                   metrics=["accuracy"])
    kwargs = dict(batch_size=16, epochs=3, shuffle=False, verbose=0, validation_split=0.2)
    h_ours, h_theirs = ours.fit(x, y, **kwargs), theirs.fit(x, y, **kwargs)
    _assert_same_history(h_ours, h_theirs)
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        _close(a, b)
    _close(ours.evaluate(x, y, verbose=0), theirs.evaluate(x, y, verbose=0))
    assert ours.evaluate(x, y, verbose=0, return_dict=True).keys() == {"loss", "accuracy"}
    _close(ours.predict(x, batch_size=32, verbose=0), theirs.predict(x, batch_size=32, verbose=0))


def test_cnn_fit_matches_tf_keras(K):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(24, 8, 8, 2)).astype("float32")
    y = rng.integers(0, 3, size=(24,))
    ours, theirs = _cnn(_Ours), _cnn(K)
    theirs.set_weights(ours.get_weights())
    loss = "sparse_categorical_crossentropy"
    ours.compile(_our_optimizer("adam"), losses.SparseCategoricalCrossentropy(from_logits=True),
                 metrics=["accuracy"])
    theirs.compile(_keras_optimizer(K, "adam"),
                   K.losses.SparseCategoricalCrossentropy(from_logits=True),
                   metrics=["accuracy"])
    del loss
    kwargs = dict(batch_size=10, epochs=3, shuffle=False, verbose=0)
    _assert_same_history(ours.fit(x, y, **kwargs), theirs.fit(x, y, **kwargs))
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        _close(a, b)
    _close(ours.predict(x, verbose=0), theirs.predict(x, verbose=0), rtol=1e-5, atol=1e-5)


def test_weights_class_weight_and_steps_per_execution_match_tf_keras(K):
    x, y = _data(n=40)
    sw = np.linspace(0.5, 2.0, 40).astype("float32")
    cw = {0: 1.0, 1: 2.0, 2: 0.5}
    ours, theirs = _mlp(_Ours), _mlp(K)
    theirs.set_weights(ours.get_weights())
    ours.compile(_our_optimizer("sgd"), "sparse_categorical_crossentropy",
                 weighted_metrics=["accuracy"], steps_per_execution=2)
    theirs.compile(_keras_optimizer(K, "sgd"), "sparse_categorical_crossentropy",
                   weighted_metrics=["accuracy"], steps_per_execution=2)
    kwargs = dict(batch_size=8, epochs=2, shuffle=False, verbose=0)
    _assert_same_history(ours.fit(x, y, sample_weight=sw, **kwargs),
                         theirs.fit(x, y, sample_weight=sw, **kwargs))
    _assert_same_history(ours.fit(x, y, class_weight=cw, **kwargs),
                         theirs.fit(x, y, class_weight=cw, **kwargs))
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        _close(a, b)


def test_dataset_input_and_validation_data_match_tf_keras(K, real_tf):
    x, y = _data(n=48)
    xv, yv = _data(n=20, seed=5)
    ours, theirs = _mlp(_Ours), _mlp(K)
    theirs.set_weights(ours.get_weights())
    ours.compile(_our_optimizer("sgd"), "sparse_categorical_crossentropy", metrics=["acc"])
    theirs.compile(_keras_optimizer(K, "sgd"), "sparse_categorical_crossentropy",
                   metrics=["acc"])
    ds_ours = tf.data.Dataset.from_tensor_slices((x, y)).batch(12)
    ds_theirs = real_tf.data.Dataset.from_tensor_slices((x, y)).batch(12)
    h_ours = ours.fit(ds_ours, epochs=2, verbose=0, validation_data=(xv, yv),
                      validation_freq=[2])
    h_theirs = theirs.fit(ds_theirs, epochs=2, verbose=0, validation_data=(xv, yv),
                          validation_freq=[2])
    _assert_same_history(h_ours, h_theirs)
    assert len(h_ours.history["val_loss"]) == 1


class _Recorder(cbks.Callback):
    """Records every hook with its argument and the logs (rounded)."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def _record(self, name, *args):
        logs = args[-1] if args else None
        logs = {k: round(float(v), 4) for k, v in (logs or {}).items()
                if np.ndim(v) == 0}
        self.calls.append((name,) + tuple(args[:-1]) + (logs,))


for _hook in ("on_train_begin", "on_train_end", "on_test_begin", "on_test_end",
              "on_predict_begin", "on_predict_end"):
    setattr(_Recorder, _hook, lambda self, logs=None, _n=_hook: self._record(_n, logs))
for _hook in ("on_epoch_begin", "on_epoch_end", "on_train_batch_begin", "on_train_batch_end",
              "on_test_batch_begin", "on_test_batch_end", "on_predict_batch_begin",
              "on_predict_batch_end"):
    setattr(_Recorder, _hook, lambda self, i, logs=None, _n=_hook: self._record(_n, i, logs))


def _keras_recorder(K):
    class KRecorder(K.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.calls = []

        _record = _Recorder._record

    for hook in ("on_train_begin", "on_train_end", "on_test_begin", "on_test_end",
                 "on_predict_begin", "on_predict_end"):
        setattr(KRecorder, hook, lambda self, logs=None, _n=hook: self._record(_n, logs))
    for hook in ("on_epoch_begin", "on_epoch_end", "on_train_batch_begin",
                 "on_train_batch_end", "on_test_batch_begin", "on_test_batch_end",
                 "on_predict_batch_begin", "on_predict_batch_end"):
        setattr(KRecorder, hook, lambda self, i, logs=None, _n=hook: self._record(_n, i, logs))
    return KRecorder()


def test_callback_order_and_logs_match_tf_keras(K):
    x, y = _data(n=30)
    ours, theirs = _mlp(_Ours), _mlp(K)
    theirs.set_weights(ours.get_weights())
    ours.compile(_our_optimizer("sgd"), "sparse_categorical_crossentropy", metrics=["accuracy"],
                 steps_per_execution=2)
    theirs.compile(_keras_optimizer(K, "sgd"), "sparse_categorical_crossentropy",
                   metrics=["accuracy"], steps_per_execution=2)
    r_ours, r_theirs = _Recorder(), _keras_recorder(K)
    kwargs = dict(batch_size=8, epochs=2, shuffle=False, verbose=0,
                  validation_data=(x[:10], y[:10]))
    ours.fit(x, y, callbacks=[r_ours], **kwargs)
    theirs.fit(x, y, callbacks=[r_theirs], **kwargs)
    ours.evaluate(x, y, batch_size=8, callbacks=[r_ours], verbose=0)
    theirs.evaluate(x, y, batch_size=8, callbacks=[r_theirs], verbose=0)
    ours.predict(x, batch_size=8, callbacks=[r_ours], verbose=0)
    theirs.predict(x, batch_size=8, callbacks=[r_theirs], verbose=0)
    assert [c[:-1] for c in r_ours.calls] == [c[:-1] for c in r_theirs.calls]
    for a, b in zip(r_ours.calls, r_theirs.calls):
        assert a[-1].keys() == b[-1].keys(), a
        _close(list(a[-1].values()), list(b[-1].values()), rtol=1e-3, atol=1e-4)
    # steps_per_execution=2 over 4 batches (the last one partial): executions start at 0 and 2
    batch_ends = [c[1] for c in r_ours.calls if c[0] == "on_train_batch_end"]
    assert batch_ends == [1, 3, 1, 3]


def _mask_times(text):
    text = re.sub(r"ETA: \d+(:\d+)*s?", "ETA: T", text)
    text = re.sub(r"\d+(ms|us|s)/(step|epoch|sample)", r"T/\2", text)
    return re.sub(r" - \d+s", " - Ts", text)


@pytest.mark.parametrize("verbose", [1, 2])
def test_fit_progress_output_form_matches_tf_keras(K, verbose):
    x, y = _data(n=40)
    ours, theirs = _mlp(_Ours), _mlp(K)
    theirs.set_weights(ours.get_weights())
    ours.compile(_our_optimizer("sgd"), "sparse_categorical_crossentropy", metrics=["accuracy"])
    theirs.compile(_keras_optimizer(K, "sgd"), "sparse_categorical_crossentropy",
                   metrics=["accuracy"])
    outputs = []
    for model in (ours, theirs):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            model.fit(x, y, batch_size=20, epochs=2, shuffle=False, verbose=verbose,
                      validation_split=0.5)
            model.evaluate(x, y, batch_size=20, verbose=verbose)
        outputs.append(_mask_times(out.getvalue()))
    if verbose == 1:  # updates closer than 50 ms apart are skipped: compare the final lines
        outputs = [[line.rsplit("\r", 1)[-1].lstrip("\b") for line in o.split("\n")]
                   for o in outputs]
    else:
        outputs = [o.split("\n") for o in outputs]
    assert_same_lines(outputs[0], outputs[1])


def test_fit_before_compile_and_bad_inputs(K):
    x, y = _data(n=10)
    model = _mlp(_Ours)
    with pytest.raises(RuntimeError, match=re.escape(
            "You must compile your model before training/testing. Use "
            "`model.compile(optimizer, loss)`.")):
        model.fit(x, y, verbose=0)
    with pytest.raises(RuntimeError, match="You must compile your model"):
        model.evaluate(x, y, verbose=0)
    model.compile("sgd", "sparse_categorical_crossentropy")
    with pytest.raises(ValueError, match="Data cardinality is ambiguous:\n  x sizes: 10\n  "
                                         "y sizes: 9\nMake sure all arrays contain the same "
                                         "number of samples."):
        model.fit(x, y[:9], verbose=0)
    with pytest.raises(ValueError, match=r"Input 0 of layer \"sequential.*\" is incompatible"):
        model.fit(np.zeros((10, 5), "float32"), y, verbose=0)
    with pytest.raises(ValueError, match="Target data is missing"):
        model.fit(x, verbose=0)
    with pytest.raises(ValueError, match="`validation_split` is only supported for Tensors or "
                                         "NumPy arrays"):
        model.fit(tf.data.Dataset.from_tensor_slices((x, y)).batch(2), validation_split=0.5,
                  verbose=0)
    with pytest.raises(ValueError, match="The `batch_size` argument must not be specified"):
        model.fit(tf.data.Dataset.from_tensor_slices((x, y)).batch(2), batch_size=2, verbose=0)
    with pytest.raises(ValueError, match="When passing an infinitely repeating dataset"):
        model.fit(tf.data.Dataset.from_tensor_slices((x, y)).batch(2).repeat(), verbose=0)
    with pytest.raises(ValueError, match="Expected `validation_freq` to be a list or int"):
        model.fit(x, y, validation_data=(x, y), validation_freq="2", verbose=0)
    with pytest.raises(TypeError, match="Invalid keyword argument"):
        model.compile("sgd", "mse", bogus=1)


def test_on_batch_methods_and_stop_training(K):
    x, y = _data(n=16)
    ours, theirs = _mlp(_Ours), _mlp(K)
    theirs.set_weights(ours.get_weights())
    ours.compile(_our_optimizer("sgd"), "sparse_categorical_crossentropy", metrics=["accuracy"])
    theirs.compile(_keras_optimizer(K, "sgd"), "sparse_categorical_crossentropy",
                   metrics=["accuracy"])
    _close(ours.train_on_batch(x, y), theirs.train_on_batch(x, y))
    _close(ours.test_on_batch(x, y), theirs.test_on_batch(x, y))
    assert ours.train_on_batch(x, y, return_dict=True).keys() == {"loss", "accuracy"}
    theirs.train_on_batch(x, y)
    _close(ours.predict_on_batch(x), theirs.predict_on_batch(x))
    assert ours.metrics_names == theirs.metrics_names == ["loss", "accuracy"]

    class Stop(cbks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 1:
                self.model.stop_training = True

    h = ours.fit(x, y, batch_size=4, epochs=5, verbose=0, callbacks=[Stop()])
    assert h.epoch == [0]


def test_subclassed_model_and_custom_train_step():
    class Net(Model):
        def __init__(self):
            super().__init__()
            self.hidden = layers.Dense(8, activation="relu")
            self.out = layers.Dense(1)

        def call(self, inputs, training=None):
            return self.out(self.hidden(inputs))

    class Custom(Net):
        steps = 0

        def train_step(self, data):
            Custom.steps += 1
            return super().train_step(data)

    x = np.random.default_rng(2).normal(size=(32, 4)).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    model = Custom()
    model.compile(optimizers.SGD(0.05), "mse")
    h = model.fit(x, y, batch_size=8, epochs=4, verbose=0)
    assert Custom.steps == 16
    assert h.history["loss"][-1] < h.history["loss"][0]
    assert [layer.name for layer in model.layers] == [model.hidden.name, model.out.name]
    assert len(model.trainable_weights) == 4


def test_lr_scheduler_early_stopping_and_checkpoint_in_fit(tmp_path):
    x, y = _data(n=20)
    model = _mlp(_Ours)
    model.compile(optimizers.SGD(0.1), "sparse_categorical_crossentropy")
    path = str(tmp_path / "w{epoch}.h5")
    h = model.fit(x, y, epochs=6, verbose=0, validation_data=(x, y), callbacks=[
        cbks.LearningRateScheduler(lambda epoch, lr: lr * 0.5),
        cbks.EarlyStopping(monitor="loss", patience=0, min_delta=10.0),
        cbks.ModelCheckpoint(path, save_weights_only=True)])
    assert h.epoch == [0, 1]  # no improvement of 10: stops at the second epoch
    np.testing.assert_allclose(h.history["lr"], [0.05, 0.025], rtol=1e-6)
    assert (tmp_path / "w1.h5").exists() and (tmp_path / "w2.h5").exists()


def _scalar_events(real_tf, logdir):
    """{(subdir, tag, step): value} of the scalar summaries TensorBoard would show."""
    import glob
    import os

    found = {}
    for path in glob.glob(os.path.join(str(logdir), "*", "events.out.tfevents.*")):
        sub = os.path.basename(os.path.dirname(path))
        for event in real_tf.compat.v1.train.summary_iterator(path):
            for v in event.summary.value:
                if v.metadata.plugin_data.plugin_name == "scalars":
                    found[(sub, v.tag, event.step)] = float(real_tf.make_ndarray(v.tensor))
    return found


def test_tensorboard_writes_keras_scalars(real_tf, tmp_path):
    """The tags, steps and values tf_keras's TensorBoard writes (its own run needs the
    tensorboard package, which the oracle environment lacks): epoch metrics per epoch in
    train/ and validation/, and the evaluation metrics at the optimizer's iteration."""
    x, y = _data(n=24)
    model = _mlp(_Ours)
    model.compile(_our_optimizer("sgd"), "sparse_categorical_crossentropy", metrics=["accuracy"])
    history = model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0,
                        validation_split=0.25,
                        callbacks=[cbks.TensorBoard(tmp_path, histogram_freq=1)])
    found = _scalar_events(real_tf, tmp_path)
    expected = {}
    for epoch in range(2):
        for name in ("loss", "accuracy"):
            expected[("train", "epoch_" + name, epoch)] = history.history[name][epoch]
            expected[("validation", "epoch_" + name, epoch)] = history.history["val_" + name][
                epoch]
            expected[("validation", f"evaluation_{name}_vs_iterations", 3 * (epoch + 1))] = (
                history.history["val_" + name][epoch])
    assert sorted(found) == sorted(expected)
    _close([found[k] for k in sorted(found)], [expected[k] for k in sorted(expected)])


def test_initial_epoch_steps_per_epoch_and_generators_match_tf_keras(K):
    x, y = _data(n=40)
    sw = np.linspace(1.0, 2.0, 40).astype("float32")
    ours, theirs = _mlp(_Ours), _mlp(K)
    theirs.set_weights(ours.get_weights())
    ours.compile(_our_optimizer("sgd"), "sparse_categorical_crossentropy", metrics=["accuracy"])
    theirs.compile(_keras_optimizer(K, "sgd"), "sparse_categorical_crossentropy",
                   metrics=["accuracy"])
    kwargs = dict(batch_size=8, epochs=4, initial_epoch=1, steps_per_epoch=3, shuffle=False,
                  verbose=0)
    _assert_same_history(ours.fit(x, y, sample_weight=sw, **kwargs),
                         theirs.fit(x, y, sample_weight=sw, **kwargs))

    def batches():
        for i in range(5):
            yield x[8 * i:8 * i + 8], y[8 * i:8 * i + 8], sw[8 * i:8 * i + 8]

    _assert_same_history(ours.fit(batches(), epochs=1, verbose=0),
                         theirs.fit(batches(), epochs=1, verbose=0))
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        _close(a, b)


def _batch_sequence(base, x, y, batch):
    """A keras.utils.Sequence subclass over (x, y) in batches, recording what it is asked."""

    class Batches(base):
        def __init__(self):
            self.reads, self.epochs_ended = [], 0

        def __len__(self):
            return -(-len(x) // batch)

        def __getitem__(self, index):
            self.reads.append(index)
            return x[index * batch:(index + 1) * batch], y[index * batch:(index + 1) * batch]

        def on_epoch_end(self):
            self.epochs_ended += 1

    return Batches()


def test_sequence_input_matches_tf_keras(K):
    """fit/evaluate/predict on a keras.utils.Sequence: the batches read in order (shuffle
    False), the peek at batch 0, on_epoch_end once an epoch, the history and weights."""
    from ipu_gpu import keras

    x, y = _data(n=44)
    ours, theirs = _mlp(_Ours), _mlp(K)
    theirs.set_weights(ours.get_weights())
    ours.compile(_our_optimizer("sgd"), "sparse_categorical_crossentropy", metrics=["accuracy"])
    theirs.compile(_keras_optimizer(K, "sgd"), "sparse_categorical_crossentropy",
                   metrics=["accuracy"])
    seq_ours = _batch_sequence(keras.utils.Sequence, x, y, 8)
    seq_theirs = _batch_sequence(K.utils.Sequence, x, y, 8)
    _assert_same_history(ours.fit(seq_ours, epochs=3, shuffle=False, verbose=0),
                         theirs.fit(seq_theirs, epochs=3, shuffle=False, verbose=0))
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        _close(a, b)
    assert seq_ours.epochs_ended == seq_theirs.epochs_ended == 3
    assert seq_ours.reads == [0] + [0, 1, 2, 3, 4, 5] * 3
    _close(ours.evaluate(seq_ours, verbose=0), theirs.evaluate(seq_theirs, verbose=0))
    _close(ours.predict(seq_ours, verbose=0), theirs.predict(seq_theirs, verbose=0))

    shuffled = _batch_sequence(keras.utils.Sequence, x, y, 8)
    ours.fit(shuffled, epochs=2, verbose=0)  # fit's default: a new order every epoch
    assert sorted(shuffled.reads[1:7]) == sorted(shuffled.reads[7:]) == list(range(6))
    with pytest.raises(ValueError, match="`y` argument is not supported"):
        ours.fit(seq_ours, y, verbose=0)
    with pytest.raises(ValueError, match="`sample_weight` argument is not supported"):
        ours.fit(seq_ours, sample_weight=np.ones(44), verbose=0)
