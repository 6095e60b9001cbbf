"""``tf.contrib.framework`` (TF 1.15): the checkpoint readers (``list_variables``,
``load_checkpoint``, ``load_variable``), also at their module path
``python.framework.checkpoint_utils``, and ``get_name_scope``."""

from . import python  # noqa: F401
from .python.framework.checkpoint_utils import list_variables, load_checkpoint, load_variable

__all__ = ["get_name_scope", "list_variables", "load_checkpoint", "load_variable", "python"]


def get_name_scope() -> str:
    """The current name scope of the default graph (``"outer/inner"``, ``""`` at the top):
    ``tf.get_default_graph().get_name_scope()``."""
    from .....graph import core

    return "/".join(core.get_default_graph()._scope)
