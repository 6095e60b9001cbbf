"""Keras ``set_infeed_queue_options`` / ``set_outfeed_queue_options`` under an IPUStrategy
(issue 16): Graphcore's eager checks, the queue constructors' checks when fit starts feeding,
the data read ``prefetch_depth`` elements ahead of the device across executions and epochs,
numbers independent of the depth, and the reader thread stopped however a loop ends.

The reference for the errors is Graphcore's Keras (``extensions_base.py``'s
``_set_*_queue_options_impl``, ``data_feed_manager.py``) and the emulator's own queue
constructors, which Graphcore's Keras calls with the options."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu.ipu import config, utils
from ipu_gpu.ipu.ipu_infeed_queue import IPUInfeedQueue
from ipu_gpu.ipu.ipu_outfeed_queue import IPUOutfeedQueue
from ipu_gpu.ipu.ipu_strategy import IPUStrategy
from ipu_gpu.keras import callbacks as cbks
from ipu_gpu.keras import layers, losses, optimizers
from ipu_gpu.keras import utils as keras_utils
from ipu_gpu.keras.models import Sequential

ROOT = str(Path(__file__).resolve().parents[1])


@pytest.fixture
def ipus(fresh_ipu_system):
    def configure(n=1):
        cfg = config.IPUConfig()
        cfg.auto_select_ipus = n
        cfg.configure_ipu_system()
    return configure


def _model(seed=0, dropout=None):
    rng = np.random.default_rng(seed)
    stack = [layers.Dense(8, activation="relu", input_shape=(4,))]
    if dropout is not None:
        stack.append(layers.Dropout(dropout))
    stack.append(layers.Dense(1))
    model = Sequential(stack)
    model.set_weights([rng.normal(size=w.shape).astype(np.float32)
                       for w in model.get_weights()])
    model.compile(optimizers.SGD(0.01), losses.MeanSquaredError(), steps_per_execution=2)
    return model


def _arrays(n=32, seed=1):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n, 4)).astype(np.float32),
            rng.normal(size=(n, 1)).astype(np.float32))


class _Counted:
    """A generator dataset source that counts the batches read from it."""

    def __init__(self, batch=4, fail_at=None, nan_from=None):
        self.reads = 0
        self.batch = batch
        self.fail_at = fail_at
        self.nan_from = nan_from

    def __call__(self):
        k = 0
        while True:
            if k == self.fail_at:
                raise _DataError(f"element {k}")
            self.reads += 1
            x = np.full((self.batch, 4), k, np.float32)
            label = np.nan if self.nan_from is not None and k >= self.nan_from else k
            yield x, np.full((self.batch, 1), label, np.float32)
            k += 1

    def dataset(self):
        spec = (tf.TensorSpec((self.batch, 4), tf.float32),
                tf.TensorSpec((self.batch, 1), tf.float32))
        return tf.data.Dataset.from_generator(self, output_signature=spec)


class _DataError(Exception):
    pass


def _error_of(fn):
    """The exception ``fn`` raises, or None."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 -- the reference exception, whatever it is
        return e
    return None


def _raises_like(reference):
    return pytest.raises(type(reference), match=re.escape(str(reference)))


# ---- the setters' own checks ---------------------------------------------------------------


@pytest.mark.parametrize("key", ["dataset", "infeed_spec", "element_spec"])
def test_infeed_keys_keras_sets_are_refused_at_once(ipus, key):
    ipus()
    with IPUStrategy().scope():
        model = _model()
        with pytest.raises(ValueError, match=f"^Found `{key}` key in `kwargs`. This argument "
                                             "is automatically set by Keras.$"):
            model.set_infeed_queue_options(**{key: None})
        with pytest.raises(ValueError, match="^Found `_internal_id` key in `kwargs`. This "
                                             "argument is not compatible with Keras.$"):
            model.set_infeed_queue_options(_internal_id="feed")
    assert model._ipu_options.infeed_kwargs == {}


