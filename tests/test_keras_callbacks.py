"""keras.callbacks and keras.utils.Progbar: output form against tf_keras's, hook order and
logs, and each callback's decisions (the model-level runs are in test_keras_fit.py)."""

from __future__ import annotations

import contextlib
import csv
import io
import itertools
import time

import numpy as np
import pytest

from ipu_gpu.keras import callbacks as cbks
from ipu_gpu.keras.utils.progbar import Progbar


@pytest.fixture
def tf_keras(real_tf):
    """tf_keras (Keras 2), imported after real_tf has configured TensorFlow."""
    return pytest.importorskip("tf_keras")


class _Clock:
    """time.time returns 1000.0, 1000.7, 1001.4, ...; each Progbar run restarts it, so both
    Progbars see the same times."""

    def __init__(self):
        self.restart()

    def restart(self):
        self.ticks = itertools.count()

    def __call__(self):
        return 1000.0 + 0.7 * next(self.ticks)


_CLOCK = _Clock()


@pytest.fixture
def fake_clock(monkeypatch):
    _CLOCK.restart()
    monkeypatch.setattr(time, "time", _CLOCK)


def _run_progbar(cls, target, verbose, updates, **kwargs):
    _CLOCK.restart()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        bar = cls(target, verbose=verbose, **kwargs)
        for current, values, finalize in updates:
            bar.update(current, values, finalize=finalize)
    return out.getvalue()


_UPDATES = [
    (1, [("loss", 0.9), ("accuracy", 0.25)], None),
    (2, [("loss", 0.7), ("accuracy", 0.5)], None),
    (5, [("loss", 0.5), ("accuracy", 0.75)], None),
    (9, [("loss", 2e-4), ("accuracy", -0.5)], None),
    (10, [("loss", 0.4), ("accuracy", 1.0)], None),
]


@pytest.mark.parametrize("verbose, target", [(1, 10), (1, None), (2, 10)])  # verbose=2 needs one
@pytest.mark.parametrize("stateful", [(), ("accuracy",)])
def test_progbar_output_is_tf_keras(tf_keras, fake_clock, verbose, target, stateful):
    from tf_keras.src.utils.generic_utils import Progbar as KProgbar

    updates = list(_UPDATES)
    if target is None:
        updates[-1] = (10, updates[-1][1], True)
    ours = _run_progbar(Progbar, target, verbose, updates, stateful_metrics=stateful,
                        interval=0.0)
    theirs = _run_progbar(KProgbar, target, verbose, updates, stateful_metrics=stateful,
                          interval=0.0)
    assert ours == theirs
    assert ours  # something was printed


@pytest.mark.parametrize("target", [3, 700, 20000])
def test_progbar_eta_and_widths_are_tf_keras(tf_keras, fake_clock, target):
    from tf_keras.src.utils.generic_utils import Progbar as KProgbar

    updates = [(1, [("loss", 1.5)], None), (2, [("loss", -0.0004)], None),
               (target, [("loss", 12345.678)], None)]
    for verbose in (1, 2):
        ours = _run_progbar(Progbar, target, verbose, updates, unit_name="sample")
        theirs = _run_progbar(KProgbar, target, verbose, updates, unit_name="sample")
        assert ours == theirs


def test_progbar_form(fake_clock):
    out = _run_progbar(Progbar, 4, 1, [(1, [("loss", 0.5)], None), (4, [("loss", 0.25)], None)])
    first, last = out.split("\r")[1:]
    assert first.endswith("\b" * len(first.rstrip("\b")))  # the next update erases the line
    first = first.rstrip("\b")
    assert first.startswith("1/4 [======>.......................] - ETA: ")
    assert first.endswith(" - loss: 0.5000")
    assert last.startswith("4/4 [==============================] - ")
    assert last.endswith("/step - loss: 0.3125\n")  # (0.5 * 1 + 0.25 * 3) / 4
    two = _run_progbar(Progbar, 4, 2, [(4, [("loss", 0.25)], None)])
    assert two.startswith("4/4 - ") and "s/epoch - " in two and two.endswith("/step\n")


