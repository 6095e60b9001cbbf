"""``save_weights`` to a TensorFlow-format path (no .h5/.hdf5/.keras), as ``ModelCheckpoint``
does for ``ckpt_{epoch}``: Keras 2's format rule and errors, the ``<path>.index`` file and the
``checkpoint`` state file tf-keras writes (ipu_gpu keeps HDF5 inside and writes no
``.data-*`` shard), ``tf.train.latest_checkpoint`` and ``load_weights`` on the result.

TensorFlow is imported only through the ``real_tf`` fixture; the tf-keras tests skip without it.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import ipu_gpu
import ipu_gpu.keras as ours


@pytest.fixture(scope="module")
def tfk(real_tf):
    """tf-keras, imported after TensorFlow's fixture set it up."""
    return pytest.importorskip("tf_keras")


def _model(lib, weights=None):
    model = lib.Sequential([lib.layers.Dense(2, input_shape=(3,))])
    if weights is not None:
        model.set_weights(weights)
    model.compile(optimizer="sgd", loss="mse")
    return model


_X = np.random.default_rng(0).standard_normal((8, 3)).astype(np.float32)
_Y = _X[:, :2] * 2.0


def test_model_checkpoint_tf_format_is_tf_keras_layout(real_tf, tfk, tmp_path):
    weights = _model(tfk).get_weights()
    trained = {}
    for lib in (ours, tfk):
        directory = tmp_path / lib.__name__.replace(".", "_")
        model = _model(lib, weights)
        cb = lib.callbacks.ModelCheckpoint(str(directory / "ckpt_{epoch}"),
                                           save_weights_only=True)
        model.fit(_X, _Y, batch_size=4, epochs=3, shuffle=False, verbose=0, callbacks=[cb])
        trained[lib] = (directory, model.get_weights())
    (mine, mine_weights), (theirs, theirs_weights) = trained[ours], trained[tfk]
    assert sorted(os.listdir(mine)) == sorted(f for f in os.listdir(theirs)
                                              if ".data-" not in f)
    assert (mine / "checkpoint").read_text() == (theirs / "checkpoint").read_text()
    latest = ipu_gpu.train.latest_checkpoint(str(mine))
    assert latest == str(mine / "ckpt_3")
    assert real_tf.train.latest_checkpoint(str(theirs)) == str(theirs / "ckpt_3")
    restored = _model(ours)
    restored.load_weights(latest)
    for a, b, c in zip(restored.get_weights(), mine_weights, theirs_weights):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(a, c, rtol=1e-6, atol=1e-7)
    restored.load_weights(str(mine / "ckpt_1"))  # an older one, by its prefix
    assert not np.array_equal(restored.get_weights()[0], mine_weights[0])


def test_relative_paths_and_state_file(tfk, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for lib, directory in ((ours, "mine"), (tfk, "theirs")):
        os.makedirs(directory)
        _model(lib).save_weights(f"{directory}/w")
    assert (tmp_path / "mine/checkpoint").read_text() == \
        (tmp_path / "theirs/checkpoint").read_text() == \
        'model_checkpoint_path: "w"\nall_model_checkpoint_paths: "w"\n'
    assert ipu_gpu.train.latest_checkpoint("mine") == os.path.join("mine", "w")
    assert ipu_gpu.train.get_checkpoint_state("mine").all_model_checkpoint_paths == \
        [os.path.join("mine", "w")]
    assert ipu_gpu.train.latest_checkpoint("nowhere") is None


def test_save_format_rule_and_errors(tmp_path):
    model = _model(ours)
    with pytest.raises(ValueError, match='save_weights got save_format="tf"/"tensorflow", '
                                         r'but the filepath \(".*w.h5"\) looks like an HDF5'):
        model.save_weights(str(tmp_path / "w.h5"), save_format="tf")
    with pytest.raises(ValueError, match="Unknown format. Received: `save_format`=pb"):
        model.save_weights(str(tmp_path / "w"), save_format="pb")
    model.save_weights(str(tmp_path / "plain"), save_format="h5")  # HDF5 at the path itself
    assert sorted(os.listdir(tmp_path)) == ["plain"]
    for name in ("a.keras", "b.hdf5"):
        model.save_weights(str(tmp_path / name))
    model.save_weights(str(tmp_path / "c"), save_format="tensorflow")
    assert sorted(os.listdir(tmp_path)) == ["a.keras", "b.hdf5", "c.index", "checkpoint",
                                            "plain"]
    other = _model(ours)
    for name in ("plain", "a.keras", "b.hdf5", "c"):
        other.set_weights([np.zeros_like(w) for w in other.get_weights()])
        other.load_weights(str(tmp_path / name))
        for a, b in zip(other.get_weights(), model.get_weights()):
            np.testing.assert_array_equal(a, b)
