"""``tf.autograph``: ipu_gpu runs a ``tf.function`` body as Python (there is no conversion of
its control flow into graph ops), so ``experimental.do_not_convert`` leaves a function as it
is, which is what it asks for."""

from . import experimental

__all__ = ["experimental"]
