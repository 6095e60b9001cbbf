"""Training oracles: small recurrent, convolutional and BatchNormalization models built the
same way in ipu_gpu's Keras and in tf_keras (Keras 2), started from the same weights and
trained on the same data in the same order (fixed batch size, ``shuffle=False``) with SGD
(momentum 0.9) and Adam, give the same per-epoch losses (History), the same final weights
(BatchNormalization's moving mean and variance included) and the same inference outputs.

tf_keras's ``optimizers.legacy`` classes are the oracle for the optimizer arithmetic (as in
test_keras_optimizers.py). TensorFlow is imported only through the ``real_tf`` fixture.

Tolerances are float32 ones, per model in ``CASES`` with the reason beside each. Measured on
x86-64 (numpy backend, OpenBLAS): History losses differ by at most 1.2e-7 and weights by at
most 4.8e-7 absolute (a BatchNormalization moving variance of magnitude 4.7, i.e. a few ulps);
the bounds leave about a hundredfold margin for other BLAS builds and summation orders.

Two things the models avoid on purpose, each with a test or a note of its own:
  * a bias right before a BatchNormalization: its gradient is zero but for rounding (the batch
    mean takes the bias out), and Adam divides that rounding by its own root mean square, so
    the bias takes steps of about the learning rate in a direction that only summation order
    decides; both libraries are right and disagree. Such layers have ``use_bias=False``, as
    is usual before a batch normalization.
  * an embedding row missing from a batch: TF hands the Embedding's gradient to the optimizer
    as IndexedSlices, and the legacy SGD's sparse momentum update touches only the rows in
    the batch. ipu_gpu does the same (``test_sparse_momentum_rows_absent_from_a_batch``;
    every optimizer's sparse path: test_keras_sparse_optimizers.py); ``_sequence_data`` puts
    every id in every batch unless asked not to.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import ipu_gpu
from ipu_gpu.keras import layers, losses, optimizers
from ipu_gpu.keras.models import Sequential


@pytest.fixture(scope="module")
def K(real_tf):
    """tf_keras, imported after the real_tf fixture has configured TensorFlow."""
    return pytest.importorskip("tf_keras")


class _Ours:
    layers = layers
    losses = losses
    Sequential = Sequential


def _optimizer(lib_optimizers, name):
    if name == "sgd":
        return lib_optimizers.SGD(learning_rate=0.05, momentum=0.9)
    return lib_optimizers.Adam(learning_rate=0.01)


def _our_optimizer(name):
    return _optimizer(optimizers, name)


def _keras_optimizer(K, name):
    return _optimizer(K.optimizers.legacy, name)


# ---- the models -------------------------------------------------------------------------------
VOCAB, TIME = 20, 7


def _lstm(lib):
    L = lib.layers
    return lib.Sequential([L.Embedding(VOCAB, 6, mask_zero=False, input_length=TIME),
                           L.LSTM(8), L.Dense(3)])


def _gru(lib):
    L = lib.layers
    return lib.Sequential([L.Embedding(VOCAB, 6, input_length=TIME),
                           L.GRU(8, reset_after=True), L.Dense(3)])


def _conv_bn(lib):
    L = lib.layers
    return lib.Sequential([
        L.Conv2D(4, 3, padding="same", use_bias=False, input_shape=(8, 8, 2)),
        L.BatchNormalization(),
        L.Activation("relu"),
        L.MaxPooling2D(2),
        L.Conv2D(6, 3, use_bias=False),
        L.BatchNormalization(momentum=0.9),
        L.Activation("relu"),
        L.GlobalAveragePooling2D(),
        L.Dense(3),
    ])


def _mlp_bn(lib):
    L = lib.layers
    return lib.Sequential([
        L.Dense(16, use_bias=False, input_shape=(10,)),
        L.BatchNormalization(momentum=0.9),
        L.Activation("relu"),
        L.Dense(12, use_bias=False),
        L.BatchNormalization(momentum=0.8, epsilon=1e-2),
        L.Activation("tanh"),
        L.Dense(3),
    ])


def _sequence_data(n=48, classes=3, seed=0, batch_size=16, every_id_in_every_batch=True):
    """Random ids; by default each batch of ``batch_size`` holds every id at least once (see
    ``test_sparse_momentum_rows_absent_from_a_batch`` for why)."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, VOCAB, size=(n, TIME)).astype("int32")
    if every_id_in_every_batch:
        for start in range(0, n, batch_size):
            flat = x[start:start + batch_size].reshape(-1)  # a view of the batch
            flat[rng.choice(flat.size, VOCAB, replace=False)] = rng.permutation(VOCAB)
    y = rng.integers(0, classes, size=(n,))
    return x, y


