"""``tf.train``: the ``tf.train.Example`` protocol-buffer classes programs write TFRecords with,
and the checkpoint state functions (``latest_checkpoint``, ``get_checkpoint_state``) of
``graph/saver.py`` (TF1's optimizers and Saver come with the TF1 graph layer)."""

from .io import BytesList, Example, Feature, Features, FloatList, Int64List

__all__ = ["BytesList", "Example", "Feature", "Features", "FloatList", "Int64List",
           "get_checkpoint_state", "latest_checkpoint"]


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The prefix of the newest checkpoint the ``checkpoint`` state file in ``checkpoint_dir``
    names (Keras's ``save_weights`` and TF1's Saver write one), or None."""
    from .graph import saver

    return saver.latest_checkpoint(checkpoint_dir, latest_filename)


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """The ``CheckpointState`` of the state file in ``checkpoint_dir``, or None."""
    from .graph import saver

    return saver.get_checkpoint_state(checkpoint_dir, latest_filename)
