"""The per-axis resize weights of ``tf.image.resize``, which live in the core
(``ipu_gpu.image.resize_weights``); UpSampling2D uses them."""

from ...image.resize_weights import METHODS, resize_matrix

__all__ = ["METHODS", "resize_matrix"]