def _image_data(n=32, classes=3, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 8, 8, 2)).astype("float32")
    y = rng.integers(0, classes, size=(n,))
    return x, y


def _vector_data(n=64, classes=3, seed=2):
    rng = np.random.default_rng(seed)
    x = (rng.normal(size=(n, 10)) * 2 + 0.5).astype("float32")
    y = rng.integers(0, classes, size=(n,))
    return x, y


# (builder, data, batch size, epochs, rtol, atol)
CASES = {
    # 7 recurrent steps of float32 gate arithmetic a batch, 9 batches: ipu_gpu projects every
    # timestep's input with one matmul (Keras's fused path does the same) and its matmuls sum
    # in another order than Eigen's, so values differ by ulps that the recurrence carries
    # along (measured: 1.6e-7 absolute at most). rtol 1e-5 / atol 1e-6.
    "lstm": (_lstm, _sequence_data, 16, 3, 1e-5, 1e-6),
    "gru": (_gru, _sequence_data, 16, 3, 1e-5, 1e-6),
    # Convolutions summed in another order, then divided by batch standard deviations (about
    # 0.3..1): measured 3.6e-7 absolute at most. rtol 1e-5 / atol 1e-6.
    "conv_bn": (_conv_bn, _image_data, 8, 2, 1e-5, 1e-6),
    # Moving variances up to ~5 (inputs scaled by 2) carry ulps of that size: measured 4.8e-7
    # absolute, 1e-7 relative. rtol 1e-5 / atol 1e-6.
    "mlp_bn": (_mlp_bn, _vector_data, 16, 3, 1e-5, 1e-6),
}


def _close(a, b, rtol, atol, what):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                               rtol=rtol, atol=atol, err_msg=what)


def _fit_both(K, build, x, y, opt, batch_size, epochs):
    """(ours, theirs, our History, their History) after the same fit from the same weights."""
    ours, theirs = build(_Ours), build(K)
    assert [w.shape for w in ours.get_weights()] == [w.shape for w in theirs.get_weights()]
    theirs.set_weights(ours.get_weights())
    ours.compile(_our_optimizer(opt), losses.SparseCategoricalCrossentropy(from_logits=True))
    theirs.compile(_keras_optimizer(K, opt),
                   K.losses.SparseCategoricalCrossentropy(from_logits=True))
    kwargs = dict(batch_size=batch_size, epochs=epochs, shuffle=False, verbose=0)
    return ours, theirs, ours.fit(x, y, **kwargs), theirs.fit(x, y, **kwargs)


@pytest.mark.parametrize("opt", ["sgd", "adam"])
@pytest.mark.parametrize("model", list(CASES))
def test_training_matches_tf_keras(K, model, opt):
    build, data, batch_size, epochs, rtol, atol = CASES[model]
    x, y = data()
    ours, theirs, h_ours, h_theirs = _fit_both(K, build, x, y, opt, batch_size, epochs)
    assert h_ours.epoch == h_theirs.epoch == list(range(epochs))
    assert list(h_ours.history) == list(h_theirs.history) == ["loss"]
    _close(h_ours.history["loss"], h_theirs.history["loss"], rtol, atol, "History losses")
    names = [w.name for w in theirs.weights]
    for name, a, b in zip(names, ours.get_weights(), theirs.get_weights()):
        _close(a, b, rtol, atol, name)
    _close(ours.predict(x, verbose=0), theirs.predict(x, verbose=0), rtol, atol,
           "inference outputs")


