"""The report's Keras loss curve: the mean loss of each ``fit`` execution's own steps, derived
from Keras's running epoch means, equals the mean of that execution's per-step losses (a
model with a zero learning rate, so every step's loss is numpy's), across epochs and with
replication (Graphcore's default metric reduction shows the last replica's metrics, MEAN the
replicas' mean); the epoch means stay the summary's final loss."""

from __future__ import annotations

import numpy as np
import pytest

from ipu_gpu import keras
from ipu_gpu import data as tf_data
from ipu_gpu.emulation import observe
from ipu_gpu.ipu import config, ipu_strategy
from ipu_gpu.report import Recorder, summary

pytestmark = pytest.mark.usefixtures("fresh_ipu_system")

BATCH = 2
BATCHES = 24


def _data():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((BATCHES * BATCH, 3)).astype(np.float32)
    # targets drifting with the batch index: each step's loss differs a lot from the last
    y = (np.repeat(np.arange(BATCHES, dtype=np.float32), BATCH) * 0.5)[:, None]
    return x, y


def _step_losses(x, y, w, b):
    pred = x.astype(np.float64) @ w + b
    per_sample = ((pred - y) ** 2).mean(axis=1)
    return per_sample.reshape(BATCHES, BATCH).mean(axis=1)


@pytest.mark.parametrize("ipus,spe,reduction", [
    (1, 4, "NONE"), (2, 4, "NONE"), (2, 6, "NONE"), (2, 4, "MEAN"), (4, 3, "MEAN")])
def test_execution_means_equal_the_steps_losses(ipus, spe, reduction):
    cfg = config.IPUConfig()
    cfg.auto_select_ipus = ipus
    cfg.configure_ipu_system()
    x, y = _data()
    w = np.array([[0.5], [-1.0], [2.0]], np.float32)
    rec = Recorder()
    observe.install(rec)
    try:
        strategy = ipu_strategy.IPUStrategy()
        with strategy.scope():
            model = keras.Sequential([keras.layers.Dense(
                1, kernel_initializer=keras.initializers.Constant(w),
                bias_initializer=keras.initializers.Constant(0.25))])
            model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.0), loss="mse",
                          steps_per_execution=spe)
            model.set_replication_options(replicated_metric_reduction_method=reduction)
            ds = tf_data.Dataset.from_tensor_slices((x, y)).batch(BATCH, drop_remainder=True)
            history = model.fit(ds, epochs=2, verbose=0)
    finally:
        observe.uninstall()
    assert rec.errors == []
    per_step = _step_losses(x, y, w.astype(np.float64), 0.25)
    # the batches each execution took, in the dataset's order, epoch after epoch
    chunks = [n // BATCH for _, n, _ in rec.samples]
    assert sum(chunks) == 2 * BATCHES and len(chunks) == len(rec.execution_losses) > 2
    bounds = np.cumsum([0] + chunks) % BATCHES
    # replica r of a step takes batch step * ipus + r; NONE shows the last replica's
    first = ipus - 1 if reduction == "NONE" else 0
    stride = ipus if reduction == "NONE" else 1
    expected = [per_step[a + first:(b or BATCHES):stride].mean()
                for a, b in zip(bounds[:-1], bounds[1:])]
    got = [p[2] for p in rec.execution_losses]
    np.testing.assert_allclose(got, expected, rtol=2e-6)
    assert [p[0] for p in rec.execution_losses] == [p[0] for p in rec.losses]
    # the running means are not the per-execution means (the curve is not a staircase)
    assert not np.allclose([p[2] for p in rec.losses], expected, rtol=1e-3)
    # the epoch's last running mean is the epoch's mean, as Keras reports it
    np.testing.assert_allclose(history.history["loss"], [per_step[first::stride].mean()] * 2,
                               rtol=2e-6)
    built = summary.build(rec, {"program": "p", "args": [], "exit_status": 0,
                                "wall_seconds": 1.0, "backend": "cpu", "ipus": ipus,
                                "tf_version": "2"}, [])
    assert built["loss"]["final"] == rec.losses[-1][2]
    assert built["series"]["execution_loss"] == [list(p) for p in rec.execution_losses]


def test_counted_on_without_the_first_step():
    rec = Recorder()
    for mean in (4.0, 3.0, 2.5):  # running means of executions of 2 steps each
        rec.keras_execution({"loss": np.float32(mean)}, 2, None)
    np.testing.assert_allclose([p[2] for p in rec.execution_losses], [4.0, 2.0, 1.5])
    rec.keras_execution({"loss": np.float32(7.0)}, 2, None, 0)  # a new epoch
    assert rec.execution_losses[-1][2] == 7.0
