"""tf.distribute.OneDeviceStrategy (issue 17 sweep) against the real TensorFlow: device
names, one replica (run, reduce, all_reduce, local results, distributed datasets), the
scope, TF's errors, and a Keras model built in its scope training as without it."""

import numpy as np
import pytest

import ipu_gpu as ig


def _behaviour(tf, device):
    s = tf.distribute.OneDeviceStrategy(device)
    out = {"replicas": s.num_replicas_in_sync, "workers": s.extended.worker_devices,
           "params": s.extended.parameter_devices}

    def step(x):
        ctx = tf.distribute.get_replica_context()
        out["replica_id"] = int(ctx.replica_id_in_sync_group)
        out["ctx_replicas"] = ctx.num_replicas_in_sync
        return ctx.all_reduce("SUM", x) * 2.0

    out["run"] = s.run(step, args=(tf.constant([1.0, 2.0]),)).numpy()
    out["sum0"] = s.reduce("SUM", tf.constant([1.0, 2.0]), axis=0).numpy()
    out["mean_none"] = s.reduce(tf.distribute.ReduceOp.MEAN, tf.constant([1.0, 2.0]),
                                axis=None).numpy()
    out["local"] = [v.numpy() for v in s.experimental_local_results(tf.constant(3))]
    with s.scope():
        out["cross"] = tf.distribute.in_cross_replica_context()
        out["current"] = tf.distribute.get_strategy() is s
        out["has"] = tf.distribute.has_strategy()
    out["after"] = tf.distribute.has_strategy()
    ds = s.experimental_distribute_dataset(tf.data.Dataset.range(5).batch(2))
    out["data"] = [x.numpy().tolist() for x in ds]
    return out


@pytest.mark.parametrize("device", ["/cpu:0", "/gpu:0", "/device:GPU:1", "CPU:0"])
def test_matches_real_tensorflow(device, real_tf):
    got, want = _behaviour(ig, device), _behaviour(real_tf, device)
    assert got.keys() == want.keys()
    for key in want:
        np.testing.assert_equal(got[key], want[key], err_msg=key)


def test_errors(real_tf):
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'device'"):
        ig.distribute.OneDeviceStrategy()
    with pytest.raises(ValueError, match="bogus"):
        ig.distribute.OneDeviceStrategy("bogus")
    with pytest.raises(ValueError, match="bogus"):
        real_tf.distribute.OneDeviceStrategy("bogus")
    with pytest.raises(AttributeError, match="'int' object has no attribute 'split'"):
        ig.distribute.OneDeviceStrategy(3)
    a, b = ig.distribute.OneDeviceStrategy("/cpu:0"), ig.distribute.OneDeviceStrategy("/cpu:0")
    with a.scope(), pytest.raises(RuntimeError, match="Mixing different"):
        with b.scope():
            pass


def test_keras_model_in_the_scope_trains_as_without_it():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 4)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5, 1.0], np.float32))[:, None]

    def fit(strategy):
        ig.keras.utils.set_random_seed(7)
        if strategy is None:
            model = ig.keras.Sequential([ig.keras.layers.Dense(3, activation="relu"),
                                         ig.keras.layers.Dense(1)])
            model.compile(optimizer=ig.keras.optimizers.SGD(0.05), loss="mse")
        else:
            with strategy.scope():
                model = ig.keras.Sequential([ig.keras.layers.Dense(3, activation="relu"),
                                             ig.keras.layers.Dense(1)])
                model.compile(optimizer=ig.keras.optimizers.SGD(0.05), loss="mse")
        hist = model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
        return hist.history["loss"]

    plain = fit(None)
    got = fit(ig.distribute.OneDeviceStrategy("/cpu:0"))
    np.testing.assert_allclose(got, plain, rtol=1e-6)
    assert plain[1] < plain[0]