def test_progbar_interval_skips_updates(monkeypatch):
    monkeypatch.setattr(time, "time", lambda: 5.0)
    out = _run_progbar(Progbar, 10, 1, [(1, None, None), (2, None, None), (10, None, None)],
                       interval=0.05)
    # the first update is drawn (last update at 0), the second is too soon, the last finalises
    assert out.count("/10 [") == 2


# ---- callback hooks ---------------------------------------------------------------------


class _Recorder(cbks.Callback):
    def __init__(self):
        super().__init__()
        self.calls = []

    def __getattribute__(self, name):
        if name.startswith("on_"):
            calls = object.__getattribute__(self, "calls")

            def hook(*args):
                calls.append((name,) + tuple(a if not isinstance(a, dict) else dict(a)
                                             for a in args))
            return hook
        return object.__getattribute__(self, name)


class _FakeModel:
    def __init__(self):
        self.stop_training = False
        self.metrics = []
        self.history = None


def test_callback_defaults_route_batch_aliases():
    seen = []

    class Old(cbks.Callback):
        def on_batch_end(self, batch, logs=None):
            seen.append((batch, logs))

    cb = Old()
    assert cb._implements_train_batch_hooks()
    assert not cb._implements_test_batch_hooks()
    cb.on_train_batch_end(3, {"loss": 1.0})
    assert seen == [(3, {"loss": 1.0})]
    plain = cbks.Callback()
    assert not plain._implements_train_batch_hooks()
    assert not plain._implements_predict_batch_hooks()


def test_callback_list_batch_hooks_only_when_implemented():
    class EpochOnly(cbks.Callback):
        def __init__(self):
            super().__init__()
            self.batches = 0

        def on_epoch_end(self, epoch, logs=None):
            pass

        def on_train_batch_end(self, batch, logs=None):  # never implemented by others
            self.batches += 1

    lst = cbks.CallbackList([cbks.Callback()], add_history=True, model=_FakeModel())
    assert not lst._should_call_train_batch_hooks
    e = EpochOnly()
    lst = cbks.CallbackList([e], model=_FakeModel())
    lst.on_train_batch_end(0, {"loss": 1})
    assert e.batches == 1


def test_callback_list_adds_history_and_progbar_once():
    model = _FakeModel()
    lst = cbks.CallbackList(None, add_history=True, add_progbar=True, model=model,
                            verbose=1, epochs=2, steps=3)
    kinds = [type(c).__name__ for c in lst]
    assert kinds == ["History", "ProgbarLogger"]
    assert model.history is lst.callbacks[0]
    h = cbks.History()
    lst = cbks.CallbackList([h], add_history=True, model=model)
    assert lst.callbacks == [h]
    assert lst.params == {} if hasattr(lst, "params") else True


def test_logs_become_python_numbers():
    import ipu_gpu as tf

    rec = _Recorder()
    lst = cbks.CallbackList([rec], model=_FakeModel())
    lst.on_epoch_end(0, {"loss": tf.constant(0.5), "acc": np.float32(0.25), "n": 3})
    name, epoch, logs = rec.calls[-1]
    assert (name, epoch) == ("on_epoch_end", 0)
    assert logs == {"loss": 0.5, "acc": 0.25, "n": 3}
    assert type(logs["loss"]) is float and type(logs["acc"]) is float


def test_history_records_epochs():
    h = cbks.History()
    h.set_model(_FakeModel())
    h.on_train_begin()
    h.on_epoch_end(0, {"loss": 1.0, "val_loss": 2.0})
    h.on_epoch_end(1, {"loss": 0.5, "val_loss": 1.5})
    assert h.epoch == [0, 1]
    assert h.history == {"loss": [1.0, 0.5], "val_loss": [2.0, 1.5]}
    assert h.model.history is h


def test_progbar_logger_count_mode():
    with pytest.raises(ValueError, match="Unknown `count_mode`: bad"):
        cbks.ProgbarLogger("bad")