@pytest.mark.parametrize("key", ["outfeed_mode", "device_ordinal"])
def test_outfeed_keys_keras_cannot_use_are_refused_at_once(ipus, key):
    from ipu_gpu.ipu.ipu_outfeed_queue import IPUOutfeedMode

    ipus()
    with IPUStrategy().scope():
        model = _model()
        with pytest.raises(ValueError, match=f"^Found `{key}` key in `kwargs`. This argument "
                                             "is not compatible with Keras.$"):
            model.set_outfeed_queue_options(**{key: IPUOutfeedMode.LAST if key == "outfeed_mode"
                                               else 0})
    assert model._ipu_options.outfeed_kwargs == {}


# ---- the constructors' checks, when fit starts feeding ---------------------------------------


class _Events(cbks.Callback):
    def __init__(self):
        super().__init__()
        self.events = []

    def on_train_begin(self, logs=None):
        self.events.append("train_begin")

    def on_epoch_begin(self, epoch, logs=None):
        self.events.append("epoch_begin")


# (options, the exception type Graphcore's SDK 3.4 constructor raises; None where it accepts
# them and the emulator's constructor decides: it is stricter, see feeds.py)
_INFEED_CASES = [
    ({"prefetch_depth": -1}, ValueError),
    ({"prefetch_depth": 256}, ValueError),
    ({"device_ordinal": -1}, ValueError),
    ({"prefetch_depth": 2.5}, None),
    ({"no_such_option": 1}, None),
]
_OUTFEED_CASES = [
    ({"buffer_depth": 0}, ValueError),
    ({"no_such_option": 1}, TypeError),
    ({"buffer_depth": "3"}, None),
]


def _check_when_fit_starts(model, reference, graphcore_type):
    """fit/evaluate/predict raise the constructor's exception after ``on_train_begin``,
    before anything runs; or run when the constructor accepts the options."""
    x, y = _arrays()
    before = model.get_weights()
    events = _Events()
    if reference is None:
        assert graphcore_type is None
        model.fit(x, y, batch_size=4, verbose=0, callbacks=[events])
        model.evaluate(x, y, batch_size=4, verbose=0)
        return
    if graphcore_type is not None:
        assert isinstance(reference, graphcore_type)
    with _raises_like(reference):
        model.fit(x, y, batch_size=4, verbose=0, callbacks=[events])
    assert events.events == ["train_begin"]  # as Graphcore's: the queues are made then
    with _raises_like(reference):
        model.evaluate(x, y, batch_size=4, verbose=0)
    with _raises_like(reference):
        model.predict(x, batch_size=4, verbose=0)
    for a, b in zip(model.get_weights(), before):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kwargs, graphcore_type", _INFEED_CASES,
                         ids=lambda k: "-".join(map(str, k.items())) if isinstance(k, dict)
                         else "")
def test_infeed_options_are_checked_by_the_queue_constructor_when_fit_starts(
        ipus, kwargs, graphcore_type):
    ipus()
    reference = _error_of(lambda: IPUInfeedQueue([np.zeros(1, np.float32)], **kwargs))
    with IPUStrategy().scope():
        model = _model()
        model.set_infeed_queue_options(**kwargs)  # accepted: the constructor checks later
        assert model._ipu_options.infeed_kwargs == kwargs
        _check_when_fit_starts(model, reference, graphcore_type)
        model.set_infeed_queue_options()  # the defaults again
        model.fit(*_arrays(), batch_size=4, verbose=0)


@pytest.mark.parametrize("kwargs, graphcore_type", _OUTFEED_CASES,
                         ids=lambda k: "-".join(map(str, k.items())) if isinstance(k, dict)
                         else "")
def test_outfeed_options_are_checked_by_the_queue_constructor_when_fit_starts(
        ipus, kwargs, graphcore_type):
    ipus()
    reference = _error_of(lambda: IPUOutfeedQueue(**kwargs))
    with IPUStrategy().scope():
        model = _model()
        model.set_outfeed_queue_options(**kwargs)
        assert model._ipu_options.outfeed_kwargs == kwargs
        _check_when_fit_starts(model, reference, graphcore_type)


