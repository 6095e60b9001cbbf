"""``tensorflow.python.ipu.nn_ops.gelu`` and ``swish``: the PopLibs Popnn activations
Graphcore's API exposes, with their documented signatures (``gelu`` takes the
tanh approximation by default, unlike ``tf.nn.gelu``)."""

from __future__ import annotations


def gelu(x, approximate=True, name=None):
    """The Gaussian error linear unit; ``approximate`` (default True) uses the tanh form
    ``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))``, else the erf form.

    Raises:
      ValueError: a non-float ``x`` (as ``tf.nn.gelu``)."""
    from ipu_gpu.ops.nn import gelu as _gelu

    return _gelu(x, approximate=approximate)


def swish(x, name=None):
    """``x * sigmoid(x)``."""
    from ipu_gpu.ops.nn import silu

    return silu(x)

