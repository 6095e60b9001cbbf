"""Lambda layers serialize as Keras 2 serializes them (issue 16's ``Lambda``, and the
``ModelCheckpoint``/``model.save`` of programs that hold one): every Python function, a lambda
or a named one, as its marshalled bytecode with defaults and closure; configs equal to
tf-keras's for the same function; whole-model HDF5 files exchanged both ways.

TensorFlow is imported only through the ``real_tf`` fixture; the tf-keras tests skip without it.
"""

from __future__ import annotations

import codecs
import marshal
import warnings

import numpy as np
import pytest

import ipu_gpu.keras as ours
from ipu_gpu.keras import layers as L

_SCALE = 3.0


def _named(x):
    return x - 1.0


def _keep_mask(x, mask):
    return mask


def _first_two(shape):
    return (shape[0], 2)


_CASES = [
    ("closure-and-default", lambda x, k=2.0: x * k + _SCALE, {}),
    ("named-with-shape", _named, dict(output_shape=(4,))),
    ("shape-function", lambda x: x[:, :2], dict(output_shape=_first_two)),
    ("mask-and-arguments", lambda x, k: x * k, dict(mask=_keep_mask, arguments={"k": 2.0})),
]


@pytest.fixture(scope="module")
def tfk(real_tf):
    """tf-keras, imported after TensorFlow's fixture set it up."""
    return pytest.importorskip("tf_keras")


@pytest.mark.parametrize("fn,kwargs", [c[1:] for c in _CASES], ids=[c[0] for c in _CASES])
def test_lambda_config_round_trip(fn, kwargs):
    layer = L.Lambda(fn, **kwargs)
    config = layer.get_config()
    assert config["function_type"] == "lambda" and config["module"] == __name__
    again = L.Lambda.from_config(config)
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_array_equal(again(x).numpy(), layer(x).numpy())
    assert _decoded(again.get_config()) == _decoded(config)


def _decoded(config):
    """``config`` with each dumped function's code as a code object: marshal's bytes depend
    on reference counts at the time of the dump, the code they hold does not."""
    out = dict(config)
    for key in ("function", "output_shape", "mask"):
        if out.get(f"{key}_type" if key != "function" else "function_type") == "lambda":
            code, defaults, closure = out[key]
            out[key] = (marshal.loads(codecs.decode(code.encode("ascii"), "base64")),
                        defaults, closure)
    return out


@pytest.mark.parametrize("fn,kwargs", [c[1:] for c in _CASES], ids=[c[0] for c in _CASES])
def test_lambda_config_is_tf_keras(tfk, fn, kwargs):
    mine = L.Lambda(fn, **kwargs).get_config()
    theirs = tfk.layers.Lambda(fn, **kwargs).get_config()
    mine.pop("name")
    theirs.pop("name")
    assert _decoded(mine) == _decoded(theirs)


def test_lambda_function_by_name_and_errors():
    config = {"function": "double", "function_type": "function", "module": None,
              "output_shape": None, "arguments": {}}  # an older config: names a function
    layer = L.Lambda.from_config(config, custom_objects={"double": lambda x: 2 * x})
    np.testing.assert_array_equal(layer(np.ones((1, 2), np.float32)).numpy(), [[2, 2]])
    with pytest.raises(ValueError, match="Unknown function in Lambda layer: 'double'"):
        L.Lambda.from_config(config)
    with pytest.raises(TypeError, match="Unsupported value for `function_type`"):
        L.Lambda.from_config({**config, "function_type": "bytes"})
    with pytest.raises(ValueError, match="Invalid input for serialization"):
        L.Lambda(_named, mask=3).get_config()
    with pytest.warns(UserWarning, match="nowhere is not loaded"):
        L.Lambda.from_config({**L.Lambda(_named).get_config(), "module": "nowhere"})


def _model(lib):
    layers = lib.layers
    return lib.Sequential([layers.Lambda(lambda x: x / 255.0, input_shape=(4,)),
                           layers.Dense(2), layers.Lambda(_named)])


def test_model_with_lambdas_saves_and_clones(tmp_path):
    model = _model(ours)
    model.compile("sgd", "mse")
    path = str(tmp_path / "m.h5")
    model.save(path)
    x = np.arange(8, dtype=np.float32).reshape(2, 4) * 50
    np.testing.assert_allclose(ours.models.load_model(path)(x).numpy(), model(x).numpy())
    clone = ours.models.clone_model(model)
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(clone(x).numpy(), model(x).numpy())


def test_model_with_lambdas_hdf5_both_ways(tfk, tmp_path):
    x = np.arange(8, dtype=np.float32).reshape(2, 4) * 50
    mine = _model(ours)
    mine.save(str(tmp_path / "mine.h5"))
    theirs = tfk.models.load_model(str(tmp_path / "mine.h5"), safe_mode=False)
    np.testing.assert_allclose(theirs(x).numpy(), mine(x).numpy(), rtol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # tf-keras: HDF5 is a legacy format
        theirs.save(str(tmp_path / "theirs.h5"))
    again = ours.models.load_model(str(tmp_path / "theirs.h5"))
    np.testing.assert_allclose(again(x).numpy(), mine(x).numpy(), rtol=1e-6)
