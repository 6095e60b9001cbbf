"""``tf.experimental``: the parts of TF's experimental namespace programs use (``numpy``)."""

from . import numpy

__all__ = ["numpy"]