def test_progbar_logger_prints_epochs(fake_clock):
    logger = cbks.ProgbarLogger(count_mode="steps")
    logger.set_model(_FakeModel())
    logger.set_params({"verbose": 2, "epochs": 2, "steps": 3})
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        logger.on_train_begin()
        for epoch in range(2):
            logger.on_epoch_begin(epoch)
            logger.on_train_batch_end(2, {"loss": 1.0})
            logger.on_epoch_end(epoch, {"loss": 0.5 + epoch})
    text = out.getvalue()
    assert text.startswith("Epoch 1/2\n3/3 - ")
    assert " - loss: 0.5000 - " in text and "Epoch 2/2\n3/3 - " in text
    assert " - loss: 1.5000 - " in text


def test_terminate_on_nan():
    cb = cbks.TerminateOnNaN()
    cb.set_model(_FakeModel())
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cb.on_train_batch_end(4, {"loss": 1.0})
        assert not cb.model.stop_training
        cb.on_train_batch_end(5, {"loss": float("nan")})
    assert cb.model.stop_training
    assert out.getvalue() == "Batch 5: Invalid loss, terminating training\n"


class _WeightsModel(_FakeModel):
    def __init__(self):
        super().__init__()
        self.w = [np.zeros(2)]

    def get_weights(self):
        return [x.copy() for x in self.w]

    def set_weights(self, w):
        self.w = [x.copy() for x in w]


@pytest.mark.parametrize("baseline", [None, 0.1])
def test_early_stopping(baseline):
    model = _WeightsModel()
    es = cbks.EarlyStopping(monitor="val_loss", patience=2, restore_best_weights=True,
                            baseline=baseline)
    es.set_model(model)
    es.on_train_begin()
    losses = [1.0, 0.5, 0.6, 0.7, 0.4]
    stopped_at = None
    for epoch, loss in enumerate(losses):
        model.w = [np.full(2, float(epoch))]
        es.on_epoch_end(epoch, {"val_loss": loss})
        if model.stop_training:
            stopped_at = epoch
            break
    es.on_train_end()
    if baseline is None:
        assert stopped_at == 3 and es.best_epoch == 1
        np.testing.assert_array_equal(model.w[0], [1.0, 1.0])
    else:  # never better than the baseline: patience runs out at the first non-improvement
        assert stopped_at == 2 and es.best_epoch == 1


def test_early_stopping_mode_auto_and_min_delta():
    assert cbks.EarlyStopping(monitor="val_accuracy").monitor_op is np.greater
    assert cbks.EarlyStopping(monitor="loss").monitor_op is np.less
    es = cbks.EarlyStopping(monitor="loss", min_delta=0.1, patience=0)
    es.set_model(_WeightsModel())
    es.on_train_begin()
    es.on_epoch_end(0, {"loss": 1.0})
    es.on_epoch_end(1, {"loss": 0.95})  # not by 0.1: stops
    assert es.model.stop_training and es.stopped_epoch == 1


class _OptModel(_FakeModel):
    def __init__(self, lr=0.1):
        super().__init__()
        import ipu_gpu as tf

        class Opt:
            pass

        self.optimizer = Opt()
        self.optimizer.lr = tf.Variable(lr)


def test_learning_rate_scheduler_and_logs():
    model = _OptModel(0.1)
    cb = cbks.LearningRateScheduler(lambda epoch, lr: lr * 0.5, verbose=1)
    cb.set_model(model)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cb.on_epoch_begin(0)
    assert np.isclose(float(model.optimizer.lr.numpy()), 0.05)
    assert out.getvalue() == ("\nEpoch 1: LearningRateScheduler setting learning rate to "
                              f"{np.float32(0.1).item() * 0.5}.\n")
    logs = {}
    cb.on_epoch_end(0, logs)
    assert np.isclose(logs["lr"], 0.05)
    cb = cbks.LearningRateScheduler(lambda epoch: 1)  # an int is refused, as Keras
    cb.set_model(model)
    with pytest.raises(ValueError, match='should be float'):
        cb.on_epoch_begin(0)


