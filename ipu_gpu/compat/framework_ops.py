"""``tensorflow.python.framework.ops`` as Graphcore's TF 1.15 / 2.6 programs import it: the
tensor names of the core (``Tensor``, ``convert_to_tensor``, ``control_dependencies``) and the
graph and its context functions, which in that module are TF1's (``ops.device`` takes a device
function, ``ops.name_scope`` a ``values`` list, ``ops.colocate_with`` is
``tf.compat.v1.colocate_with``)."""

from ipu_gpu import Tensor, control_dependencies, convert_to_tensor

from .v1 import Graph, colocate_with, device, get_default_graph, init_scope, name_scope

__all__ = ["Graph", "Tensor", "colocate_with", "control_dependencies", "convert_to_tensor",
           "device", "get_default_graph", "init_scope", "name_scope"]
