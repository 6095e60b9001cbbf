"""``ipu_tensorflow_addons.keras``: the IPU Keras layers and optimizers."""

from . import layers, optimizers

__all__ = ["layers", "optimizers"]
