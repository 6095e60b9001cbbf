"""tf.train.Checkpoint and tf.train.CheckpointManager (issue 17 sweep): TF's object-graph
keys (compared with the real TensorFlow's for a Keras model and optimizer), a training run
interrupted by save/restore (variables and Adam slots) equal to the uninterrupted run,
save_counter, the state file, write/read, the status assertions and the manager's
retention, each against the real TensorFlow's behaviour."""

import os

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as tf1
from ipu_gpu import errors

X = np.random.default_rng(0).normal(size=(16, 4)).astype(np.float32)
Y = (X @ np.array([1.0, -2.0, 0.5, 1.0], np.float32))[:, None]


def _model(keras, seed=1):
    model = keras.Sequential([
        keras.layers.Dense(3, activation="relu", input_shape=(4,),
                           kernel_initializer=keras.initializers.GlorotUniform(seed)),
        keras.layers.Dropout(0.0), keras.layers.BatchNormalization(),
        keras.layers.Dense(1, kernel_initializer=keras.initializers.GlorotUniform(seed + 1))])
    return model


def _keys(tf, path):
    return sorted(k for k, _ in tf.train.list_variables(path) if not k.startswith("_"))


def test_keys_are_tensorflow_s(tmp_path, real_tf, tf_keras):
    saved = {}
    for name, tf, keras, adam in [
            ("ours", ig, ig.keras, ig.keras.optimizers.Adam),
            ("tf", real_tf, tf_keras, tf_keras.optimizers.legacy.Adam)]:
        model, opt = _model(keras), adam(0.01)
        model.compile(optimizer=opt, loss="mse")
        model.fit(X, Y, batch_size=8, epochs=1, verbose=0, shuffle=False)
        ckpt = tf.train.Checkpoint(model=model, optimizer=opt, step=tf.Variable(3))
        saved[name] = ckpt.save(str(tmp_path / name / "ckpt"))
    assert _keys(tf1, saved["ours"]) == _keys(real_tf, saved["tf"])
    assert len(_keys(tf1, saved["ours"])) == 27


def _fit(model, epochs):
    return model.fit(X, Y, batch_size=4, epochs=epochs, verbose=0, shuffle=False)


