"""ipu_tensorflow_addons' Keras optimizers (``ipu_gpu.addons.keras.optimizers``):
AdamIpuOptimizer, LAMBIpuOptimizer and SGDIpuOptimizer step by step against numpy
references of Graphcore's arithmetic and against tf-keras's legacy optimizers where the
arithmetic is the same; slot dtypes, outlining, configs and errors."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
from ipu_gpu import keras
from ipu_gpu.addons.keras import optimizers as AO

STEPS = 4


@pytest.fixture(scope="module")
def tfk(real_tf):
    return pytest.importorskip("tf_keras")


def _problem(seed=0):
    """Two variables and a gradient per step (fixed arrays, so each test is exact)."""
    rng = np.random.default_rng(seed)
    w = [rng.normal(size=(3, 4)).astype(np.float32), rng.normal(size=(4,)).astype(np.float32)]
    grads = [[rng.normal(size=v.shape).astype(np.float32) for v in w] for _ in range(STEPS)]
    return w, grads


def _run(opt, w, grads, names=("dense/kernel", "dense/bias"), dtype="float32"):
    variables = [ig.Variable(v.astype(dtype), name=n) for v, n in zip(w, names)]
    for g in grads:
        opt.apply_gradients([(ig.constant(gi.astype(dtype)), v)
                             for gi, v in zip(g, variables)])
    return variables


def numpy_adam(w, grads, lr=0.01, b1=0.9, b2=0.999, eps=1e-7, amsgrad=False,
               debiasing=True, dtype=np.float32, m_dtype=None, v_dtype=None):
    """Graphcore's AdamIpuOptimizer step: epsilon after debiasing; AMSGrad over the
    debiased v. Moments stored in m_dtype/v_dtype, computed in ``dtype``."""
    out = []
    for i, w0 in enumerate(w):
        var = w0.copy()
        m = np.zeros_like(var, m_dtype or var.dtype)
        v = np.zeros_like(var, v_dtype or var.dtype)
        vhat = np.zeros_like(var)
        for t, g in enumerate(grads, start=1):
            g = g[i].astype(dtype)
            nm = m.astype(dtype) * dtype(b1) + g * (dtype(1) - dtype(b1))
            nv = v.astype(dtype) * dtype(b2) + g * g * (dtype(1) - dtype(b2))
            m, v = nm.astype(m.dtype), nv.astype(v.dtype)
            if debiasing:
                mh = nm / (dtype(1) - np.power(dtype(b1), dtype(t)))
                vh = nv / (dtype(1) - np.power(dtype(b2), dtype(t)))
            else:
                mh, vh = nm, nv
            if amsgrad:
                vhat = np.maximum(vhat, vh)
                vh = vhat
            var = var - (mh / (np.sqrt(vh) + dtype(eps)) * dtype(lr)).astype(var.dtype)
        out.append((var, m, v))
    return out


@pytest.mark.parametrize("kwargs", [
    dict(), dict(amsgrad=True), dict(debiasing=False), dict(outline_apply_gradients=True),
    dict(amsgrad=True, outline_apply_gradients=True,
         outline_apply_gradients_kwargs=dict(unique_sharding=True))])
def test_adam_matches_numpy(kwargs):
    w, grads = _problem()
    opt = AO.AdamIpuOptimizer(0.01, **kwargs)
    variables = _run(opt, w, grads)
    ref = numpy_adam(w, grads, amsgrad=kwargs.get("amsgrad", False),
                     debiasing=kwargs.get("debiasing", True))
    for var, (want, m, v) in zip(variables, ref):
        np.testing.assert_allclose(var.numpy(), want, rtol=2e-6, atol=1e-7)
        np.testing.assert_allclose(opt.get_slot(var, "m").numpy(), m, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(opt.get_slot(var, "v").numpy(), v, rtol=1e-6, atol=1e-9)
    assert int(opt.iterations) == STEPS
    names = ["m", "v", "vhat"] if kwargs.get("amsgrad") else ["m", "v"]
    assert opt.get_slot_names() == names


def test_adam_slot_dtypes():
    w, grads = _problem(1)
    opt = AO.AdamIpuOptimizer(0.01, m_dtype="float16", v_dtype=ig.float16)
    variables = _run(opt, w, grads)
    ref = numpy_adam(w, grads, m_dtype=np.float16, v_dtype=np.float16)
    for var, (want, m, v) in zip(variables, ref):
        assert opt.get_slot(var, "m").dtype == ig.float16
        assert opt.get_slot(var, "v").dtype == ig.float16
        np.testing.assert_array_equal(opt.get_slot(var, "m").numpy(), m)
        np.testing.assert_array_equal(opt.get_slot(var, "v").numpy(), v)
        np.testing.assert_allclose(var.numpy(), want, rtol=2e-6, atol=1e-7)
    assert [s.dtype for s in opt.weights[1:]] == [ig.float16] * 4
    # float16 variables with float32 moments, computed in float32
    opt = AO.AdamIpuOptimizer(0.01, m_dtype="float32", v_dtype="float32")
    variables = _run(opt, w, grads, dtype="float16")
    ref = numpy_adam([x.astype(np.float16) for x in w],
                     [[gi.astype(np.float16) for gi in g] for g in grads],
                     m_dtype=np.float32, v_dtype=np.float32)
    for var, (want, _, _) in zip(variables, ref):
        assert var.dtype == ig.float16 and opt.get_slot(var, "m").dtype == ig.float32
        np.testing.assert_allclose(var.numpy().astype(np.float32), want.astype(np.float32),
                                   rtol=1e-3, atol=1e-3)


def test_adam_agrees_with_tf_keras_adam_when_epsilon_is_negligible(tfk, real_tf):
    """Keras's Adam adds epsilon before debiasing; with a negligible epsilon both are
    lr * m_hat / sqrt(v_hat)."""
    tf = real_tf
    w, grads = _problem(2)
    ours = _run(AO.AdamIpuOptimizer(0.01, epsilon=1e-12), w, grads)
    theirs_opt = tfk.optimizers.legacy.Adam(0.01, epsilon=1e-12)
    theirs = [tf.Variable(v) for v in w]
    for g in grads:
        theirs_opt.apply_gradients(zip([tf.constant(x) for x in g], theirs))
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kwargs", [dict(momentum=0.9), dict(momentum=0.9, nesterov=True),
                                    dict(), dict(momentum=0.5, outline_apply_gradients=True)])
def test_sgd_matches_tf_keras_sgd(tfk, real_tf, kwargs):
    tf = real_tf
    w, grads = _problem(3)
    opt = AO.SGDIpuOptimizer(0.05, **kwargs)
    ours = _run(opt, w, grads)
    theirs_opt = tfk.optimizers.legacy.SGD(0.05, momentum=kwargs.get("momentum", 0.0),
                                           nesterov=kwargs.get("nesterov", False))
    theirs = [tf.Variable(v) for v in w]
    for g in grads:
        theirs_opt.apply_gradients(zip([tf.constant(x) for x in g], theirs))
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-7)
    assert opt.get_slot_names() == (["momentum"] if kwargs.get("momentum") else [])


def test_sgd_momentum_accumulator_dtype():
    w, grads = _problem(4)
    opt = AO.SGDIpuOptimizer(0.05, momentum=0.9, momentum_accum_dtype="float16")
    variables = _run(opt, w, grads)
    for i, var in enumerate(variables):
        value, accum = w[i].copy(), np.zeros(w[i].shape, np.float16)
        for g in grads:
            nxt = accum.astype(np.float32) * np.float32(0.9) - g[i] * np.float32(0.05)
            value = value + nxt
            accum = nxt.astype(np.float16)
        slot = opt.get_slot(var, "momentum")
        assert slot.dtype == ig.float16
        np.testing.assert_array_equal(slot.numpy(), accum)
        np.testing.assert_allclose(var.numpy(), value, rtol=1e-6, atol=1e-7)


def numpy_lamb(w, grads, names, lr=0.01, b1=0.9, b2=0.999, eps=1e-6, wd=0.0,
               exclude_wd=(), exclude_adapt=(), clip=None, debiasing=True):
    """LAMB as Graphcore computes it, in float64 (names are the variables' names)."""
    import re

    out = []
    for i, w0 in enumerate(w):
        var = w0.astype(np.float64)
        m, v = np.zeros_like(var), np.zeros_like(var)
        for t, g in enumerate(grads, start=1):
            g = g[i].astype(np.float64)
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g * g
            mh, vh = (m / (1 - b1 ** t), v / (1 - b2 ** t)) if debiasing else (m, v)
            u = mh / (np.sqrt(vh) + eps)
            if not any(re.search(r, names[i]) for r in exclude_wd):
                u = u + wd * var
            ratio = 1.0
            if not any(re.search(r, names[i]) for r in exclude_adapt):
                wn, un = np.linalg.norm(var), np.linalg.norm(u)
                if clip is not None:
                    wn = min(wn, clip)
                ratio = wn / un if wn > 0 and un > 0 else 1.0
            var = var - lr * ratio * u
        out.append(var)
    return out


@pytest.mark.parametrize("kwargs", [
    dict(),
    dict(weight_decay_rate=0.1),
    dict(weight_decay_rate=0.1, exclude_from_weight_decay=["bias"]),
    dict(exclude_from_layer_adaptation=["kernel"], debiasing=False),
    dict(weight_norm_clip=0.5, weight_decay_rate=0.01, outline_apply_gradients=True),
])
def test_lamb_matches_numpy(kwargs):
    w, grads = _problem(5)
    names = ["dense/kernel", "dense/bias"]
    opt = AO.LAMBIpuOptimizer(0.01, **kwargs)
    variables = _run(opt, w, grads, names=names)
    want = numpy_lamb(w, grads, names, wd=kwargs.get("weight_decay_rate", 0.0),
                      exclude_wd=kwargs.get("exclude_from_weight_decay") or (),
                      exclude_adapt=kwargs.get("exclude_from_layer_adaptation") or (),
                      clip=kwargs.get("weight_norm_clip"),
                      debiasing=kwargs.get("debiasing", True))
    for var, ref in zip(variables, want):
        np.testing.assert_allclose(var.numpy(), ref, rtol=1e-5, atol=1e-6)


def test_lamb_trust_ratio_is_one_for_zero_weights():
    opt = AO.LAMBIpuOptimizer(0.1)
    var = ig.Variable(np.zeros(3, np.float32), name="zeros")
    g = np.array([1.0, -2.0, 0.5], np.float32)
    opt.apply_gradients([(ig.constant(g), var)])
    # first step: m_hat = g, v_hat = g*g, so the update is sign(g) (up to epsilon)
    np.testing.assert_allclose(var.numpy(), -0.1 * g / (np.abs(g) + 1e-6), rtol=1e-6)


def test_lamb_slot_dtypes_and_precisions():
    w, grads = _problem(6)
    opt = AO.LAMBIpuOptimizer(0.01, m_dtype="float16", v_dtype="float32",
                              optimizer_compute_precisions=(ig.float32, ig.float16))
    variables = _run(opt, w, grads)
    assert opt.get_slot(variables[0], "m").dtype == ig.float16
    assert opt.get_slot(variables[0], "v").dtype == ig.float32
    want = numpy_lamb(w, grads, ["dense/kernel", "dense/bias"])
    for var, ref in zip(variables, want):  # float16 update: 1e-3 relative per step
        np.testing.assert_allclose(var.numpy(), ref, rtol=2e-3, atol=2e-4)
    with pytest.raises(ValueError, match="Must provide a list of two elements"):
        AO.LAMBIpuOptimizer(optimizer_compute_precisions=(ig.float32,))


def test_configs_round_trip():
    for opt in (AO.AdamIpuOptimizer(0.02, amsgrad=True, m_dtype="float16", debiasing=False),
                AO.SGDIpuOptimizer(0.1, momentum=0.5, momentum_accum_dtype="float16",
                                   outline_apply_gradients=True),
                AO.LAMBIpuOptimizer(0.003, weight_decay_rate=0.01,
                                    exclude_from_weight_decay=["bias"])):
        config = opt.get_config()
        clone = type(opt).from_config(config)
        assert clone.get_config() == config
    config = AO.AdamIpuOptimizer(m_dtype="float16").get_config()
    assert config["m_dtype"] == "float16" and config["debiasing"] is True
    assert config["outline_apply_gradients"] is False
    assert AO.LAMBIpuOptimizer().get_config()["name"] == "LAMB"
    assert issubclass(AO.AdamIpuOptimizer, keras.optimizers.Adam)
    assert issubclass(AO.SGDIpuOptimizer, keras.optimizers.SGD)
    assert all(issubclass(c, AO.IpuOptimizerBase)
               for c in (AO.AdamIpuOptimizer, AO.SGDIpuOptimizer, AO.LAMBIpuOptimizer))


def test_model_fit_with_adam_ipu_optimizer_equals_numpy():
    """One Dense layer, mean squared error: the fitted weights equal the numpy Adam run on
    the analytic gradients."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=(8, 3)).astype(np.float32)
    y = rng.normal(size=(8, 2)).astype(np.float32)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    w0 = [rng.normal(size=(3, 2)).astype(np.float32), np.zeros(2, np.float32)]
    model.set_weights(w0)
    model.compile(AO.AdamIpuOptimizer(0.05), "mse")
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    kernel, bias = (a.astype(np.float64) for a in w0)
    m = [np.zeros_like(kernel), np.zeros_like(bias)]
    v = [np.zeros_like(kernel), np.zeros_like(bias)]
    params = [kernel, bias]
    for t, sl in enumerate((slice(0, 4), slice(4, 8)), start=1):
        err = x[sl] @ params[0] + params[1] - y[sl]
        d = 2 * err / err.size
        for i, g in enumerate((x[sl].T @ d, d.sum(0))):
            m[i] = 0.9 * m[i] + 0.1 * g
            v[i] = 0.999 * v[i] + 0.001 * g * g
            params[i] = params[i] - 0.05 * (m[i] / (1 - 0.9 ** t)) / (
                np.sqrt(v[i] / (1 - 0.999 ** t)) + 1e-7)
    for a, b in zip(model.get_weights(), params):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("cls,name", [(AO.AdamIpuOptimizer, "Adam"),
                                      (AO.LAMBIpuOptimizer, "LAMB"),
                                      (AO.SGDIpuOptimizer, "SGD")])
def test_sparse_gradients_raise_graphcores_error(cls, name):
    """A Keras Embedding's gradient is IndexedSlices, which Graphcore's optimizers reject."""
    layer = keras.layers.Embedding(5, 2)
    with ig.GradientTape() as tape:
        loss = ig.reduce_sum(layer(np.array([[1, 2, 1]], np.int32)))
    grads = tape.gradient(loss, layer.trainable_weights)
    assert isinstance(grads[0], ig.IndexedSlices)
    opt = cls(momentum=0.5) if cls is AO.SGDIpuOptimizer else cls()
    with pytest.raises(NotImplementedError, match="_resource_apply_sparse is not implemented "
                                                  f"for the IPU Addons {name} optimizer."):
        opt.apply_gradients(zip(grads, layer.trainable_weights))
