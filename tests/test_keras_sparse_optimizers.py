"""Sparse gradients (IndexedSlices) in ipu_gpu.keras.optimizers: Keras 2's
``_resource_apply_sparse`` arithmetic of every optimizer against tf-keras's
``optimizers.legacy`` (the same IndexedSlices, repeated and absent rows included, fed to both
sides for several steps: variables and slots agree bit for bit on this machine, checked to
float32 tolerance), against float64 numpy references, and an Embedding trained by ``fit``
over batches that leave rows out. TensorFlow is imported only through the ``real_tf``
fixture."""

from __future__ import annotations

import numpy as np
import pytest
from reference import indexed_slices as ref

import ipu_gpu
from ipu_gpu.keras import layers, losses, optimizers
from ipu_gpu.keras.engine.base_layer import KerasVariable
from ipu_gpu.keras.engine import ipu_execution
from ipu_gpu.keras.mixed_precision import LossScaleOptimizer
from ipu_gpu.keras.models import Sequential

RTOL, ATOL = 1e-6, 1e-7
ROWS, WIDTH = 6, 3


@pytest.fixture(scope="module")
def tf_keras(real_tf):
    return pytest.importorskip("tf_keras")


def _problem(seed=0, dtype=np.float32):
    """Initial weights and three steps of (values, indices): repeated rows, and rows 3 (all
    steps) and 5 (the later steps) absent."""
    rng = np.random.default_rng(seed)
    w0 = rng.standard_normal((ROWS, WIDTH)).astype(dtype)
    ids = [np.array([0, 2, 0, 5], np.int32), np.array([1, 2, 2], np.int32),
           np.array([4, 0], np.int32)]
    return w0, [(rng.standard_normal((len(i), WIDTH)).astype(dtype), i) for i in ids]


def _run(lib, opt, w0, steps):
    v = lib.Variable(w0)
    for values, indices in steps:
        g = lib.IndexedSlices(lib.constant(values), lib.constant(indices),
                              lib.constant([ROWS, WIDTH]))
        opt.apply_gradients([(g, v)])
    return v.numpy(), opt.get_weights()


CONFIGS = [
    ("SGD", {"learning_rate": 0.1}),
    ("SGD", {"learning_rate": 0.1, "momentum": 0.9}),
    ("SGD", {"learning_rate": 0.1, "momentum": 0.9, "nesterov": True}),
    ("RMSprop", {"learning_rate": 0.01}),
    ("RMSprop", {"learning_rate": 0.01, "centered": True}),
    ("RMSprop", {"learning_rate": 0.01, "momentum": 0.5}),
    ("RMSprop", {"learning_rate": 0.01, "momentum": 0.5, "centered": True, "rho": 0.8}),
    ("Adagrad", {"learning_rate": 0.1, "initial_accumulator_value": 0.5}),
    ("Adam", {"learning_rate": 0.01}),
    ("Adam", {"learning_rate": 0.01, "amsgrad": True, "beta_1": 0.5}),
    ("Adamax", {"learning_rate": 0.01}),
    ("Nadam", {"learning_rate": 0.01}),
    ("Adadelta", {"learning_rate": 1.0, "rho": 0.9}),
    ("SGD", {"learning_rate": 0.1, "momentum": 0.5, "clipnorm": 0.5}),
    ("Adam", {"learning_rate": 0.01, "global_clipnorm": 0.5}),
    ("RMSprop", {"learning_rate": 0.01, "clipvalue": 0.3}),
]


@pytest.mark.parametrize("name, kwargs", CONFIGS,
                         ids=[f"{n}-{'-'.join(k)}" for n, k in CONFIGS])
def test_sparse_updates_match_tf_keras(tf_keras, real_tf, name, kwargs):
    w0, steps = _problem()
    ours = _run(ipu_gpu, getattr(optimizers, name)(**kwargs), w0, steps)
    theirs = _run(real_tf, getattr(tf_keras.optimizers.legacy, name)(**kwargs), w0, steps)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=RTOL, atol=ATOL)
    assert len(ours[1]) == len(theirs[1])
    for a, b in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)


def test_sparse_updates_match_numpy():
    # hyperparameters live in float32 Variables (as Keras's): values float32 holds exactly
    w0, steps = _problem(dtype=np.float64)
    for nesterov in (False, True):
        ours, _ = _run(ipu_gpu, optimizers.SGD(0.125, momentum=0.75, nesterov=nesterov), w0,
                       steps)
        np.testing.assert_allclose(ours, ref.sgd_momentum(w0, steps, 0.125, 0.75, nesterov),
                                   rtol=1e-12)
        assert (ours[3] == w0[3]).all()  # never in a batch: never moved
    ours, _ = _run(ipu_gpu, optimizers.Adagrad(0.125, epsilon=1e-7), w0, steps)
    np.testing.assert_allclose(ours, ref.adagrad(w0, steps, 0.125, 0.1, 1e-7), rtol=1e-12)
    ours, _ = _run(ipu_gpu, optimizers.Adam(0.015625, beta_1=0.75, beta_2=0.875,
                                            epsilon=1e-7), w0, steps)
    np.testing.assert_allclose(ours, ref.adam(w0, steps, 0.015625, 0.75, 0.875, 1e-7),
                               rtol=1e-12)
    # Adam's sparse path moves every row by its decayed moments: row 5, in the first batch
    # only, moves in every step; row 3, never in one, has zero moments and stays
    one_step, _ = _run(ipu_gpu, optimizers.Adam(0.015625, beta_1=0.75, beta_2=0.875),
                       w0, steps[:1])
    assert (ours[5] != one_step[5]).all() and (ours[3] == w0[3]).all()


