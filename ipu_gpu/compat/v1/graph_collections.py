"""``tf.compat.v1.GraphKeys`` and the default graph's collections (``get_collection``,
``get_collection_ref``, ``add_to_collection``, ``add_to_collections``), as TF 1.15 names
them: the keys are the strings TF uses, so the variables, losses, summaries and update ops
ipu_gpu's graph code files under them are found by the programs' own lookups."""

from __future__ import annotations

__all__ = ["GraphKeys", "add_to_collection", "add_to_collections", "get_collection",
           "get_collection_ref"]


class GraphKeys:
    """The standard collection names (``tf.compat.v1.GraphKeys``)."""

    GLOBAL_VARIABLES = "variables"
    VARIABLES = GLOBAL_VARIABLES  # deprecated name
    LOCAL_VARIABLES = "local_variables"
    METRIC_VARIABLES = "metric_variables"
    MODEL_VARIABLES = "model_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    SUMMARIES = "summaries"
    QUEUE_RUNNERS = "queue_runners"
    TABLE_INITIALIZERS = "table_initializer"
    ASSET_FILEPATHS = "asset_filepaths"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    REGULARIZATION_LOSSES = "regularization_losses"
    CONCATENATED_VARIABLES = "concatenated_variables"
    SAVERS = "savers"
    WEIGHTS = "weights"
    BIASES = "biases"
    ACTIVATIONS = "activations"
    UPDATE_OPS = "update_ops"
    LOSSES = "losses"
    SAVEABLE_OBJECTS = "saveable_objects"
    RESOURCES = "resources"
    LOCAL_RESOURCES = "local_resources"
    TRAINABLE_RESOURCE_VARIABLES = "trainable_resource_variables"
    INIT_OP = "init_op"
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    SUMMARY_OP = "summary_op"
    GLOBAL_STEP = "global_step"
    EVAL_STEP = "eval_step"
    TRAIN_OP = "train_op"
    COND_CONTEXT = "cond_context"
    WHILE_CONTEXT = "while_context"


def _graph():
    from ... import graph

    return graph.get_default_graph()


def get_collection(key, scope=None) -> list:
    """A copy of the default graph's collection ``key`` (items whose name matches the regular
    expression ``scope`` from its start, when given)."""
    return _graph().get_collection(key, scope)


def get_collection_ref(key) -> list:
    """The default graph's collection ``key`` itself (made empty when absent)."""
    return _graph().get_collection_ref(key)


def add_to_collection(name, value) -> None:
    """Append ``value`` to the default graph's collection ``name``."""
    _graph().add_to_collection(name, value)


def add_to_collections(names, value) -> None:
    """``add_to_collection`` for each name of ``names`` (a string is one name)."""
    for name in [names] if isinstance(names, str) else set(names):
        _graph().add_to_collection(name, value)
