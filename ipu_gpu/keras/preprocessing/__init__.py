"""``keras.preprocessing``: ``sequence.pad_sequences`` (Keras 2's module path). The image and
text preprocessing utilities are not provided."""

from . import sequence

__all__ = ["sequence"]