def test_sparse_momentum_rows_absent_from_a_batch(K):
    """TF gives the Embedding's gradient as IndexedSlices and the legacy SGD moves the rows
    in the batch only: a row missing from a batch keeps its weights and its momentum."""
    x, y = _sequence_data(every_id_in_every_batch=False)  # id 3 is missing from batch 3
    assert 3 not in x[32:48] and all(3 in x[i:i + 16] for i in (0, 16))
    ours, theirs, _, _ = _fit_both(K, _lstm, x, y, "sgd", 16, 3)
    _close(ours.get_weights()[0], theirs.get_weights()[0], 1e-5, 1e-6, "embeddings")


@pytest.mark.parametrize("kwargs, dtype", [
    (dict(axis=2), "float32"),  # a 4-D input normalised over an axis the fused kernel lacks
    (dict(axis=[1, 3]), "float32"),  # several axes
    (dict(), "float64"),  # the fused kernel has no float64
])
def test_batch_normalization_falls_back_from_fused_as_keras(K, kwargs, dtype):
    """Keras 2 decides at construction that ``fused=None`` means the plain (unfused) path for
    what the fused kernel cannot do, so such a layer builds on 4-D inputs and moves its
    variance by the biased batch variance (the fused kernel's is Bessel-corrected)."""
    x = np.random.default_rng(4).normal(1.0, 2.0, size=(4, 3, 5, 2)).astype(dtype)
    ours = layers.BatchNormalization(momentum=0.5, dtype=dtype, **kwargs)
    theirs = K.layers.BatchNormalization(momentum=0.5, dtype=dtype, **kwargs)
    assert ours.fused is theirs.fused is False
    _close(ours(ipu_gpu.constant(x), training=True), theirs(x, training=True), 1e-6, 1e-6,
           "training outputs")
    assert ours.fused is theirs.fused is False
    for weight, a, b in zip(theirs.weights, ours.get_weights(), theirs.get_weights()):
        _close(a, b, 1e-6, 1e-7, weight.name)
    _close(ours(ipu_gpu.constant(x), training=False), theirs(x, training=False), 1e-6, 1e-6,
           "inference outputs")


def test_batch_normalization_fused_checks_as_keras(K):
    for kwargs in (dict(axis=2, fused=True), dict(axis=[1, 3], fused=True),
                   dict(fused=True, dtype="float64")):
        with pytest.raises(ValueError) as theirs:
            K.layers.BatchNormalization(**kwargs)
        with pytest.raises(ValueError, match=r"^Passing `fused=True` is only supported") as ours:
            layers.BatchNormalization(**kwargs)
        # tf_keras shows a list axis through its attribute tracking, as ListWrapper([1, 3])
        assert str(ours.value) == re.sub(r"ListWrapper\((.*)\)", r"\1", str(theirs.value))
    for axis in (1, 3, -1, -3):
        assert layers.BatchNormalization(axis=axis).fused is None  # decided by the input rank


def test_batch_normalization_fused_ignores_a_mask_with_a_warning(K):
    x = np.random.default_rng(5).normal(size=(4, 3, 3, 2)).astype("float32")
    mask = np.ones((4, 3, 3), bool)
    mask[0] = False
    ours, theirs = layers.BatchNormalization(), K.layers.BatchNormalization()
    message = "Masking is not supported with `fused=True`"
    with pytest.warns(UserWarning, match=message):
        out = ours(ipu_gpu.constant(x), training=True, mask=ipu_gpu.constant(mask))
    with pytest.warns(UserWarning, match=message):
        expected = theirs(x, training=True, mask=mask)
    _close(out, expected, 1e-6, 1e-6, "outputs (the mask ignored)")
