"""``keras.utils``: ``get_file`` (the Keras cache, read without a network),
``to_categorical``, ``pad_sequences``, ``set_random_seed``, ``Progbar`` and the custom object
registry (``custom_object_scope``, ``register_keras_serializable``, ...). Module names follow
Keras 2 (``data_utils``, ``generic_utils``, ``np_utils``, ``tf_utils``)."""

from ..preprocessing.sequence import pad_sequences
from . import data_utils, generic_utils, np_utils, tf_utils
from .data_utils import Sequence, get_file
from .generic_utils import (CustomObjectScope, Progbar, custom_object_scope,
                            get_custom_objects, get_registered_name, get_registered_object,
                            register_keras_serializable)
from .np_utils import to_categorical
from .tf_utils import set_random_seed

__all__ = ["CustomObjectScope", "Progbar", "Sequence", "custom_object_scope", "data_utils",
           "generic_utils", "get_custom_objects", "get_file", "get_registered_name",
           "get_registered_object", "np_utils", "pad_sequences", "register_keras_serializable",
           "set_random_seed", "tf_utils", "to_categorical"]
