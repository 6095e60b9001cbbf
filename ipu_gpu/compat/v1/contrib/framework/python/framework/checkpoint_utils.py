"""``tensorflow.contrib.framework.python.framework.checkpoint_utils`` (TF 1.15): reading a
checkpoint without a graph, as ``tf.train.list_variables``/``load_variable`` read it."""

from ipu_gpu.graph.checkpoint_reader import list_variables, load_checkpoint, load_variable

__all__ = ["list_variables", "load_checkpoint", "load_variable"]