def test_interrupted_training_equals_the_uninterrupted_run(tmp_path):
    """Adam's moments and step count come back: 2 epochs, or 1 + save + restore into a new
    model and a new optimizer (slots not made yet) + 1, give the same weights."""
    ig.keras.utils.set_random_seed(3)
    straight = _model(ig.keras)
    straight.compile(optimizer=ig.keras.optimizers.Adam(0.05), loss="mse")
    _fit(straight, 2)

    first = _model(ig.keras)
    opt = ig.keras.optimizers.Adam(0.05)
    first.compile(optimizer=opt, loss="mse")
    _fit(first, 1)
    manager = ig.train.CheckpointManager(ig.train.Checkpoint(model=first, optimizer=opt),
                                         str(tmp_path), max_to_keep=3)
    path = manager.save()

    second = _model(ig.keras, seed=9)  # other initial values, overwritten by the restore
    opt2 = ig.keras.optimizers.Adam(0.5)  # its learning rate comes from the checkpoint too
    second.compile(optimizer=opt2, loss="mse")
    ckpt2 = ig.train.Checkpoint(model=second, optimizer=opt2)
    status = ckpt2.restore(ig.train.latest_checkpoint(str(tmp_path)))
    assert path == ig.train.latest_checkpoint(str(tmp_path))
    status.assert_consumed()
    assert int(opt2.iterations.numpy()) == 4
    np.testing.assert_allclose(float(opt2.learning_rate.numpy()), 0.05, rtol=1e-7)
    _fit(second, 1)
    for a, b in zip(second.get_weights(), straight.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def _counter_behaviour(tf, directory):
    v, w = tf.Variable([1.0, 2.0]), tf.Variable(5, dtype=tf.int64)
    ckpt = tf.train.Checkpoint(v=v, nested=tf.train.Checkpoint(w=w))
    out = [os.path.relpath(ckpt.save(os.path.join(directory, "a")), directory)]
    v.assign([3.0, 4.0])
    out.append(os.path.relpath(ckpt.save(os.path.join(directory, "a")), directory))
    out.append(int(ckpt.save_counter.numpy()))
    out.append(os.path.relpath(tf.train.latest_checkpoint(directory), directory))
    written = ckpt.write(os.path.join(directory, "w"))
    out.append(os.path.relpath(written, directory))
    out.append(os.path.relpath(tf.train.latest_checkpoint(directory), directory))
    fresh_v, fresh_w = tf.Variable([0.0, 0.0]), tf.Variable(0, dtype=tf.int64)
    fresh = tf.train.Checkpoint(v=fresh_v, nested=tf.train.Checkpoint(w=fresh_w))
    fresh.restore(os.path.join(directory, "a-1")).assert_consumed()
    out += [fresh_v.numpy().tolist(), int(fresh_w.numpy()), int(fresh.save_counter.numpy())]
    fresh.read(written).assert_consumed()
    out += [fresh_v.numpy().tolist(), int(fresh.save_counter.numpy())]
    return out


def test_save_write_restore_read_match_tensorflow(tmp_path, real_tf):
    assert _counter_behaviour(ig, str(tmp_path / "ours")) == \
        _counter_behaviour(real_tf, str(tmp_path / "tf"))


def test_status_assertions_and_errors(tmp_path, real_tf):
    for tf, err in [(ig, errors.NotFoundError), (real_tf, real_tf.errors.NotFoundError)]:
        d = str(tmp_path / tf.__name__)
        path = tf.train.Checkpoint(v=tf.Variable(1.0)).save(os.path.join(d, "c"))
        extra = tf.train.Checkpoint(v=tf.Variable(0.0), w=tf.Variable(2.0)).restore(path)
        with pytest.raises(AssertionError, match="Found 1 Python objects that were not bound "
                                                 "to checkpointed values"):
            extra.assert_consumed()
        with pytest.raises(AssertionError, match="Found 1 Python objects"):
            extra.assert_existing_objects_matched()
        extra.expect_partial().assert_nontrivial_match()
        tf.train.Checkpoint(v=tf.Variable(0.0)).restore(path).assert_consumed()
        with pytest.raises(AssertionError, match=r"No checkpoint specified \(save_path=None\); "
                                                 "nothing is being restored."):
            tf.train.Checkpoint(v=tf.Variable(0.0)).restore(None).assert_consumed()
        with pytest.raises(err, match="Failed to find any matching files for .*nope"):
            tf.train.Checkpoint(v=tf.Variable(0.0)).restore(os.path.join(d, "nope"))
        with pytest.raises(ValueError, match="`Checkpoint` was expecting x to be a trackable "
                                             "object"):
            tf.train.Checkpoint(x=3)
    # a value the program does not take: consumed fails, existing objects matched passes
    path = ig.train.Checkpoint(v=ig.Variable(1.0), u=ig.Variable(2.0)).save(
        str(tmp_path / "two" / "c"))
    status = ig.train.Checkpoint(v=ig.Variable(0.0)).restore(path)
    status.assert_existing_objects_matched()
    with pytest.raises(AssertionError, match="Unresolved object in checkpoint"):
        status.assert_consumed()


def test_module_lists_and_dicts_are_tracked(tmp_path):
    class Net(ig.Module):
        def __init__(self):
            super().__init__()
            self.w = ig.Variable(np.ones((2, 2), np.float32))
            self.parts = [ig.Variable(1.0), {"b": ig.Variable(2.0)}]

    net = Net()
    path = ig.train.Checkpoint(net=net).save(str(tmp_path / "m"))
    assert _keys(tf1, path) == ["net/parts/0/.ATTRIBUTES/VARIABLE_VALUE",
                                "net/parts/1/b/.ATTRIBUTES/VARIABLE_VALUE",
                                "net/w/.ATTRIBUTES/VARIABLE_VALUE",
                                "save_counter/.ATTRIBUTES/VARIABLE_VALUE"]
    other = Net()
    other.w.assign(np.zeros((2, 2), np.float32))
    other.parts[1]["b"].assign(7.0)
    ckpt = ig.train.Checkpoint()
    ckpt.net = other  # attribute assignment adds a dependency, as TF
    ckpt.restore(path).assert_consumed()
    np.testing.assert_array_equal(other.w.numpy(), np.ones((2, 2)))
    assert float(other.parts[1]["b"].numpy()) == 2.0


def _manager_behaviour(tf, directory):
    v = tf.Variable(0.0)
    ckpt = tf.train.Checkpoint(v=v)
    inits = []
    manager = tf.train.CheckpointManager(ckpt, directory, max_to_keep=2,
                                         init_fn=lambda: inits.append(1))
    out = [manager.restore_or_initialize(), manager.latest_checkpoint, len(inits)]
    for i in range(3):
        v.assign(float(i))
        out.append(os.path.basename(manager.save()))
    out.append(os.path.basename(manager.save(checkpoint_number=10)))
    out.append([os.path.basename(p) for p in manager.checkpoints])
    out.append(sorted({f.split(".")[0] for f in os.listdir(directory) if f != "checkpoint"}))
    again = tf.train.CheckpointManager(ckpt, directory, max_to_keep=2)
    out.append([os.path.basename(p) for p in again.checkpoints])
    v.assign(-1.0)
    out.append(os.path.basename(again.restore_or_initialize()))
    out.append(float(v.numpy()))
    step = tf.Variable(0, dtype=tf.int64)
    spaced = tf.train.CheckpointManager(ckpt, directory + "_i", max_to_keep=None,
                                        step_counter=step, checkpoint_interval=2)
    for s in range(5):
        step.assign(s)
        saved = spaced.save()
        out.append(None if saved is None else os.path.basename(saved))
    return out


def test_manager_matches_tensorflow(tmp_path, real_tf):
    assert _manager_behaviour(ig, str(tmp_path / "ours")) == \
        _manager_behaviour(real_tf, str(tmp_path / "tf"))


def test_manager_errors(tmp_path, real_tf):
    for tf in (ig, real_tf):
        ckpt = tf.train.Checkpoint(v=tf.Variable(1.0))
        with pytest.raises(ValueError, match="`step_counter` should be passed if "
                                             "`checkpoint_interval` is not None."):
            tf.train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=1,
                                       checkpoint_interval=2)
        with pytest.raises(ValueError, match="Expected a positive integer or `None` for "
                                             "`max_to_keep`, got 0."):
            tf.train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=0)


