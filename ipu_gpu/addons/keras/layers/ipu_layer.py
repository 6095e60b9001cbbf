"""The base of the add-on layers that take Keras arguments they do not support."""

from __future__ import annotations

from ipu_gpu.keras.engine.base_layer import Layer

__all__ = ["IPULayer"]


class IPULayer(Layer):
    """A Keras layer that rejects arguments kept only for API consistency with Keras."""

    def _check_unsupported(self, arg, arg_name, method="__init__"):
        """Graphcore's NotImplementedError when ``arg`` is set (truthy, or any tensor)."""
        if hasattr(arg, "shape") or arg:
            name = type(self).__name__
            raise NotImplementedError(
                f"ipu_tensorflow_addons.keras.layers.{name} does not support {method} "
                f"argument {arg_name}. It is included for API consistencywith keras.{name}.")
