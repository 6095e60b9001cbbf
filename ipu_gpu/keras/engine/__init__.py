"""The Keras engine: ``Layer``, ``InputSpec``, KerasTensors and the functional graph's
nodes, ``InputLayer``/``Input``. See ``keras_tensor`` for the graph's structure."""

from .base_layer import KerasVariable, Layer
from .input_layer import Input, InputLayer
from .input_spec import InputSpec
from .keras_tensor import KerasHistory, KerasTensor
from .node import Node
from .op_lambda import TFOpLambda
from .policy import Policy

__all__ = ["Input", "InputLayer", "InputSpec", "KerasHistory", "KerasTensor", "KerasVariable",
           "Layer", "Node", "Policy", "TFOpLambda"]
