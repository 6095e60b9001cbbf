"""``keras.utils``: ``get_file`` (the Keras cache, read without a network) and
``to_categorical``. Module names follow Keras 2.6 (``data_utils``, ``np_utils``)."""

from . import data_utils, np_utils
from .data_utils import get_file
from .np_utils import to_categorical

__all__ = ["data_utils", "get_file", "np_utils", "to_categorical"]
