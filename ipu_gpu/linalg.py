"""``ipu_gpu.linalg``: the ``tf.linalg`` names IPU programs use."""

from .ops.math_extra import einsum
from .ops.matmul import matmul
from .ops.nn import l2_normalize
from .ops.reduction import norm

__all__ = ["einsum", "l2_normalize", "matmul", "norm"]
