"""The IPU-specific API, mirroring ``tensorflow.python.ipu`` (``from tensorflow.python import
ipu``): ``ipu.nn_ops`` (CTC loss and decoding) and the same modules under ``ipu.ops``."""

from . import nn_ops, ops

__all__ = ["nn_ops", "ops"]