def test_restore_before_the_model_is_built_waits_for_its_weights(tmp_path):
    """TF's deferred restoration: values for weights not made yet are assigned when the
    model builds (and the optimizer's slots for them made then)."""
    def unbuilt():
        return ig.keras.Sequential([ig.keras.layers.Dense(3, activation="relu"),
                                    ig.keras.layers.BatchNormalization(),
                                    ig.keras.layers.Dense(1)])

    ig.keras.utils.set_random_seed(4)
    straight = unbuilt()
    straight.compile(optimizer=ig.keras.optimizers.Adam(0.05), loss="mse")
    _fit(straight, 2)
    ig.keras.utils.set_random_seed(4)
    first = unbuilt()
    opt = ig.keras.optimizers.Adam(0.05)
    first.compile(optimizer=opt, loss="mse")
    _fit(first, 1)
    path = ig.train.Checkpoint(model=first, optimizer=opt).save(str(tmp_path / "c"))

    second, opt2 = unbuilt(), ig.keras.optimizers.Adam(0.05)
    status = ig.train.Checkpoint(model=second, optimizer=opt2).restore(path)
    with pytest.raises(AssertionError, match="Unresolved object in checkpoint: model/"):
        status.assert_consumed()
    status.assert_existing_objects_matched()  # nothing exists yet that missed a value
    second.compile(optimizer=opt2, loss="mse")
    second.build((None, 4))
    status.assert_consumed()
    for a, b in zip(second.get_weights(), first.get_weights()):
        np.testing.assert_array_equal(a, b)
    _fit(second, 1)
    for a, b in zip(second.get_weights(), straight.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def _subclassed(keras):
    class Block(keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.inner = keras.layers.Dense(2)
            self.scale = self.add_weight(name="scale", shape=(2,), initializer="ones")

        def call(self, x):
            return self.inner(x) * self.scale

    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.block = Block()
            self.heads = [keras.layers.Dense(1), keras.layers.Dense(1)]

        def call(self, x):
            h = self.block(x)
            return self.heads[0](h) + self.heads[1](h)

    net = Net()
    net(np.ones((1, 3), np.float32))
    return net


def test_subclassed_model_keys_are_tensorflow_s(tmp_path, real_tf, tf_keras):
    """Attribute names for subclassed models and custom layers; write() makes no
    save_counter."""
    ours = ig.train.Checkpoint(model=_subclassed(ig.keras)).write(str(tmp_path / "ours"))
    theirs = real_tf.train.Checkpoint(model=_subclassed(tf_keras)).write(str(tmp_path / "tf"))
    assert _keys(tf1, ours) == _keys(real_tf, theirs)
    assert "model/block/inner/kernel/.ATTRIBUTES/VARIABLE_VALUE" in _keys(tf1, ours)
    net = _subclassed(ig.keras)
    ig.train.Checkpoint(model=net).restore(ours).assert_consumed()
