"""``model.fit`` time per epoch: ipu_gpu's Keras against real tf-keras on TensorFlow's CPU
kernels with TensorFlow's default settings (issue 16's speed part).

Models, on MNIST-shaped synthetic float32 data with int32 labels (the same arrays for both):
* ``mlp``: Dense 512 relu, Dense 512 relu, Dense 10 (logits) on 784 features, 2048 samples;
* ``cnn``: Conv2D 32 3x3 relu, MaxPooling2D, Conv2D 64 3x3 relu, MaxPooling2D, Flatten,
  Dense 10 (logits) on 28x28x1 images, 1024 samples (its epochs cost more arithmetic).

Both are compiled with ``SparseCategoricalCrossentropy(from_logits=True)`` and the default
optimizer of each library's ``keras.optimizers`` (``Adam()``; ``SGD(0.01, momentum=0.9)``),
and start from the same weights (ours copied into tf-keras's model). One timed call is one
epoch, ``fit(x, y, batch_size=B, epochs=1, verbose=0)`` (shuffled), on a model already fitted
once, so compile, tracing and JIT are outside the timing. ipu_gpu's row interleaves tf-keras
in blocks (``paired``), so the ratio does not depend on load drifting between rows.

Groups ``keras_fit-b<batch>-<model>-<optimizer>``; targets (bench/report.py): at most 1.0x
tf-keras's time at batch 256, 1.5x at batch 32.

Where the CNN's epoch goes (per-op CPU time on one thread, batch 256, 2-core AMD EPYC): the
convolutions 85% (backward 54%, forward 31%; the second layer's 3x3 32->64 tap GEMMs most of
it), max pooling 10%, everything else (dense layer, loss, the one-pass Adam update, tape and
Keras bookkeeping) under 5%. Conv2D runs as one op, ``ops.conv.conv2d_bias``: bias and relu
applied to each block of the convolution's output in cache, their gradients in one parallel
pass (they were 8% of the epoch as separate serial ops); the first layer (3x3 on one channel)
runs direct loops instead of a GEMM with an inner dimension of 9. Together these cut an
epoch's single-thread CPU time by about a fifth.
"""

from __future__ import annotations

import numpy as np
import pytest
from benchutil import impl_params, paired_with, require, rng

import ipu_gpu.keras

IMPLS = impl_params(cpu=("ipu_gpu", "tensorflow"), gpu=())
SAMPLES = {"mlp": 2048, "cnn": 1024}
CASES = [("mlp", 32, "adam"), ("mlp", 256, "adam"), ("mlp", 32, "sgd"), ("mlp", 256, "sgd"),
         ("cnn", 32, "adam"), ("cnn", 256, "adam")]


def _keras(impl):
    if impl == "ipu_gpu":
        return ipu_gpu.keras
    require("tensorflow")  # peers() imported TensorFlow with the bench's thread settings
    return pytest.importorskip("tf_keras")


def _data(model):
    g = rng(16)
    n = SAMPLES[model]
    shape = (n, 784) if model == "mlp" else (n, 28, 28, 1)
    x = g.standard_normal(shape, dtype=np.float32)
    y = g.integers(0, 10, n).astype(np.int32)
    return x, y


def _model(keras, model, optimizer, weights=None):
    layers = keras.layers
    if model == "mlp":
        net = keras.Sequential([layers.Dense(512, activation="relu", input_shape=(784,)),
                                layers.Dense(512, activation="relu"), layers.Dense(10)])
    else:
        net = keras.Sequential([
            layers.Conv2D(32, 3, activation="relu", input_shape=(28, 28, 1)),
            layers.MaxPooling2D(), layers.Conv2D(64, 3, activation="relu"),
            layers.MaxPooling2D(), layers.Flatten(), layers.Dense(10)])
    if weights is not None:
        net.set_weights(weights)
    opt = (keras.optimizers.Adam() if optimizer == "adam"
           else keras.optimizers.SGD(0.01, momentum=0.9))
    net.compile(optimizer=opt,
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return net


def _epoch(impl, model, batch, optimizer, x, y, weights):
    net = _model(_keras(impl), model, optimizer, weights)

    def epoch():
        return net.fit(x, y, batch_size=batch, epochs=1, verbose=0)
    return epoch


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("model,batch,optimizer", [
    pytest.param(m, b, o, marks=pytest.mark.benchmark(group=f"keras_fit-b{b}-{m}-{o}"))
    for m, b, o in CASES])
def test_keras_fit_epoch(run, ipu_backend, model, batch, optimizer, impl):
    x, y = _data(model)
    weights = _model(ipu_gpu.keras, model, optimizer).get_weights()  # both start from these
    epoch = _epoch(impl, model, batch, optimizer, x, y, weights)
    loss = epoch().history["loss"]
    assert len(loss) == 1 and np.isfinite(loss[0]) and 0.0 < loss[0] < 10.0, loss
    paired = paired_with(impl, lambda peer: _epoch(peer, model, batch, optimizer, x, y,
                                                   weights), peer="tensorflow")
    run(epoch, impl=impl, paired=paired, warmup=1,
        sizes={"model": model, "samples": SAMPLES[model], "batch": batch,
               "steps_per_epoch": -(-SAMPLES[model] // batch), "optimizer": optimizer,
               "dtype": "float32"})
