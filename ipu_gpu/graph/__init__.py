"""TF1 graph mode: graphs traced from the same registered ops, run by a ``Session``.

``core`` (Graph, Operation, GraphTensor, the registry hook), ``session`` (Session.run),
``nodes`` (placeholders, graph variables, gradients, group), ``optimizers`` (tf.train),
``program`` (ipu_compiler.compile and loops.repeat traced once, control_dependencies).
"""

from . import core, program  # noqa: F401  (ipu.loops and ipu_compiler reach them)
from .core import Graph, GraphTensor, Operation, get_default_graph, reset_default_graph
from .nodes import (GraphVariable, gradients, global_variables, global_variables_initializer,
                    group, make_variable, no_op, placeholder, placeholder_with_default,
                    trainable_variables, variables_initializer)
from .optimizers import (AdagradOptimizer, AdamOptimizer, GradientDescentOptimizer,
                         MomentumOptimizer, RMSPropOptimizer)
from .program import control_dependencies
from .session import InteractiveSession, Session

__all__ = ["AdagradOptimizer", "AdamOptimizer", "GradientDescentOptimizer", "Graph",
           "GraphTensor", "GraphVariable", "InteractiveSession", "MomentumOptimizer",
           "Operation", "RMSPropOptimizer", "Session", "control_dependencies",
           "get_default_graph", "global_variables", "global_variables_initializer",
           "gradients", "group", "make_variable", "no_op", "placeholder",
           "placeholder_with_default", "reset_default_graph", "trainable_variables",
           "variables_initializer"]
