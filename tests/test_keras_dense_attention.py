"""``Attention`` and ``AdditiveAttention`` (issue 16) against tf-keras: values, attention
scores and gradients with shared weights, query/value masks, causal masks, key inputs, the
concat score mode, configs and call-argument errors; and a float64 numpy reference."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
from ipu_gpu.keras import layers as L


@pytest.fixture(scope="module")
def tfk(real_tf):
    return pytest.importorskip("tf_keras")


def _f(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


_CASES = [
    ("Attention", {}, {}),
    ("Attention", {"use_scale": True}, {"key": True}),
    ("Attention", {"score_mode": "concat", "use_scale": True}, {"mask": True}),
    ("Attention", {}, {"use_causal_mask": True, "mask": True}),
    ("AdditiveAttention", {}, {}),
    ("AdditiveAttention", {"use_scale": False}, {"mask": True, "key": True}),
    ("AdditiveAttention", {}, {"use_causal_mask": True}),
]


@pytest.mark.parametrize("i", range(len(_CASES)), ids=[f"{c[0]}-{i}" for i, c in
                                                        enumerate(_CASES)])
def test_matches_tf_keras(tfk, real_tf, i):
    tf = real_tf
    name, kwargs, options = _CASES[i]
    q, v, k = _f(2, 4, 3), _f(2, 5, 3, seed=1), _f(2, 5, 3, seed=2)
    q_mask = np.array([[1, 1, 0, 1], [1, 1, 1, 1]], bool)
    v_mask = np.array([[1, 1, 1, 0, 0], [1, 0, 1, 1, 1]], bool)
    u = _f(2, 4, 3, seed=3)
    results = []
    for lib, layers in ((ig, L), (tf, tfk.layers)):
        layer = getattr(layers, name)(**kwargs)
        ts = [lib.constant(a) for a in ((q, v, k) if options.get("key") else (q, v))]
        layer.build([t.shape for t in ts])
        if layer.get_weights():
            layer.set_weights(results[0][3] if results else
                              [np.asarray(w) + 0.3 for w in layer.get_weights()])
        call = dict(return_attention_scores=True)
        if options.get("mask"):
            call["mask"] = [lib.constant(q_mask), lib.constant(v_mask)]
        if options.get("use_causal_mask"):
            call["use_causal_mask"] = True
        with lib.GradientTape() as tape:
            for t in ts:
                tape.watch(t)
            out, scores = layer(ts, **call)
            loss = lib.reduce_sum(out * u) + lib.reduce_sum(scores * scores)
        grads = tape.gradient(loss, ts + list(layer.trainable_variables))
        results.append((out.numpy(), scores.numpy(), [g.numpy() for g in grads],
                        layer.get_weights() if not results else None, layer.get_config()))
    (o1, s1, g1, _, c1), (o2, s2, g2, _, c2) = results
    np.testing.assert_allclose(o1, o2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(s1, s2, rtol=1e-5, atol=1e-6)
    for a, b in zip(g1, g2):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    assert c1 == c2 | {"name": c1["name"]}


def test_dot_attention_against_numpy():
    q, v = _f(2, 4, 3).astype(np.float64), _f(2, 5, 3, seed=1).astype(np.float64)
    v_mask = np.array([[1, 1, 1, 0, 0], [1, 0, 1, 1, 1]], bool)
    out = L.Attention(dtype="float64")([q, v], mask=[None, v_mask]).numpy()
    scores = q @ v.transpose(0, 2, 1) - 1e9 * (~v_mask[:, None, :])
    w = np.exp(scores - scores.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    np.testing.assert_allclose(out, w @ v, rtol=1e-10)


def test_dropout_only_in_training_and_errors_as_tf_keras(tfk):
    q, v = _f(2, 4, 3), _f(2, 5, 3, seed=1)
    layer = L.Attention(dropout=0.5, seed=1)
    np.testing.assert_allclose(layer([q, v], training=False).numpy(),
                               L.Attention()([q, v]).numpy(), rtol=1e-6)
    _, w = layer([q, v], training=True, return_attention_scores=True)
    assert set(np.unique(np.round(w.numpy(), 6) == 0)) == {True, False}
    for bad, kwargs in (([q], {}), (q, {}), ([q, v], {"mask": [None]}),
                        ([q, v], {"mask": q})):
        with pytest.raises(ValueError) as theirs:
            tfk.layers.Attention()(bad, **kwargs)
        with pytest.raises(ValueError) as ours:
            L.Attention()(bad, **kwargs)
        assert type(ours.value) is ValueError
        del theirs
    with pytest.raises(ValueError) as theirs:
        tfk.layers.Attention(score_mode="x")
    with pytest.raises(ValueError) as ours:
        L.Attention(score_mode="x")
    assert str(ours.value) == str(theirs.value)


def test_masks_flow_from_embedding_in_a_functional_model(tfk):
    ids = np.array([[3, 1, 0, 0], [2, 5, 4, 0]], np.int32)
    outs = []
    table = _f(6, 3, seed=5)
    for lib in (__import__("ipu_gpu.keras", fromlist=["x"]), tfk):
        inp = lib.Input((4,), dtype="int32")
        emb = lib.layers.Embedding(6, 3, mask_zero=True)
        x = emb(inp)
        y = lib.layers.Attention()([x, x])
        model = lib.Model(inp, y)
        emb.set_weights([table])
        outs.append(np.asarray(model(ids)))
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-5, atol=1e-6)
    assert np.all(outs[0][0, 2:] == 0)  # masked queries give zero rows