def _warnings_of(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [(w.category, str(w.message)) for w in caught]


def test_infeed_option_warnings_come_when_fit_starts(ipus):
    ipus()
    x, y = _arrays()
    direct = _warnings_of(lambda: IPUInfeedQueue([np.zeros(1, np.float32)],
                                                 data_to_prefetch=2))
    with IPUStrategy().scope():
        model = _model()
        assert _warnings_of(lambda: model.set_infeed_queue_options(data_to_prefetch=2)) == []
        fitted = _warnings_of(lambda: model.fit(x, y, batch_size=4, verbose=0))
    assert all(w in fitted for w in direct)


def test_outfeed_options_change_nothing_the_host_sees(ipus):
    ipus()
    x, y = _arrays()
    with IPUStrategy().scope():
        plain = _model()
        h_plain = plain.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
        tuned = _model()
        tuned.set_outfeed_queue_options(buffer_depth=1, optimise_latency=True)
        h_tuned = tuned.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
        assert h_tuned.history == h_plain.history
        np.testing.assert_array_equal(tuned.predict(x, batch_size=4, verbose=0),
                                      plain.predict(x, batch_size=4, verbose=0))


# ---- prefetching -------------------------------------------------------------------------------


class _ReadsAtBatchEnd(cbks.Callback):
    def __init__(self, source):
        super().__init__()
        self.source = source
        self.seen = []

    def on_train_batch_end(self, batch, logs=None):
        self.seen.append((batch, self.source.reads))


@pytest.mark.parametrize("depth, replicas", [(None, 1), (1, 1), (5, 1), (2, 2), (7, 2)])
def test_the_source_is_read_prefetch_depth_ahead_of_the_device(ipus, depth, replicas):
    ipus(replicas)
    source = _Counted()
    with IPUStrategy().scope():
        model = _model()
        if depth is not None:
            model.set_infeed_queue_options(prefetch_depth=depth)
        seen = _ReadsAtBatchEnd(source)
        model.fit(source.dataset(), steps_per_epoch=4 * replicas, epochs=3, verbose=0,
                  callbacks=[seen])
    ahead = 3 if depth is None else depth  # IPUInfeedQueue's default depth
    # two steps an execution on every replica; the buffer carries over epochs
    consumed = [2 * replicas * (i + 1) for i in range(6)]
    assert seen.seen == [(b, c + ahead) for b, c in zip([1, 3] * 3, consumed)]
    assert source.reads == consumed[-1] + ahead


class _Recorder(layers.Layer):
    """Records the first feature of the batches it sees while training."""

    def __init__(self, seen, **kwargs):
        super().__init__(**kwargs)
        self.seen = seen

    def call(self, x, training=None):
        if training:
            self.seen.append(np.array(x)[:, 0].copy())
        return x


@pytest.mark.parametrize("depth", [1, 3, 8])
def test_no_element_is_dropped_or_repeated_across_executions_and_epochs(ipus, depth):
    ipus(2)
    seen = []
    ds = tf.data.Dataset.range(1000).map(
        lambda k: (tf.fill([2, 4], tf.cast(k, tf.float32)), tf.zeros([2, 1])))
    with IPUStrategy().scope():
        model = Sequential([_Recorder(seen, input_shape=(4,)), layers.Dense(1)])
        model.compile(optimizers.SGD(0.0), "mse", steps_per_execution=3)
        model.set_infeed_queue_options(prefetch_depth=depth)
        model.fit(ds, steps_per_epoch=6, epochs=3, verbose=0)
    # replica r takes element k*2 + r at its step k: 18 elements, each once, in order
    values = sorted(int(batch[0]) for batch in seen)
    assert values == list(range(18))


def test_each_epoch_of_a_recreated_iterator_starts_the_data_afresh(ipus):
    ipus()
    seen = []
    x = np.repeat(np.arange(8, dtype=np.float32)[:, None], 4, axis=1)
    with IPUStrategy().scope():
        model = Sequential([_Recorder(seen, input_shape=(4,)), layers.Dense(1)])
        model.compile(optimizers.SGD(0.0), "mse", steps_per_execution=2)
        model.set_infeed_queue_options(prefetch_depth=5)
        model.fit(x, np.zeros((8, 1), np.float32), batch_size=2, epochs=2, shuffle=False,
                  verbose=0)
    assert [batch.tolist() for batch in seen] == [[0, 1], [2, 3], [4, 5], [6, 7]] * 2


def _random_map_dataset():
    x, y = _arrays(n=64, seed=3)

    def noisy(a, b):
        return a + tf.random.uniform(tf.shape(a)), b

    return tf.data.Dataset.from_tensor_slices((x, y)).batch(4, drop_remainder=True).map(
        noisy).repeat()


def _lazy_model(record=None):
    """Built by the first execution: its initializers draw from the global generator then."""
    stack = [layers.Dense(8, activation="relu"), layers.Dropout(0.5), layers.Dense(1)]
    if record is not None:
        stack.insert(0, _Recorder(record))
    return Sequential(stack)


def _seeded_fit(depth, record=None):
    # Keras's own seed generator too: after any keras.utils.set_random_seed in the process
    # (an earlier test), unseeded initializers draw their seeds from it, as in tf-keras
    keras_utils.set_random_seed(11)
    utils.reset_ipu_seed(5)
    ds = _random_map_dataset()
    with IPUStrategy().scope():
        model = _lazy_model(record)
        model.compile(optimizers.SGD(0.01), losses.MeanSquaredError(), steps_per_execution=2)
        if depth is not None:
            model.set_infeed_queue_options(prefetch_depth=depth)
        history = model.fit(ds, steps_per_epoch=6, epochs=3, verbose=0)
        return history.history["loss"], model.get_weights()


def test_random_dataset_and_dropout_give_the_same_numbers_at_every_depth(ipus):
    ipus()
    loss_ref, weights_ref = _seeded_fit(None)
    assert len(set(loss_ref)) == 3
    for depth in (1, 2, 8):
        loss, weights = _seeded_fit(depth)
        assert loss == loss_ref
        for a, b in zip(weights, weights_ref):
            np.testing.assert_array_equal(a, b)


def test_the_device_sees_the_values_a_plain_synchronous_read_gives(ipus):
    """The host's draws come in the order of a synchronous loop: map's probe and the model's
    initializers (fit builds the model from the data's spec first), then the elements."""
    ipus()
    seen = []
    _, weights = _seeded_fit(8, record=seen)
    tf.random.set_seed(11)
    ds = _random_map_dataset()
    ds.element_spec  # noqa: B018
    model = _lazy_model()
    model.build((None, 4))
    elements = [x for (x, _), _ in zip(ds, range(18))]
    assert len(seen) == 18
    for a, x in zip(seen, elements):
        np.testing.assert_array_equal(a, np.asarray(x)[:, 0])


# ---- the reader stops however the loop ends --------------------------------------------------


def _feed_threads():
    return [t for t in threading.enumerate() if t.name.startswith("ipu_gpu-keras-infeed")]


class _StopAt(cbks.Callback):
    def __init__(self, batch, action):
        super().__init__()
        self.batch = batch
        self.action = action

    def on_train_batch_end(self, batch, logs=None):
        if batch >= self.batch:
            self.action(self.model)




def _interrupt(model):
    raise KeyboardInterrupt


def _stop(model):
    model.stop_training = True


@pytest.mark.parametrize("ending", ["complete", "stop_training", "early_stopping",
                                    "terminate_on_nan", "keyboard_interrupt", "data_error"])
def test_the_reader_thread_stops_however_fit_ends(ipus, ending):
    ipus()
    source = _Counted(fail_at=5 if ending == "data_error" else None,
                      nan_from=2 if ending == "terminate_on_nan" else None)
    ds = source.dataset()
    callbacks = []
    if ending == "stop_training":
        callbacks = [_StopAt(3, _stop)]
    elif ending == "early_stopping":
        callbacks = [cbks.EarlyStopping(monitor="loss", patience=0, min_delta=1e9)]
    elif ending == "keyboard_interrupt":
        callbacks = [_StopAt(3, _interrupt)]
    elif ending == "terminate_on_nan":
        callbacks = [cbks.TerminateOnNaN()]
    with IPUStrategy().scope():
        model = _model()
        model.evaluate(*_arrays(), batch_size=4, verbose=0)  # the device's threads start
        before = threading.active_count()
        model.set_infeed_queue_options(prefetch_depth=6)
        batches = []
        log = cbks.LambdaCallback(on_train_batch_end=lambda b, logs: batches.append(b))
        if ending == "keyboard_interrupt":
            with pytest.raises(KeyboardInterrupt):
                model.fit(ds, steps_per_epoch=8, epochs=4, verbose=0,
                          callbacks=[log, *callbacks])
        elif ending == "data_error":
            with pytest.raises(Exception, match="element 5"):
                model.fit(ds, steps_per_epoch=8, epochs=4, verbose=0,
                          callbacks=[log, *callbacks])
            assert batches == [1, 3]  # elements 0-3 trained, 4-5 were needed next
        else:  # validation runs its own infeed between the training executions
            model.fit(ds, steps_per_epoch=8, epochs=4, verbose=0, callbacks=[log, *callbacks],
                      validation_data=_Counted().dataset(), validation_steps=2)
        model.evaluate(_Counted().dataset(), steps=4, verbose=0)
        model.predict(_Counted().dataset(), steps=4, verbose=0)
    assert _feed_threads() == []
    assert threading.active_count() == before
    if ending == "complete":
        assert len(batches) == 16
    elif ending in ("stop_training", "keyboard_interrupt", "terminate_on_nan"):
        assert batches == [1, 3]  # the host stops after the execution of batches 2-3
        assert source.reads == 4 + 6  # the device took 4 elements, the reader 6 more
    elif ending == "early_stopping":
        assert batches == [1, 3, 5, 7] * 2  # no improvement in the second epoch
        assert source.reads == 16 + 6


# ---- a tutorial-style program through `ipu-gpu run` ------------------------------------------

_PROGRAM = '''\
import argparse

import numpy as np
import tensorflow as tf
from tensorflow import keras
from tensorflow.python import ipu

parser = argparse.ArgumentParser()
parser.add_argument("--prefetch-depth", type=int, default=None)
args = parser.parse_args()

cfg = ipu.config.IPUConfig()
cfg.auto_select_ipus = 1
cfg.configure_ipu_system()


def train(prefetch_depth):
    tf.random.set_seed(1)
    ipu.utils.reset_ipu_seed(1)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(256, 16)).astype(np.float32)
    y = (x.sum(axis=1) > 0).astype(np.int32)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(256, seed=2)
    ds = ds.batch(16, drop_remainder=True)
    ds = ds.map(lambda a, b: (a + 0.1 * tf.random.normal(tf.shape(a)), b)).repeat()

    strategy = ipu.ipu_strategy.IPUStrategy()
    with strategy.scope():
        model = keras.Sequential([
            keras.layers.Dense(32, activation="relu", input_shape=(16,)),
            keras.layers.Dropout(0.2),
            keras.layers.Dense(2, activation="softmax"),
        ])
        model.compile(loss="sparse_categorical_crossentropy",
                      optimizer=keras.optimizers.SGD(learning_rate=0.1),
                      metrics=["accuracy"], steps_per_execution=4)
        if prefetch_depth is not None:
            model.set_infeed_queue_options(prefetch_depth=prefetch_depth)
        model.set_outfeed_queue_options(buffer_depth=2)
        history = model.fit(ds, epochs=2, steps_per_epoch=16,
                            verbose=1 if prefetch_depth is not None else 0)
    return ",".join(repr(v) for v in history.history["loss"])


print("losses=" + train(args.prefetch_depth))
print("default_depth_losses=" + train(None))
'''


def test_a_tutorial_program_setting_the_prefetch_depth_runs_through_ipu_gpu_run(tmp_path):
    program = tmp_path / "keras_prefetch.py"
    program.write_text(_PROGRAM)
    env = {k: v for k, v in os.environ.items()
           if k not in ("IPU_GPU_BACKEND", "IPU_GPU_NUM_IPUS", "TF_POPLAR_FLAGS")}
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-m", "ipu_gpu.cli", "run", str(program),
                        "--prefetch-depth", "9"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Epoch 1/2\n")
    assert "16/16 [==============================] - " in r.stdout
    *_, deep, default = r.stdout.strip().splitlines()
    assert deep.startswith("losses=")
    first, last = (float(v) for v in deep[len("losses="):].split(","))
    assert last < first
    assert default == "default_depth_" + deep  # the same numbers at depth 9 and 3