def test_reduce_lr_on_plateau():
    with pytest.raises(ValueError, match="factor >= 1.0"):
        cbks.ReduceLROnPlateau(factor=1.0)
    model = _OptModel(1.0)
    cb = cbks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=1, min_lr=0.3)
    cb.set_model(model)
    cb.on_train_begin()
    for epoch, loss in enumerate([1.0, 1.0, 1.0, 1.0, 1.0]):
        cb.on_epoch_end(epoch, {"val_loss": loss})
    assert np.isclose(float(model.optimizer.lr.numpy()), 0.3)


def test_csv_logger(tmp_path):
    path = tmp_path / "log.csv"
    cb = cbks.CSVLogger(str(path))
    cb.set_model(_FakeModel())
    cb.on_train_begin()
    cb.on_epoch_end(0, {"loss": 0.5, "accuracy": 0.25})
    cb.on_epoch_end(1, {"loss": 0.25, "accuracy": 0.5})
    cb.on_train_end()
    with path.open() as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["epoch", "accuracy", "loss", "val_accuracy", "val_loss"]
    assert rows[1] == ["0", "0.25", "0.5", "NA", "NA"]
    cb = cbks.CSVLogger(str(path), append=True)
    cb.set_model(_FakeModel())
    cb.on_train_begin()
    cb.on_epoch_end(2, {"loss": 0.1, "accuracy": 0.75})
    cb.on_train_end()
    with path.open() as f:
        rows = list(csv.reader(f))
    assert len(rows) == 4 and rows[3][0] == "2"


def test_lambda_callback():
    seen = []
    cb = cbks.LambdaCallback(on_epoch_end=lambda epoch, logs: seen.append(epoch),
                             on_batch_end=lambda batch, logs: seen.append(("b", batch)))
    assert cb._implements_train_batch_hooks()
    lst = cbks.CallbackList([cb], model=_FakeModel())
    lst.on_train_batch_end(1, {})
    lst.on_epoch_end(0, {})
    assert seen == [("b", 1), 0]


def test_model_checkpoint_path_and_best(tmp_path):
    saved = []

    class M(_FakeModel):
        def save_weights(self, path, overwrite=True):
            saved.append(path)

    cb = cbks.ModelCheckpoint(str(tmp_path / "w.{epoch:02d}-{val_loss:.2f}.h5"),
                              save_best_only=True, save_weights_only=True, verbose=1)
    cb.set_model(M())
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for epoch, loss in enumerate([0.5, 0.7, 0.25]):
            cb.on_epoch_begin(epoch)
            cb.on_epoch_end(epoch, {"val_loss": loss})
    assert [p.rsplit("/", 1)[1] for p in saved] == ["w.01-0.50.h5", "w.03-0.25.h5"]
    assert "Epoch 2: val_loss did not improve from 0.50000" in out.getvalue()
    assert "Epoch 3: val_loss improved from 0.50000 to 0.25000, saving model to" in out.getvalue()
    with pytest.raises(ValueError, match="Unrecognized save_freq"):
        cbks.ModelCheckpoint("x.h5", save_freq="sometimes")
    cb = cbks.ModelCheckpoint(str(tmp_path / "b{batch}.h5"), save_weights_only=True,
                              save_freq=2)
    cb.set_model(M())
    saved.clear()
    cb.on_epoch_begin(0)
    for batch in range(5):
        cb.on_train_batch_end(batch, {"loss": 1.0})
    assert [p.rsplit("/", 1)[1] for p in saved] == ["b2.h5", "b4.h5"]
    with pytest.raises(KeyError, match="Failed to format this callback filepath"):
        cbks.ModelCheckpoint("{nope}.h5")._get_file_path(0, None, {})


def test_tensorboard_kwargs_and_profile_batch():
    with pytest.raises(ValueError, match="Unrecognized arguments in `TensorBoard`"):
        cbks.TensorBoard(foo=1)
    with pytest.raises(ValueError, match="profile_batch must be"):
        cbks.TensorBoard(profile_batch=(5, 2))
    cbks.TensorBoard(profile_batch="2,4", batch_size=3)
