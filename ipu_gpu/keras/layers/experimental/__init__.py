"""``keras.layers.experimental``: where Keras 2.6 (Graphcore's TF 2.6 build) kept the
preprocessing layers (``experimental.preprocessing``)."""

from . import preprocessing

__all__ = ["preprocessing"]
