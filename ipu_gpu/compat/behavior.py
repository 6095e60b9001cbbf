"""Which TensorFlow a program was written for (1 or 2), as its behaviour switches say.

``tf.compat.v1.disable_v2_behavior()`` and ``disable_eager_execution()`` mark the program as a
TF1 program; ``enable_v2_behavior()`` and ``enable_eager_execution()`` as a TF2 one. The import
aliases read the mark to choose what ``import tensorflow`` shows (``ipu_gpu.aliases``).
"""

from __future__ import annotations

_version: int | None = None
_listeners: list = []  # called with no arguments when the version changes


def tf_version() -> int | None:
    """1 or 2 once a program said which (a switch below, or the aliases' choice), else None."""
    return _version


def set_tf_version(version: int | None) -> None:
    """Record which TensorFlow the running program is written for (1, 2, or None: unknown)."""
    global _version
    if version not in (1, 2, None):
        raise ValueError(f"set_tf_version: version must be 1, 2 or None, got {version!r}")
    changed = version != _version
    _version = version
    if changed:
        for listener in list(_listeners):
            listener()


def on_change(listener) -> None:
    """Call ``listener()`` whenever the recorded version changes (the import aliases drop
    the names they cached for the old version)."""
    _listeners.append(listener)


def disable_v2_behavior() -> None:
    """Disables TensorFlow 2.x behaviors: the program is a TF1 program from here on."""
    set_tf_version(1)


def enable_v2_behavior() -> None:
    """Enables TensorFlow 2.x behaviors: the program is a TF2 program from here on."""
    set_tf_version(2)


def disable_eager_execution() -> None:
    """Disables eager execution: TF1 graph behaviour from here on."""
    set_tf_version(1)


def enable_eager_execution(config=None, device_policy=None, execution_mode=None) -> None:
    """Enables eager execution (TF2 behaviour) for the rest of the program."""
    set_tf_version(2)


def executing_eagerly() -> bool:
    """Whether ops run at once (``tf.executing_eagerly``): False while a graph is built (in
    ``with tf.Graph().as_default():`` and everywhere in a TF1 program) and inside an IPU
    program (TF traces those as functions), True otherwise."""
    import sys

    graph_core = sys.modules.get("ipu_gpu.graph.core")
    if graph_core is not None and graph_core.building():
        return False
    if tf_version() == 1 and graph_core is None:
        return False
    context = sys.modules.get("ipu_gpu.emulation.context")
    return context is None or context.current() is None
