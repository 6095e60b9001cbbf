"""``keras.layers.experimental``: where Keras 2.6 (Graphcore's TF 2.6 build) kept the
preprocessing layers (``experimental.preprocessing``), ``EinsumDense`` and
``SyncBatchNormalization``."""

from ..attention import EinsumDense
from . import preprocessing
from .sync_batch_normalization import SyncBatchNormalization

__all__ = ["EinsumDense", "SyncBatchNormalization", "preprocessing"]
