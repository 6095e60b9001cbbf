"""``tf.saved_model``: ``save`` and ``load`` in ipu_gpu's own SavedModel format (a directory
of JSON and npz files: the traced programs of the saved functions and their variables; see
``save_load.py``). ``signature_constants`` and ``tag_constants`` hold TF's key names."""

import types as _types

from .save_load import DEFAULT_SERVING_SIGNATURE_DEF_KEY, load, save

__all__ = ["DEFAULT_SERVING_SIGNATURE_DEF_KEY", "SERVING", "contains_saved_model", "load",
           "save", "signature_constants", "tag_constants"]

SERVING = "serve"

signature_constants = _types.ModuleType(f"{__name__}.signature_constants",
                                        "TF's signature key names.")
signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY = DEFAULT_SERVING_SIGNATURE_DEF_KEY
signature_constants.PREDICT_METHOD_NAME = "tensorflow/serving/predict"
tag_constants = _types.ModuleType(f"{__name__}.tag_constants", "TF's MetaGraph tags.")
tag_constants.SERVING = SERVING
tag_constants.TRAINING = "train"
tag_constants.GPU = "gpu"
tag_constants.TPU = "tpu"


def contains_saved_model(export_dir) -> bool:
    """Whether ``export_dir`` holds a SavedModel (ipu_gpu's format)."""
    import os

    return os.path.isfile(os.path.join(os.fspath(export_dir), "saved_model.json"))
