"""Whole models in Keras 2's HDF5 format: ``model.save('m.h5')`` and
``keras.models.load_model``, plus ``model_from_config``/``model_from_json``.

The file (Keras 2's ``hdf5_format.save_model_to_hdf5``) holds, as root attributes,
``model_config`` (JSON: ``{"class_name": "Sequential" | "Functional", "config": ...}``),
``training_config`` (JSON: the loss, metrics, loss weights and optimizer config given to
``compile``), ``keras_version`` and ``backend``; the weights in a ``model_weights`` group laid
out as ``save_weights`` writes them; and the optimizer's state in ``optimizer_weights``.
Functional configs list each layer with its inbound nodes (``[layer, node, tensor, kwargs]``
per input), so the graph is rebuilt by calling the deserialised layers again.

Only Sequential and functional models are saved (Keras raises the same NotImplementedError
for subclassed models in HDF5); every path is written as HDF5 (TensorFlow's SavedModel
directory format is not written or read).
"""

from __future__ import annotations

import json
import os

import numpy as np

from ..utils import hdf5_format

__all__ = ["load_model", "model_from_config", "model_from_json", "save_model"]


def _json_default(obj):
    """Keras's ``get_json_type``: numpy values, shapes, dtypes and named objects."""
    if hasattr(obj, "get_config"):
        return {"class_name": type(obj).__name__, "config": obj.get_config()}
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.dtype):
        return obj.name
    as_list = getattr(obj, "as_list", None)
    if callable(as_list):
        return as_list()
    if hasattr(obj, "__name__"):
        return obj.__name__
    raise TypeError(f"Not JSON Serializable: {obj}")


def _model_config(model) -> dict:
    from ..engine.functional import Functional
    from ..engine.sequential import Sequential

    if not isinstance(model, (Functional, Sequential)):
        raise NotImplementedError(
            "Saving the model to HDF5 format requires the model to be a Functional model or "
            "a Sequential model. It does not work for subclassed models, because such models "
            "are defined via the body of a Python method, which isn't safely serializable. "
            "Consider saving to the Tensorflow SavedModel format (by setting save_format=\"tf\") "
            "or using `save_weights`.")
    name = "Sequential" if isinstance(model, Sequential) else "Functional"
    return {"class_name": name, "config": model.get_config()}


def _serialize_loss(loss):
    from .. import losses

    if loss is None or isinstance(loss, str):
        return loss
    if isinstance(loss, dict):
        return {k: _serialize_loss(v) for k, v in loss.items()}
    if isinstance(loss, (list, tuple)):
        return [_serialize_loss(v) for v in loss]
    return losses.serialize(loss)


def _serialize_metric(metric):
    if metric is None or isinstance(metric, str):
        return metric
    if isinstance(metric, dict):
        return {k: _serialize_metric(v) for k, v in metric.items()}
    if isinstance(metric, (list, tuple)):
        return [_serialize_metric(v) for v in metric]
    from .. import metrics

    return metrics.serialize(metric)


def _training_config(model):
    if not model._is_compiled or model.optimizer is None:
        return None
    compiled = model.compiled_metrics
    return {
        "loss": _serialize_loss(model.compiled_loss._user_losses),
        "metrics": _serialize_metric(compiled._user_metrics),
        "weighted_metrics": _serialize_metric(compiled._user_weighted_metrics),
        "loss_weights": model.compiled_loss._user_loss_weights,
        "optimizer_config": {"class_name": type(model.optimizer).__name__,
                             "config": model.optimizer.get_config()},
    }


def save_model(model, filepath, overwrite=True, include_optimizer=True):
    """Saves a Sequential or functional model (config, weights, compile arguments and
    optimizer state) to one HDF5 file.

    Raises:
      NotImplementedError: a subclassed model (Keras's message).
      ImportError: h5py is not installed.
    """
    h5py = hdf5_format._h5py()
    filepath = os.fspath(filepath)
    config = json.dumps(_model_config(model), default=_json_default).encode("utf8")
    if not overwrite and os.path.isfile(filepath):
        return
    dirname = os.path.dirname(filepath)
    if dirname and not os.path.exists(dirname):
        os.makedirs(dirname, exist_ok=True)
    with h5py.File(filepath, "w") as f:
        f.attrs["backend"] = b"tensorflow"
        f.attrs["keras_version"] = hdf5_format._KERAS_VERSION.encode("utf8")
        f.attrs["model_config"] = config
        hdf5_format.save_weights_to_group(f.create_group("model_weights"), model)
        training = _training_config(model) if include_optimizer else None
        if training is not None:
            f.attrs["training_config"] = json.dumps(training, default=_json_default).encode(
                "utf8")
            weights = model.optimizer.weights
            if weights:
                group = f.create_group("optimizer_weights")
                hdf5_format.save_subset(group, weights)


