"""``TFOpLambda``: a function applied to KerasTensors, recorded as a layer of the functional
graph (TF-Keras inserts one for every TF op called on KerasTensors; here the Python operators
on KerasTensors and the Keras activations do)."""

from __future__ import annotations

from .. import backend
from .base_layer import Layer
from .call_context import CallSpec


class TFOpLambda(Layer):
    """Wraps ``function`` in a layer; ``symbol`` (``"tf.math.multiply"``) names the layer
    and its config.

    Its call takes the same arguments as ``function`` and never receives ``training`` or
    ``mask``; inputs are neither converted nor cast (``autocast=False``)."""

    _convert_input_args = False

    def __init__(self, function, symbol=None, **kwargs):
        self.function = function
        self.symbol = symbol
        if "name" not in kwargs:
            kwargs["name"] = backend.unique_object_name(
                symbol or getattr(function, "__name__", "lambda"), zero_based=True,
                avoid_observed_names=True)
        kwargs["autocast"] = False
        super().__init__(**kwargs)
        spec = CallSpec(self.call)
        spec.expects_training_arg = spec.expects_mask_arg = False
        self._call_spec = spec

    def call(self, *args, **kwargs):
        return self.function(*args, **kwargs)

    def get_config(self) -> dict:
        config = super().get_config()
        config["function"] = self.symbol.removeprefix("tf.") if self.symbol else self.symbol
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """The layer of the function ``config["function"]`` names (TF-Keras's symbol, such as
        ``"math.multiply"``), found by ``op_dispatch``'s symbol table."""
        from . import op_dispatch

        return op_dispatch.TFOpLambda.from_config(config, custom_objects)
