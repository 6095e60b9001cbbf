"""``ipu_gpu.linalg``: the ``tf.linalg`` names IPU programs use."""

from .ops.clip import global_norm
from .ops.diag import band_part, diag, diag_part, tensor_diag, tensor_diag_part
from .ops.math_extra import einsum
from .ops.matmul import matmul
from .ops.matvec import matvec
from .ops.nn import l2_normalize
from .ops.reduction import norm
from .ops.tensordot import tensordot

__all__ = ["einsum", "global_norm", "l2_normalize", "matmul", "norm", "tensordot"]
__all__ += ["band_part", "diag", "diag_part", "tensor_diag", "tensor_diag_part"]  # issue 17
__all__ += ["matvec"]  # issue 17
