"""``keras.backend``'s layer building blocks (issue 16): ``rnn`` (masking, go_backwards,
zero_output_for_mask, return_all_outputs, constants; values and gradients), ``local_conv1d``,
``local_conv2d``, ``separable_conv2d``, the focal cross-entropies, ``function``,
``placeholder`` and ``to_dense``, against tf-keras on seeded inputs and numpy float64."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
from ipu_gpu import keras
from ipu_gpu.keras import backend as K


@pytest.fixture(scope="module")
def tfk(real_tf):
    return pytest.importorskip("tf_keras")


def _f(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


_RNN = [dict(), dict(go_backwards=True), dict(mask=True), dict(mask=True, go_backwards=True),
        dict(mask=True, zero_output_for_mask=True), dict(return_all_outputs=False),
        dict(mask=True, zero_output_for_mask=True, return_all_outputs=False),
        dict(constants=True), dict(time_major=True)]


@pytest.mark.parametrize("i", range(len(_RNN)), ids=[",".join(c) or "plain" for c in _RNN])
def test_rnn_matches_tf_keras(tfk, real_tf, i):
    tf = real_tf
    options = dict(_RNN[i])
    x, w, u = _f(3, 5, 4), _f(4, 2, seed=1) * 0.5, _f(2, 2, seed=2) * 0.5
    h0, c = _f(3, 2, seed=3), _f(3, 2, seed=4)
    mask = np.array([[1, 1, 0, 1, 0], [1, 0, 0, 1, 1], [0, 1, 1, 1, 1]], bool)
    results = []
    for lib, bk in ((ig, K), (tf, tfk.backend)):
        xs, ws, hs = lib.constant(x), lib.constant(w), lib.constant(h0)
        kwargs = {k: v for k, v in options.items() if k not in ("mask", "constants")}
        if options.get("mask"):
            kwargs["mask"] = lib.constant(mask.T if options.get("time_major") else mask)
        if options.get("constants"):
            kwargs["constants"] = [lib.constant(c)]

        def step(x_t, states, lib=lib, ws=ws):
            h = lib.tanh(lib.matmul(x_t, ws) + lib.matmul(states[0], lib.constant(u)))
            if len(states) > 1:
                h = h + states[1]
            return h * 2.0, [h]
        with lib.GradientTape() as tape:
            tape.watch([xs, ws, hs])
            xs_in = lib.transpose(xs, [1, 0, 2]) if options.get("time_major") else xs
            last, outs, states = bk.rnn(step, xs_in, [hs], **kwargs)
            loss = (lib.reduce_sum(last * 1.5) + lib.reduce_sum(outs * outs)
                    + lib.reduce_sum(states[0] * 3.0))
        grads = tape.gradient(loss, [xs, ws, hs])
        results.append((last.numpy(), outs.numpy(), states[0].numpy(),
                        [g.numpy() for g in grads]))
    (l1, o1, s1, g1), (l2, o2, s2, g2) = results
    assert o1.shape == o2.shape
    for a, b in [(l1, l2), (o1, o2), (s1, s2), *zip(g1, g2)]:
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_rnn_against_a_numpy_loop():
    x, w = _f(2, 4, 3).astype(np.float64), _f(3, 3, seed=1).astype(np.float64)
    mask = np.array([[1, 0, 1, 1], [1, 1, 0, 0]], bool)
    last, outs, (h,) = K.rnn(lambda x_t, s: (ig.matmul(x_t, w) + s[0],) * 2, x,
                             [np.zeros((2, 3))], mask=mask)
    want_h, want_out = np.zeros((2, 3)), []
    for t in range(4):
        new = x[:, t] @ w + want_h
        want_h = np.where(mask[:, t:t + 1], new, want_h)
        want_out.append(want_h)
    np.testing.assert_allclose(outs.numpy(), np.stack(want_out, 1))
    np.testing.assert_allclose(h.numpy(), want_h)
    np.testing.assert_allclose(last.numpy(), want_h)


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_local_convs_and_separable_conv_match_tf_keras(tfk, real_tf, data_format):
    tf = real_tf
    first = data_format == "channels_first"
    x1 = _f(2, 3, 7) if first else _f(2, 7, 3)
    k1 = _f(3, 2 * 3, 4, seed=1)  # output length 3: kernel 2, stride 2 over 7 steps
    x2 = _f(2, 3, 5, 6) if first else _f(2, 5, 6, 3)
    k2 = _f(2 * 3, 3 * 2 * 3, 4, seed=2)  # (2, 3) outputs of a 3x2 kernel, strides (1, 2)
    cases = [
        ("local_conv1d", (x1, k1, (2,), (2,)), {"data_format": data_format}),
        ("local_conv2d", (x2, k2, (3, 2), (1, 2), (2, 3)), {"data_format": data_format}),
    ]
    if not first:  # TF's CPU depthwise convolution is NHWC only
        cases.append(("separable_conv2d", (x2, _f(2, 2, 3, 2, seed=3), _f(1, 1, 6, 5, seed=4)),
                      {"strides": (2, 2), "padding": "same"}))
    for name, args, kwargs in cases:
        results = []
        for lib, bk in ((ig, K), (tf, tfk.backend)):
            ts = [lib.constant(a) if isinstance(a, np.ndarray) else a for a in args]
            with lib.GradientTape() as tape:
                for t in ts[:2]:
                    tape.watch(t)
                y = getattr(bk, name)(*ts, **kwargs)
                loss = lib.reduce_sum(y * y)
            results.append((y.numpy(), [g.numpy() for g in tape.gradient(loss, ts[:2])]))
        (y1, g1), (y2, g2) = results
        np.testing.assert_allclose(y1, y2, rtol=1e-5, atol=1e-5)
        for a, b in zip(g1, g2):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-4)


def test_focal_crossentropies_match_tf_keras(tfk, real_tf):
    tf = real_tf
    t = (np.random.default_rng(0).random((4, 3)) > 0.5).astype(np.float32)
    logits = _f(4, 3, seed=1) * 2
    probs = 1 / (1 + np.exp(-logits))
    onehot = np.eye(3, dtype=np.float32)[[0, 2, 1, 1]]
    cases = [("binary_focal_crossentropy", (t, probs), {}),
             ("binary_focal_crossentropy", (t, logits), {"from_logits": True,
                                                         "apply_class_balancing": True}),
             ("categorical_focal_crossentropy", (onehot, np.abs(logits) + 0.1), {}),
             ("categorical_focal_crossentropy", (onehot, logits), {"from_logits": True,
                                                                   "gamma": 1.5})]
    for name, (target, output), kwargs in cases:
        results = []
        for lib, bk in ((ig, K), (tf, tfk.backend)):
            o = lib.constant(output)
            with lib.GradientTape() as tape:
                tape.watch(o)
                y = getattr(bk, name)(lib.constant(target), o, **kwargs)
                loss = lib.reduce_sum(y)
            results.append((y.numpy(), tape.gradient(loss, o).numpy()))
        np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-4, atol=1e-6)
    p = np.clip(probs.astype(np.float64), 1e-7, 1 - 1e-7)
    p_t = t * p + (1 - t) * (1 - p)
    bce = -(t * np.log(p + 1e-7) + (1 - t) * np.log(1 - p + 1e-7))
    np.testing.assert_allclose(K.binary_focal_crossentropy(t, probs).numpy(),
                               (1 - t * probs - (1 - t) * (1 - probs)) ** 2 * bce, rtol=1e-4)
    del p_t
    with pytest.raises(ValueError):
        K.categorical_focal_crossentropy(onehot, logits[:, :2])


def test_function_placeholder_and_to_dense(tfk):
    x = K.placeholder(shape=(None, 3))
    assert K.is_keras_tensor(x) and x.shape.as_list() == [None, 3]
    assert K.placeholder(ndim=2).shape.as_list() == [None, None]
    with pytest.raises(ValueError) as theirs:
        tfk.backend.placeholder((None, 3), sparse=True, ragged=True)
    with pytest.raises(ValueError) as ours:
        K.placeholder((None, 3), sparse=True, ragged=True)
    assert str(ours.value) == str(theirs.value)
    y = keras.layers.Dense(2, kernel_initializer="ones")(x)
    f = K.function([x], [y])
    out = f(np.ones((4, 3), np.float32))
    assert isinstance(out, list) and out[0].shape == (4, 2)
    np.testing.assert_array_equal(out[0], np.full((4, 2), 3.0))
    g = K.function(x, y)
    np.testing.assert_array_equal(g(np.ones((1, 3), np.float32)), [[3.0, 3.0]])
    for bad in ({"updates": [1]}, {"feed_dict": {}}):
        with pytest.raises(ValueError):
            K.function([x], [y], **bad)
    sp = ig.sparse.SparseTensor([[0, 1], [1, 0]], [5.0, 6.0], [2, 2])
    np.testing.assert_array_equal(K.to_dense(sp).numpy(), [[0, 5], [6, 0]])
    t = ig.constant([1.0])
    assert K.to_dense(t) is t
