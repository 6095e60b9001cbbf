"""``tf.compat.v1.saved_model`` (TF 1.15's ``tf.saved_model``): the TF1 builder and loader
(``saved_model/tf1.py``), TF's constant names, and TF 2's ``save``/``load_v2``."""

import sys as _sys
import types as _types

from ... import saved_model as _v2
from ...saved_model import tf1 as _tf1
from ...saved_model.save_load import DEFAULT_SERVING_SIGNATURE_DEF_KEY

SERVING, TRAINING, GPU, TPU = "serve", "train", "gpu", "tpu"
PREDICT_METHOD_NAME = _tf1.PREDICT_METHOD_NAME
CLASSIFY_METHOD_NAME = _tf1.CLASSIFY_METHOD_NAME
REGRESS_METHOD_NAME = _tf1.REGRESS_METHOD_NAME
PREDICT_INPUTS, PREDICT_OUTPUTS = "inputs", "outputs"
CLASSIFY_INPUTS, CLASSIFY_OUTPUT_CLASSES, CLASSIFY_OUTPUT_SCORES = "inputs", "classes", "scores"
REGRESS_INPUTS, REGRESS_OUTPUTS = "inputs", "outputs"
ASSETS_DIRECTORY, ASSETS_KEY = "assets", "saved_model_assets"
VARIABLES_DIRECTORY, VARIABLES_FILENAME = "variables", "variables"
SAVED_MODEL_FILENAME_PB, SAVED_MODEL_FILENAME_PBTXT = "saved_model.pb", "saved_model.pbtxt"
SAVED_MODEL_SCHEMA_VERSION = 1
LEGACY_INIT_OP_KEY, MAIN_OP_KEY = "legacy_init_op", "saved_model_main_op"


def _module(name, doc, **members):
    m = _types.ModuleType(f"{__name__}.{name}", doc)
    m.__dict__.update(members)
    m.__all__ = sorted(members)
    _sys.modules[m.__name__] = m
    return m


signature_constants = _module(
    "signature_constants", "SignatureDef keys and method names.",
    DEFAULT_SERVING_SIGNATURE_DEF_KEY=DEFAULT_SERVING_SIGNATURE_DEF_KEY,
    PREDICT_METHOD_NAME=PREDICT_METHOD_NAME, PREDICT_INPUTS=PREDICT_INPUTS,
    PREDICT_OUTPUTS=PREDICT_OUTPUTS, CLASSIFY_METHOD_NAME=CLASSIFY_METHOD_NAME,
    CLASSIFY_INPUTS=CLASSIFY_INPUTS, CLASSIFY_OUTPUT_CLASSES=CLASSIFY_OUTPUT_CLASSES,
    CLASSIFY_OUTPUT_SCORES=CLASSIFY_OUTPUT_SCORES, REGRESS_METHOD_NAME=REGRESS_METHOD_NAME,
    REGRESS_INPUTS=REGRESS_INPUTS, REGRESS_OUTPUTS=REGRESS_OUTPUTS)
tag_constants = _module("tag_constants", "MetaGraph tags.", SERVING=SERVING,
                        TRAINING=TRAINING, GPU=GPU, TPU=TPU)
builder = _module("builder", "``SavedModelBuilder``.",
                  SavedModelBuilder=_tf1.SavedModelBuilder)
loader = _module("loader", "``load`` of a meta graph into a Session.", load=_tf1.load,
                 maybe_saved_model_directory=_tf1.maybe_saved_model_directory)
utils = _module("utils", "TensorInfo helpers.", build_tensor_info=_tf1.build_tensor_info,
                get_tensor_from_tensor_info=_tf1.get_tensor_from_tensor_info)
signature_def_utils = _module(
    "signature_def_utils", "SignatureDef builders.",
    build_signature_def=_tf1.build_signature_def,
    predict_signature_def=_tf1.predict_signature_def,
    is_valid_signature=_tf1.is_valid_signature)
constants = _module(
    "constants", "SavedModel file and collection names.", ASSETS_DIRECTORY=ASSETS_DIRECTORY,
    ASSETS_KEY=ASSETS_KEY, VARIABLES_DIRECTORY=VARIABLES_DIRECTORY,
    VARIABLES_FILENAME=VARIABLES_FILENAME, SAVED_MODEL_FILENAME_PB=SAVED_MODEL_FILENAME_PB,
    SAVED_MODEL_FILENAME_PBTXT=SAVED_MODEL_FILENAME_PBTXT,
    SAVED_MODEL_SCHEMA_VERSION=SAVED_MODEL_SCHEMA_VERSION,
    LEGACY_INIT_OP_KEY=LEGACY_INIT_OP_KEY, MAIN_OP_KEY=MAIN_OP_KEY)

Builder = SavedModelBuilder = _tf1.SavedModelBuilder
build_signature_def = _tf1.build_signature_def
build_tensor_info = _tf1.build_tensor_info
get_tensor_from_tensor_info = _tf1.get_tensor_from_tensor_info
is_valid_signature = _tf1.is_valid_signature
load = _tf1.load
maybe_saved_model_directory = _tf1.maybe_saved_model_directory
predict_signature_def = _tf1.predict_signature_def
simple_save = _tf1.simple_save
contains_saved_model = _v2.contains_saved_model
save = _v2.save
load_v2 = _v2.load

__all__ = sorted(n for n in dir() if not n.startswith("_") and n not in ("annotations",))
