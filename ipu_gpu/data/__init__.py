"""``tf.data``: host input pipelines on numpy.

``Dataset`` (dataset.py) and its transformations (one small class each, in sources.py,
batching.py, shuffle.py, sequence.py, mapping.py, prefetch.py, cache.py, readers.py), the
iterators (iterators.py), ``Options`` (options.py) and ``experimental``. Elements live on the
host as numpy arrays (strings as object arrays of bytes); iterating a dataset with ``for``
gives ipu_gpu Tensors, ``as_numpy_iterator()`` numpy values.
"""

from . import experimental
from .dataset import AUTOTUNE, INFINITE, UNKNOWN, Dataset
from .iterators import (InitializableIterator, Iterator, NumpyIterator, OneShotIterator,
                        OwnedIterator, make_initializable_iterator, make_one_shot_iterator)
from .options import Options, ThreadingOptions
from .readers import TextLineDataset, TFRecordDataset
from .fixed_length import FixedLengthRecordDataset

INFINITE_CARDINALITY = INFINITE
UNKNOWN_CARDINALITY = UNKNOWN

__all__ = [
    "AUTOTUNE", "Dataset", "FixedLengthRecordDataset", "INFINITE_CARDINALITY",
    "InitializableIterator", "Iterator",
    "NumpyIterator", "OneShotIterator", "Options", "OwnedIterator", "TFRecordDataset",
    "TextLineDataset", "ThreadingOptions", "UNKNOWN_CARDINALITY", "experimental",
    "make_initializable_iterator", "make_one_shot_iterator",
]
