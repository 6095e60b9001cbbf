"""``ipu_gpu.nn``: the ``tf.nn`` functions IPU programs use."""

from .nn_distribute import compute_average_loss, scale_regularization_loss
from .ops.conv3d import avg_pool3d, conv3d, conv3d_transpose, max_pool3d  # issue 16
from .ops.conv import conv1d, conv2d, conv2d_transpose, depthwise_conv2d
from .ops.ctc_decoder import tf_nn_ctc_beam_search_decoder as ctc_beam_search_decoder
from .ops.math import sigmoid, softplus, tanh
from .ops.nn import selu  # issue 17
from .ops.nn import (avg_pool, avg_pool1d, bias_add, elu, embedding_lookup, gelu, l2_loss,
                     l2_normalize, leaky_relu, log_softmax, max_pool, max_pool1d, relu, silu,
                     sigmoid_cross_entropy_with_logits, softmax,
                     softmax_cross_entropy_with_logits, sparse_softmax_cross_entropy_with_logits,
                     swish)
from .ops.pool_nd import pool  # issue 17
from .ops.pooling import avg_pool2d, max_pool2d
from .ops.random import dropout
from .ops.reduction import moments
from .ops.sort import top_k
from .tf2_names import relu6

__all__ = ["compute_average_loss", "scale_regularization_loss"]
__all__ += ["avg_pool", "avg_pool1d", "avg_pool2d", "bias_add", "conv1d", "conv2d",
           "conv2d_transpose", "depthwise_conv2d", "dropout", "elu", "embedding_lookup", "gelu",
           "l2_loss", "l2_normalize", "leaky_relu", "log_softmax", "max_pool", "max_pool1d",
           "max_pool2d", "moments", "relu", "sigmoid", "sigmoid_cross_entropy_with_logits",
           "silu", "softmax", "softmax_cross_entropy_with_logits", "softplus",
           "sparse_softmax_cross_entropy_with_logits", "swish", "tanh", "top_k"]
__all__ += ["pool", "selu"]  # issue 17
__all__ += ["avg_pool3d", "conv3d", "conv3d_transpose", "max_pool3d"]  # issue 16
__all__ += ["ctc_beam_search_decoder"]  # issue 15/16: TF's decoder
__all__ += ["relu6"]
