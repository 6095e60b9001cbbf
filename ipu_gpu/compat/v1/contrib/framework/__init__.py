"""``tf.contrib.framework`` (TF 1.15): the checkpoint readers (``list_variables``,
``load_checkpoint``, ``load_variable``), also at their module path
``python.framework.checkpoint_utils``."""

from . import python  # noqa: F401
from .python.framework.checkpoint_utils import list_variables, load_checkpoint, load_variable

__all__ = ["list_variables", "load_checkpoint", "load_variable", "python"]
