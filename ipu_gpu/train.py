"""``tf.train``: the ``tf.train.Example`` protocol-buffer classes programs write TFRecords with
(TF1's optimizers and checkpoints come with the TF1 graph layer)."""

from .io import BytesList, Example, Feature, Features, FloatList, Int64List

__all__ = ["BytesList", "Example", "Feature", "Features", "FloatList", "Int64List"]
