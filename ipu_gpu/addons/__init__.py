"""``ipu_tensorflow_addons`` (Graphcore's TF2 add-ons, SDK 3.x): IPU-specific Keras layers
(``keras.layers``) and optimizers (``keras.optimizers``), built on ipu_gpu's Keras and IPU
ops. Programs import it under Graphcore's name (``ipu_gpu.aliases``)."""

from . import keras

__all__ = ["keras"]