def test_repeated_indices_are_summed_first():
    w0, _ = _problem()
    values = np.ones((3, WIDTH), np.float32)
    repeated = [(values, np.array([1, 1, 4], np.int32))]
    summed = [(np.stack([2 * values[0], values[0]]), np.array([1, 4], np.int32))]
    a, _ = _run(ipu_gpu, optimizers.Adagrad(0.1), w0, repeated)
    b, _ = _run(ipu_gpu, optimizers.Adagrad(0.1), w0, summed)
    np.testing.assert_array_equal(a, b)


def test_sparse_gradient_and_a_constraint_is_an_error():
    v = KerasVariable(np.ones((3, 2), np.float32), constraint=lambda x: x)
    g = ipu_gpu.IndexedSlices(ipu_gpu.ones([1, 2]), ipu_gpu.constant([0]), [3, 2])
    with pytest.raises(RuntimeError, match="Cannot use a constraint function on a sparse"):
        optimizers.SGD(0.1).apply_gradients([(g, v)])
    with pytest.raises(ValueError, match="shape"):
        optimizers.SGD(0.1).apply_gradients(
            [(ipu_gpu.IndexedSlices(ipu_gpu.ones([1, 2]), ipu_gpu.constant([0]), [4, 2]),
              ipu_gpu.Variable(np.ones((3, 2), np.float32)))])


def test_loss_scale_optimizer_keeps_sparse_gradients():
    opt = LossScaleOptimizer(optimizers.SGD(0.1, momentum=0.9), initial_scale=8.0,
                             dynamic=True)
    v = ipu_gpu.Variable(np.ones((4, 2), np.float32))
    with ipu_gpu.GradientTape() as tape:
        loss = opt.get_scaled_loss(ipu_gpu.reduce_sum(ipu_gpu.gather(v, [1, 1, 2])))
    (g,) = tape.gradient(loss, [v])
    assert isinstance(g, ipu_gpu.IndexedSlices)
    (unscaled,) = opt.get_unscaled_gradients([g])
    assert isinstance(unscaled, ipu_gpu.IndexedSlices)
    np.testing.assert_array_equal(unscaled.values.numpy(), np.ones((3, 2)))
    opt.apply_gradients([(unscaled, v)])
    np.testing.assert_allclose(v.numpy()[[0, 3]], 1.0)  # rows not in the batch keep still
    np.testing.assert_allclose(v.numpy()[1], 1.0 - 0.2)


def test_gradient_accumulation_densifies():
    g = ipu_gpu.IndexedSlices(ipu_gpu.ones([2, 2]), ipu_gpu.constant([0, 0]), [3, 2])
    method = ipu_execution.GradientAccumulationReductionMethod.SUM
    (acc,) = ipu_execution._accumulate(None, [g], 0, 2, method)
    (acc,) = ipu_execution._accumulate([acc], [g], 1, 2, method)
    np.testing.assert_array_equal(acc.numpy(), [[4.0, 4.0], [0.0, 0.0], [0.0, 0.0]])


# ---- an Embedding trained by fit over batches that leave rows out ---------------------------
VOCAB = 12


def _model(lib):
    L = lib.layers
    return lib.Sequential([L.Embedding(VOCAB, 4, input_length=5), L.GlobalAveragePooling1D(),
                           L.Dense(3)])


class _Ours:
    layers = layers
    Sequential = Sequential


FIT_CONFIGS = [("SGD", {"learning_rate": 0.5, "momentum": 0.9}),
               ("SGD", {"learning_rate": 0.5}),
               ("RMSprop", {"learning_rate": 0.01, "momentum": 0.5}),
               ("RMSprop", {"learning_rate": 0.01}),
               ("Adagrad", {"learning_rate": 0.1}), ("Adam", {"learning_rate": 0.01}),
               ("Adamax", {"learning_rate": 0.01}), ("Nadam", {"learning_rate": 0.01}),
               ("Adadelta", {"learning_rate": 1.0})]


@pytest.mark.parametrize("name, kwargs", FIT_CONFIGS,
                         ids=[f"{n}-{'-'.join(k)}" for n, k in FIT_CONFIGS])
def test_embedding_fit_matches_tf_keras(tf_keras, name, kwargs):
    rng = np.random.default_rng(7)
    x = rng.integers(0, VOCAB - 2, size=(24, 5)).astype("int32")  # the last two ids: never
    x[8:16][x[8:16] == 3] = 4  # id 3 absent from the second batch
    y = rng.integers(0, 3, size=(24,))
    ours, theirs = _model(_Ours), _model(tf_keras)
    theirs.set_weights(ours.get_weights())
    ours.compile(getattr(optimizers, name)(**kwargs),
                 losses.SparseCategoricalCrossentropy(from_logits=True))
    theirs.compile(getattr(tf_keras.optimizers.legacy, name)(**kwargs),
                   tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    fit = dict(batch_size=8, epochs=2, shuffle=False, verbose=0)
    h_ours, h_theirs = ours.fit(x, y, **fit), theirs.fit(x, y, **fit)
    np.testing.assert_allclose(h_ours.history["loss"], h_theirs.history["loss"], rtol=1e-5,
                               atol=1e-6)
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    for a, b in zip(ours.optimizer.get_weights(), theirs.optimizer.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
