"""``keras.utils``: ``get_file`` (the Keras cache, read without a network),
``to_categorical``, ``pad_sequences`` and ``set_random_seed``. Module names follow Keras 2
(``data_utils``, ``np_utils``, ``tf_utils``)."""

from ..preprocessing.sequence import pad_sequences
from . import data_utils, np_utils, tf_utils
from .data_utils import get_file
from .np_utils import to_categorical
from .tf_utils import set_random_seed

__all__ = ["data_utils", "get_file", "np_utils", "pad_sequences", "set_random_seed",
           "tf_utils", "to_categorical"]