def load_model(filepath, custom_objects=None, compile=True, options=None):  # noqa: A002
    """Loads a model saved with ``model.save`` (by ipu_gpu or Keras 2, HDF5).

    Args:
      filepath: the ``.h5`` file.
      custom_objects: a dict mapping names to custom classes or functions.
      compile: compile the model with the saved training configuration.

    Returns:
      The model, compiled with its optimizer state restored when the file has a training
      configuration and ``compile`` is True.

    Raises:
      OSError: not an HDF5 file (a SavedModel directory is not read).
      ValueError: a file without a model config (Keras's message).
    """
    h5py = hdf5_format._h5py()
    filepath = os.fspath(filepath)
    if os.path.isdir(filepath):
        raise OSError(f"load_model: {filepath} is a directory (a SavedModel): ipu_gpu reads "
                      "the HDF5 format only")
    with h5py.File(filepath, "r") as f:
        config = f.attrs.get("model_config")
        if config is None:
            raise ValueError(f"No model config found in the file at {filepath}.")
        model = model_from_config(json.loads(_text(config)), custom_objects)
        hdf5_format.load_weights_from_group(f["model_weights"], model)
        training = f.attrs.get("training_config")
        if compile and training is not None:
            _compile_from_config(model, json.loads(_text(training)), custom_objects)
            if "optimizer_weights" in f:
                values = hdf5_format.load_subset(f["optimizer_weights"])
                model.optimizer._create_all_weights(model.trainable_variables)
                try:
                    model.optimizer.set_weights(values)
                except ValueError:
                    import logging

                    logging.getLogger("ipu_gpu.keras").warning(
                        "Error in loading the saved optimizer state. As a result, your model "
                        "is starting with a freshly initialized optimizer.")
    return model


def _text(value) -> str:
    return value.decode("utf8") if hasattr(value, "decode") else str(value)


def _compile_from_config(model, training, custom_objects):
    from .. import losses, metrics, optimizers

    def loss(x):
        if x is None or isinstance(x, str):
            return x
        if isinstance(x, dict) and "class_name" not in x:
            return {k: loss(v) for k, v in x.items()}
        if isinstance(x, list):
            return [loss(v) for v in x]
        return losses.deserialize(x, custom_objects)

    def metric(x):
        if x is None or isinstance(x, str):
            return x
        if isinstance(x, dict) and "class_name" not in x:
            return {k: metric(v) for k, v in x.items()}
        if isinstance(x, list):
            return [metric(v) for v in x]
        return metrics.deserialize(x, custom_objects)

    model.compile(optimizer=optimizers.deserialize(training["optimizer_config"],
                                                   custom_objects),
                  loss=loss(training.get("loss")), metrics=metric(training.get("metrics")),
                  weighted_metrics=metric(training.get("weighted_metrics")),
                  loss_weights=training.get("loss_weights"))


def model_from_json(json_string, custom_objects=None):
    """A model (new weights) from ``model.to_json()``'s string."""
    return model_from_config(json.loads(json_string), custom_objects)


def model_from_config(config, custom_objects=None):
    """A model (new weights) from ``{"class_name", "config"}``.

    Raises:
      TypeError: a list was given (Keras's message).
      ValueError: an unknown model or layer class.
    """
    if isinstance(config, list):
        raise TypeError("`model_from_config` expects a dictionary, not a list. Received: "
                        f"config={config}. Did you meant to use `Sequential.from_config(config)`?")
    from ..engine.functional import Functional
    from ..engine.sequential import Sequential
    from ..engine.training import Model

    name = config.get("class_name")
    inner = config.get("config", {})
    custom = dict(custom_objects or {})
    if name == "Sequential" or (name in custom and issubclass(custom[name], Sequential)):
        cls = custom.get(name, Sequential)
        return _sequential_from_config(cls, inner, custom)
    if name in ("Functional", "Model") or (name in custom and issubclass(custom[name], Model)):
        cls = custom.get(name, Functional)
        return Functional.from_config.__func__(cls, inner, custom)  # op layers, constants too
    from .. import layers

    return layers.deserialize(config, custom)


def _deserialize_layer(layer_config, custom_objects):
    from .. import layers
    from ..engine.input_layer import InputLayer

    if layer_config.get("class_name") == "InputLayer":
        config = dict(layer_config["config"])
        config.pop("sparse", None)
        config.pop("ragged", None)
        if "batch_shape" in config:
            config["batch_input_shape"] = config.pop("batch_shape")
        return InputLayer(**config)
    if layer_config.get("class_name") in ("Sequential", "Functional", "Model"):
        return model_from_config(layer_config, custom_objects)
    return layers.deserialize(layer_config, custom_objects)


def _sequential_from_config(cls, config, custom_objects):
    if isinstance(config, list):
        name, layer_configs, build_shape = None, config, None
    else:
        name = config.get("name")
        layer_configs = config["layers"]
        build_shape = config.get("build_input_shape")
    model = cls(name=name)
    for layer_config in layer_configs:
        model.add(_deserialize_layer(layer_config, custom_objects))
    if not model.inputs and build_shape and isinstance(build_shape, (list, tuple)):
        model.build(build_shape)
    return model
