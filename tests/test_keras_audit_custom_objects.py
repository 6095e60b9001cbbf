"""Keras 2's custom object registry in ``keras.utils`` (needed to reload a model holding a
subclassed layer, issue 16's "subclassing Layer ... get_config"): ``custom_object_scope`` /
``CustomObjectScope``, ``get_custom_objects``, ``register_keras_serializable`` (configs name
the class ``"package>name"``), ``get_registered_name``/``get_registered_object``; HDF5 models
holding a registered layer go both ways with tf-keras.

TensorFlow is imported only through the ``real_tf`` fixture; the tf-keras tests skip without it.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ipu_gpu.keras as ours
from ipu_gpu.keras import utils


class Scale(ours.layers.Layer):
    """A subclassed layer, not registered."""

    def __init__(self, factor=2.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def call(self, inputs):
        return inputs * self.factor

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


@utils.register_keras_serializable(package="IpuGpuAudit")
class Shift(ours.layers.Layer):
    """A registered layer with a weight."""

    def build(self, input_shape):
        self.shift = self.add_weight("shift", shape=(input_shape[-1],), initializer="ones")

    def call(self, inputs):
        return inputs + self.shift


def _model(scale, shift, lib=ours):
    inputs = lib.layers.Input((3,))
    return lib.Model(inputs, lib.layers.Dense(2)(shift()(scale(factor=3.0)(inputs))))


def test_custom_object_scope(tmp_path):
    model = _model(Scale, Shift)
    path = str(tmp_path / "m.h5")
    model.save(path)
    with pytest.raises(ValueError, match="Unknown layer: 'Scale'"):
        ours.models.load_model(path)
    before = dict(utils.get_custom_objects())
    with utils.custom_object_scope({"Scale": Scale}) as scope:
        assert isinstance(scope, utils.CustomObjectScope)
        assert utils.get_custom_objects()["Scale"] is Scale
        again = ours.models.load_model(path)
    assert utils.get_custom_objects() == before
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(again(x).numpy(), model(x).numpy())
    assert ours.models.load_model(path, custom_objects={"Scale": Scale})(x).numpy().shape == \
        (2, 2)


def test_register_keras_serializable_names_and_errors():
    assert utils.get_registered_name(Shift) == "IpuGpuAudit>Shift"
    assert utils.get_registered_name(Scale) == "Scale"
    assert utils.get_registered_object("IpuGpuAudit>Shift") is Shift
    assert utils.get_registered_object("Scale", custom_objects={"Scale": Scale}) is Scale
    assert utils.get_registered_object("nothing") is None
    config = _model(Scale, Shift).get_config()
    assert [layer["class_name"] for layer in config["layers"]] == \
        ["InputLayer", "Scale", "IpuGpuAudit>Shift", "Dense"]
    assert ours.layers.serialize(Shift())["class_name"] == "IpuGpuAudit>Shift"
    with pytest.raises(ValueError, match="IpuGpuAudit>Shift has already been registered"):
        utils.register_keras_serializable(package="IpuGpuAudit")(
            type("Shift", (ours.layers.Layer,), {}))
    with pytest.raises(ValueError, match="has already been registered to IpuGpuAudit>Shift"):
        utils.register_keras_serializable(package="Other")(Shift)
    with pytest.raises(ValueError, match="does not have a get_config"):
        utils.register_keras_serializable(package="IpuGpuAudit")(type("Plain", (), {}))
    registered = utils.register_keras_serializable("IpuGpuAudit", name="half")(
        lambda x: x / 2)
    assert ours.activations.get("IpuGpuAudit>half") is registered


def test_sequential_with_registered_layer_round_trips(tmp_path):
    model = ours.Sequential([ours.layers.Dense(3, input_shape=(3,)), Shift()])
    path = str(tmp_path / "s.h5")
    model.save(path)
    again = ours.models.load_model(path)
    x = np.ones((1, 3), np.float32)
    np.testing.assert_allclose(again(x).numpy(), model(x).numpy())


@pytest.fixture(scope="module")
def tfk(real_tf):
    """tf-keras, imported after TensorFlow's fixture set it up."""
    return pytest.importorskip("tf_keras")


def test_registered_layer_hdf5_both_ways(tfk, tmp_path):
    @tfk.utils.register_keras_serializable(package="IpuGpuAudit")
    class Shift(tfk.layers.Layer):  # the same name, tf-keras's registry
        def build(self, input_shape):
            self.shift = self.add_weight("shift", shape=(input_shape[-1],),
                                         initializer="ones")

        def call(self, inputs):
            return inputs + self.shift

    class TfkScale(tfk.layers.Layer):
        def __init__(self, factor=2.0, **kwargs):
            super().__init__(**kwargs)
            self.factor = factor

        def call(self, inputs):
            return inputs * self.factor

        def get_config(self):
            return {**super().get_config(), "factor": self.factor}

    theirs = _model(TfkScale, Shift, lib=tfk)
    theirs.layers[2].set_weights([np.array([1.0, 2.0, 3.0], np.float32)])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # tf-keras: HDF5 is a legacy format
        theirs.save(str(tmp_path / "theirs.h5"))
    mine = ours.models.load_model(str(tmp_path / "theirs.h5"),
                                  custom_objects={"TfkScale": Scale})
    np.testing.assert_allclose(mine(x).numpy(), theirs(x).numpy(), rtol=1e-5, atol=1e-6)
    mine.save(str(tmp_path / "mine.h5"))
    again = tfk.models.load_model(str(tmp_path / "mine.h5"),
                                  custom_objects={"Scale": TfkScale})
    np.testing.assert_allclose(again(x).numpy(), theirs(x).numpy(), rtol=1e-5, atol=1e-6)
