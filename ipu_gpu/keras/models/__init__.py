"""``keras.models``: ``Model``, ``Sequential``, ``clone_model`` and whole-model files
(``save_model``/``load_model`` in Keras 2's HDF5 format, ``model_from_config``/``_json``)."""

from ..engine.functional import Functional
from ..engine.sequential import Sequential
from ..engine.training import Model
from .cloning import clone_model
from .saving import load_model, model_from_config, model_from_json, save_model

__all__ = ["Functional", "Model", "Sequential", "clone_model", "load_model",
           "model_from_config", "model_from_json", "save_model"]
