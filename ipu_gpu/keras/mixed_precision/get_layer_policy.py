"""``keras.mixed_precision.experimental.get_layer_policy``."""

from ..engine.base_layer import Layer


def get_layer_policy(layer):
    """The ``Policy`` of ``layer`` (deprecated: ``layer.dtype_policy``).

    Raises:
      ValueError: ``layer`` is not a Layer (Keras's message).
    """
    if not isinstance(layer, Layer):
        raise ValueError(f"get_policy can only be called on a layer, but got: {layer}")
    return layer.dtype_policy
